"""Listing a local warehouse through its backend, next to a plain walk of the same files, at two sizes.

The tree is a warehouse's receipts: one directory per day, each of many files (gc and compact list them all, in
pages of 1,000). The peer is the least any listing costs: ``os.scandir`` of each directory, sorted, and a ``stat``
of each file. A listing linear in its files keeps its ratio to the peer as the files double; one that re-reads the
directories for every page (as this backend's did) doubles it.

    .venv/bin/python bench/local_listing.py [--files 20000] [--days 2] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from arco.storage.local import LocalBackend


def build(root: Path, files: int, days: int) -> LocalBackend:
    storage = LocalBackend(root, fsync=False)
    per_day = files // days
    for day in range(days):
        folder = root / "_catalog" / "events" / f"2026-11-{day + 1:02d}" / "iceberg" / "committed"
        folder.mkdir(parents=True)
        for i in range(per_day):  # written directly: the listing, not the writes, is measured
            (folder / f"{i:064x}.json").write_bytes(b"{}")
    return storage


def plain_walk(root: Path) -> int:
    count = 0
    stack = [root / "_catalog" / "events"]
    while stack:
        folder = stack.pop()
        for entry in sorted(os.scandir(folder), key=lambda e: e.name, reverse=True):
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            else:
                entry.stat(follow_symlinks=False)
                count += 1
    return count


def timed(fn, rounds: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--days", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("files      listing ms   plain walk ms   ratio")
    for files in (args.files, 2 * args.files):
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            storage = build(root, files, args.days)
            listed = sum(1 for _ in storage.list("_catalog/events/"))
            assert listed == plain_walk(root) == files // args.days * args.days, listed
            listing = timed(lambda: sum(1 for _ in storage.list("_catalog/events/")), args.rounds)  # noqa: B023
            walk = timed(lambda: plain_walk(root), args.rounds)  # noqa: B023
            print(f"{files:>7,}   {listing:10.1f}   {walk:13.1f}   {listing / walk:5.2f}x")


if __name__ == "__main__":
    main()
