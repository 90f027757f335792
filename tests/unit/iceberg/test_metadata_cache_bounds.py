"""Parsed metadata and loadTable answers are kept by size as well as by count: a table's metadata grows with its
history, so a cache bounded by count alone grew a long-running server's memory with every commit."""

from __future__ import annotations

import pytest
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import LongType, NestedField

from arco.catalog.store import CatalogStore
from arco.iceberg.http import IcebergServices
from arco.iceberg.metadata_files import PARSED_BYTES_PER_JSON_BYTE, MetadataFiles, metadata_bytes
from arco.iceberg.responses import LoadResultCache
from arco.settings import ServerSettings
from arco.storage.memory import MemoryBackend

SCHEMA = Schema(NestedField(1, "a", LongType(), required=False))
BUDGET = 1 << 20


def version(n: int) -> TableMetadata:
    """The table's n-th version: each holds n properties of 1 KB, so each is larger than the one before."""
    return new_table_metadata(SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "memory://wh/t",
                              {f"p{i}": "x" * 1024 for i in range(n)})


def location(n: int) -> str:
    return f"memory://wh/t/metadata/{n:05d}-a.metadata.json"


@pytest.fixture(scope="module")
def stored() -> MemoryBackend:
    """Versions 1-60 of one table, written by another server (the reader parses each one)."""
    storage = MemoryBackend("wh")
    for n in range(1, 61):
        storage.put(f"t/metadata/{n:05d}-a.metadata.json", metadata_bytes(version(n)))
    return storage


def test_parsed_metadata_of_a_growing_table_stays_within_the_budget(stored: MemoryBackend) -> None:
    files = MetadataFiles(stored, cache_entries=512, cache_budget=BUDGET)
    for n in range(1, 61):
        assert len(files.read(location(n)).properties) == n
        assert files.cached_bytes <= BUDGET
    assert files.cached_bytes > BUDGET // 2  # the budget is used, not ignored
    newest = files.read(location(60))
    assert files.read(location(60)) is newest  # the newest version stays in memory (the same parsed object)
    # the oldest went first: reading it again parses it again (a new object)
    first = files.read(location(1))
    assert files.read(location(1)) is first and len(first.properties) == 1


def test_a_file_too_large_for_the_budget_is_read_each_time_and_evicts_nothing(stored: MemoryBackend) -> None:
    small = len(metadata_bytes(version(1))) * PARSED_BYTES_PER_JSON_BYTE
    files = MetadataFiles(stored, cache_budget=small * 3)
    kept = files.read(location(1))
    big = files.read(location(60))
    assert files.read(location(60)) is not big  # not kept: parsed again
    assert files.read(location(1)) is kept and files.cached_bytes == small


def test_load_answers_of_a_growing_table_stay_within_the_budget(stored: MemoryBackend) -> None:
    answers = LoadResultCache(entries=256, budget=BUDGET)
    files = MetadataFiles(stored)
    for n in range(1, 61):
        answers.get(location(n), "all", files.read_bytes, files.read)
        assert answers.cached_bytes <= BUDGET
    assert answers.holds(location(60), "all") and not answers.holds(location(1), "all")


def test_the_server_setting_shares_its_memory_between_the_caches(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = ServerSettings(warehouse=str(tmp_path), metadata_cache_mb=12)
    storage = MemoryBackend("wh")
    services = IcebergServices.build(settings, CatalogStore(storage), storage)
    budgets = (services.tables.files._cache.budget, services.load_results._cache.budget,
               services.tables.view_files._cache.budget)
    assert budgets == (8 << 20, 3 << 20, 1 << 20)
    with pytest.raises(ValueError, match="metadata cache"):
        ServerSettings(warehouse=str(tmp_path), metadata_cache_mb=0)
