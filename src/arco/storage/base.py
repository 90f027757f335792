"""The storage contract every backend implements.

Arco keeps all catalog state in objects and gets its correctness from conditional writes, so this interface
is deliberately small and strict:

* ``get`` returns the bytes and an opaque ``version`` of exactly those bytes (never a newer version);
* ``put`` takes a precondition (none, :class:`DoesNotExist`, :class:`MatchesVersion`) and reports a failed
  precondition as a :class:`PreconditionFailed` *result*, because losing a race is normal control flow;
* ``delete`` may be conditional on a version (but see ``Capabilities.conditional_delete``);
* every operation is read-after-write consistent for the same key.

A version is opaque: compare it for equality only. On S3 it is the ETag, which is the MD5 of the content, so a
version names content, not a write: an object that goes A -> B -> A shows the first version again. Callers that
compare-and-swap an object must therefore put something unique per write into it (a nonce or a counter).

The interface is synchronous on purpose: the same code runs in the server (in a thread pool), in the CLI and
inside Spark executors, and every backend's client library offers a blocking API.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DoesNotExist:
    """Write only if no object exists at the key (create-only)."""


@dataclass(frozen=True, slots=True)
class MatchesVersion:
    """Write (or delete) only if the object's current version equals ``version``."""

    version: str


Precondition = DoesNotExist | MatchesVersion | None


@dataclass(frozen=True, slots=True)
class Written:
    """A successful put: the version of the bytes just written."""

    version: str

    @property
    def ok(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class PreconditionFailed:
    """A put or delete whose precondition did not hold; nothing was changed.

    ``current_version`` is filled in when the backend learns it for free; it may be None (the object is then
    either missing or of an unknown version, and the caller re-reads if it needs to know).
    """

    current_version: str | None = None

    @property
    def ok(self) -> bool:
        return False


WriteResult = Written | PreconditionFailed


@dataclass(frozen=True, slots=True)
class Deleted:
    """A successful delete (also returned when an unconditional delete found nothing)."""

    @property
    def ok(self) -> bool:
        return True


DeleteResult = Deleted | PreconditionFailed


@dataclass(frozen=True, slots=True)
class ObjectData:
    """An object's bytes together with the version of exactly those bytes."""

    data: bytes
    version: str


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    """What ``head`` and ``list`` tell about an object without reading it."""

    key: str
    size: int
    version: str
    modified_at: float  # seconds since the epoch, for age-based clean-up; never used for correctness


@dataclass(frozen=True, slots=True)
class ListPage:
    """One page of a listing; pass ``next_token`` back to get the next one (None: this was the last)."""

    objects: list[ObjectMeta]
    next_token: str | None


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend guarantees. Commits need ``conditional_put``; nothing relies on ``conditional_delete``.

    A delete that must be safe against concurrent writers is done by writing a tombstone with a conditional put,
    which every CAS-capable backend supports; ``conditional_delete`` is an optimisation where it is true.
    """

    conditional_put: bool = True
    conditional_delete: bool = True
    durable: bool = True
    shared_across_processes: bool = True
    # A read costs less than handing it to another thread (a local disk, memory): reads that could run side by
    # side are made one after the other instead.
    cheap_reads: bool = False


class StorageError(Exception):
    """A storage operation failed for a reason other than a precondition (I/O, network, permissions)."""


class StorageUnavailable(StorageError):
    """Storage could not be reached or refused the operation (I/O error, permission, network, throttling, a
    server error): nothing about the object is known, and retrying later may succeed. The API answers it with
    503 and ``Retry-After``; for a write, whether it took effect is unknown unless the caller checks.
    """


class WriteNotApplied(StorageUnavailable):
    """A call that certainly changed nothing, and never will: it was refused in the store's answer (a 4xx other
    than a failed precondition), failed on a local disk before its object was touched, or was never sent. A write
    that got no answer at all is plain :class:`StorageUnavailable`: the store may apply it later."""


class StorageNotReached(WriteNotApplied):
    """No connection to storage could be made: the call was never sent, so a write certainly did not take effect."""


class CommitPointUnanswered(StorageUnavailable):
    """A write at a commit point (a compare-and-swap, or a create-only log append) was sent, or may have been, and
    no answer came, or it was refused and could not be checked: the change may have landed. Any other storage fault
    of a commit stops it before that point.

    An unanswered write may also still be on its way: a store can apply a request after its client gave up on it.
    Then "not found where it would have landed" is not yet "did not land", so ``fence``, when given, makes sure it
    never will: it takes the place that write needs (the pointer at the version it expects, the log position it
    appends at, the transaction record it moves), after which that write can only be refused. Whoever checks where
    the change landed calls it first (:func:`arco.iceberg.run_once.check_landed`)."""

    def __init__(self, message: str, fence: Callable[[], object] | None = None) -> None:
        super().__init__(message)
        self.fence = fence


class NotFound(StorageError):
    """The object does not exist."""

    def __init__(self, key: str) -> None:
        super().__init__(f"object not found: {key!r}")
        self.key = key


class InvalidKey(StorageError, ValueError):
    """The key is not acceptable to the storage layer (empty segment, ``..``, control character, ...)."""


class CasNotSupported(StorageError):
    """The backend cannot guarantee compare-and-swap, so it must not be used for catalog commits."""


class StorageBackend(abc.ABC):
    """One place to keep objects: a local directory, memory, an S3 bucket prefix, a GCS bucket, an Azure container.

    Keys are ``/``-separated relative paths (see :func:`arco.storage.keys.check_key`). ``url`` is the
    warehouse-level location of the root (``file:///...``, ``s3://bucket/prefix``, ...), which is what files
    outside the catalog (Iceberg metadata and data files) are addressed by.
    """

    url: str
    capabilities: Capabilities = Capabilities()

    @abc.abstractmethod
    def get(self, key: str) -> ObjectData:
        """Return the object's bytes and version; raise :class:`NotFound` if it does not exist."""

    @abc.abstractmethod
    def head(self, key: str) -> ObjectMeta | None:
        """Return the object's metadata, or None if it does not exist."""

    @abc.abstractmethod
    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        """Write the object, atomically: a reader sees the old bytes or the new ones, never a mix."""

    @abc.abstractmethod
    def delete(self, key: str, precondition: MatchesVersion | None = None) -> DeleteResult:
        """Delete the object; an unconditional delete of a missing object succeeds."""

    @abc.abstractmethod
    def list_page(self, prefix: str = "", page_size: int = 1000, page_token: str | None = None) -> ListPage:
        """One page of the objects whose key starts with ``prefix``, in key order.

        Keys sharing a directory come in lexicographic order; a backend that lists by directory (SeaweedFS) may put
        ``a/...`` before ``a-b``. Each key is listed exactly once across pages.
        """

    def list(self, prefix: str = "", page_size: int = 1000) -> Iterator[ObjectMeta]:
        """Every object whose key starts with ``prefix``, following pages."""
        token: str | None = None
        while True:
            page = self.list_page(prefix, page_size=page_size, page_token=token)
            yield from page.objects
            if page.next_token is None:
                return
            token = page.next_token

    def get_if_changed(self, key: str, version: str) -> ObjectData | None:
        """The object if its version is no longer ``version``, None if it is unchanged; :class:`NotFound` if gone.

        Backends that can ask storage conditionally (S3's ``If-None-Match``, answered 304 without a body) do so;
        this default reads the object and compares versions, which costs the same one call.
        """
        found = self.get(key)
        return None if found.version == version else found

    def get_or_none(self, key: str) -> ObjectData | None:
        try:
            return self.get(key)
        except NotFound:
            return None

    def location_of(self, key: str) -> str:
        """The absolute location (URL) of a key, as written into Iceberg metadata for other engines to read."""
        return f"{self.url.rstrip('/')}/{key}"

    def presign_get(self, url: str, expires_s: int) -> str | None:
        """A URL that lets anyone GET one object (``url``, absolute) for ``expires_s`` seconds, or None when this
        backend cannot mint one (Delta Sharing then serves the file through Arco at a URL Arco signs)."""
        return None

    def fileio_properties(self) -> dict[str, str]:
        """Iceberg FileIO properties (PyIceberg's names) that reach this storage with this process's own
        credentials: for Arco's own Iceberg reads and writes (the pipeline's system tables, scan planning, Delta
        Sharing of Iceberg tables), never for a client. None are needed for a local directory."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients and connections; the default holds nothing."""

    def __enter__(self) -> StorageBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
