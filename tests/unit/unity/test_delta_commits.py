"""The pure rules of Unity Catalog's Delta commit coordination: onboarding, next versions, replays, conflicts,
backfills, the tracked-commit limit, and the version ranges readers ask for."""

from __future__ import annotations

import pytest

from arco.unity import delta_commits as rules
from arco.unity.errors import UnityError


def info(version: int, name: str | None = None) -> dict:
    return {"version": version, "timestamp": 1000 + version, "file_name": name or f"{version:020d}.u{version}.json",
            "file_size": 100, "file_modification_timestamp": 2000 + version}


def request(version: int | None = None, backfilled: int | None = None, name: str | None = None,
            metadata: dict | None = None) -> rules.CommitRequest:
    body: dict = {"table_id": "t", "table_uri": "file:///w/t"}
    if version is not None:
        body["commit_info"] = info(version, name)
    if backfilled is not None:
        body["latest_backfilled_version"] = backfilled
    if metadata is not None:
        body["metadata"] = metadata
    return rules.parse_commit(body)


def run(*steps: rules.CommitRequest) -> list[dict]:
    tracked: list[dict] = []
    for step in steps:
        tracked = rules.next_tracked(tracked, step).tracked
    return tracked


def versions(tracked: list[dict]) -> list[tuple[int, bool]]:
    return [(c["version"], bool(c.get("backfilled"))) for c in tracked]


def test_the_first_commit_may_have_any_version_and_each_later_one_is_the_next() -> None:
    tracked = run(request(7), request(8))
    assert versions(tracked) == [(7, False), (8, False)]
    with pytest.raises(UnityError) as gap:
        rules.next_tracked(tracked, request(10))
    assert gap.value.status == 400 and "must be 9" in gap.value.message


def test_a_resend_of_an_accepted_commit_is_a_replay_and_another_file_a_conflict() -> None:
    tracked = run(request(1), request(2))
    again = rules.next_tracked(tracked, request(2))
    assert again.replay and again.tracked == tracked
    with pytest.raises(UnityError) as conflict:
        rules.next_tracked(tracked, request(2, name="other.json"))
    assert conflict.value.status == 409 and conflict.value.error_type == "RESOURCE_CONFLICT"
    assert rules.next_tracked(tracked, request(1)).replay


def test_a_resend_of_a_backfilled_version_is_settled_by_its_files() -> None:
    tracked = run(request(1), request(2), request(3, backfilled=2))
    assert versions(tracked) == [(3, False)]
    assert rules.next_tracked(tracked, request(2)).check_published == 2


def test_backfills_forget_commits_but_keep_the_latest() -> None:
    tracked = run(request(1), request(2), request(3))
    assert versions(rules.next_tracked(tracked, request(backfilled=1)).tracked) == [(2, False), (3, False)]
    everything = rules.next_tracked(tracked, request(backfilled=3)).tracked
    assert versions(everything) == [(3, True)]  # the table's version stays known
    assert rules.unbackfilled(everything, 0, None) == [] and rules.latest_version(everything) == 3
    after = rules.next_tracked(everything, request(4)).tracked
    assert versions(after) == [(3, True), (4, False)]
    assert [c["version"] for c in rules.unbackfilled(after, 0, None)] == [4]
    assert rules.next_tracked(tracked, request(backfilled=0)).tracked == tracked  # already backfilled: no-op
    with pytest.raises(UnityError, match="last version committed is 3"):
        rules.next_tracked(tracked, request(backfilled=4))
    with pytest.raises(UnityError, match="needs a prior commit"):
        rules.next_tracked([], request(backfilled=0))
    with pytest.raises(UnityError, match="cannot pass"):
        rules.next_tracked(tracked, request(4, backfilled=4))


def test_a_writer_that_never_backfills_is_refused_past_the_limit() -> None:
    tracked = run(*(request(v) for v in range(1, rules.MAX_TRACKED + 1)))
    with pytest.raises(UnityError) as full:
        rules.next_tracked(tracked, request(rules.MAX_TRACKED + 1))
    assert full.value.status == 429
    # backfilling in the same request makes room
    room = rules.next_tracked(tracked, request(rules.MAX_TRACKED + 1, backfilled=1)).tracked
    assert [c["version"] for c in room] == list(range(2, rules.MAX_TRACKED + 2))



def test_after_a_backfill_of_everything_the_limit_counts_only_the_new_commits() -> None:
    tracked = rules.next_tracked(run(request(1), request(2)), request(backfilled=2)).tracked  # 2 kept, backfilled
    for version in range(3, 3 + rules.MAX_TRACKED):  # the limit's worth of new commits
        tracked = rules.next_tracked(tracked, request(version)).tracked
    with pytest.raises(UnityError) as full:
        rules.next_tracked(tracked, request(3 + rules.MAX_TRACKED))
    assert full.value.status == 429


def test_readers_get_the_range_they_ask_for_newest_first_at_most_the_limit() -> None:
    tracked = run(*(request(v) for v in range(1, 6)))
    assert [c["version"] for c in rules.unbackfilled(tracked, 2, 4)] == [4, 3, 2]
    assert [c["version"] for c in rules.unbackfilled(tracked, 0, None)] == [5, 4, 3, 2, 1]
    assert rules.unbackfilled([], 0, None) == [] and rules.latest_version([]) == 0
    assert set(rules.unbackfilled(tracked, 5, None)[0]) == set(rules.COMMIT_FIELDS)


@pytest.mark.parametrize(("body", "fragment"), [
    ({"table_uri": "u", "commit_info": info(1)}, "table_id"),
    ({"table_id": "t", "commit_info": info(1)}, "table_uri"),
    ({"table_id": "t", "table_uri": "u"}, "either commit_info or latest_backfilled_version"),
    ({"table_id": "t", "table_uri": "u", "commit_info": {**info(1), "version": 0}}, "version"),
    ({"table_id": "t", "table_uri": "u", "commit_info": {**info(1), "version": "1"}}, "version"),
    ({"table_id": "t", "table_uri": "u", "commit_info": {**info(1), "file_size": True}}, "file_size"),
    ({"table_id": "t", "table_uri": "u", "commit_info": {**info(1), "file_name": "../0001.json"}}, "single file"),
    ({"table_id": "t", "table_uri": "u", "commit_info": info(1), "metadata": {}}, "at least one of"),
    ({"table_id": "t", "table_uri": "u", "commit_info": info(1), "metadata": {"properties": []}}, "properties"),
    ({"table_id": "t", "table_uri": "u", "latest_backfilled_version": 1, "metadata": {"description": "d"}},
     "backfill-only"),
    ({"table_id": "t", "table_uri": "u", "latest_backfilled_version": -1}, "latest_backfilled_version"),
])
def test_malformed_commits_are_400(body: dict, fragment: str) -> None:
    with pytest.raises(UnityError) as refused:
        rules.parse_commit(body)
    assert refused.value.status == 400 and fragment in refused.value.message


def test_malformed_reads_are_400() -> None:
    with pytest.raises(UnityError, match="end_version must be >= start_version"):
        rules.parse_get({"table_id": "t", "table_uri": "u", "start_version": 3, "end_version": 2})
    with pytest.raises(UnityError, match="start_version"):
        rules.parse_get({"table_id": "t", "table_uri": "u"})


def test_the_published_version_is_the_last_before_the_first_commit_not_backfilled() -> None:
    from arco.unity.delta_commits import published_version

    assert published_version(None) is None and published_version([]) is None  # not coordinated
    assert published_version([{"version": 5, "backfilled": True}]) == 5
    assert published_version([{"version": 3}, {"version": 4}]) == 2
    assert published_version([{"version": 3}]) == 2


@pytest.mark.parametrize("change", [{"version": 2**63}, {"version": 2**64 - 1}, {"timestamp": 2**63},
                                    {"file_name": "x" * 256}, {"file_name": "a\u2028b.json"},
                                    {"file_name": "a\x7fb.json"}])
def test_commit_fields_past_a_long_or_a_file_name_are_refused(change: dict) -> None:
    from arco.unity.delta_commits import parse_commit_info
    from arco.unity.errors import UnityError

    good = {"version": 1, "timestamp": 1, "file_name": "00000000000000000001.uuid.json", "file_size": 1,
            "file_modification_timestamp": 1}
    assert parse_commit_info(good)["version"] == 1
    with pytest.raises(UnityError) as refused:
        parse_commit_info({**good, **change})
    assert refused.value.status == 400
