"""A keyed table commit claims its Idempotency-Key marker beside its first writes (arco.iceberg.claim_beside).

The work runs before the claim is known; these tests make the claim go against it (a key in flight, a key answered
before, a key reused with another payload) and check that nothing of the work lands, that the claim's answer is the
request's, and that the work's metadata file does not stay behind.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from uuid6 import uuid7

from arco.iceberg.errors import CommitFailed, IcebergError, ServiceUnavailable
from arco.iceberg.file_names import carries_tag, is_group_file
from arco.iceberg.idempotency import Outcome, key_hash
from arco.iceberg.mutations import Caller
from arco.iceberg.pointer import POINTERS
from arco.metrics import REGISTRY
from arco.storage.faults import FaultRule, SimulatedCrash
from support.held_puts import HeldPuts, race_a_retry
from support.iceberg_harness import SCHEMA, Harness

SOURCE = {"kind": "iceberg_rest", "client_info": "test", "principal": "admin"}


def set_property(value: str, requirements: list | None = None, name: str = "p") -> dict:
    return {"requirements": requirements or [], "updates": [{"action": "set-properties", "updates": {name: value}}]}


def commit(h: Harness, body: dict, key: str) -> Outcome:
    return h.mutations().commit_table(h.catalog, ("db",), "t", body, Caller("admin", SOURCE, key))


def properties(h: Harness) -> dict[str, str]:
    return dict(h.reopen().tables.load(h.catalog, ("db",), "t").metadata.properties)


def metadata_files(h: Harness) -> set[str]:
    return {m.key for m in h.storage.inner.list("") if m.key.endswith(".metadata.json")}


@pytest.fixture
def table(harness: Harness) -> Harness:
    harness.create_table("t")
    commit(harness, set_property("warm"), str(uuid7()))  # this process knows the table: the commit's fast path
    return harness


def test_a_commit_whose_key_is_in_flight_lands_nothing(table: Harness) -> None:
    key = str(uuid7())
    table.storage.inject(FaultRule(op="put", key="*.metadata.json", when="after"))
    with pytest.raises(SimulatedCrash):  # the first attempt "dies" after its file: its marker stays in flight
        commit(table, set_property("1"), key)
    table.storage.clear()
    files = metadata_files(table)
    with pytest.raises(ServiceUnavailable):  # its work ran, up to the CAS, which the claim stopped; then the retry
        commit(table, set_property("1"), key)  # waited for the marker to change, and it did not
    assert properties(table)["p"] == "warm"
    assert metadata_files(table) == files  # the work's own file was deleted


def test_a_replayed_key_answers_as_before_and_leaves_no_file(table: Harness) -> None:
    key = str(uuid7())
    first = commit(table, set_property("1"), key)
    commit(table, set_property("2"), str(uuid7()))
    files = metadata_files(table)
    assert commit(table, set_property("1"), key) == first
    assert properties(table)["p"] == "2"  # the replay did not set "1" again over the later commit
    assert metadata_files(table) == files


def test_a_replayed_refusal_wins_over_a_work_that_would_pass_now(table: Harness) -> None:
    key = str(uuid7())
    wants_schema_1 = set_property("1", [{"type": "assert-current-schema-id", "current-schema-id": 1}])
    with pytest.raises(CommitFailed) as refused:
        commit(table, wants_schema_1, key)
    commit(table, {"requirements": [], "updates": [
        {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
            {"id": 1, "name": "id", "required": False, "type": "long"},
            {"id": 2, "name": "s", "required": False, "type": "string"},
            {"id": 3, "name": "n", "required": False, "type": "long"}]}},
        {"action": "set-current-schema", "schema-id": -1}]}, str(uuid7()))
    with pytest.raises(IcebergError) as again:  # the requirement holds now: only the claim stops the work
        commit(table, wants_schema_1, key)
    assert (again.value.status, again.value.message) == (409, refused.value.message)
    assert properties(table)["p"] == "warm"


def test_a_replay_counts_no_commit_even_when_the_work_was_refused(table: Harness) -> None:
    key = str(uuid7())
    wants_schema_7 = set_property("1", [{"type": "assert-current-schema-id", "current-schema-id": 7}])
    with pytest.raises(CommitFailed):
        commit(table, wants_schema_7, key)
    before = {outcome: counted(outcome) for outcome in ("committed", "refused")}
    with pytest.raises(IcebergError):  # the replay, while the work was refused again on its own
        commit(table, wants_schema_7, key)
    assert {outcome: counted(outcome) for outcome in ("committed", "refused")} == before
    commit(table, set_property("2"), str(uuid7()))
    assert counted("committed") == before["committed"] + 1  # (the counter does count)


def counted(outcome: str) -> float:
    return REGISTRY.get_sample_value("arco_iceberg_commits_total", {"outcome": outcome}) or 0.0


def test_another_payload_under_a_used_key_is_that_conflict_whatever_the_work_found(table: Harness) -> None:
    key = str(uuid7())
    commit(table, set_property("1"), key)
    failing = set_property("2", [{"type": "assert-current-schema-id", "current-schema-id": 7}])
    with pytest.raises(CommitFailed, match="different request payload"):
        commit(table, failing, key)
    with pytest.raises(CommitFailed, match="different request payload"):
        commit(table, set_property("2"), key)
    assert properties(table)["p"] == "1"


def test_in_a_group_a_member_whose_key_was_used_before_gets_its_replay_and_the_rest_land(table: Harness) -> None:
    used = str(uuid7())
    first = commit(table, set_property("1"), used)
    commit(table, set_property("2"), str(uuid7()))
    uuid = table.tables.entry(table.catalog, ("db",), "t").id
    answers: dict[str, object] = {}

    def run(name: str, body: dict, key: str) -> None:
        try:
            answers[name] = commit(table, body, key)
        except Exception as exc:  # noqa: BLE001 - recorded for the assertions
            answers[name] = exc

    threads = [threading.Thread(target=run, args=("replay", set_property("1"), used)),
               threading.Thread(target=run, args=("new", set_property("new", name="q"), str(uuid7())))]
    with table.tables.committer.hold(uuid):
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while table.tables.committer.queued(uuid) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.002)
    for thread in threads:
        thread.join(30)
    assert answers["replay"] == first
    assert isinstance(answers["new"], Outcome)
    now = properties(table)
    assert now["q"] == "new" and now["p"] == "2"  # the replayed member's change did not land again


def hold_metadata_writes(h: Harness) -> HeldPuts:
    """The next metadata file written waits for the test: the first request, held in flight."""
    held = HeldPuts(h.storage.inner, "*.metadata.json")
    h.storage.inner = held  # type: ignore[assignment]
    return held


def claimed(held: HeldPuts, key: str) -> Callable[[], bool]:
    """Whether the key's marker has been claimed (the first request is in flight)."""
    return lambda: any(m.key.endswith(f"{key_hash(key)}.json") for m in held.list("_catalog/iceberg_idempotency/"))


def test_a_retry_while_the_first_commit_is_in_flight_waits_for_it_and_gets_its_answer(table: Harness) -> None:
    """The retry's claim (beside its work) finds the first request's marker in flight: its work is refused before
    the CAS, then it waits, outside any group commit, for the first to end, and answers as it did."""
    key = str(uuid7())
    held = hold_metadata_writes(table)
    answers: dict[str, Outcome] = {}
    other = table.reopen()

    def send(h: Harness, name: str) -> None:
        answers[name] = commit(h, set_property("1"), key)

    race_a_retry(held, lambda: send(table, "first"), lambda: send(other, "retry"), claimed(held, key))
    assert answers["retry"] == answers["first"] and answers["first"].metadata_location is not None
    assert properties(table)["p"] == "1"
    assert sum(carries_tag(f, key_hash(key)) for f in metadata_files(table)) == 1  # the retry's own file is gone


def test_a_retry_that_waited_for_a_first_commit_which_did_not_land_does_the_work_itself(table: Harness) -> None:
    """The first request's CAS fails (storage unavailable): it releases the marker and answers 503. The retry that
    was waiting for it takes the marker over and runs its work again, this time under its own claim."""
    key = str(uuid7())
    held = hold_metadata_writes(table)
    table.storage.inject(FaultRule(op="put", key=f"{POINTERS}/*", action="fail"))  # the first server's CAS only
    answers: dict[str, Outcome | Exception] = {}

    def send(h: Harness, name: str) -> None:
        try:
            answers[name] = commit(h, set_property("1"), key)
        except IcebergError as exc:
            answers[name] = exc

    other = table.reopen()
    race_a_retry(held, lambda: send(table, "first"), lambda: send(other, "retry"), claimed(held, key))
    assert isinstance(answers["first"], ServiceUnavailable), answers["first"]
    assert isinstance(answers["retry"], Outcome), answers["retry"]
    assert properties(table)["p"] == "1"
    after = table.reopen()
    current = after.tables.load(after.catalog, ("db",), "t").pointer.pointer.current_metadata_location
    assert current == answers["retry"].metadata_location and carries_tag(current, key_hash(key))


def test_a_keyed_create_retried_while_in_flight_gets_the_first_answer_and_leaves_one_table(table: Harness) -> None:
    """A create claims beside its metadata file too: the retry's work is refused before its pointer, its file is
    deleted, and it answers as the first request did."""
    key = str(uuid7())
    held = hold_metadata_writes(table)
    answers: dict[str, Outcome] = {}
    other = table.reopen()

    def send(h: Harness, name: str) -> None:
        answers[name] = h.mutations().create_table(h.catalog, ("db",), {"name": "made", "schema": SCHEMA},
                                                   Caller("admin", SOURCE, key))

    pointers_before = {m.key for m in held.list(f"{POINTERS}/")}
    race_a_retry(held, lambda: send(table, "first"), lambda: send(other, "retry"), claimed(held, key))
    assert answers["retry"] == answers["first"] and answers["first"].metadata_location is not None
    after = table.reopen()
    assert after.tables.load(after.catalog, ("db",), "made").pointer.pointer.current_metadata_location == (
        answers["first"].metadata_location)
    assert len({m.key for m in held.list(f"{POINTERS}/")} - pointers_before) == 1  # the retry wrote no pointer
    made = [m.key for m in held.list("") if m.key.endswith(".metadata.json") and "/made" in m.key]
    assert len(made) == 1, made  # and its metadata file is gone


def test_the_same_keyed_requests_sent_twice_at_once_through_two_servers_land_once_each(table: Harness) -> None:
    """Each request goes to both "servers" at the same moment: one claim wins, the other request's work (which ran
    all the same) lands nothing, and both get the same answer, the second after waiting for the first."""
    other = table.reopen()
    requests = [(str(uuid7()), set_property("1", name=f"c{i}")) for i in range(24)]
    answers: dict[str, list[str]] = {key: [] for key, _ in requests}
    busy: list[str] = []

    def send(h: Harness, key: str, body: dict) -> None:
        try:
            location = commit(h, body, key).metadata_location
        except ServiceUnavailable:
            busy.append(key)
            return
        assert location is not None
        answers[key].append(location)

    threads = [threading.Thread(target=send, args=(h, key, body)) for key, body in requests for h in (table, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not busy  # no 503: a request in flight was waited for
    assert all(len(found) == 2 and found[0] == found[1] for found in answers.values()), answers
    after = table.reopen()
    loaded = after.tables.load(after.catalog, ("db",), "t")
    uuid = loaded.entry.id
    current = loaded.pointer.pointer.current_metadata_location
    versions = [current, *(e.metadata_file for e in after.tables.files.read(current).metadata_log)]
    for key, _ in requests:
        tag = key_hash(key)
        carriers = [v for v in versions if carries_tag(v, tag) or (
            is_group_file(v) and (record := after.tables.groups.read(uuid, v)) is not None
            and record.member_of(tag) is not None)]
        assert len(carriers) == 1, (key, carriers)  # applied exactly once
    assert {f"c{i}" for i in range(24)} <= set(loaded.metadata.properties)
