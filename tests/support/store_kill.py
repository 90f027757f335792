"""Servers on an object store that the test kills and starts again, and client processes that run meanwhile.

The store is a real SeaweedFS (:func:`support.emulators.restartable_seaweedfs`): killed with SIGKILL, so requests in
flight are cut on the wire, then started again on the same data and ports, so the servers reconnect to the same
warehouse at the same endpoint.
"""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uuid6 import uuid7

from arco.storage.base import StorageBackend, StorageError
from arco.storage.factory import open_storage
from arco.storage.s3 import create_bucket
from support import emulators
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, wait_until
from support.storage_targets import StorageTarget

_fork = multiprocessing.get_context("fork")
PROBE_KEY, PROBE = "ready", b"ready"  # an object beside the warehouse, read to tell that the store serves again


@dataclass
class KillableStore:
    seaweedfs: emulators.RestartableSeaweedFS
    store: emulators.S3Server  # the running instance
    warehouse: StorageTarget
    servers: list[RunningServer]
    stack: ExitStack
    kills: int = 0

    def kill(self) -> None:
        emulators.kill(self.store)
        self.kills += 1

    def restart(self) -> None:
        """Start the store again and return once it serves the objects it held: SeaweedFS opens its S3 port
        before its volume server has registered, and reads answer "volume not found" until then."""
        self.store = self.stack.enter_context(self.seaweedfs.start())
        probe = _probe_storage(self.warehouse)

        def serves() -> bool:
            try:
                return probe.get(PROBE_KEY).data == PROBE
            except StorageError:
                return False
        wait_until(serves, timeout=60)

    def killer(self, kills: int, seed: int, then: Callable[[], None] | None = None) -> Callable[[], None]:
        """What a thread runs: ``kills`` times, wait 0.5-1.5 s, kill the store, start it again 0.1-0.5 s later."""
        def run() -> None:
            rng = random.Random(seed)
            for _ in range(kills):
                time.sleep(rng.uniform(0.5, 1.5))
                self.kill()
                time.sleep(rng.uniform(0.1, 0.5))
                self.restart()
            if then is not None:
                then()
        return run


def _probe_storage(warehouse: StorageTarget) -> StorageBackend:
    return open_storage(warehouse.url.removesuffix("/wh") + "/probe", warehouse.options)


@contextmanager
def servers_on_a_killable_store(workdir: Path, servers: int = 2,
                                extra_args: tuple[str, ...] = ()) -> Iterator[KillableStore]:
    """``servers`` ``arco serve`` processes (admin token :data:`ARCO_TOKEN`) on one warehouse in a fresh bucket."""
    seaweedfs = emulators.restartable_seaweedfs(workdir / "store")
    with ExitStack() as stack:
        store = stack.enter_context(seaweedfs.start())
        bucket = f"kill-{uuid7().hex[:8]}"
        create_bucket(bucket, store.options())
        warehouse = StorageTarget("s3-seaweedfs", f"s3://{bucket}/wh", store.options())
        _probe_storage(warehouse).put(PROBE_KEY, PROBE)
        args = (*extra_args, *warehouse.cli_options())
        running = [stack.enter_context(arco_server(warehouse.url, workdir, admin_token=ARCO_TOKEN, extra_args=args))
                   for _ in range(servers)]
        yield KillableStore(seaweedfs, store, warehouse, running, stack)


def run_clients(target: Callable[..., None], args: list[tuple[Any, ...]], alongside: Callable[[], None],
                timeout_s: float = 500) -> list[Any]:
    """One forked process per ``args`` entry runs ``target(*entry, results)`` and puts one result on ``results``;
    ``alongside`` runs in a thread meanwhile. The results, once every process has ended well."""
    results = _fork.Queue()
    processes = [_fork.Process(target=target, args=(*entry, results)) for entry in args]
    for process in processes:
        process.start()
    thread = threading.Thread(target=alongside)
    thread.start()
    outcomes = [results.get(timeout=timeout_s) for _ in processes]
    thread.join(120)
    for process in processes:
        process.join(30)
        assert process.exitcode == 0
    return outcomes
