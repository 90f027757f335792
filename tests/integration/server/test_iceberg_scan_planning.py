"""Server-side scan planning over HTTP against real ``arco serve`` processes sharing one warehouse.

The oracle: the data files, and the delete files of each, that PyIceberg's own ``plan_files()`` gives for the same
filter and snapshot, on a table partitioned by identity and day with partition-scoped and file-scoped position
deletes. Synchronous plans, results spilled into plan tasks, asynchronous plans made on one server and fetched
from another, cancel, expiry, a dead planner, incremental scans, equality deletes, and bad input (400/403/404).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import (
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    In,
    IsNull,
    LessThan,
    Not,
    NotNull,
    Or,
    StartsWith,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField, StringType, TimestampType

from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli
from support.iceberg_files import commit_files, equality_deletes, fake_data_file, position_deletes

pytestmark = pytest.mark.timeout(300)

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "cat", StringType(), required=False),
                NestedField(3, "ts", TimestampType(), required=False))
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"),
                     PartitionField(3, 1001, DayTransform(), "ts_day"))
ARROW = pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string()), pa.field("ts", pa.timestamp("us"))])


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``sync``: plans while the request waits, 4 tasks per plan task; ``async_``: plans everything
    asynchronously, 3 tasks per plan task; ``brief``: async plans that expire after a second. One warehouse."""
    workdir: Path = tmp_path_factory.mktemp("planning")
    warehouse = workdir / "wh"
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN,
                     extra_args=("--scan-planning-tasks-per-chunk", "4")) as sync, \
         arco_server(warehouse, workdir, admin_token=ARCO_TOKEN,
                     extra_args=("--scan-planning-async-manifests", "0", "--scan-planning-tasks-per-chunk", "3")) \
            as async_, \
         arco_server(warehouse, workdir, admin_token=ARCO_TOKEN,
                     extra_args=("--scan-planning-async-manifests", "0", "--scan-plan-lifetime", "1")) as brief:
        yield {"sync": sync, "async_": async_, "brief": brief, "warehouse": warehouse}


def http(server: RunningServer, token: str = ARCO_TOKEN) -> httpx.Client:
    return httpx.Client(base_url=f"{server.iceberg_uri}/v1/main", timeout=60,
                        headers={"Authorization": f"Bearer {token}"})


def pyiceberg_catalog(server: RunningServer, **properties: str) -> RestCatalog:
    return RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN, **properties)


def rows(ids: list[int], cat: str, day: int) -> pa.Table:
    return pa.table({"id": ids, "cat": [cat] * len(ids), "ts": [datetime(2024, 1, day, 12)] * len(ids)},
                    schema=ARROW)


@pytest.fixture(scope="module")
def table(servers: dict[str, Any]) -> Table:
    """plan.t: three appends over partitions (a|b|c, day 1|2), then position deletes (one partition-scoped, one
    scoped to a file), then a fourth append whose files the older deletes must not touch."""
    catalog = pyiceberg_catalog(servers["sync"])
    catalog.create_namespace("plan")
    t = catalog.create_table("plan.t", SCHEMA, partition_spec=SPEC,
                             properties={"format-version": "2"})
    for batch in range(3):
        t.append(pa.concat_tables([rows([batch * 10 + i for i in range(3)], cat, day)
                                   for cat in ("a", "b", "cat") for day in (1, 2)]))
    files = [task.file for task in t.scan().plan_files()]
    in_a = next(f for f in files if f.partition[0] == "a")
    in_b = next(f for f in files if f.partition[0] == "b")
    commit_files(t, [position_deletes(t, in_a, [0], scoped_to_file=False),
                     position_deletes(t, in_b, [1, 2], scoped_to_file=True)], deletes=True)
    t = catalog.load_table("plan.t")
    t.append(pa.concat_tables([rows([100, None], cat, 1) for cat in ("a", "b")]))  # type: ignore[list-item]
    return catalog.load_table("plan.t")


def scan_tasks(body: dict[str, Any]) -> set[tuple[str, frozenset[str]]]:
    deletes = [d["file-path"] for d in body.get("delete-files", [])]
    return {(task["data-file"]["file-path"], frozenset(deletes[i] for i in task.get("delete-file-references", [])))
            for task in body.get("file-scan-tasks", [])}


def fetch_all(client: httpx.Client, path: str, result: dict[str, Any],
              fetcher: httpx.Client | None = None) -> set[tuple[str, frozenset[str]]]:
    """Every task of a plan: inline, then each plan task's (and any plan task they name), from ``fetcher``."""
    fetcher = fetcher or client
    if result["status"] == "submitted":
        plan_id = result["plan-id"]
        deadline = time.monotonic() + 60
        while result["status"] == "submitted":
            assert time.monotonic() < deadline, "the plan never finished"
            time.sleep(0.05)
            answer = fetcher.get(f"{path}/plan/{plan_id}")
            assert answer.status_code == 200, answer.text
            result = answer.json()
    assert result["status"] == "completed", result
    found = scan_tasks(result)
    pending = list(result.get("plan-tasks", []))
    while pending:
        answer = fetcher.post(f"{path}/tasks", json={"plan-task": pending.pop()})
        assert answer.status_code == 200, answer.text
        found |= scan_tasks(answer.json())
        pending += answer.json().get("plan-tasks", [])
    return found


def served(client: httpx.Client, body: dict[str, Any], path: str = "/namespaces/plan/tables/t",
           fetcher: httpx.Client | None = None) -> set[tuple[str, frozenset[str]]]:
    answer = client.post(f"{path}/plan", json=body)
    assert answer.status_code == 200, answer.text
    return fetch_all(client, path, answer.json(), fetcher)


def oracle(table: Table, expression: BooleanExpression,
           snapshot_id: int | None = None) -> set[tuple[str, frozenset[str]]]:
    return {(task.file.file_path, frozenset(d.file_path for d in task.delete_files))
            for task in table.scan(row_filter=expression, snapshot_id=snapshot_id).plan_files()}


FILTERS: list[tuple[Any, BooleanExpression]] = [
    (None, AlwaysTrue()),
    (True, AlwaysTrue()),
    ({"type": "eq", "term": "cat", "value": "a"}, EqualTo("cat", "a")),
    ({"type": "and", "left": {"type": "gt", "left": {"type": "reference", "name": "id"}, "right": 5},
      "right": {"type": "in", "child": "cat", "values": ["a", "b"]}}, And(GreaterThan("id", 5), In("cat", {"a", "b"}))),
    ({"type": "not", "child": {"type": "eq", "term": "cat", "value": "b"}}, Not(EqualTo("cat", "b"))),
    ({"type": "lt", "term": "ts", "value": "2024-01-02T00:00:00.000000"}, LessThan("ts", "2024-01-02T00:00:00")),
    ({"type": "or", "left": {"type": "is-null", "term": "id"}, "right": {"type": "starts-with", "term": "cat",
                                                                        "value": "ca"}},
     Or(IsNull("id"), StartsWith("cat", "ca"))),
    ({"type": "not-null", "child": {"type": "reference", "name": "id"}}, NotNull("id")),
    ({"type": "eq", "term": "id", "value": {"type": "literal", "value": 100}}, EqualTo("id", 100)),
    (False, AlwaysTrue() & ~AlwaysTrue()),
]


def test_config_advertises_the_planning_endpoints(servers: dict[str, Any]) -> None:
    config = httpx.get(f"{servers['sync'].iceberg_uri}/v1/config?warehouse=main",
                       headers={"Authorization": f"Bearer {ARCO_TOKEN}"}).json()
    for endpoint in ("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
                     "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
                     "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
                     "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks"):
        assert endpoint in config["endpoints"]


@pytest.mark.parametrize("index", range(len(FILTERS)))
def test_sync_plan_equals_pyiceberg_for_every_filter_and_snapshot(servers: dict[str, Any], table: Table,
                                                                  index: int) -> None:
    raw, expression = FILTERS[index]
    snapshots = [s.snapshot_id for s in table.snapshots()]
    assert len(snapshots) == 5
    with http(servers["sync"]) as client:
        for snapshot_id in (None, snapshots[1], snapshots[3]):
            body: dict[str, Any] = {} if raw is None else {"filter": raw}
            if snapshot_id is not None:
                body["snapshot-id"] = snapshot_id
            expected = oracle(table, expression, snapshot_id)
            assert served(client, body) == expected
    if index == 0:  # the deletes are there, and only where they belong
        with_deletes = [deletes for _, deletes in expected if deletes]
        assert len(with_deletes) >= 2 and all(len(d) == 1 for d in with_deletes)


def test_async_plan_made_on_one_server_is_fetched_from_another(servers: dict[str, Any], table: Table) -> None:
    with http(servers["async_"]) as planner, http(servers["sync"]) as other:
        for raw, expression in FILTERS[:5]:
            answer = planner.post("/namespaces/plan/tables/t/plan", json={} if raw is None else {"filter": raw})
            assert answer.json()["status"] == "submitted" and len(answer.json()["plan-id"]) == 32
            assert "file-scan-tasks" not in answer.json()
            assert fetch_all(planner, "/namespaces/plan/tables/t", answer.json(), fetcher=other) == \
                oracle(table, expression)
        # every plan task is a chunk of at most 3 tasks, with the delete files its tasks refer to
        plan_id = planner.post("/namespaces/plan/tables/t/plan", json={}).json()["plan-id"]
        result = {"status": "submitted"}
        while result["status"] == "submitted":
            time.sleep(0.05)
            result = other.get(f"/namespaces/plan/tables/t/plan/{plan_id}").json()
        assert len(result["plan-tasks"]) == -(-len(oracle(table, AlwaysTrue())) // 3)
        for token in result["plan-tasks"]:
            chunk = other.post("/namespaces/plan/tables/t/tasks", json={"plan-task": token}).json()
            assert 1 <= len(chunk["file-scan-tasks"]) <= 3
            referenced = {i for t in chunk["file-scan-tasks"] for i in t.get("delete-file-references", [])}
            assert referenced == set(range(len(chunk.get("delete-files", []))))


def test_a_big_sync_result_spills_into_plan_tasks(servers: dict[str, Any], table: Table) -> None:
    with http(servers["sync"]) as client:
        result = client.post("/namespaces/plan/tables/t/plan", json={}).json()
        total = len(oracle(table, AlwaysTrue()))
        assert result["status"] == "completed" and len(result["file-scan-tasks"]) == 4
        assert len(result["plan-tasks"]) == -(-(total - 4) // 4)
        small = client.post("/namespaces/plan/tables/t/plan", json={"filter": FILTERS[2][0],
                                                                      "snapshot-id": table.snapshots()[0].snapshot_id})
        assert "plan-tasks" not in small.json() and small.json()["plan-id"]
        # The plan id a completed answer names is kept: it can be fetched (nothing more to read) and cancelled.
        plan_id = small.json()["plan-id"]
        assert client.get(f"/namespaces/plan/tables/t/plan/{plan_id}").json() == {"status": "completed",
                                                                                  "plan-tasks": []}
        assert client.delete(f"/namespaces/plan/tables/t/plan/{plan_id}").status_code == 204
        assert client.get(f"/namespaces/plan/tables/t/plan/{plan_id}").json() == {"status": "cancelled"}


def test_pyiceberg_reads_through_server_side_planning(servers: dict[str, Any], table: Table) -> None:
    """PyIceberg's own REST client in ``scan-planning-mode=server`` plans on Arco and reads the same rows
    (position deletes applied) as local planning."""
    remote = pyiceberg_catalog(servers["sync"], **{"scan-planning-mode": "server"}).load_table("plan.t")
    assert remote.catalog.supports_server_side_planning()  # type: ignore[attr-defined]
    for expression in (AlwaysTrue(), EqualTo("cat", "a"), GreaterThan("id", 5)):
        served_rows = remote.scan(row_filter=expression).to_arrow().sort_by("id").to_pylist()
        local_rows = table.scan(row_filter=expression).to_arrow().sort_by("id").to_pylist()
        assert served_rows == local_rows and served_rows
    assert len(table.scan().to_arrow()) == 3 * 6 * 3 + 4 - 3  # three rows deleted


def test_results_carry_partitions_residuals_and_only_the_stats_asked_for(servers: dict[str, Any],
                                                                         table: Table) -> None:
    with http(servers["sync"]) as client:
        body = {"filter": {"type": "and", "left": {"type": "eq", "term": "cat", "value": "a"},
                           "right": {"type": "gt", "term": "id", "value": 5}}, "stats-fields": ["id"]}
        result = client.post("/namespaces/plan/tables/t/plan", json=body).json()
        for task in result["file-scan-tasks"]:
            data = task["data-file"]
            assert data["content"] == "data" and data["file-format"] == "parquet" and data["spec-id"] == 0
            assert data["partition"][0] == "a" and data["partition"][1] in ("2024-01-01", "2024-01-02")
            assert data["record-count"] > 0 and data["file-size-in-bytes"] > 0
            # the partition decides cat = 'a'; what is left to check per row is id > 5
            assert task["residual-filter"] == {"type": "gt", "term": "id", "value": 5}
            assert data["lower-bounds"]["keys"] == [1] and data["value-counts"]["keys"] == [1]
            assert isinstance(data["lower-bounds"]["values"][0], int)
        plain = client.post("/namespaces/plan/tables/t/plan", json={"filter": body["filter"]}).json()
        assert all("lower-bounds" not in t["data-file"] and "value-counts" not in t["data-file"]
                   for t in plain["file-scan-tasks"])
        deletes = [d for d in client.post("/namespaces/plan/tables/t/plan", json={}).json()["delete-files"]]
        assert {d["content"] for d in deletes} == {"position-deletes"}
        assert any(d.get("referenced-data-file") is None for d in deletes)


def test_incremental_scan_gives_the_files_appended_in_between(servers: dict[str, Any], table: Table) -> None:
    snapshots = [s.snapshot_id for s in table.snapshots()]
    with http(servers["sync"]) as client:
        for start, end in ((snapshots[0], snapshots[2]), (snapshots[1], snapshots[4]), (snapshots[3], snapshots[4])):
            body = {"start-snapshot-id": start, "end-snapshot-id": end, "filter": {"type": "eq", "term": "cat",
                                                                                   "value": "a"}}
            expected = {(t.file.file_path, frozenset()) for t in table.incremental_append_scan(
                from_snapshot_id_exclusive=start, to_snapshot_id_inclusive=end,
                row_filter=EqualTo("cat", "a")).plan_files()}
            assert served(client, body) == expected and expected
        # only appends count: from just before the deletes to just after them, nothing was appended
        assert served(client, {"start-snapshot-id": snapshots[2], "end-snapshot-id": snapshots[3]}) == set()


def test_use_snapshot_schema_binds_the_filter_to_the_old_schema(servers: dict[str, Any], table: Table) -> None:
    catalog = pyiceberg_catalog(servers["sync"])
    evolving = catalog.create_table("plan.evolving", SCHEMA, partition_spec=SPEC)
    evolving.append(rows([1, 2], "a", 1))
    old = evolving.current_snapshot().snapshot_id  # type: ignore[union-attr]
    with evolving.update_schema() as update:
        update.rename_column("cat", "category")
    with http(servers["sync"]) as client:
        path = "/namespaces/plan/tables/evolving"
        old_name = {"snapshot-id": old, "filter": {"type": "eq", "term": "cat", "value": "a"}}
        assert client.post(f"{path}/plan", json=old_name).status_code == 400  # the current schema has no "cat"
        assert len(served(client, {**old_name, "use-snapshot-schema": True}, path)) == 1
        assert len(served(client, {"snapshot-id": old, "filter": {"type": "eq", "term": "category", "value": "a"}},
                          path)) == 1


def test_case_insensitive_filter_and_select(servers: dict[str, Any], table: Table) -> None:
    with http(servers["sync"]) as client:
        body = {"filter": {"type": "eq", "term": "CAT", "value": "a"}, "select": ["ID", "Cat"]}
        assert client.post("/namespaces/plan/tables/t/plan", json=body).status_code == 400
        assert served(client, {**body, "case-sensitive": False}) == oracle(table, EqualTo("cat", "a"))


def test_equality_deletes_apply_to_older_data_in_their_partition(servers: dict[str, Any], table: Table) -> None:
    """PyIceberg cannot plan equality deletes, so the expectation is the table spec's rule, computed here."""
    catalog = pyiceberg_catalog(servers["sync"])
    eq = catalog.create_table("plan.eq", SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    eq.append(pa.concat_tables([rows([1, 2], "a", 1), rows([3], "b", 1)]))
    before = {f.partition[0]: f for f in (t.file for t in eq.scan().plan_files())}
    commit_files(eq, [equality_deletes(eq, "id", [2], before["a"].partition, before["a"].spec_id)], deletes=True)
    eq = catalog.load_table("plan.eq")
    eq.append(rows([2], "a", 1))  # newer than the delete: untouched by it
    with http(servers["sync"]) as client:
        result = client.post("/namespaces/plan/tables/eq/plan", json={}).json()
    deletes = result["delete-files"]
    assert [d["content"] for d in deletes] == ["equality-deletes"] and deletes[0]["equality-ids"] == [1]
    by_path = {t["data-file"]["file-path"]: t.get("delete-file-references", []) for t in result["file-scan-tasks"]}
    assert by_path.pop(before["a"].file_path) == [0]
    assert by_path.pop(before["b"].file_path) == []  # another partition
    assert list(by_path.values()) == [[]]  # the newer file in partition a


def test_cancel_and_expiry(servers: dict[str, Any], table: Table) -> None:
    path = "/namespaces/plan/tables/t"
    with http(servers["async_"]) as planner, http(servers["sync"]) as other:
        plan_id = planner.post(f"{path}/plan", json={}).json()["plan-id"]
        done = fetch_all(planner, path, {"status": "submitted", "plan-id": plan_id})
        assert done
        tasks = other.get(f"{path}/plan/{plan_id}").json()["plan-tasks"]
        assert other.delete(f"{path}/plan/{plan_id}").status_code == 204
        assert planner.get(f"{path}/plan/{plan_id}").json() == {"status": "cancelled"}
        gone = planner.post(f"{path}/tasks", json={"plan-task": tasks[0]})
        assert gone.status_code == 404 and gone.json()["error"]["type"] == "NoSuchPlanTaskException"
        assert other.delete(f"{path}/plan/{plan_id}").status_code == 204  # cancelling again is harmless
    with http(servers["brief"]) as brief:
        plan_id = brief.post(f"{path}/plan", json={}).json()["plan-id"]
        time.sleep(1.2)
        expired = brief.get(f"{path}/plan/{plan_id}")
        assert expired.status_code == 404 and expired.json()["error"]["type"] == "NoSuchPlanIdException"
        left = servers["warehouse"] / "_catalog" / "iceberg_plans" / plan_id
        assert not [p for p in left.rglob("*") if p.is_file()]  # deleted by the fetch that found it expired


def test_a_plan_whose_planner_died_answers_failed(servers: dict[str, Any], table: Table) -> None:
    """A record left ``submitted`` by a server that stopped heartbeating (as a killed one leaves it)."""
    from arco.iceberg.plan_store import PlanStore
    from arco.storage.local import LocalBackend

    with http(servers["sync"]) as client:
        table_uuid = client.get("/namespaces/plan/tables/t").json()["metadata"]["table-uuid"]
        store = PlanStore(LocalBackend(servers["warehouse"]), lifetime_s=3600)
        record = store.new_record(table_uuid, "admin")
        store.create(record.__class__(**{**record.__dict__, "heartbeat_at_ms": record.heartbeat_at_ms - 120_000}))
        answer = client.get(f"/namespaces/plan/tables/t/plan/{record.plan_id}").json()
        assert answer["status"] == "failed" and "no heartbeat" in answer["error"]["message"]
        fresh = store.new_record(table_uuid, "admin")
        store.create(fresh)
        assert client.get(f"/namespaces/plan/tables/t/plan/{fresh.plan_id}").json() == {"status": "submitted"}


def test_a_plan_whose_server_stops_is_answered_failed_by_another(servers: dict[str, Any], table: Table) -> None:
    """The planning server is stopped (SIGSTOP) mid-plan: another server answers ``submitted`` no longer than the
    heartbeat timeout, then ``failed``; woken, the first loses to that answer and says ``failed`` too."""
    catalog = pyiceberg_catalog(servers["sync"])
    many = catalog.create_table("plan.many", SCHEMA, partition_spec=SPEC)
    commit_files(many, [fake_data_file(f"{many.location()}/data/{i}.parquet", Record("a", 19723), 0)
                        for i in range(4000)], deletes=False, per_manifest=10)  # 400 manifests: seconds to plan
    warehouse = servers["warehouse"]
    args = ("--scan-planning-async-manifests", "0", "--scan-plan-heartbeat-timeout", "3")
    path = "/namespaces/plan/tables/many"
    with arco_server(warehouse, warehouse.parent, admin_token=ARCO_TOKEN, extra_args=args) as victim, \
            arco_server(warehouse, warehouse.parent, admin_token=ARCO_TOKEN, extra_args=args) as judge, \
            http(victim) as planner, http(judge) as other:
        plan_id = planner.post(f"{path}/plan", json={}).json()["plan-id"]
        victim.process.send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            answer = other.get(f"{path}/plan/{plan_id}").json()
            while answer["status"] == "submitted":
                assert time.monotonic() - started < 60, "a dead planner's plan never failed"
                time.sleep(0.2)
                answer = other.get(f"{path}/plan/{plan_id}").json()
            assert time.monotonic() - started >= 2.5  # not before the timeout (the last beat was at the submit)
            assert answer["status"] == "failed" and "no heartbeat" in answer["error"]["message"], answer
        finally:
            victim.process.send_signal(signal.SIGCONT)
        time.sleep(2)
        for client in (planner, other):
            assert client.get(f"{path}/plan/{plan_id}").json()["status"] == "failed"


def test_bad_input(servers: dict[str, Any], table: Table) -> None:
    catalog = pyiceberg_catalog(servers["sync"])
    if not catalog.table_exists("plan.other"):
        catalog.create_table("plan.other", SCHEMA)
    path = "/namespaces/plan/tables/t"
    with http(servers["async_"]) as client:
        plan_id = client.post(f"{path}/plan", json={}).json()["plan-id"]
        fetch_all(client, path, {"status": "submitted", "plan-id": plan_id})
        tasks = client.get(f"{path}/plan/{plan_id}").json()["plan-tasks"]
        for url in (f"{path}/plan/{'A' * 32}", f"{path}/plan/not-a-plan",
                    f"/namespaces/plan/tables/other/plan/{plan_id}"):
            for answer in (client.get(url), client.delete(url)):
                assert answer.status_code == 404 and answer.json()["error"]["type"] == "NoSuchPlanIdException", url
        for token in (f"{plan_id}.{len(tasks)}", tasks[0].replace(".", ".0"), "nope", f"{'A' * 32}.1"):
            answer = client.post(f"{path}/tasks", json={"plan-task": token})
            assert answer.status_code == 404 and answer.json()["error"]["type"] == "NoSuchPlanTaskException"
        other_table = client.post("/namespaces/plan/tables/other/tasks", json={"plan-task": tasks[0]})
        assert other_table.status_code == 404
        assert client.get(f"/namespaces/plan/tables/nope/plan/{plan_id}").json()["error"]["type"] == \
            "NoSuchTableException"
    with http(servers["sync"]) as client:
        bad_bodies = [
            {"filter": {"type": "eq", "term": "nope", "value": 1}},
            {"filter": {"type": "lt", "term": "id", "value": "not a number"}},
            {"filter": {"type": "between", "term": "id"}},
            {"filter": {"type": "eq", "term": "id"}},
            {"filter": {"type": "in", "term": "id", "values": 3}},
            {"filter": {"type": "and", "left": True}},
            {"filter": "cat = 'a'"},
            {"filter": {"type": "eq", "term": {"type": "transform", "transform": "day", "term": "ts"}, "value": 1}},
            {"snapshot-id": 12345},
            {"snapshot-id": "1"},
            {"snapshot-id": table.snapshots()[0].snapshot_id, "start-snapshot-id": 1, "end-snapshot-id": 2},
            {"start-snapshot-id": table.snapshots()[0].snapshot_id},
            {"start-snapshot-id": table.snapshots()[3].snapshot_id,
             "end-snapshot-id": table.snapshots()[1].snapshot_id},
            {"start-snapshot-id": table.snapshots()[2].snapshot_id,  # the start is exclusive: no snapshot at all
             "end-snapshot-id": table.snapshots()[2].snapshot_id},
            {"select": ["nope"]},
            {"stats-fields": "id"},
            {"case-sensitive": "yes"},
            {"surprise": 1},
        ]
        for body in bad_bodies:
            answer = client.post(f"{path}/plan", json=body)
            assert answer.status_code == 400, (body, answer.text)
            assert answer.json()["error"]["type"] == "BadRequestException"
        assert client.post(f"{path}/tasks", json={}).status_code == 400
        assert client.post(f"{path}/tasks", json={"plan-task": "x", "more": 1}).status_code == 400
        assert client.post("/namespaces/plan/tables/nope/plan", json={}).status_code == 404
        deep: Any = True
        for _ in range(500):
            deep = {"type": "not", "child": deep}
        assert client.post(f"{path}/plan", json={"filter": deep}).status_code == 400


def test_planning_needs_select(servers: dict[str, Any], table: Table) -> None:
    server = servers["sync"]
    run_cli(servers["warehouse"], "user", "create", "reader@x.com")
    token = run_cli(servers["warehouse"], "token", "create", "reader@x.com").strip()
    path = "/namespaces/plan/tables/t"
    with http(server) as admin, http(server, token) as reader:
        body = {"filter": FILTERS[2][0], "snapshot-id": table.snapshots()[0].snapshot_id}
        plan_id = admin.post(f"{path}/plan", json=body).json()["plan-id"]
        assert reader.post(f"{path}/plan", json={}).status_code == 403
        assert reader.get(f"{path}/plan/{plan_id}").status_code == 403
        assert reader.delete(f"{path}/plan/{plan_id}").status_code == 403
        assert reader.post(f"{path}/tasks", json={"plan-task": f"{plan_id}.1"}).status_code == 403
        for kind, name, privilege in (("catalog", "main", "USE_CATALOG"), ("schema", "main.plan", "USE_SCHEMA"),
                                      ("table", "main.plan.t", "SELECT")):
            httpx.patch(f"{server.base_url}/api/2.1/unity-catalog/permissions/{kind}/{name}", timeout=30,
                        headers={"Authorization": f"Bearer {ARCO_TOKEN}"},
                        json={"changes": [{"principal": "reader@x.com", "add": [privilege]}]}).raise_for_status()
        assert served(reader, {}) == oracle(table, AlwaysTrue())
