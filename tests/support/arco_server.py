"""Start a real ``arco serve`` process for a test, and stop it afterwards."""

from __future__ import annotations

import functools
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from support.net import free_port, stop, wait_for_http

ARCO_TOKEN = "e2e-admin-token"  # the admin token of servers the end-to-end tests start
ONE_COLUMN_SCHEMA = {"type": "struct", "schema-id": 0,
                     "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}


@dataclass
class RunningServer:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def iceberg_uri(self) -> str:
        return f"{self.base_url}/iceberg"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)


def start_server(
    warehouse: str | Path,
    workdir: Path,
    *,
    admin_token: str | None = "test-admin-token",
    extra_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    port: int | None = None,
    open_files_soft_limit: int | None = None,
) -> RunningServer:
    """Start ``arco serve`` and wait until it answers; the caller stops it (``stop(server.process)``).

    ``open_files_soft_limit`` starts it with that soft limit on open files, as many systems start processes."""
    port = port or free_port()
    log_path = workdir / f"arco-serve-{port}-{time.monotonic_ns()}.log"
    child_env = {**os.environ, **(env or {})}
    child_env.pop("ARCO_ADMIN_TOKEN", None)
    if admin_token is not None:
        child_env["ARCO_ADMIN_TOKEN"] = admin_token
    cmd = [sys.executable, "-m", "arco.cli.main", "serve", "--warehouse", str(warehouse),
           "--host", "127.0.0.1", "--port", str(port), *extra_args]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=child_env, cwd=workdir,
                                   preexec_fn=None if open_files_soft_limit is None
                                   else functools.partial(_limit_open_files, open_files_soft_limit))
    server = RunningServer(f"http://127.0.0.1:{port}", process, log_path)
    try:
        wait_for_http(f"{server.base_url}/health", timeout=30, process=process, log_path=log_path)
    except BaseException:
        stop(process)
        raise
    return server


def _limit_open_files(soft: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@contextmanager
def arco_server(warehouse: str | Path, workdir: Path, **options: Any) -> Iterator[RunningServer]:
    """:func:`start_server` for a ``with`` block: the server stops when the block ends."""
    server = start_server(warehouse, workdir, **options)
    try:
        yield server
    finally:
        stop(server.process)


def run_cli(warehouse: str | Path, *args: str) -> str:
    """``arco <args> --warehouse <warehouse>`` in a subprocess, as an operator runs it; its stdout."""
    done = subprocess.run([sys.executable, "-m", "arco.cli.main", *args, "--warehouse", str(warehouse)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def iceberg_client(server: RunningServer, catalog: str = "main") -> httpx.Client:
    """An HTTP client for one catalog's Iceberg routes (``/iceberg/v1/<catalog>``), as the admin."""
    return httpx.Client(base_url=f"{server.iceberg_uri}/v1/{catalog}", timeout=30,
                        headers={"Authorization": f"Bearer {ARCO_TOKEN}"})


def get_json(url: str, token: str | None, **kwargs: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(url, headers=headers, timeout=10, **kwargs)  # type: ignore[arg-type]


def wait_until(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(0.05)
