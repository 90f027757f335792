"""The S3 session policy for one prefix, and the STS session name: pure, so they are tested as decision tables.

AWS (and SeaweedFS) evaluate an AssumeRole session as the intersection of the role's policies and this inline
policy, so whatever the role allows, the session reaches only ``bucket/prefix*``.
"""

from __future__ import annotations

import re
from typing import Any

from arco.vending.locations import StorageLocation
from arco.vending.model import Access

READ_OBJECT_ACTIONS = ("s3:GetObject", "s3:GetObjectVersion")
# Multipart actions: writers upload large data files in parts and abort them on failure.
WRITE_OBJECT_ACTIONS = ("s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:AbortMultipartUpload",
                        "s3:ListMultipartUploadParts")
# RoleSessionName: 2-64 characters of [\w+=,.@-]; it shows up in CloudTrail, so it names the Arco principal.
_SESSION_NAME_UNSAFE = re.compile(r"[^\w+=,.@-]")


def session_policy(location: StorageLocation, access: Access) -> dict[str, Any]:
    """The inline policy limiting a session to ``location``'s prefix, read-only or read-write."""
    bucket_arn = f"arn:aws:s3:::{location.bucket}"
    objects_arn = f"{bucket_arn}/{location.key_prefix}*"
    object_actions = list(READ_OBJECT_ACTIONS)
    if access is Access.READ_WRITE:
        object_actions += WRITE_OBJECT_ACTIONS
    listing: dict[str, Any] = {"Sid": "ListTablePrefix", "Effect": "Allow", "Action": ["s3:ListBucket"],
                               "Resource": [bucket_arn]}
    if location.key_prefix:
        # "p/" lists the table's own root; "p/*" anything below. "p" alone is refused: it would also list "p2/".
        listing["Condition"] = {"StringLike": {"s3:prefix": [location.key_prefix, f"{location.key_prefix}*"]}}
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "TableObjects", "Effect": "Allow", "Action": object_actions, "Resource": [objects_arn]},
        listing,
        # Clients (Hadoop S3A, some SDKs) look up the bucket's region first; it reveals nothing else.
        {"Sid": "BucketRegion", "Effect": "Allow", "Action": ["s3:GetBucketLocation"], "Resource": [bucket_arn]},
    ]}


def session_name(principal: str) -> str:
    """A valid RoleSessionName that still says which Arco principal the session was vended for."""
    return ("arco-" + _SESSION_NAME_UNSAFE.sub("-", principal))[:64]
