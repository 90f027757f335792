"""PyIceberg appends, as PyIceberg sends them (no Idempotency-Key), through two servers while the store itself
(SeaweedFS) is killed and started again.

An append either fails before its commit (its data file could not be written: the store is down), or its commit
is answered: 200 (its rows are in the table, once), 503 (the commit did not take effect: its rows are not), or
CommitStateUnknownException (the pointer's compare-and-swap was in flight: its rows are in the table once or not
at all). Nothing is lost that was acknowledged, nothing doubled, nothing refused that landed.
"""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitStateUnknownException
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from uuid6 import uuid7

from arco.storage.s3 import create_bucket
from support import emulators
from support.arco_server import ARCO_TOKEN, arco_server

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
    seaweedfs = emulators.restartable_seaweedfs(tmp_path / "store")
    with ExitStack() as stack:
        store = stack.enter_context(seaweedfs.start())
        bucket = f"appends-{uuid7().hex[:8]}"
        create_bucket(bucket, store.options())
        args = tuple(f"--storage-option={k}={v}" for k, v in store.options().items())
        servers = [stack.enter_context(arco_server(f"s3://{bucket}/wh", tmp_path, admin_token=ARCO_TOKEN,
                                                   extra_args=args)) for _ in range(2)]
        setup = _catalog(servers[0].iceberg_uri, store.options())
        setup.create_namespace("kill")
        setup.create_table("kill.events", SCHEMA)
        stop, results = _fork.Event(), _fork.Queue()
        writers = [_fork.Process(target=_writer, args=(servers[w % 2].iceberg_uri, store.options(), w, stop, results))
                   for w in range(WRITERS)]
        for p in writers:
            p.start()
        kills = 0

        def killer() -> None:
            nonlocal kills, store
            rng = random.Random(3)
            for _ in range(STORE_KILLS):
                time.sleep(rng.uniform(0.5, 1.5))
                emulators.kill(store)
                kills += 1
                time.sleep(rng.uniform(0.1, 0.5))
                store = stack.enter_context(seaweedfs.start())
            time.sleep(0.5)
            stop.set()

        killing = threading.Thread(target=killer)
        killing.start()
        killing.join(300)
        outcomes = dict(results.get(timeout=300) for _ in writers)
        for p in writers:
            p.join(30)
            assert p.exitcode == 0
        assert kills == STORE_KILLS

        rows = _catalog(servers[1].iceberg_uri, store.options()).load_table("kill.events").scan().to_arrow()
        landed = Counter(zip(rows["writer"].to_pylist(), rows["n"].to_pylist(), strict=True))
        assert all(count == 1 for count in landed.values()), "a row was appended twice"
        for writer, sorted_out in outcomes.items():
            for n in sorted_out["acked"]:
                assert landed[(writer, n)] == 1, f"acknowledged append {(writer, n)} lost"
            for n in sorted_out["failed"]:
                assert landed[(writer, n)] == 0, f"append {(writer, n)} answered as failed, but it landed"
        assert set(landed) <= {(w, n) for w, o in outcomes.items() for n in o["acked"] + o["unknown"]}
        acked = sum(len(o["acked"]) for o in outcomes.values())
        failed = sum(len(o["failed"]) for o in outcomes.values())
        unknown = sum(len(o["unknown"]) for o in outcomes.values())
        assert failed > 0, "the store was never down while an append was made"
        errors = Counter(error for o in outcomes.values() for error in o["errors"])
        assert all("InternalServerError" not in error for error in errors), errors
        print(f"\n{acked} appends acknowledged, {failed} failed, {unknown} of unknown outcome "
              f"({sum(landed[(w, n)] for w, o in outcomes.items() for n in o['unknown'])} of them landed), "
              f"{kills} store kills; errors: {dict(errors)}")
