"""The Delta Sharing server's work: who the recipient is, what it may see, its asynchronous queries, the files
it may open, and the audit of its reads. Reading a table is :mod:`arco.sharing.table_reads`' work.
"""

from __future__ import annotations

import math
from typing import Any

from arco.api.rate_limit import RateLimiter
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.catalog.storage_roles import table_role
from arco.catalog.store import CatalogStore
from arco.iceberg.tables import TableService
from arco.settings import ServerSettings
from arco.sharing import async_queries, audit, cloud_tokens, file_urls, paging, protocol
from arco.sharing.errors import SharingError, bad_request, forbidden, not_found
from arco.sharing.recipients import (
    Recipient,
    check_ip,
    owner_may_read,
    recipient_for_token,
    visible_share,
    visible_shares,
)
from arco.sharing.table_reads import Answer, SharedTable, TableReads, now_ms, reader_name
from arco.storage.base import StorageBackend
from arco.vending.vendor import CredentialVendor


class SharingServer:
    def __init__(self, settings: ServerSettings, store: CatalogStore, storage: StorageBackend,
                 tables: TableService, vendor: CredentialVendor) -> None:
        self.settings = settings
        self.store = store
        self.storage = storage
        self.tables = tables
        self.vendor = vendor
        self.signing_key = file_urls.SigningKey(storage)
        self.reads = TableReads(settings, storage, tables, self.signing_key)
        self.downloads = audit.DownloadTally(storage)
        self.queries = async_queries.AsyncQueries(storage)
        self.submissions = RateLimiter(async_queries.SUBMISSIONS_PER_S, async_queries.SUBMISSION_BURST)

    # -- who and what ------------------------------------------------------------------------------------------

    def authenticate(self, token: str | None, client_ip: str | None) -> Recipient:
        with self.store.read() as state:
            recipient = recipient_for_token(state.securables_in_every_metastore("recipient"), token, now_ms())
        check_ip(recipient, client_ip)
        return recipient

    def _shared_objects(self, state: CatalogState, share: SecurableEntry) -> list[SharedTable]:
        out = []
        for obj in share.fields.get("objects", []):
            table = state.tables.get(obj.get("table_id", ""))
            schema, _, name = str(obj.get("shared_as", "")).partition(".")
            # A dropped table leaves the share's listings, and so does one its owner may no longer read.
            if table is not None and schema and name and owner_may_read(state, share, table):
                out.append(SharedTable(share, schema, name, obj, table))
        return out

    def list_shares(self, recipient: Recipient, token: str | None, limit: str | None) -> dict[str, Any]:
        with self.store.read() as state:
            items = [_share_item(s) for s in visible_shares(state, recipient)]
        return protocol.paginate("shares", items, "name", token, limit)

    def get_share(self, recipient: Recipient, share: str) -> dict[str, Any]:
        with self.store.read() as state:
            return {"share": _share_item(visible_share(state, recipient, protocol.check_name("share", share)))}

    def list_schemas(self, recipient: Recipient, share: str, token: str | None, limit: str | None) -> dict[str, Any]:
        with self.store.read() as state:
            entry = visible_share(state, recipient, protocol.check_name("share", share))
            schemas = sorted({t.schema for t in self._shared_objects(state, entry)})
        items = [{"name": s, "share": entry.name} for s in schemas]
        return protocol.paginate(f"schemas:{entry.id}", items, "name", token, limit)

    def list_tables(self, recipient: Recipient, share: str, schema: str | None, token: str | None,
                    limit: str | None) -> dict[str, Any]:
        with self.store.read() as state:
            entry = visible_share(state, recipient, protocol.check_name("share", share))
            objects = self._shared_objects(state, entry)
            roles = {t.table.id: table_role(state, t.table) for t in objects}
        if schema is not None:
            protocol.check_name("schema", schema)
            objects = [t for t in objects if t.schema.casefold() == schema.casefold()]
            if not objects:
                raise not_found(f"schema {schema!r} is not in share {entry.name!r}")
        items = [{**_table_item(t), **cloud_tokens.directory_access(self.vendor, t, roles[t.table.id])}
                 for t in objects]
        listing = f"tables:{entry.id}:{schema.casefold()}" if schema is not None else f"all-tables:{entry.id}"
        return protocol.paginate(listing, items, "name", token, limit)

    def metadata(self, t: SharedTable, caps: dict[str, list[str]], version: int | None,
                 timestamp: str | None) -> Answer:
        """Query Table Metadata, with the ways the recipient may read the table (``accessModes``, and
        ``location`` for directory access), as the listings give them."""
        with self.store.read() as state:
            role = table_role(state, t.table)
        return self.reads.metadata(t, caps, version, timestamp, cloud_tokens.directory_access(self.vendor, t, role))

    def table(self, recipient: Recipient, share: str, schema: str, name: str) -> SharedTable:
        protocol.check_name("share", share)
        protocol.check_name("schema", schema)
        protocol.check_name("table", name)
        with self.store.read() as state:
            entry = visible_share(state, recipient, share)
            for t in self._shared_objects(state, entry):
                if t.schema.casefold() == schema.casefold() and t.name.casefold() == name.casefold():
                    return t
        raise not_found(f"table {share}.{schema}.{name} does not exist or is not shared with you")

    # -- asynchronous queries ---------------------------------------------------------------------------------

    def submit_query(self, t: SharedTable, caps: dict[str, list[str]], body: protocol.QueryBody,
                     raw: dict[str, Any], recipient: Recipient | None) -> tuple[str, int, str]:
        """An asynchronous Query Table: checked, pinned and recorded (:mod:`arco.sharing.async_queries`); the
        query id, the version its answer will name, and its response format."""
        if body.page_token is not None:
            raise bad_request("pageToken belongs in Get Query Info's request, not in an asynchronous query's")
        reader = reader_name(recipient)
        wait_s = self.submissions.take(reader)
        if wait_s:
            raise SharingError(429, "RESOURCE_EXHAUSTED", "too many asynchronous queries: retry later, or send "
                               "queries without asyncquery", {"Retry-After": str(math.ceil(wait_s))})
        pin, version, fmt = self.reads.pin(t, caps, body, recipient)
        now = now_ms()
        stored = self.queries.submit(async_queries.QueryRecord(
            async_queries.query_id_for(reader, t.table.id, body.idempotency_key), reader, t.table.id,
            {k: raw[k] for k in (*protocol.QUERY_FIELDS, "includeRefreshToken") if raw.get(k) is not None},
            paging.checksum(body.params()), pin.version, pin.ending, now, now + async_queries.QUERY_LIFETIME_MS))
        # A change query's answer names its starting version; a snapshot's, the version pinned (by this
        # submission, or by the first one with the same key).
        named = version if body.starting_version is not None else stored.pin_version
        return stored.query_id, named if named is not None else version, fmt

    def query_info(self, t: SharedTable, caps: dict[str, list[str]], query_id: str, raw: dict[str, Any],
                   recipient: Recipient | None) -> Answer:
        """Get Query Info: the answer of an asynchronous query (always done: it is computed at its pin now),
        paged as its poll asks."""
        record = self.queries.find(query_id, recipient=reader_name(recipient), table_id=t.table.id,
                                   now_ms=now_ms())
        if record is None:
            raise not_found(f"query {query_id[:64]!r} is unknown or has expired")
        fields = dict(record.body)
        if raw.get("pageToken") is not None:
            fields.pop("includeRefreshToken", None)  # a refresh token comes with the first page only
        body = protocol.query_body({**fields, "maxFiles": raw.get("maxFiles"), "pageToken": raw.get("pageToken")})
        return self.reads.query(t, caps, body, recipient, pinned=record.pin)

    # -- files -------------------------------------------------------------------------------------------------

    def open_file(self, token: str) -> file_urls.FileGrant:
        try:
            return file_urls.verify(self.signing_key.get(), token, now_ms())
        except file_urls.BadSignedUrl as exc:
            raise forbidden(str(exc)) from None

    def read_object(self, url: str) -> bytes:
        """A file outside the local filesystem but inside the warehouse, through the storage backend."""
        root = self.storage.url.rstrip("/") + "/"
        if not url.startswith(root):
            raise forbidden("this file cannot be served by Arco")
        return self.storage.get(url[len(root):]).data

    # -- audit -------------------------------------------------------------------------------------------------

    def record(self, recipient: Recipient, action: str, *, share: str | None = None, t: SharedTable | None = None,
               version: int | None = None, files: int | None = None, client_ip: str | None = None,
               user_agent: str | None = None, details: dict[str, Any] | None = None) -> None:
        event = audit.read_event(recipient.name, action, share=t.share.name if t else share,
                                 schema=t.schema if t else None, table=t.name if t else None,
                                 table_id=t.table.id if t else None, version=version, files=files,
                                 client_ip=client_ip, user_agent=user_agent, details=details)
        audit.record_read(self.storage, event)


def _share_item(share: SecurableEntry) -> dict[str, Any]:
    item: dict[str, Any] = {"name": share.name, "id": share.id}
    if share.comment:
        item["comment"] = share.comment
    return item


def _table_item(t: SharedTable) -> dict[str, Any]:
    return {"name": t.name, "schema": t.schema, "share": t.share.name, "shareId": t.share.id, "id": t.table.id}
