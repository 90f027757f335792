"""The GCS Credential Access Boundary, as data (no emulator enforces one; Google's STS is not reachable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arco.settings import ServerSettings
from arco.vending import Access, VendingUnavailable, parse_location
from arco.vending.gcs import GcsMinter, access_boundary, boundary_rules


@pytest.mark.parametrize(("access", "role"), [
    (Access.READ, "inRole:roles/storage.objectViewer"),
    (Access.READ_WRITE, "inRole:roles/storage.objectAdmin"),
])
def test_rule(access: Access, role: str) -> None:
    [rule] = boundary_rules(parse_location("gs://bkt/wh//db/t"), access)
    assert rule["availableResource"] == "//storage.googleapis.com/projects/_/buckets/bkt"
    assert rule["availablePermissions"] == [role]
    assert rule["availabilityCondition"]["expression"] == (
        "resource.name.startsWith('projects/_/buckets/bkt/objects/wh/db/t/') || "
        "api.getAttribute('storage.googleapis.com/objectListPrefix', '').startsWith('wh/db/t/')")


def test_bucket_root_has_no_condition() -> None:
    [rule] = boundary_rules(parse_location("gs://bkt"), Access.READ)
    assert "availabilityCondition" not in rule


@pytest.mark.parametrize("location", ["gs://bkt/wh/t", "gs://bkt"])
def test_google_auth_object_serialises_to_the_same_rules(location: str) -> None:
    parsed = parse_location(location)
    rules = access_boundary(parsed, Access.READ_WRITE).to_json()["accessBoundary"]["accessBoundaryRules"]
    assert rules == boundary_rules(parsed, Access.READ_WRITE)


def test_anonymous_warehouse_has_nothing_to_downscope() -> None:
    minter = GcsMinter(ServerSettings(), {"gcs.no-auth": "true"})
    with pytest.raises(VendingUnavailable, match="--vending-gcs-credentials-file"):
        minter.mint(parse_location("gs://bkt/t"), Access.READ, "alice", None)


def test_missing_credentials_file_is_unavailable(tmp_path: Path) -> None:
    minter = GcsMinter(ServerSettings(vending_gcs_credentials_file=str(tmp_path / "absent.json")), {})
    with pytest.raises(VendingUnavailable, match="ARCO_VENDING_GCS_CREDENTIALS_FILE"):
        minter.mint(parse_location("gs://bkt/t"), Access.READ, "alice", None)
