"""Reading and writing Iceberg metadata files, with parsed metadata cached by location.

A metadata file is immutable once written, so its parsed form (and the serialized responses built from it) can
be kept in memory keyed by location alone; freshness comes from the pointer, never from these caches.
Parsing uses PyIceberg's models (``TableMetadataUtil.parse_raw``): measured on this kind of machine at 8.7 ms for a
1,000-snapshot file, which the cache pays once per location and process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import ValidationError
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.typedef import IcebergBaseModel
from pyiceberg.view.metadata import ViewMetadata

from arco.iceberg.errors import NoSuchTable, NoSuchView
from arco.iceberg.malformed import MALFORMED, describe
from arco.lru import Lru
from arco.metrics import CacheMeter
from arco.storage.base import DoesNotExist, NotFound, StorageBackend, StorageError, Written
from arco.storage.urls import BadLocation, normalize, split_root

MB = 1 << 20
CACHE_ENTRIES = 512
VIEW_CACHE_ENTRIES = 256
# Parsed metadata is bounded by its weight too: a table's metadata grows with every snapshot, so a bound on the count
# alone let a server's memory grow with its tables' histories (a soak: 140 MB to 880 MB in 94 minutes). A parsed
# file holds about 5.7 times its JSON's size (336 snapshots: 236 KB of JSON, 1.34 MB of PyIceberg models).
PARSED_BYTES_PER_JSON_BYTE = 6
# The bytes of the files this process wrote last: a commit's answer is the file it just wrote, sent as written
# instead of serialized a second time on the event loop (a quarter of its CPU in a keyed commit, by profile).
WRITTEN_BYTES_ENTRIES = 32
WRITTEN_BYTES_BUDGET = 16 * MB
# Metadata with this many snapshots or more is serialized with each snapshot's JSON kept by object (metadata_bytes).
SPLICED_FROM = 4
SNAPSHOT_CACHE_ENTRIES = 20_000  # a few hundred bytes of JSON each, and the snapshot model beside it
SNAPSHOT_CACHE_BUDGET = 32 * MB
M = TypeVar("M")


def metadata_bytes(metadata: TableMetadata) -> bytes:
    """The metadata file's JSON. PyIceberg 0.12 refuses to serialize format v3 (its writer support is unfinished,
    iceberg-python#1551) although its v3 model is complete, so the base model's serializer is called directly.

    Snapshots are most of a long-lived table's metadata, and serializing them most of a commit's CPU (pydantic
    calls a Python serializer for every snapshot's summary: 0.6 ms of 0.67 ms for 150 snapshots, measured). A
    commit's new metadata holds the very snapshot objects of its base, which are immutable, so each snapshot's
    JSON is kept by object (:func:`snapshots_bytes`) and the metadata is serialized without them, then completed.
    Format v1 writes its snapshots without sequence numbers (PyIceberg's ``serialize_snapshots``): whole, as ever."""
    if len(metadata.snapshots) < SPLICED_FROM or metadata.format_version == 1:
        return IcebergBaseModel.model_dump_json(metadata, exclude_none=True, by_alias=True).encode()
    rest = IcebergBaseModel.model_dump_json(metadata, exclude_none=True, by_alias=True, exclude={"snapshots"})
    return rest.encode()[:-1] + b',"snapshots":[' + b",".join(snapshots_bytes(metadata.snapshots)) + b"]}"


@dataclass(frozen=True)
class MetadataCacheBudgets:
    """How a server's metadata cache memory (``arco serve --metadata-cache-mb``) is shared: parsed table metadata,
    the loadTable answers built from it, parsed view metadata."""

    tables: int
    answers: int
    views: int

    @classmethod
    def of(cls, total_bytes: int) -> MetadataCacheBudgets:
        return cls(tables=total_bytes * 2 // 3, answers=total_bytes // 4, views=total_bytes // 12)


DEFAULT_BUDGETS = MetadataCacheBudgets.of(192 * MB)


_snapshot_json: Lru[int, tuple[Snapshot, bytes]] = Lru(
    SNAPSHOT_CACHE_ENTRIES, budget=SNAPSHOT_CACHE_BUDGET,
    weigh=lambda held: len(held[1]) * (PARSED_BYTES_PER_JSON_BYTE + 1))


def snapshots_bytes(snapshots: list[Snapshot]) -> list[bytes]:
    """Each snapshot's JSON, serialized once per object. Kept by identity, and each entry holds its object, so an
    id is never reused while its entry lives; snapshot models are frozen, so an object's JSON cannot change."""
    found = _snapshot_json.get_many(id(snapshot) for snapshot in snapshots)
    out: list[bytes] = []
    made: list[tuple[Snapshot, bytes]] = []
    for snapshot, held in zip(snapshots, found, strict=True):
        if held is None or held[0] is not snapshot:
            held = (snapshot, IcebergBaseModel.model_dump_json(snapshot, exclude_none=True, by_alias=True).encode())
            made.append(held)
        out.append(held[1])
    if made:
        _snapshot_json.put_many((id(held[0]), held) for held in made)
    return out


def view_metadata_bytes(metadata: ViewMetadata) -> bytes:
    return metadata.model_dump_json(by_alias=True, exclude_none=True).encode()


def _canonical_authority(authority: str) -> str | None:
    """An object store's ``scheme://bucket`` in canonical form (None: a local path, or none at all)."""
    if authority.startswith("file:") or "://" not in authority:
        return None
    try:
        return normalize(authority)
    except BadLocation:
        return None


class MetadataLocationError(StorageError):
    """A metadata location outside the warehouse this server can read and write."""


class MissingMetadataFile(NotFound):
    """The metadata file a table's (or view's) pointer names is not in storage: deleted outside the catalog. No
    retry brings it back, so it is answered 404 (as the reference implementation's "Failed to open input stream"),
    never as storage being unavailable. For a table, of type ``NotFoundException``, as the reference server names
    its FileIO's error: Java clients raise that type as such (Iceberg's CatalogTests expect it of a load), and
    any other client reads a 404 of a load as no such table. A view's keeps ``NoSuchViewException``, the only
    404 Java's view handler tells apart from a missing namespace."""

    def __init__(self, key: str, location: str, kind: str) -> None:
        super().__init__(key)
        self.location = location
        self.kind = kind
        self.error_type = "NoSuchViewException" if kind == "view" else "NotFoundException"
        self.message = (f"Failed to open input stream for file: {location}: the {kind}'s current metadata file is "
                        f"missing from storage (deleted outside the catalog?); restore it, or drop the {kind}")


class UnreadableMetadataFile(Exception):
    """The metadata file a table's (or view's) pointer names is in storage but is no metadata document: written
    there outside the catalog (the catalog writes whole, validated files). No retry helps, and the file's content is
    never quoted (it may hold anything), only where the parser stopped."""

    def __init__(self, location: str, kind: str, why: str) -> None:
        super().__init__(location)
        self.location = location
        self.kind = kind
        self.message = (f"the {kind}'s current metadata file {location} is not an Iceberg {kind} metadata document "
                        f"({why}); restore it from a copy, or drop the {kind}")


class ImmutableFiles(Generic[M]):
    """Create-only metadata files of one kind, parsed once per location and process (they never change).

    Subclasses say how the kind parses and serializes, and name their cache for the metrics."""

    meter: CacheMeter
    kind: str

    def __init__(self, storage: StorageBackend, cache_entries: int, cache_budget: int) -> None:
        self.storage = storage
        # Where a look costs a stat (a local disk), a load answered from memory first confirms that the file is
        # still there (confirm_present), so a file deleted outside the catalog is reported alike by every server,
        # warm or cold. On object storage that would be a round trip a load does not otherwise make: a server
        # finds it missing when it next reads the file. A commit builds on the base it holds in memory either way
        # (its writes are counted: tests/integration/iceberg/test_storage_calls.py), and its new file is whole.
        self._confirms_presence = storage.capabilities.cheap_reads
        self._root = storage.url.rstrip("/") + "/"
        # Hadoop writes local paths as file:/path, and some clients send bare paths: accept each spelling.
        self._roots = [self._root]
        if self._root.startswith("file:///"):
            self._roots += ["file:" + self._root[len("file://"):], self._root[len("file://"):]]
        authority, path = split_root(self._root)
        # Other spellings of the bucket or container (s3a://, abfss://c@account..., az://): the path as written.
        self._authority, self._root_path = _canonical_authority(authority), path
        self._cache: Lru[str, M] = Lru(cache_entries, budget=cache_budget)
        self._written: Lru[str, bytes] = Lru(WRITTEN_BYTES_ENTRIES, budget=WRITTEN_BYTES_BUDGET, weigh=len)

    @property
    def cached_bytes(self) -> int:
        """The estimated memory of the parsed files this process keeps (at most its cache budget)."""
        return self._cache.weight

    def parse(self, data: bytes) -> M:
        raise NotImplementedError

    def serialize(self, metadata: M) -> bytes:
        raise NotImplementedError

    def key_of(self, location: str) -> str:
        """The storage key of an absolute location inside the warehouse."""
        for root in self._roots:
            if location.startswith(root):
                return location[len(root):]
        authority, path = split_root(location)
        if (self._authority is not None and path.startswith(self._root_path)
                and _canonical_authority(authority) == self._authority):
            return path[len(self._root_path):]
        raise MetadataLocationError(f"{location} is outside the warehouse {self._root}")

    def read(self, location: str) -> M:
        cached = self._cache.get(location)
        if cached is not None:
            self.meter.hit()
            return cached
        self.meter.miss()
        data = self._stored(location)
        try:
            metadata = self.parse(data)
        except MALFORMED as exc:
            cause = exc.__cause__ if isinstance(exc.__cause__, ValidationError) else exc
            why = describe(cause, 2).splitlines()[0][:300] if isinstance(cause, ValidationError) else \
                type(exc).__name__
            raise UnreadableMetadataFile(location, self.kind, why) from None
        self._remember(location, metadata, data)
        return metadata

    def read_base(self, location: str) -> M:
        """:meth:`read` for the base of a commit: a missing file is refused as its loads are (404), a decided
        failure that changed nothing, not storage being unavailable."""
        try:
            return self.read(location)
        except MissingMetadataFile as exc:
            raise (NoSuchView if self.kind == "view" else NoSuchTable)(exc.message) from None

    def confirm_present(self, location: str) -> None:
        """For a load: raise :class:`MissingMetadataFile` if the file is gone, where a look costs no round trip
        (see ``__init__``); a no-op elsewhere."""
        if self._confirms_presence:
            key = self.key_of(location)
            if self.storage.head(key) is None:
                raise MissingMetadataFile(key, location, self.kind)

    def _stored(self, location: str) -> bytes:
        key = self.key_of(location)
        try:
            return self.storage.get(key).data
        except NotFound:
            raise MissingMetadataFile(key, location, self.kind) from None

    def write(self, location: str, metadata: M) -> None:
        """Write a new metadata file create-only; an identical file already there (a retry) is fine."""
        data = self.serialize(metadata)
        key = self.key_of(location)
        result = self.storage.put(key, data, DoesNotExist())
        if not isinstance(result, Written) and self.storage.get(key).data != data:
            raise StorageError(f"a different metadata file already exists at {location}")
        self._remember(location, metadata, data)
        self._written.put(location, data)

    def discard(self, location: str) -> None:
        """Delete a file no pointer names (an attempt that did not land), best effort: garbage collection removes
        what a failed delete leaves. This process forgets it too."""
        self._cache.pop(location)
        self._written.pop(location)
        try:
            self.storage.delete(self.key_of(location))
        except (StorageError, OSError):
            pass

    def read_bytes(self, location: str) -> bytes:
        """The file's bytes as stored, unparsed (kept in memory only if this process wrote them recently)."""
        written = self.written_bytes(location)
        return written if written is not None else self._stored(location)

    def written_bytes(self, location: str) -> bytes | None:
        """The file's bytes, if this process wrote it recently (the file is immutable: they are its content)."""
        return self._written.get(location)

    def _remember(self, location: str, metadata: M, data: bytes) -> None:
        """Keep a parsed file, weighed by the size of the JSON it was parsed from (or serialized to)."""
        self._cache.put(location, metadata, weight=len(data) * PARSED_BYTES_PER_JSON_BYTE)


class MetadataFiles(ImmutableFiles[TableMetadata]):
    """Table metadata files."""

    meter = CacheMeter("metadata_files")
    kind = "table"

    def __init__(self, storage: StorageBackend, cache_entries: int = CACHE_ENTRIES,
                 cache_budget: int = DEFAULT_BUDGETS.tables) -> None:
        super().__init__(storage, cache_entries, cache_budget)

    def parse(self, data: bytes) -> TableMetadata:
        return TableMetadataUtil.parse_raw(data)

    def serialize(self, metadata: TableMetadata) -> bytes:
        return metadata_bytes(metadata)


class ViewFiles(ImmutableFiles[ViewMetadata]):
    """View metadata files (the view spec's), kept apart from tables' so neither kind evicts the other."""

    meter = CacheMeter("view_metadata")
    kind = "view"

    def __init__(self, storage: StorageBackend, cache_entries: int = VIEW_CACHE_ENTRIES,
                 cache_budget: int = DEFAULT_BUDGETS.views) -> None:
        super().__init__(storage, cache_entries, cache_budget)

    def parse(self, data: bytes) -> ViewMetadata:
        return ViewMetadata.model_validate_json(data)

    def serialize(self, metadata: ViewMetadata) -> bytes:
        return view_metadata_bytes(metadata)
