"""Latency of conditional writes and reads on every backend, next to a plain write to the same place.

Absolute times drift on shared machines, so the figure that matters is the ratio to the plain (unconditional)
put measured in the same run against the same server: what compare-and-swap costs on top of a write.

"raced create" is what a race costs: four writers put one new key create-only at the same instant (as servers
appending the same catalog log position do), exactly one must win, and the figure is the slowest of the four
answers; "raced cas" the same for four compare-and-swap puts expecting one version (servers committing to one
table). A store that serialises such writes behind a lock makes its losers wait for it.

    .venv/bin/python bench/storage_latency.py [--rounds 300] [--race-rounds 30] [--only local,s3-seaweedfs]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from percentiles import p50_p99  # noqa: E402

from arco.storage.base import DoesNotExist, MatchesVersion, StorageBackend  # noqa: E402
from arco.storage.factory import open_storage  # noqa: E402
from support import emulators  # noqa: E402

TARGETS = ("local", "memory", "s3-seaweedfs", "s3-moto", "gcs-fake", "azure-azurite")


@contextmanager
def open_target(name: str, workdir: Path) -> Iterator[StorageBackend]:
    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    if name == "local":
        yield open_storage(str(workdir / "local"))
    elif name == "memory":
        yield open_storage(f"memory://{bucket}")
    elif name.startswith("s3-"):
        from arco.storage.s3 import create_bucket

        server = emulators.seaweedfs if name == "s3-seaweedfs" else emulators.moto_server
        with server(workdir) as s3:
            create_bucket(bucket, s3.options())
            yield open_storage(f"s3://{bucket}/bench", s3.options())
    elif name == "gcs-fake":
        from arco.storage.gcs import create_bucket as create_gcs_bucket

        with emulators.fake_gcs(workdir) as gcs:
            create_gcs_bucket(bucket, gcs.options())
            yield open_storage(f"gs://{bucket}/bench", gcs.options())
    else:
        from arco.storage.azure import create_container

        with emulators.azurite(workdir) as az:
            create_container(bucket, az.options())
            yield open_storage(f"az://{bucket}/bench", az.options())


def timed(fn: Callable[[int], object], rounds: int) -> list[float]:
    for i in range(min(20, rounds)):  # warm connections and caches
        fn(-1 - i)
    samples = []
    for i in range(rounds):
        start = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


RACERS = 4


def body(i: int) -> bytes:
    return orjson.dumps({"i": i, "nonce": uuid.uuid4().hex, "pad": "x" * 400})


def raced(rounds: int, write: Callable[[int, int], bool], what: str) -> list[float]:
    """Per round, the slowest answer of :data:`RACERS` conditional writes released together, ``write(round,
    writer)`` saying whether its write won; exactly one must."""
    samples = []
    with ThreadPoolExecutor(RACERS) as pool:
        for i in range(rounds):
            barrier = threading.Barrier(RACERS)

            def race(writer: int, i: int = i, barrier: threading.Barrier = barrier) -> tuple[bool, float]:
                barrier.wait()
                start = time.perf_counter()
                won = write(i, writer)
                return won, (time.perf_counter() - start) * 1000

            answers = list(pool.map(race, range(RACERS)))
            winners = sum(won for won, _ in answers)
            assert winners == 1, f"{winners} of {RACERS} racing {what} succeeded"
            samples.append(max(ms for _, ms in answers))
    return samples


def measure(storage: StorageBackend, rounds: int, race_rounds: int) -> dict[str, list[float]]:
    storage.put("cas", body(0))
    state = {"version": storage.get("cas").version}

    def cas(i: int) -> None:
        written = storage.put("cas", body(i), MatchesVersion(state["version"]))
        assert written.ok, "benchmark CAS lost a race it cannot lose"
        state["version"] = written.version  # type: ignore[union-attr]

    run = uuid.uuid4().hex[:6]
    # The version each round's racers expect: the one its previous round's winner wrote.
    expected = {0: storage.put("raced-cas", body(0)).version}  # type: ignore[union-attr]

    def raced_cas(i: int, writer: int) -> bool:
        written = storage.put("raced-cas", body(writer), MatchesVersion(expected[i]))
        if written.ok:
            expected[i + 1] = written.version  # type: ignore[union-attr]
        return written.ok

    return {
        "plain put": timed(lambda i: storage.put("plain", body(i)), rounds),
        "create-only put": timed(lambda i: storage.put(f"new/{run}/{i}", body(i), DoesNotExist()), rounds),
        "cas put": timed(cas, rounds),
        "get": timed(lambda i: storage.get("cas"), rounds),
        f"raced create ({RACERS})": raced(race_rounds, lambda i, writer: storage.put(
            f"raced/{run}/{i}", body(writer), DoesNotExist()).ok, "create-only puts of one key"),
        f"raced cas ({RACERS})": raced(race_rounds, raced_cas, "compare-and-swap puts of one version"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--race-rounds", type=int, default=30)
    parser.add_argument("--only", default=",".join(TARGETS), help="comma-separated targets")
    args = parser.parse_args()
    print(f"{'backend':<15} {'operation':<16} {'p50 ms':>8} {'p99 ms':>8} {'p50 / plain put':>16}")
    for name in args.only.split(","):
        with ExitStack() as stack:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            storage = stack.enter_context(open_target(name, workdir))
            results = measure(storage, args.rounds, args.race_rounds)
        plain_p50, _ = p50_p99(results["plain put"])
        for op, samples in results.items():
            p50, p99 = p50_p99(samples)
            print(f"{name:<15} {op:<16} {p50:8.3f} {p99:8.3f} {p50 / plain_p50:15.2f}x", flush=True)


if __name__ == "__main__":
    main()
