"""Metadata file names: the shape PyIceberg reads versions from (its catalogs that write metadata themselves, e.g.
SqlCatalog, number a table's next file from its current one), carrying a request's tag or a group's mark."""

from __future__ import annotations

import hashlib
import uuid

from pyiceberg.catalog import MetastoreCatalog

from arco.iceberg import file_names
from arco.iceberg.file_names import metadata_file_location

TAG = hashlib.sha256(b"an idempotency key").hexdigest()


def test_every_kind_of_name_is_a_sequence_and_a_uuid_as_pyiceberg_reads_it() -> None:
    for sequence, part in ((0, file_names.attempt_part(None)), (7, file_names.attempt_part(TAG)),
                           (12, file_names.attempt_part(uuid.uuid4().hex)), (123, file_names.group_part())):
        location = metadata_file_location("s3://b/t", sequence, part, {})
        assert MetastoreCatalog._parse_metadata_version(location) == sequence, location
        assert str(uuid.UUID(part)) == part


def test_a_requests_file_carries_its_tag_and_no_other() -> None:
    location = metadata_file_location("s3://b/t", 3, file_names.attempt_part(TAG), {})
    assert file_names.carries_tag(location, TAG)
    assert not file_names.carries_tag(location, hashlib.sha256(b"another key").hexdigest())
    assert not file_names.is_group_file(location)
    # Attempts of one request have names of their own (32 random bits each: a request makes a few attempts).
    assert len({file_names.attempt_part(TAG) for _ in range(100)}) == 100


def test_a_tag_of_any_spelling_is_carried() -> None:
    for tag in ("short", "not hex at all, but long enough to be cut", TAG.upper()):
        location = metadata_file_location("s3://b/t", 1, file_names.attempt_part(tag), {})
        assert file_names.carries_tag(location, tag)
        assert MetastoreCatalog._parse_metadata_version(location) == 1


def test_a_groups_file_is_known_by_its_name() -> None:
    location = metadata_file_location("s3://b/t", 4, file_names.group_part(), {})
    assert file_names.is_group_file(location)
    assert not file_names.carries_tag(location, TAG)
    assert not file_names.is_group_file(metadata_file_location("s3://b/t", 4, file_names.attempt_part(None), {}))


def test_names_written_before_this_shape_are_still_recognised() -> None:
    assert file_names.carries_tag(f"s3://b/t/metadata/00002-{TAG}-1a2b3c4d.metadata.json", TAG)
    assert file_names.is_group_file("s3://b/t/metadata/00002-group-0123456789abcdef0123456789abcdef.metadata.json")
    assert not file_names.is_group_file(f"s3://b/t/metadata/00002-{TAG}-1a2b3c4d.metadata.json")
    assert not file_names.carries_tag("s3://b/t/metadata/00002-0123.metadata.json", TAG)


def test_the_finder_of_a_tag_answers_as_carries_tag_does_for_every_kind_of_name() -> None:
    other = hashlib.sha256(b"another key").hexdigest()
    for tag in (TAG, "short", "not hex at all, but long enough to be cut", TAG.upper()):
        names = [metadata_file_location("s3://b/t", 2, part, {}) for part in (
            file_names.attempt_part(tag), file_names.attempt_part(other), file_names.attempt_part(None),
            file_names.group_part())]
        names += [f"s3://b/t/metadata/00002-{tag}-1a2b3c4d.metadata.json",
                  f"s3://b/t/metadata/00002-{other}-1a2b3c4d.metadata.json", "s3://b/t/metadata/00002-0123.metadata.json"]
        finds = file_names.tag_finder(tag)
        assert [finds(n) for n in names] == [file_names.carries_tag(n, tag) for n in names]
        assert finds(names[0]) and finds(names[4]) and not any(finds(n) for n in names[1:4] + names[5:])
