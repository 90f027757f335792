"""The pure rules of the signed-file path (ranges) and of history sharing, and the file path end to end in-process."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from arco.sharing import file_urls, history
from arco.sharing.errors import SharingError
from arco.sharing.file_server import SignedFiles, Unsatisfiable, parse_ranges


@pytest.mark.parametrize(("header", "expected"), [
    (None, None),
    ("", None),
    ("bytes=0-9", [(0, 9)]),
    ("bytes=90-", [(90, 99)]),
    ("bytes=-10", [(90, 99)]),
    ("bytes=-500", [(0, 99)]),
    ("bytes=95-200", [(95, 99)]),
    ("bytes=0-4, 5-9", [(0, 9)]),  # adjacent ranges coalesce
    ("bytes=50-59,0-9,5-12", [(0, 12), (50, 59)]),  # sorted, overlaps merged
    ("bytes=200-300,0-0", [(0, 0)]),  # an unsatisfiable range among others is dropped
    ("items=0-9", None),  # another unit: the whole file
    ("bytes=9-0", None),  # malformed: ignored, as RFC 9110 says
    ("bytes=abc", None),
])
def test_ranges_are_parsed_sorted_and_coalesced(header: str | None, expected: list[tuple[int, int]] | None) -> None:
    assert parse_ranges(header, 100) == expected


@pytest.mark.parametrize("header", ["bytes=100-", "bytes=200-300", "bytes=-0"])
def test_ranges_wholly_past_the_end_are_unsatisfiable(header: str) -> None:
    with pytest.raises(Unsatisfiable):
        parse_ranges(header, 100)


class _Server:
    """What SignedFiles needs of the sharing server: the token check (the real one) and storage reads."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    def open_file(self, token: str) -> file_urls.FileGrant:
        try:
            return file_urls.verify(self.key, token, 0)
        except file_urls.BadSignedUrl as exc:
            raise SharingError(403, "PERMISSION_DENIED", str(exc)) from None

    def read_object(self, url: str) -> bytes:
        raise AssertionError("local files are read directly")


def test_the_file_path_answers_head_ranges_and_bad_tokens(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40  # 10,240 bytes
    (tmp_path / "f.parquet").write_bytes(data)
    key = b"k" * 32
    token = file_urls.sign(key, f"file://{tmp_path}/f.parquet", 2**62)
    client = TestClient(SignedFiles(_Server(key)))
    url = f"/delta-sharing/files/{token}/f.parquet"

    head = client.head(url)
    assert head.status_code == 200 and head.headers["content-length"] == "10240"
    assert head.headers["accept-ranges"] == "bytes" and head.content == b""
    assert client.get(url).content == data
    tail = client.get(url, headers={"Range": "bytes=-8"})
    assert tail.status_code == 206 and tail.content == data[-8:]
    assert tail.headers["content-range"] == "bytes 10232-10239/10240"
    assert client.get(url, headers={"Range": "bytes=10000-"}).content == data[10000:]
    multi = client.get(url, headers={"Range": "bytes=0-1,100-101"})
    assert multi.status_code == 206 and multi.headers["content-type"].startswith("multipart/byteranges")
    assert multi.content.count(b"Content-Range: bytes ") == 2 and int(multi.headers["content-length"]) == \
        len(multi.content)
    past = client.get(url, headers={"Range": "bytes=20000-"})
    assert past.status_code == 416 and past.headers["content-range"] == "bytes */10240"

    forged = client.get(f"/delta-sharing/files/{token[:-2]}xx/f.parquet")
    assert forged.status_code == 403 and forged.json()["errorCode"] == "PERMISSION_DENIED"
    (tmp_path / "f.parquet").unlink()
    gone = client.get(url)
    assert gone.status_code == 404 and gone.json()["errorCode"] == "RESOURCE_DOES_NOT_EXIST"
    assert client.post(url).status_code == 405


def test_history_is_shared_only_when_the_share_says_so() -> None:
    assert not history.history_shared({})
    assert not history.history_shared({"history_data_sharing_status": "DISABLED"})
    assert history.history_shared({"history_data_sharing_status": "enabled"})
    with pytest.raises(SharingError, match="history sharing is not enabled"):
        history.check_history({}, "reading by version")
    history.check_history({"history_data_sharing_status": "ENABLED"}, "reading by version")


@pytest.mark.parametrize(("obj", "shared"), [
    ({}, False),
    ({"history_data_sharing_status": "ENABLED"}, True),
    ({"cdf_enabled": True}, True),  # the legacy flag alone still shares the change data feed
    ({"history_data_sharing_status": "ENABLED", "cdf_enabled": False}, False),  # an explicit no wins
])
def test_change_data_follows_history_or_the_cdf_flag(obj: dict[str, object], shared: bool) -> None:
    assert history.change_data_shared(obj) is shared


def test_start_version_is_the_first_readable_version() -> None:
    history.check_floor({"start_version": 2}, 2)
    history.check_floor({}, 0)
    with pytest.raises(SharingError, match="starts at version 2"):
        history.check_floor({"start_version": 2}, 1)


def test_downloads_are_tallied_into_one_event_per_recipient_table_and_window(tmp_path: Path) -> None:
    from arco.pipeline import compact, rows
    from arco.sharing import audit
    from arco.storage.factory import open_storage

    storage = open_storage(str(tmp_path), {})
    tally = audit.DownloadTally(storage)
    acme = audit.Reader("acme", "sales", "lake", "orders", "t1")
    other = audit.Reader("globex", "sales", "lake", "orders", "t1")
    t0 = 1_700_000_000_000
    assert tally.note(acme, "a.parquet", 100, "10.0.0.1", "ua", t0) == []
    assert tally.note(acme, "a.parquet", 50, "10.0.0.1", "ua", t0 + 1) == []  # the same file again
    assert tally.note(other, "a.parquet", 7, None, None, t0 + 2) == []
    due = tally.note(acme, "b.parquet", 10, "10.0.0.1", "ua", t0 + audit.WINDOW_MS)
    assert [(e["recipient"], e["files"], e["details"]["files"], e["details"]["bytes"], e["details"]["requests"])
            for e in due] == [("acme", 2, ["a.parquet", "b.parquet"], 160, 3)]  # globex's window is still open
    tally.write(due)
    keys = [m.key for m in storage.list("_catalog/events")]
    assert len(keys) == 1 and all(compact.kind_of(k) == "audit" for k in keys)
    row = rows.sharing_read_row(audit.receipt_key(due[0]), due[0])
    assert (row["principal"], row["op"], row["name"]) == ("recipient:acme", "delta_sharing.downloadFiles", "orders")
    tally.note(acme, "c.parquet", 1, None, None, t0 + audit.WINDOW_MS + 1)
    tally.flush()  # what the server does as it exits: globex's tally and acme's new one
    assert len(list(storage.list("_catalog/events"))) == 3


def test_a_download_window_is_written_when_it_closes_without_a_later_download(tmp_path: Path) -> None:
    """One read and nothing after it: the window's timer writes it, not the next download or the server's exit
    (which a SIGKILL never reaches)."""
    from arco.sharing import audit
    from arco.storage.factory import open_storage

    storage = open_storage(str(tmp_path), {})
    timers: list[tuple[float, object]] = []
    tally = audit.DownloadTally(storage, schedule=lambda delay, run: timers.append((delay, run)))
    acme = audit.Reader("acme", "sales", "lake", "orders", "t1")
    t0 = 1_700_000_000_000
    tally.note(acme, "a.parquet", 100, None, None, t0)
    tally.note(acme, "b.parquet", 100, None, None, t0 + 5)
    assert [delay for delay, _ in timers] == [audit.WINDOW_MS / 1000]  # one timer a window
    tally.write_closed(t0 + audit.WINDOW_MS - 1)
    assert list(storage.list("_catalog/events")) == []  # still open
    tally.write_closed(t0 + audit.WINDOW_MS)
    [written] = list(storage.list("_catalog/events"))
    assert b'"files":2' in storage.get(written.key).data.replace(b" ", b"")
    tally.write_closed(t0 + 2 * audit.WINDOW_MS)  # nothing left: nothing more written
    assert len(list(storage.list("_catalog/events"))) == 1


def test_arco_storage_options_map_to_deltalakes_for_azure_gcs_and_s3() -> None:
    from arco.sharing.delta_source import delta_storage_options

    azurite = delta_storage_options({"adls.connection-string": "DefaultEndpointsProtocol=http;AccountName=dev;"
                                                               "AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/dev;"})
    assert azurite == {"azure_storage_account_name": "dev", "azure_storage_account_key": "a2V5",
                       "azure_storage_endpoint": "http://127.0.0.1:1/dev", "allow_http": "true"}
    assert delta_storage_options({"adls.account-name": "acct", "adls.sas-token": "sv=1"}) == {
        "azure_storage_account_name": "acct", "azure_storage_sas_token": "sv=1"}
    assert delta_storage_options({"gcs.service.host": "http://127.0.0.1:2", "gcs.no-auth": "true"}) == {
        "google_base_url": "http://127.0.0.1:2", "allow_http": "true", "google_skip_signature": "true"}
    assert delta_storage_options({"s3.endpoint": "http://h:1", "s3.region": "r"})["AWS_ALLOW_HTTP"] == "true"


def test_the_starlette_route_serves_the_same_files(tmp_path: Path) -> None:
    """create_app alone (no fast path in front) still answers signed file URLs through its route."""
    from arco.api.app import create_app
    from arco.settings import ServerSettings

    app = create_app(ServerSettings(warehouse=str(tmp_path / "wh")))
    data_file = tmp_path / "d.parquet"
    data_file.write_bytes(b"PAR1" + b"x" * 100)
    token = file_urls.sign(app.state.delta_sharing.signing_key.get(), f"file://{data_file}", 2**62)
    with TestClient(app) as client:
        ranged = client.get(f"/delta-sharing/files/{token}/d.parquet", headers={"Range": "bytes=0-3"})
        assert ranged.status_code == 206 and ranged.content == b"PAR1"
        assert client.head(f"/delta-sharing/files/{token}").headers["content-length"] == "104"
