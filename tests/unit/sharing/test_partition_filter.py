"""A shared table's partition filter (pure): OR of partitions, AND of values, EQUAL and LIKE, failing closed."""

from __future__ import annotations

import pytest

from arco.sharing.partition_filter import InvalidPartitionFilter, of_object, parse

EU_OR_US_2024 = {"partitions": [
    {"values": [{"name": "region", "op": "EQUAL", "value": "eu"}]},
    {"values": [{"name": "Region", "value": "us"}, {"name": "day", "op": "LIKE", "value": "2024-%"}]},
]}


@pytest.mark.parametrize(("values", "admitted"), [
    ({"region": "eu", "day": "2023-01-01"}, True),
    ({"region": "us", "day": "2024-03-01"}, True),
    ({"REGION": "us", "day": "2024-03-01"}, True),  # column names are case-insensitive
    ({"region": "us", "day": "2023-12-31"}, False),
    ({"region": "ap", "day": "2024-03-01"}, False),
    ({"region": "EU"}, False),  # values are compared as written
    ({"region": None}, False),
    ({"day": "2024-01-01"}, False),  # no value for a named column: not served (fails closed)
    ({}, False),
])
def test_a_file_is_served_only_if_its_partition_satisfies_the_filter(values: dict, admitted: bool) -> None:
    assert parse(EU_OR_US_2024).admits(values) is admitted


def test_like_has_sqls_wildcards_and_an_escape() -> None:
    like = parse([{"values": [{"name": "p", "op": "like", "value": "a_c\\%%"}]}])
    assert [like.admits({"p": v}) for v in ("abc%", "axc%zz", "abc", "abcd%", "ab%")] == [True, True, False, False,
                                                                                        False]


def test_a_missing_value_means_null() -> None:
    nulls = parse({"partitions": [{"values": [{"name": "p"}]}]})
    assert nulls.admits({"p": None}) and not nulls.admits({"p": "x"}) and not nulls.admits({})


def test_the_stored_shape_is_the_specs_and_parses_again_to_the_same_filter() -> None:
    spec = parse(EU_OR_US_2024).spec()
    assert spec["partitions"][1]["values"][0] == {"name": "region", "op": "EQUAL", "value": "us"}
    assert of_object({"partition_specification": spec}) == parse(EU_OR_US_2024)
    assert of_object({"name": "c.s.t"}) is None


@pytest.mark.parametrize("raw", [
    [], {"partitions": []}, "region = 'eu'", [{"values": []}], [{"values": [{"op": "EQUAL", "value": "x"}]}],
    [{"values": [{"name": "p", "op": "GREATER", "value": "1"}]}], [{"values": [{"name": "p", "value": 1}]}],
    [{"values": [{"name": "p", "value": "a"}, {"name": "P", "value": "b"}]}],
    [{"values": [{"name": "p", "op": "LIKE"}]}],
    [{"values": [{"name": "p", "recipient_property_key": "country"}]}],
])
def test_a_malformed_filter_is_refused(raw: object) -> None:
    with pytest.raises(InvalidPartitionFilter):
        parse(raw)
