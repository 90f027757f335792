"""Storage calls per request, and sequential storage round trips, counted, so that a regression shows as a number.

A warm, keyed, metadata-only commit makes the seed's writes (section 5) and one read; its caller waits for two
sequential rounds (the marker's claim, the pending receipt and the catalog check run on side threads beside the
metadata file's write, and the marker's finalization and the committed receipt are written after the answer):

    1 the new metadata file                 create-only        (step 7)
      + claim the Idempotency-Key marker    create-only        (step 4, arco.iceberg.claim_beside: the CAS waits
                                                                for it)
      + the catalog log's freshness check   a read             (step 1: the CAS waits for it)
      + the pending receipt                 create-only        (step 8, best effort; the CAS does not wait for
                                                                it, the answer does)
    2 the pointer                           compare-and-swap   (step 9, the commit point)
    after the answer:
      the marker's finalization             compare-and-swap   (step 11: a retry that comes first finds the
                                                                change by recovery, arco.iceberg.idempotency)
      the committed receipt                 create-only        (step 10, best effort, arco.events.after_answer)

The pointer is not read: this process wrote it last, and the compare-and-swap checks the copy it kept. The base
metadata is cached by location (files are immutable). Without a key there is no marker: the catalog check runs
beside the metadata file's write and must pass before the CAS, so such a commit waits for two rounds. A warm
load makes two reads in one round: the catalog check and, beside it, the pointer's conditional read
(``get_if_changed``: a 304 on S3). A group of N requests makes one metadata file, one group record and one CAS for
all of them.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
from uuid6 import uuid7

from arco.catalog.errors import TableNotFound
from arco.catalog.store import CatalogStore
from arco.events import after_answer
from arco.iceberg import tables as tables_module
from arco.iceberg.errors import ServiceUnavailable
from arco.iceberg.group_commit import GROUPS
from arco.iceberg.mutations import Caller
from arco.iceberg.pointer import POINTERS, read_window
from arco.storage.base import WriteNotApplied
from support.iceberg_harness import SCHEMA, Harness
from support.rounds import Slowed

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
    if "/catalog/committed/" in key:
        return "catalog receipt"
    if key.startswith(f"{GROUPS}/"):
        return "group record"
    if key.endswith(".metadata.json"):
        return "metadata file"
    if key.startswith("_catalog/core/"):
        return "tier 1"
    return key


def counted(h: Harness) -> Counter[tuple[str, str]]:
    assert after_answer.drain(10)  # the writes made after an answer count too
    return Counter((call.op, kind_of(call.key)) for call in h.storage.calls)


@contextmanager
def slowed(h: Harness) -> Iterator[Slowed]:
    """Storage as far away as a network: reads worth making side by side."""
    inner, capabilities = h.storage.inner, h.storage.capabilities
    slow = Slowed(inner)
    h.storage.inner = slow  # type: ignore[assignment]
    h.storage.capabilities = replace(capabilities, cheap_reads=False)
    try:
        yield slow
    finally:
        h.storage.inner, h.storage.capabilities = inner, capabilities


@pytest.fixture
def warm(harness: Harness) -> Harness:
    harness.create_table("t")
    commit(harness)  # caches warm: the table's entry, its current metadata
    harness.tables.load(harness.catalog, ("db",), "t")
    assert after_answer.drain(10)
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
    # The Tier 1 log's next position, probed once for freshness (a read of an absent object on a quiet catalog);
    # the pointer not at all: the CAS checks this process's copy.
    assert reads == {"tier 1": 1}
    assert not any(op in ("list", "delete") for op, _ in calls)


def test_a_warm_keyed_commit_waits_for_two_sequential_storage_rounds(warm: Harness) -> None:
    with slowed(warm) as slow:
        commit(warm)
        answered = time.monotonic()
        assert after_answer.drain(10)
    assert slow.rounds(started_before=answered) == 2
    # and the marker's finalization and the committed receipt, side by side after the answer
    assert len(slow.intervals) == 7 and slow.rounds() == 3
    # (The pending receipt is left out: the CAS does not wait for it, so it may overlap the pointer's write.)
    waited = {"marker", "metadata file", "pointer", "committed receipt"}
    assert [sorted(r) for r in write_rounds(slow, waited)] == [["marker", "metadata file"], ["pointer"],
                                                               ["committed receipt", "marker"]]
    finalized = max(start for start, op, key in slow.started if kind_of(key) == "marker")
    assert finalized > answered


def test_a_warm_unkeyed_commit_waits_for_two_rounds(warm: Harness) -> None:
    """No marker (PyIceberg sends no Idempotency-Key): the metadata file with the pending receipt and the catalog
    check beside it, then the CAS; the committed receipt follows the answer."""
    with slowed(warm) as slow:
        warm.mutations().commit_table(warm.catalog, ("db",), "t", BODY, Caller("admin", SOURCE))
        answered = time.monotonic()
        assert after_answer.drain(10)
    assert slow.rounds(started_before=answered) == 2 and slow.rounds() == 3
    assert {kind for (op, kind) in counted(warm) if op == "get"} == {"tier 1"}


def test_an_unkeyed_commit_to_a_name_that_moved_commits_to_the_table_it_names_now(warm: Harness) -> None:
    """The commit went ahead on the table this process knew; the check beside its first write finds the name
    moved: nothing is committed there (its file is deleted), and the commit is made to the table named now."""
    other = warm.reopen()
    old_uuid = warm.tables.entry(warm.catalog, ("db",), "t").id
    other.tables.rename(warm.catalog, ("db",), "t", ("db",), "old", "admin")
    other.create_table("t")
    old_before = other.tables.load(warm.catalog, ("db",), "old").pointer.pointer.current_metadata_location
    warm.mutations().commit_table(warm.catalog, ("db",), "t", {"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"new": "1"}}]}, Caller("admin", SOURCE))
    assert "new" in other.tables.load(warm.catalog, ("db",), "t").metadata.properties
    old = other.tables.load(warm.catalog, ("db",), "old")
    assert old.entry.id == old_uuid and old.pointer.pointer.current_metadata_location == old_before
    deleted = [c.key for c in warm.storage.calls if c.op == "delete"]
    assert len(deleted) == 1 and deleted[0].endswith(".metadata.json")


def test_the_receipts_are_written_off_the_critical_path(warm: Harness) -> None:
    """The pending receipt beside the metadata file, before the CAS; the committed receipt (and, with a key, the
    marker's finalization) after the answer, with a key or without."""
    threads: dict[str, str] = {}
    order: list[str] = []
    put = warm.storage.put

    def recording_put(key: str, data: bytes, precondition: Any = None) -> Any:
        threads[kind_of(key)] = threading.current_thread().name
        result = put(key, data, precondition)
        order.append(kind_of(key))
        return result

    warm.storage.put = recording_put  # type: ignore[method-assign]
    for caller in (Caller("admin", SOURCE, str(uuid7())), Caller("admin", SOURCE)):
        threads.clear()
        order.clear()
        warm.mutations().commit_table(warm.catalog, ("db",), "t", BODY, caller)
        answered = list(order)
        assert after_answer.drain(10)
        assert threads["pending receipt"].startswith("arco-commit-side")
        assert threads["committed receipt"].startswith("arco-after-answer")
        # The CAS landed before the answer, and so did the pending receipt, which may finish after it on a busy
        # machine (the answer waits for it; the CAS does not).
        assert answered[-1] in ("pointer", "pending receipt") and {"pointer", "pending receipt"} <= set(answered)
        assert sorted(order[len(answered):]) == (["committed receipt", "marker"] if caller.key else
                                                 ["committed receipt"])
        if caller.key:
            assert threads["marker"].startswith("arco-after-answer")  # the last marker write: its finalization


def slow_pending_receipt(warm: Harness, failing: str | None = None) -> dict[str, tuple[float, float]]:
    """From now on, the pending receipt's write takes 0.3 s more and the metadata file's 0.05 s (so a receipt
    started beside it starts within it, however busy the machine's cores), the write of kind ``failing`` (if any)
    is refused by the store (WriteNotApplied), and each write made is recorded by kind: (started, finished),
    monotonic."""
    spans: dict[str, tuple[float, float]] = {}
    put = warm.storage.put

    def recording_put(key: str, data: bytes, precondition: Any = None) -> Any:
        started = time.monotonic()
        if kind_of(key) == failing:
            raise WriteNotApplied(f"{failing}: refused by the test")
        if kind_of(key) == "pending receipt":
            time.sleep(0.3)  # a slow receipt
        elif kind_of(key) == "metadata file":
            time.sleep(0.05)
        result = put(key, data, precondition)
        spans[kind_of(key)] = (started, time.monotonic())
        return result

    warm.storage.put = recording_put  # type: ignore[method-assign]
    return spans


@pytest.mark.parametrize("key", [str(uuid7()), None], ids=["keyed", "unkeyed"])
def test_the_cas_does_not_wait_for_the_pending_receipt(warm: Harness, key: str | None) -> None:
    """Step 8 is best effort: started beside the metadata file, and waited for only once the CAS is made (a crash
    while it is written still stops the request before its answer: the crash matrix of test_exactly_once)."""
    spans = slow_pending_receipt(warm)
    warm.mutations().commit_table(warm.catalog, ("db",), "t", BODY, Caller("admin", SOURCE, key))
    answered = time.monotonic()
    assert spans["pending receipt"][0] <= spans["metadata file"][1]  # started beside the metadata file
    assert spans["pointer"][0] < spans["pending receipt"][1]  # the CAS went ahead while it was written
    assert spans["pending receipt"][1] <= answered  # and the answer waited for it


@pytest.mark.parametrize("failing", ["metadata file", "pointer"])
@pytest.mark.parametrize("key", [str(uuid7()), None], ids=["keyed", "unkeyed"])
def test_a_failed_attempt_still_waits_for_its_pending_receipt(warm: Harness, key: str | None, failing: str) -> None:
    """No receipt write outlives its request, also when the attempt fails beside it (its metadata file) or after it
    (the CAS): the answer, an error, comes once the receipt is written."""
    spans = slow_pending_receipt(warm, failing=failing)
    with pytest.raises(ServiceUnavailable, match="did not take effect"):
        warm.mutations().commit_table(warm.catalog, ("db",), "t", BODY, Caller("admin", SOURCE, key))
    answered = time.monotonic()
    assert "pending receipt" in spans and spans["pending receipt"][1] <= answered


def test_a_warm_load_reads_the_pointer_and_probes_tier1_once_in_one_round(warm: Harness) -> None:
    with slowed(warm) as slow:
        warm.tables.load(warm.catalog, ("db",), "t")
    assert counted(warm) == Counter({("get", "pointer"): 1, ("get", "tier 1"): 1})
    assert slow.rounds() == 1


def test_on_a_local_disk_a_warm_load_reads_on_its_own_thread(warm: Harness,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Handing a read to another thread costs more than a read from a local disk: none is handed over.
    assert warm.storage.capabilities.cheap_reads

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a read was handed to a side thread")

    monkeypatch.setattr(tables_module._AHEAD, "submit", refuse)
    loaded = warm.tables.load(warm.catalog, ("db",), "t")
    assert loaded.metadata.properties["a"] == "1"
    assert counted(warm) == Counter({("get", "pointer"): 1, ("get", "tier 1"): 1})


def test_a_load_inside_the_read_window_asks_storage_nothing(warm: Harness) -> None:
    with CatalogStore.fresh_as_of(window_s=5.0), read_window(5.0):
        loaded = warm.tables.load(warm.catalog, ("db",), "t")
    assert warm.storage.calls == []
    assert loaded.pointer.pointer.current_metadata_location == warm.tables.pointers.cached(loaded.entry.id).pointer \
        .current_metadata_location  # type: ignore[union-attr]


def test_the_writer_sees_its_own_commit_inside_the_window(warm: Harness) -> None:
    with CatalogStore.fresh_as_of(window_s=60.0), read_window(60.0):
        before = warm.tables.load(warm.catalog, ("db",), "t").metadata.properties
    commit(warm, {"requirements": [], "updates": [{"action": "set-properties", "updates": {"mine": "yes"}}]})
    warm.storage.calls.clear()
    with CatalogStore.fresh_as_of(window_s=60.0), read_window(60.0):
        after = warm.tables.load(warm.catalog, ("db",), "t").metadata.properties
    assert "mine" not in before and after["mine"] == "yes"
    assert warm.storage.calls == []


def test_another_servers_commit_shows_on_the_next_load_without_a_window(warm: Harness) -> None:
    other = warm.reopen()
    other.tables.load(warm.catalog, ("db",), "t")
    other.mutations().commit_table(warm.catalog, ("db",), "t", {"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"elsewhere": "1"}}]}, Caller("admin", SOURCE, str(uuid7())))
    warm.storage.calls.clear()
    loaded = warm.tables.load(warm.catalog, ("db",), "t")
    assert loaded.metadata.properties["elsewhere"] == "1"
    # The pointer's conditional read returns the new pointer, which names a metadata file this server never read.
    assert counted(warm) == Counter({("get", "pointer"): 1, ("get", "tier 1"): 1, ("get", "metadata file"): 1})


def test_another_servers_commit_shows_once_the_window_has_passed(warm: Harness) -> None:
    other = warm.reopen()
    with CatalogStore.fresh_as_of(window_s=0.2), read_window(0.2):
        warm.tables.load(warm.catalog, ("db",), "t")
    other.mutations().commit_table(warm.catalog, ("db",), "t", {"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"elsewhere": "1"}}]}, Caller("admin", SOURCE, str(uuid7())))
    time.sleep(0.25)
    with CatalogStore.fresh_as_of(window_s=0.2), read_window(0.2):
        loaded = warm.tables.load(warm.catalog, ("db",), "t")
    assert loaded.metadata.properties["elsewhere"] == "1"


def test_a_stale_copy_neither_loses_a_commit_nor_refuses_one(warm: Harness) -> None:
    """Another server committed since this one wrote: the CAS against the copy fails, the pointer is read, and the
    commit lands; a requirement that holds now but not against the copy is not refused."""
    other = warm.reopen()
    table = other.tables.load(warm.catalog, ("db",), "t")
    other.mutations().commit_table(warm.catalog, ("db",), "t", {"requirements": [], "updates": [
        {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
            *table.metadata.schema().model_dump(by_alias=True)["fields"],
            {"id": 3, "name": "x", "required": False, "type": "long"}]}},
        {"action": "set-current-schema", "schema-id": -1}]}, Caller("admin", SOURCE, str(uuid7())))
    commit(warm, {"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 1}],
                  "updates": [{"action": "set-properties", "updates": {"after": "schema"}}]})
    loaded = other.tables.load(warm.catalog, ("db",), "t")
    assert loaded.metadata.current_schema_id == 1 and loaded.metadata.properties["after"] == "schema"


def test_a_rename_on_another_server_shows_on_the_next_load(warm: Harness) -> None:
    other = warm.reopen()
    other.tables.rename(warm.catalog, ("db",), "t", ("db",), "u", "admin")
    with pytest.raises(TableNotFound):
        warm.tables.load(warm.catalog, ("db",), "t")
    assert warm.tables.load(warm.catalog, ("db",), "u").entry.name == "u"


def test_a_keyed_commit_to_a_name_that_moved_commits_to_the_table_it_names_now(warm: Harness) -> None:
    """The marker was claimed, beside the catalog check, for the table this process knew; the check finds the
    name names another table now: the claim is released and the commit goes to the new table."""
    other = warm.reopen()
    other.tables.rename(warm.catalog, ("db",), "t", ("db",), "old", "admin")
    other.create_table("t")
    commit(warm, {"requirements": [], "updates": [{"action": "set-properties", "updates": {"new": "1"}}]})
    assert "new" in other.tables.load(warm.catalog, ("db",), "t").metadata.properties
    assert "new" not in other.tables.load(warm.catalog, ("db",), "old").metadata.properties


def test_a_keyed_commit_refused_by_a_table_the_name_no_longer_names_is_decided_on_the_table_it_names_now(
        warm: Harness) -> None:
    """The refusal would be recorded in the marker: it is made only once the catalog check confirms the table."""
    other = warm.reopen()
    other.tables.rename(warm.catalog, ("db",), "t", ("db",), "old", "admin")
    new_uuid = other.create_table("t")
    commit(warm, {"requirements": [{"type": "assert-table-uuid", "uuid": new_uuid}],
                  "updates": [{"action": "set-properties", "updates": {"new": "1"}}]})
    assert "new" in other.tables.load(warm.catalog, ("db",), "t").metadata.properties


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
    assert counted(warm)[("get", "pointer")] == 0  # the CAS checks the copy this process wrote


def test_the_tier1_probe_is_a_read_of_the_next_log_position(warm: Harness) -> None:
    """What the "tier 1" reads above are, so that the count stays meaningful if the catalog log changes."""
    warm.tables.load(warm.catalog, ("db",), "t")
    (probe,) = [c.key for c in warm.storage.calls if kind_of(c.key) == "tier 1"]
    assert probe.startswith("_catalog/core/log/")


def test_a_window_never_hides_a_table_made_on_another_server(warm: Harness) -> None:
    """A name not found in a view older than the request is looked up again in a view checked now."""
    with CatalogStore.fresh_as_of(window_s=60.0), read_window(60.0):
        warm.tables.load(warm.catalog, ("db",), "t")
    warm.reopen().create_table("made_elsewhere")
    with CatalogStore.fresh_as_of(window_s=60.0), read_window(60.0):
        assert warm.tables.load(warm.catalog, ("db",), "made_elsewhere").entry.name == "made_elsewhere"


def write_rounds(slow: Slowed, kinds: set[str]) -> list[list[str]]:
    """The puts of these kinds in sequential rounds: each round's puts started after every put of the previous
    round had ended (a put that overlaps a round joins it)."""
    puts = sorted((start, end, kind_of(key)) for (start, end), (_, op, key) in
                  zip(slow.intervals, slow.started, strict=True) if op == "put" and kind_of(key) in kinds)
    rounds: list[list[str]] = []
    round_end = float("-inf")
    for start, end, kind in puts:
        if rounds and start < round_end:
            rounds[-1].append(kind)
            round_end = max(round_end, end)
        else:
            rounds.append([kind])
            round_end = end
    return rounds


def create_in_rounds(h: Harness, name: str, key: str | None) -> tuple[int, Slowed, float]:
    """A create as a server runs it (one catalog check per request): its sequential storage rounds before the
    answer, the calls, and when it was answered."""
    with slowed(h) as slow, CatalogStore.fresh_as_of():
        h.mutations().create_table(h.catalog, ("db",), {"name": name, "schema": SCHEMA}, Caller("admin", SOURCE, key))
        answered = time.monotonic()
        assert after_answer.drain(10)
    return slow.rounds(started_before=answered), slow, answered


def test_a_keyed_create_waits_for_as_many_storage_rounds_as_one_without_a_key(warm: Harness) -> None:
    """The marker's claim runs beside the create's reads and metadata file and is asked before the pointer
    (arco.iceberg.claim_beside); its finalization, like the committed receipts, follows the answer."""
    unkeyed, _, _ = create_in_rounds(warm, "u", None)
    keyed, slow, answered = create_in_rounds(warm, "v", str(uuid7()))
    assert keyed == unkeyed
    markers = sorted(start for start, op, key in slow.started if op == "put" and kind_of(key) == "marker")
    assert len(markers) == 2 and markers[0] < answered < markers[1]  # claimed before, finalized after the answer


def test_a_keyed_create_whose_key_was_used_leaves_no_file_and_answers_as_before(warm: Harness) -> None:
    """The replay's work ran beside its claim up to the pointer: its metadata file is deleted, no pointer or Tier 1
    entry is written, and the answer is the first request's."""
    key = str(uuid7())
    body = {"name": "u", "schema": SCHEMA}
    first = warm.mutations().create_table(warm.catalog, ("db",), body, Caller("admin", SOURCE, key))
    assert after_answer.drain(10)
    files = {m.key for m in warm.storage.inner.list("") if m.key.endswith(".metadata.json")}
    pointers = {m.key for m in warm.storage.inner.list(f"{POINTERS}/")}
    again = warm.reopen().mutations().create_table(warm.catalog, ("db",), body, Caller("admin", SOURCE, key))
    assert after_answer.drain(10)
    assert again == first
    assert {m.key for m in warm.storage.inner.list("") if m.key.endswith(".metadata.json")} == files
    assert {m.key for m in warm.storage.inner.list(f"{POINTERS}/")} == pointers


def test_a_create_waits_for_three_sequential_writes(warm: Harness) -> None:
    """Without an Idempotency-Key: the metadata file (the pending receipt started beside it), the pointer, the
    Tier 1 entry. The committed receipts, the table's and the catalog's, are written after the answer: still in
    flight when the call returns."""
    with slowed(warm) as slow:
        warm.mutations().create_table(warm.catalog, ("db",), {"name": "u", "schema": SCHEMA}, Caller("admin", SOURCE))
        answered = time.monotonic()
        assert after_answer.drain(10)
    assert write_rounds(slow, {"metadata file", "pointer", "tier 1"}) == [["metadata file"], ["pointer"],
                                                                           ["tier 1"]]
    # The pending receipt starts beside the metadata file; the pointer does not wait for it (on a busy machine it
    # may still be in flight then), the Tier 1 entry does.
    puts = {kind_of(key): (start, end) for (start, end), (_, op, key) in
            zip(slow.intervals, slow.started, strict=True) if op == "put"}
    assert puts["pending receipt"][0] < puts["metadata file"][1]
    assert puts["pending receipt"][1] <= puts["tier 1"][0]
    receipts = [(end, kind_of(key)) for (_, end), (_, op, key) in zip(slow.intervals, slow.started, strict=True)
                if op == "put" and kind_of(key) in ("committed receipt", "catalog receipt")]
    assert sorted(kind for _, kind in receipts) == ["catalog receipt", "committed receipt"]
    assert all(end > answered for end, _ in receipts)
