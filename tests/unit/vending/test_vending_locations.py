"""Parsing and normalising table locations: the scope every credential is cut to."""

from __future__ import annotations

import pytest

from arco.vending.locations import InvalidLocation, StorageLocation, is_local, normalise_key_prefix, parse_location


@pytest.mark.parametrize(("location", "expected"), [
    ("s3://bucket/wh/db/t", StorageLocation("s3", "s3", "bucket", "wh/db/t/")),
    ("s3://bucket/wh/db/t/", StorageLocation("s3", "s3", "bucket", "wh/db/t/")),
    ("S3A://bucket//wh///db/t//", StorageLocation("s3", "s3a", "bucket", "wh/db/t/")),
    ("s3://bucket", StorageLocation("s3", "s3", "bucket", "")),
    ("s3://bucket/", StorageLocation("s3", "s3", "bucket", "")),
    ("gs://my_bucket.example/t", StorageLocation("gcs", "gs", "my_bucket.example", "t/")),
    ("az://container/wh/t", StorageLocation("azure", "az", "container", "wh/t/")),
    ("abfss://container@Acct.dfs.core.windows.net/wh/t",
     StorageLocation("azure", "abfss", "container", "wh/t/", "acct.dfs.core.windows.net")),
    ("wasbs://c@acct.blob.core.windows.net/t",
     StorageLocation("azure", "wasbs", "c", "t/", "acct.blob.core.windows.net")),
    ("/data/wh/t", StorageLocation("local", "file", "", "/data/wh/t")),
    ("file:///data/wh/t", StorageLocation("local", "file", "", "/data/wh/t")),
    ("file:/data/wh/t", StorageLocation("local", "file", "", "/data/wh/t")),
    ("memory://wh/t", StorageLocation("local", "memory", "", "wh/t")),
])
def test_parse(location: str, expected: StorageLocation) -> None:
    assert parse_location(location) == expected
    assert is_local(location) == (expected.cloud == "local")  # the scheme alone says it, as the parse does


@pytest.mark.parametrize(("location", "url"), [
    ("s3://bucket//wh/t", "s3://bucket/wh/t/"),
    ("s3a://bucket/wh/t/", "s3a://bucket/wh/t/"),
    ("abfss://c@acct.dfs.core.windows.net/t", "abfss://c@acct.dfs.core.windows.net/t/"),
    ("gs://b", "gs://b/"),
])
def test_url_is_the_normalised_prefix(location: str, url: str) -> None:
    assert parse_location(location).url == url


@pytest.mark.parametrize("location", [
    "s3://bucket/wh/../other",       # clients resolve .. differently; never scope by it
    "s3://bucket/wh/./t",
    "s3://bucket/wh/t/..",
    "s3://bucket/wh/*",              # * and ? are wildcards in an S3 policy Resource
    "s3://bucket/wh/t?",
    "s3://bucket/wh/${aws:username}",  # an IAM policy variable
    "gs://bucket/wh/it's",           # would end the CEL string literal of the GCS condition
    "gs://bucket/wh/a\\b",
    "s3://bucket/wh/a\nb",
    "s3://bucket/wh/t?versionId=1",
    "s3://bucket/wh/t#frag",
    "s3://buck*et/wh/t",
    "s3:///wh/t",                    # no bucket
    "abfss://c@acct .dfs.core.windows.net/t",
    "ftp://host/wh/t",
    "hdfs://namenode/wh/t",
    "s3://[bucket/wh/t",             # an unbalanced bracket: the URL parser itself refuses it
    "file://[tmp/wh/t",
])
def test_refused(location: str) -> None:
    with pytest.raises(InvalidLocation):
        parse_location(location)


@pytest.mark.parametrize(("path", "prefix"), [
    ("", ""), ("/", ""), ("//", ""), ("a", "a/"), ("/a/b", "a/b/"), ("a//b///", "a/b/"), ("a/..b/c.", "a/..b/c./"),
])
def test_normalise_key_prefix(path: str, prefix: str) -> None:
    assert normalise_key_prefix(path) == prefix
