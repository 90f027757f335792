"""Asynchronous Delta Sharing query records: one per idempotency key, for one recipient and table, for a day."""

from __future__ import annotations

from pathlib import Path

import pytest

from arco.sharing.async_queries import (
    MAX_RECORD_BYTES,
    QUERY_LIFETIME_MS,
    AsyncQueries,
    QueryRecord,
    query_id_for,
    record_key,
)
from arco.sharing.errors import SharingError
from arco.storage.local import LocalBackend

NOW = 1_700_000_000_000


def record(key: str | None = "k", query: str = "q", created_ms: int = NOW) -> QueryRecord:
    return QueryRecord(query_id_for("acme", "t1", key), "acme", "t1", {"version": 3}, query, 3, None, created_ms,
                       created_ms + QUERY_LIFETIME_MS)


def test_a_retried_submission_finds_its_query_and_another_one_is_refused(tmp_path: Path) -> None:
    queries = AsyncQueries(LocalBackend(tmp_path))
    first = queries.submit(record())
    assert queries.submit(record(created_ms=NOW + 5)) == first  # the retry gets the first record back
    with pytest.raises(SharingError, match="another query"):
        queries.submit(record(query="other"))
    assert query_id_for("acme", "t1", "k") != query_id_for("acme", "t2", "k") != query_id_for("other", "t1", "k")
    assert query_id_for("acme", "t1", None) != query_id_for("acme", "t1", None)


def test_an_expired_record_is_replaced_by_a_new_submission_with_its_key(tmp_path: Path) -> None:
    queries = AsyncQueries(LocalBackend(tmp_path))
    old = queries.submit(record(query="old"))
    later = NOW + QUERY_LIFETIME_MS + 1
    assert queries.find(old.query_id, recipient="acme", table_id="t1", now_ms=later) is None
    new = queries.submit(record(query="new", created_ms=later))
    assert new.query == "new"
    assert queries.find(new.query_id, recipient="acme", table_id="t1", now_ms=later) == new


def test_a_query_is_found_only_by_its_recipient_on_its_table(tmp_path: Path) -> None:
    storage = LocalBackend(tmp_path)
    queries = AsyncQueries(storage)
    stored = queries.submit(record())
    assert queries.find(stored.query_id, recipient="acme", table_id="t1", now_ms=NOW) == stored
    assert queries.find(stored.query_id, recipient="other", table_id="t1", now_ms=NOW) is None
    assert queries.find(stored.query_id, recipient="acme", table_id="t2", now_ms=NOW) is None
    for hostile in ("../../sharing/url-signing-key", stored.query_id.upper(), stored.query_id + "0", "", "é" * 32):
        assert queries.find(hostile, recipient="acme", table_id="t1", now_ms=NOW) is None
    assert storage.get_or_none(record_key(stored.query_id)) is not None


def test_a_record_too_big_to_keep_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    storage = LocalBackend(tmp_path)
    big = QueryRecord(query_id_for("acme", "t1", "big"), "acme", "t1", {"predicateHints": ["x" * MAX_RECORD_BYTES]},
                      "q", 3, None, NOW, NOW + QUERY_LIFETIME_MS)
    with pytest.raises(SharingError, match="KB"):
        AsyncQueries(storage).submit(big)
    assert storage.get_or_none(record_key(big.query_id)) is None
