"""The web UI's pure parts: version sources, nested schema rows, charts, and the sign-in guards."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pyiceberg.types import ListType, LongType, MapType, NestedField, StringType, StructType

from arco.ui import charts, history, session
from arco.ui.table_page import main_ancestry, schema_rows


def test_sources_are_classified_as_section_8_says() -> None:
    spark = history.classify({"kind": "iceberg_rest", "principal": "ann", "client_info": "Apache-HttpClient/5"},
                             {"engine-name": "spark", "engine-version": "3.5.9", "app-id": "local-1"})
    assert (spark.label, spark.engine, spark.app_id, spark.principal) == \
        ("External (Iceberg REST)", "spark 3.5.9", "local-1", "ann")
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
    older = {"s3://b/t/metadata/00000-old.metadata.json": history.Compacted(history.UNKNOWN, 50, None, "create")}
    every = history.with_older(versions, older)
    assert [(v.at_ms, v.operation) for v in every] == [(300, "append"), (200, "append"), (100, None), (50, "create")]


def test_versions_and_snapshots_keep_the_order_they_were_written_in_whatever_the_writers_clocks() -> None:
    def snapshot(snapshot_id: int, at: int, parent: int | None) -> SimpleNamespace:
        return SimpleNamespace(snapshot_id=snapshot_id, timestamp_ms=at, parent_snapshot_id=parent,
                               summary=SimpleNamespace(operation=SimpleNamespace(value="append")))

    # Three commits whose snapshots a writer stamped 1, year 2500 and 1000 (the current one is the last).
    metadata = SimpleNamespace(
        metadata_log=[SimpleNamespace(metadata_file=f"s3://b/t/metadata/0000{n}-x.metadata.json", timestamp_ms=at)
                      for n, at in ((0, 500), (1, 1), (2, 16725225600000))],
        last_updated_ms=1000, current_snapshot_id=3,
        snapshot_log=[SimpleNamespace(timestamp_ms=at, snapshot_id=i) for i, at in ((1, 1), (2, 16725225600000),
                                                                                  (3, 1000))],
        snapshots=[snapshot(1, 1, None), snapshot(2, 16725225600000, 1), snapshot(3, 1000, 2)],
    )
    versions = history.versions_of(metadata, "s3://b/t/metadata/00003-x.metadata.json")  # type: ignore[arg-type]
    assert [v.number for v in versions] == [3, 2, 1, 0] and versions[0].current
    older = {f"s3://b/t/metadata/0000{n}-old.metadata.json": history.Compacted(history.UNKNOWN, at, None, "append")
             for n, at in ((0, 9), (1, 3))}  # compacted away: older than the log's, by their counter
    assert [v.number for v in history.with_older(versions, older)] == [3, 2, 1, 0, 1, 0]


def test_the_charts_follow_the_main_branch_and_not_another_branch_s_snapshots() -> None:
    def snapshot(snapshot_id: int, parent: int | None, rows: int) -> SimpleNamespace:
        return SimpleNamespace(snapshot_id=snapshot_id, parent_snapshot_id=parent, rows=rows)

    # main: 1 -> 2 -> 4; a dev branch grew from 2 to 3 with many more rows.
    metadata = SimpleNamespace(current_snapshot_id=4, snapshots=[snapshot(1, None, 10), snapshot(2, 1, 20),
                                                                 snapshot(3, 2, 382), snapshot(4, 2, 27)])
    assert [s.snapshot_id for s in main_ancestry(metadata)] == [1, 2, 4]  # type: ignore[arg-type]
    (rows,) = charts.line_charts([{"total-records": str(s.rows)} for s in main_ancestry(metadata)])  # type: ignore[arg-type]
    assert (rows.latest, rows.peak, rows.count) == ("27", "27", 3)
    looped = SimpleNamespace(current_snapshot_id=1, snapshots=[snapshot(1, 2, 1), snapshot(2, 1, 1)])
    assert len(main_ancestry(looped)) == 2  # type: ignore[arg-type]  # a parent cycle ends


def test_nested_types_become_indented_rows() -> None:
    fields = [NestedField(1, "id", LongType(), required=True),
              NestedField(2, "who", StructType(NestedField(3, "tags", ListType(4, StringType())),
                                               NestedField(5, "attrs", MapType(6, StringType(), 7, LongType()))))]
    assert [(c.depth, c.name, c.type, c.required) for c in schema_rows(fields)] == [
        (0, "id", "long", True), (0, "who", "struct", False), (1, "tags", "list", False),
        (2, "element", "string", True), (1, "attrs", "map", False), (2, "key", "string", True),
        (2, "value", "long", True)]


def test_charts_scale_to_the_view_box() -> None:
    lines = charts.line_charts([{"total-records": "10", "total-files-size": "1024"},
                                {"total-records": "20", "total-files-size": "2048"}])
    assert [c.title for c in lines] == ["rows", "bytes"]
    assert lines[0].points == "4.0,60.0 596.0,4.0" and lines[1].latest == "2.0 KiB"
    (one,) = charts.line_charts([{"total-records": "7"}])  # one snapshot: a level line across, not a lone point
    assert one.points == "4.0,4.0 596.0,4.0" and (one.latest, one.count) == ("7", 1)
    day = 86_400_000
    activity = charts.activity_chart([0, 10, 2 * day], now_ms=2 * day + 5)
    assert activity is not None and len(activity.bars) == 3
    assert [b.label for b in activity.bars] == ["1970-01-01: 2 commits", "1970-01-02: 0 commits",
                                                "1970-01-03: 1 commit"]
    assert charts.activity_chart([], now_ms=day) is None


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


DAY = 86_400_000
NOW = 20_000 * DAY + 3_600_000  # 2024-10-04 01:00 UTC


def test_the_activity_chart_spans_at_most_a_year_up_to_now_whatever_the_timestamps() -> None:
    created = NOW - 10 * DAY
    far_future, year_2500, epoch = 2**62, 16_725_225_600_000, 1
    chart = charts.activity_chart([NOW - DAY, NOW, NOW + DAY, year_2500, far_future, epoch, -5], NOW, created)
    assert chart is not None
    assert len(chart.bars) == 2 and (chart.first, chart.last) == ("2024-10-03", "2024-10-04")
    assert (chart.counted, chart.earlier, chart.out_of_range) == (2, 0, 5)
    # A table made long ago with a commit a day: never more than a year of bars.
    old = charts.activity_chart([NOW - i * DAY for i in range(1000)], NOW)
    assert old is not None and len(old.bars) == charts.ACTIVITY_DAYS
    assert (old.counted, old.earlier) == (charts.ACTIVITY_DAYS, 1000 - charts.ACTIVITY_DAYS)
    # Only commits older than the window: the chart says so, with no bars.
    stale = charts.activity_chart([NOW - 800 * DAY], NOW)
    assert stale is not None and stale.bars == [] and stale.earlier == 1


@pytest.mark.parametrize("bad", ["NaN", "nan", "inf", "-inf", "-1e400", "1e400", "-5", "²", "x", None])
def test_charts_leave_out_values_that_cannot_be_plotted(bad: object) -> None:
    lines = charts.line_charts([{"total-records": "10"}, {"total-records": bad}, {"total-records": "20"}])
    assert lines[0].points == "4.0,60.0 596.0,4.0" and lines[0].count == 2
    assert lines[0].peak == "20"
    assert charts.human(1e308, "rows") == "1e+308"


def test_engine_names_are_shown_as_written() -> None:
    for written in ("PyIceberg", "DuckDB", "javascript:alert(1)", "\u202eRTL"):
        assert history.classify({}, {"engine-name": written, "engine-version": "0.12"}).engine == f"{written} 0.12"


@pytest.mark.parametrize(("raw", "page"), [("3", 3), ("²", 1), ("①", 1), ("-1", 1), ("9" * 5000, 1), ("", 1)])
def test_the_version_page_parameter_is_a_plain_number_or_the_first_page(raw: str, page: int) -> None:
    from arco.ui.routes import _version_page

    assert _version_page(SimpleNamespace(query_params={"versions": raw})) == page  # type: ignore[arg-type]


def test_sign_in_comes_back_to_the_page_asked_for_query_included() -> None:
    from arco.ui.routes import _here

    request = SimpleNamespace(url=SimpleNamespace(path="/tables/main.hist.many", query="versions=3"))
    assert session.safe_next(_here(request)) == "/tables/main.hist.many?versions=3"  # type: ignore[arg-type]
    bare = SimpleNamespace(url=SimpleNamespace(path="/catalogs/main", query=""))
    assert _here(bare) == "/catalogs/main"  # type: ignore[arg-type]


@pytest.mark.parametrize("data", [b'{"run_id":"zz","job":"comp', b'{"run_id":"zz"}', b"[]", b'"x"',
                                  b'{"run_id":"zz","counts":[1],"errors":"x","started_at_ms":"a"}'])
def test_a_run_record_that_cannot_be_read_is_none_or_made_safe_to_show(data: bytes) -> None:
    from arco.ui.pages import run_record

    record = run_record(data)
    assert record is None or (record["counts"] == {} and isinstance(record["errors"], list)
                              and record["seconds"] == 0.0)


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


def test_compacted_versions_keep_their_engine_app_and_the_commits_own_operation() -> None:
    import uuid

    from arco.pipeline import rows
    from arco.pipeline.checkpoint import CompactState, commit_batch
    from arco.pipeline.parquet_io import write_rows
    from arco.storage.memory import MemoryBackend

    storage = MemoryBackend(f"ui-{uuid.uuid4().hex}")
    table_uuid = "t-2"
    locations = [f"s3://b/t/metadata/0000{i}-x.metadata.json" for i in range(3)]

    def receipt(i: int, operation: str, summary: dict[str, str]) -> dict:
        return {"event_type": "IcebergCommitCommitted", "event_id": f"e{i}", "commit_key": f"k{i}",
                "table_uuid": table_uuid, "metadata_location": locations[i], "last_updated_ms": 1_000 * (i + 1),
                "snapshot_id": 5, "operation": operation, "summary": summary,
                "source": {"kind": "iceberg_rest", "principal": "ann", "client_info": "PyIceberg/0.12.0"}}

    written = {"operation": "append", "engine-name": "DuckDB", "engine-version": "1.3", "app-id": "job-7"}
    key = "_catalog/history/timeline/batch=b2/part-00000.parquet"
    write_rows(storage, key, [rows.timeline_row(f"rk{i}", r, {table_uuid}) for i, r in enumerate(
        [receipt(0, "create", {}), receipt(1, "append", written), receipt(2, "update-metadata", {})])],
        rows.TIMELINE)
    commit_batch(storage, CompactState(), {"batch_id": "b2", "run_id": "r1", "files": {"timeline": [key]}})

    compacted = history.compacted_sources(storage, table_uuid)
    # The metadata log still lists the last two; the snapshot current then was the append's.
    listed = [history.Version(2, locations[2], 3_000, True, 5, "append"),
              history.Version(1, locations[1], 2_000, False, 5, "append")]
    every = history.with_older(listed, compacted)
    history.attach_sources(storage, every, compacted)
    assert [(v.number, v.operation, v.source.engine, v.source.app_id) for v in every] == [
        (2, "update-metadata", None, None), (1, "append", "DuckDB 1.3", "job-7"), (0, "create", None, None)]
    assert all(v.source.from_history and v.source.principal == "ann" for v in every)


def test_timestamps_outside_the_calendar_are_shown_as_numbers() -> None:
    from arco.ui.table_page import when

    assert when(0) == "" and when(86_400_000) == "1970-01-02 00:00:00 UTC"
    assert when(2**62) == f"{2**62} ms since 1970"


def test_labels_fit_their_box_and_long_values_are_cut_with_their_length() -> None:
    from arco.ui.routes import clip, fit

    assert fit("main.db.t", 26) == "main.db.t"
    assert fit("main." + "x" * 100, 26) == "main." + "x" * 20 + "…" and len(fit("y" * 100, 26)) == 26
    assert clip("z" * 10, 5) == "zzzzz… (10 characters; the API gives all of it)" and clip("short") == "short"
