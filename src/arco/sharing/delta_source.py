"""Delta tables as Delta Sharing versions, read through ``deltalake`` (delta-rs): no log parsing of our own.

``deltalake`` replays the log (checkpoints included) and gives the protocol, the metadata, the add actions of a
version with their partition values and statistics, and the commit history with timestamps. The files a
version added or removed are the difference between the add actions of that version and of the one before,
which is exactly what a commit's add/remove actions say (``OPTIMIZE`` commits rewrite files without changing
data and are skipped for change queries, as Delta's change data feed does).

``deltalake`` and ``pyarrow`` are imported where they are first used, not with this module: every server imports
it, most never read a Delta table, and pyarrow alone was about a tenth of a server's start time.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import orjson

from arco.lru import Lru
from arco.sharing.actions import SharedFile, SharedVersion, TableChange, table_changes
from arco.sharing.history import records_change_feed

if TYPE_CHECKING:
    import pyarrow as pa

# deltalake.DeltaTable; the package is imported in open_table only, so the server starts without it.
DeltaTable = Any

# Reader features a parquet-format client reads correctly (its files are plain Parquet).
PLAIN_READER_FEATURES = frozenset({"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"})
NO_DATA_CHANGE_OPERATIONS = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END", "SET TBLPROPERTIES",
                                       "ADD CONSTRAINT", "DROP CONSTRAINT", "ADD FEATURE", "UPDATE TABLE METADATA"})


class DeltaReadError(ValueError):
    """The table cannot be read as asked (no such version, not a Delta table)."""


@dataclass(frozen=True)
class DeltaSnapshot:
    version: SharedVersion
    protocol: dict[str, Any]  # the table's Delta protocol action, for responseformat=delta
    needs_delta_format: bool


_NAMES = {
    "s3.endpoint": "AWS_ENDPOINT_URL", "s3.access-key-id": "AWS_ACCESS_KEY_ID",
    "s3.secret-access-key": "AWS_SECRET_ACCESS_KEY", "s3.session-token": "AWS_SESSION_TOKEN", "s3.region": "AWS_REGION",
    "adls.account-name": "azure_storage_account_name", "adls.account-key": "azure_storage_account_key",
    "adls.sas-token": "azure_storage_sas_token", "adls.endpoint": "azure_storage_endpoint",
    "gcs.service.host": "google_base_url", "gcs.oauth2.token": "google_bearer_token",
}


def azure_connection_string(text: str) -> dict[str, str]:
    """An Azure connection string (``AccountName=..;AccountKey=..;BlobEndpoint=..``) in delta-rs' option names:
    object_store reads no connection strings, and Azurite (or any custom endpoint) is only reachable through one."""
    parts = dict(p.split("=", 1) for p in text.split(";") if "=" in p)
    out: dict[str, str] = {}
    for source, target in (("AccountName", "azure_storage_account_name"), ("AccountKey", "azure_storage_account_key"),
                           ("SharedAccessSignature", "azure_storage_sas_token"),
                           ("BlobEndpoint", "azure_storage_endpoint")):
        if parts.get(source):
            out[target] = parts[source]
    return out


def delta_storage_options(storage_options: dict[str, str]) -> dict[str, str]:
    """Arco's (Iceberg FileIO-style) storage options in the names delta-rs (object_store) reads: S3, Azure, GCS."""
    out: dict[str, str] = {}
    if storage_options.get("adls.connection-string"):
        out.update(azure_connection_string(storage_options["adls.connection-string"]))
    out.update({_NAMES[k]: v for k, v in storage_options.items() if k in _NAMES})
    if out.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        out["AWS_ALLOW_HTTP"] = "true"
    if "AWS_ENDPOINT_URL" in out:
        out.setdefault("AWS_S3_ALLOW_UNSAFE_RENAME", "true")
    if out.get("azure_storage_endpoint", "").startswith("http://") or out.get("google_base_url", "").startswith(
            "http://"):
        out["allow_http"] = "true"  # an emulator (Azurite, fake-gcs-server) on a local port
    if str(storage_options.get("gcs.no-auth", "")).lower() == "true":
        out["google_skip_signature"] = "true"
    return out


def open_table(location: str, storage_options: dict[str, str], version: int | None = None) -> DeltaTable:
    # Imported here so that a server installed without deltalake still starts (and says what is missing).
    try:
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError, TableNotFoundError
    except ImportError:
        raise DeltaReadError("this server cannot read Delta tables: the deltalake package is not installed") from None
    try:
        return DeltaTable(location, version=version, storage_options=delta_storage_options(storage_options) or None)
    except TableNotFoundError:
        raise DeltaReadError(f"no Delta table at {location}") from None
    except (DeltaError, OSError, ValueError) as exc:
        if version is not None:
            raise DeltaReadError(f"version {version} of the table does not exist") from None
        raise DeltaReadError(f"the Delta table cannot be read: {exc}") from None


def commit_timestamps(table: DeltaTable) -> dict[int, int]:
    """Version -> commit timestamp (ms) for every commit the log still has. ``table`` must be at the log's latest
    version: deltalake 1.x numbers the history of a table opened at an older version from that version down, as
    if the newer commits were its own (version 1 of four gets the timestamp of version 3)."""
    return {int(h["version"]): int(h["timestamp"]) for h in table.history() if "version" in h and "timestamp" in h}


def commit_operations(table: DeltaTable) -> dict[int, str]:
    return {int(h["version"]): str(h.get("operation", "")) for h in table.history() if "version" in h}


def version_at_or_after(timestamps: dict[int, int], timestamp_ms: int) -> int:
    """The earliest version committed at or after ``timestamp_ms`` (``startingTimestamp``)."""
    later = [v for v, ts in timestamps.items() if ts >= timestamp_ms]
    if not later:
        raise DeltaReadError("the timestamp is after the table's latest version")
    return min(later)


def version_as_of(timestamps: dict[int, int], timestamp_ms: int) -> int:
    """The latest version committed at or before ``timestamp_ms`` (time travel by ``timestamp``). A time after the
    latest commit is refused, as Delta (and the reference server) refuse it: what the table will hold then is not
    known yet, and answering today's version would pass it off as that."""
    if timestamps and timestamp_ms > max(timestamps.values()):
        raise DeltaReadError("the timestamp is after the table's latest version")
    earlier = [v for v, ts in timestamps.items() if ts <= timestamp_ms]
    if not earlier:
        raise DeltaReadError("the timestamp is before the table's first version")
    return max(earlier)


def _stats_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    return None  # binary min/max values have no JSON form in Delta stats


# Timestamps as Delta writes them in stats (UTC, "Z"); dates as ISO dates (orjson's own encoding of both).
_STATS_OPTIONS = orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z


def _stats(row: dict[str, Any]) -> str | None:
    if row.get("num_records") is None:
        return None
    stats: dict[str, Any] = {"numRecords": int(row["num_records"])}
    for source, target in (("min", "minValues"), ("max", "maxValues"), ("null_count", "nullCount")):
        if isinstance(row.get(source), dict):
            stats[target] = row[source]
    return orjson.dumps(stats, default=_stats_default, option=_STATS_OPTIONS).decode()


def _partition_string(value: Any) -> str | None:
    """A typed partition value in the sharing protocol's encoding (timestamps ``YYYY-MM-DD HH:MM:SS``, in UTC for
    a zoned one, with the fraction of a second where there is one: dropping it would name another instant)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return f"{text}.{value.microsecond:06d}" if value.microsecond else text
    return str(value)


def _parse_like(text: str, example: Any) -> Any:
    """A log partition string as the typed value deltalake made of it (``example``: one such value of its column),
    so the two can be matched; the text itself for a type without another spelling."""
    if isinstance(example, bool):
        return text.lower() == "true"
    if isinstance(example, datetime):
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if example.tzinfo is not None:  # a timestamp (not _ntz) column: a value without a zone is UTC in Delta
            return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
        return parsed
    if isinstance(example, date):
        return date.fromisoformat(text)
    if isinstance(example, (int, float, Decimal)):
        return type(example)(text)
    return text


def log_spellings(log_values: list[dict[str, str | None]], typed: list[dict[str, Any]]
                  ) -> dict[str, dict[Any, str]]:
    """Column -> typed value -> the log's string for it, from the log's distinct partition value maps
    (``DeltaTable.partitions()``, which keeps the log's strings but not which file has them) and the files' typed
    ones (``get_add_actions``, per file but parsed). deltalake has no per-file view of the strings themselves."""
    examples: dict[str, Any] = {}
    for values in typed:
        for column, value in values.items():
            if value is not None:
                examples.setdefault(column, value)
    out: dict[str, dict[Any, str]] = {}
    for values in log_values:
        for column, text in values.items():
            if text is None or text == "" or column not in examples:
                continue
            try:
                out.setdefault(column, {}).setdefault(_parse_like(text, examples[column]), text)
            except (ValueError, ArithmeticError):
                continue  # a spelling we cannot parse: that file's value is given in the protocol's encoding
    return out


def _log_values(typed: dict[str, Any], spellings: dict[str, dict[Any, str]]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for column, value in typed.items():
        known = spellings.get(column, {}).get(value) if value is not None else None
        out[column] = known if known is not None else _partition_string(value)
    return out


def file_id(path: str) -> str:
    return hashlib.sha256(path.encode()).hexdigest()[:32]


def log_path(path: str) -> str:
    """A path from the log (an add's, remove's or cdc's ``path``) as the file's name in storage. The log keeps a
    URI, relative or absolute, percent-encoded (the directory ``s=%3D`` is ``s=%253D``, a space ``%20``): decoded
    once here, where it is read, so the file server and the storage's signing name the real object."""
    return unquote(path)


def _absolute(table_uri: str, path: str) -> str:
    """The file's location, decoded; ``table_uri`` is deltalake's, itself a (percent-encoded) URI."""
    if "://" in path or path.startswith("file:/"):
        return log_path(path)
    return f"{unquote(table_uri).rstrip('/')}/{log_path(path)}"


def add_files(table: DeltaTable, version: int | None = None, timestamp_ms: int | None = None) -> list[SharedFile]:
    import pyarrow as pa  # noqa: PLC0415 - see the module docstring (start time)

    actions = pa.table(table.get_add_actions(flatten=False)).to_pylist()
    uri = table.table_uri
    typed = [row.get("partition") or {} for row in actions]
    spellings = log_spellings(table.partitions(), typed) if any(typed) else {}
    # The id hashes the path as the log writes it, as it always has: ids stay the same across servers and versions.
    return [SharedFile(url=_absolute(uri, row["path"]), id=file_id(row["path"]),
                       partition_values={k: _partition_string(v) for k, v in values.items()},
                       size=int(row["size_bytes"]), stats=_stats(row), version=version, timestamp_ms=timestamp_ms,
                       log_partition_values=_log_values(values, spellings) if values else None,
                       modification_time_ms=_int_or_none(row.get("modification_time")))
            for row, values in zip(actions, typed, strict=True)]


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, datetime):  # some deltalake versions give a timestamp column
        return int(value.timestamp() * 1000)
    return int(value) if value is not None else None


def single_partition(data: pa.Table, columns: list[str]) -> dict[str, str | None] | None:
    """The partition values every row of ``data`` shares (the sharing protocol's encoding), or None when its rows
    span several partitions (or lack a partition column): a file's action can name one partition only."""
    import pyarrow.compute as pc  # noqa: PLC0415 - see the module docstring (start time)

    out: dict[str, str | None] = {}
    for column in columns:
        if column not in data.column_names:
            return None
        distinct = pc.unique(data.column(column)).to_pylist()
        if len(distinct) != 1:
            return None
        out[column] = _partition_string(distinct[0])
    return out


def protocol_of(table: DeltaTable) -> dict[str, Any]:
    p = table.protocol()
    out: dict[str, Any] = {"minReaderVersion": p.min_reader_version, "minWriterVersion": p.min_writer_version}
    if p.reader_features:
        out["readerFeatures"] = list(p.reader_features)
    if p.writer_features:
        out["writerFeatures"] = list(p.writer_features)
    return out


def metadata_of(table: DeltaTable) -> dict[str, Any]:
    m = table.metadata()
    out: dict[str, Any] = {"id": m.id, "format": {"provider": "parquet"}, "schemaString": table.schema().to_json(),
                           "partitionColumns": list(m.partition_columns), "configuration": dict(m.configuration)}
    if m.name:
        out["name"] = m.name
    if m.description:
        out["description"] = m.description
    if m.created_time:
        out["createdTime"] = m.created_time
    return out


def _build_snapshot(table: DeltaTable, timestamps: dict[int, int]) -> DeltaSnapshot:
    """``timestamps``: the commit timestamps from the table at its latest version (see :func:`commit_timestamps`)."""
    current = table.version()
    protocol = protocol_of(table)
    features = set(protocol.get("readerFeatures") or [])
    needs_delta = protocol["minReaderVersion"] == 2 or bool(features - PLAIN_READER_FEATURES)
    shared = SharedVersion(version=current, timestamp_ms=timestamps.get(current, 0),
                           min_reader_version=protocol["minReaderVersion"], metadata=metadata_of(table),
                           files=add_files(table))
    return DeltaSnapshot(shared, protocol, needs_delta)


_TableKey = tuple[str, tuple[tuple[str, str], ...]]


class _TableCache:
    """One table's latest-tracking ``DeltaTable``; its snapshots are kept in :data:`_snapshots`.

    A version of a Delta table never changes, so its snapshot (files, statistics, metadata) is built once: a query
    then costs a look at the log for commits newer than the cached version (``update_incremental``) instead of a
    replay of the whole log and a conversion of every add action."""

    def __init__(self, key: _TableKey) -> None:
        self.key = key
        self.lock = threading.Lock()
        self.table: DeltaTable | None = None
        # Snapshots are cached under it, unique to this entry and this log: a new one when the log was rewritten, and
        # an entry forgotten and made again has its own, so snapshots cached before are never taken for this log's.
        self.generation = next(_generations)

    def latest(self, location: str, storage_options: dict[str, str]) -> DeltaTable:
        """The table at its latest version (call with ``lock`` held)."""
        if self.table is None:
            self.table = open_table(location, storage_options)
            return self.table
        from deltalake.exceptions import DeltaError  # importable: open_table succeeded before

        try:
            self.table.update_incremental()
        except (DeltaError, OSError, ValueError):  # the log was rewritten or removed: start over (says what is wrong)
            self.table = None
            self.generation = next(_generations)
            self.table = open_table(location, storage_options)
        return self.table

    def cached(self, version: int) -> DeltaSnapshot | None:
        return _snapshots.get((self.generation, version))

    def weigh(self, files: int) -> None:
        """Weigh this entry by the files of its table's latest version, which its ``DeltaTable`` holds (in delta-rs,
        outside Python's heap), once a snapshot of that version told how many there are."""
        _tables.put(self.key, self, unless=lambda held: held is not self,  # a newer entry for the place stays
                    weight=TABLE_BYTES + DELTA_TABLE_FILE_BYTES * files)

    def remember(self, snap: DeltaSnapshot) -> DeltaSnapshot:
        # Weighed here, not under the cache's lock: a snapshot of many files takes a while to weigh.
        _snapshots.put((self.generation, snap.version.version), snap, weight=snapshot_weight(snap))
        return snap


# Bytes a cached file holds besides its strings (the object, its partition dicts, the ints), measured with
# tracemalloc: ~840 bytes a file of 270 characters of path, id and statistics.
FILE_OVERHEAD_BYTES = 600


def snapshot_weight(snap: DeltaSnapshot) -> int:
    """An estimate of the bytes a snapshot holds: its files dominate (a table of 100,000 files, ~85 MB)."""
    return 4096 + sum(FILE_OVERHEAD_BYTES + len(f.url) + len(f.id) + len(f.stats or "") for f in snap.version.files)


_generations = itertools.count()
CACHED_TABLES = 64
SNAPSHOTS_CACHED = 3 * CACHED_TABLES
# Snapshots are bounded by their files' size as well as by count: a count alone let a few tables of very many
# files hold hundreds of MB. A snapshot heavier than the whole budget is built again for each query instead.
SNAPSHOTS_BUDGET_BYTES = 128 << 20
# The tables' DeltaTable objects likewise: a DeltaTable keeps its version's add actions in Arrow, 60-210 bytes a
# file by the process's resident memory (three opens of a table of 20,000 files), so 64 tables of a million files
# each would hold gigabytes. An entry is weighed when a snapshot of its latest version counts the files.
TABLE_BYTES = 64 << 10
DELTA_TABLE_FILE_BYTES = 200
TABLES_BUDGET_BYTES = 256 << 20
_tables: Lru[_TableKey, _TableCache] = Lru(CACHED_TABLES, budget=TABLES_BUDGET_BYTES, weigh=lambda _: TABLE_BYTES)
# Keyed by (generation, version); weighed by snapshot_weight.
_snapshots: Lru[tuple[int, int], DeltaSnapshot] = Lru(SNAPSHOTS_CACHED, budget=SNAPSHOTS_BUDGET_BYTES)


def _cache_for(location: str, storage_options: dict[str, str]) -> _TableCache:
    key = (location, tuple(sorted(storage_options.items())))
    return _tables.get(key) or _tables.setdefault(key, _TableCache(key))


def clear_cache() -> None:
    _tables.clear()
    _snapshots.clear()


def snapshot(location: str, storage_options: dict[str, str], *, version: int | None = None,
             timestamp_ms: int | None = None, newest: int | None = None) -> DeltaSnapshot:
    """One version of the table (the latest, a version, or the one current at a timestamp) with its files;
    ``newest``: the last version that may be read (a catalog-coordinated table's published one), whatever else
    the log holds."""
    entry = _cache_for(location, storage_options)
    with entry.lock:
        table = entry.latest(location, storage_options)
        latest = _capped(table.version(), newest)
        timestamps = commit_timestamps(table) if timestamp_ms is not None else None
        if timestamps is not None and timestamp_ms is not None:
            version = version_as_of({v: t for v, t in timestamps.items() if v <= latest}, timestamp_ms)
        if version is None:
            version = latest
        if version > latest:
            raise DeltaReadError(f"version {version} of the table does not exist (latest is {latest})")
        cached = entry.cached(version)
        if cached is not None:
            return cached
        if version == table.version():
            latest_commit = {int(h["version"]): int(h["timestamp"]) for h in table.history(1)}
            snap = entry.remember(_build_snapshot(table, latest_commit))
            entry.weigh(len(snap.version.files))
            return snap
        # Read from the latest table: an old version's own history is numbered wrongly (commit_timestamps).
        if timestamps is None:
            timestamps = commit_timestamps(table)
    # An older version: its own table object, outside the lock (the latest stays servable meanwhile).
    old = open_table(location, storage_options, version)
    snap = _build_snapshot(old, timestamps)
    with entry.lock:
        return entry.remember(snap)


def latest_version(location: str, storage_options: dict[str, str], newest: int | None = None) -> int:
    entry = _cache_for(location, storage_options)
    with entry.lock:
        return _capped(int(entry.latest(location, storage_options).version()), newest)


def starting_version_at(location: str, storage_options: dict[str, str], timestamp_ms: int,
                        newest: int | None = None) -> int:
    timestamps = commit_timestamps(open_table(location, storage_options))
    return version_at_or_after({v: t for v, t in timestamps.items() if newest is None or v <= newest}, timestamp_ms)


def _capped(version: int, newest: int | None) -> int:
    return version if newest is None else min(version, newest)


def change_rows(location: str, storage_options: dict[str, str], version: int) -> pa.Table:
    """The row-level change data of one version (deltalake reads its cdc files), without the commit columns
    (the client adds ``_commit_version`` / ``_commit_timestamp`` from the action itself)."""
    import pyarrow as pa  # noqa: PLC0415 - see the module docstring (start time)

    table = open_table(location, storage_options)
    data = pa.table(table.load_cdf(starting_version=version, ending_version=version).read_all())
    return data.drop_columns([c for c in ("_commit_version", "_commit_timestamp") if c in data.column_names])


# (version, timestamp, the version's partition columns) -> its change-data files (None: it has no change data)
ChangeData = Callable[[int, int, list[str]], "list[SharedFile] | None"]


def cdc_files(location: str, commit: bytes, version: int, timestamp_ms: int) -> list[SharedFile]:
    """The change data a version's writer recorded: its commit file's ``cdc`` actions (NDJSON ``commit``), as
    files of the table at ``location``, with the log's partition values. Served as they are, as Delta's change
    data feed reads them (deltalake's own reader fails on a cdc file under an escaped partition folder)."""
    actions = [orjson.loads(raw) for raw in commit.splitlines() if raw.strip()]
    return [SharedFile(url=_absolute(location, a["cdc"]["path"]), id=file_id(a["cdc"]["path"]),
                       partition_values=dict(a["cdc"].get("partitionValues") or {}), size=int(a["cdc"].get("size", 0)),
                       stats=None, version=version, timestamp_ms=timestamp_ms, change_type="cdf")
            for a in actions if isinstance(a, dict) and isinstance(a.get("cdc"), dict) and "path" in a["cdc"]]


def changes(location: str, storage_options: dict[str, str], starting_version: int,
            ending_version: int | None, change_data: ChangeData | None = None, newest: int | None = None
            ) -> tuple[list[SharedFile], list[TableChange]]:
    """The files each version in ``[starting, ending]`` added ("insert") or removed ("delete"); and the versions
    after the first that changed the table's metadata or protocol.

    A version that rewrote files (DELETE, UPDATE, MERGE) removes whole files whose other rows did not change;
    with ``change_data`` such a version is answered by its row-level change data instead ("cdf" files),
    which is what Delta's change data feed means by the version's changes. A change data feed (``change_data``)
    covers only versions whose metadata record it (``delta.enableChangeDataFeed``): a range reaching a version
    from before it was enabled, or after it was disabled, is refused, as Delta refuses it."""
    latest = open_table(location, storage_options)
    last = _capped(latest.version(), newest)
    end = last if ending_version is None else min(ending_version, last)
    if starting_version > last:
        raise DeltaReadError(f"startingVersion {starting_version} is after the latest version {last}")
    timestamps = commit_timestamps(latest)
    operations = commit_operations(latest)
    if starting_version == 0:
        before: dict[str, SharedFile] = {}
        table = None
    else:
        table = open_table(location, storage_options, starting_version - 1)
        before = {f.id: f for f in add_files(table)}
    out: list[SharedFile] = []
    states: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    for version in range(starting_version, end + 1):
        if table is None:
            table = open_table(location, storage_options, version)
        else:
            table.load_as_version(version)
        metadata = metadata_of(table)
        if change_data is not None and not records_change_feed(metadata):
            raise DeltaReadError(f"Error getting change data for range [{starting_version}, {end}] as change data "
                                 f"was not recorded for version [{version}]: the table had "
                                 "delta.enableChangeDataFeed off then")
        states.append((version, metadata, protocol_of(table)))
        ts = timestamps.get(version, 0)
        now = {f.id: f for f in add_files(table)}
        removed = [f for fid, f in before.items() if fid not in now]
        cdf = (change_data(version, ts, list(metadata["partitionColumns"]))
               if change_data is not None and removed else None)
        if cdf is not None:
            out.extend(cdf)
        elif operations.get(version, "").upper() not in NO_DATA_CHANGE_OPERATIONS:
            for fid, f in now.items():
                if fid not in before:
                    out.append(_at(f, version, ts, "insert"))
            for fid, f in before.items():
                if fid not in now:
                    out.append(_at(f, version, ts, "delete"))
        before = now
    return out, table_changes(states)


def _at(f: SharedFile, version: int, ts: int, change: str) -> SharedFile:
    return replace(f, stats=f.stats if change == "insert" else None, version=version, timestamp_ms=ts,
                   change_type=change)
