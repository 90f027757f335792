"""What a server loads to start: the API's modules, not the libraries only some requests need.

pyarrow (with numpy), boto3 (with botocore), Jinja and httpx were 0.4-0.8 s of a server's 1.5-2.3 s start on a
2-core machine; they are imported where first used (Delta Sharing of Delta tables and change data, the UI's pages,
lineage, S3 signing and vending, a provider's share listing). A module that imports one of them at its top again
shows up here by name."""

from __future__ import annotations

import subprocess
import sys

DEFERRED = ("pyarrow", "numpy", "boto3", "botocore", "jinja2", "httpx", "deltalake", "pandas")

PROBE = """
import sys, traceback, importlib.abc
deferred = set(sys.argv[1:])
found = {}
class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in deferred and name not in found:
            found[name] = [f"{f.filename}:{f.lineno}" for f in traceback.extract_stack()
                           if "/arco/" in f.filename]
        return None
sys.meta_path.insert(0, Watch())
import arco.api.app, arco.cli.main
for name, stack in found.items():
    print(name, "imported by", " <- ".join(reversed(stack)))
"""


def test_a_server_starts_without_the_libraries_of_occasional_requests() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, *DEFERRED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "", done.stdout


def test_the_probe_sees_an_import() -> None:
    """The probe itself notices a library imported at start (so an empty answer above means something)."""
    probe = PROBE.replace("import arco.api.app, arco.cli.main", "import arco.api.app, arco.cli.main, jinja2")
    done = subprocess.run([sys.executable, "-c", probe, "jinja2"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("jinja2 imported by")
