"""The sharing server's pure decisions: file URL signatures, recipients' tokens and IP lists, paging, request
parsing, file skipping from hints, the NDJSON lines, the audit row of a recipient's read, and the access modes a
listing offers."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from arco.auth.sealed import unb64
from arco.auth.tokens import hash_token
from arco.catalog.model import TableEntry
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.pipeline import compact, rows
from arco.settings import ServerSettings
from arco.sharing import audit, file_urls, predicates, protocol, responses
from arco.sharing.actions import SharedFile, SharedVersion, TableChange, table_changes
from arco.sharing.cloud_tokens import directory_access
from arco.sharing.errors import SharingError
from arco.sharing.recipients import ip_allowed, recipient_for_token, visible_share, visible_shares
from arco.sharing.table_reads import SharedTable
from arco.vending.vendor import CredentialVendor

KEY = b"k" * 32
NOW = 1_800_000_000_000


# -- signed file URLs --------------------------------------------------------------------------------------------

def test_a_signed_url_opens_its_one_file_until_it_expires() -> None:
    token = file_urls.sign(KEY, "file:///w/t/a.parquet", NOW + 1000)
    assert file_urls.verify(KEY, token, NOW) == file_urls.FileGrant("file:///w/t/a.parquet", NOW + 1000)
    with pytest.raises(file_urls.BadSignedUrl, match="expired"):
        file_urls.verify(KEY, token, NOW + 1000)
    with pytest.raises(file_urls.BadSignedUrl, match="signature"):
        file_urls.verify(b"other" * 8, token, NOW)


def test_a_signed_url_tells_its_holder_nothing_it_names() -> None:
    """A file URL travels to an engine's workers and their logs: the storage path, table id and recipient it names
    are encrypted, each token differently, and only the warehouse key reads them."""
    reader = ("acme", "sales", "lake", "orders", "0f8e6c2a-1111-4222-8333-444455556666")
    token = file_urls.sign(KEY, "file:///srv/warehouse/main/lake/orders/part-0.parquet", NOW + 1000, reader)
    again = file_urls.sign(KEY, "file:///srv/warehouse/main/lake/orders/part-0.parquet", NOW + 1000, reader)
    payload = unb64(token.split(".")[0])
    for secret in (b"warehouse", b"part-0", b"acme", b"0f8e6c2a", b"/srv"):
        assert secret not in payload
    assert token != again
    assert file_urls.verify(KEY, token, NOW).reader == reader


def test_a_signature_cannot_be_moved_to_another_file_or_time() -> None:
    a = file_urls.sign(KEY, "file:///w/t/a.parquet", NOW + 1000)
    b = file_urls.sign(KEY, "file:///w/t/b.parquet", NOW + 1000)
    later = file_urls.sign(KEY, "file:///w/t/a.parquet", NOW + 10**9)
    for forged in (f"{b.split('.')[0]}.{a.split('.')[1]}", f"{later.split('.')[0]}.{a.split('.')[1]}",
                   "nodot", ".", f"{a}x", "a" * 9000, f"{a.split('.')[0]}.!!!"):
        with pytest.raises(file_urls.BadSignedUrl):
            file_urls.verify(KEY, forged, NOW)


def test_a_signature_has_one_spelling() -> None:
    """The last of a MAC's 43 base64 characters has two spare bits that a decoder ignores: the three other spellings
    of a valid token are refused, and so is a MAC in other characters."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    token = file_urls.sign(KEY, "file:///w/t/a.parquet", NOW + 1000)
    payload, mac = token.split(".")
    last = alphabet.index(mac[-1])
    for spare in (1, 2, 3):
        other = f"{payload}.{mac[:-1]}{alphabet[last ^ spare]}"
        with pytest.raises(file_urls.BadSignedUrl, match="signature"):
            file_urls.verify(KEY, other, NOW)
    with pytest.raises(file_urls.BadSignedUrl, match="malformed"):
        file_urls.verify(KEY, f"{payload}.{mac[:-1]}\u00e9", NOW)


def test_the_signing_key_is_made_once_per_warehouse() -> None:
    from arco.storage.memory import MemoryBackend

    storage = MemoryBackend()
    first, second = file_urls.SigningKey(storage).get(), file_urls.SigningKey(storage).get()
    assert first == second and len(first) == 32


# -- recipients --------------------------------------------------------------------------------------------------

def recipient(name: str, *tokens: dict, **fields: object) -> SecurableEntry:
    return SecurableEntry(id=name, type="recipient", name=name, owner="admin",
                          fields={"authentication_type": "TOKEN", "tokens": list(tokens), **fields})


def test_a_token_names_its_recipient_until_its_expiry() -> None:
    live = recipient("acme", {"token_hash": hash_token("t1"), "expiration_time": None},
                     {"token_hash": hash_token("t2"), "expiration_time": NOW + 5})
    assert recipient_for_token([live], "t1", NOW).name == "acme"
    assert recipient_for_token([live], "t2", NOW + 4).name == "acme"
    for token, now in (("t2", NOW + 5), ("t3", NOW), ("", NOW), (None, NOW)):
        with pytest.raises(SharingError) as refused:
            recipient_for_token([live], token, now)
        assert refused.value.status == 401
    pending = recipient("new", {"activation_hash": hash_token("a"), "token_hash": None})
    with pytest.raises(SharingError):
        recipient_for_token([pending], "a", NOW)  # an activation link is not a bearer token


@pytest.mark.parametrize(("allowed", "ip", "expected"), [
    (None, "1.2.3.4", True), ([], "1.2.3.4", True), (["1.2.3.4"], "1.2.3.4", True),
    (["10.0.0.0/8"], "10.9.8.7", True), (["10.0.0.0/8"], "127.0.0.1", False), (["10.0.0.0/8"], None, False),
    (["10.0.0.0/8"], "not-an-ip", False), (["::1"], "::1", True), (["bad", "127.0.0.1"], "127.0.0.1", True),
])
def test_ip_access_lists(allowed: list[str] | None, ip: str | None, expected: bool) -> None:
    listed = {"allowed_ip_addresses": allowed} if allowed is not None else None
    assert ip_allowed(listed, ip) is expected


def test_only_shares_granting_select_are_visible() -> None:
    state = CatalogState()
    for name in ("granted", "other"):
        state.store_securable(SecurableEntry(id=name, type="share", name=name, owner="admin"))
    state.grants[("share", "granted")] = {"acme": ["SELECT"]}
    acme = recipient_for_token([recipient("Acme", {"token_hash": hash_token("t")})], "t", NOW)
    assert [s.name for s in visible_shares(state, acme)] == ["granted"]
    assert visible_share(state, acme, "GRANTED").name == "granted"
    with pytest.raises(SharingError) as hidden:
        visible_share(state, acme, "other")
    assert hidden.value.status == 404


# -- request parsing ---------------------------------------------------------------------------------------------

def test_pages_follow_their_own_listing_only() -> None:
    items = [{"name": n} for n in ("b", "a", "c")]
    first = protocol.paginate("shares", items, "name", None, "2")
    assert [i["name"] for i in first["items"]] == ["a", "b"]
    rest = protocol.paginate("shares", items, "name", first["nextPageToken"], "2")
    assert [i["name"] for i in rest["items"]] == ["c"] and "nextPageToken" not in rest
    assert protocol.paginate("shares", items, "name", None, "0")["items"] == []
    assert len(protocol.paginate("shares", items * 600, "name", None, str(10**15))["items"]) == protocol.MAX_PAGE
    for token, limit in ((first["nextPageToken"], None), ("junk", None), (None, "-1"), (None, "x")):
        with pytest.raises(SharingError) as bad:
            protocol.paginate("schemas:1", items, "name", token, limit)
        assert bad.value.status == 400


def test_same_table_names_in_two_schemas_page_apart() -> None:
    items = [{"name": "t", "schema": "a"}, {"name": "t", "schema": "b"}]
    first = protocol.paginate("all", items, "name", None, "1")
    second = protocol.paginate("all", items, "name", first["nextPageToken"], "1")
    assert [i["schema"] for i in first["items"] + second["items"]] == ["a", "b"]


def test_capabilities_and_response_format() -> None:
    caps = protocol.capabilities("responseFormat=Delta,Parquet; readerfeatures=deletionvectors")
    assert caps == {"responseformat": ["delta", "parquet"], "readerfeatures": ["deletionvectors"]}
    assert protocol.response_format(caps, needs_delta=False) == "parquet"
    assert protocol.response_format(caps, needs_delta=True) == "delta"
    assert protocol.response_format({}, needs_delta=False) == "parquet"
    assert protocol.response_format(protocol.capabilities("responseformat=delta"), needs_delta=False) == "delta"
    with pytest.raises(SharingError):
        protocol.response_format({}, needs_delta=True)
    with pytest.raises(SharingError):
        protocol.response_format(protocol.capabilities("responseformat=csv"), needs_delta=False)


def test_query_bodies_keep_usable_hints_and_check_time_travel() -> None:
    body = protocol.query_body({"predicateHints": ["a = 1", 3], "limitHint": "x", "jsonPredicateHints": {"op": 1},
                                "version": 2})
    assert (body.predicate_hints, body.limit_hint, body.json_predicate_hints, body.version) == (["a = 1"], None,
                                                                                                None, 2)
    assert protocol.query_body({"timestamp": "2024-01-01T00:00:00Z"}).timestamp_ms == 1704067200000
    assert protocol.query_body({"timestamp": "2024-01-01T01:00:00+01:00"}).timestamp_ms == 1704067200000
    for bad in ({"version": -1}, {"version": True}, {"version": 1, "startingVersion": 1}, {"endingVersion": 2},
                {"startingVersion": 3, "endingVersion": 2}, {"timestamp": "soon"}, {"timestamp": "2024-01-01"}, [1]):
        with pytest.raises(SharingError):
            protocol.query_body(bad)


@pytest.mark.parametrize("name", ["", "a b", "a/b", "x" * 256, "tab\tle", "a.b"])
def test_names_outside_the_protocols_rules_are_not_found(name: str) -> None:
    with pytest.raises(SharingError) as refused:
        protocol.check_name("table", name)
    assert refused.value.status == 404


# -- hints -------------------------------------------------------------------------------------------------------

def f(region: str | None, n: int | None = 1, day: str = "2024-01-02") -> SharedFile:
    stats = json.dumps({"numRecords": n}) if n is not None else None
    return SharedFile(f"file:///{region}", str(region), {"region": region, "day": day, "n": "10"}, 1, stats)


def test_json_predicates_skip_partitions_and_ignore_what_they_cannot_use() -> None:
    files = [f("eu"), f("us"), f(None)]
    eq = json.dumps({"op": "equal", "children": [{"op": "column", "name": "region", "valueType": "string"},
                                                 {"op": "literal", "value": "eu", "valueType": "string"}]})
    assert [x.id for x in predicates.filter_files(files, None, eq, None)] == ["eu"]
    null = json.dumps({"op": "isNull", "children": [{"op": "column", "name": "region", "valueType": "string"}]})
    assert [x.id for x in predicates.filter_files(files, None, null, None)] == ["None"]
    either = json.dumps({"op": "or", "children": [json.loads(eq), {"op": "bogus"}]})
    assert len(predicates.filter_files(files, None, either, None)) == 3  # unknown branch: cannot tell
    both = json.dumps({"op": "and", "children": [json.loads(eq), {"op": "bogus"}]})
    assert [x.id for x in predicates.filter_files(files, None, both, None)] == ["eu"]
    numeric = json.dumps({"op": "lessThan", "children": [{"op": "column", "name": "n", "valueType": "int"},
                                                         {"op": "literal", "value": "9", "valueType": "int"}]})
    assert predicates.filter_files(files, None, numeric, None) == []  # 10 < 9 as numbers, not as text
    deep: dict = {"op": "not", "children": []}
    for _ in range(200):
        deep = {"op": "not", "children": [deep]}
    for junk in ("{", "[]", "null", json.dumps(deep), json.dumps({"op": "equal", "children": [{"op": "column"}]})):
        assert len(predicates.filter_files(files, None, junk, None)) == 3, junk


def test_sql_hints_and_limits() -> None:
    files = [f("eu", 5), f("us", 5), f("ap", 5)]
    assert [x.id for x in predicates.filter_files(files, ["region = 'us'"], None, None)] == ["us"]
    assert [x.id for x in predicates.filter_files(files, ["'us' <> region"], None, None)] == ["eu", "ap"]
    assert predicates.filter_files(files, ["n < 9"], None, None) == []  # 10 < 9 compared as numbers
    assert len(predicates.filter_files(files, ["n > 9", "region > 'zz'", "nonsense ((", "x = 1"], None, None)) == 3
    assert len(predicates.filter_files(files, ["day >= '2024-01-03'"], None, None)) == 0
    assert len(predicates.filter_files(files, None, None, 6)) == 2
    assert len(predicates.filter_files(files, None, None, 0)) == 1
    assert len(predicates.filter_files([f("eu", None), f("us", None)], None, None, 1)) == 2  # no stats: all


# -- lines -------------------------------------------------------------------------------------------------------

VERSION = SharedVersion(7, 1000, 1, {"id": "t", "format": {"provider": "parquet"}, "schemaString": "{}",
                                     "partitionColumns": ["region"], "configuration": {}}, [f("eu")])


def sign(url: str) -> tuple[str, int]:
    return f"https://signed/{url.rsplit('/', 1)[-1]}", 99


def test_parquet_and_delta_lines() -> None:
    lines = [orjson.loads(x) for x in responses.snapshot_lines("parquet", {"minReaderVersion": 3}, VERSION,
                                                                VERSION.files, sign, time_travel=True)]
    assert lines[0] == {"protocol": {"minReaderVersion": 1}}
    assert lines[1]["metaData"]["version"] == 7 and lines[1]["metaData"]["numFiles"] == 1
    assert lines[2]["file"] == {"url": "https://signed/eu", "id": "eu", "partitionValues": f("eu").partition_values,
                                "size": 1, "expirationTimestamp": 99, "stats": f("eu").stats, "version": 7,
                                "timestamp": 1000}
    delta = [orjson.loads(x) for x in responses.snapshot_lines("delta", {"minReaderVersion": 3}, VERSION,
                                                                VERSION.files, sign, time_travel=False)]
    assert delta[0] == {"protocol": {"deltaProtocol": {"minReaderVersion": 3}}}
    assert delta[2]["file"]["deltaSingleAction"]["add"]["path"] == "https://signed/eu"
    changed = [SharedFile("file:///a", "a", {}, 1, None, 3, 5, "insert"),
               SharedFile("file:///b", "b", {}, 1, None, 4, 6, "delete"),
               SharedFile("file:///c", "c", {}, 1, None, 4, 6, "update_preimage")]
    keys = [next(iter(orjson.loads(x))) for x in responses.change_lines("parquet", {}, VERSION, changed, sign,
                                                                         include_cdf=True)][2:]
    assert keys == ["add", "remove", "cdf"]
    assert len(list(responses.change_lines("parquet", {}, VERSION, changed, sign, include_cdf=False))) == 4


def test_a_change_data_file_is_delta_s_cdc_action_in_the_delta_format() -> None:
    # Under any other key a Delta reader (delta-kernel, Spark) skips the line, and the feed loses its rows.
    changed = [SharedFile("file:///a", "a", {}, 1, None, 3, 5, "insert"),
               SharedFile("file:///b", "b", {}, 1, None, 4, 6, "delete"),
               SharedFile("file:///c", "c", {}, 1, None, 4, 6, "update_preimage")]
    lines = list(responses.change_lines("delta", {}, VERSION, changed, sign, include_cdf=True))[2:]
    actions = [next(iter(orjson.loads(x)["file"]["deltaSingleAction"])) for x in lines]
    assert actions == ["add", "remove", "cdc"]


def test_the_delta_format_leaves_the_shared_metadata_as_it_was() -> None:
    # A client paging an answer compares each page's metadata line byte for byte: a delta-format answer in between
    # must not change what the parquet format's line says.
    version = SharedVersion(7, 1000, 1, {"id": "t", "format": {"provider": "parquet"}, "schemaString": "{}"}, [])
    before = responses.metadata_line("parquet", version)
    delta = orjson.loads(responses.metadata_line("delta", version))["metaData"]["deltaMetadata"]
    assert delta["format"] == {"provider": "parquet", "options": {}}
    assert responses.metadata_line("parquet", version) == before
    assert version.metadata["format"] == {"provider": "parquet"}


@pytest.mark.parametrize(("configuration", "cdf", "shown"), [
    ({"delta.enableChangeDataFeed": "true", "delta.logRetentionDuration": "interval 30 days"}, None,
     {"enableChangeDataFeed": "true"}),
    ({"delta.enableChangeDataFeed": "true"}, False, {}),  # the share withholds the change feed
    ({"delta.checkpointInterval": "7"}, None, {}),
])
def test_the_parquet_format_shows_whether_the_change_feed_is_readable_and_no_other_property(
        configuration: dict[str, str], cdf: bool | None, shown: dict[str, str]) -> None:
    version = SharedVersion(7, 1000, 1, {"id": "t", "schemaString": "{}", "configuration": configuration}, [])
    assert orjson.loads(responses.metadata_line("parquet", version, cdf=cdf))["metaData"]["configuration"] == shown
    delta = orjson.loads(responses.metadata_line("delta", version, cdf=cdf))["metaData"]["deltaMetadata"]
    assert delta["configuration"] == configuration  # a Delta reader needs the table's own


def test_both_formats_say_an_iceberg_tables_change_feed_is_readable() -> None:
    """An Iceberg table (cdf True: its appends are its change feed, served by the changes query) has no Delta
    configuration of its own; the delta format says what the parquet format says, in Delta's property."""
    metadata = {"id": "t", "schemaString": "{}", "configuration": {}}
    version = SharedVersion(7, 1000, 1, metadata, [])
    parquet = orjson.loads(responses.metadata_line("parquet", version, cdf=True))["metaData"]
    assert parquet["configuration"] == {"enableChangeDataFeed": "true"}
    delta = orjson.loads(responses.metadata_line("delta", version, cdf=True))["metaData"]["deltaMetadata"]
    assert delta["configuration"] == {"delta.enableChangeDataFeed": "true"}
    assert metadata["configuration"] == {}  # the cached version's metadata is not changed
    historical = orjson.loads(responses._metadata_line("delta", metadata, {"version": 7}, True))
    assert historical["metaData"]["deltaMetadata"]["configuration"] == {"delta.enableChangeDataFeed": "true"}


def test_a_change_of_metadata_or_protocol_is_a_version_that_differs_from_the_one_before() -> None:
    meta = {"id": "t", "schemaString": "a"}
    states = [(2, meta, {"minReaderVersion": 1}), (3, meta, {"minReaderVersion": 1}),
              (4, {**meta, "schemaString": "a,b"}, {"minReaderVersion": 1}),
              (6, {**meta, "schemaString": "a,b"}, {"minReaderVersion": 3})]
    assert table_changes(states) == [TableChange(4, metadata={**meta, "schemaString": "a,b"}),
                                     TableChange(6, protocol={"minReaderVersion": 3})]
    assert table_changes(states[:1]) == table_changes([]) == []


def test_historical_lines_come_before_their_versions_files() -> None:
    changed = [SharedFile("file:///a", "a", {}, 1, None, 3, 5, "insert"),
               SharedFile("file:///b", "b", {}, 1, None, 5, 6, "insert")]
    changes = [TableChange(4, metadata={**VERSION.metadata, "schemaString": "x"}, protocol={"minReaderVersion": 3}),
               TableChange(5, protocol={"minReaderVersion": 2}), TableChange(9, metadata=VERSION.metadata)]

    def lines(fmt: str, historical_protocol: bool) -> list[tuple[str, Any]]:
        out = [orjson.loads(x) for x in responses.change_lines(fmt, {"minReaderVersion": 1}, VERSION, changed, sign,
                                                               include_cdf=False, changes=changes,
                                                               historical_protocol=historical_protocol)]
        return [(key, value.get("version")) for line in out for key, value in line.items()]

    assert lines("parquet", True) == [("protocol", None), ("metaData", 7), ("add", 3), ("metaData", 4), ("add", 5),
                                      ("metaData", 9)]
    assert lines("delta", True) == [("protocol", 7), ("metaData", 7), ("file", 3), ("protocol", 4), ("metaData", 4),
                                    ("protocol", 5), ("file", 5), ("metaData", 9)]
    assert lines("delta", False)[0] == ("protocol", None) and ("protocol", 4) not in lines("delta", False)


# -- audit -------------------------------------------------------------------------------------------------------

def test_a_recipient_read_becomes_an_audit_row_with_its_name() -> None:
    event = audit.read_event("acme", "queryTable", share="sales", schema="lake", table="orders", table_id="u1",
                             version=3, files=2, at_ms=NOW)
    key = audit.receipt_key(event)
    assert compact.kind_of(key) == "audit"
    row = rows.sharing_read_row(key, event)
    assert (row["principal"], row["op"], row["namespace"], row["name"], row["object_id"]) == (
        "recipient:acme", "delta_sharing.queryTable", ["sales", "lake"], "orders", "u1")
    assert row["committed_at"] is not None and set(row) <= set(rows.AUDIT.names)  # every value has its column
    with pytest.raises(rows.BadReceipt):
        rows.sharing_read_row(key, {"event_type": "DeltaSharingRead"})


@pytest.mark.parametrize(("url", "path"), [("file:///w/a.parquet", "/w/a.parquet"),
                                           ("file:/w/a.parquet", "/w/a.parquet"),
                                           ("file://localhost/w/a.parquet", "/w/a.parquet")])
def test_local_file_urls_in_each_spelling(url: str, path: str) -> None:
    from arco.storage.urls import local_path

    assert str(local_path(url)) == path


# -- access modes in listings --------------------------------------------------------------------------------------

def _shared(location: str, fmt: str = "DELTA", **obj: Any) -> SharedTable:
    share = SecurableEntry("s1", "share", "sales", "admin")
    table = TableEntry("t1", "c1", ("lake",), "orders", "TABLE", fmt, location, "admin")  # type: ignore[arg-type]
    return SharedTable(share, "lake", "orders", {"history_data_sharing_status": "ENABLED", **obj}, table)


@pytest.mark.parametrize(("shared", "role", "fields"), [
    (_shared("s3://bucket/wh/lake/orders"), "arn:aws:iam::1:role/r",
     {"location": "s3://bucket/wh/lake/orders", "accessModes": ["url", "dir"]}),
    (_shared("s3://bucket/wh/lake/orders"), None, {"accessModes": ["url"]}),  # no role: nothing would be vended
    (_shared("/data/wh/lake/orders"), "arn:aws:iam::1:role/r", {"accessModes": ["url"]}),  # a local directory
    (_shared("s3://bucket/wh/lake/orders", fmt="ICEBERG"), "arn:aws:iam::1:role/r", {"accessModes": ["url"]}),
    (_shared("s3://bucket/wh/lake/orders", history_data_sharing_status="DISABLED"), "arn:aws:iam::1:role/r",
     {"accessModes": ["url"]}),  # the directory holds every version; the share only the latest
    (_shared("s3://bucket/wh/lake/orders", start_version=3), "arn:aws:iam::1:role/r", {"accessModes": ["url"]}),
    (_shared("s3://bucket/wh/lake/orders", partition_specification="region = 'eu'"), "arn:aws:iam::1:role/r",
     {"accessModes": ["url"]}),
])
def test_listings_offer_directory_access_exactly_where_credentials_would_be_vended(
        shared: SharedTable, role: str | None, fields: dict[str, Any]) -> None:
    assert directory_access(CredentialVendor(ServerSettings(), {}), shared, role) == fields


@pytest.mark.parametrize(("url", "own"), [
    ("file:///wh/main/s/t-1/region=eu/part-0.parquet", True),
    ("file:/wh/main/s/t-1/part-0.parquet", True),  # Hadoop's spelling of the same file
    ("file:///wh/_catalog/sharing/cdf/1/00000000000000000003.parquet", True),  # change data Arco derived
    ("file:///wh/main/s/t-10/part-0.parquet", False),  # a sibling whose name starts alike
    ("file:///wh/main/s/t-1/../victim/part-0.parquet", False),
    ("file:///wh/main/s/t-1/./part-0.parquet", False),
    ("file:///etc/passwd", False),
    ("file:///wh/_catalog/auth/oauth-keys/initial.json", False),
    ("file:///wh/_catalog/sharing/cdf/2/00000000000000000003.parquet", False),  # another table's change data
    ("s3://bucket/wh/main/s/t-1/part-0.parquet", False),
])
def test_a_recipient_is_handed_the_tables_own_files_only(url: str, own: bool) -> None:
    from arco.sharing.table_reads import own_file

    assert own_file("file:///wh/main/s/t-1", url, "file:///wh/_catalog/sharing/cdf/1") is own
