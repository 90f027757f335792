"""The README's and docs' code blocks are recipes that work as pasted.

Every fenced block in README.md and docs/*.md carries a marker on the line before it: ``<!-- recipe: NAME -->``
(run here, in file order, as written) or ``<!-- illustrative: WHY -->`` (not run, with the reason: it serves
forever, needs a cluster, is the test command itself...). A block without a marker fails the suite, so a new
recipe cannot go untested by accident.

Recipes run against a real ``arco serve`` on a fresh local warehouse, with the environment a reader has after the
README's setup: ``ARCO_TOKEN`` (the admin's token) and ``ARCO_WAREHOUSE`` (the served warehouse) exported, the
repository as the working directory. The only change made to a block is the server's address: recipes say
``127.0.0.1:8181``, the test's server listens on a free port.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.arco_server import ARCO_TOKEN, RunningServer, arco_server

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!-- (recipe: (?P<name>[\w-]+)|illustrative: (?P<why>.+?)) -->$")
RUNNERS = {"bash", "sh", "python", "sql"}

pytestmark = [pytest.mark.timeout(900)]


@dataclass(frozen=True)
class Block:
    document: str
    line: int
    language: str
    code: str
    recipe: str | None  # the recipe's name, or None for an illustrative block
    marked: bool

    @property
    def where(self) -> str:
        return f"{self.document}:{self.line}"


def blocks(path: Path) -> Iterator[Block]:
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        mark = MARK.match(previous.strip())
        yield Block(path.name, index + 1, opening.group(1), "\n".join(lines[index + 1:end]) + "\n",
                    mark.group("name") if mark else None, mark is not None)
        index = end + 1


ALL_BLOCKS = [block for document in DOCUMENTS for block in blocks(document)]
RECIPES = [block for block in ALL_BLOCKS if block.recipe]


def test_every_code_block_is_a_recipe_or_marked_illustrative() -> None:
    unmarked = [block.where for block in ALL_BLOCKS if not block.marked]
    assert not unmarked, f"code blocks with neither <!-- recipe: NAME --> nor <!-- illustrative: WHY -->: {unmarked}"
    unrunnable = [block.where for block in RECIPES if block.language not in RUNNERS]
    assert not unrunnable, f"recipes in a language this test cannot run: {unrunnable}"
    names = [block.recipe for block in RECIPES]
    assert len(names) == len(set(names)), "recipe names must be unique"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("recipes")
    with arco_server(workdir / "warehouse", workdir, admin_token=ARCO_TOKEN) as running:
        running.warehouse = str(workdir / "warehouse")  # type: ignore[attr-defined]
        yield running


def run(block: Block, server: RunningServer) -> subprocess.CompletedProcess[str]:
    address = server.base_url.removeprefix("http://")
    code = block.code.replace("127.0.0.1:8181", address)
    env = {**os.environ, "ARCO_TOKEN": ARCO_TOKEN, "ARCO_WAREHOUSE": server.warehouse,  # type: ignore[attr-defined]
           "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests")])}
    if block.language in ("bash", "sh"):
        command = ["bash", "-euo", "pipefail", "-c", code]
    elif block.language == "python":
        command = [sys.executable, "-c", code]
    else:  # DuckDB SQL, with the extensions loaded from their PyPI wheels (no download) and the token filled in
        script = ("from support.duckdb_ext import connect_with\n"
                  "con = connect_with(('httpfs', 'avro', 'iceberg'))\n"
                  f"for statement in {code.replace('<token>', ARCO_TOKEN)!r}.split(';'):\n"
                  "    if statement.strip():\n"
                  "        print(con.execute(statement).fetchall())\n")
        command = [sys.executable, "-c", script]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("block", RECIPES, ids=[block.recipe or "" for block in RECIPES])
def test_recipe_runs_as_written(block: Block, server: RunningServer) -> None:
    done = run(block, server)
    assert done.returncode == 0, f"{block.where} ({block.recipe}) failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
