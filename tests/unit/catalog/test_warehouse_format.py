"""The warehouse's recorded catalog format (arco.catalog.warehouse_format): a newer one is refused before anything is
read or written, an older one (or none) is recorded as this version's."""

from __future__ import annotations

import orjson
import pytest

from arco.catalog.bootstrap import initialise_warehouse
from arco.catalog.warehouse_format import FORMAT, KEY, WarehouseFormatError, ensure_format
from arco.storage.base import NotFound, Precondition, PreconditionFailed, WriteResult
from arco.storage.memory import MemoryBackend


def recorded(storage: MemoryBackend) -> dict:
    return orjson.loads(storage.get(KEY).data)


def test_a_warehouse_without_a_record_gets_this_version_s() -> None:
    storage = MemoryBackend()
    assert ensure_format(storage) == 0
    assert recorded(storage)["format"] == FORMAT and recorded(storage)["written_by"].startswith("arco")
    assert ensure_format(storage) == FORMAT  # and then reads it


def test_an_older_format_is_recorded_as_this_one() -> None:
    storage = MemoryBackend()
    storage.put(KEY, orjson.dumps({"format": FORMAT - 1}))
    assert ensure_format(storage) == FORMAT - 1 and recorded(storage)["format"] == FORMAT


@pytest.mark.parametrize("data, words", [
    (orjson.dumps({"format": FORMAT + 1, "written_by": "arco 9.0"}), "written by arco 9.0"),
    (b"{not json", "not a format record"),
    (orjson.dumps({"format": "x"}), "not a format record"),
    # Only a whole number from 1 is a form: nothing else is read as one, nor rewritten.
    (orjson.dumps({"format": "1"}), "not a format record"),
    (orjson.dumps({"format": True}), "not a format record"),
    (orjson.dumps({"format": 1.9}), "not a format record"),
    (orjson.dumps({"format": -3}), "not a format record"),
    (orjson.dumps([1]), "not a format record"),
])
def test_a_newer_or_unreadable_record_is_refused_and_nothing_is_written(data: bytes, words: str) -> None:
    storage = MemoryBackend()
    storage.put(KEY, data)
    with pytest.raises(WarehouseFormatError, match=words):
        initialise_warehouse(storage)
    assert [m.key for m in storage.list()] == [KEY]  # no catalog, no token, no metastore was made


class AbsentYetTaken(MemoryBackend):
    """A store whose read says the record is absent while its create-only write says it exists (a directory of
    that name on a local disk does this)."""

    def get(self, key: str):  # type: ignore[no-untyped-def]
        raise NotFound(key)

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        return PreconditionFailed()


def test_a_record_that_can_be_neither_read_nor_written_is_an_error_not_a_spin() -> None:
    with pytest.raises(WarehouseFormatError, match="is it a directory"):
        ensure_format(AbsentYetTaken())
