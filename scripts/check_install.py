"""Check the install a user gets from `./run.sh setup` (runtime dependencies only, no test packages).

CI runs this on a fresh clone right after `./run.sh setup` and before the test dependencies are installed, so a
module that imports a package only the tests install fails here, as it would for a user:

1. every import statement in src/arco (also those inside functions, which a plain import of each module would
   not reach) names a module that imports;
2. `arco serve` starts on a new local warehouse and answers every GET route of every API without a 500, and the
   code paths that import lazily (a Delta Sharing provider's shares) run;
3. each `arco pipeline` job runs on that warehouse (Spark on local[2]; needs Java 17);
4. every module of the package has bytecode current with its source (setup compiles it: an editable install is not
   compiled by pip, and where PYTHONDONTWRITEBYTECODE is set Python would compile it again at every start).

Usage: .venv/bin/python scripts/check_install.py [--skip-pipeline]
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "src" / "arco"
TOKEN = "install-check-token"
TEST_ONLY = ("pytest", "moto", "databricks.sdk", "duckdb")


def imported_modules() -> set[str]:
    """Every absolute module name imported anywhere in the package, except imports guarded by ImportError."""
    names: set[str] = set()
    for path in SOURCE.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        guarded = {id(node) for handler in ast.walk(tree) if isinstance(handler, ast.Try)
                   and any("ImportError" in ast.unparse(h.type or ast.Name("")) for h in handler.handlers)
                   for node in ast.walk(ast.Module(body=handler.body, type_ignores=[]))}
        for node in ast.walk(tree):
            if id(node) in guarded:
                continue
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
    return names


def check_imports() -> None:
    failures = []
    for name in sorted(imported_modules()):
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - every kind of failure is reported
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    present = [name for name in TEST_ONLY if _importable(name)]
    if present:
        print(f"note: test-only packages are installed here ({', '.join(present)}); this check is only faithful "
              "in a venv made by `./run.sh setup` alone", file=sys.stderr)
    if failures:
        sys.exit("imports that fail in the runtime install (add the package to pyproject's dependencies):\n  "
                 + "\n  ".join(failures))
    print(f"ok: {len(imported_modules())} imported modules resolve in the runtime install")


def stale_bytecode(sources: list[Path]) -> list[str]:
    """The source files whose cached bytecode is missing or does not match them, by the rule the import system
    applies to a timestamp-checked ``.pyc`` (its header's magic number, flags, source mtime and size)."""
    stale = []
    for path in sources:
        cached = Path(importlib.util.cache_from_source(str(path)))
        source = path.stat()
        try:
            header = cached.read_bytes()[:16]
        except OSError:
            header = b""
        expected = (importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
                    + (int(source.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
                    + (source.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
        if header != expected:
            stale.append(str(path.relative_to(REPO)))
    return stale


def check_bytecode() -> None:
    sources = sorted(SOURCE.rglob("*.py"))
    stale = stale_bytecode(sources)
    if stale:
        sys.exit(f"{len(stale)} modules have no current bytecode after setup (run.sh's compile_package), e.g. "
                 + ", ".join(stale[:5]))
    print(f"ok: the package's {len(sources)} modules are byte-compiled")


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
        return True
    except Exception:  # noqa: BLE001
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def call(base: str, method: str, path: str, body: object | None = None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def check_server(warehouse: Path, arco: Path) -> None:
    from arco.api.app import create_app
    from arco.settings import ServerSettings

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(warehouse.parent / "serve.log", "wb")  # noqa: SIM115 - closed when the server stops
    server = subprocess.Popen([str(arco), "serve", "--warehouse", str(warehouse), "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "ARCO_ADMIN_TOKEN": TOKEN})
    try:
        deadline = time.monotonic() + 60
        while not _up(base):
            if server.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"arco serve did not start:\n{(warehouse.parent / 'serve.log').read_text()}")
            time.sleep(0.2)
        _populate(base)
        failures = []
        routes = create_app(ServerSettings(warehouse=str(warehouse))).routes
        for path in sorted(_get_paths(routes)):
            status, text = call(base, "GET", path)
            if status >= 500 and status not in (501, 502):
                failures.append(f"GET {path}: {status} {text[:200]}")
        status, text = call(base, "GET", "/api/2.1/unity-catalog/providers/check/shares")
        if status != 502:  # the provider's sharing server is not there: a clear 502, not a 500
            failures.append(f"GET provider shares: {status} {text[:200]}")
        if failures:
            sys.exit("routes that fail in the runtime install:\n  " + "\n  ".join(failures))
        print(f"ok: arco serve answered {len(_get_paths(routes))} GET routes without a server error")
    finally:
        server.terminate()
        server.wait(30)


def _up(base: str) -> bool:
    try:
        urllib.request.urlopen(base + "/health", timeout=2)
        return True
    except OSError:
        return False


def _populate(base: str) -> None:
    """A schema, an Iceberg table and a provider, so routes with names have something to find."""
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False,
                                                            "type": "long"}]}
    for method, path, body in (
        ("POST", "/iceberg/v1/main/namespaces", {"namespace": ["check"]}),
        ("POST", "/iceberg/v1/main/namespaces/check/tables", {"name": "t", "schema": schema}),
        ("POST", "/api/2.1/unity-catalog/providers", {
            "name": "check", "authentication_type": "TOKEN",
            "recipient_profile_str": json.dumps({"shareCredentialsVersion": 1, "endpoint": "http://127.0.0.1:9/",
                                                 "bearerToken": "x"})}),
    ):
        status, text = call(base, method, path, body)
        if status != 200:
            sys.exit(f"{method} {path}: {status} {text[:300]}")


def _get_paths(routes: list) -> set[str]:  # type: ignore[type-arg]
    """Every GET path of the app, with names filled in (main, check, t): lists, gets and lookups."""
    fill = {"prefix": "main", "namespace": "check", "table": "t", "name": "check", "full_name": "main.check.t",
            "metastore_id": "check", "workspace_id": "0", "securable_type": "catalog", "id": "check",
            "share": "check", "schema": "check", "activation_url": "check"}
    paths = set()
    for route in routes:
        inner = getattr(route, "routes", None)
        if inner is not None:
            mount = route.path.rstrip("/")
            paths.update(mount + p for p in _get_paths(inner))
        elif "GET" in (getattr(route, "methods", None) or ()):
            path = route.path
            for key in getattr(route, "param_convertors", {}):
                path = path.replace("{" + key + "}", fill.get(key, "check")).replace(
                    "{" + key + ":path}", fill.get(key, "check"))
            paths.add(path)
    return paths


def check_pipeline(warehouse: Path, arco: Path) -> None:
    for job in (["compact"], ["reconcile"], ["gc", "--dry-run"], ["maintain"]):
        done = subprocess.run([str(arco), "pipeline", *job, "--warehouse", str(warehouse)], capture_output=True,
                              text=True, timeout=900)
        if done.returncode != 0:
            sys.exit(f"arco pipeline {' '.join(job)} failed in the runtime install:\n{done.stderr[-3000:]}")
        print(f"ok: arco pipeline {' '.join(job)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-pipeline", action="store_true", help="do not run the Spark jobs")
    args = parser.parse_args()
    arco = Path(sys.executable).parent / "arco"
    check_imports()
    check_bytecode()
    with tempfile.TemporaryDirectory(prefix="arco-install-check-") as tmp:
        warehouse = Path(tmp) / "warehouse"
        check_server(warehouse, arco)
        if not args.skip_pipeline:
            check_pipeline(warehouse, arco)


if __name__ == "__main__":
    main()
