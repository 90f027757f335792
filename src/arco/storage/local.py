"""The local-directory backend: the embedded default, durable and compare-and-swap-correct across processes.

Files are stored as plain files under the root, so other engines (Spark, DuckDB, PyIceberg) read Iceberg metadata
and data directly by path. No object store library is used here because none offers what is needed: obstore's
LocalStore has neither a version-matched put nor fsync.

How each guarantee is kept:

* Atomicity: every write goes to a temporary file under ``.arco-tmp/`` (same file system), is fsynced, and is
  then moved into place: ``os.link`` for create-only (fails atomically if the key exists), ``os.replace`` otherwise.
  The directory is fsynced after the move so the new name survives a power loss.
* Versions: a file's version is its inode number plus its modification time, and the modification time of every
  new file is set to a random nanosecond within the current second before it is moved into place. Inode numbers
  are reused as soon as a file is replaced, and timestamps are coarse (a kernel tick), so neither alone would
  tell two writes of one key apart; the random nanoseconds make an accidental match about one in a billion even
  when the inode is reused.
* Compare-and-swap: a version-matched put or delete, and any put that replaces an existing file, holds a lock
  for the key (``flock`` on one of a fixed set of lock files, plus a thread lock, since ``flock`` does not exclude
  threads that share a file description). The check and the move happen under that lock. Create-only puts need
  no lock: ``os.link`` is the atomic check.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import itertools
import os
import secrets
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from arco.storage import local_listing
from arco.storage.base import (
    Capabilities,
    Deleted,
    DeleteResult,
    DoesNotExist,
    InvalidKey,
    ListPage,
    MatchesVersion,
    NotFound,
    ObjectData,
    ObjectMeta,
    Precondition,
    PreconditionFailed,
    StorageBackend,
    StorageError,
    StorageUnavailable,
    WriteNotApplied,
    WriteResult,
    Written,
)
from arco.storage.keys import RESERVED_PREFIX, check_key, check_prefix

LOCK_STRIPES = 256
_TMP_DIR = RESERVED_PREFIX + "tmp"
_LOCK_DIR = RESERVED_PREFIX + "locks"


@contextmanager
def _io(what: str) -> Iterator[None]:
    """Any OS error not handled where it happened (permissions, a full or read-only disk, EIO) is storage being
    unavailable: callers and the API know that class, and a raw ``PermissionError`` would be an unexplained 500."""
    try:
        yield
    except (StorageError, FileNotFoundError, NotADirectoryError):
        raise  # handled where they happen (a missing object is an answer, not a fault)
    except OSError as exc:
        raise StorageUnavailable(f"cannot {what}: {type(exc).__name__}: {exc.strerror or exc}") from exc


def _version_of(st: os.stat_result) -> str:
    return f"{st.st_ino:x}.{st.st_mtime_ns:x}"


class _StripedLocks:
    """Per-key mutual exclusion across threads and processes, with a bounded number of lock files."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._thread_locks = [threading.Lock() for _ in range(LOCK_STRIPES)]
        self._fds: dict[int, int] = {}
        self._pid = os.getpid()

    def _fd(self, stripe: int) -> int:
        if self._pid != os.getpid():
            # After fork the cached descriptors share their open file description (and so their flock) with the
            # parent: open fresh ones in the child.
            self._fds = {}
            self._thread_locks = [threading.Lock() for _ in range(LOCK_STRIPES)]
            self._pid = os.getpid()
        fd = self._fds.get(stripe)
        if fd is None:
            fd = os.open(self._directory / f"{stripe:03d}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._fds[stripe] = fd
        return fd

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        stripe = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=2).digest()) % LOCK_STRIPES
        fd = self._fd(stripe)
        with self._thread_locks[stripe]:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}


def _read_whole(fd: int, size: int) -> bytes:
    """The ``size`` bytes of an open file. A stored file never changes once renamed into place (every write is a
    new file), so its fstat size is its content's: one read of exactly that many bytes, where reading until EOF in
    64 KiB buffers allocated two of them and made a second system call for each small catalog file."""
    data = os.read(fd, size) if size else b""
    if len(data) == size:
        return data
    chunks = [data]
    got = len(data)
    while got < size and (chunk := os.read(fd, size - got)):
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


class LocalBackend(StorageBackend):
    """Objects as files under ``root``; see the module docstring for how CAS and durability are kept."""

    capabilities = Capabilities(conditional_put=True, conditional_delete=True, durable=True, cheap_reads=True)

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.root = Path(root).resolve()
        self.url = f"file://{self.root}"  # not percent-encoded: engines treat locations as plain paths
        self._fsync = fsync
        try:
            (self.root / _TMP_DIR).mkdir(parents=True, exist_ok=True)
            (self.root / _LOCK_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot use {self.root} as a warehouse directory: {exc}") from exc
        self._locks = _StripedLocks(self.root / _LOCK_DIR)
        self._root_prefix = f"{self.root}/"
        self._cursors = local_listing.Cursors()

    # -- reading -------------------------------------------------------------------------------------------

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def _file(self, key: str) -> str:
        # The reads' path as a plain string: a checked key has no "." or ".." segment and no leading "/", and
        # building a pathlib.Path cost a tenth of a warm load.
        return self._root_prefix + check_key(key)

    def get(self, key: str) -> ObjectData:
        found = self._read(key, None)
        assert found is not None
        return found

    def get_if_changed(self, key: str, version: str) -> ObjectData | None:
        """One open and fstat; the bytes are read only if the version (inode and mtime) differs."""
        return self._read(key, version)

    def _read(self, key: str, unless_version: str | None) -> ObjectData | None:
        try:
            fd = os.open(self._file(key), os.O_RDONLY | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(key) from None
        except OSError as exc:
            raise StorageUnavailable(f"cannot read {key!r}: {type(exc).__name__}: {exc.strerror or exc}") from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotFound(key)
            current = _version_of(st)
            if current == unless_version:
                return None
            return ObjectData(data=_read_whole(fd, st.st_size), version=current)
        except OSError as exc:
            raise StorageUnavailable(f"cannot read {key!r}: {type(exc).__name__}: {exc.strerror or exc}") from exc
        finally:
            os.close(fd)

    def head(self, key: str) -> ObjectMeta | None:
        try:
            with _io(f"stat {key!r}"):
                st = os.stat(self._file(key))
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return ObjectMeta(key=key, size=st.st_size, version=_version_of(st), modified_at=st.st_mtime)

    def _current_version(self, path: Path) -> str | None:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return _version_of(st)

    # -- writing -------------------------------------------------------------------------------------------

    def _write_temp(self, data: bytes) -> tuple[Path, str]:
        """Write ``data`` durably to a new temporary file; return its path and the version it will keep."""
        tmp = self.root / _TMP_DIR / f"{os.getpid()}-{secrets.token_hex(8)}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except OSError as exc:  # a read-only or full disk, or .arco-tmp/ removed under a running server
            raise WriteNotApplied(f"cannot create a temporary file: {type(exc).__name__}: {exc.strerror or exc}") \
                from exc
        written_ok = False
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if self._fsync:
                os.fsync(fd)
            now = time.time_ns()
            unique_mtime = now - now % 1_000_000_000 + secrets.randbelow(1_000_000_000)
            os.utime(fd, ns=(now, unique_mtime))
            version = _version_of(os.fstat(fd))  # link and rename keep the inode and the mtime
            written_ok = True
        except OSError as exc:
            raise WriteNotApplied(f"cannot write a temporary file: {type(exc).__name__}: {exc.strerror or exc}") \
                from exc
        finally:
            os.close(fd)
            if not written_ok:  # a full disk or an I/O error must not leave the partial file behind
                try:
                    os.unlink(tmp)
                except OSError:
                    pass  # garbage collection removes it after the grace period
        return tmp, version

    def _ensure_parent(self, path: Path) -> None:
        parent = path.parent
        if parent.is_dir():
            return
        missing: list[Path] = []
        p = parent
        while not p.exists():
            missing.append(p)
            p = p.parent
        parent.mkdir(parents=True, exist_ok=True)
        if self._fsync:
            for created in reversed(missing):
                self._fsync_dir(created.parent)

    def _fsync_dir(self, directory: Path) -> None:
        if not self._fsync:
            return
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        path = self._path(key)
        tmp, version = self._write_temp(bytes(data))
        placed = False  # a link or rename happens whole or not at all: until one has, the object is as it was
        try:
            self._ensure_parent(path)
            if isinstance(precondition, DoesNotExist):
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    return PreconditionFailed(current_version=self._current_version(path))
            else:
                with self._locks.hold(key):
                    if isinstance(precondition, MatchesVersion):
                        current = self._current_version(path)
                        if current != precondition.version:
                            return PreconditionFailed(current_version=current)
                    if path.is_dir():
                        raise StorageError(f"cannot write {key!r}: a directory of that name exists")
                    os.replace(tmp, path)
            placed = True
            self._fsync_dir(path.parent)
            return Written(version=version)
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.EISDIR):
                raise StorageError(f"cannot write {key!r}: a file and a directory would share a name") from exc
            failed = StorageUnavailable if placed else WriteNotApplied  # placed: written, but perhaps not durably
            raise failed(f"cannot write {key!r}: {type(exc).__name__}: {exc.strerror or exc}") from exc
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass  # gone already, or the directory refuses: garbage collection removes it after a grace period

    def delete(self, key: str, precondition: MatchesVersion | None = None) -> DeleteResult:
        path = self._path(key)
        with _io(f"delete {key!r}"), self._locks.hold(key):
            current = self._current_version(path)
            if precondition is not None and current != precondition.version:
                return PreconditionFailed(current_version=current)
            if current is None:
                return Deleted()
            try:
                os.unlink(path)
            except FileNotFoundError:
                return Deleted()
        with _io(f"delete {key!r}"):
            self._fsync_dir(path.parent)
        return Deleted()

    # -- listing -------------------------------------------------------------------------------------------

    def list_page(self, prefix: str = "", page_size: int = 1000, page_token: str | None = None) -> ListPage:
        check_prefix(prefix)
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        suspended = self._cursors.take(prefix, page_token) if page_token is not None else None
        if suspended is None:
            # Start at the deepest directory the prefix names completely (arco.storage.local_listing).
            base_rel = prefix[: prefix.rfind("/") + 1]
            after = local_listing.after_key(page_token) if page_token is not None else None
            suspended = local_listing.Walk(local_listing.walk(str(self.root), base_rel, prefix, after,
                                                              RESERVED_PREFIX), local_listing.new_walk_name())
        keys: list[ObjectMeta] = []
        with _io(f"list {prefix!r}"):
            while len(keys) <= page_size:  # one more than the page: the next page's first, and whether there is one
                key = next(suspended.keys, None)
                if key is None:
                    break
                try:
                    st = os.stat(self._root_prefix + key, follow_symlinks=False)
                except FileNotFoundError:
                    continue  # deleted since its directory was read
                keys.append(ObjectMeta(key=key, size=st.st_size, version=_version_of(st), modified_at=st.st_mtime))
        if len(keys) > page_size:
            next_token = local_listing.page_token(keys[page_size - 1].key, suspended.name)
            # The key read beyond the page goes back first (looked at again then: it may be deleted meanwhile).
            self._cursors.keep(prefix, next_token, local_listing.Walk(
                itertools.chain([keys[page_size].key], suspended.keys), suspended.name))
            return ListPage(objects=keys[:page_size], next_token=next_token)
        return ListPage(objects=keys, next_token=None)

    # -- interrupted writes ------------------------------------------------------------------------------

    def temp_files(self) -> list[ObjectMeta]:
        """The temporary files under ``.arco-tmp/``: writes in progress, and those a killed process or a failed move
        left behind. Listed apart from objects (they are no keys); their age is the time since their last write."""
        found: list[ObjectMeta] = []
        with _io("list temporary files"):
            try:
                entries = list(os.scandir(self.root / _TMP_DIR))
            except FileNotFoundError:
                return []
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # its write just finished
                if stat.S_ISREG(st.st_mode):
                    found.append(ObjectMeta(key=f"{_TMP_DIR}/{entry.name}", size=st.st_size, version=_version_of(st),
                                            modified_at=st.st_mtime))
        return found

    def remove_temp_file(self, key: str, version: str) -> bool:
        """Remove one temporary file listed by :meth:`temp_files`, unless it changed since (False then)."""
        name = key.removeprefix(f"{_TMP_DIR}/")
        if "/" in name or not name or name in (".", ".."):
            raise InvalidKey(f"not a temporary file: {key!r}")
        path = self.root / _TMP_DIR / name
        with _io(f"remove temporary file {name!r}"):
            try:
                if _version_of(os.stat(path)) != version:
                    return False
                os.unlink(path)
            except FileNotFoundError:
                return True
        return True

    def close(self) -> None:
        self._locks.close()
