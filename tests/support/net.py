"""Ports and readiness checks for servers the tests start on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path | None, lines: int = 40) -> str:
    if path is None or not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def wait_for_http(
    url: str,
    timeout: float = 30.0,
    *,
    process: subprocess.Popen[bytes] | None = None,
    log_path: Path | None = None,
    accept_status: tuple[int, ...] = (),
) -> None:
    """Wait until ``url`` answers (any 2xx, or a status in ``accept_status``); fail early if ``process`` exits."""
    deadline = time.monotonic() + timeout
    last_error = ""
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with code {process.returncode} before answering {url}\n"
                               f"{_tail(log_path)}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError as exc:
            if exc.code in accept_status:
                return
            last_error = f"HTTP {exc.code}"
        except (OSError, urllib.error.URLError) as exc:
            last_error = str(exc)
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f}s ({last_error})\n{_tail(log_path)}")


def stop(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Terminate a server, then kill it if it has not exited within ``grace`` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(grace)
