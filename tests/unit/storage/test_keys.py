from __future__ import annotations

import random

import pytest

from arco.storage.base import InvalidKey
from arco.storage.keys import check_key, check_prefix


@pytest.mark.parametrize("key", ["a", "a/b.json", "ü/日本/x y", "a.b/c..d", "x" * 255, "...", "a/.../b",
                                 ".a/b.", "ü" * 127, "/".join(["x" * 255] * 4)])
def test_good_keys(key: str) -> None:
    assert check_key(key) == key


@pytest.mark.parametrize(
    "key", ["", "/a", "a/", "a//b", ".", "..", "a/../b", "a/./b", "a\\b", "a\x00", "a\x1fb", "a\x7f",
            "x" * 256, "/".join(["abcdefghij"] * 100), ".arco-tmp/x", "\ud800", "a/..", "../a", "a/.",
            "ü" * 128, "a/" + "x" * 256 + "/b", "a\n", "a/\n/b"],
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


def _reference_check(key: str) -> bool:
    """The rules one at a time, segment by segment, as the module docstring states them."""
    encoded = key.encode("utf-8", errors="surrogatepass")
    if not key or len(encoded) > 1024:
        return False
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF or ch == "\\" for ch in key):
        return False
    segments = key.split("/")
    if any(s in ("", ".", "..") or len(s.encode("utf-8")) > 255 for s in segments):
        return False
    return not segments[0].startswith(".arco-")


def test_check_key_agrees_with_the_rules_one_by_one() -> None:
    """The fast path (one pattern for segments, lengths only for long keys) decides as the plain rules do."""
    rng = random.Random(20261125)
    alphabet = ["a", "b", ".", ".", "/", "/", "-", "ü", "日", "\\", "\x00", "\n", "\x7f", "\ud800", ".arco-"]
    decided = {True: 0, False: 0}
    for _ in range(20000):
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        if rng.random() < 0.05:
            key = key + "x" * rng.choice([250, 254, 255, 256, 300, 1020])
        try:
            check_key(key)
            accepted = True
        except InvalidKey:
            accepted = False
        assert accepted == _reference_check(key), repr(key)
        decided[accepted] += 1
    assert decided[True] > 1000 and decided[False] > 1000  # both sides of every rule were exercised
