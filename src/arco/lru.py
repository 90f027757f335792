"""A bounded, thread-safe map that forgets its least recently used entry first: the one shape of the process-local
caches (parsed metadata files, load answers, pointers, group records, vended credentials, receipts read by the UI).

Every cache holds immutable things or things whose freshness is checked elsewhere, so a cache only needs to stay
bounded and safe to share between threads. A cache whose entries grow with what they describe (a table's metadata
gains a snapshot with every append) is bounded by weight as well as by count: a count alone let a long-running
server's memory grow with its tables' histories, each cached version of a table larger than the one it evicted.
``cachetools.LRUCache`` would need a lock around it as well and costs a little more a hit (measured at 0.31 against
0.23 microseconds), so these lines stand instead of a dependency.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(Generic[K, V]):
    """At most ``entries`` entries and, with a ``budget``, at most that total weight (``weigh(value)``, or the
    weight given to :meth:`put`; an estimate of the bytes an entry holds). An entry heavier than the whole budget is
    not kept, and evicts nothing."""

    def __init__(self, entries: int, *, budget: int | None = None, weigh: Callable[[V], int] | None = None) -> None:
        self.entries = entries
        self.budget = budget
        self._weigh = weigh
        self._items: OrderedDict[K, V] = OrderedDict()
        self._weights: dict[K, int] = {}
        self.weight = 0  # the entries' total weight (kept only with a budget)
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value, or None; a hit makes the entry the most recently used."""
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def get_or_load(self, key: K, load: Callable[[], V | None]) -> V | None:
        """The value, or ``load()`` kept (outside the lock: two threads missing at once may both load); a None
        from ``load`` is a miss asked again next time."""
        value = self.get(key)
        if value is None:
            value = load()
            if value is not None:
                self.put(key, value)
        return value

    def get_many(self, keys: Iterable[K]) -> list[V | None]:
        """:meth:`get` of each key, under one lock (recency left as it is: for lookups of many keys at once)."""
        with self._lock:
            return [self._items.get(key) for key in keys]

    def put(self, key: K, value: V, *, unless: Callable[[V], bool] | None = None, weight: int | None = None) -> None:
        """Keep ``value`` as the most recently used entry, forgetting the oldest past the bounds; an entry already
        held for ``key`` stays instead if ``unless(it)`` holds (a newer copy another thread kept meanwhile).
        ``weight`` stands for ``weigh(value)`` where the caller knows it better (the size of the bytes parsed)."""
        with self._lock:
            if unless is not None:
                held = self._items.get(key)
                if held is not None and unless(held):
                    return
            self._put(key, value, weight)

    def setdefault(self, key: K, value: V) -> V:
        """The value held for ``key``, or ``value`` kept and returned if there is none (one step: two threads
        asking at once get the same one)."""
        with self._lock:
            held = self._items.get(key)
            if held is not None:
                self._items.move_to_end(key)
                return held
            self._put(key, value)
            return value

    def put_many(self, items: Iterable[tuple[K, V]]) -> None:
        with self._lock:
            for key, value in items:
                self._put(key, value)

    def pop(self, key: K, *, only: V | None = None) -> None:
        """Forget ``key``; with ``only``, only while it holds that value (an entry another thread replaced
        stays)."""
        with self._lock:
            if only is None or self._items.get(key) == only:
                self._items.pop(key, None)
                self.weight -= self._weights.pop(key, 0)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weights.clear()
            self.weight = 0

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def _put(self, key: K, value: V, weight: int | None = None) -> None:
        if self.budget is not None:
            if weight is None:
                weight = self._weigh(value) if self._weigh is not None else 0
            if weight > self.budget:  # kept, it would flush everything else and still not fit
                if key in self._items:
                    del self._items[key]
                    self.weight -= self._weights.pop(key, 0)
                return
            self.weight += weight - self._weights.get(key, 0)
            self._weights[key] = weight
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.entries or (self.budget is not None and self.weight > self.budget):
            oldest, _ = self._items.popitem(last=False)
            self.weight -= self._weights.pop(oldest, 0)
