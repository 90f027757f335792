"""The bounded cache every process-local cache is built on."""

from __future__ import annotations

import threading

from arco.lru import Lru


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: Lru[str, int] = Lru(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert "b" not in cache
    assert cache.get("a") == 1 and cache.get("c") == 3
    assert len(cache) == 2


def test_a_lookup_of_many_keys_leaves_recency_alone() -> None:
    cache: Lru[str, int] = Lru(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get_many(["a", "x", "b"]) == [1, None, 2]
    cache.put("c", 3)
    assert "a" not in cache and "b" in cache


def test_a_newer_entry_is_kept_against_an_older_put() -> None:
    cache: Lru[str, tuple[str, float]] = Lru(4)
    cache.put("t", ("new", 2.0))
    cache.put("t", ("old", 1.0), unless=lambda held: held[1] > 1.0)
    assert cache.get("t") == ("new", 2.0)
    cache.put("t", ("newer", 3.0), unless=lambda held: held[1] > 3.0)
    assert cache.get("t") == ("newer", 3.0)


def test_a_conditional_pop_leaves_a_replaced_value() -> None:
    cache: Lru[str, str] = Lru(4)
    cache.put("k", "second")
    cache.pop("k", only="first")
    assert cache.get("k") == "second"
    cache.pop("k", only="second")
    assert "k" not in cache
    cache.pop("absent")  # no error


def test_a_failed_load_is_asked_again() -> None:
    cache: Lru[str, str] = Lru(4)
    answers = iter([None, "found"])
    assert cache.get_or_load("k", lambda: next(answers)) is None
    assert cache.get_or_load("k", lambda: next(answers)) == "found"
    assert cache.get_or_load("k", lambda: "not asked") == "found"


def test_setdefault_gives_every_thread_the_same_value() -> None:
    cache: Lru[str, object] = Lru(4)
    seen: list[object] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        seen.append(cache.setdefault("k", object()))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(value) for value in seen}) == 1


def test_stays_bounded_under_concurrent_puts() -> None:
    cache: Lru[int, int] = Lru(100)

    def fill(offset: int) -> None:
        for i in range(2000):
            cache.put(offset + i, i)
            cache.get(offset + i // 2)

    threads = [threading.Thread(target=fill, args=(n * 10_000,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 100


def test_a_budget_bounds_the_total_weight_and_the_oldest_entries_go_first() -> None:
    cache: Lru[str, bytes] = Lru(100, budget=10, weigh=len)
    cache.put("a", b"xxxx")
    cache.put("b", b"xxxx")
    assert cache.get("a") == b"xxxx"  # a is now the most recent
    cache.put("c", b"xxxx")  # 12 > 10: b, the least recently used, goes
    assert "b" not in cache and "a" in cache and "c" in cache
    assert cache.weight == 8
    cache.put("a", b"x")  # a replaced entry's weight is replaced, not added
    assert cache.weight == 5


def test_an_entry_heavier_than_the_budget_is_not_kept() -> None:
    cache: Lru[str, bytes] = Lru(100, budget=10, weigh=len)
    cache.put("small", b"xx")
    cache.put("huge", b"x" * 11)
    assert "huge" not in cache and cache.get("small") == b"xx"  # and it flushed nothing
    cache.put("small", b"y" * 11)  # a key's new value too heavy to keep: the old one is not kept either
    assert "small" not in cache and cache.weight == 0


def test_a_weight_given_to_put_stands_for_the_value_and_leaves_with_it() -> None:
    cache: Lru[str, object] = Lru(100, budget=100)
    for i in range(20):
        cache.put(str(i), object(), weight=30)  # the caller knows the size (bytes parsed), the value does not say
        assert cache.weight <= 100
    assert len(cache) == 3 and cache.weight == 90
    cache.pop("19")
    assert cache.weight == 60
    cache.clear()
    assert cache.weight == 0 and len(cache) == 0


def test_growing_entries_do_not_grow_the_total() -> None:
    """The soak's shape: each new version of a table is larger than the one it evicts."""
    cache: Lru[int, bytes] = Lru(512, budget=1 << 20, weigh=len)
    for version in range(1, 2000):
        cache.put(version, b"x" * (version * 100))
        assert cache.weight <= 1 << 20
    assert 1999 in cache
