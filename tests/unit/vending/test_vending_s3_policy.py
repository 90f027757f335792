"""The S3 session policy and session name, as decision tables."""

from __future__ import annotations

import pytest

from arco.vending.locations import parse_location
from arco.vending.model import Access
from arco.vending.s3_policy import READ_OBJECT_ACTIONS, WRITE_OBJECT_ACTIONS, session_name, session_policy


def _statements(location: str, access: Access) -> dict[str, dict]:  # type: ignore[type-arg]
    policy = session_policy(parse_location(location), access)
    assert policy["Version"] == "2012-10-17"
    assert all(s["Effect"] == "Allow" for s in policy["Statement"])
    return {s["Sid"]: s for s in policy["Statement"]}


@pytest.mark.parametrize(("access", "actions"), [
    (Access.READ, set(READ_OBJECT_ACTIONS)),
    (Access.READ_WRITE, set(READ_OBJECT_ACTIONS) | set(WRITE_OBJECT_ACTIONS)),
])
def test_object_actions_by_access(access: Access, actions: set[str]) -> None:
    objects = _statements("s3://b/wh/t", access)["TableObjects"]
    assert set(objects["Action"]) == actions
    assert objects["Resource"] == ["arn:aws:s3:::b/wh/t/*"]


def test_read_grants_nothing_that_changes_data() -> None:
    actions = {a for s in _statements("s3://b/wh/t", Access.READ).values() for a in s["Action"]}
    assert actions == {"s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket", "s3:GetBucketLocation"}


def test_write_includes_multipart() -> None:
    actions = set(_statements("s3://b/wh/t", Access.READ_WRITE)["TableObjects"]["Action"])
    assert {"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"} <= actions


@pytest.mark.parametrize("access", list(Access))
def test_listing_is_limited_to_the_prefix_with_its_slash(access: Access) -> None:
    listing = _statements("s3a://b//wh/t/", access)["ListTablePrefix"]
    assert listing["Action"] == ["s3:ListBucket"] and listing["Resource"] == ["arn:aws:s3:::b"]
    # "wh/t" alone (which would also list "wh/t2/") is not among the allowed prefixes.
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["wh/t/", "wh/t/*"]}}


def test_bucket_root_location_covers_the_bucket() -> None:
    statements = _statements("s3://b", Access.READ)
    assert statements["TableObjects"]["Resource"] == ["arn:aws:s3:::b/*"]
    assert "Condition" not in statements["ListTablePrefix"]


@pytest.mark.parametrize(("principal", "name"), [
    ("alice", "arco-alice"),
    ("alice@example.com", "arco-alice@example.com"),
    ("svc principal/ä", "arco-svc-principal-ä"),
    ("x" * 100, "arco-" + "x" * 59),
    ("", "arco-"),
])
def test_session_name(principal: str, name: str) -> None:
    assert session_name(principal) == name
    assert 2 <= len(session_name(principal)) <= 64
