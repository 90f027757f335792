"""Buckets and containers for the vending tests, each holding two tables' worth of objects."""

from __future__ import annotations

import uuid

import pytest
from vend_support import TABLE_A, TABLE_AB, s3_client

from support import emulators


@pytest.fixture(scope="module")
def sts_bucket(seaweedfs_sts_server: emulators.StsS3Server) -> str:
    """A bucket with one object in each of tables A and AB, written with the server's own keys."""
    bucket = f"arco-vend-{uuid.uuid4().hex[:10]}"
    admin = s3_client(seaweedfs_sts_server.options())
    admin.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    for prefix in (TABLE_A, TABLE_AB):
        admin.put_object(Bucket=bucket, Key=f"{prefix}data/seed.parquet", Body=b"seed")  # type: ignore[attr-defined]
    return bucket


@pytest.fixture(scope="module")
def azure_containers(azurite_server: emulators.AzureServer) -> tuple[str, str]:
    """Two containers; the first holds tables A and AB, the second one blob. Written with the account key."""
    from azure.storage.blob import BlobServiceClient

    service = BlobServiceClient.from_connection_string(azurite_server.connection_string)
    first, second = (f"arco-vend-{uuid.uuid4().hex[:10]}" for _ in range(2))
    for container in (first, second):
        service.create_container(container)
    for prefix in (TABLE_A, TABLE_AB):
        service.get_blob_client(first, f"{prefix}data/seed.parquet").upload_blob(b"seed")
    service.get_blob_client(second, f"{TABLE_A}data/seed.parquet").upload_blob(b"other")
    return first, second
