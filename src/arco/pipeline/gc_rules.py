"""What garbage collection may delete, and why (pure: the job gathers facts, these rules decide).

Defaults are the seed's section 9.2. Nothing here ever selects a file referenced by a current pointer, a file in
a table's metadata log, or a transaction record a pointer still points to: the rules are given those sets and
refuse them first.
"""

from __future__ import annotations

from dataclasses import dataclass

from arco.catalog.log import log_key, snapshot_key
from arco.iceberg.file_names import metadata_sequence

HOUR = 3600.0
DAY = 24 * HOUR
# How far a writer's clock and the store's may disagree before a marker is read a run later than it could be.
CLOCK_ALLOWANCE_S = HOUR


@dataclass(frozen=True)
class GcPolicy:
    key_lifetime_s: float = HOUR  # the advertised idempotency-key-lifetime
    in_progress_timeout_s: float = 600.0
    grace_s: float = DAY
    pending_receipt_age_s: float = DAY
    committed_receipt_age_s: float = 90 * DAY
    # An engine's metrics report is read by compact only, and its content then lives in the history's reports (and
    # lineage): a week to look at the raw JSON is enough, where 90 days of reports of a busy warehouse were most of
    # its catalog files.
    compacted_report_age_s: float = 7 * DAY
    orphan_metadata_age_s: float = 3 * DAY  # a commit in flight writes its file before its CAS: stay far away
    txn_record_age_s: float = DAY
    orphan_plan_age_s: float = DAY  # task files of a plan whose record is gone (a crash between two deletes)
    # A local warehouse's temporary file (.arco-tmp/) unchanged this long belongs to a write that was interrupted
    # (a killed process, a failed move): a write in progress touches its file continuously and takes seconds.
    temp_file_age_s: float = HOUR
    # Delta Sharing's saved change data (_catalog/sharing/cdf/) is derived and made again on demand; a file is kept
    # at least as long as the longest a signed file URL lives, so no URL made when it was written outlives it.
    sharing_cdf_grace_s: float = 7 * DAY
    # An asynchronous Delta Sharing query's record (_catalog/sharing/queries/) answers polls for a day, then 404s.
    sharing_query_age_s: float = DAY + HOUR


@dataclass(frozen=True)
class Deletion:
    key: str
    reason: str


def marker_may_be_due(listed_age_s: float, policy: GcPolicy) -> bool:
    """Whether a marker the store last wrote ``listed_age_s`` ago may be due, before it is read (a read per marker
    was most of a run on a busy warehouse: every keyed request leaves one). Each marker rule counts from a time its
    writer put in it as it wrote it (claimed, taken over, finished), so a marker written more recently than the
    shortest rule's age, less :data:`CLOCK_ALLOWANCE_S`, is not due. Skipping one only ever delays its deletion."""
    shortest = min(policy.key_lifetime_s, policy.in_progress_timeout_s) + policy.grace_s
    return listed_age_s > shortest - CLOCK_ALLOWANCE_S


def finished_marker(key: str, age_s: float, policy: GcPolicy) -> Deletion | None:
    """COMMITTED / FAILED markers are kept for the key lifetime plus a grace period."""
    if age_s > policy.key_lifetime_s + policy.grace_s:
        return Deletion(key, f"finished idempotency marker older than the key lifetime + grace ({age_s / HOUR:.0f} h)")
    return None


def stale_in_progress_marker(key: str, age_s: float, landed: bool, policy: GcPolicy) -> Deletion | None:
    """An IN_PROGRESS marker past timeout + grace is deleted only once its change is known not to have landed."""
    if age_s <= policy.in_progress_timeout_s + policy.grace_s or landed:
        return None
    return Deletion(key, "stale in-progress idempotency marker whose change never landed")


def receipt(key: str, kind: str, age_s: float, compacted: bool, policy: GcPolicy) -> Deletion | None:
    if kind == "pending" and age_s > policy.pending_receipt_age_s:
        return Deletion(key, "pending receipt older than 24 h (observability only)")
    if kind == "committed" and compacted and age_s > policy.committed_receipt_age_s:
        return Deletion(key, "committed receipt older than 90 days, already compacted")
    return None


def compacted_record(key: str, what: str, age_s: float, compacted: bool, kept_s: float) -> Deletion | None:
    """A record that lives on in the history tables once compacted (a pipeline run's record, an engine's metrics
    report): deleted once compacted and older than ``kept_s`` (its policy's age for that kind of record)."""
    if compacted and age_s > kept_s:
        return Deletion(key, f"{what} older than {kept_s / DAY:.0f} days, already compacted")
    return None


def table_metadata(files: dict[str, float], in_history: set[str], known_committed: set[str],
                   delete_after_commit: bool, policy: GcPolicy, current_sequence: int) -> list[Deletion]:
    """Metadata files of one table (key -> age in seconds) that may go.

    ``in_history``: the current file and the metadata log (never deleted). ``known_committed``: files that were a
    table version once (from receipts and the compacted timeline); one of those outside the history, and older
    than the current version (``current_sequence``, its file's number), has expired from the log and goes if the
    table asks for it (``write.metadata.delete-after-commit.enabled``). One numbered at or after the current
    version is a later version of another lineage (the table registered again from an older file): kept. Any other
    file outside the history was written by a commit that lost its compare-and-swap or crashed: an orphan.
    (The caller keeps files that another table wrote: :func:`arco.pipeline.gc.table_deletions`.)
    """
    chosen = []
    for key, age_s in sorted(files.items()):
        if key in in_history:
            continue
        if key in known_committed:
            if delete_after_commit and metadata_sequence(key) < current_sequence:
                chosen.append(Deletion(key, "previous metadata beyond write.metadata.previous-versions-max "
                                            "(write.metadata.delete-after-commit.enabled=true)"))
        elif age_s > policy.orphan_metadata_age_s:
            chosen.append(Deletion(key, "orphan metadata file (never committed: lost or crashed commit)"))
    return chosen


def group_record(key: str, age_s: float, in_history: bool, policy: GcPolicy) -> Deletion | None:
    """A group commit's record (its members, for crash recovery and receipts) is needed while its metadata file is
    in the table's history; outside it, the commit lost its race, crashed, or expired from the log."""
    if in_history or age_s <= policy.orphan_metadata_age_s:
        return None
    return Deletion(key, "group record of a metadata file outside its table's history")


def txn_record_may_be_due(age_s: float, policy: GcPolicy) -> bool:
    """Whether a transaction record this old may go, before it is read (:func:`txn_record` decides)."""
    return age_s > policy.txn_record_age_s


def txn_record(key: str, state: str, age_s: float, referenced: bool, policy: GcPolicy) -> Deletion | None:
    if referenced or state == "PENDING" or not txn_record_may_be_due(age_s, policy):
        return None
    return Deletion(key, f"{state.lower()} transaction record no pointer refers to")


def scan_plan(objects: dict[str, float], has_record: bool, expires_at_ms: int | None, now: float,
              policy: GcPolicy) -> list[Deletion]:
    """The objects of one server-side scan plan (key -> age in seconds) that may go.

    A plan with a record goes whole once it has expired (its record last, so an interrupted run is finished by
    the next); an unreadable record (``expires_at_ms`` None) is left for a person to look at. Task files with no
    record are what a crash leaves between a synchronous plan's chunks and its record, or midway through a
    deletion: they go once older than ``orphan_plan_age_s``, long after any plan could still name them.
    """
    if has_record:
        if expires_at_ms is None or now * 1000 < expires_at_ms:
            return []
        ordered = sorted(objects, key=lambda key: (key.endswith("/plan.json"), key))
        return [Deletion(key, "expired scan plan") for key in ordered]
    return [Deletion(key, "scan plan task files without a plan record")
            for key, age_s in sorted(objects.items()) if age_s > policy.orphan_plan_age_s]


def temp_file(key: str, age_s: float, policy: GcPolicy) -> Deletion | None:
    if age_s > policy.temp_file_age_s:
        return Deletion(key, f"temporary file of an interrupted write ({age_s / HOUR:.1f} h old)")
    return None


def sharing_cdf(key: str, age_s: float, version: int, table_exists: bool, oldest_version: int | None,
                policy: GcPolicy) -> Deletion | None:
    """One saved change-data file of a shared Delta table's ``version``: it goes once the table is gone, or once
    the version has left the table's log (older than its log retention: no query can ask for it any more).
    ``oldest_version`` None means the table's log could not be read: keep."""
    if age_s <= policy.sharing_cdf_grace_s:
        return None
    if not table_exists:
        return Deletion(key, "saved change data of a shared table that no longer exists")
    if oldest_version is not None and version < oldest_version:
        return Deletion(key, f"saved change data of a version older than the table's log retention "
                             f"(version {version}, oldest {oldest_version})")
    return None


def sharing_query(key: str, age_s: float, policy: GcPolicy) -> Deletion | None:
    """An asynchronous Delta Sharing query's record, once it has expired (no poll is answered from it)."""
    if age_s > policy.sharing_query_age_s:
        return Deletion(key, f"expired asynchronous Delta Sharing query ({age_s / HOUR:.0f} h old)")
    return None


def tier1_kept_roots(roots: dict[int, float], newest: int, policy: GcPolicy) -> set[int]:
    """The Tier 1 snapshot roots (position -> age) that stay: the manifest's newest, every one not older than the
    grace period or newer than the manifest's (being published), and the newest one older than the grace period
    (a server that has not looked at the manifest since may still read the files it names)."""
    kept = {seq for seq, age_s in roots.items() if seq >= newest or age_s <= policy.grace_s}
    settled = [seq for seq, age_s in roots.items() if seq <= newest and age_s > policy.grace_s]
    if settled:
        kept.add(max(settled))
    return kept | ({newest} if newest else set())


def tier1_files(kept: set[int], roots: dict[int, float], referenced: set[str], files: dict[str, float],
                entries: dict[int, float], policy: GcPolicy) -> list[Deletion]:
    """Tier 1's superseded snapshot files and old log entries (:mod:`arco.catalog.log`, :mod:`arco.catalog.snapshots`).

    ``kept`` from :func:`tier1_kept_roots`; ``referenced``: the chunk and id-bucket files the kept roots name;
    ``files``: every chunk and id-bucket file with its age; ``entries``: log positions with their ages. A file goes
    when no kept root names it and it is older than the grace period (a snapshot being written stores its files
    before its root). A log entry goes when a kept root covers it and it is older than the grace period: new
    servers start from the newest root, and a server that finds an entry gone reloads from the manifest's.
    """
    if not kept:
        return []
    chosen = [Deletion(snapshot_key(seq), f"superseded Tier 1 snapshot ({age_s / HOUR:.0f} h old)")
              for seq, age_s in sorted(roots.items()) if seq not in kept and age_s > policy.grace_s]
    chosen += [Deletion(key, f"Tier 1 snapshot file no kept snapshot names ({age_s / HOUR:.0f} h old)")
               for key, age_s in sorted(files.items()) if key not in referenced and age_s > policy.grace_s]
    covered = min(kept)
    chosen += [Deletion(log_key(seq), "Tier 1 log entry a kept snapshot covers")
               for seq, age_s in sorted(entries.items()) if seq <= covered and age_s > policy.grace_s]
    return chosen
