from __future__ import annotations

import pytest

from arco.storage.base import CasNotSupported, MatchesVersion, Precondition, WriteResult
from arco.storage.memory import MemoryBackend
from arco.storage.probe import probe_conditional_writes


class IgnoresPreconditions(MemoryBackend):
    """Behaves like the S3 and GCS emulators that accept conditional headers and then ignore them."""

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        return super().put(key, data, None)


class IgnoresVersionMatch(MemoryBackend):
    """Honours create-only writes but not version matches (a partial implementation)."""

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        return super().put(key, data, None if isinstance(precondition, MatchesVersion) else precondition)


def test_a_backend_that_honours_preconditions_passes() -> None:
    storage = MemoryBackend()
    report = probe_conditional_writes(storage)
    assert report.conditional_put and report.conditional_delete
    assert list(storage.list()) == []  # the probe cleans up after itself


@pytest.mark.parametrize("backend", [IgnoresPreconditions(), IgnoresVersionMatch()])
def test_a_backend_that_ignores_preconditions_is_refused_with_advice(backend: MemoryBackend) -> None:
    with pytest.raises(CasNotSupported, match="cannot be used for catalog commits.*compare-and-swap"):
        probe_conditional_writes(backend)
    assert list(backend.list()) == []
