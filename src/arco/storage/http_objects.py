"""The reads of a store whose single-object calls are plain HTTP with ETags (S3 and Azure Blob): a GET, a
conditional GET answered 304 when nothing changed, and a HEAD, each mapped to the backend interface the same way.
The stores differ in their writes' answers (which status a failed precondition is) and in how they spell an ETag,
so those stay in each backend."""

from __future__ import annotations

from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

from arco.storage.base import NotFound, ObjectData, ObjectMeta, StorageUnavailable
from arco.storage.object_calls import Reply, sent, unavailable


class HttpObjectReads:
    """Mixed into a backend that has ``_wire`` (its wire client: ``send(method, key, headers=, body=, retry=)``)
    and ``_key`` (a relative key to the store's); ``store_name`` names the store in errors."""

    store_name: str
    _wire: Any
    _key: Callable[[str], str]  # from the backend (arco.storage.prefixed): declared here, not defined

    def _version(self, reply: Reply) -> str:
        """The object's version as this backend spells it (its ETag)."""
        return reply.etag

    def _send(self, method: str, key: str, headers: dict[str, str] | None = None, body: bytes = b"",
              retry: bool = True) -> Reply:
        return sent(self.store_name, method, key,
                    lambda: self._wire.send(method, self._key(key), headers=headers, body=body, retry=retry))

    def _unavailable(self, method: str, key: str, reply: Reply) -> StorageUnavailable:
        return unavailable(self.store_name, method, key, reply)

    def _object(self, key: str, reply: Reply) -> ObjectData:
        """A GET's answer: the object, or why there is none."""
        if reply.status == 200:
            return ObjectData(data=reply.data, version=self._version(reply))
        if reply.status == 404:
            raise NotFound(key)
        raise self._unavailable("GET", key, reply)

    def get(self, key: str) -> ObjectData:
        return self._object(key, self._send("GET", key))

    def get_if_changed(self, key: str, version: str) -> ObjectData | None:
        """A GET with ``If-None-Match: <etag>``: answered 304, without the object, when it is unchanged."""
        reply = self._send("GET", key, headers={"If-None-Match": version})
        return None if reply.status == 304 else self._object(key, reply)

    def head(self, key: str) -> ObjectMeta | None:
        reply = self._send("HEAD", key)
        if reply.status == 404:
            return None
        if reply.status != 200:
            raise self._unavailable("HEAD", key, reply)
        modified = reply.headers.get("Last-Modified")
        return ObjectMeta(key=key, size=int(reply.headers.get("Content-Length") or 0), version=self._version(reply),
                          modified_at=parsedate_to_datetime(modified).timestamp() if modified else 0.0)
