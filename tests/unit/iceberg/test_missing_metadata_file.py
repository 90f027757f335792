"""A metadata file deleted outside the catalog: how a read reports it, where a look costs nothing and where it
would cost a round trip."""

from __future__ import annotations

import dataclasses

import pytest
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import LongType, NestedField

from arco.iceberg.errors import NoSuchTable
from arco.iceberg.metadata_files import MetadataFiles, MissingMetadataFile
from arco.storage.memory import MemoryBackend

SCHEMA = Schema(NestedField(1, "a", LongType(), required=False))
LOCATION = "memory://wh/t/metadata/00000-a.metadata.json"
KEY = "t/metadata/00000-a.metadata.json"


class RemoteBackend(MemoryBackend):
    """The memory backend declaring what object storage declares: a read is a round trip."""

    capabilities = dataclasses.replace(MemoryBackend.capabilities, cheap_reads=False)


def written(storage: MemoryBackend) -> MetadataFiles:
    files = MetadataFiles(storage)
    files.write(LOCATION, new_table_metadata(SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER,
                                             "memory://wh/t", {}))
    storage.delete(KEY)
    return files


def test_where_a_look_is_cheap_a_load_from_memory_is_refused_as_one_from_storage() -> None:
    storage = MemoryBackend("wh")
    files = written(storage)
    with pytest.raises(MissingMetadataFile) as raised:
        files.confirm_present(LOCATION)
    assert raised.value.location == LOCATION and raised.value.error_type == "NotFoundException"
    assert files.read(LOCATION).location == "memory://wh/t"  # a commit's base, from memory: its new file is whole
    fresh = MetadataFiles(storage)
    for read in (fresh.read, fresh.read_bytes):
        with pytest.raises(MissingMetadataFile):
            read(LOCATION)
    with pytest.raises(NoSuchTable, match=f"Failed to open input stream for file: {LOCATION}"):
        fresh.read_base(LOCATION)


def test_where_a_look_is_a_round_trip_memory_answers_and_a_new_reader_finds_it_gone() -> None:
    storage = RemoteBackend("wh")
    files = written(storage)
    assert files.read(LOCATION).location == "memory://wh/t"
    files.confirm_present(LOCATION)
    with pytest.raises(MissingMetadataFile):
        MetadataFiles(storage).read(LOCATION)


class BucketBackend(MemoryBackend):
    """The memory backend serving a warehouse URL on object storage (only its URL matters here)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url


@pytest.mark.parametrize("warehouse, location, key", [
    ("s3://b/wh", "s3a://b/wh/t/metadata/1.metadata.json", "t/metadata/1.metadata.json"),  # Spark's spelling
    ("abfs://data/wh", "az://data/wh/t/x.json", "t/x.json"),
    ("abfs://data/wh", "abfss://data@home.dfs.core.windows.net/wh/t/x.json", "t/x.json"),  # the home account
    ("abfss://data@home.dfs.core.windows.net/wh", "abfs://data/wh/t/a%2Fb.json", "t/a%2Fb.json"),  # the path as written
])
def test_every_spelling_of_the_warehouse_s_bucket_finds_its_key(warehouse: str, location: str, key: str) -> None:
    from arco.storage.urls import set_home_azure_account

    set_home_azure_account("home")
    assert MetadataFiles(BucketBackend(warehouse)).key_of(location) == key


@pytest.mark.parametrize("location", [
    "abfss://data@other.dfs.core.windows.net/wh/t/x.json",  # another account's container of that name
    "s3://b/whx/t/x.json", "s3://other/wh/t/x.json", "file:///wh/t/x.json",
])
def test_other_places_are_outside_the_warehouse(location: str) -> None:
    from arco.iceberg.metadata_files import MetadataLocationError
    from arco.storage.urls import set_home_azure_account

    set_home_azure_account("home")
    warehouse = "abfs://data/wh" if "windows" in location else "s3://b/wh"
    with pytest.raises(MetadataLocationError):
        MetadataFiles(BucketBackend(warehouse)).key_of(location)
