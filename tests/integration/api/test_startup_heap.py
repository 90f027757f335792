"""A serving process freezes its startup heap (arco.api.heap): the collector's full passes walk what serving made,
not the ~120,000 objects of the imported libraries, the application and the catalog read at start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import gc, sys
from arco.settings import ServerSettings
from arco.api.app import served_app
served_app(ServerSettings(warehouse=sys.argv[1]))
print(gc.get_freeze_count(), len(gc.get_objects()))
"""


def test_a_served_app_leaves_its_startup_heap_out_of_the_collectors_passes(tmp_path: Path) -> None:
    # In a process of its own: frozen objects stay frozen for the life of the process.
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "warehouse")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    frozen, walked = map(int, done.stdout.split())
    assert frozen > 50_000  # the libraries and the application
    assert walked < frozen / 20  # what a full collection still walks
