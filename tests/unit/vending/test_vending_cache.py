"""When a cached credential may be handed out again."""

from __future__ import annotations

import pytest

from arco.vending.cache import CredentialCache, still_fresh
from arco.vending.model import VendedCredential


def credential(expires_at_ms: int, name: str = "c") -> VendedCredential:
    return VendedCredential(f"s3://b/{name}/", {}, expires_at_ms)


@pytest.mark.parametrize(("minted", "expires", "now", "fresh"), [
    (0, 3_600_000, 0, True),
    (0, 3_600_000, 2_700_000, True),        # exactly a quarter of an hour's life left
    (0, 3_600_000, 2_700_001, False),
    (0, 900_000, 675_000, True),            # 15-minute credential: a quarter is 225 s
    (0, 900_000, 675_001, False),
    (0, 120_000, 60_000, True),             # short lives keep at least a minute
    (0, 120_000, 60_001, False),
    (0, 3_600_000, 3_700_000, False),       # expired
])
def test_still_fresh(minted: int, expires: int, now: int, fresh: bool) -> None:
    assert still_fresh(credential(expires), minted, now) is fresh


def test_hit_miss_and_renewal() -> None:
    clock = [1000.0]
    cache = CredentialCache(clock=lambda: clock[0])
    minted: list[VendedCredential] = []

    def mint() -> VendedCredential:
        minted.append(credential(int(clock[0] * 1000) + 900_000, str(len(minted))))
        return minted[-1]

    first = cache.get_or_mint("k", mint)
    clock[0] += 600
    assert cache.get_or_mint("k", mint) is first
    assert cache.get_or_mint("other", mint) is not first
    clock[0] += 100  # 200 s left of 900: under a quarter
    renewed = cache.get_or_mint("k", mint)
    assert renewed is not first and len(minted) == 3
    assert cache.get_or_mint("k", mint) is renewed


def test_least_recently_used_entries_are_dropped() -> None:
    cache = CredentialCache(clock=lambda: 0.0, max_entries=2)
    a = cache.get_or_mint("a", lambda: credential(10**9, "a"))
    cache.get_or_mint("b", lambda: credential(10**9, "b"))
    assert cache.get_or_mint("a", lambda: credential(10**9, "a2")) is a  # "a" is now the most recent
    cache.get_or_mint("c", lambda: credential(10**9, "c"))             # drops "b"
    assert cache.get_or_mint("a", lambda: credential(10**9, "a3")) is a
    assert cache.get_or_mint("b", lambda: credential(10**9, "b2")).prefix == "s3://b/b2/"
