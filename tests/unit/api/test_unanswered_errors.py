"""How unanswered exceptions are answered, and how faults are logged: once, then summarized."""

from __future__ import annotations

import asyncio
import logging

import pytest
from starlette.requests import ClientDisconnect

from arco.api.faults import ContainErrors, answer_for
from arco.fault_log import FaultLog
from arco.iceberg.metadata_files import MissingMetadataFile, UnreadableMetadataFile
from arco.storage.base import InvalidKey, NotFound, StorageError, StorageUnavailable


@pytest.mark.parametrize(("exc", "status"), [
    (StorageUnavailable("S3 PUT failed"), 503),
    (StorageError("a file and a directory would share a name"), 503),
    (NotFound("k"), 503),  # an object that vanished under a request: retrying may find the new state
    (PermissionError(13, "Permission denied"), 503),  # an OS error that escaped a backend is still storage
    (OSError(28, "No space left on device"), 503),
    (InvalidKey("bad key"), 400),
    (MissingMetadataFile("t/metadata/1.metadata.json", "file:///wh/t/metadata/1.metadata.json", "table"), 404),
    (ValueError("a bug"), 500),
    (KeyError("a bug"), 500),
])
def test_answers(exc: Exception, status: int) -> None:
    answer = answer_for(exc)
    assert answer.status == status
    assert ("Retry-After" in answer.headers) == (status == 503)
    assert answer.storage_fault == (status == 503)
    if status == 404:  # the file a pointer names is gone: which one is what the client needs to know
        assert answer.error_type == "NotFoundException" and "file:///wh/t/metadata/1" in answer.message
    if status != 400:
        assert str(exc) not in answer.message  # storage paths and bug details go to the log, not to clients
    assert answer.traceback == (status == 500)


def test_a_metadata_file_that_is_no_metadata_is_said_so_without_a_traceback() -> None:
    answer = answer_for(UnreadableMetadataFile("file:///wh/t/metadata/1.metadata.json", "table", "schemas: missing"))
    assert (answer.status, answer.storage_fault, answer.traceback) == (500, False, False)
    assert "file:///wh/t/metadata/1.metadata.json is not an Iceberg table metadata document" in answer.message


def test_a_fault_is_logged_once_then_summarized(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="arco.api")
    logger = logging.getLogger("arco.api")
    faults = FaultLog(logger, interval_s=0.0)
    faults.report("storage unavailable", "POST /t", StorageUnavailable("disk"))
    assert len(caplog.records) == 1 and "POST /t" in caplog.records[0].getMessage()
    quiet = FaultLog(logger, interval_s=3600)
    caplog.clear()
    for _ in range(100):
        quiet.report("storage unavailable", "POST /t", StorageUnavailable("disk"))
    quiet.report("unexpected ValueError", "GET /x", ValueError("bug"), traceback=True)
    assert len(caplog.records) == 2  # one per kind; the other 99 are counted for the next summary
    assert caplog.records[1].exc_info is not None
    quiet.interval_s = 0.0
    caplog.clear()
    quiet.report("storage unavailable", "POST /t", StorageUnavailable("disk"))
    assert "99 more" in caplog.records[0].getMessage()


def test_a_client_that_went_away_is_no_fault(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="arco.api")
    sent: list[dict] = []

    async def reads_a_body_that_never_comes(scope: dict, receive: object, send: object) -> None:
        raise ClientDisconnect()

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/iceberg/v1/main/namespaces"}
    asyncio.run(ContainErrors(reads_a_body_that_never_comes)(scope, None, send))  # type: ignore[arg-type]
    assert sent == []  # nobody to answer
    assert [r.levelno for r in caplog.records] == [logging.INFO]
    assert "went away during POST /iceberg/v1/main/namespaces" in caplog.records[0].getMessage()
    assert caplog.records[0].exc_info is None
