"""Tables that several servers commit to: a server that keeps winning holds its next batch for a while, so the
other server's try gets through."""

from __future__ import annotations

import threading
import time

from arco.iceberg import commit
from arco.iceberg.group_commit import Coalescer, Pending
from support.iceberg_harness import Harness

SOURCE = {"kind": "test"}


def set_property(h: Harness, name: str, value: str) -> None:
    body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {name: value}}]}
    commit.commit_table(h.tables, h.catalog, ("db",), "t", body, "admin", SOURCE)


def contended(h: Harness, table_uuid: str) -> None:
    """This server has just lost a swap of the table (to a pointer version that is not the table's)."""
    current = h.tables.pointers.load(table_uuid)
    assert current is not None
    assert not h.tables.pointers.swap("a-version-long-gone", current.pointer).ok


def test_a_delayed_batch_starts_late_and_takes_what_arrived_meanwhile() -> None:
    waited: list[float] = []
    batches: list[list[int]] = []
    arrived: list[threading.Thread] = []

    def run(batch: list[Pending[int]]) -> None:
        batches.append([p.item for p in batch])
        for p in batch:
            p.succeed(p.item)

    def sleep(seconds: float) -> None:  # while the leader waits, two more requests arrive
        waited.append(seconds)
        for i in (2, 3):
            arrived.append(threading.Thread(target=coalescer.submit, args=("t", i, run)))
            arrived[-1].start()
        while coalescer.queued("t") < 3:
            time.sleep(0.001)

    coalescer: Coalescer = Coalescer(sleep=sleep)
    with coalescer.hold("t"):  # a batch in flight, with a request queued behind it
        first = threading.Thread(target=coalescer.submit, args=("t", 1, run))
        first.start()
        while coalescer.queued("t") < 1:
            time.sleep(0.001)
        coalescer.delay_next_batch("t", 5.0)
    first.join(10)
    for thread in arrived:  # started while the first waited
        thread.join(10)
    assert len(waited) == 1 and 4.5 < waited[0] <= 5.0
    assert batches == [[1, 2, 3]]
    coalescer.delay_next_batch("t", 5.0)  # nobody waits on "t": forgotten
    assert coalescer.submit("t", 4, run) == 4 and len(waited) == 1


def test_a_server_that_keeps_winning_a_contended_table_holds_its_next_batch(harness: Harness) -> None:
    table_uuid = harness.create_table("t")
    pointers, committer = harness.tables.pointers, harness.tables.committer
    delays: list[float] = []
    committer.delay_next_batch = lambda key, seconds: delays.append(seconds)  # type: ignore[method-assign]
    for i in range(3):
        set_property(harness, f"p{i}", "1")
    assert delays == [] and not pointers.contended(table_uuid)  # nobody else commits to it: no hold
    contended(harness, table_uuid)
    set_property(harness, "q", "1")
    assert pointers.won_in_a_row(table_uuid) == 1 and delays == []
    set_property(harness, "r", "1")
    set_property(harness, "s", "1")
    assert pointers.won_in_a_row(table_uuid) == 3 and len(delays) == 2 and all(d > 0 for d in delays)
