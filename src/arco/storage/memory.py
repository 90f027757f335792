"""The in-memory backend, for unit tests: the same contract as the others, in one process, lost at exit."""

from __future__ import annotations

import bisect
import itertools
import threading
import time

from arco.storage.base import (
    Capabilities,
    Deleted,
    DeleteResult,
    DoesNotExist,
    ListPage,
    MatchesVersion,
    NotFound,
    ObjectData,
    ObjectMeta,
    Precondition,
    PreconditionFailed,
    StorageBackend,
    WriteResult,
    Written,
)
from arco.storage.keys import check_key, check_prefix


class MemoryBackend(StorageBackend):
    capabilities = Capabilities(durable=False, shared_across_processes=False, cheap_reads=True)

    def __init__(self, name: str = "default") -> None:
        self.url = f"memory://{name}"
        self._objects: dict[str, tuple[bytes, str, float]] = {}
        self._sorted_keys: list[str] = []
        self._lock = threading.Lock()
        self._counter = itertools.count(1)

    def get(self, key: str) -> ObjectData:
        check_key(key)
        with self._lock:
            entry = self._objects.get(key)
        if entry is None:
            raise NotFound(key)
        return ObjectData(data=entry[0], version=entry[1])

    def head(self, key: str) -> ObjectMeta | None:
        check_key(key)
        with self._lock:
            entry = self._objects.get(key)
        if entry is None:
            return None
        return ObjectMeta(key=key, size=len(entry[0]), version=entry[1], modified_at=entry[2])

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        check_key(key)
        with self._lock:
            current = self._objects.get(key)
            current_version = current[1] if current else None
            if isinstance(precondition, DoesNotExist) and current is not None:
                return PreconditionFailed(current_version=current_version)
            if isinstance(precondition, MatchesVersion) and current_version != precondition.version:
                return PreconditionFailed(current_version=current_version)
            version = str(next(self._counter))
            if current is None:
                bisect.insort(self._sorted_keys, key)
            self._objects[key] = (bytes(data), version, time.time())
            return Written(version=version)

    def delete(self, key: str, precondition: MatchesVersion | None = None) -> DeleteResult:
        check_key(key)
        with self._lock:
            current = self._objects.get(key)
            if precondition is not None and (current is None or current[1] != precondition.version):
                return PreconditionFailed(current_version=current[1] if current else None)
            if current is not None:
                del self._objects[key]
                self._sorted_keys.pop(bisect.bisect_left(self._sorted_keys, key))
            return Deleted()

    def list_page(self, prefix: str = "", page_size: int = 1000, page_token: str | None = None) -> ListPage:
        check_prefix(prefix)
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        with self._lock:
            if page_token is not None and page_token >= prefix:
                i = bisect.bisect_right(self._sorted_keys, page_token)
            else:
                i = bisect.bisect_left(self._sorted_keys, prefix)
            objects: list[ObjectMeta] = []
            while i < len(self._sorted_keys) and len(objects) <= page_size:
                key = self._sorted_keys[i]
                if not key.startswith(prefix):
                    break
                data, version, modified = self._objects[key]
                objects.append(ObjectMeta(key=key, size=len(data), version=version, modified_at=modified))
                i += 1
        if len(objects) > page_size:
            return ListPage(objects=objects[:page_size], next_token=objects[page_size - 1].key)
        return ListPage(objects=objects, next_token=None)
