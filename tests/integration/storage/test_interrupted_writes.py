"""Temporary files of interrupted local writes: a killed process leaves its file, garbage collection removes it
once its grace period has passed, and a failed write removes its own."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arco.pipeline import gc
from arco.pipeline.gc_rules import HOUR, GcPolicy
from arco.storage.base import StorageError, StorageUnavailable, WriteNotApplied
from arco.storage.local import LocalBackend

# The child writes a temporary file as a put does, then waits to be killed before the move into place: a SIGKILL
# between the two steps of a put, made deterministic.
CHILD = """
import sys, time
from arco.storage.local import LocalBackend
LocalBackend(sys.argv[1])._write_temp(b"x" * 100_000)
print("written", flush=True)
time.sleep(120)
"""


def kill_mid_write(root: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root)], stdout=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert child.stdout is not None and child.stdout.readline().strip() == b"written"
    child.send_signal(signal.SIGKILL)
    child.wait(10)


def test_gc_removes_the_temporary_file_of_a_killed_write_after_the_grace_period(tmp_path: Path) -> None:
    storage = LocalBackend(tmp_path / "wh")
    kill_mid_write(tmp_path / "wh")
    left = storage.temp_files()
    assert len(left) == 1 and left[0].size == 100_000
    policy = GcPolicy()
    now = time.time()
    assert gc.temp_file_deletions(storage, policy, now) == []  # within the grace period: maybe a write in progress
    later = now + HOUR + 60
    chosen = gc.temp_file_deletions(storage, policy, later)
    assert [d.key for d in chosen] == [left[0].key]
    storage.put("t/ok", b"a write after the crash works")  # and is not disturbed
    assert gc.remove_temp_files(storage, chosen, policy, later) == 1
    assert storage.temp_files() == []
    assert storage.get("t/ok").data == b"a write after the crash works"


def test_a_temporary_file_rewritten_since_it_was_judged_is_kept(tmp_path: Path) -> None:
    storage = LocalBackend(tmp_path / "wh")
    kill_mid_write(tmp_path / "wh")
    policy = GcPolicy()
    later = time.time() + 2 * HOUR
    chosen = gc.temp_file_deletions(storage, policy, later)
    # Judged as old, but its file is young when removal comes (a fresh write reusing the name, in principle).
    assert gc.remove_temp_files(storage, chosen, policy, time.time()) == 0
    assert len(storage.temp_files()) == 1


def test_a_write_that_fails_between_its_temporary_file_and_the_move_leaves_nothing(tmp_path: Path) -> None:
    storage = LocalBackend(tmp_path / "wh")
    storage.put("a", b"a file where a directory is needed")
    with pytest.raises(StorageError):
        storage.put("a/b", b"cannot be moved into place")  # the temporary file is written, the move fails
    assert storage.temp_files() == []


def test_os_errors_of_the_local_backend_are_storage_unavailable(tmp_path: Path) -> None:
    storage = LocalBackend(tmp_path / "wh")
    storage.put("k", b"v")
    shutil.rmtree(tmp_path / "wh" / ".arco-tmp")  # its temporary directory vanished under a running server
    with pytest.raises(StorageUnavailable) as failed:
        storage.put("k2", b"v")
    assert isinstance(failed.value, WriteNotApplied)  # failed before the object was touched: certainly not written
    assert storage.get("k").data == b"v"  # reads keep working
