"""Which names the catalog takes (pure): Unity Catalog's rules, and no character that would let a name show as
another or drive a terminal."""

from __future__ import annotations

import pytest

from arco.catalog.errors import InvalidRequestError
from arco.catalog.names import check_name, check_namespace


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
