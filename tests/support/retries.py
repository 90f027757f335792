"""A client's retry loop for keyed requests, as the README tells clients to write one."""

from __future__ import annotations

import random
import time

import httpx


def send_until_answered(urls: list[str], body: dict, key: str, stats: dict[str, int], headers: dict[str, str]) -> int:
    """POST ``body`` with Idempotency-Key ``key`` to any of ``urls`` until a server gives a final answer (2xx or a
    deterministic 4xx), as the README tells clients to retry; counts what came before in ``stats``
    (``connection_errors``, ``status_503``, and other 5xx by status and error type)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        url = random.choice(urls)
        try:
            response = httpx.post(url, json=body, headers={**headers, "Idempotency-Key": key}, timeout=10)
        except httpx.TransportError:
            stats["connection_errors"] = stats.get("connection_errors", 0) + 1
            time.sleep(0.05)
            continue
        if response.status_code < 500:
            return response.status_code
        name = f"status_{response.status_code}"
        if response.status_code != 503:  # which kind of 5xx: a bug's 500 is not CommitStateUnknownException's
            name += f" {response.json().get('error', {}).get('type')}"
        stats[name] = stats.get(name, 0) + 1
        time.sleep(min(float(response.headers.get("Retry-After", "0.1")), 0.3))
    raise TimeoutError(f"no final answer for key {key}")
