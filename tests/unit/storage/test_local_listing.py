"""A local warehouse's listing: key order across directories, pages that resume their walk, and work linear in what
is listed (counted as directory reads, not timed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arco.storage import local_listing
from arco.storage.base import StorageBackend
from arco.storage.local import LocalBackend
from arco.storage.memory import MemoryBackend

# Names chosen so that directories and files sort against each other the way key order needs: "a-b" < "a/x" < "a0".
TRICKY = ["a", "a-b", "a0", "ab", "a/x", "a/x-1", "a/x/y", "a/x0", "b/a/b/c", "b/a-", "b/a0/1", "c.json", "é/ü"]


def pages(storage: StorageBackend, prefix: str, page_size: int) -> list[list[str]]:
    out, token = [], None
    while True:
        page = storage.list_page(prefix, page_size=page_size, page_token=token)
        out.append([m.key for m in page.objects])
        token = page.next_token
        if token is None:
            return out


def keys_of(tree: list[str]) -> list[str]:
    """A set of keys a file system can hold: no key is also a directory of another."""
    kept: list[str] = []
    for key in sorted(set(tree), key=len):
        if not any(key.startswith(other + "/") or other.startswith(key + "/") for other in kept):
            kept.append(key)
    return kept


def both(tmp_path: Path, keys: list[str]) -> tuple[LocalBackend, MemoryBackend]:
    local, memory = LocalBackend(tmp_path / "wh", fsync=False), MemoryBackend()
    for key in keys:
        local.put(key, key.encode())
        memory.put(key, key.encode())
    return local, memory


def test_directories_and_files_interleave_in_key_order(tmp_path: Path) -> None:
    local, memory = both(tmp_path, keys_of(TRICKY))
    for prefix in ("", "a", "a/", "a/x", "b/a", "b/a/", "é", "zzz"):
        assert [m.key for m in local.list(prefix)] == [m.key for m in memory.list(prefix)], prefix
        for page_size in (1, 2, 3):
            assert pages(local, prefix, page_size) == pages(memory, prefix, page_size), (prefix, page_size)


segment = st.sampled_from(["a", "a-", "a0", "b", "ab", "a.b", "z"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=st.lists(st.lists(segment, min_size=1, max_size=4).map("/".join), min_size=1, max_size=40),
       prefix=st.lists(segment, max_size=2).map("/".join), page_size=st.integers(1, 7))
def test_pages_are_those_of_a_sorted_listing(tmp_path_factory: pytest.TempPathFactory, tree: list[str], prefix: str,
                                             page_size: int) -> None:
    local, memory = both(tmp_path_factory.mktemp("wh"), keys_of(tree))
    assert pages(local, prefix, page_size) == pages(memory, prefix, page_size)
    # A page token alone is enough: another process (no suspended walk) continues the listing the same way.
    fresh = LocalBackend(local.root, fsync=False)
    first = local.list_page(prefix, page_size=page_size)
    if first.next_token is not None:
        rest = fresh.list_page(prefix, page_size=page_size, page_token=first.next_token)
        assert [m.key for m in rest.objects] == pages(memory, prefix, page_size)[1]


def test_a_file_deleted_between_pages_is_not_listed(tmp_path: Path) -> None:
    local, _ = both(tmp_path, [f"d/{i:03d}" for i in range(10)])
    first = local.list_page("d/", page_size=4)
    local.delete("d/004")  # the next page's first, already read ahead
    local.delete("d/007")
    rest = [m.key for m in local.list_page("d/", page_size=100, page_token=first.next_token).objects]
    assert rest == ["d/005", "d/006", "d/008", "d/009"]


def test_a_directory_entered_after_a_write_shows_it(tmp_path: Path) -> None:
    local, _ = both(tmp_path, ["a/1", "a/2", "b/1"])
    first = local.list_page("", page_size=1)
    local.put("b/0", b"")  # b/ is not read yet: the resumed walk reads it when it gets there
    assert [m.key for m in local.list_page("", page_size=10, page_token=first.next_token).objects] == [
        "a/2", "b/0", "b/1"]


def test_reserved_directories_are_not_listed(tmp_path: Path) -> None:
    local, _ = both(tmp_path, ["x"])
    assert [m.key for m in local.list("")] == ["x"]  # .arco-tmp and .arco-locks are the backend's own


def counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    names = local_listing._names

    def counted(directory: str, rel: str, skip_prefix: str | None) -> list[str]:
        read.append(rel)
        return names(directory, rel, skip_prefix)

    monkeypatch.setattr(local_listing, "_names", counted)
    return read


def test_a_listing_reads_each_directory_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = [f"events/{day}/{i:04d}.json" for day in ("d1", "d2") for i in range(1500)]
    local, _ = both(tmp_path, keys)
    read = counting_reads(monkeypatch)
    assert [m.key for m in local.list("events/", page_size=100)] == keys  # 30 pages
    assert sorted(read) == ["events/", "events/d1/", "events/d2/"]


def test_a_page_after_the_cursor_expired_reads_only_its_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local, _ = both(tmp_path, [f"t/{t}/{i:03d}" for t in range(20) for i in range(5)])
    first = local.list_page("t/", page_size=12)
    local._cursors = local_listing.Cursors(ttl_s=0.0)  # as if the next page came later than a cursor is kept
    read = counting_reads(monkeypatch)
    second = local.list_page("t/", page_size=12, page_token=first.next_token)
    assert [m.key for m in second.objects][:1] == ["t/10/002"]  # sorted: t/0, t/1, t/10, ...
    # The top directory, the ones the token lies in or after until the page is full, and none before it.
    assert read[:2] == ["t/", "t/10/"] and "t/0/" not in read and "t/1/" not in read


def test_walks_no_page_comes_for_are_forgotten(tmp_path: Path) -> None:
    local, _ = both(tmp_path, [f"d/{i:02d}" for i in range(30)])
    local._cursors = local_listing.Cursors(size=4, ttl_s=60.0)
    # Six listings read one page each and stop: each has its own walk, and at most four are kept, the newest.
    tokens = [local.list_page("d/", page_size=5).next_token for _ in range(6)]
    assert {local_listing.after_key(token) for token in tokens if token} == {"d/04"} and len(set(tokens)) == 6
    assert [token for _, token in local._cursors._walks] == tokens[2:]
    local._cursors._ttl_s = 0.0  # as if a while passed: the next walk suspended drops them all
    last = local.list_page("d/", page_size=5).next_token
    assert list(local._cursors._walks) == [("d/", last)]


def test_a_listing_never_resumes_another_listings_walk(tmp_path: Path) -> None:
    """Two listings of one prefix that reach the same key each go on with their own walk: one that went on with the
    other's would not list a file written after the other walk read the directory, before this listing began."""
    local, _ = both(tmp_path, [f"b/{i:03d}" for i in range(10)])
    earlier = local.list("b/", page_size=2)
    assert [next(earlier).key for _ in range(2)] == ["b/000", "b/001"]  # its walk has read b/
    local.put("b/005a", b"new")
    later = local.list("b/", page_size=4)
    seen = [next(later).key for _ in range(4)]  # its walk is suspended after b/003
    assert [next(earlier).key for _ in range(2)] == ["b/002", "b/003"]  # and so is the earlier one's, after b/003
    seen += [meta.key for meta in later]
    assert "b/005a" in seen and seen == sorted(seen) and len(seen) == 11


def test_a_walk_kept_again_expires_as_the_newest(tmp_path: Path) -> None:
    now = [100.0]
    cursors = local_listing.Cursors(ttl_s=1.0, clock=lambda: now[0])
    cursors.keep("p/", "a", local_listing.Walk(iter(["first"]), "w1"))
    now[0] += 0.5
    cursors.keep("q/", "b", local_listing.Walk(iter(["q"]), "w2"))
    now[0] += 0.3
    cursors.keep("p/", "a", local_listing.Walk(iter(["again"]), "w1"))  # at 100.8: now the newest
    now[0] += 0.9  # 101.7: q/'s walk (kept at 100.5) is past its time, p/'s (100.8) is not
    assert cursors.take("q/", "b") is None
    again = cursors.take("p/", "a")
    assert again is not None and list(again.keys) == ["again"]


def test_a_token_without_a_walk_lists_after_its_key(tmp_path: Path) -> None:
    """A key given as the token (as every backend takes one), or a token from a process that does not hold its walk,
    lists on after the key."""
    local, _ = both(tmp_path, [f"d/{i:02d}" for i in range(10)])
    assert [m.key for m in local.list_page("d/", page_size=3, page_token="d/04").objects] == ["d/05", "d/06", "d/07"]
    foreign = local_listing.page_token("d/07", local_listing.new_walk_name())
    assert [m.key for m in local.list_page("d/", page_size=3, page_token=foreign).objects] == ["d/08", "d/09"]
