"""The Delta Sharing server through its real client (the ``delta-sharing`` Python package) and raw HTTP for what
the client does not reach: a provider shares a Delta table (written with ``deltalake``) and an Iceberg table
(written with PyIceberg) with a recipient, who activates its link, saves the profile and reads with pandas.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import delta_sharing
import httpx
import pyarrow as pa
import pytest
from delta_sharing.protocol import CdfOptions, DeltaSharingProfile, Table
from delta_sharing.rest_client import DataSharingRestClient
from deltalake import DeltaTable, write_deltalake
from pyiceberg.catalog.rest import RestCatalog

from arco.auth.sealed import unb64
from arco.sharing import file_urls
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server
from support.sharing import ROWS, activate, delta_table, ds, ndjson, share_with, uc

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sharing") / "warehouse"


@pytest.fixture(scope="module")
def server(warehouse: Path) -> Iterator[RunningServer]:
    with arco_server(warehouse, warehouse.parent, admin_token=ARCO_TOKEN) as s:
        yield s


@pytest.fixture(scope="module")
def provider(server: RunningServer, warehouse: Path) -> dict[str, Any]:
    """A share ``sales`` with a Delta table (3 versions) and an Iceberg table, and an activated recipient."""
    assert uc(server, "POST", "/schemas", json={"name": "lake", "catalog_name": "main"}).status_code == 200
    location = delta_table(server, "lake", "orders")
    DeltaTable(location).delete("id = 3")  # version 2: removes the file of region 'us' that held id 3
    write_deltalake(location, ROWS.slice(2, 1), mode="append")  # version 3: id 3 back
    catalog = RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    iceberg = catalog.create_table("lake.events", schema=ROWS.schema)
    iceberg.append(ROWS.slice(0, 2))
    iceberg.append(ROWS.slice(2, 2))
    recipient = share_with(server, "sales", "acme", ["main.lake.orders", "main.lake.events"])
    profile_path, profile = activate(recipient, warehouse.parent)
    return {"location": location, "profile_path": profile_path, "profile": profile, "recipient": recipient,
            "iceberg": iceberg}


# -- the recipient's client --------------------------------------------------------------------------------------

def test_the_recipient_reads_a_delta_table_with_the_delta_sharing_client(server: RunningServer,
                                                                        provider: dict[str, Any]) -> None:
    profile_path = provider["profile_path"]
    assert provider["profile"]["endpoint"] == f"{server.base_url}/delta-sharing/"
    client = delta_sharing.SharingClient(profile_path)
    assert [s.name for s in client.list_shares()] == ["sales"]
    assert sorted((t.share, t.schema, t.name) for t in client.list_all_tables()) == [
        ("sales", "lake", "events"), ("sales", "lake", "orders")]
    url = f"{profile_path}#sales.lake.orders"
    frame = delta_sharing.load_as_pandas(url)
    assert sorted(frame["id"].tolist()) == [1, 2, 3, 4]
    assert set(frame["region"]) == {"eu", "us"}  # the partition column comes back from partitionValues
    assert len(delta_sharing.load_as_pandas(url, limit=1)) == 1
    assert sorted(delta_sharing.load_as_pandas(url, version=1)["id"].tolist()) == [1, 2, 3, 4]
    assert sorted(delta_sharing.load_as_pandas(url, version=2)["id"].tolist()) == [1, 2, 4]
    assert delta_sharing.get_table_version(url) == 3
    changes = delta_sharing.load_table_changes_as_pandas(url, starting_version=1, ending_version=3)
    by_version = sorted(zip(changes["_commit_version"], changes["_change_type"], changes["id"], strict=True))
    assert (1, "insert", 3) in by_version and (1, "insert", 4) in by_version
    assert (2, "delete", 3) in by_version and (3, "insert", 3) in by_version
    # the DELETE rewrote the file holding ids 3 and 4: its change data says only id 3 went
    assert [(t, i) for v, t, i in by_version if v == 2] == [("delete", 3)]
    assert all(v in (1, 2, 3) for v, _, _ in by_version)


def test_the_recipient_reads_an_iceberg_table_with_the_delta_sharing_client(provider: dict[str, Any]) -> None:
    pytest.importorskip("arco.sharing.iceberg_source")
    url = f"{provider['profile_path']}#sales.lake.events"
    frame = delta_sharing.load_as_pandas(url)
    assert sorted(frame["id"].tolist()) == [1, 2, 3, 4]
    assert len(delta_sharing.load_as_pandas(url, limit=1)) >= 1
    first = delta_sharing.get_table_version(url)
    assert sorted(delta_sharing.load_as_pandas(url, version=first - 1)["id"].tolist()) == [1, 2]
    changes = delta_sharing.load_table_changes_as_pandas(url, starting_version=first - 1)
    assert sorted(zip(changes["_commit_version"], changes["_change_type"], changes["id"], strict=True)) == [
        (first - 1, "insert", 1), (first - 1, "insert", 2), (first, "insert", 3), (first, "insert", 4)]


# -- the protocol on the wire ------------------------------------------------------------------------------------

def test_versions_metadata_and_queries_follow_the_protocol(server: RunningServer, provider: dict[str, Any]) -> None:
    profile = provider["profile"]
    table = "/shares/SALES/schemas/Lake/tables/ORDERS"  # names are case-insensitive
    version = ds(server, profile, "GET", f"{table}/version")
    assert version.status_code == 200 and version.headers["delta-table-version"] == "3"
    head = ds(server, profile, "HEAD", table)
    assert head.status_code == 200 and head.headers["delta-table-version"] == "3"
    assert ds(server, profile, "GET", f"{table}/version",
              params={"startingTimestamp": "2000-01-01T00:00:00Z"}).headers["delta-table-version"] == "0"
    assert ds(server, profile, "GET", f"{table}/version",
              params={"startingTimestamp": "yesterday"}).json()["errorCode"] == "INVALID_PARAMETER_VALUE"

    metadata = ds(server, profile, "GET", f"{table}/metadata")
    assert metadata.headers["content-type"].startswith("application/x-ndjson")
    proto, meta = ndjson(metadata)
    assert proto == {"protocol": {"minReaderVersion": 1}}
    assert meta["metaData"]["partitionColumns"] == ["region"] and meta["metaData"]["numFiles"] == 3
    assert [f["name"] for f in json.loads(meta["metaData"]["schemaString"])["fields"]] == ["id", "region", "amount"]
    assert meta["metaData"]["accessModes"] == ["url"] and "location" not in meta["metaData"]  # a local directory

    # Two lines, as the protocol says of this answer (Spark's client refuses any other count), even when the
    # client takes EndStreamActions elsewhere.
    two = ds(server, profile, "GET", f"{table}/metadata",
             headers={"delta-sharing-capabilities": "includeendstreamaction=true"})
    assert len(ndjson(two)) == 2 and "includeendstreamaction" not in two.headers["delta-sharing-capabilities"]
    # Time travel to a time after the latest commit is refused, as the reference refuses it, not answered with
    # the latest version passed off as the table at that time.
    for future in (ds(server, profile, "POST", f"{table}/query", json={"timestamp": "2099-01-01T00:00:00Z"}),
                   ds(server, profile, "GET", f"{table}/metadata", params={"timestamp": "2099-01-01T00:00:00Z"})):
        assert future.status_code == 400 and "after the table's latest version" in future.json()["message"]

    delta_format = ds(server, profile, "GET", f"{table}/metadata",
                      headers={"delta-sharing-capabilities": "responseformat=delta;readerfeatures=deletionvectors"})
    assert delta_format.headers["delta-sharing-capabilities"] == "responseformat=delta"
    assert "deltaProtocol" in ndjson(delta_format)[0]["protocol"]
    assert "deltaMetadata" in ndjson(delta_format)[1]["metaData"]

    query = ds(server, profile, "POST", f"{table}/query", json={
        "jsonPredicateHints": json.dumps({"op": "equal", "children": [
            {"op": "column", "name": "region", "valueType": "string"},
            {"op": "literal", "value": "eu", "valueType": "string"}]})})
    files = [line["file"] for line in ndjson(query)[2:]]
    assert query.headers["delta-table-version"] == "3"
    assert files and all(f["partitionValues"] == {"region": "eu"} for f in files)
    assert all(f["expirationTimestamp"] > time.time() * 1000 for f in files)
    assert json.loads(files[0]["stats"])["numRecords"] == 2
    sql = ds(server, profile, "POST", f"{table}/query", json={"predicateHints": ["region = 'us'"]})
    assert {line["file"]["partitionValues"]["region"] for line in ndjson(sql)[2:]} == {"us"}
    for malformed in ({"predicateHints": ["region = = 'us'", 42]}, {"jsonPredicateHints": "{not json"},
                      {"jsonPredicateHints": json.dumps({"op": "equal", "children": [{"op": "column"}]})},
                      {"predicateHints": "region = 'us'"}, {"limitHint": "ten"}):
        ignored = ds(server, profile, "POST", f"{table}/query", json=malformed)
        assert ignored.status_code == 200, (malformed, ignored.text)
        assert len(ndjson(ignored)) == 2 + 3  # every file: a hint that cannot be used is skipped
    limited = ds(server, profile, "POST", f"{table}/query", json={"limitHint": 1})
    assert len(ndjson(limited)) == 3
    old = ds(server, profile, "POST", f"{table}/query", json={"version": 1})
    assert old.headers["delta-table-version"] == "1" and all(line["file"]["version"] == 1
                                                            for line in ndjson(old)[2:])
    since = ds(server, profile, "POST", f"{table}/query", json={"startingVersion": 2})
    kinds = sorted((next(iter(line)), next(iter(line.values()))["version"]) for line in ndjson(since)[2:])
    assert kinds == [("add", 2), ("add", 3), ("remove", 2)]  # the delete rewrote the file that held id 3
    assert ds(server, profile, "POST", f"{table}/query", json={"version": 99}).status_code == 400
    assert ds(server, profile, "POST", f"{table}/query", json={"version": 1, "timestamp": "2020-01-01T00:00:00Z"}
              ).status_code == 400
    for not_an_object in (b"{oops", b"[1]", b'"query"'):  # the reference server's code for a body it cannot read
        refused = ds(server, profile, "POST", f"{table}/query", content=not_an_object)
        assert (refused.status_code, refused.json()["errorCode"]) == (400, "MALFORMED_REQUEST"), not_an_object
    ended = ds(server, profile, "POST", f"{table}/query", json={},
               headers={"delta-sharing-capabilities": "responseformat=parquet;includeEndStreamAction=true"})
    assert ended.headers["delta-sharing-capabilities"] == "responseformat=parquet;includeendstreamaction=true"
    last = ndjson(ended)[-1]["endStreamAction"]
    assert last["minUrlExpirationTimestamp"] == min(line["file"]["expirationTimestamp"] for line in ndjson(ended)[2:-1])
    echoed = ds(server, profile, "POST", f"{table}/query", json={}, headers={"fileidhash": "DELTA"})
    assert echoed.headers["fileidhash"] == "delta"
    assert ds(server, profile, "POST", f"{table}/query", json={}, headers={"fileidhash": "md5"}).status_code == 400


def _historical(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The ``kind`` lines (metaData / protocol) after the head's two."""
    return [line[kind] for line in lines[2:] if kind in line]


def _columns(metadata: dict[str, Any]) -> list[str]:
    schema = metadata.get("schemaString") or metadata["deltaMetadata"]["schemaString"]
    return [f["name"] for f in json.loads(schema)["fields"]]


def test_streaming_and_change_feed_readers_see_each_schema_and_protocol_change(server: RunningServer,
                                                                               warehouse: Path) -> None:
    """A streaming reader (startingVersion) and a change-feed reader asking for history get the metadata (and, if
    asked, the protocol) of each version that changed it, with the version, where the files of that version are;
    a change-feed reader that does not ask gets the latest metadata, one schema to read every file with."""
    assert uc(server, "POST", "/schemas", json={"name": "evolving", "catalog_name": "main"}).status_code == 200
    location = delta_table(server, "evolving", "readings", cdf=False)  # versions 0 and 1
    noted = ROWS.slice(0, 1).append_column("note", pa.array(["first"]))
    write_deltalake(location, noted, mode="append", schema_mode="merge")  # 2: a new column
    DeltaTable(location).alter.set_table_properties({"delta.enableChangeDataFeed": "true"})  # 3: config, protocol
    write_deltalake(location, noted, mode="append")  # 4: data only
    write_deltalake(location, noted.append_column("unit", pa.array(["kg"])), mode="append",
                    schema_mode="merge")  # 5: another column
    profile_path, profile = activate(share_with(server, "evolving_share", "watcher", ["main.evolving.readings"]),
                                     warehouse.parent)
    table = "/shares/evolving_share/schemas/evolving/tables/readings"
    protocols = [ds(server, profile, "GET", f"{table}/metadata",
                    params={"version": str(v)}, headers={"delta-sharing-capabilities": "responseformat=delta"})
                 for v in (2, 3)]
    assert ndjson(protocols[0])[0] != ndjson(protocols[1])[0]  # version 3 did change the protocol

    streaming = ndjson(ds(server, profile, "POST", f"{table}/query", json={"startingVersion": 1}))
    assert streaming[1]["metaData"]["version"] == 1 and _columns(streaming[1]["metaData"]) == ["id", "region", "amount"]
    historical = _historical(streaming, "metaData")
    assert [m["version"] for m in historical] == [2, 3, 5]
    assert "note" in _columns(historical[0]) and "unit" not in _columns(historical[0])
    assert {"note", "unit"} <= set(_columns(historical[2]))
    # The parquet format says whether the change feed is readable, as each version records it, and nothing else of
    # the table's configuration (as the reference server).
    assert [m["configuration"] for m in historical] == [{}, {"enableChangeDataFeed": "true"},
                                                        {"enableChangeDataFeed": "true"}]
    assert _historical(streaming, "protocol") == []  # not asked for, and the parquet format has no place for one
    order = [(next(iter(line)), next(iter(line.values()))["version"]) for line in streaming[2:]]
    assert order == sorted(order, key=lambda kind_version: kind_version[1])  # each change before its version's files
    assert [v for kind, v in order if kind == "metaData"] == [2, 3, 5]
    assert {v for kind, v in order if kind == "add"} == {1, 2, 4, 5}

    delta = ndjson(ds(server, profile, "POST", f"{table}/query",
                      json={"startingVersion": 1, "includeHistoricalProtocol": True},
                      headers={"delta-sharing-capabilities": "responseformat=delta"}))
    assert delta[0]["protocol"]["version"] == 1
    assert [p["version"] for p in _historical(delta, "protocol")] == [3]
    assert _historical(delta, "protocol")[0]["deltaProtocol"] == ndjson(protocols[1])[0]["protocol"]["deltaProtocol"]
    assert [m["version"] for m in _historical(delta, "metaData")] == [2, 3, 5]
    unasked = ndjson(ds(server, profile, "POST", f"{table}/query", json={"startingVersion": 1},
                        headers={"delta-sharing-capabilities": "responseformat=delta"}))
    assert "version" not in unasked[0]["protocol"] and _historical(unasked, "protocol") == []

    # The change data feed, recorded from version 3 on. Python's client sends the flag as "True".
    feed = ds(server, profile, "GET", f"{table}/changes",
              params={"startingVersion": "3", "includeHistoricalMetadata": "True"})
    assert feed.status_code == 200, feed.text
    assert ndjson(feed)[1]["metaData"]["version"] == 3 and "unit" not in _columns(ndjson(feed)[1]["metaData"])
    assert [m["version"] for m in _historical(ndjson(feed), "metaData")] == [5]
    plain = ndjson(ds(server, profile, "GET", f"{table}/changes", params={"startingVersion": "3"}))
    assert plain[1]["metaData"]["version"] == 5 and "unit" in _columns(plain[1]["metaData"])
    assert _historical(plain, "metaData") == []
    with_protocol = ndjson(ds(server, profile, "GET", f"{table}/changes",
                              params={"startingVersion": "3", "includeHistoricalProtocol": "true"},
                              headers={"delta-sharing-capabilities": "responseformat=delta"}))
    assert with_protocol[0]["protocol"]["deltaProtocol"] == ndjson(protocols[1])[0]["protocol"]["deltaProtocol"]
    assert _historical(with_protocol, "protocol") == []  # none changed after version 3
    assert _historical(with_protocol, "metaData") == []  # version 5's was not asked for
    # Versions 0 to 2 recorded no change data: a range reaching them is refused (Delta's words), not made up.
    for params in ({"startingVersion": "2"}, {"startingVersion": "0", "endingVersion": "4"}):
        before = ds(server, profile, "GET", f"{table}/changes", params=params)
        assert before.status_code == 400 and before.json()["errorCode"] == "INVALID_PARAMETER_VALUE"
        assert f"not recorded for version [{params['startingVersion']}]" in before.json()["message"]

    client = DataSharingRestClient(DeltaSharingProfile.read_from_file(profile_path))
    readings = Table(name="readings", share="evolving_share", schema="evolving")
    answer = client.list_table_changes(readings, CdfOptions(starting_version=3, include_historical_metadata=True))
    assert answer.metadata.version == 3 and sorted({a.version for a in answer.actions if a is not None}) == [4, 5]
    rows = delta_sharing.load_table_changes_as_pandas(
        f"{profile_path}#evolving_share.evolving.readings", starting_version=4)
    assert sorted(rows["_commit_version"].tolist()) == [4, 5] and "unit" in rows.columns

    for bad in ({"includeHistoricalMetadata": "maybe"}, {"includeHistoricalProtocol": "1"},
                {"endingVersion": "9" * 5000}, {"startingVersion": "9" * 5000}):  # past int()'s digit limit
        refused = ds(server, profile, "GET", f"{table}/changes", params={"startingVersion": "3", **bad})
        assert refused.status_code == 400 and refused.json()["errorCode"] == "INVALID_PARAMETER_VALUE"
    many = ds(server, profile, "GET", f"{table}/changes", params={"startingVersion": "3", "maxFiles": "9" * 5000})
    assert many.status_code == 200, many.text  # any number of files past the page cap is the cap
    refused = ds(server, profile, "POST", f"{table}/query", json={"startingVersion": 1,
                                                                   "includeHistoricalProtocol": "yes"})
    assert refused.status_code == 400 and "includeHistoricalProtocol" in refused.json()["message"]


def test_a_share_without_history_serves_the_latest_version_only(server: RunningServer, provider: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    """history_data_sharing_status absent means DISABLED: time travel, streaming and the change data feed are
    refused with the protocol's INVALID_PARAMETER_VALUE; enabling history (with a start_version) opens them from
    that version on."""
    recipient = share_with(server, "latest_only", "nohistory", ["main.lake.orders", "main.lake.events"],
                           history=False)
    path, profile = activate(recipient, tmp_path)
    url = f"{path}#latest_only.lake.orders"
    assert sorted(delta_sharing.load_as_pandas(url)["id"].tolist()) == [1, 2, 3, 4]
    with pytest.raises(Exception, match="history sharing is not enabled"):
        delta_sharing.load_as_pandas(url, version=1)
    with pytest.raises(Exception, match="cdf is not enabled"):
        delta_sharing.load_table_changes_as_pandas(url, starting_version=1)
    for name in ("orders", "events"):
        table = f"/shares/latest_only/schemas/lake/tables/{name}"
        refused = [ds(server, profile, "POST", f"{table}/query", json={"version": 1}),
                   ds(server, profile, "POST", f"{table}/query", json={"timestamp": "2030-01-01T00:00:00Z"}),
                   ds(server, profile, "POST", f"{table}/query", json={"startingVersion": 1}),
                   ds(server, profile, "GET", f"{table}/metadata", params={"version": "1"}),
                   ds(server, profile, "GET", f"{table}/version", params={"startingTimestamp": "2000-01-01T00:00:00Z"}),
                   ds(server, profile, "GET", f"{table}/changes", params={"startingVersion": "1"})]
        for answer in refused:
            assert answer.status_code == 400, answer.text
            assert answer.json()["errorCode"] == "INVALID_PARAMETER_VALUE"
        assert ds(server, profile, "POST", f"{table}/query", json={}).status_code == 200

    # cdf_enabled alone opens the change data feed (from a timestamp too), not time travel.
    assert uc(server, "PATCH", "/shares/latest_only", json={"updates": [{"action": "UPDATE", "data_object": {
        "name": "main.lake.orders", "cdf_enabled": True}}]}).status_code == 200
    table = "/shares/latest_only/schemas/lake/tables/orders"
    assert ds(server, profile, "GET", f"{table}/changes",
              params={"startingTimestamp": "2000-01-01T00:00:00Z"}).status_code == 200
    assert ds(server, profile, "POST", f"{table}/query", json={"version": 1}).status_code == 400

    # Enabled from version 2 on: version 2 and later are readable, version 1 is not.
    assert uc(server, "PATCH", "/shares/latest_only", json={"updates": [{"action": "UPDATE", "data_object": {
        "name": "main.lake.orders", "history_data_sharing_status": "ENABLED", "start_version": 2}}]}).status_code == 200
    assert sorted(delta_sharing.load_as_pandas(url, version=2)["id"].tolist()) == [1, 2, 4]
    changes = delta_sharing.load_table_changes_as_pandas(url, starting_version=2)
    assert sorted(set(changes["_commit_version"])) == [2, 3]
    with pytest.raises(Exception, match="starts at version 2"):
        delta_sharing.load_as_pandas(url, version=1)
    assert ds(server, profile, "GET", "/shares/latest_only/schemas/lake/tables/orders/changes",
              params={"startingVersion": "1"}).status_code == 400
    bad = uc(server, "PATCH", "/shares/latest_only", json={"updates": [{"action": "UPDATE", "data_object": {
        "name": "main.lake.orders", "history_data_sharing_status": "SOMETIMES"}}]})
    assert bad.status_code == 400


def test_a_table_shared_with_a_partition_filter_serves_only_the_admitted_partitions(
        server: RunningServer, provider: dict[str, Any], tmp_path: Path) -> None:
    """The provider shares region 'eu' of orders (Databricks' ``partitions`` spelling): the recipient's reads, time
    travel and change feed see those files only, and direct storage access is not offered."""
    recipient = share_with(server, "eu_only", "eu_reader", [])
    eu = [{"values": [{"name": "region", "op": "EQUAL", "value": "eu"}]}]
    added = uc(server, "PATCH", "/shares/eu_only", json={"updates": [{"action": "ADD", "data_object": {
        "name": "main.lake.orders", "history_data_sharing_status": "ENABLED", "partitions": eu}}]})
    assert added.status_code == 200, added.text
    shared = uc(server, "GET", "/shares/eu_only", params={"include_shared_data": "true"}).json()["objects"][0]
    assert shared["partition_specification"] == {"partitions": eu} and shared["partitions"] == eu
    path, profile = activate(recipient, tmp_path)
    url = f"{path}#eu_only.lake.orders"
    frame = delta_sharing.load_as_pandas(url)
    assert sorted(frame["id"].tolist()) == [1, 2] and set(frame["region"]) == {"eu"}
    assert sorted(delta_sharing.load_as_pandas(url, version=1)["id"].tolist()) == [1, 2]
    changes = delta_sharing.load_table_changes_as_pandas(url, starting_version=0, ending_version=3)
    assert sorted(zip(changes["_change_type"], changes["id"], strict=True)) == [("insert", 1), ("insert", 2)]
    lines = ndjson(ds(server, profile, "POST", "/shares/eu_only/schemas/lake/tables/orders/query", json={}))
    eu_files = [line["file"] for line in lines if "file" in line]
    assert {f["partitionValues"]["region"] for f in eu_files} == {"eu"}
    # The size of what is shared, not of the whole table (which would tell how much is kept back).
    assert (lines[1]["metaData"]["numFiles"], lines[1]["metaData"]["size"]) == (
        len(eu_files), sum(f["size"] for f in eu_files))
    described = ndjson(ds(server, profile, "GET", "/shares/eu_only/schemas/lake/tables/orders/metadata"))
    assert described[1]["metaData"]["numFiles"] == len(eu_files)
    travelled = ndjson(ds(server, profile, "POST", "/shares/eu_only/schemas/lake/tables/orders/query",
                          json={"version": 1}))
    assert travelled[1]["metaData"]["numFiles"] == len([line for line in travelled if "file" in line])
    whole = ndjson(ds(server, provider["profile"], "POST", "/shares/sales/schemas/lake/tables/orders/query",
                      json={}))
    assert whole[1]["metaData"]["numFiles"] > len(eu_files)
    listed = ds(server, profile, "GET", "/shares/eu_only/all-tables").json()["items"]
    assert listed[0]["accessModes"] == ["url"]  # no directory access: it would reach every partition

    refused = uc(server, "PATCH", "/shares/eu_only", json={"updates": [{"action": "UPDATE", "data_object": {
        "name": "main.lake.orders", "partition_specification": "region = 'eu'"}}]})
    assert refused.status_code == 400 and "partition" in refused.json()["message"]
    us = {"partitions": [{"values": [{"name": "region", "op": "LIKE", "value": "u%"}]}]}
    assert uc(server, "PATCH", "/shares/eu_only", json={"updates": [{"action": "UPDATE", "data_object": {
        "name": "main.lake.orders", "partition_specification": us}}]}).status_code == 200
    assert set(delta_sharing.load_as_pandas(url)["region"]) == {"us"}


@pytest.mark.parametrize("body", [{"updates": ["ADD"]}, {"updates": [{"action": "ADD", "data_object": "x"}]},
                                  {"updates": 5}, {"updates": 0}, {"updates": ""}, {"updates": False},
                                  {"updates": [{"action": "ADD", "data_object": 0}]},
                                  {"updates": [{"action": "ADD", "data_object": False}]},
                                  {"objects": ["main.lake.orders"]}])
def test_share_updates_of_the_wrong_shape_are_refused(server: RunningServer, body: dict[str, Any]) -> None:
    uc(server, "POST", "/shares", json={"name": "shapes"})
    before = uc(server, "GET", "/shares/shapes").json()
    answer = uc(server, "PATCH", "/shares/shapes", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error_code"] == "INVALID_PARAMETER_VALUE"
    assert uc(server, "GET", "/shares/shapes").json() == before


def test_iceberg_changes_cap_an_ending_version_past_the_latest(server: RunningServer,
                                                              provider: dict[str, Any]) -> None:
    table = "/shares/sales/schemas/lake/tables/events"
    latest = int(ds(server, provider["profile"], "GET", f"{table}/version").headers["delta-table-version"])
    capped = ds(server, provider["profile"], "GET", f"{table}/changes",
                params={"startingVersion": str(latest - 1), "endingVersion": str(latest + 5)})
    exact = ds(server, provider["profile"], "GET", f"{table}/changes",
               params={"startingVersion": str(latest - 1), "endingVersion": str(latest)})
    assert capped.status_code == exact.status_code == 200, capped.text
    assert [json.loads(x)["add"]["version"] for x in capped.text.splitlines()[2:]] == \
        [json.loads(x)["add"]["version"] for x in exact.text.splitlines()[2:]]
    after = ds(server, provider["profile"], "GET", f"{table}/changes", params={"startingVersion": str(latest + 1)})
    assert after.status_code == 400 and after.json()["errorCode"] == "INVALID_PARAMETER_VALUE"


ESCAPED = ["a b", "x/y", "=", "é", "%20", "plain"]


def _register(server: RunningServer, schema: str, name: str, data: pa.Table, partition_by: list[str],
              columns: list[tuple[str, str, str]], configuration: dict[str, str | None] | None = None) -> str:
    """A managed Delta table written by deltalake at the location UC staged for it (columns: name, type, text)."""
    staging = uc(server, "POST", "/staging-tables", json={"name": name, "catalog_name": "main",
                                                          "schema_name": schema}).json()
    location = staging["staging_location"]
    write_deltalake(location, data, partition_by=partition_by, configuration=configuration)
    made = uc(server, "POST", "/tables", json={
        "name": name, "catalog_name": "main", "schema_name": schema, "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": location, "columns": [
            {"name": n, "type_name": t, "type_text": x, "position": i, "type_json": "{}"}
            for i, (n, t, x) in enumerate(columns)]})
    assert made.status_code == 200, made.text
    return location


def _log_adds(location: str) -> list[dict[str, Any]]:
    log = Path(location.removeprefix("file://")) / "_delta_log"
    return [json.loads(line)["add"] for p in sorted(log.glob("*.json"))
            for line in p.read_text().splitlines() if line.startswith('{"add"')]


def test_the_change_feed_serves_the_writers_change_data_files_under_escaped_folders(server: RunningServer,
                                                                                      warehouse: Path) -> None:
    """A version whose writer recorded its change data (cdc actions, as with delta.enableChangeDataFeed) is answered
    with those files, partition values as the log has them; deltalake's own change-feed reader fails on a cdc file
    under an escaped partition folder, which was a 500 here."""
    assert uc(server, "POST", "/schemas", json={"name": "oddcdf", "catalog_name": "main"}).status_code == 200
    location = _register(server, "oddcdf", "t", pa.table({
        "id": pa.array(range(len(ESCAPED)), pa.int64()), "s": pa.array(ESCAPED)}), ["s"],
        [("id", "LONG", "bigint"), ("s", "STRING", "string")], {"delta.enableChangeDataFeed": "true"})
    DeltaTable(location).delete("id = 0 or id = 1")  # rows of 'a b' and 'x/y': version 1, with cdc files
    assert any('"cdc"' in line for line in (Path(location.removeprefix("file://")) / "_delta_log" /
                                            f"{1:020d}.json").read_text().splitlines())
    profile_path, profile = activate(share_with(server, "oddcdf_share", "oddcdf_reader", ["main.oddcdf.t"]),
                                     warehouse.parent)
    url = f"{profile_path}#oddcdf_share.oddcdf.t"
    changes = delta_sharing.load_table_changes_as_pandas(url, starting_version=0)
    assert sorted(zip(changes["_commit_version"], changes["_change_type"], changes["id"], changes["s"],
                      strict=True)) == [*((0, "insert", i, v) for i, v in enumerate(ESCAPED)),
                                        (1, "delete", 0, "a b"), (1, "delete", 1, "x/y")]
    lines = ndjson(ds(server, profile, "GET", "/shares/oddcdf_share/schemas/oddcdf/tables/t/changes",
                      params={"startingVersion": "1"}))
    cdf = [line["cdf"] for line in lines if "cdf" in line]
    assert sorted(c["partitionValues"]["s"] for c in cdf) == ["a b", "x/y"]
    assert all(httpx.head(c["url"]).status_code == 200 for c in cdf)


def test_a_table_whose_log_names_files_elsewhere_is_not_served(server: RunningServer, provider: dict[str, Any],
                                                                warehouse: Path) -> None:
    """A table's writer controls its log: an add naming another table's file, or any file the server can read (its
    own signing keys), must not become a signed URL. The table is refused whole, and nothing is signed."""
    assert uc(server, "POST", "/schemas", json={"name": "exfil", "catalog_name": "main"}).status_code == 200
    victim = next(Path(provider["location"].removeprefix("file://")).rglob("*.parquet")).as_uri()
    keys = (warehouse / "_catalog").as_uri()
    for n, target in enumerate([victim, f"{keys}/sharing/url-signing-key", "../orders/x.parquet"]):
        location = _register(server, "exfil", f"t{n}", pa.table({"id": pa.array([1], pa.int64())}), [],
                             [("id", "LONG", "bigint")])
        (Path(location.removeprefix("file://")) / "_delta_log" / f"{1:020d}.json").write_text(json.dumps({"add": {
            "path": target, "partitionValues": {}, "size": 10, "modificationTime": 1, "dataChange": True}}) + "\n")
        _, profile = activate(share_with(server, f"exfil{n}", f"exfil_reader{n}", [f"main.exfil.t{n}"]),
                              warehouse.parent)
        table = f"/shares/exfil{n}/schemas/exfil/tables/t{n}"
        for answer in (ds(server, profile, "POST", f"{table}/query", json={}),
                       ds(server, profile, "POST", f"{table}/query", json={"startingVersion": 0})):
            assert answer.status_code == 403, answer.text
            assert "outside the table's location" in answer.json()["message"]
            assert "files/" not in answer.text and str(warehouse) not in answer.text


def test_files_under_escaped_partition_directories_are_served(server: RunningServer, warehouse: Path) -> None:
    """A Delta log percent-encodes the paths of its files (the directory ``s=%3D`` is ``s=%253D`` in the log, a
    timestamp partition always has a space and colons): the client reads every file, as deltalake reads the
    table, and timestamp partition values keep their fraction of a second."""
    assert uc(server, "POST", "/schemas", json={"name": "odd", "catalog_name": "main"}).status_code == 200
    strings = _register(server, "odd", "strings", pa.table({
        "id": pa.array(range(len(ESCAPED)), pa.int64()), "s": pa.array(ESCAPED)}), ["s"],
        [("id", "LONG", "bigint"), ("s", "STRING", "string")])
    at = [datetime(2024, 1, 1, 12, 0, 0, 123456, tzinfo=UTC), datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC),
          datetime(2024, 6, 30, 23, 59, 59, 500000, tzinfo=UTC)]
    stamps = _register(server, "odd", "stamps", pa.table({
        "id": pa.array([1, 2, 3], pa.int64()), "at": pa.array(at, pa.timestamp("us", tz="UTC"))}), ["at"],
        [("id", "LONG", "bigint"), ("at", "TIMESTAMP", "timestamp")])
    profile_path, profile = activate(share_with(server, "odd_share", "odd_reader", ["main.odd.strings",
                                                                                    "main.odd.stamps"]),
                                     warehouse.parent)

    got = delta_sharing.load_as_pandas(f"{profile_path}#odd_share.odd.strings").sort_values("id")
    expected = DeltaTable(strings).to_pandas().sort_values("id")
    assert got["id"].tolist() == expected["id"].tolist() == list(range(len(ESCAPED)))
    assert got["s"].tolist() == expected["s"].tolist() == ESCAPED

    got = delta_sharing.load_as_pandas(f"{profile_path}#odd_share.odd.stamps").sort_values("id")
    expected = DeltaTable(stamps).to_pandas().sort_values("id")
    assert [t.tz_localize(None) if t.tzinfo is None else t.tz_convert(None) for t in got["at"]] == \
        [t.tz_convert(None) for t in expected["at"]] == [t.replace(tzinfo=None) for t in at]

    table = "/shares/odd_share/schemas/odd/tables/stamps"
    files = [line["file"] for line in ndjson(ds(server, profile, "POST", f"{table}/query", json={}))[2:]]
    assert sorted(f["partitionValues"]["at"] for f in files) == [
        "2024-01-01 12:00:00", "2024-01-01 12:00:00.123456", "2024-06-30 23:59:59.500000"]
    assert all(httpx.head(f["url"]).status_code == 200 for f in files)
    # The delta format: the partition values and modification times as the log has them.
    delta = ndjson(ds(server, profile, "POST", f"{table}/query", json={},
                      headers={"delta-sharing-capabilities": "responseformat=delta"}))[2:]
    adds = [line["file"]["deltaSingleAction"]["add"] for line in delta]
    log = _log_adds(stamps)
    assert sorted(json.dumps(a["partitionValues"]) for a in adds) == sorted(
        json.dumps(a["partitionValues"]) for a in log)
    assert sorted(a["modificationTime"] for a in adds) == sorted(a["modificationTime"] for a in log)
    assert all(a["modificationTime"] > 0 for a in adds)


def test_old_versions_carry_their_own_commit_timestamps(server: RunningServer, provider: dict[str, Any]) -> None:
    """Time travel by version: each file's timestamp is that version's commit time (deltalake numbers an old
    version's own history wrongly), and the delta format's modificationTime is the log's."""
    log = Path(provider["location"].removeprefix("file://")) / "_delta_log"
    commits = {int(p.stem): json.loads(p.read_text().splitlines()[0])["commitInfo"]["timestamp"]
               for p in log.glob("*.json")}
    table = "/shares/sales/schemas/lake/tables/orders"
    for version in (0, 1, 2):
        files = ndjson(ds(server, provider["profile"], "POST", f"{table}/query", json={"version": version}))[2:]
        assert {f["file"]["timestamp"] for f in files} == {commits[version]}, version
        delta = ndjson(ds(server, provider["profile"], "POST", f"{table}/query", json={"version": version},
                          headers={"delta-sharing-capabilities": "responseformat=delta"}))[2:]
        assert {f["file"]["timestamp"] for f in delta} == {commits[version]}, version
        logged = {a["modificationTime"] for a in _log_adds(provider["location"])}
        assert {f["file"]["deltaSingleAction"]["add"]["modificationTime"] for f in delta} <= logged


def test_change_data_of_one_partition_names_it(server: RunningServer, provider: dict[str, Any]) -> None:
    """Version 2 deleted id 3, in region 'us': its change data file is that partition's, in both formats (a Delta
    reader takes partition columns from the action)."""
    table = "/shares/sales/schemas/lake/tables/orders"
    parquet = ndjson(ds(server, provider["profile"], "GET", f"{table}/changes",
                        params={"startingVersion": "2", "endingVersion": "2"}))[2:]
    assert [(next(iter(line)), next(iter(line.values()))["partitionValues"]) for line in parquet] == [
        ("cdf", {"region": "us"})]
    delta = ndjson(ds(server, provider["profile"], "GET", f"{table}/changes",
                      params={"startingVersion": "2", "endingVersion": "2"},
                      headers={"delta-sharing-capabilities": "responseformat=delta"}))[2:]
    assert [line["file"]["deltaSingleAction"]["cdc"]["partitionValues"] for line in delta] == [{"region": "us"}]


def test_iceberg_starting_timestamps_and_change_feed_configuration(server: RunningServer,
                                                                    provider: dict[str, Any]) -> None:
    """startingTimestamp is the earliest version at or after it, one before the first version included (the
    protocol's "can be earlier than the timestamp of table version 0"); both formats say the change feed is
    readable."""
    profile = provider["profile"]
    table = "/shares/sales/schemas/lake/tables/events"
    snapshots = sorted(provider["iceberg"].metadata.snapshots, key=lambda s: s.sequence_number)
    first, second = snapshots[0], snapshots[1]

    def version_from(ms: int) -> httpx.Response:
        stamp = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return ds(server, profile, "GET", f"{table}/version", params={"startingTimestamp": stamp})

    assert version_from(first.timestamp_ms - 86_400_000).headers["delta-table-version"] == \
        str(first.sequence_number)
    assert version_from(first.timestamp_ms).headers["delta-table-version"] == str(first.sequence_number)
    if second.timestamp_ms > first.timestamp_ms + 1:
        assert version_from(first.timestamp_ms + 1).headers["delta-table-version"] == str(second.sequence_number)
    assert version_from(second.timestamp_ms + 86_400_000).status_code == 400
    changes = ds(server, profile, "GET", f"{table}/changes", params={"startingTimestamp": "2000-01-01T00:00:00Z"})
    assert changes.status_code == 200, changes.text
    assert {line["add"]["version"] for line in ndjson(changes)[2:]} == {first.sequence_number,
                                                                       second.sequence_number}

    parquet = ndjson(ds(server, profile, "GET", f"{table}/metadata"))[1]["metaData"]
    delta = ndjson(ds(server, profile, "GET", f"{table}/metadata",
                      headers={"delta-sharing-capabilities": "responseformat=delta"}))[1]["metaData"]
    assert parquet["configuration"] == {"enableChangeDataFeed": "true"}
    assert delta["deltaMetadata"]["configuration"] == {"delta.enableChangeDataFeed": "true"}


def test_listings_page_and_refuse_bad_input(server: RunningServer, provider: dict[str, Any]) -> None:
    profile = provider["profile"]
    first = ds(server, profile, "GET", "/shares/sales/all-tables", params={"maxResults": 1}).json()
    assert len(first["items"]) == 1 and first["nextPageToken"]
    second = ds(server, profile, "GET", "/shares/sales/all-tables",
                params={"maxResults": 1, "pageToken": first["nextPageToken"]}).json()
    assert [i["name"] for i in first["items"] + second["items"]] == ["events", "orders"]
    assert "nextPageToken" not in second
    assert second["items"][0]["shareId"] and second["items"][0]["id"]
    for path in ("/shares", "/shares/sales", "/shares/sales/schemas", "/shares/sales/all-tables",
                 "/shares/sales/schemas/lake/tables"):
        assert ds(server, profile, "GET", path).headers["content-type"] == "application/json; charset=utf-8", path
    # A local directory has no cloud credential to give: URL access only, and no storage location shown.
    assert all(item["accessModes"] == ["url"] and "location" not in item for item in first["items"] + second["items"])
    assert ds(server, profile, "GET", "/shares", params={"maxResults": 10**12}).status_code == 200
    assert ds(server, profile, "GET", "/shares", params={"maxResults": 0}).json()["items"] == []
    for bad in ({"maxResults": -1}, {"maxResults": "many"}, {"pageToken": first["nextPageToken"]},
                {"pageToken": "garbage!"}):
        refused = ds(server, profile, "GET", "/shares", params=bad)
        assert refused.status_code == 400 and refused.json()["errorCode"] == "INVALID_PARAMETER_VALUE", bad
    assert [s["name"] for s in ds(server, profile, "GET", "/shares/sales/schemas").json()["items"]] == ["lake"]
    for path in ("/shares/nope", "/shares/nope/schemas", "/shares/sales/schemas/nope/tables",
                 "/shares/sales/schemas/lake/tables/nope/version", "/shares/sales/schemas/lake/tables/nope/metadata",
                 "/shares/a%20b/schemas", "/shares/sales/schemas/lake/tables/" + "x" * 300 + "/version",
                 "/shares/sales/nothing", "/shares/sales/schemas/lake/tables/orders/nothing"):
        missing = ds(server, profile, "GET", path)
        assert missing.status_code == 404, path
        assert missing.json()["errorCode"] == "RESOURCE_DOES_NOT_EXIST" and set(missing.json()) == {
            "errorCode", "message"}, path
    assert ds(server, profile, "POST", "/shares/sales/schemas/lake/tables/nope/query", json={}).status_code == 404
    not_cdf = ds(server, profile, "GET", "/shares/sales/schemas/lake/tables/orders/changes")
    assert not_cdf.status_code == 400  # startingVersion is required


def test_links_and_endpoints_come_from_the_external_url_never_the_host_header(warehouse: Path,
                                                                             provider: dict[str, Any]) -> None:
    """Also: tokens made by a server with --recipient-token-lifetime expire, and their profile says when (by
    default they never expire and the profile has no expirationTime)."""
    assert "expirationTime" not in provider["profile"]
    with arco_server(warehouse, warehouse.parent, admin_token=ARCO_TOKEN,
                     extra_args=("--external-url", "https://sharing.example.com/",
                                 "--recipient-token-lifetime", "7200")) as other:
        made = httpx.post(f"{other.base_url}/api/2.1/unity-catalog/recipients", timeout=30,
                          headers={"Authorization": f"Bearer {ARCO_TOKEN}", "Host": "evil.example.net"},
                          json={"name": "hosted", "authentication_type": "TOKEN"})
        assert made.status_code == 200, made.text
        link = made.json()["tokens"][0]["activation_url"]
        assert link.startswith("https://sharing.example.com/api/2.1/unity-catalog/public/data_sharing_activation/")
        local_link = link.replace("https://sharing.example.com", other.base_url)
        profile = httpx.get(local_link, headers={"Host": "evil.example.net"}, timeout=30).json()
        assert profile["endpoint"] == "https://sharing.example.com/delta-sharing/"
        expires = datetime.strptime(profile["expirationTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert abs(expires.timestamp() - (time.time() + 7200)) < 120
        assert made.json()["tokens"][0]["expiration_time"] == pytest.approx(expires.timestamp() * 1000, abs=1000)
        parsed = DeltaSharingProfile.from_json(json.dumps(profile))  # the client reads the field
        assert parsed.expiration_time == profile["expirationTime"]


# -- recipients' credentials -------------------------------------------------------------------------------------

def test_tokens_ip_lists_and_grants_decide_access(server: RunningServer, provider: dict[str, Any],
                                                  warehouse: Path) -> None:
    assert httpx.get(f"{server.base_url}/delta-sharing/shares").status_code == 401
    wrong = httpx.get(f"{server.base_url}/delta-sharing/shares", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["errorCode"] == "UNAUTHENTICATED"
    admin = httpx.get(f"{server.base_url}/delta-sharing/shares", headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    assert admin.status_code == 401  # an Arco principal's token is not a recipient's
    # the activation link is shown once and stored only hashed: neither it nor the token is in the catalog
    activation = provider["recipient"]["tokens"][0]["activation_url"].rsplit("/", 1)[-1]
    catalog_text = b"".join(p.read_bytes() for p in (warehouse / "_catalog").rglob("*") if p.is_file())
    assert activation.encode() not in catalog_text and provider["profile"]["bearerToken"].encode() not in catalog_text
    assert httpx.get(provider["recipient"]["tokens"][0]["activation_url"]).status_code == 404  # used already

    outsider = share_with(server, "walled", "outsider", ["main.lake.orders"],
                          ip_access_list={"allowed_ip_addresses": ["10.0.0.0/8"]})
    _, outsider_profile = activate(outsider, warehouse.parent)
    blocked = ds(server, outsider_profile, "GET", "/shares")
    assert blocked.status_code == 403 and blocked.json()["errorCode"] == "PERMISSION_DENIED"
    # a forwarding header is nobody's word unless the server was told to believe the proxy it comes from
    forged = ds(server, outsider_profile, "GET", "/shares", headers={"X-Forwarded-For": "10.1.2.3"})
    assert forged.status_code == 403 and "127.0.0.1" in forged.json()["message"]
    assert uc(server, "PATCH", "/recipients/outsider", json={
        "ip_access_list": {"allowed_ip_addresses": ["127.0.0.1"]}}).status_code == 200
    assert [s["name"] for s in ds(server, outsider_profile, "GET", "/shares").json()["items"]] == ["walled"]

    # a revoked grant hides the share at once
    assert uc(server, "PATCH", "/shares/walled/permissions", json={"changes": [
        {"principal": "outsider", "remove": ["SELECT"]}]}).status_code == 200
    assert ds(server, outsider_profile, "GET", "/shares").json()["items"] == []
    assert ds(server, outsider_profile, "GET", "/shares/walled").status_code == 404
    lost = ds(server, outsider_profile, "POST", "/shares/walled/schemas/lake/tables/orders/query", json={})
    assert lost.status_code == 404

    # rotation: the old token works until the expiry it was given, then 401; the new one works
    rotator = share_with(server, "rotating", "rotator", ["main.lake.orders"])
    _, old_profile = activate(rotator, warehouse.parent)
    rotated = uc(server, "POST", "/recipients/rotator/rotate-token",
                 json={"existing_token_expire_in_seconds": 3}).json()
    _, new_profile = activate(rotated, warehouse.parent)
    assert ds(server, old_profile, "GET", "/shares").status_code == 200
    time.sleep(3.5)
    expired = ds(server, old_profile, "GET", "/shares")
    assert expired.status_code == 401 and expired.json()["errorCode"] == "UNAUTHENTICATED"
    assert [s["name"] for s in ds(server, new_profile, "GET", "/shares").json()["items"]] == ["rotating"]


def test_a_trusted_proxy_s_forwarded_address_is_the_one_ip_lists_check(warehouse: Path,
                                                                       provider: dict[str, Any]) -> None:
    """Behind a reverse proxy named by --forwarded-allow-ips, X-Forwarded-For carries the caller's address."""
    with arco_server(warehouse, warehouse.parent, admin_token=ARCO_TOKEN,
                     extra_args=("--forwarded-allow-ips", "127.0.0.1")) as proxied:
        recipient = share_with(proxied, "proxied", "remote", ["main.lake.orders"],
                               ip_access_list={"allowed_ip_addresses": ["10.0.0.0/8"]})
        _, profile = activate(recipient, warehouse.parent)
        assert ds(proxied, profile, "GET", "/shares").status_code == 403  # the proxy's own address
        through = ds(proxied, profile, "GET", "/shares", headers={"X-Forwarded-For": "10.1.2.3"})
        assert [s["name"] for s in through.json()["items"]] == ["proxied"]
        outside = ds(proxied, profile, "GET", "/shares", headers={"X-Forwarded-For": "192.0.2.7"})
        assert outside.status_code == 403 and "192.0.2.7" in outside.json()["message"]


# -- signed file URLs --------------------------------------------------------------------------------------------

def test_signed_file_urls_open_one_file_until_they_expire(server: RunningServer, provider: dict[str, Any],
                                                          warehouse: Path) -> None:
    profile = provider["profile"]
    lines = ndjson(ds(server, profile, "POST", "/shares/sales/schemas/lake/tables/orders/query", json={}))
    urls = [line["file"]["url"] for line in lines[2:]]
    assert all(u.startswith(f"{server.base_url}/delta-sharing/files/") for u in urls)
    whole = httpx.get(urls[0])  # no bearer token: the signature is the credential
    assert whole.status_code == 200 and whole.content[:4] == b"PAR1"
    head = httpx.head(urls[0])
    assert head.status_code == 200 and int(head.headers["content-length"]) == len(whole.content)
    ranged = httpx.get(urls[0], headers={"Range": "bytes=0-3"})
    assert ranged.status_code == 206 and ranged.content == b"PAR1"
    tail = httpx.get(urls[0], headers={"Range": "bytes=-8"})
    assert tail.status_code == 206 and tail.content == whole.content[-8:]

    token_a = urls[0].split("/files/")[1].split("/")[0]
    token_b = urls[1].split("/files/")[1].split("/")[0]
    payload_a, mac_a = token_a.split(".")
    payload_b, _ = token_b.split(".")
    base = f"{server.base_url}/delta-sharing/files/"
    other_first = "B" if mac_a[0] == "A" else "A"  # a MAC that differs, whatever the signature was
    for forged in (f"{payload_b}.{mac_a}", f"{payload_a}.{other_first}{mac_a[1:]}", f"{payload_a[:-2]}xx.{mac_a}",
                   "x", "", f"{payload_a}."):
        refused = httpx.get(f"{base}{forged}/f.parquet")
        assert refused.status_code in (403, 404), forged
        if refused.status_code == 403:
            assert refused.json()["errorCode"] == "PERMISSION_DENIED"
    assert str(warehouse).encode() not in unb64(payload_a)  # the URL does not tell where the warehouse lies
    key = bytes.fromhex((warehouse / file_urls.KEY_PATH).read_text())
    file_url = file_urls.verify(key, token_a, int(time.time() * 1000)).url
    assert file_url.startswith(f"file://{warehouse}")
    expired = file_urls.sign(key, file_url, int(time.time() * 1000) - 1)
    assert httpx.get(f"{base}{expired}/f.parquet").status_code == 403
    other_key = file_urls.sign(b"k" * 32, file_url, int(time.time() * 1000) + 60_000)
    assert httpx.get(f"{base}{other_key}/f.parquet").status_code == 403


# -- consistency while the table changes -------------------------------------------------------------------------

def test_readers_see_one_consistent_version_while_the_table_is_appended_to(server: RunningServer,
                                                                           provider: dict[str, Any]) -> None:
    location = delta_table(server, "lake", "busy", cdf=False)
    recipient = share_with(server, "busy", "busy_reader", ["main.lake.busy"])
    profile_path, profile = activate(recipient, Path(provider["profile_path"]).parent)
    stop = threading.Event()

    def writer() -> None:
        for _ in range(40):  # a bounded writer: the point is commits landing between and during reads
            if stop.is_set():
                return
            write_deltalake(location, ROWS.slice(0, 1), mode="append")
            time.sleep(0.05)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        seen = set()
        for _ in range(8):
            answer = ds(server, profile, "POST", "/shares/busy/schemas/lake/tables/busy/query", json={})
            version = int(answer.headers["delta-table-version"])
            files = {line["file"]["size"] for line in ndjson(answer)[2:]}
            assert len(ndjson(answer)) - 2 == len(DeltaTable(location, version=version).file_uris())
            assert files
            seen.add(version)
            frame = delta_sharing.load_as_pandas(f"{profile_path}#busy.lake.busy")
            assert len(frame) >= 4
    finally:
        stop.set()
        thread.join()
    assert len(seen) > 1  # the writer did commit while recipients read


def test_iceberg_readers_see_one_consistent_version_while_it_is_appended_to(server: RunningServer,
                                                                           provider: dict[str, Any]) -> None:
    pytest.importorskip("arco.sharing.iceberg_source")
    catalog = RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    table = catalog.create_table("lake.ticks", schema=ROWS.schema)
    table.append(ROWS.slice(0, 1))
    recipient = share_with(server, "ticks", "ticks_reader", ["main.lake.ticks"])
    _, profile = activate(recipient, Path(provider["profile_path"]).parent)
    query = "/shares/ticks/schemas/lake/tables/ticks/query"
    first = int(ds(server, profile, "POST", query, json={}).headers["delta-table-version"])
    stop = threading.Event()

    def writer() -> None:
        appender = catalog.load_table("lake.ticks")
        for _ in range(15):
            if stop.is_set():
                return
            appender.append(ROWS.slice(0, 1))  # one file of one row per version

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        seen = set()
        for _ in range(10):
            answer = ds(server, profile, "POST", query, json={})
            version = int(answer.headers["delta-table-version"])
            files = ndjson(answer)[2:]
            assert len(files) == 1 + version - first  # exactly the files of the version the header names
            assert sum(json.loads(f["file"]["stats"])["numRecords"] for f in files) == len(files)
            seen.add(version)
    finally:
        stop.set()
        thread.join()
    assert len(seen) > 1


# -- audit and providers -----------------------------------------------------------------------------------------

def test_every_read_is_recorded_with_the_recipient_name(server: RunningServer, provider: dict[str, Any],
                                                        warehouse: Path) -> None:
    ds(server, provider["profile"], "POST", "/shares/sales/schemas/lake/tables/orders/query", json={})
    receipts = sorted((json.loads(p.read_text()) for p in (warehouse / "_catalog" / "events").glob(
        "*/sharing/committed/*")), key=lambda r: r["event_id"])  # uuid7: in time order
    reads = [r for r in receipts if r["recipient"] == "acme" and r["action"] == "queryTable"]
    assert reads and reads[-1]["share"] == "sales" and reads[-1]["table"] == "orders" and reads[-1]["version"] == 3
    assert {r["action"] for r in receipts} >= {"listShares", "listAllTables", "queryTable", "getTableVersion"}


def test_file_downloads_are_audited_per_recipient_in_compact_events(warehouse: Path, provider: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    """A server of its own, stopped at the end: its download tallies (one event per recipient and table per
    window) are written as the window closes or, at the latest, as it exits. The module's other server writes
    its own open window when that closes, maybe meanwhile: only windows opened here are this server's."""
    began = time.time() * 1000
    with arco_server(warehouse, warehouse.parent, admin_token=ARCO_TOKEN) as other:
        profile = {**provider["profile"], "endpoint": f"{other.base_url}/delta-sharing/"}
        path = tmp_path / "acme-other.share"
        path.write_text(json.dumps(profile))
        frame = delta_sharing.load_as_pandas(f"{path}#sales.lake.orders")
        assert len(frame) == 4
        answer = ds(other, profile, "POST", "/shares/sales/schemas/lake/tables/orders/query", json={})
        granted = {line["file"]["url"].rsplit("/", 1)[-1] for line in ndjson(answer)[2:]}
    receipts = [json.loads(p.read_text()) for p in (warehouse / "_catalog" / "events").glob("*/sharing/committed/*")]
    downloads = [r for r in receipts if r["action"] == "downloadFiles" and r["details"]["first_ms"] >= began]
    assert len(downloads) == 1  # many requests per file, several files: one compact event
    event = downloads[0]
    assert (event["recipient"], event["share"], event["schema"], event["table"]) == ("acme", "sales", "lake",
                                                                                     "orders")
    assert set(event["details"]["files"]) == granted and event["files"] == len(granted)
    assert event["details"]["requests"] > len(granted) and event["details"]["bytes"] > 0


def test_uc_lists_a_providers_shares_through_its_sharing_server(server: RunningServer,
                                                                provider: dict[str, Any]) -> None:
    made = uc(server, "POST", "/providers", json={"name": "ourselves", "authentication_type": "TOKEN",
                                                  "recipient_profile_str": json.dumps(provider["profile"])})
    assert made.status_code == 200, made.text
    listed = uc(server, "GET", "/providers/ourselves/shares")
    assert listed.status_code == 200, listed.text
    assert [s["name"] for s in listed.json()["shares"]] == ["sales"]


def test_cloud_credentials_are_offered_only_for_whole_delta_tables_and_need_cloud_storage(
        server: RunningServer, provider: dict[str, Any], tmp_path: Path) -> None:
    """Generate Temporary Table Credential: on a local directory there is nothing to vend (501); a table shared
    without its history, an Iceberg table, or a location outside the table is refused before that. Vending itself,
    on S3, is in test_vended_credentials.py."""
    table = "/shares/sales/schemas/lake/tables"
    local = ds(server, provider["profile"], "POST", f"{table}/orders/temporary-table-credentials")
    assert local.status_code == 501 and local.json()["errorCode"] == "NOT_IMPLEMENTED", local.text
    assert "query API" in local.json()["message"]
    outside = ds(server, provider["profile"], "POST", f"{table}/orders/temporary-table-credentials",
                 json={"location": tmp_path.as_uri()})
    assert outside.status_code == 403 and outside.json()["errorCode"] == "PERMISSION_DENIED"
    iceberg = ds(server, provider["profile"], "POST", f"{table}/events/temporary-table-credentials")
    assert iceberg.status_code == 400 and "not a Delta table" in iceberg.json()["message"]
    for body, code in ((b"[1]", "MALFORMED_REQUEST"), (b"{", "MALFORMED_REQUEST"),
                       (b'{"location": 7}', "INVALID_PARAMETER_VALUE")):
        bad = ds(server, provider["profile"], "POST", f"{table}/orders/temporary-table-credentials", content=body)
        assert (bad.status_code, bad.json()["errorCode"]) == (400, code), (body, bad.text)
    recipient = share_with(server, "no_history_files", "filesless", ["main.lake.orders"], history=False)
    _, profile = activate(recipient, tmp_path)
    refused = ds(server, profile, "POST", "/shares/no_history_files/schemas/lake/tables/orders/"
                                          "temporary-table-credentials")
    assert refused.status_code == 403 and "history is not shared" in refused.json()["message"]
    stranger = httpx.post(f"{server.base_url}/delta-sharing{table}/orders/temporary-table-credentials",
                          headers={"Authorization": "Bearer not-a-token"}, timeout=30)
    assert stranger.status_code == 401


def test_deletes_spanning_partitions_and_escaped_folders_reach_every_recipient_s_change_feed(
        server: RunningServer, tmp_path: Path) -> None:
    """A DELETE that dropped whole files in two partitions, one folder escaped (``p=x%2Fy``), with no change data of
    its writer's: deltalake cannot derive row changes under the escaped folder, and one derived file could not
    name a partition a filtered recipient may read. The version is answered file by file, each with its
    partition: every recipient sees its deletes, no 500."""
    assert uc(server, "POST", "/schemas", json={"name": "spans", "catalog_name": "main"}).status_code == 200
    staged = uc(server, "POST", "/staging-tables", json={"name": "t", "catalog_name": "main",
                                                         "schema_name": "spans"}).json()
    location = staged["staging_location"]
    write_deltalake(location, pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["x/y", "ok", "keep"]}),
                    partition_by=["p"], configuration={"delta.enableChangeDataFeed": "true"})
    DeltaTable(location).delete("p = 'x/y' OR p = 'ok'")  # version 1
    made = uc(server, "POST", "/tables", json={
        "name": "t", "catalog_name": "main", "schema_name": "spans", "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": location, "columns": [
            {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "type_json": "{}"},
            {"name": "p", "type_name": "STRING", "type_text": "string", "position": 1, "type_json": "{}"}]})
    assert made.status_code == 200, made.text
    whole = share_with(server, "spans_all", "spans_reader", ["main.spans.t"])
    filtered = share_with(server, "spans_ok", "spans_ok_reader", [])
    only_ok = [{"values": [{"name": "p", "op": "EQUAL", "value": "ok"}]}]
    assert uc(server, "PATCH", "/shares/spans_ok", json={"updates": [{"action": "ADD", "data_object": {
        "name": "main.spans.t", "history_data_sharing_status": "ENABLED", "partitions": only_ok}}]}).status_code == 200
    for recipient, share, expected in ((whole, "spans_all", {("delete", 1), ("delete", 2)}),
                                       (filtered, "spans_ok", {("delete", 2)})):
        path, _ = activate(recipient, tmp_path)
        changes = delta_sharing.load_table_changes_as_pandas(f"{path}#{share}.spans.t", starting_version=1,
                                                             ending_version=1)
        assert set(zip(changes["_change_type"], changes["id"], strict=True)) == expected, share
