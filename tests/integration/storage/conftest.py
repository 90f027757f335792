"""Storage targets for the conformance suite: every backend, each against a real server the suite starts."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from arco.storage.base import StorageBackend
from support.storage_targets import StorageTarget

TARGETS = ["memory", "local", "s3-seaweedfs", "s3-moto", "gcs-fake", "azure-azurite", "azure-azurite-sas"]


@pytest.fixture(params=TARGETS)
def storage_target(request: pytest.FixtureRequest, tmp_path: Path) -> StorageTarget:
    name: str = request.param
    unique = uuid.uuid4().hex[:12]
    if name == "memory":
        return StorageTarget(name, f"memory://conformance-{unique}", shared_across_processes=False)
    if name == "local":
        return StorageTarget(name, str(tmp_path / "warehouse"))
    base: StorageTarget = request.getfixturevalue(name.replace("-", "_") + "_bucket")
    return StorageTarget(
        name, f"{base.url}/{unique}", base.options, conditional_delete_enforced=base.conditional_delete_enforced
    )


@pytest.fixture
def storage(storage_target: StorageTarget) -> Iterator[StorageBackend]:
    backend = storage_target.open()
    yield backend
    backend.close()
