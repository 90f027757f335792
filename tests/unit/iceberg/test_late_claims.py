"""A claim whose put got no answer, applied by the store later (a paused store resumes): its key is not held for
the in-progress timeout. The process that made it takes the marker over at once; other servers can once the
marker is released in the background."""

from __future__ import annotations

from typing import Any

import pytest
from uuid6 import uuid7

from arco.iceberg.idempotency import IdempotencyMarkers, Keyed, KeyInFlight, request_hash
from arco.storage.base import ObjectData, Precondition, StorageUnavailable, WriteResult
from arco.storage.memory import MemoryBackend


class PausedStore(MemoryBackend):
    """While paused, every call times out for the client, and the puts are applied when the store resumes."""

    def __init__(self) -> None:
        super().__init__("paused")
        self.paused = False
        self._queued: list[tuple[str, bytes, Precondition]] = []

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        if self.paused:
            self._queued.append((key, data, precondition))
            raise StorageUnavailable("timed out")
        return super().put(key, data, precondition)

    def get(self, key: str) -> ObjectData:
        if self.paused:
            raise StorageUnavailable("timed out")
        return super().get(key)

    def resume(self) -> None:
        self.paused = False
        for key, data, precondition in self._queued:
            super().put(key, data, precondition)
        self._queued.clear()


def keyed(markers: IdempotencyMarkers, key: str) -> Keyed:
    body: dict[str, Any] = {"namespace": ["n"]}
    return Keyed(markers, "catalog-x", key, "createNamespace", request_hash("createNamespace", "", body))


def claim_lost_in_a_pause(store: PausedStore, server: IdempotencyMarkers, key: str) -> None:
    store.paused = True
    with pytest.raises(StorageUnavailable):
        server.claim(keyed(server, key), lambda marker: None)
    store.resume()  # the store applies the claim after all: an IN_PROGRESS marker no attempt owns


def test_the_server_whose_claim_got_no_answer_takes_its_marker_over_at_once() -> None:
    store = PausedStore()
    server = IdempotencyMarkers(store, in_progress_timeout_s=600, in_flight_wait_s=0.05)
    key = str(uuid7())
    claim_lost_in_a_pause(store, server, key)
    retried = server.claim(keyed(server, key), lambda marker: None)
    assert retried.took_over and retried.marker is not None


def test_another_server_takes_it_over_once_the_marker_is_released_in_the_background() -> None:
    store = PausedStore()
    first = IdempotencyMarkers(store, in_progress_timeout_s=600, in_flight_wait_s=0.05)
    other = IdempotencyMarkers(store, in_progress_timeout_s=600, in_flight_wait_s=0.05)
    key = str(uuid7())
    claim_lost_in_a_pause(store, first, key)
    with pytest.raises(KeyInFlight):  # another server cannot tell the marker's attempt ended ...
        other.claim(keyed(other, key), lambda marker: None)
    assert first.late.pending() == 1
    first.late.run_once()  # ... until the first one's background look releases it
    assert first.late.pending() == 0
    assert other.claim(keyed(other, key), lambda marker: None).took_over


def test_a_claim_that_never_lands_is_watched_until_storage_shows_another_marker() -> None:
    store = PausedStore()
    server = IdempotencyMarkers(store, in_progress_timeout_s=600, in_flight_wait_s=0.05)
    key = str(uuid7())
    store.paused = True
    with pytest.raises(StorageUnavailable):
        server.claim(keyed(server, key), lambda marker: None)
    store._queued.clear()  # this put never reaches the store
    store.paused = False
    server.late.run_once()
    assert server.late.pending() == 1  # nothing there yet: it may still come
    other = IdempotencyMarkers(store, in_progress_timeout_s=600, in_flight_wait_s=0.05)
    assert other.claim(keyed(other, key), lambda marker: None).marker is not None  # a fresh claim: a new marker
    server.late.run_once()
    assert server.late.pending() == 0  # another request's marker: not this claim's to release
