"""The Delta source's reading of a log: file locations (decoded once from the log's URIs), partition values (the
protocol's encoding, and the log's own spelling for the delta format), and commit timestamps of older versions;
pure helpers directly, the rest on tables deltalake writes."""

from __future__ import annotations

import json
import time
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from deltalake import write_deltalake

from arco.sharing import delta_source, responses
from arco.storage.urls import local_path

ODD = ["a b", "x/y", "=", "é", "%20", "50%", None]


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    delta_source.clear_cache()


@pytest.mark.parametrize(("table_uri", "path", "location"), [
    ("file:///w/t/", "s=%253D/p.parquet", "file:///w/t/s=%3D/p.parquet"),  # the directory is named s=%3D
    ("file:///w/t", "s=a%2520b/p.parquet", "file:///w/t/s=a%20b/p.parquet"),
    ("file:///w/t/", "s=a%20b/p%C3%A9.parquet", "file:///w/t/s=a b/pé.parquet"),
    ("file:///w/my%20dir/t/", "p.parquet", "file:///w/my dir/t/p.parquet"),  # deltalake's table URI is encoded
    ("s3://b/t/", "s3://b/other/s=a%20b/p.parquet", "s3://b/other/s=a b/p.parquet"),  # absolute URIs too
    ("file:///w/t/", "file:/w/elsewhere/s=%253D/p.parquet", "file:/w/elsewhere/s=%3D/p.parquet"),
    ("s3://b/t/", "plain/p.parquet", "s3://b/t/plain/p.parquet"),
])
def test_a_log_path_is_decoded_once_into_the_files_location(table_uri: str, path: str, location: str) -> None:
    assert delta_source._absolute(table_uri, path) == location


@pytest.mark.parametrize(("value", "text"), [
    (datetime(2024, 1, 1, 12, 0, 0, 123456), "2024-01-01 12:00:00.123456"),
    (datetime(2024, 1, 1, 12, 0, 0, 500000), "2024-01-01 12:00:00.500000"),
    (datetime(2024, 1, 1, 12, 0, 0), "2024-01-01 12:00:00"),  # no fraction: none shown
    (datetime(2024, 1, 1, 12, 0, 0, 1, tzinfo=UTC), "2024-01-01 12:00:00.000001"),
    (date(2024, 1, 2), "2024-01-02"),
    (True, "true"),
    (Decimal("1.50"), "1.50"),
    (None, None),
])
def test_partition_values_keep_the_fraction_of_a_second(value: object, text: str | None) -> None:
    assert delta_source._partition_string(value) == text


def test_the_logs_spelling_of_each_typed_value_is_found() -> None:
    typed = [{"t": datetime(2024, 1, 1, 12, tzinfo=UTC), "n": 7, "s": "a b"},
             {"t": datetime(2024, 1, 1, 12, 0, 0, 250000, tzinfo=UTC), "n": 8, "s": None}]
    # Spark's spelling without a fraction, an ISO instant, and a value no file has.
    log = [{"t": "2024-01-01 12:00:00", "n": "7", "s": "a b"},
           {"t": "2024-01-01T12:00:00.250000Z", "n": "8", "s": None},
           {"t": "not a time", "n": "9", "s": ""}]
    spellings = delta_source.log_spellings(log, typed)
    assert [delta_source._log_values(v, spellings) for v in typed] == [
        {"t": "2024-01-01 12:00:00", "n": "7", "s": "a b"},
        {"t": "2024-01-01T12:00:00.250000Z", "n": "8", "s": None}]
    # A value the log's list does not have is given in the protocol's encoding.
    assert delta_source._log_values({"t": datetime(2025, 1, 1, 0, 0, 0, 5, tzinfo=UTC)}, spellings) == {
        "t": "2025-01-01 00:00:00.000005"}


def test_a_change_data_file_names_its_partition_when_all_its_rows_are_in_one() -> None:
    one = pa.table({"id": [1, 2], "region": ["eu", "eu"], "at": [datetime(2024, 1, 1, 0, 0, 0, 10)] * 2})
    assert delta_source.single_partition(one, ["region", "at"]) == {"region": "eu",
                                                                    "at": "2024-01-01 00:00:00.000010"}
    assert delta_source.single_partition(one, []) == {}
    assert delta_source.single_partition(pa.table({"region": ["eu", "us"]}), ["region"]) is None
    assert delta_source.single_partition(pa.table({"region": pa.array([None, None], pa.string())}),
                                         ["region"]) == {"region": None}
    assert delta_source.single_partition(one, ["missing"]) is None


def test_files_under_escaped_partition_directories_are_located_on_disk(tmp_path: Path) -> None:
    location = str(tmp_path / "t")
    write_deltalake(location, pa.table({"id": pa.array(range(len(ODD)), pa.int64()), "s": pa.array(ODD)}),
                    partition_by=["s"])
    files = delta_source.snapshot(location, {}).version.files
    assert len(files) == len(ODD)
    for f in files:
        assert local_path(f.url).is_file(), f.url
    assert sorted((f.partition_values["s"] or "") for f in files) == sorted(v or "" for v in ODD)
    # An Iceberg-style (unencoded) location is opened as it is written: the file server decodes nothing.
    assert local_path("file:///w/s=%3D/p.parquet") == Path("/w/s=%3D/p.parquet")


def test_timestamp_partitions_keep_fractions_and_the_logs_spelling(tmp_path: Path) -> None:
    location = str(tmp_path / "t")
    at = [datetime(2024, 1, 1, 12, 0, 0, 123456), datetime(2024, 1, 1, 12, 0, 0)]
    write_deltalake(location, pa.table({"id": pa.array([1, 2], pa.int64()), "at": pa.array(at, pa.timestamp("us"))}),
                    partition_by=["at"])
    files = sorted(delta_source.snapshot(location, {}).version.files, key=lambda f: f.partition_values["at"] or "")
    assert [f.partition_values["at"] for f in files] == ["2024-01-01 12:00:00", "2024-01-01 12:00:00.123456"]
    log = [json.loads(line)["add"]["partitionValues"]["at"]
           for line in (tmp_path / "t" / "_delta_log" / f"{0:020d}.json").read_text().splitlines() if '"add"' in line]
    assert sorted(f.log_partition_values["at"] for f in files if f.log_partition_values) == sorted(log)
    assert all(local_path(f.url).is_file() for f in files)


def _commit_times(location: str) -> dict[int, int]:
    log = Path(location) / "_delta_log"
    return {int(p.stem): json.loads(p.read_text().splitlines()[0])["commitInfo"]["timestamp"]
            for p in log.glob("*.json")}


def test_an_older_version_has_its_own_commit_timestamp(tmp_path: Path) -> None:
    """deltalake 1.x numbers the history of a table opened at an older version wrongly; the timestamps come from
    the latest table's history."""
    location = str(tmp_path / "t")
    for i in range(4):
        write_deltalake(location, pa.table({"id": pa.array([i], pa.int64())}), mode="append")
        time.sleep(0.01)  # commits in distinct milliseconds
    commits = _commit_times(location)
    assert len(set(commits.values())) == 4
    for version in (3, 1, 0, 2):
        shared = delta_source.snapshot(location, {}, version=version).version
        assert shared.timestamp_ms == commits[version], version
    by_time = delta_source.snapshot(location, {}, timestamp_ms=commits[1]).version
    assert (by_time.version, by_time.timestamp_ms) == (1, commits[1])


def test_the_delta_format_carries_the_logs_modification_time_and_partition_values(tmp_path: Path) -> None:
    location = str(tmp_path / "t")
    write_deltalake(location, pa.table({"id": pa.array([1], pa.int64()),
                                        "at": pa.array([datetime(2024, 1, 1, 12)], pa.timestamp("us"))}),
                    partition_by=["at"])
    log = [json.loads(line)["add"] for line in (tmp_path / "t" / "_delta_log" / f"{0:020d}.json").read_text()
           .splitlines() if '"add"' in line]
    (f,) = delta_source.snapshot(location, {}).version.files

    def sign(url: str) -> tuple[str, int]:
        return "https://signed/x", 1

    add = orjson.loads(responses.file_line("delta", f, sign))["file"]["deltaSingleAction"]["add"]
    assert add["modificationTime"] == log[0]["modificationTime"] > 0
    assert add["partitionValues"] == log[0]["partitionValues"] == {"at": "2024-01-01 12:00:00.000000"}
    parquet = orjson.loads(responses.file_line("parquet", f, sign))["file"]
    assert parquet["partitionValues"] == {"at": "2024-01-01 12:00:00"}


def test_a_commits_cdc_actions_are_its_change_data_files() -> None:
    commit = b"\n".join([
        b'{"commitInfo":{"operation":"DELETE"}}',
        b'{"remove":{"path":"s=a%2520b/part-0.parquet","dataChange":true}}',
        b'{"cdc":{"path":"_change_data/s=a%2520b/cdc-0.parquet","partitionValues":{"s":"a%20b"},"size":7,'
        b'"dataChange":false}}',
        b'{"cdc":{"path":"file:///elsewhere/cdc-1.parquet","partitionValues":{"s":null},"size":9}}', b""])
    files = delta_source.cdc_files("file:///wh/t", commit, 3, 1700)
    assert [(f.url, f.partition_values, f.size, f.version, f.timestamp_ms, f.change_type) for f in files] == [
        ("file:///wh/t/_change_data/s=a%20b/cdc-0.parquet", {"s": "a%20b"}, 7, 3, 1700, "cdf"),
        ("file:///elsewhere/cdc-1.parquet", {"s": None}, 9, 3, 1700, "cdf")]
    assert delta_source.cdc_files("file:///wh/t", b'{"add":{"path":"x"}}\n', 3, 1700) == []


def _append_versions(location: str, versions: int, files_per_version: int) -> None:
    for v in range(versions):
        rows = pa.table({"id": pa.array(range(v * 100, v * 100 + files_per_version), pa.int64()),
                         "part": pa.array([f"p{i}" for i in range(files_per_version)])})
        write_deltalake(location, rows, mode="append", partition_by=["part"])


def test_a_version_s_snapshot_is_built_once_and_kept(tmp_path: Path) -> None:
    location = str(tmp_path / "t")
    _append_versions(location, 2, 3)
    first = delta_source.snapshot(location, {}, version=0)
    assert delta_source.snapshot(location, {}, version=0) is first
    latest = delta_source.snapshot(location, {})
    assert latest.version.version == 1 and len(latest.version.files) == 6
    assert delta_source.snapshot(location, {}) is latest


def test_cached_snapshots_stay_within_their_budget_by_the_size_of_their_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each version of a growing table holds more files than the one before: a count alone let a few tables of
    very many files fill the server's memory."""
    location = str(tmp_path / "t")
    _append_versions(location, 6, 20)
    six_versions = [delta_source.snapshot(location, {}, version=v) for v in range(6)]
    weights = [delta_source.snapshot_weight(s) for s in six_versions]
    assert weights == sorted(weights) and weights[-1] > 5 * weights[0]  # grows with the files
    budget = weights[4] + weights[5]  # room for the two newest, not for a third beside them
    monkeypatch.setattr(delta_source, "_snapshots", delta_source.Lru(100, budget=budget,
                                                                     weigh=delta_source.snapshot_weight))
    for v in range(6):
        shared = delta_source.snapshot(location, {}, version=v).version
        assert (shared.version, len(shared.files)) == (v, 20 * (v + 1))
        assert delta_source._snapshots.weight <= budget
    assert len(delta_source._snapshots) == 2
    kept = delta_source.snapshot(location, {}, version=5)
    assert delta_source.snapshot(location, {}, version=5) is kept
    assert delta_source.snapshot(location, {}, version=0) is not six_versions[0]  # built again, correctly
    assert len(delta_source.snapshot(location, {}, version=0).version.files) == 20


def test_a_snapshot_heavier_than_the_whole_budget_is_served_and_not_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location = str(tmp_path / "t")
    _append_versions(location, 1, 30)
    monkeypatch.setattr(delta_source, "_snapshots", delta_source.Lru(100, budget=10_000,
                                                                     weigh=delta_source.snapshot_weight))
    assert len(delta_source.snapshot(location, {}).version.files) == 30
    assert len(delta_source._snapshots) == 0 and delta_source._snapshots.weight == 0


def test_a_table_made_again_at_the_same_place_is_not_answered_from_its_predecessor_s_snapshots(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The table's entry was forgotten (more tables than are cached) while its snapshots were still kept."""
    location = str(tmp_path / "t")
    _append_versions(location, 1, 2)
    assert len(delta_source.snapshot(location, {}).version.files) == 2
    delta_source._tables.clear()
    import shutil

    shutil.rmtree(location)
    _append_versions(location, 1, 5)
    assert len(delta_source.snapshot(location, {}).version.files) == 5


def test_cached_tables_stay_within_their_budget_by_the_files_their_delta_tables_hold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def weight(files: int) -> int:
        return delta_source.TABLE_BYTES + delta_source.DELTA_TABLE_FILE_BYTES * files

    budget = weight(20) + weight(40)  # the two largest, not the smallest beside them
    monkeypatch.setattr(delta_source, "_tables", delta_source.Lru(64, budget=budget,
                                                                  weigh=lambda _: delta_source.TABLE_BYTES))
    for name, files in (("small", 10), ("middle", 20), ("large", 40)):
        _append_versions(str(tmp_path / name), 1, files)
        assert len(delta_source.snapshot(str(tmp_path / name), {}).version.files) == files
        assert delta_source._tables.weight <= budget
    assert delta_source._tables.weight == weight(20) + weight(40)
    assert [key[0] for key in delta_source._tables._items] == [str(tmp_path / "middle"), str(tmp_path / "large")]
    # Forgotten, the small table is opened again and answered as before.
    assert len(delta_source.snapshot(str(tmp_path / "small"), {}).version.files) == 10


def test_a_table_heavier_than_the_whole_budget_is_served_and_not_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delta_source, "_tables", delta_source.Lru(64, budget=delta_source.TABLE_BYTES + 1000,
                                                                  weigh=lambda _: delta_source.TABLE_BYTES))
    location = str(tmp_path / "t")
    _append_versions(location, 2, 10)
    for _ in range(2):
        assert len(delta_source.snapshot(location, {}).version.files) == 20
        assert len(delta_source._tables) == 0 and delta_source._tables.weight == 0
