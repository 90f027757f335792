"""The code passes the project's linter, with the rules pyproject.toml selects: drift fails here, not in review."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_linter_finds_nothing_in_src_tests_and_bench() -> None:
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "bench"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
