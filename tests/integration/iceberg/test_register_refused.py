"""A registration the catalog refuses at its commit point leaves nothing that refuses the next one: its pointer is
withdrawn again, and a pointer an interrupted registration left (live, named by no catalog entry, old) is taken
over by the next registration of the same files."""

from __future__ import annotations

import threading
import time

import pytest

from arco.iceberg import tables as tables_module
from arco.iceberg.errors import AlreadyExists, IcebergError
from arco.iceberg.pointer import POINTERS
from arco.iceberg.tables import TablePointer
from support.held_puts import HeldPuts
from support.iceberg_harness import SCHEMA, Harness

SOURCE = {"kind": "iceberg_rest", "client_info": "test", "principal": "admin"}


def unregistered(h: Harness, name: str = "t") -> str:
    """A table made and unregistered: its last metadata file, which may be registered again."""
    h.create_table(name)
    _, location = h.tables.unregister(h.catalog, ("db",), name, "admin", SOURCE)
    return location


def register(h: Harness, name: str, location: str) -> str:
    registered, _ = h.tables.register(h.catalog, ("db",), {"name": name, "metadata-location": location}, "admin",
                                      SOURCE)
    return registered


def test_a_registration_that_loses_its_name_to_a_create_can_be_made_again(harness: Harness) -> None:
    location = unregistered(harness)
    held = HeldPuts(harness.storage.inner, f"{POINTERS}/*")
    harness.storage.inner = held  # type: ignore[assignment]
    outcome: dict[str, BaseException | str] = {}

    def first() -> None:
        try:
            outcome["register"] = register(harness, "r1", location)
        except BaseException as exc:  # noqa: BLE001 - looked at below
            outcome["register"] = exc

    thread = threading.Thread(target=first)
    thread.start()
    assert held.reached.wait(10)  # past its check that r1 is free, at its pointer
    other = harness.reopen()
    other.tables.create(other.catalog, ("db",), {"name": "r1", "schema": SCHEMA}, "admin", SOURCE)
    held.release()
    thread.join(30)
    assert isinstance(outcome["register"], IcebergError) and outcome["register"].status == 409
    after = harness.reopen()
    assert register(after, "r2", location) == location  # not "a table with uuid ... already exists"
    assert after.tables.load(after.catalog, ("db",), "r2").pointer.pointer.current_metadata_location == location


def test_a_pointer_an_interrupted_registration_left_is_taken_over_once_old(harness: Harness,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    location = unregistered(harness)
    loaded = harness.tables.files.read(location)
    uuid = str(loaded.table_uuid)
    current = harness.tables.pointers.load(uuid)
    assert current is not None and current.pointer.dropped
    # The registration's pointer landed; the process died before its catalog entry.
    harness.tables.pointers.swap(current.version, TablePointer(uuid, location))
    with pytest.raises(AlreadyExists):  # a fresh one may be a registration in flight: left alone
        register(harness.reopen(), "r1", location)
    monkeypatch.setattr(tables_module, "ORPHANED_POINTER_AGE_S", 0)
    time.sleep(0.01)
    after = harness.reopen()
    assert register(after, "r1", location) == location
    after.create_table("live")
    live = after.tables.load(after.catalog, ("db",), "live")
    assert not after.tables.orphaned_pointer(live.pointer)  # one a catalog entry names never is, however old
