"""Which names the catalog takes (pure): Unity Catalog's rules, and no character that would let a name show as
another or drive a terminal."""

from __future__ import annotations

import pytest

from arco.catalog.errors import AlreadyExistsError, InvalidRequestError
from arco.catalog.model import name_key
from arco.catalog.names import check_name, check_namespace
from arco.catalog.state import CatalogState
from support.tier1 import commit


@pytest.mark.parametrize("name", ["orders", "Orders_2024", "café", "テーブル", "a-b", "persian\u200cword",
                                  "x" * 255])
def test_names_that_are_taken(name: str) -> None:
    assert check_name("table", name) == name


@pytest.mark.parametrize("name", [
    "", "a.b", "a b", "a/b", "a\\b", "a\x00", "a\x1fb", "a\x7f",
    "a\x85", "a\x9bb",  # C1 controls: NEL, and CSI, which a terminal reads as an escape
    "invoice\u202egnp.exe", "a\u2066b\u2069",  # bidirectional override and isolates (text that shows reordered)
    "a\u2028b", "\ufeffbom",  # a line separator; a byte order mark
    "x" * 256, "\ud800",
    "cafe\u0301",  # café with a combining accent: shows as the composed "café", another name
])
def test_names_that_are_refused(name: str) -> None:
    with pytest.raises(InvalidRequestError):
        check_name("table", name)


def test_a_namespace_is_checked_level_by_level() -> None:
    assert check_namespace(["a", "b"]) == ("a", "b")
    with pytest.raises(InvalidRequestError):
        check_namespace(["a", "b\x9b"])


def test_a_decomposed_name_is_told_its_composed_form() -> None:
    with pytest.raises(InvalidRequestError, match="'café'"):
        check_name("table", "cafe\u0301")


def test_a_decomposed_name_an_earlier_version_stored_is_found_and_taken_by_its_composed_spelling() -> None:
    state = CatalogState("file:///srv/wh")
    commit(state, {"op": "create_catalog", "id": "c1", "name": "sales", "storage_root": "file:///srv/wh/sales",
                   "owner": "admin"})
    # Written straight to the log, as a version that did not refuse decomposed names wrote them.
    commit(state, {"op": "create_namespace", "id": "n1", "catalog_id": "c1", "path": ["e\u0301"], "owner": "admin"})
    commit(state, {"op": "create_table", "id": "t1", "catalog_id": "c1", "namespace": ["e\u0301"],
                   "name": "Cafe\u0301", "location": "file:///srv/wh/sales/e/t1", "owner": "admin", "managed": True})
    assert state.table("c1", ("\u00c9",), "CAF\u00c9").id == "t1"  # composed, and in another case
    with pytest.raises(AlreadyExistsError):
        commit(state, {"op": "create_table", "id": "t2", "catalog_id": "c1", "namespace": ["\u00e9"],
                       "name": "caf\u00e9", "location": "file:///srv/wh/sales/e/t2", "owner": "admin",
                       "managed": True})
    assert name_key("plain") == "plain" and name_key("Cafe\u0301") == name_key("caf\u00e9")
