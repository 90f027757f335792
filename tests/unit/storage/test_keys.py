from __future__ import annotations

import pytest

from arco.storage.base import InvalidKey
from arco.storage.keys import check_key, check_prefix


@pytest.mark.parametrize("key", ["a", "a/b.json", "ü/日本/x y", "a.b/c..d", "x" * 255])
def test_good_keys(key: str) -> None:
    assert check_key(key) == key


@pytest.mark.parametrize(
    "key", ["", "/a", "a/", "a//b", ".", "..", "a/../b", "a/./b", "a\\b", "a\x00", "a\x1fb", "a\x7f",
            "x" * 256, "/".join(["abcdefghij"] * 100), ".arco-tmp/x", "\ud800"],
)
def test_bad_keys(key: str) -> None:
    with pytest.raises(InvalidKey):
        check_key(key)


@pytest.mark.parametrize("prefix", ["", "a/", "a/b", "a/b/pa"])
def test_good_prefixes(prefix: str) -> None:
    assert check_prefix(prefix) == prefix


@pytest.mark.parametrize("prefix", ["/", "a//", "../", "a/\x01"])
def test_bad_prefixes(prefix: str) -> None:
    with pytest.raises(InvalidKey):
        check_prefix(prefix)
