"""Check, before trusting a backend with commits, that it really honours conditional writes.

Some S3- and GCS-compatible servers accept ``If-None-Match``/``If-Match``/``ifGenerationMatch`` and then ignore
them; committing on such a store would silently lose updates. The probe writes a scratch object and checks that
each precondition is enforced; any failure raises :class:`CasNotSupported` with what went wrong and what to do.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from arco.storage.base import CasNotSupported, DoesNotExist, MatchesVersion, StorageBackend, Written

PROBE_PREFIX = "_catalog/probes/"


@dataclass(frozen=True)
class ProbeReport:
    conditional_put: bool
    conditional_delete: bool


def probe_conditional_writes(storage: StorageBackend) -> ProbeReport:
    """Exercise create-only put, version-matched put and version-matched delete on a scratch key."""
    if not storage.capabilities.conditional_put:
        raise CasNotSupported(_advice(storage, "this backend does not support conditional writes"))
    key = f"{PROBE_PREFIX}{uuid.uuid4().hex}"
    first = storage.put(key, b"probe-1", DoesNotExist())
    if not isinstance(first, Written):
        raise CasNotSupported(_advice(storage, "a create-only write of a new object was refused"))
    try:
        if storage.put(key, b"probe-2", DoesNotExist()).ok:
            raise CasNotSupported(_advice(storage, "a create-only write replaced an existing object"))
        if storage.put(key, b"probe-3", MatchesVersion(first.version + "-stale")).ok:
            raise CasNotSupported(_advice(storage, "a write with a stale version was accepted"))
        second = storage.put(key, b"probe-4", MatchesVersion(first.version))
        if not isinstance(second, Written):
            raise CasNotSupported(_advice(storage, "a write with the current version was refused"))
        conditional_delete = not storage.delete(key, MatchesVersion(first.version)).ok
    finally:
        storage.delete(key)
    return ProbeReport(conditional_put=True, conditional_delete=conditional_delete)


def _advice(storage: StorageBackend, what: str) -> str:
    return (
        f"the storage at {storage.url} cannot be used for catalog commits: {what}. Arco needs compare-and-swap "
        "(If-None-Match / If-Match on S3 and Azure, ifGenerationMatch on GCS) to never lose an update. Use a "
        "store that enforces them: a local directory, AWS S3, Google Cloud Storage, Azure Blob Storage, or "
        "SeaweedFS for a local S3."
    )
