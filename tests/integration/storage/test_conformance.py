"""The storage contract, checked the same way on every backend against a real server.

Each test gets a fresh, empty prefix of one target (see ``storage_target`` in conftest). Races run in separate
processes (threads for the in-memory backend, which lives in one process) that start together on a barrier, so
they really contend.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import orjson
import pytest

from arco.storage.base import (
    Deleted,
    DoesNotExist,
    InvalidKey,
    MatchesVersion,
    NotFound,
    PreconditionFailed,
    StorageBackend,
    Written,
)
from arco.storage.probe import probe_conditional_writes
from support.storage_targets import StorageTarget

pytestmark = pytest.mark.timeout(300)

_fork = multiprocessing.get_context("fork")


def race(target: StorageTarget, worker: Callable[..., Any], count: int, *args: Any) -> list[Any]:
    """Run ``worker(backend, index, *args)`` ``count`` times at once; return the results in index order."""
    if not target.shared_across_processes:
        backend = target.open()
        # Started together, as the processes below are: a thread started early could otherwise finish its work
        # before the last one starts, and the race would not happen.
        start = threading.Barrier(count)

        def run(i: int) -> Any:
            start.wait(timeout=60)
            return worker(backend, i, *args)

        with ThreadPoolExecutor(count) as pool:
            return list(pool.map(run, range(count)))
    barrier = _fork.Barrier(count)
    results = _fork.Queue()
    processes = [
        _fork.Process(target=_run_in_child, args=(target, worker, barrier, results, i, args)) for i in range(count)
    ]
    for p in processes:
        p.start()
    collected = dict(results.get(timeout=240) for _ in processes)
    for p in processes:
        p.join(30)
    errors = {i: r for i, r in collected.items() if isinstance(r, _ChildError)}
    assert not errors, f"workers failed: {errors}"
    return [collected[i] for i in range(count)]


class _ChildError(str):
    pass


def _run_in_child(target: StorageTarget, worker: Callable[..., Any], barrier: Any, results: Any, index: int,
                  args: tuple[Any, ...]) -> None:
    try:
        backend = target.open()  # a client of its own, as another server process would have
        barrier.wait(timeout=60)
        results.put((index, worker(backend, index, *args)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        results.put((index, _ChildError(f"{type(exc).__name__}: {exc}")))


def counter_bytes(n: int) -> bytes:
    # A nonce makes every write's bytes unique: S3 versions are content hashes (see arco.storage.base).
    return orjson.dumps({"n": n, "nonce": uuid.uuid4().hex})


# -- basic reads and writes ---------------------------------------------------------------------------------


def test_put_then_get_returns_bytes_and_the_written_version(storage: StorageBackend) -> None:
    written = storage.put("obj.json", b'{"a": 1}')
    assert isinstance(written, Written)
    got = storage.get("obj.json")
    assert got.data == b'{"a": 1}'
    assert got.version == written.version
    meta = storage.head("obj.json")
    assert meta is not None and meta.size == 8 and meta.version == written.version and meta.key == "obj.json"


def test_missing_object(storage: StorageBackend) -> None:
    with pytest.raises(NotFound):
        storage.get("missing/object")
    assert storage.head("missing/object") is None
    assert storage.get_or_none("missing/object") is None


def test_empty_and_binary_objects_round_trip(storage: StorageBackend) -> None:
    binary = bytes(range(256)) * 64 + b"\x00\xff\r\n"
    storage.put("empty", b"")
    storage.put("binary.bin", binary)
    assert storage.get("empty").data == b""
    assert storage.head("empty").size == 0  # type: ignore[union-attr]
    assert storage.get("binary.bin").data == binary


def test_large_object_round_trips(storage: StorageBackend) -> None:
    payload = os.urandom(6 * 1024 * 1024)
    storage.put("large.bin", payload)
    assert storage.get("large.bin").data == payload


@pytest.mark.parametrize(
    "key",
    ["with space/file name.json", "ünïcødé/日本語/ключ.json", "sym+bols/a=b&c%20d,e;f@g.json", "a/b/c/d/e/f/g/h"],
)
def test_keys_with_spaces_and_non_ascii(storage: StorageBackend, key: str) -> None:
    written = storage.put(key, key.encode())
    assert storage.get(key).data == key.encode()
    assert [m.key for m in storage.list(key.split("/")[0] + "/")] == [key]
    assert storage.delete(key, MatchesVersion(written.version)).ok  # type: ignore[union-attr]
    assert storage.head(key) is None


def test_get_if_changed_answers_nothing_for_the_same_version_and_the_object_for_another(
        storage: StorageBackend) -> None:
    first = storage.put("conditional-get", b"one")
    assert storage.get_if_changed("conditional-get", first.version) is None  # type: ignore[union-attr]
    second = storage.put("conditional-get", b"two")
    found = storage.get_if_changed("conditional-get", first.version)  # type: ignore[union-attr]
    assert found is not None and found.data == b"two" and found.version == second.version  # type: ignore[union-attr]
    with pytest.raises(NotFound):
        storage.get_if_changed("no-such-object", first.version)  # type: ignore[union-attr]


@pytest.mark.parametrize("key", ["", "/abs", "a//b", "a/../b", "..", "./a", "a/", "ctl\x01key", "nul\x00", "x" * 300])
def test_invalid_keys_are_refused_everywhere(storage: StorageBackend, key: str) -> None:
    with pytest.raises(InvalidKey):
        storage.put(key, b"x")
    with pytest.raises(InvalidKey):
        storage.get(key)


# -- preconditions ------------------------------------------------------------------------------------------


def test_create_only_put(storage: StorageBackend) -> None:
    first = storage.put("once", b"first", DoesNotExist())
    assert isinstance(first, Written)
    second = storage.put("once", b"second", DoesNotExist())
    assert isinstance(second, PreconditionFailed)
    assert storage.get("once").data == b"first"


def test_version_matched_put(storage: StorageBackend) -> None:
    v1 = storage.put("cas", b"one")
    assert isinstance(v1, Written)
    v2 = storage.put("cas", b"two", MatchesVersion(v1.version))
    assert isinstance(v2, Written) and v2.version != v1.version
    stale = storage.put("cas", b"three", MatchesVersion(v1.version))
    assert isinstance(stale, PreconditionFailed)
    got = storage.get("cas")
    assert got.data == b"two" and got.version == v2.version


def test_version_matched_put_on_missing_object_fails(storage: StorageBackend) -> None:
    v1 = storage.put("gone", b"x")
    storage.delete("gone")
    assert isinstance(storage.put("gone", b"y", MatchesVersion(v1.version)), PreconditionFailed)  # type: ignore[union-attr]
    assert storage.head("gone") is None


def test_a_b_a_with_unique_bytes_is_detected(storage: StorageBackend) -> None:
    """Content returning to an earlier value must not let a stale CAS through, given unique bytes per write."""
    v1 = storage.put("aba", counter_bytes(1))
    storage.put("aba", counter_bytes(2))
    storage.put("aba", counter_bytes(1))
    assert isinstance(storage.put("aba", b"stale", MatchesVersion(v1.version)), PreconditionFailed)  # type: ignore[union-attr]


def test_unconditional_overwrite_and_delete(storage: StorageBackend) -> None:
    storage.put("plain", b"a")
    storage.put("plain", b"b")
    assert storage.get("plain").data == b"b"
    assert isinstance(storage.delete("plain"), Deleted)
    assert storage.head("plain") is None
    assert isinstance(storage.delete("plain"), Deleted)  # deleting a missing object is not an error


def test_conditional_delete(storage: StorageBackend, storage_target: StorageTarget) -> None:
    v1 = storage.put("del", b"1")
    v2 = storage.put("del", b"2", MatchesVersion(v1.version))  # type: ignore[union-attr]
    if not storage_target.conditional_delete_enforced:
        pytest.xfail(f"{storage_target.name} ignores the precondition on DELETE (known emulator limit)")
    stale = storage.delete("del", MatchesVersion(v1.version))  # type: ignore[union-attr]
    assert isinstance(stale, PreconditionFailed)
    assert storage.get("del").data == b"2"
    assert isinstance(storage.delete("del", MatchesVersion(v2.version)), Deleted)  # type: ignore[union-attr]
    assert storage.head("del") is None


def test_read_after_write_across_clients(storage: StorageBackend, storage_target: StorageTarget) -> None:
    other = storage_target.open() if storage_target.shared_across_processes else storage
    storage.put("raw/k", b"v1")
    assert other.get("raw/k").data == b"v1"
    storage.put("raw/k", b"v2")
    assert other.get("raw/k").data == b"v2"
    assert [m.key for m in other.list("raw/")] == ["raw/k"]
    storage.delete("raw/k")
    assert other.head("raw/k") is None
    assert list(other.list("raw/")) == []


def test_the_probe_accepts_the_backend(storage: StorageBackend, storage_target: StorageTarget) -> None:
    report = probe_conditional_writes(storage)
    assert report.conditional_put
    assert report.conditional_delete == storage_target.conditional_delete_enforced
    assert list(storage.list("_catalog/probes/")) == []


# -- listing ------------------------------------------------------------------------------------------------


def test_listing_2500_keys_with_pagination(storage: StorageBackend) -> None:
    keys = sorted(f"many/{i % 7}/obj-{i:05d}" for i in range(2500))
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: storage.put(k, k.encode()), keys))
    storage.put("many-sibling", b"not under many/")
    for page_size in (1000, 333):
        seen: list[str] = []
        token = None
        pages = 0
        while True:
            page = storage.list_page("many/", page_size=page_size, page_token=token)
            assert len(page.objects) <= page_size
            seen.extend(m.key for m in page.objects)
            pages += 1
            token = page.next_token
            if token is None:
                break
        assert seen == keys
        assert pages in (-(-2500 // page_size), -(-2500 // page_size) + 1)
    assert [m.key for m in storage.list("many/3/")] == [k for k in keys if k.startswith("many/3/")]
    # Both "many-sibling" and "many/..." match the prefix "many"; where the sibling comes is backend-specific
    # ("-" sorts before "/", but SeaweedFS lists a directory's entries before its siblings).
    everything = [m.key for m in storage.list("many")]
    assert sorted(everything) == sorted([*keys, "many-sibling"]) and len(set(everything)) == len(everything)


def test_listing_with_a_partial_segment_prefix(storage: StorageBackend) -> None:
    for key in ("p/ab", "p/abc/d", "p/b", "p/a"):
        storage.put(key, b"")
    assert [m.key for m in storage.list("p/ab")] == ["p/ab", "p/abc/d"]
    assert [m.key for m in storage.list("p/")] == ["p/a", "p/ab", "p/abc/d", "p/b"]
    meta = next(iter(storage.list("p/b")))
    assert meta.size == 0 and meta.version == storage.head("p/b").version  # type: ignore[union-attr]


# -- races ----------------------------------------------------------------------------------------------------


def _create_once(backend: StorageBackend, index: int) -> bool:
    return backend.put("race/create", f"writer-{index}".encode(), DoesNotExist()).ok


def test_sixteen_writers_race_a_create_only_put(storage: StorageBackend, storage_target: StorageTarget) -> None:
    wins = race(storage_target, _create_once, 16)
    assert wins.count(True) == 1
    winner = wins.index(True)
    assert storage.get("race/create").data == f"writer-{winner}".encode()


def _increment(backend: StorageBackend, index: int, times: int) -> int:
    conflicts = 0
    for _ in range(times):
        while True:
            current = backend.get("race/counter")
            n = orjson.loads(current.data)["n"]
            time.sleep(0)  # let the others run between the read and the write, as a network call would
            if backend.put("race/counter", counter_bytes(n + 1), MatchesVersion(current.version)).ok:
                break
            conflicts += 1
    return conflicts


def test_eight_writers_increment_a_counter_without_losing_an_update(
    storage: StorageBackend, storage_target: StorageTarget
) -> None:
    storage.put("race/counter", counter_bytes(0))
    # Writers that are threads of this process (the in-memory backend) switch only every few milliseconds, long
    # enough for one to finish all its increments alone: switch as often as possible so that they interleave.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        conflicts = race(storage_target, _increment, 8, 50)
    finally:
        sys.setswitchinterval(interval)
    assert orjson.loads(storage.get("race/counter").data)["n"] == 400
    assert sum(conflicts) > 0, "the writers never contended; the race proves nothing"


def _delete_or_update(backend: StorageBackend, index: int, version: str) -> str:
    if index == 0:
        return "deleted" if backend.delete("race/victim", MatchesVersion(version)).ok else "lost"
    return "updated" if backend.put("race/victim", counter_bytes(index), MatchesVersion(version)).ok else "lost"


def test_conditional_delete_races_a_cas_update(storage: StorageBackend, storage_target: StorageTarget) -> None:
    if not storage_target.conditional_delete_enforced:
        pytest.xfail(f"{storage_target.name} ignores the precondition on DELETE (known emulator limit)")
    for _ in range(5):
        version = storage.put("race/victim", counter_bytes(-1)).version  # type: ignore[union-attr]
        outcomes = race(storage_target, _delete_or_update, 2, version)
        assert sorted(outcomes) in (["deleted", "lost"], ["lost", "updated"])
        exists = storage.head("race/victim") is not None
        assert exists == ("updated" in outcomes)


def _tombstone_or_update(backend: StorageBackend, index: int, version: str) -> str:
    body = b'{"tombstone": true, "nonce": "%d"}' % index if index == 0 else counter_bytes(index)
    return ("tombstoned" if index == 0 else "updated") if backend.put(
        "race/tomb", body, MatchesVersion(version)
    ).ok else "lost"


def test_tombstone_races_a_cas_update(storage: StorageBackend, storage_target: StorageTarget) -> None:
    """The delete that works on every backend: a tombstone written with a version-matched put."""
    for _ in range(5):
        version = storage.put("race/tomb", counter_bytes(-1)).version  # type: ignore[union-attr]
        outcomes = race(storage_target, _tombstone_or_update, 4, version)
        assert outcomes.count("lost") == 3
        final = orjson.loads(storage.get("race/tomb").data)
        assert final.get("tombstone", False) == ("tombstoned" in outcomes)
