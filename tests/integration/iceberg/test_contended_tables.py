"""Tables that several servers commit to. A pointer swap that loses while the store keeps it waiting (as SeaweedFS
keeps a race's loser waiting for its lock) is answered lost as soon as the pointer has moved on, the commit goes on
against the new base at once, and the swap given up on can no longer land. A server that keeps winning holds its
next batch for a while, so the other server's try gets through."""

from __future__ import annotations

import threading
import time

from arco.iceberg import commit
from arco.iceberg.group_commit import Coalescer, Pending
from arco.iceberg.pointer import POINTERS, SWAP_PATIENCE_S, pointer_key
from arco.metrics import REGISTRY
from support.held_puts import HeldPuts
from support.iceberg_harness import Harness

SOURCE = {"kind": "test"}

def early_answers(outcome: str) -> float:
    return REGISTRY.get_sample_value("arco_storage_writes_answered_early_total", {"outcome": outcome}) or 0.0



def set_property(h: Harness, name: str, value: str) -> None:
    body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {name: value}}]}
    commit.commit_table(h.tables, h.catalog, ("db",), "t", body, "admin", SOURCE)


def metadata_files(h: Harness) -> set[str]:
    return {m.key for m in h.storage.inner.list("") if m.key.endswith(".metadata.json")}


def contended(h: Harness, table_uuid: str) -> None:
    """This server has just lost a swap of the table (to a pointer version that is not the table's)."""
    current = h.tables.pointers.load(table_uuid)
    assert current is not None
    assert not h.tables.pointers.swap("a-version-long-gone", current.pointer).ok


def run_held(h: Harness, pattern: str) -> tuple[HeldPuts, threading.Thread, dict[str, BaseException]]:
    held = HeldPuts(h.storage.inner, pattern)
    h.storage.inner = held  # type: ignore[assignment]
    errors: dict[str, BaseException] = {}

    def first() -> None:
        try:
            set_property(h, "mine", "1")
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors["first"] = exc

    thread = threading.Thread(target=first)
    thread.start()
    assert held.reached.wait(10)
    return held, thread, errors


def test_a_contended_commit_goes_on_without_waiting_for_its_lost_swap(harness: Harness) -> None:
    table_uuid = harness.create_table("t")
    contended(harness, table_uuid)
    harness.tables.pointers.swap_patience_s = 0.02
    files_before = metadata_files(harness)
    held, thread, errors = run_held(harness, f"{POINTERS}/*")  # this server's next swap waits in the "store"
    other = harness.reopen()  # another server
    set_property(other, "theirs", "1")
    thread.join(10)
    assert not thread.is_alive(), "the commit waited for the answer to a swap that could no longer land"
    assert not errors
    current = other.reopen().tables.load(harness.catalog, ("db",), "t")
    assert {"mine", "theirs"} <= set(current.metadata.properties)
    written = metadata_files(harness) - files_before
    assert len(written) == 3  # theirs, the try given up on (kept for garbage collection), and the one that landed
    landed = {current.pointer.pointer.current_metadata_location, current.metadata.metadata_log[-1].metadata_file}
    (given_up,) = [f for f in written if not any(location.endswith(f) for location in landed)]

    before = early_answers("landed_after_all")
    held.release()  # the store answers the swap given up on: the pointer has moved on, so it is refused
    assert held.answered.wait(10)
    time.sleep(0.05)  # its late answer is checked just after
    after = other.reopen().tables.load(harness.catalog, ("db",), "t")
    assert after.pointer.pointer.current_metadata_location == current.pointer.pointer.current_metadata_location
    assert not any(entry.metadata_file.endswith(given_up) for entry in after.metadata.metadata_log)
    assert early_answers("landed_after_all") == before
    assert harness.storage.inner.head(pointer_key(table_uuid)) is not None


def test_an_uncontended_commit_waits_for_its_swap(harness: Harness) -> None:
    """A table this server has not lost a swap of gets the plain write: it is answered by the store."""
    harness.create_table("t")
    assert SWAP_PATIENCE_S > 0
    harness.tables.pointers.swap_patience_s = 0.02
    held, thread, errors = run_held(harness, f"{POINTERS}/*")
    time.sleep(0.2)
    assert thread.is_alive()
    held.release()
    thread.join(10)
    assert not thread.is_alive() and not errors
    assert harness.reopen().tables.load(harness.catalog, ("db",), "t").metadata.properties["mine"] == "1"


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
