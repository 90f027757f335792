"""Reading one shared table for the protocol: its version, metadata, files and changes, paged and refreshable.

Every answer about a table comes from one version read once (a Delta version through ``deltalake``, an Iceberg
metadata file through the catalog's pointer), so the ``Delta-Table-Version`` header, the metadata and the files
of a response always agree, even while writers append to the table; a paged answer's later pages, and a refresh,
read the version its first page read (:mod:`arco.sharing.paging`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from arco.catalog.model import TableEntry
from arco.catalog.securables import SecurableEntry
from arco.iceberg.tables import TableService
from arco.settings import ServerSettings
from arco.sharing import (
    delta_source,
    file_urls,
    history,
    paging,
    partition_filter,
    predicates,
    protocol,
    responses,
)
from arco.sharing.actions import SharedFile, SharedVersion, TableChange, iceberg_protocol
from arco.sharing.errors import SharingError, bad_request, not_found
from arco.sharing.recipients import Recipient
from arco.storage.base import DoesNotExist, StorageBackend, StorageError
from arco.storage.urls import file_under
from arco.unity.delta_commits import published_version

CDF_PREFIX = "_catalog/sharing/cdf"
CHANGE_QUERY_FIELDS = ("startingVersion", "endingVersion", "startingTimestamp", "endingTimestamp",
                       "includeHistoricalMetadata", "includeHistoricalProtocol")
CACHED_ANSWERS = 4  # file-line sets kept (one per table version, format, recipient and URL expiry step)
CACHED_CDF_PARTITIONS = 1024  # partition values of saved change-data files, kept not to read the files again

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class SharedTable:
    share: SecurableEntry
    schema: str
    name: str
    obj: dict[str, Any]  # the share's object entry (name, shared_as, table_id, cdf_enabled, start_version ...)
    table: TableEntry


@dataclass(frozen=True)
class TableRead:
    version: SharedVersion
    delta_protocol: dict[str, Any]
    needs_delta_format: bool


@dataclass(frozen=True)
class Answer:
    """An NDJSON answer: the lines, the version header, and the format chosen."""

    lines: list[bytes]
    version: int
    fmt: str
    url_expiration_ms: int | None = None  # the earliest expiry of the answer's file URLs (EndStreamAction)
    end_stream: dict[str, Any] | None = None  # set: an EndStreamAction is owed (paged, refreshable), with these


class TableReads:
    def __init__(self, settings: ServerSettings, storage: StorageBackend, tables: TableService,
                 signing_key: file_urls.SigningKey) -> None:
        self.settings = settings
        self.storage = storage
        self.tables = tables
        self.signing_key = signing_key
        self._lines: dict[tuple[Any, ...], dict[str, bytes]] = {}  # insertion-ordered: the oldest goes first
        self._lines_lock = threading.Lock()
        self._cdf_partitions: dict[str, dict[str, str | None]] = {}  # saved change-data key -> its partition values

    def _read(self, t: SharedTable, *, version: int | None = None, timestamp_ms: int | None = None) -> TableRead:
        fmt = t.table.format
        try:
            if fmt == "DELTA":
                snap = delta_source.snapshot(t.table.location, self.settings.storage_options, version=version,
                                             timestamp_ms=timestamp_ms, newest=_published(t))
                return TableRead(snap.version, snap.protocol, snap.needs_delta_format)
            if fmt == "ICEBERG":
                iceberg_source = _iceberg_source()
                metadata, io = self._iceberg(t)
                shared = iceberg_source.iceberg_version(metadata, io, version=version, timestamp_ms=timestamp_ms)
                return TableRead(shared, iceberg_protocol(shared.min_reader_version), False)
        except delta_source.DeltaReadError as exc:
            raise bad_request(str(exc)) from None
        except ValueError as exc:  # the Iceberg source's "no such version", and UnsharableTable
            raise _iceberg_error(exc) from None
        raise bad_request(f"{t.share.name}.{t.schema}.{t.name} is a {fmt} table; only Delta and Iceberg tables "
                          "can be read through Delta Sharing")

    def _iceberg(self, t: SharedTable) -> tuple[Any, Any]:
        from arco.iceberg.planner import file_io, server_io_options

        pointer = self.tables.resolver.for_read(t.table.id)
        if pointer is None or pointer.pointer.dropped:
            raise not_found(f"table {t.share.name}.{t.schema}.{t.name} no longer exists")
        metadata = self.tables.files.read(pointer.pointer.current_metadata_location)
        return metadata, file_io(metadata.location, server_io_options(self.storage, self.settings.storage_options))

    def table_version(self, t: SharedTable, starting_timestamp: str | None, *, for_changes: bool = False) -> int:
        """The latest version, or the first at or after ``startingTimestamp`` (history only, unless asked on
        behalf of a change data feed query the share allows, which checked itself)."""
        if starting_timestamp is None:
            if t.table.format == "DELTA":
                try:
                    return delta_source.latest_version(t.table.location, self.settings.storage_options,
                                                       _published(t))
                except delta_source.DeltaReadError as exc:
                    raise bad_request(str(exc)) from None
            return self._read(t).version.version
        ts = protocol.parse_timestamp(starting_timestamp, "startingTimestamp")
        if not for_changes:
            history.check_history(t.obj, "looking up a version by startingTimestamp")
        try:
            if t.table.format == "DELTA":
                return delta_source.starting_version_at(t.table.location, self.settings.storage_options, ts,
                                                        _published(t))
            if t.table.format == "ICEBERG":
                metadata, _ = self._iceberg(t)
                return int(_iceberg_source().iceberg_version_at_or_after(metadata, ts))
        except delta_source.DeltaReadError as exc:
            raise bad_request(str(exc)) from None
        except ValueError as exc:
            raise _iceberg_error(exc) from None
        raise bad_request(f"a {t.table.format} table cannot be shared")

    def metadata(self, t: SharedTable, caps: dict[str, list[str]], version: int | None,
                 timestamp: str | None, access: dict[str, Any] | None = None) -> Answer:
        """Query Table Metadata; ``access``: the table's access modes, given with its metadata."""
        if version is not None and timestamp is not None:
            raise bad_request("version and timestamp are mutually exclusive")
        ts = protocol.parse_timestamp(timestamp, "timestamp") if timestamp is not None else None
        if version is not None or ts is not None:
            history.check_history(t.obj, "reading the table's metadata by version or timestamp")
        read = self._read(t, version=version, timestamp_ms=ts)
        if version is not None or ts is not None:
            history.check_floor(t.obj, read.version.version)
        fmt = protocol.response_format(caps, read.needs_delta_format)
        lines = [responses.protocol_line(fmt, read.delta_protocol),
                 responses.metadata_line(fmt, read.version, with_version=version is not None or ts is not None,
                                         access=access, cdf=_change_feed(t),
                                         shared=_shared_part(t, read.version.files))]
        return Answer(lines, read.version.version, fmt)

    def query(self, t: SharedTable, caps: dict[str, list[str]], body: protocol.QueryBody,
              recipient: Recipient | None = None, pinned: paging.Pin | None = None) -> Answer:
        """A Query Table answer (one page of it, if paged). ``pinned``: what an asynchronous query's submission
        read; else a page or refresh token's pin, else the table now."""
        query = body.params()
        at, pinned = self._paging(t, recipient, query, body.max_files, body.page_token, pinned)
        if body.refresh_token is not None:  # never with a page token (protocol.query_body)
            pinned = self.refresh_pin(t, recipient, body.refresh_token)
        if body.starting_version is not None:
            history.check_history(t.obj, "querying the table's changes by startingVersion")
            # A streaming read: the changes come with the metadata of each version that changed it (the spec's
            # "including historical metadata"), and with its protocol if the client asked.
            return self._changes(t, caps, body.starting_version, body.ending_version, include_cdf=False,
                                 historical_metadata=True, historical_protocol=body.include_historical_protocol,
                                 recipient=recipient, query=query, at=at, pinned=pinned)
        if body.time_travel:
            history.check_history(t.obj, "reading the table by version or timestamp")
        if pinned is not None:
            read = self._read(t, version=pinned.version)
        else:
            read = self._read(t, version=body.version, timestamp_ms=body.timestamp_ms)
        if body.time_travel:
            history.check_floor(t.obj, read.version.version)
        fmt = protocol.response_format(caps, read.needs_delta_format)
        own = _only_own_files(t, read.version.files, self._derived_prefix(t))
        shared = _shared_part(t, own)
        files = predicates.filter_files(shared, body.predicate_hints, body.json_predicate_hints, body.limit_hint)
        reader = _reader(recipient, t)
        sign = self.signer(reader)
        expires_ms = sign(file_urls.EXPIRY_PROBE)[1]
        if body.time_travel:
            lines = list(responses.snapshot_lines(fmt, read.delta_protocol, read.version, files, sign,
                                                  time_travel=True, cdf=_change_feed(t), shared=shared))
        else:
            by_id = self._file_lines((t.table.id, read.version.version, fmt, reader, expires_ms), fmt,
                                     read.version.files, sign)
            lines = [responses.protocol_line(fmt, read.delta_protocol),
                     responses.metadata_line(fmt, read.version, cdf=_change_feed(t), shared=shared),
                     *(by_id[f.id] for f in files)]
        version = read.version.version
        refresh = version if body.include_refresh_token else None
        return self._page(t, recipient, Answer(lines, version, fmt, expires_ms), query, at, paging.Pin(version),
                          refresh)

    def refresh_pin(self, t: SharedTable, recipient: Recipient | None, token: str) -> paging.Pin:
        """The version a refresh token of this table and recipient pins (400 for any other token)."""
        return paging.read_refresh_token(self.signing_key.get(), token, table_id=t.table.id,
                                         reader=reader_name(recipient), now_ms=now_ms())

    def _paging(self, t: SharedTable, recipient: Recipient | None, query: dict[str, Any], max_files: int | None,
                page_token: str | None, pinned: paging.Pin | None) -> tuple[paging.Paging | None, paging.Pin | None]:
        """Where this page starts and what the query's first page read (from the page token); None for an
        answer that is not paged."""
        if page_token is not None:
            at = paging.read_page_token(self.signing_key.get(), page_token, table_id=t.table.id,
                                        reader=reader_name(recipient), query=paging.checksum(query),
                                        now_ms=now_ms())
            return replace(at, max_files=max_files), at.pin
        return (paging.Paging(max_files) if max_files is not None else None), pinned

    def _page(self, t: SharedTable, recipient: Recipient | None, answer: Answer, query: dict[str, Any],
              at: paging.Paging | None, pin: paging.Pin, refresh_version: int | None = None) -> Answer:
        """The page of ``answer`` that ``at`` asks for, with the EndStreamAction fields that lead on: the next
        page's token, and a refresh token for the version read if the client asked for one."""
        if at is None and refresh_version is None:
            return answer
        key, now, reader = self.signing_key.get(), now_ms(), reader_name(recipient)
        page = paging.cut(answer.lines, at or paging.Paging())
        end: dict[str, Any] = {}
        if page.next_start is not None:
            end["nextPageToken"] = paging.page_token(key, table_id=t.table.id, reader=reader,
                                                     query=paging.checksum(query), pin=pin, start=page.next_start,
                                                     now_ms=now)
        if refresh_version is not None:
            end["refreshToken"] = paging.refresh_token(key, table_id=t.table.id, reader=reader,
                                                       version=refresh_version, now_ms=now)
        return replace(answer, lines=page.lines, end_stream=end)

    def _file_lines(self, key: tuple[Any, ...], fmt: str, files: list[SharedFile],
                    sign: responses.Signer) -> dict[str, bytes]:
        """Every file line of a version for one recipient and URL expiry, made once: signing is most of a large
        answer's cost, and the signer's expiry only moves once a minute (see :meth:`signer`)."""
        with self._lines_lock:
            cached = self._lines.get(key)
        if cached is None:
            cached = {f.id: responses.file_line(fmt, f, sign) for f in files}
            with self._lines_lock:
                self._lines[key] = cached
                while len(self._lines) > CACHED_ANSWERS:
                    self._lines.pop(next(iter(self._lines)))
        return cached

    def changes(self, t: SharedTable, caps: dict[str, list[str]], params: dict[str, str],
                recipient: Recipient | None = None) -> Answer:
        history.check_change_data(t.obj, f"{t.share.name}.{t.schema}.{t.name}")
        query = {k: v for k, v in params.items() if k in CHANGE_QUERY_FIELDS}
        at, pinned = self._paging(t, recipient, query, paging.max_files(params.get("maxFiles")),
                                  params.get("pageToken") or None, None)
        starting = protocol.parse_version(params.get("startingVersion"), "startingVersion")
        ending = protocol.parse_version(params.get("endingVersion"), "endingVersion")
        if params.get("startingTimestamp") is not None:
            if starting is not None:
                raise bad_request("startingVersion and startingTimestamp are mutually exclusive")
            starting = self.table_version(t, params["startingTimestamp"], for_changes=True)
        if params.get("endingTimestamp") is not None:
            if ending is not None:
                raise bad_request("endingVersion and endingTimestamp are mutually exclusive")
            ending = self._version_as_of(t, protocol.parse_timestamp(params["endingTimestamp"], "endingTimestamp"))
        if starting is None:
            raise bad_request("startingVersion or startingTimestamp is required")
        if ending is not None and ending < starting:
            raise bad_request("the ending version must not be before the starting version")
        if _change_feed(t) is False:  # a Delta table's versions each say whether they record it (changes)
            raise bad_request(f"table {t.share.name}.{t.schema}.{t.name} does not share its change data feed: "
                              "enable it on the share's object")
        historical_metadata = protocol.parse_flag(params.get("includeHistoricalMetadata"), "includeHistoricalMetadata")
        historical_protocol = protocol.parse_flag(params.get("includeHistoricalProtocol"), "includeHistoricalProtocol")
        return self._changes(t, caps, starting, ending, include_cdf=True, recipient=recipient,
                             historical_metadata=historical_metadata, historical_protocol=historical_protocol,
                             query=query, at=at, pinned=pinned)

    def pin(self, t: SharedTable, caps: dict[str, list[str]], body: protocol.QueryBody,
            recipient: Recipient | None) -> tuple[paging.Pin, int, str]:
        """What a query will read, fixed now (an asynchronous query's submission): the pin (a refresh token's
        version, if it brings one), the version its answer names, and its response format. Checks what the query
        itself would check first."""
        if body.refresh_token is not None:
            pinned = self.refresh_pin(t, recipient, body.refresh_token)
            read = self._read(t, version=pinned.version)
            return pinned, read.version.version, protocol.response_format(caps, read.needs_delta_format)
        if body.starting_version is not None:
            history.check_history(t.obj, "querying the table's changes by startingVersion")
            history.check_floor(t.obj, body.starting_version)
            latest = self._read(t)
            ending = body.ending_version if body.ending_version is not None else latest.version.version
            fmt = protocol.response_format(caps, latest.needs_delta_format)
            return paging.Pin(latest.version.version, ending), body.starting_version, fmt
        if body.time_travel:
            history.check_history(t.obj, "reading the table by version or timestamp")
        read = self._read(t, version=body.version, timestamp_ms=body.timestamp_ms)
        if body.time_travel:
            history.check_floor(t.obj, read.version.version)
        version = read.version.version
        return paging.Pin(version), version, protocol.response_format(caps, read.needs_delta_format)

    def _version_as_of(self, t: SharedTable, timestamp_ms: int) -> int:
        """An ending bound by time: a time after the latest commit is the latest version (capped, as an
        ``endingVersion`` past the latest is), where time travel to it is refused."""
        latest = self._read(t).version
        if timestamp_ms >= latest.timestamp_ms:
            return latest.version
        return self._read(t, timestamp_ms=timestamp_ms).version.version

    def _changes(self, t: SharedTable, caps: dict[str, list[str]], starting: int, ending: int | None, *,
                 include_cdf: bool, historical_metadata: bool, historical_protocol: bool,
                 recipient: Recipient | None, query: dict[str, Any], at: paging.Paging | None,
                 pinned: paging.Pin | None) -> Answer:
        """Files from ``starting`` on, after the protocol and metadata: of ``starting`` followed by each later
        version's that changed them when the client follows the table's history (``historical_metadata``), else
        the latest (one schema to read every file with), as Delta Sharing's reference server answers. A paged
        answer fixes "the latest" and the range's end on its first page (``pinned`` on the later ones)."""
        history.check_floor(t.obj, starting)
        latest: TableRead | None = None
        if pinned is None and at is not None:
            latest = self._read(t)
            pinned = paging.Pin(latest.version.version, ending if ending is not None else latest.version.version)
        if pinned is not None:
            ending = pinned.ending
        changed: list[TableChange] = []
        try:
            if t.table.format == "DELTA":
                # A change data feed query (include_cdf) has checked that the table records its change data.
                change_data = self._change_data_file(t) if include_cdf else None
                files, changed = delta_source.changes(t.table.location, self.settings.storage_options, starting,
                                                      ending, change_data, _published(t))
            elif t.table.format == "ICEBERG":
                metadata, io = self._iceberg(t)
                source = _iceberg_source()
                files = list(source.iceberg_files_since(metadata, io, starting, ending))
                if historical_metadata or historical_protocol:
                    changed = source.iceberg_table_changes(metadata, starting, ending)
            else:
                raise bad_request(f"a {t.table.format} table cannot be shared")
        except delta_source.DeltaReadError as exc:
            raise bad_request(str(exc)) from None
        except ValueError as exc:
            raise _iceberg_error(exc) from None
        files = _shared_part(t, _only_own_files(t, files, self._derived_prefix(t)))
        head = starting if historical_metadata else (pinned.version if pinned is not None else None)
        read = latest if latest is not None and head == latest.version.version else self._read(t, version=head)
        fmt = protocol.response_format(caps, read.needs_delta_format)
        if not historical_metadata:
            changed = [replace(c, metadata=None) for c in changed if c.protocol is not None]
        sign = self.signer(_reader(recipient, t))
        lines = list(responses.change_lines(fmt, read.delta_protocol, read.version, files, sign,
                                            include_cdf=include_cdf, changes=changed,
                                            historical_protocol=historical_protocol, cdf=_change_feed(t)))
        answer = Answer(lines, starting, fmt, sign(file_urls.EXPIRY_PROBE)[1])
        return self._page(t, recipient, answer, query, at, pinned) if pinned is not None else answer

    def _change_data_file(self, t: SharedTable) -> delta_source.ChangeData:
        """Row-level change data of a rewriting version: the cdc files its writer recorded, where it did; else
        derived from the version, kept once per version under ``_catalog/sharing/cdf`` (create-only: derived
        data, the same for every server) so it has a URL like any data file. Where it cannot be derived as one
        file of one partition (its rows span partitions, which a partition-filtered recipient could not be
        given, or deltalake cannot read the version, as under an escaped partition folder), the version is
        answered file by file instead (None): whole files deleted and added, each with its partition."""

        def materialize(version: int, timestamp_ms: int, partition_columns: list[str]) -> list[SharedFile] | None:
            commit = self._commit_file(t, version)
            recorded = delta_source.cdc_files(t.table.location, commit, version, timestamp_ms) if commit else []
            if recorded:
                return recorded
            key = f"{CDF_PREFIX}/{t.table.id}/{version:020d}.parquet"
            existing = self.storage.head(key)
            data = None
            if existing is None:
                try:
                    data = delta_source.change_rows(t.table.location, self.settings.storage_options, version)
                except Exception:  # noqa: BLE001 - deltalake's reader fails through Arrow's C interface as a bare
                    return None    # Exception (a file under an escaped partition folder "not found", say)
                if data.num_rows == 0 or (partition_columns and
                                          delta_source.single_partition(data, partition_columns) is None):
                    return None
                from arco.pipeline import parquet_io  # noqa: PLC0415 - pyarrow: see arco.sharing.delta_source

                # Snappy, as recipients' readers have always been given it here.
                self.storage.put(key, parquet_io.parquet_bytes(data, "snappy"), DoesNotExist())
                existing = self.storage.head(key)
            assert existing is not None
            partition = self._cdf_partition(key, partition_columns, data)
            if partition_columns and not partition:
                return None  # saved before such versions were answered file by file
            return [SharedFile(url=self.storage.location_of(key), id=f"cdf-{t.table.id}-{version}",
                               partition_values=partition,
                               size=existing.size, stats=None, version=version, timestamp_ms=timestamp_ms,
                               change_type="cdf")]

        return materialize

    def _derived_prefix(self, t: SharedTable) -> str:
        """Where the change data Arco derives for ``t`` is kept (:meth:`_change_data_file`)."""
        return self.storage.location_of(f"{CDF_PREFIX}/{t.table.id}")

    def _commit_file(self, t: SharedTable, version: int) -> bytes | None:
        """The bytes of a Delta version's commit file, where the table lies in the warehouse (None elsewhere, or
        if it cannot be read: the change data is then derived from the version)."""
        try:  # a location outside the warehouse has no key: MetadataLocationError, a StorageError
            key = self.tables.files.key_of(f"{t.table.location.rstrip('/')}/_delta_log/{version:020d}.json")
            return self.storage.get(key).data
        except (StorageError, OSError):
            return None

    def _cdf_partition(self, key: str, columns: list[str], data: pa.Table | None) -> dict[str, str | None]:
        """The partition values of a saved change-data file (one per version), whose rows all lie in one
        partition: a Delta reader takes partition columns from the action, not the file. ``{}`` for one saved
        before versions whose changes span partitions were answered file by file. Read back from the file once
        per process when another server (or an earlier one) wrote it."""
        if not columns:
            return {}
        with self._lines_lock:
            known = self._cdf_partitions.get(key)
        if known is None:
            if data is None:
                from arco.pipeline import parquet_io  # noqa: PLC0415 - pyarrow: see arco.sharing.delta_source

                data = parquet_io.read_parquet(self.storage, key)
            known = delta_source.single_partition(data, columns) or {}
            with self._lines_lock:
                self._cdf_partitions[key] = known
                while len(self._cdf_partitions) > CACHED_CDF_PARTITIONS:
                    self._cdf_partitions.pop(next(iter(self._cdf_partitions)))
        return known

    def signer(self, reader: tuple[str, ...] | None = None) -> responses.Signer:
        lifetime = self.settings.sharing_url_lifetime_s
        # The expiry moves in steps (a minute, or a tenth of a short lifetime), so answers within one step sign
        # alike and can be reused (_file_lines); a URL lives between lifetime - step and lifetime.
        step = min(60_000, lifetime * 100)
        expires_ms = (now_ms() + lifetime * 1000) // step * step
        key = self.signing_key.get()
        base = self.settings.public_url() + file_urls.FILES_PATH

        def sign(url: str) -> tuple[str, int]:
            presigned = None if url.startswith("file:") else self.storage.presign_get(url, lifetime)
            if presigned:
                return presigned, expires_ms
            name = url.rstrip("/").rsplit("/", 1)[-1]
            return f"{base}{file_urls.sign(key, url, expires_ms, reader)}/{_safe_name(name)}", expires_ms

        return sign


def own_file(location: str, url: str, derived_prefix: str) -> bool:
    """Whether ``url`` (decoded, as a file is served) is a file of the table at ``location``, or change data Arco
    derived for it (under ``derived_prefix``): the only files a recipient of the table may be handed (pure).

    A Delta log names its files, and an Iceberg manifest its data files, as their writer chose: absolute paths may
    point anywhere (another table, the catalog's own keys, any file the server can read). They are refused, as are
    ``.`` and ``..`` segments (:func:`arco.storage.urls.file_under`)."""
    return file_under(url, location) or file_under(url, derived_prefix)


def _only_own_files(t: SharedTable, files: list[SharedFile], derived_prefix: str) -> list[SharedFile]:
    """``files``, if each is the table's own (:func:`own_file`); else the table is not served at all: a reader must
    not get part of a version, nor a file the table's writer pointed elsewhere."""
    if all(own_file(t.table.location, f.url, derived_prefix) for f in files):
        return files
    raise SharingError(403, "PERMISSION_DENIED", f"{t.share.name}.{t.schema}.{t.name} names a file outside the "
                                                 "table's location; Arco serves only a table's own files")


def _published(t: SharedTable) -> int | None:
    """The last version of a Delta table that may be served: a catalog-coordinated table's published one
    (:func:`arco.unity.delta_commits.published_version`), None for any other."""
    return published_version(t.table.delta_commits)


def _shared_part(t: SharedTable, files: list[SharedFile]) -> list[SharedFile]:
    """The files of ``t`` its share lets the recipient read: those its partition filter admits, or all without one
    (:mod:`arco.sharing.partition_filter`). Change data Arco derives carries its version's one partition (a
    version whose changes span partitions is answered file by file: :meth:`TableReads._change_data_file`), so a
    filter applies to it as to any file."""
    try:
        admitted = partition_filter.of_object(t.obj)
    except partition_filter.InvalidPartitionFilter as exc:  # stored before filters were checked: serve nothing
        raise SharingError(403, "PERMISSION_DENIED", f"{t.share.name}.{t.schema}.{t.name} is shared with a "
                                                     f"partition filter that cannot be applied ({exc}); the "
                                                     "provider must set it again") from None
    return files if admitted is None else [f for f in files if admitted.admits(f.partition_values)]


def reader_name(recipient: Recipient | None) -> str:
    return recipient.name if recipient is not None else ""


def _change_feed(t: SharedTable) -> bool | None:
    """Whether the recipient may read the change data feed of ``t``: no, if the share withholds it; yes for an
    Iceberg table (its appends are its change data); for a Delta table, as each of its metadata records it."""
    if not history.change_data_shared(t.obj):
        return False
    return True if t.table.format == "ICEBERG" else None


def _reader(recipient: Recipient | None, t: SharedTable) -> tuple[str, ...] | None:
    return None if recipient is None else (recipient.name, t.share.name, t.schema, t.name, t.table.id)


def _iceberg_source() -> Any:
    try:
        from arco.sharing import iceberg_source
    except ImportError:
        raise SharingError(501, "NOT_IMPLEMENTED", "Iceberg tables cannot be shared by this server yet") from None
    return iceberg_source


def _iceberg_error(exc: ValueError) -> SharingError:
    try:
        from arco.sharing.iceberg_source import UnsharableTable
    except ImportError:
        return bad_request(str(exc))
    if isinstance(exc, UnsharableTable):
        return bad_request(f"this Iceberg table cannot be shared as asked: {exc}")
    return bad_request(str(exc))


def _safe_name(name: str) -> str:
    from urllib.parse import quote

    return quote(name, safe="") or "file"


def now_ms() -> int:
    return int(time.time() * 1000)
