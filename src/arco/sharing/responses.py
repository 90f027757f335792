"""The protocol's NDJSON lines for a shared version, in the parquet or the delta response format (pure).

``sign`` turns a file's storage URL into the URL the recipient fetches (signed by Arco or pre-signed by the
storage) and gives its expiry; the lines never carry a storage URL itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import orjson

from arco.sharing import history
from arco.sharing.actions import SharedFile, SharedVersion, TableChange

Signer = Callable[[str], tuple[str, int]]  # storage URL -> (fetchable URL, expiration timestamp ms)
PARQUET_PROTOCOL = {"minReaderVersion": 1}  # the sharing protocol's reader version, not the table's
ACTION_OF_CHANGE = {None: "add", "insert": "add", "delete": "remove"}  # anything else is a change-data file
# The parquet format's line keys, as Delta names the actions the delta format wraps (a change-data file is Delta's
# AddCDCFile, "cdc": under any other key a Delta reader skips it, and the change feed loses its rows).
DELTA_ACTION_OF_KEY = {"file": "add", "add": "add", "remove": "remove", "cdf": "cdc"}


def line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


def protocol_line(fmt: str, delta_protocol: dict[str, Any], version: int | None = None) -> bytes:
    """``version`` only on the change answers of a client that asked for historical protocols (delta format)."""
    if fmt == "delta":
        wrapper: dict[str, Any] = {"deltaProtocol": delta_protocol}
        if version is not None:
            wrapper["version"] = version
        return line({"protocol": wrapper})
    return line({"protocol": PARQUET_PROTOCOL})


def metadata_line(fmt: str, version: SharedVersion, *, with_version: bool = False, with_size: bool = True,
                  access: dict[str, Any] | None = None, cdf: bool | None = False,
                  shared: Sequence[SharedFile] | None = None) -> bytes:
    """``access``: the table's ``accessModes`` (and ``location``) as listings give them, for the answers that
    carry them (:func:`arco.sharing.cloud_tokens.directory_access`); ``cdf``: whether the recipient may read the
    table's change data feed (None: as each Delta metadata records it), which the parquet format says, and
    nothing else of the table's configuration; ``shared``: the version's files the recipient is shared (a
    partition filter's part), which ``size`` and ``numFiles`` count (all the version's by default): a recipient
    is not told how much is kept from it."""
    extra: dict[str, Any] = dict(access or {})
    if with_version:
        extra["version"] = version.version
    if with_size:
        files = version.files if shared is None else shared
        extra["size"] = sum(f.size for f in files)
        extra["numFiles"] = len(files)
    return _metadata_line(fmt, version.metadata, extra, cdf)


def _metadata_line(fmt: str, meta: dict[str, Any], extra: dict[str, Any], cdf: bool | None) -> bytes:
    if fmt == "delta":  # the table's own Delta metadata, which a Delta reader needs whole (column mapping, ...)
        return line({"metaData": {**extra, "deltaMetadata": _delta_metadata(meta, cdf)}})
    out = {k: meta[k] for k in ("id", "name", "description", "format", "schemaString", "partitionColumns")
           if meta.get(k) is not None}
    out.setdefault("format", {"provider": "parquet"})
    out.setdefault("partitionColumns", [])
    # As the reference server: the provider's table properties are not the recipient's business.
    readable = history.records_change_feed(meta) if cdf is None else cdf
    out["configuration"] = {"enableChangeDataFeed": "true"} if readable else {}
    return line({"metaData": {**out, **extra}})


def _delta_metadata(meta: dict[str, Any], cdf: bool | None) -> dict[str, Any]:
    """A copy: ``meta`` is the cached version's, which the parquet format's line is built from too (a client
    paging an answer compares each page's metadata line byte for byte).

    ``cdf`` True (an Iceberg table, whose appends are its change feed): the configuration says so as a Delta table's
    does, so that both formats agree on what the change data feed query serves."""
    out = {k: v for k, v in meta.items() if v is not None}
    out["format"] = {"provider": "parquet", "options": {}, **(out.get("format") or {})}
    out["format"]["options"] = out["format"].get("options") or {}
    out.setdefault("partitionColumns", [])
    out["configuration"] = dict(out.get("configuration") or {})
    if cdf is True:
        out["configuration"]["delta.enableChangeDataFeed"] = "true"
    return out


def file_line(fmt: str, f: SharedFile, sign: Signer, *, key: str = "file", with_version: bool = False) -> bytes:
    """One file; ``key`` is ``file`` for a snapshot, else the change action (add / remove / cdf)."""
    url, expires = sign(f.url)
    if fmt == "delta":
        action_name = DELTA_ACTION_OF_KEY[key]
        # A Delta reader parses partition values as it parses its own log: give them as the log spells them.
        values = f.log_partition_values if f.log_partition_values is not None else f.partition_values
        action: dict[str, Any] = {"path": url, "partitionValues": values, "size": f.size}
        if action_name == "add":
            modified = f.modification_time_ms if f.modification_time_ms is not None else f.timestamp_ms
            action.update({"modificationTime": modified or 0, "dataChange": True})
            if f.stats:
                action["stats"] = f.stats
        elif action_name == "remove":
            action.update({"deletionTimestamp": f.timestamp_ms or 0, "dataChange": True})
        else:
            action["dataChange"] = False
        wrapper: dict[str, Any] = {"id": f.id, "expirationTimestamp": expires,
                                   "deltaSingleAction": {action_name: action}}
        if f.version is not None and (with_version or key != "file"):
            wrapper.update({"version": f.version, "timestamp": f.timestamp_ms})
        return line({"file": wrapper})
    body: dict[str, Any] = {"url": url, "id": f.id, "partitionValues": f.partition_values, "size": f.size,
                            "expirationTimestamp": expires}
    if f.stats and key in ("file", "add"):
        body["stats"] = f.stats
    if f.version is not None and (with_version or key != "file"):
        body.update({"version": f.version, "timestamp": f.timestamp_ms})
    return line({key: body})


def change_key(f: SharedFile) -> str:
    return ACTION_OF_CHANGE.get(f.change_type, "cdf")


def snapshot_lines(fmt: str, delta_protocol: dict[str, Any], version: SharedVersion, files: list[SharedFile],
                   sign: Signer, *, time_travel: bool, cdf: bool | None = False,
                   shared: Sequence[SharedFile] | None = None) -> Iterator[bytes]:
    yield protocol_line(fmt, delta_protocol)
    yield metadata_line(fmt, version, with_version=time_travel, cdf=cdf, shared=shared)
    for f in files:
        if time_travel:  # the protocol's version/timestamp of a time-travel answer: the version read
            f = replace(f, version=version.version, timestamp_ms=version.timestamp_ms)
        yield file_line(fmt, f, sign, with_version=time_travel)


def change_lines(fmt: str, delta_protocol: dict[str, Any], version: SharedVersion, files: list[SharedFile],
                 sign: Signer, *, include_cdf: bool, changes: list[TableChange] | None = None,
                 historical_protocol: bool = False, cdf: bool | None = False) -> Iterator[bytes]:
    """The head protocol and metadata (of ``version``, with its number), then the files in version order, each
    version's historical metadata (``changes``) before its files; historical protocols only in the delta format,
    where they and the head protocol carry their version (the parquet format has no such field)."""
    historical_protocol = historical_protocol and fmt == "delta"
    yield protocol_line(fmt, delta_protocol, version.version if historical_protocol else None)
    yield metadata_line(fmt, version, with_version=True, with_size=False, cdf=cdf)
    pending = list(changes or [])
    pending.reverse()  # popped from the end, oldest first
    for f in files:
        key = change_key(f)
        if key == "cdf" and not include_cdf:
            continue
        while pending and f.version is not None and pending[-1].version <= f.version:
            yield from _change_lines(fmt, pending.pop(), historical_protocol, cdf)
        yield file_line(fmt, f, sign, key=key)
    while pending:
        yield from _change_lines(fmt, pending.pop(), historical_protocol, cdf)


def _change_lines(fmt: str, change: TableChange, historical_protocol: bool,
                  cdf: bool | None) -> Iterator[bytes]:
    if change.protocol is not None and historical_protocol:
        yield protocol_line(fmt, change.protocol, change.version)
    if change.metadata is not None:
        yield _metadata_line(fmt, change.metadata, {"version": change.version}, cdf)
