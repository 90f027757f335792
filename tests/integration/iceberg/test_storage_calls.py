"""Storage calls per request, counted, so that a regression shows as a number.

A warm, keyed, metadata-only commit makes the seed's writes (section 5) and nothing else, in four sequential
rounds (the best-effort receipts are written on a side thread beside the write they are independent of):

    1 claim the Idempotency-Key marker      create-only        (step 4)
    2 the new metadata file                 create-only        (step 7)
      + the pending receipt                 create-only        (step 8, best effort, side thread)
    3 the pointer                           compare-and-swap   (step 9, the commit point)
    4 finalize the marker                   compare-and-swap   (step 11)
      + the committed receipt               create-only        (step 10, best effort, side thread)

and reads the pointer once (the base metadata is cached by location: files are immutable). A group of N requests
makes one metadata file, one group record and one CAS for all of them.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest
from uuid6 import uuid7

from arco.iceberg.group_commit import GROUPS
from arco.iceberg.mutations import Caller
from arco.iceberg.pointer import POINTERS
from support.iceberg_harness import Harness

SOURCE = {"kind": "iceberg_rest", "client_info": "test", "principal": "admin"}
BODY = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"a": "1"}}]}


def kind_of(key: str) -> str:
    if key.startswith("_catalog/iceberg_idempotency/"):
        return "marker"
    if key.startswith(f"{POINTERS}/"):
        return "pointer"
    if "/iceberg/pending/" in key:
        return "pending receipt"
    if "/iceberg/committed/" in key:
        return "committed receipt"
    if key.startswith(f"{GROUPS}/"):
        return "group record"
    if key.endswith(".metadata.json"):
        return "metadata file"
    if key.startswith("_catalog/core/"):
        return "tier 1"
    return key


def counted(h: Harness) -> Counter[tuple[str, str]]:
    return Counter((call.op, kind_of(call.key)) for call in h.storage.calls)


@pytest.fixture
def warm(harness: Harness) -> Harness:
    harness.create_table("t")
    commit(harness)  # caches warm: the table's entry, its current metadata
    harness.tables.load(harness.catalog, ("db",), "t")
    harness.storage.calls.clear()
    return harness


def commit(h: Harness, body: dict[str, Any] = BODY) -> None:
    h.mutations().commit_table(h.catalog, ("db",), "t", body, Caller("admin", SOURCE, str(uuid7())))


def test_a_warm_keyed_commit_makes_the_seeds_writes_and_nothing_more(warm: Harness) -> None:
    commit(warm)
    calls = counted(warm)
    puts = {kind: n for (op, kind), n in calls.items() if op == "put"}
    assert puts == {"marker": 2, "metadata file": 1, "pending receipt": 1, "pointer": 1, "committed receipt": 1}
    reads = {kind: n for (op, kind), n in calls.items() if op in ("get", "head")}
    # The pointer once; the Tier 1 log's next position is probed for freshness by the marker's scope lookup and by
    # the commit's own name lookup (each a read of an absent object on a quiet catalog).
    assert reads == {"pointer": 1, "tier 1": 2}
    assert not any(op in ("list", "delete") for op, _ in calls)


def test_the_receipts_are_written_beside_the_critical_path(warm: Harness) -> None:
    threads: dict[str, str] = {}
    put = warm.storage.put

    def recording_put(key: str, data: bytes, precondition: Any = None) -> Any:
        threads[kind_of(key)] = threading.current_thread().name
        return put(key, data, precondition)

    warm.storage.put = recording_put  # type: ignore[method-assign]
    commit(warm)
    side = {kind for kind, name in threads.items() if name.startswith("arco-commit-side")}
    assert side == {"pending receipt", "committed receipt"}


def test_a_warm_load_reads_the_pointer_and_probes_tier1_once(warm: Harness) -> None:
    warm.tables.load(warm.catalog, ("db",), "t")
    assert counted(warm) == Counter({("get", "pointer"): 1, ("get", "tier 1"): 1})


def test_a_group_of_n_makes_one_metadata_file_one_record_and_one_cas(warm: Harness) -> None:
    n = 4
    uuid = warm.tables.entry(warm.catalog, ("db",), "t").id
    threads = [threading.Thread(target=commit, args=(warm, {"requirements": [], "updates": [
        {"action": "set-properties", "updates": {f"p{i}": "1"}}]})) for i in range(n)]
    with warm.tables.committer.hold(uuid):
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while warm.tables.committer.queued(uuid) < n:
            assert time.monotonic() < deadline
            time.sleep(0.002)
    for thread in threads:
        thread.join(30)
    puts = {kind: count for (op, kind), count in counted(warm).items() if op == "put"}
    assert puts == {"marker": 2 * n, "metadata file": 1, "group record": 1, "pointer": 1, "committed receipt": n}
    assert counted(warm)[("get", "pointer")] == 1


def test_the_tier1_probe_is_a_read_of_the_next_log_position(warm: Harness) -> None:
    """What the "tier 1" reads above are, so that the count stays meaningful if the catalog log changes."""
    warm.tables.load(warm.catalog, ("db",), "t")
    (probe,) = [c.key for c in warm.storage.calls if kind_of(c.key) == "tier 1"]
    assert probe.startswith("_catalog/core/log/")
