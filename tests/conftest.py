"""Servers shared by the whole run: storage emulators start once, on first use, and stop at the end."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from arco.cli.open_files import raise_open_file_limit
from arco.storage.urls import set_home_azure_account
from support import emulators
from support.storage_targets import StorageTarget


def pytest_configure(config: pytest.Config) -> None:
    # The whole run holds more than 1,024 descriptors at its peak (servers' pooled connections, emulator clients),
    # the soft limit many systems start processes with.
    raise_open_file_limit()


@pytest.fixture(autouse=True)
def _no_home_azure_account_carried_between_tests() -> Iterator[None]:
    """Opening Azure storage names the process's home account (arco.storage.urls); one test's must not change
    how another's URLs compare."""
    before = set_home_azure_account(None)
    yield
    set_home_azure_account(before)


@pytest.fixture(scope="session")
def seaweedfs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulators.S3Server]:
    with emulators.seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


@pytest.fixture(scope="session")
def seaweedfs_sts_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulators.StsS3Server]:
    """A second SeaweedFS, with STS roles for credential vending (its own process, so the plain one is untouched)."""
    with emulators.seaweedfs_sts(tmp_path_factory.mktemp("seaweedfs-sts")) as server:
        yield server


@pytest.fixture(scope="session")
def moto_s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulators.S3Server]:
    with emulators.moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture(scope="session")
def fake_gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulators.GcsServer]:
    with emulators.fake_gcs(tmp_path_factory.mktemp("fake-gcs")) as server:
        yield server


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulators.AzureServer]:
    with emulators.azurite(tmp_path_factory.mktemp("azurite")) as server:
        yield server


def _bucket_name() -> str:
    return f"arco-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def s3_seaweedfs_bucket(seaweedfs_server: emulators.S3Server) -> StorageTarget:
    from arco.storage.s3 import create_bucket

    bucket = _bucket_name()
    create_bucket(bucket, seaweedfs_server.options())
    return StorageTarget("s3-seaweedfs", f"s3://{bucket}", seaweedfs_server.options())


@pytest.fixture(scope="session")
def s3_moto_bucket(moto_s3_server: emulators.S3Server) -> StorageTarget:
    from arco.storage.s3 import create_bucket

    bucket = _bucket_name()
    create_bucket(bucket, moto_s3_server.options())
    return StorageTarget("s3-moto", f"s3://{bucket}", moto_s3_server.options())


@pytest.fixture(scope="session")
def gcs_fake_bucket(fake_gcs_server: emulators.GcsServer) -> StorageTarget:
    from arco.storage.gcs import create_bucket

    bucket = _bucket_name()
    create_bucket(bucket, fake_gcs_server.options())
    # fake-gcs-server honours ifGenerationMatch on uploads but ignores it on DELETE.
    return StorageTarget("gcs-fake", f"gs://{bucket}", fake_gcs_server.options(), conditional_delete_enforced=False)


@pytest.fixture(scope="session")
def azure_azurite_bucket(azurite_server: emulators.AzureServer) -> StorageTarget:
    from arco.storage.azure import create_container

    container = _bucket_name()
    create_container(container, azurite_server.options())
    return StorageTarget("azure-azurite", f"az://{container}", azurite_server.options())


@pytest.fixture(scope="session")
def azure_azurite_sas_bucket(azurite_server: emulators.AzureServer,
                             azure_azurite_bucket: StorageTarget) -> StorageTarget:
    """The same container, reached with an account SAS in the connection string instead of the account key."""
    from datetime import UTC, datetime, timedelta

    from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas

    sas = generate_account_sas(azurite_server.account_name, azurite_server.account_key,
                               resource_types=ResourceTypes(container=True, object=True),
                               permission=AccountSasPermissions(read=True, write=True, delete=True, list=True,
                                                                add=True, create=True),
                               expiry=datetime.now(UTC) + timedelta(hours=4))
    options = {"adls.connection-string": f"BlobEndpoint={azurite_server.blob_endpoint};SharedAccessSignature={sas}"}
    return StorageTarget("azure-azurite-sas", azure_azurite_bucket.url, options)
