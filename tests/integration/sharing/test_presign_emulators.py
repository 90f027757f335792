"""Pre-signed GETs from the storage backends against their emulators: the URL reads its one object without any
other credential, and does not open a neighbour; a backend that cannot sign says so (None) instead of failing."""

from __future__ import annotations

import uuid

import httpx
import pytest

from support.storage_targets import StorageTarget

pytestmark = [pytest.mark.emulator, pytest.mark.timeout(180)]


def test_an_azure_sas_opens_exactly_one_blob(azure_azurite_bucket: StorageTarget) -> None:
    storage = azure_azurite_bucket.open()
    key = f"sharing/{uuid.uuid4().hex}/part-0.parquet"
    storage.put(key, b"PAR1 data")
    storage.put(key.replace("part-0", "part-1"), b"other")
    url = storage.presign_get(storage.location_of(key), 60)
    assert url is not None and "sig=" in url
    assert httpx.get(url, timeout=30).content == b"PAR1 data"
    assert httpx.get(url, headers={"Range": "bytes=0-3"}, timeout=30).content == b"PAR1"
    assert httpx.get(url.replace("part-0", "part-1"), timeout=30).status_code == 403
    assert storage.presign_get("file:///elsewhere/x.parquet", 60) is None


def test_s3_presigns_and_gcs_without_signing_credentials_declines(s3_seaweedfs_bucket: StorageTarget,
                                                                    gcs_fake_bucket: StorageTarget) -> None:
    s3 = s3_seaweedfs_bucket.open()
    key = f"sharing/{uuid.uuid4().hex}.bin"
    s3.put(key, b"hello")
    url = s3.presign_get(s3.location_of(key), 60)
    assert url is not None and "X-Amz-Signature=" in url
    assert httpx.get(url, timeout=30).content == b"hello"
    gcs = gcs_fake_bucket.open()
    gcs.put(key, b"hello")
    assert gcs.presign_get(gcs.location_of(key), 60) is None  # the emulator's anonymous client cannot sign
