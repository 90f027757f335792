"""The Azure wire client's Shared Key signature against the SDK's own (``SharedKeyCredentialPolicy``, which
Microsoft maintains): the same request must carry the same Authorization header. Azurite checks the signatures of
real calls in the storage conformance suite."""

from __future__ import annotations

from urllib.parse import quote, urlsplit

import pytest
from azure.core.pipeline import PipelineContext, PipelineRequest
from azure.core.rest import HttpRequest
from azure.storage.blob._shared.authentication import SharedKeyCredentialPolicy

from arco.storage.azure_wire import AzureWire, SharedKey

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="  # Azurite's, public
DATE = "Thu, 26 Nov 2026 17:30:00 GMT"


def sdk_authorization(method: str, url: str, headers: dict[str, str]) -> str:
    request = PipelineRequest(HttpRequest(method, url, headers=headers), PipelineContext(None))
    SharedKeyCredentialPolicy(ACCOUNT, KEY).on_request(request)
    return request.http_request.headers["Authorization"]


@pytest.mark.parametrize(("container_url", "method", "blob", "headers", "body"), [
    # Azurite's path-style URL (the account in the path too) and Azure's host-style one.
    ("http://127.0.0.1:10000/devstoreaccount1/warehouse", "PUT", "arco/_catalog/markers/k",
     {"x-ms-blob-type": "BlockBlob", "Content-Type": "application/octet-stream", "If-None-Match": "*"}, b"x" * 600),
    ("https://devstoreaccount1.blob.core.windows.net/warehouse", "PUT", "t/metadata/00001.json",
     {"x-ms-blob-type": "BlockBlob", "Content-Type": "application/octet-stream", "If-Match": '"0x8DD1"'}, b"{}"),
    ("https://devstoreaccount1.blob.core.windows.net/warehouse", "PUT", "empty", {"x-ms-blob-type": "BlockBlob"},
     b""),
    ("http://127.0.0.1:10000/devstoreaccount1/warehouse", "GET", "w/a b/ø+x=1&y?.json", {}, None),
    ("http://127.0.0.1:10000/devstoreaccount1/warehouse", "GET", "pointer", {"If-None-Match": '"0x8DD2"'}, None),
    ("https://devstoreaccount1.blob.core.windows.net/warehouse", "HEAD", "k/~tilde", {}, None),
    ("https://devstoreaccount1.blob.core.windows.net/warehouse", "DELETE", "k", {"If-Match": '"0x8DD3"'}, None),
])
def test_shared_key_signs_as_the_sdk_does(container_url: str, method: str, blob: str, headers: dict[str, str],
                                          body: bytes | None) -> None:
    wire = AzureWire(container_url, SharedKey(ACCOUNT, KEY))
    parts = urlsplit(container_url)
    path = f"{parts.path}/{quote(blob, safe='~/')}"
    ours = wire.signed_headers(method, path, headers, body, date=DATE)
    theirs = {name: value for name, value in ours.items() if name != "Authorization"}
    if body is not None:
        theirs["Content-Length"] = str(len(body))
    assert ours["Authorization"] == sdk_authorization(method, f"{parts.scheme}://{parts.netloc}{path}", theirs)
    assert ours["x-ms-date"] == DATE and ours["x-ms-version"]


def test_with_a_sas_nothing_is_signed() -> None:
    """The SAS rides in the query (the conformance suite runs against Azurite with one: azure-azurite-sas)."""
    wire = AzureWire("https://acct.blob.core.windows.net/c?sv=2024-11-04&sig=abc%2F", None)
    assert "Authorization" not in wire.signed_headers("GET", "/c/k", {}, None, date=DATE)
