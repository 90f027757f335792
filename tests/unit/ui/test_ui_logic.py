"""The web UI's pure parts: version sources, nested schema rows, charts, and the sign-in guards."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pyiceberg.types import ListType, LongType, MapType, NestedField, StringType, StructType

from arco.ui import charts, history, session
from arco.ui.table_page import schema_rows


def test_sources_are_classified_as_section_8_says() -> None:
    spark = history.classify({"kind": "iceberg_rest", "principal": "ann", "client_info": "Apache-HttpClient/5"},
                             {"engine-name": "spark", "engine-version": "3.5.9", "app-id": "local-1"})
    assert (spark.label, spark.engine, spark.app_id, spark.principal) == \
        ("External (Iceberg REST)", "Spark 3.5.9", "local-1", "ann")
    assert (spark.confidence_label, spark.quality_label) == ("declared, unverified", "not checked")
    run = history.classify({"kind": "pipeline", "run_id": "r1", "principal": "arco-pipeline"}, None)
    assert run.label == "Pipeline run #r1" and run.confidence_label == "verified"
    admin = history.classify({"kind": "admin_api", "user_id": "olga"}, None)
    assert admin.label == "Admin API" and admin.principal == "olga" and admin.lineage_confidence == "None"
    compacted = history.classify({"kind": "pipeline", "run_id": "r2"}, None, True, "Verified", "Passed")
    assert compacted.quality_label == "passed" and compacted.from_history
    assert history.UNKNOWN.label == "Unknown (no receipt yet)"


def test_versions_pair_each_metadata_file_with_the_snapshot_current_then() -> None:
    def snapshot(snapshot_id: int, at: int) -> SimpleNamespace:
        return SimpleNamespace(snapshot_id=snapshot_id, timestamp_ms=at,
                               summary=SimpleNamespace(operation=SimpleNamespace(value="append")))

    metadata = SimpleNamespace(
        metadata_log=[SimpleNamespace(metadata_file="s3://b/t/metadata/00000-a.metadata.json", timestamp_ms=100),
                      SimpleNamespace(metadata_file="s3://b/t/metadata/00001-b.metadata.json", timestamp_ms=200)],
        last_updated_ms=300,
        snapshot_log=[SimpleNamespace(timestamp_ms=200, snapshot_id=7), SimpleNamespace(timestamp_ms=300,
                                                                                         snapshot_id=8)],
        snapshots=[snapshot(7, 200), snapshot(8, 300)],
    )
    versions = history.versions_of(metadata, "s3://b/t/metadata/00002-c.metadata.json")  # type: ignore[arg-type]
    assert [(v.number, v.snapshot_id, v.current, v.operation) for v in versions] == \
        [(2, 8, True, "append"), (1, 7, False, "append"), (0, None, False, None)]
    older = {"s3://b/t/metadata/00000-old.metadata.json": (history.UNKNOWN, 50, None)}
    assert [v.at_ms for v in history.with_older(versions, older)] == [300, 200, 100, 50]


def test_nested_types_become_indented_rows() -> None:
    fields = [NestedField(1, "id", LongType(), required=True),
              NestedField(2, "who", StructType(NestedField(3, "tags", ListType(4, StringType())),
                                               NestedField(5, "attrs", MapType(6, StringType(), 7, LongType()))))]
    assert [(c.depth, c.name, c.type, c.required) for c in schema_rows(fields)] == [
        (0, "id", "long", True), (0, "who", "struct", False), (1, "tags", "list", False),
        (2, "element", "string", True), (1, "attrs", "map", False), (2, "key", "string", True),
        (2, "value", "long", True)]


def test_charts_scale_to_the_view_box() -> None:
    lines = charts.line_charts([(2, {"total-records": "20", "total-files-size": "2048"}),
                                (1, {"total-records": "10", "total-files-size": "1024"})])
    assert [c.title for c in lines] == ["rows", "bytes"]
    assert lines[0].points == "4.0,60.0 596.0,4.0" and lines[1].latest == "2.0 KiB"
    day = 86_400_000
    activity = charts.activity_chart([0, 10, 2 * day])
    assert activity is not None and len(activity.bars) == 3
    assert [b.label for b in activity.bars] == ["1970-01-01: 2 commits", "1970-01-02: 0 commits",
                                                "1970-01-03: 1 commit"]
    assert charts.activity_chart([]) is None


@pytest.mark.parametrize(("raw", "expected"), [
    ("/tables/a.b.c", "/tables/a.b.c"), (None, "/"), ("", "/"), ("//evil.example", "/"),
    ("https://evil.example/", "/"), ("/\\evil.example", "/"), ("tables", "/"),
])
def test_only_local_paths_follow_a_sign_in(raw: str | None, expected: str) -> None:
    assert session.safe_next(raw) == expected


@pytest.mark.parametrize(("headers", "allowed"), [
    ({}, True),
    ({"sec-fetch-site": "same-origin"}, True),
    ({"sec-fetch-site": "none"}, True),
    ({"sec-fetch-site": "cross-site"}, False),
    ({"sec-fetch-site": "same-site"}, False),
    ({"origin": "http://arco:8181", "host": "arco:8181"}, True),
    ({"origin": "http://evil:8181", "host": "arco:8181"}, False),
    ({"origin": "null", "host": "arco:8181"}, False),
])
def test_sign_in_posts_must_come_from_the_ui_itself(headers: dict[str, str], allowed: bool) -> None:
    request = SimpleNamespace(headers=headers)
    assert session.same_origin(request) is allowed  # type: ignore[arg-type]


def test_sources_come_from_the_compacted_timeline_first_then_from_live_receipts() -> None:
    import uuid

    import orjson

    from arco.events.receipts import iceberg_receipt_key
    from arco.pipeline import rows
    from arco.pipeline.checkpoint import CompactState, commit_batch
    from arco.pipeline.parquet_io import write_rows
    from arco.storage.memory import MemoryBackend

    storage = MemoryBackend(f"ui-{uuid.uuid4().hex}")
    table_uuid, old, new = "t-1", "s3://b/t/metadata/00001-a.metadata.json", "s3://b/t/metadata/00002-b.metadata.json"
    receipt = {"event_type": "IcebergCommitCommitted", "event_id": "e1", "commit_key": "k", "table_uuid": table_uuid,
               "metadata_location": old, "last_updated_ms": 1_000, "snapshot_id": 5, "operation": "append",
               "source": {"kind": "pipeline", "run_id": "r9", "principal": "arco-pipeline"}}
    key = "_catalog/history/timeline/batch=b1/part-00000.parquet"
    write_rows(storage, key, [rows.timeline_row("rk", receipt, {table_uuid})], rows.TIMELINE)
    commit_batch(storage, CompactState(), {"batch_id": "b1", "run_id": "r9", "files": {"timeline": [key]}})
    live = {"source": {"kind": "iceberg_rest", "principal": "ann", "client_info": "PyIceberg/0.12.0"},
            "summary": {"operation": "overwrite"}, "operation": "overwrite", "snapshot_id": 6}
    storage.put(iceberg_receipt_key("committed", new, 2_000), orjson.dumps(live))

    compacted = history.compacted_sources(storage, table_uuid)
    assert set(compacted) == {old}
    versions = [history.Version(2, new, 2_000, True), history.Version(1, old, 1_000, False),
                history.Version(0, "s3://b/t/metadata/00000-c.metadata.json", 500, False)]
    history.attach_sources(storage, versions, compacted)
    assert [(v.source.label, v.source.from_history) for v in versions] == [
        ("External (Iceberg REST)", False), ("Pipeline run #r9", True), ("Unknown (no receipt yet)", False)]
    assert versions[0].source.client == "PyIceberg/0.12.0" and versions[0].operation == "overwrite"
