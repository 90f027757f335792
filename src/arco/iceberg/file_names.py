"""The names of the metadata files Arco writes, ``<sequence:05d>-<uuid>.metadata.json``, and the folder they go
in (``write.metadata.path``, else the table's or view's ``metadata/``).

That is the shape Java and PyIceberg write, and PyIceberg reads a file's version from its name only when the part
after the number is a UUID (``Catalog._parse_metadata_version``; otherwise it takes -1). The UUID's 32 hex digits
carry what crash recovery needs to find a commit's file again (:func:`arco.iceberg.commit.landed_location`):

* a request's file: the first 24 digits of the request's tag, then 8 random digits (one request may make several
  attempts, each with a file of its own);
* a group's file (:mod:`arco.iceberg.group_commit`): ``00000000``, then 24 random digits;
* a file of no request (a create without a key): a random UUID.

Files written before this shape (``<seq>-<tag>-<8 hex>``, ``<seq>-group-<hex>``) are still recognised.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from collections.abc import Callable, Mapping

TAG_DIGITS = 24  # 96 bits: no two requests' files in one table's history share them
GROUP_PREFIX = "00000000"
_HEX = re.compile(r"[0-9a-f]+")
_LEGACY_GROUP_MARK = "group"
WRITE_METADATA_PATH = "write.metadata.path"


def uuid_shaped(hex32: str) -> str:
    """32 hex digits as a UUID is written (8-4-4-4-12)."""
    return f"{hex32[:8]}-{hex32[8:12]}-{hex32[12:16]}-{hex32[16:20]}-{hex32[20:32]}"


def attempt_part(tag: str | None) -> str:
    """The name part after the sequence of a file one request writes: its tag's digits, unique per attempt."""
    if tag is None:
        return str(uuid.uuid4())
    return uuid_shaped(_tag_digits(tag) + secrets.token_hex(4))


def group_part() -> str:
    """The name part after the sequence of a file a group of requests writes."""
    return uuid_shaped(GROUP_PREFIX + secrets.token_hex(12))


def carries_tag(location: str, tag: str) -> bool:
    """Whether the metadata file at ``location`` was written by the request tagged ``tag``."""
    name = location.rsplit("/", 1)[-1]
    return _digits(name).startswith(_tag_digits(tag)) or f"-{tag}-" in name


def tag_finder(tag: str) -> Callable[[str], bool]:
    """:func:`carries_tag` for one tag over many locations (a table's history): a substring test first, since the
    tag's digits appear in a file's name as :func:`attempt_part` spells them, so a name without them is passed over
    without being parsed."""
    digits = _tag_digits(tag)
    spelled = f"-{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"
    legacy = f"-{tag}-"
    return lambda location: (spelled in location or legacy in location) and carries_tag(location, tag)


def is_group_file(location: str) -> bool:
    """Whether a metadata file was written by a group (its name says so)."""
    name = location.rsplit("/", 1)[-1]
    return _digits(name).startswith(GROUP_PREFIX) or name.split("-", 2)[1:2] == [_LEGACY_GROUP_MARK]


def _tag_digits(tag: str) -> str:
    tag = tag.lower()
    if len(tag) >= TAG_DIGITS and _HEX.fullmatch(tag):
        return tag[:TAG_DIGITS]
    return hashlib.sha256(tag.encode()).hexdigest()[:TAG_DIGITS]


def _digits(name: str) -> str:
    """The 32 hex digits of a name of this module's shape; "" for any other name."""
    parts = name.split(".", 1)[0].split("-", 1)
    if len(parts) != 2 or len(parts[1]) != 36:
        return ""
    digits = parts[1].replace("-", "")
    return digits if len(digits) == 32 and _HEX.fullmatch(digits) else ""


def metadata_folder(location: str, properties: Mapping[str, str]) -> str:
    """Where a table's or view's metadata files go: ``write.metadata.path`` if set (as Java and PyIceberg do; the
    property is checked to lie inside the object's location, spelled plainly: locations.check_write_paths), else
    ``<location>/metadata``."""
    custom = properties.get(WRITE_METADATA_PATH)
    return custom.rstrip("/") if custom else f"{location.rstrip('/')}/metadata"


def metadata_file_location(location: str, sequence: int, suffix: str, properties: Mapping[str, str]) -> str:
    return f"{metadata_folder(location, properties)}/{sequence:05d}-{suffix}.metadata.json"


def metadata_sequence(location: str) -> int:
    """The leading number of a metadata file name (``00003-...metadata.json`` -> 3); 0 if it has none."""
    name = location.rsplit("/", 1)[-1]
    head = name.split("-", 1)[0].removeprefix("v").split(".", 1)[0]
    return int(head) if head.isdigit() else 0
