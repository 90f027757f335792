"""Parquet in and out of a storage backend (pyarrow in memory; the backends move bytes)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from arco.storage.base import StorageBackend


def parquet_bytes(table: pa.Table, compression: str = "zstd") -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression)
    return sink.getvalue().to_pybytes()


def write_rows(storage: StorageBackend, key: str, rows: Iterable[dict[str, Any]], schema: pa.Schema) -> int:
    table = pa.Table.from_pylist(list(rows), schema=schema)
    storage.put(key, parquet_bytes(table))
    return table.num_rows


def read_parquet(storage: StorageBackend, key: str, columns: list[str] | None = None) -> pa.Table:
    # Decoded on the calling thread: history files are small, and a process that has used Arrow's thread pool
    # sometimes aborts at exit on a loaded machine ("terminate called without an active exception", seen with a
    # short script reading four files, about one run in a hundred beside two busy cores; none with one thread).
    return pq.read_table(pa.BufferReader(storage.get(key).data), columns=columns, use_threads=False)


def read_many(storage: StorageBackend, keys: Iterable[str], schema: pa.Schema,
              columns: list[str] | None = None) -> pa.Table:
    tables = [read_parquet(storage, key, columns) for key in keys]
    if not tables:
        chosen = schema if columns is None else pa.schema([schema.field(c) for c in columns])
        return chosen.empty_table()
    return pa.concat_tables(tables)
