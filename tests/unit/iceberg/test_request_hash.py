"""The hash that tells a retry (same key, same request) from a different request reusing a key."""

from __future__ import annotations

import hashlib

import pytest
import rfc8785

from arco.iceberg.errors import BadRequest
from arco.iceberg.idempotency import request_hash

SNAPSHOT_ID = 4_630_119_770_938_069_680  # PyIceberg's and Java's ids are random 63-bit longs


def append(snapshot_id: int, parent: int | None = SNAPSHOT_ID) -> dict:
    return {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
            "updates": [{"action": "add-snapshot", "snapshot": {"snapshot-id": snapshot_id, "timestamp-ms": 1}},
                        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                         "snapshot-id": snapshot_id}]}


def test_a_body_with_long_snapshot_ids_is_hashed_and_told_apart_by_them() -> None:
    one = request_hash("commitTable", "/t", append(SNAPSHOT_ID + 1))
    assert one == request_hash("commitTable", "/t", append(SNAPSHOT_ID + 1))  # a retry
    assert one != request_hash("commitTable", "/t", append(SNAPSHOT_ID + 2))  # one long apart: a double's same
    assert one != request_hash("commitTable", "/t", append(SNAPSHOT_ID + 1, parent=SNAPSHOT_ID + 3))
    assert one != request_hash("commitTable", "/t", append(-(SNAPSHOT_ID + 1)))
    assert one != request_hash("commitTable", "/other", append(SNAPSHOT_ID + 1))


def test_a_body_of_exact_numbers_hashes_as_rfc_8785_has_it() -> None:
    body = {"updates": [{"action": "set-properties", "updates": {"n": "1"}}], "n": 2**53 - 1, "f": 0.5}
    expected = hashlib.sha256(b"commitTable\n/t\n" + rfc8785.dumps(body)).hexdigest()
    assert request_hash("commitTable", "/t", body) == expected


def test_what_has_no_canonical_form_is_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        request_hash("commitTable", "/t", {"x": float("nan")})
