"""The garbage-collection rules, directly: what may go, what never goes."""

from __future__ import annotations

import time
from pathlib import Path

from arco.pipeline import gc_rules
from arco.pipeline.gc_rules import DAY, HOUR, GcPolicy

POLICY = GcPolicy()


def test_finished_markers_live_for_the_key_lifetime_plus_grace() -> None:
    assert gc_rules.finished_marker("m", HOUR + DAY - 1, POLICY) is None
    assert gc_rules.finished_marker("m", HOUR + DAY + 1, POLICY) is not None


def test_a_marker_is_read_only_once_some_rule_could_delete_it() -> None:
    shortest = POLICY.in_progress_timeout_s + POLICY.grace_s  # shorter than the key lifetime + grace here
    assert shortest < POLICY.key_lifetime_s + POLICY.grace_s
    assert not gc_rules.marker_may_be_due(0, POLICY)
    assert not gc_rules.marker_may_be_due(shortest - gc_rules.CLOCK_ALLOWANCE_S - 1, POLICY)
    assert gc_rules.marker_may_be_due(shortest - gc_rules.CLOCK_ALLOWANCE_S + 1, POLICY)
    # Every marker the rules would delete is read: the rules' youngest deletable ages are past the threshold.
    assert gc_rules.finished_marker("m", HOUR + DAY + 1, POLICY) is not None
    assert gc_rules.marker_may_be_due(HOUR + DAY + 1, POLICY)
    assert gc_rules.stale_in_progress_marker("m", shortest + 1, landed=False, policy=POLICY) is not None
    assert gc_rules.marker_may_be_due(shortest + 1, POLICY)


def test_a_stale_in_progress_marker_goes_only_if_its_change_never_landed() -> None:
    old = POLICY.in_progress_timeout_s + DAY + 1
    assert gc_rules.stale_in_progress_marker("m", old, landed=False, policy=POLICY) is not None
    assert gc_rules.stale_in_progress_marker("m", old, landed=True, policy=POLICY) is None
    assert gc_rules.stale_in_progress_marker("m", old - 2, landed=False, policy=POLICY) is None


def test_receipts() -> None:
    assert gc_rules.receipt("p", "pending", DAY + 1, False, POLICY) is not None
    assert gc_rules.receipt("p", "pending", DAY - 1, False, POLICY) is None
    assert gc_rules.receipt("c", "committed", 91 * DAY, compacted=False, policy=POLICY) is None
    assert gc_rules.receipt("c", "committed", 89 * DAY, compacted=True, policy=POLICY) is None
    assert gc_rules.receipt("c", "committed", 91 * DAY, compacted=True, policy=POLICY) is not None


def test_run_records_go_once_compacted_and_old() -> None:
    runs = POLICY.committed_receipt_age_s
    assert gc_rules.compacted_record("r", "run", 91 * DAY, compacted=True, kept_s=runs) is not None
    assert gc_rules.compacted_record("r", "run", 91 * DAY, compacted=False, kept_s=runs) is None
    assert gc_rules.compacted_record("r", "run", 89 * DAY, compacted=True, kept_s=runs) is None


def test_metrics_reports_go_a_week_after_they_were_compacted() -> None:
    reports = POLICY.compacted_report_age_s
    assert gc_rules.compacted_record("r", "report", 8 * DAY, compacted=True, kept_s=reports) is not None
    assert gc_rules.compacted_record("r", "report", 91 * DAY, compacted=False, kept_s=reports) is None  # uncompacted
    assert gc_rules.compacted_record("r", "report", 6 * DAY, compacted=True, kept_s=reports) is None


def test_expired_versions_go_but_a_later_lineage_s_stay() -> None:
    old, current, later = "m/00001-a.metadata.json", "m/00002-b.metadata.json", "m/00003-c.metadata.json"
    files = dict.fromkeys((old, current, later), 10 * DAY)
    chosen = gc_rules.table_metadata(files, {current}, set(files), True, POLICY, current_sequence=2)
    assert [d.key for d in chosen] == [old]


def test_table_metadata_never_touches_the_history() -> None:
    files = {"cur": 10 * DAY, "log": 10 * DAY, "expired": 10 * DAY, "orphan-old": 4 * DAY, "orphan-new": HOUR}
    history = {"cur", "log"}
    keep_old = gc_rules.table_metadata(files, history, {"cur", "log", "expired"}, False, POLICY, current_sequence=5)
    assert [d.key for d in keep_old] == ["orphan-old"]
    drop_old = gc_rules.table_metadata(files, history, {"cur", "log", "expired"}, True, POLICY, 5)
    assert [d.key for d in drop_old] == ["expired", "orphan-old"]
    everything_known = gc_rules.table_metadata(files, set(files), set(), True, POLICY, 5)
    assert everything_known == []


def test_transaction_records_go_once_nothing_points_at_them() -> None:
    assert gc_rules.txn_record("t", "COMMITTED", 2 * DAY, referenced=False, policy=POLICY) is not None
    assert gc_rules.txn_record("t", "COMMITTED", 2 * DAY, referenced=True, policy=POLICY) is None
    assert gc_rules.txn_record("t", "PENDING", 20 * DAY, referenced=False, policy=POLICY) is None
    assert gc_rules.txn_record("t", "ABORTED", HOUR, referenced=False, policy=POLICY) is None


PLAN = "_catalog/iceberg_plans/p"


def test_an_expired_scan_plan_goes_whole_its_record_last() -> None:
    objects = {f"{PLAN}/plan.json": 10.0, f"{PLAN}/tasks/000001.json": 10.0, f"{PLAN}/tasks/000000.json": 10.0}
    now = 1_000.0
    assert gc_rules.scan_plan(objects, True, int(now * 1000) + 1, now, POLICY) == []
    gone = gc_rules.scan_plan(objects, True, int(now * 1000), now, POLICY)
    assert [d.key for d in gone] == [f"{PLAN}/tasks/000000.json", f"{PLAN}/tasks/000001.json", f"{PLAN}/plan.json"]
    assert {d.reason for d in gone} == {"expired scan plan"}


def test_an_unreadable_plan_record_is_kept() -> None:
    assert gc_rules.scan_plan({f"{PLAN}/plan.json": 10 * DAY}, True, None, 10 * DAY, POLICY) == []


def test_plan_task_files_without_a_record_go_once_old() -> None:
    objects = {f"{PLAN}/tasks/000000.json": DAY + 1, f"{PLAN}/tasks/000001.json": DAY - 1}
    gone = gc_rules.scan_plan(objects, False, None, 5 * DAY, POLICY)
    assert [d.key for d in gone] == [f"{PLAN}/tasks/000000.json"]


def test_temporary_files_go_only_after_their_grace_period() -> None:
    assert gc_rules.temp_file(".arco-tmp/1-ab", HOUR + 1, POLICY) is not None
    assert gc_rules.temp_file(".arco-tmp/1-ab", HOUR - 1, POLICY) is None  # maybe a write in progress
    assert gc_rules.temp_file(".arco-tmp/1-ab", 120, GcPolicy(temp_file_age_s=60)) is not None


def test_a_group_record_goes_once_its_file_is_outside_the_history_and_old() -> None:
    old = POLICY.orphan_metadata_age_s + 1
    assert gc_rules.group_record("g", old, in_history=False, policy=POLICY) is not None
    assert gc_rules.group_record("g", old, in_history=True, policy=POLICY) is None
    assert gc_rules.group_record("g", old - 2, in_history=False, policy=POLICY) is None


def test_saved_change_data_goes_with_its_table_or_its_version() -> None:
    old = POLICY.sharing_cdf_grace_s + 1
    assert gc_rules.sharing_cdf("k", POLICY.sharing_cdf_grace_s - 1, 1, False, None, POLICY) is None  # URLs may live
    assert "no longer exists" in gc_rules.sharing_cdf("k", old, 1, False, None, POLICY).reason
    assert "log retention" in gc_rules.sharing_cdf("k", old, 3, True, 4, POLICY).reason
    assert gc_rules.sharing_cdf("k", old, 4, True, 4, POLICY) is None  # still in the log: still askable
    assert gc_rules.sharing_cdf("k", old, 1, True, None, POLICY) is None  # the log could not be read: keep


def test_the_driver_finds_saved_change_data_of_gone_tables(tmp_path: Path) -> None:
    from arco.catalog.bootstrap import initialise_warehouse
    from arco.pipeline.gc import sharing_cdf_deletions
    from arco.storage.base import DoesNotExist
    from arco.storage.factory import open_storage

    storage = open_storage(str(tmp_path), {})
    initialise_warehouse(storage, admin_token=False)
    key = "_catalog/sharing/cdf/no-such-table/00000000000000000002.parquet"
    storage.put(key, b"PAR1", DoesNotExist())
    storage.put("_catalog/sharing/cdf/no-such-table/notes.txt", b"?", DoesNotExist())  # not ours: left alone
    now = time.time()
    assert sharing_cdf_deletions(storage, {}, POLICY, now) == []  # young: a signed URL may still name it
    later = sharing_cdf_deletions(storage, {}, POLICY, now + POLICY.sharing_cdf_grace_s + 60)
    assert [d.key for d in later] == [key]


def test_asynchronous_sharing_queries_go_once_they_have_expired(tmp_path: Path) -> None:
    from arco.pipeline.gc import sharing_query_deletions
    from arco.sharing.async_queries import QUERIES, QUERY_LIFETIME_MS
    from arco.storage.base import DoesNotExist
    from arco.storage.factory import open_storage

    assert POLICY.sharing_query_age_s * 1000 > QUERY_LIFETIME_MS  # never a record that still answers polls
    storage = open_storage(str(tmp_path), {})
    key = f"{QUERIES}{'a' * 32}.json"
    storage.put(key, b"{}", DoesNotExist())
    now = time.time()
    assert sharing_query_deletions(storage, POLICY, now) == []
    later = sharing_query_deletions(storage, POLICY, now + POLICY.sharing_query_age_s + 60)
    assert [d.key for d in later] == [key] and "asynchronous" in later[0].reason


def test_tier1_keeps_the_newest_root_the_young_ones_and_the_newest_settled_one() -> None:
    policy = GcPolicy(grace_s=100)
    roots = {256: 500.0, 512: 400.0, 768: 300.0, 1024: 50.0, 1280: 10.0}
    assert gc_rules.tier1_kept_roots(roots, 1280, policy) == {768, 1024, 1280}
    # A root past the manifest's (being published) stays whatever its age.
    assert gc_rules.tier1_kept_roots({256: 500.0, 512: 400.0}, 256, policy) == {256, 512}
    assert gc_rules.tier1_kept_roots({}, 0, policy) == set()


def test_tier1_files_go_when_no_kept_root_names_them_and_they_are_old() -> None:
    policy = GcPolicy(grace_s=100)
    roots = {256: 500.0, 512: 400.0, 768: 300.0}
    kept = gc_rules.tier1_kept_roots(roots, 768, policy)
    files = {"_catalog/core/chunks/a/00000000000000000256.json": 500.0,  # superseded
             "_catalog/core/chunks/a/00000000000000000768.json": 300.0,  # named by the newest root
             "_catalog/core/chunks/b/00000000000000000256.json": 500.0,  # still named by the newest root
             "_catalog/core/chunks/c/00000000000000000900.json": 5.0}  # a snapshot being written: young
    referenced = {"_catalog/core/chunks/a/00000000000000000768.json",
                  "_catalog/core/chunks/b/00000000000000000256.json"}
    entries = {700: 350.0, 768: 300.0, 769: 299.0, 770: 20.0}
    chosen = {d.key for d in gc_rules.tier1_files(kept, roots, referenced, files, entries, policy)}
    assert chosen == {"_catalog/core/snapshots/00000000000000000256.json",
                      "_catalog/core/snapshots/00000000000000000512.json",
                      "_catalog/core/chunks/a/00000000000000000256.json",
                      "_catalog/core/log/00000000000000000700.json", "_catalog/core/log/00000000000000000768.json"}
    assert gc_rules.tier1_files(set(), {}, set(), files, entries, policy) == []  # no snapshot: nothing goes
