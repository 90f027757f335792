"""PyIceberg appends, as PyIceberg sends them (no Idempotency-Key), through two servers while the store itself
(SeaweedFS) is killed and started again.

An append either fails before its commit (its data file could not be written: the store is down), or its commit
is answered: 200 (its rows are in the table, once), 503 (the commit did not take effect: its rows are not), or
CommitStateUnknownException (the pointer's compare-and-swap was in flight: its rows are in the table once or not
at all). Nothing is lost that was acknowledged, nothing doubled, nothing refused that landed.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitStateUnknownException
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from support.arco_server import ARCO_TOKEN
from support.store_kill import run_clients, servers_on_a_killable_store

pytestmark = pytest.mark.timeout(600)

_fork = multiprocessing.get_context("fork")
WRITERS, STORE_KILLS = 4, 3
SCHEMA = Schema(NestedField(1, "writer", LongType(), required=False), NestedField(2, "n", LongType(), required=False))


def _catalog(uri: str, store: dict[str, str]) -> RestCatalog:
    return RestCatalog("w", uri=uri, warehouse="main", token=ARCO_TOKEN, **store, **{"s3.connect-timeout": "2"})


def _writer(uri: str, store: dict[str, str], writer: int, stop: object, results: object) -> None:
    """Appends one row at a time until told to stop (and at least a few after), sorting each by its outcome."""
    catalog = _catalog(uri, store)
    outcomes: dict[str, list] = {"acked": [], "unknown": [], "failed": [], "errors": []}
    n = 0
    while not stop.is_set() or n < 4:  # type: ignore[attr-defined]
        try:
            table = catalog.load_table("kill.events")
            table.append(pa.table({"writer": pa.array([writer], pa.int64()), "n": pa.array([n], pa.int64())}))
        except CommitStateUnknownException as exc:
            outcomes["unknown"].append(n)
            # PyIceberg calls every 500 so: the server's own error type tells a bug from an unknown outcome.
            outcomes["errors"].append(f"{type(exc).__name__}: {str(exc)[:120]}")
        except Exception as exc:  # noqa: BLE001 - the store was down (a data file, a load) or the commit was refused
            outcomes["failed"].append(n)
            outcomes["errors"].append(type(exc).__name__)
            time.sleep(0.1)
        else:
            outcomes["acked"].append(n)
        n += 1
    results.put((writer, outcomes))  # type: ignore[attr-defined]


def test_pyiceberg_appends_are_never_lost_or_doubled_while_the_store_is_killed(tmp_path: Path) -> None:
    with servers_on_a_killable_store(tmp_path) as killable:
        servers, store = killable.servers, killable.warehouse.options
        setup = _catalog(servers[0].iceberg_uri, store)
        setup.create_namespace("kill")
        setup.create_table("kill.events", SCHEMA)
        stop = _fork.Event()
        killer = killable.killer(STORE_KILLS, seed=3, then=lambda: (time.sleep(0.5), stop.set()))
        outcomes = dict(run_clients(_writer, [(servers[w % 2].iceberg_uri, store, w, stop) for w in range(WRITERS)],
                                    killer))
        assert killable.kills == STORE_KILLS

        rows = _catalog(servers[1].iceberg_uri, store).load_table("kill.events").scan().to_arrow()
        landed = Counter(zip(rows["writer"].to_pylist(), rows["n"].to_pylist(), strict=True))
        assert all(count == 1 for count in landed.values()), "a row was appended twice"
        for writer, sorted_out in outcomes.items():
            for n in sorted_out["acked"]:
                assert landed[(writer, n)] == 1, f"acknowledged append {(writer, n)} lost"
            for n in sorted_out["failed"]:
                assert landed[(writer, n)] == 0, f"append {(writer, n)} answered as failed, but it landed"
        assert set(landed) <= {(w, n) for w, o in outcomes.items() for n in o["acked"] + o["unknown"]}
        for server in killable.servers:
            assert "Traceback" not in server.log()  # an outage is summarized, not a traceback per request
        acked = sum(len(o["acked"]) for o in outcomes.values())
        failed = sum(len(o["failed"]) for o in outcomes.values())
        unknown = sum(len(o["unknown"]) for o in outcomes.values())
        assert failed > 0, "the store was never down while an append was made"
        errors = Counter(error for o in outcomes.values() for error in o["errors"])
        assert all("InternalServerError" not in error for error in errors), errors
        print(f"\n{acked} appends acknowledged, {failed} failed, {unknown} of unknown outcome "
              f"({sum(landed[(w, n)] for w, o in outcomes.items() for n in o['unknown'])} of them landed), "
              f"{killable.kills} store kills; errors: {dict(errors)}")
