"""A per-process cache of vended credentials, so that every loadTable does not cost an STS round trip.

An entry is handed out again only while at least a quarter of its lifetime (and at least a minute) is left: a
client that receives it still has time to use it before it must come back for a new one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

from arco.inline import refuse_to_wait
from arco.lru import Lru
from arco.metrics import CacheMeter
from arco.vending.model import VendedCredential

MIN_REMAINING_MS = 60_000
MAX_ENTRIES = 10_000
_METER = CacheMeter("vended_credentials")


def still_fresh(credential: VendedCredential, minted_at_ms: int, now_ms: int) -> bool:
    """Whether a cached credential may be handed out again at ``now_ms``."""
    lifetime = credential.expires_at_ms - minted_at_ms
    return credential.expires_at_ms - now_ms >= max(MIN_REMAINING_MS, lifetime // 4)


class CredentialCache:
    def __init__(self, clock: Callable[[], float] = time.time, max_entries: int = MAX_ENTRIES) -> None:
        self._clock = clock
        self._entries: Lru[Hashable, tuple[VendedCredential, int]] = Lru(max_entries)

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def get_or_mint(self, key: Hashable, mint: Callable[[], VendedCredential]) -> VendedCredential:
        now = self.now_ms()
        hit = self._entries.get(key)
        if hit is not None and still_fresh(hit[0], hit[1], now):
            _METER.hit()
            return hit[0]
        _METER.miss()
        refuse_to_wait()  # minting asks the cloud's token service
        # Minted outside the lock: a slow STS call must not hold up every other table. Two concurrent misses
        # for one key both mint; both credentials are valid, the later one is kept.
        credential = mint()
        self._entries.put(key, (credential, now))
        return credential
