"""Storage URL normalisation: every spelling of one place compares equal, and hostile spellings are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from arco.storage.factory import local_directory
from arco.storage.urls import (
    BadLocation,
    as_given,
    normalize,
    overlaps,
    same_place,
    set_home_azure_account,
    split_root,
    within,
)


@pytest.mark.parametrize("given, canonical", [
    ("/data/wh/t", "file:///data/wh/t"),
    ("file:/data/wh/t", "file:///data/wh/t"),
    ("file:///data/wh/t/", "file:///data/wh/t"),
    ("file://localhost/data//wh/./t", "file:///data/wh/t"),
    ("file:///data/%77h/t", "file:///data/wh/t"),  # an escaped letter is the letter
    ("S3A://Bucket/Prefix/", "s3://bucket/Prefix"),
    ("s3n://bucket/a//b", "s3://bucket/a/b"),
    ("gs://b/k/", "gs://b/k"),
    ("wasbs://Data@Acct.blob.core.windows.net/p", "abfss://data@acct.dfs.core.windows.net/p"),
    ("abfs://c@a.dfs.core.windows.net/p/", "abfss://c@a.dfs.core.windows.net/p"),
    ("az://c/p", "az://c/p"),
    ("abfs://Data/p/", "az://data/p"),  # no account: the warehouse's own, as az:// spells it
    ("file:///", "file:///"),
    ("s3://b/naïve/表", "s3://b/naïve/表"),
])
def test_spellings_of_one_place_are_one_canonical_url(given: str, canonical: str) -> None:
    assert normalize(given) == canonical


@pytest.mark.parametrize("hostile", [
    "", "   ", None, 42, "relative/path", "warehouse", "../etc", "/data/wh/../../etc",
    "s3://b/a%2F..%2Fother", "s3://b/a/%2e%2e/x", "s3://b/%252e%252e/x",  # '..' encoded once, then twice
    "file:///data/wh/t\x00", "file:///data/wh/t%00", "s3://b/k\n", "file:///c:\\windows",
    "s3://b/k\x7f", "s3://b/k%7F", "s3://b/k%1f/x", "s3://b/\x1fk",  # DEL and the last control character
    "http://example.com/x", "ftp://h/x", "s3://", "s3:///key", "s3://user@bucket/k", "s3://bucket:9000/k",
    "file://otherhost/etc", "s3://b/k?versionId=1", "s3://b/k#frag", "abfss://acct.dfs.core.windows.net/p",
    "s3://b/" + "x" * 5000, "s3://[b/k", "s3://b]/k", "file://[x/y",  # unbalanced brackets: no URL at all
])
def test_hostile_or_malformed_locations_are_refused(hostile: object) -> None:
    with pytest.raises(BadLocation):
        normalize(hostile)


@pytest.mark.parametrize("child, parent, inside", [
    ("s3://b/wh/t", "s3://b/wh/t", True),
    ("s3://b/wh/t/data/f.parquet", "s3://b/wh/t", True),
    ("s3://b/wh/t10", "s3://b/wh/t1", False),  # a sibling sharing a name prefix is not inside
    ("s3://b/wh", "s3://b/wh/t", False),
    ("s3://c/wh/t", "s3://b/wh/t", False),
    ("file:///x", "file:///", True),
])
def test_within_respects_segment_boundaries(child: str, parent: str, inside: bool) -> None:
    assert within(child, parent) is inside
    assert overlaps(child, parent) is (inside or within(parent, child))


@pytest.mark.parametrize(("url", "directory"), [
    ("/data/wh", Path("/data/wh")), ("file:///data/wh", Path("/data/wh")), ("FILE:///data/w%20h", Path("/data/w h")),
    ("wh", Path("wh")), ("s3://bucket/wh", None), ("gs://b/w", None), ("memory://x", None),
])
def test_the_directory_a_local_warehouse_names(url: str, directory: Path | None) -> None:
    assert local_directory(url) == directory


@pytest.mark.parametrize(("a", "b", "same"), [
    ("s3a://B/k/", "s3://b/k", True), ("/w/t", "file:///w/t/", True), ("s3://b/k", "s3://b/k2", False),
    ("s3://b/k", None, False), ("s3://b/../k", "s3://b/k", False), ("not a url", "not a url", False)])
def test_same_place_compares_canonical_forms_and_never_matches_a_bad_location(a: str, b: str | None,
                                                                              same: bool) -> None:
    assert same_place(a, b) is same


@pytest.mark.parametrize("given", [
    "abfss://data@home.dfs.core.windows.net/wh/_catalog", "abfs://data@home.dfs.core.windows.net/wh/_catalog",
    "wasbs://Data@HOME.blob.core.windows.net/wh/_catalog/", "az://data/wh/_catalog", "abfs://data/wh/_catalog",
])
def test_the_home_account_spelled_out_is_the_same_place_as_az(given: str) -> None:
    set_home_azure_account("home")
    assert normalize(given) == "az://data/wh/_catalog"
    assert overlaps(normalize(given), normalize("abfs://data/wh"))


def test_a_location_is_kept_as_the_client_spelled_its_account_and_decided_on_as_az() -> None:
    set_home_azure_account("home")
    given = "wasbs://Data@HOME.blob.core.windows.net/wh/ext/"
    assert as_given(given) == "abfss://data@home.dfs.core.windows.net/wh/ext"  # Spark reads this, not az://
    assert normalize(as_given(given)) == "az://data/wh/ext" == normalize(given)
    assert as_given("az://data/wh/ext") == "az://data/wh/ext"
    with pytest.raises(BadLocation):
        as_given("abfss://data@home.dfs.core.windows.net/wh/../_catalog")


@pytest.mark.parametrize("given", ["abfss://user@data@home.dfs.core.windows.net/wh",
                                   "wasbs://a@b@home.blob.core.windows.net/wh"])
def test_two_at_signs_in_an_azure_url_are_refused(given: str) -> None:
    with pytest.raises(BadLocation, match="abfss://container@account"):
        normalize(given)


def test_another_account_s_container_of_the_same_name_is_another_place() -> None:
    set_home_azure_account("home")
    assert normalize("abfss://data@other.dfs.core.windows.net/wh") == "abfss://data@other.dfs.core.windows.net/wh"
    assert not overlaps(normalize("abfss://data@other.dfs.core.windows.net/wh"), normalize("az://data/wh"))
    set_home_azure_account(None)  # a process with no Azure storage of its own names no account home
    assert normalize("abfss://data@home.dfs.core.windows.net/wh") == "abfss://data@home.dfs.core.windows.net/wh"


@pytest.mark.parametrize("url, split", [
    ("s3a://b/wh/t/x.json", ("s3a://b", "/wh/t/x.json")),
    ("abfss://c@a.dfs.core.windows.net/wh", ("abfss://c@a.dfs.core.windows.net", "/wh")),
    ("gs://b", ("gs://b", "")),
    ("s3://b/a%2Fb", ("s3://b", "/a%2Fb")),  # the path as written: keys are made of it, never of a decoded form
])
def test_split_root_keeps_the_path_as_written(url: str, split: tuple[str, str]) -> None:
    assert split_root(url) == split
