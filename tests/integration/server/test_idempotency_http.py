"""Idempotency-Key over HTTP: replayed answers, the spec's errors for bad keys and bodies, nothing changed."""

from __future__ import annotations

import httpx
import pytest
from uuid6 import uuid7

from support.arco_server import ONE_COLUMN_SCHEMA as SCHEMA

pytestmark = pytest.mark.timeout(120)


def keyed(key: str | None = None) -> dict[str, str]:
    return {"Idempotency-Key": key or str(uuid7())}


def snapshot(client: httpx.Client) -> tuple:
    return (client.get("/namespaces").json(), client.get("/namespaces/db/tables").json(),
            client.get("/namespaces/db/tables/t").json()["metadata-location"])


def test_every_mutation_replays_its_first_answer(client: httpx.Client) -> None:
    requests = [
        ("POST", "/namespaces", {"namespace": ["k1"], "properties": {"a": "b"}}),
        ("POST", "/namespaces/k1/properties", {"updates": {"c": "d"}, "removals": ["a", "zz"]}),
        ("POST", "/namespaces/k1/tables", {"name": "t1", "schema": SCHEMA}),
        ("POST", "/namespaces/k1/tables/t1", {"requirements": [], "updates": [
            {"action": "set-properties", "updates": {"p": "1"}}]}),
        ("POST", "/transactions/commit", {"table-changes": [{"identifier": {"namespace": ["k1"], "name": "t1"},
                                                             "requirements": [], "updates": [
            {"action": "set-properties", "updates": {"q": "1"}}]}]}),
        ("POST", "/tables/rename", {"source": {"namespace": ["k1"], "name": "t1"},
                                    "destination": {"namespace": ["k1"], "name": "t2"}}),
        ("DELETE", "/namespaces/k1/tables/t2", None),
        ("DELETE", "/namespaces/k1", None),
    ]
    for method, path, body in requests:
        headers = keyed()
        first = client.request(method, path, json=body, headers=headers)
        assert first.status_code in (200, 204), (path, first.text)
        again = client.request(method, path, json=body, headers=headers)
        assert (again.status_code, again.content) == (first.status_code, first.content), path
    assert ["k1"] not in client.get("/namespaces").json()["namespaces"]


def test_a_replayed_conflict_keeps_its_status_and_type(client: httpx.Client) -> None:
    headers = keyed()
    body = {"namespace": ["db"]}
    first = client.post("/namespaces", json=body, headers=headers)
    assert first.status_code == 409 and first.json()["error"]["type"] == "AlreadyExistsException"
    assert client.post("/namespaces", json=body, headers=headers).json() == first.json()


def test_the_same_key_with_another_body_is_409(client: httpx.Client) -> None:
    headers = keyed()
    assert client.post("/namespaces", json={"namespace": ["k2"]}, headers=headers).status_code == 200
    second = client.post("/namespaces", json={"namespace": ["k3"]}, headers=headers)
    assert second.status_code == 409 and second.json()["error"]["type"] == "CommitFailedException"
    assert ["k3"] not in client.get("/namespaces").json()["namespaces"]


@pytest.mark.parametrize("key", ["550e8400-e29b-41d4-a716-446655440000",
                                 "{" + "0" * 8 + "-0000-7000-8000-" + "0" * 12 + "}",
                                 "019a0000000070008000000000000000", "", "x" * 10_000,
                                 "01936f8e-7c2a-7b3d-9f4e-5a6b7c8d9e0"])
def test_malformed_keys_are_400_and_change_nothing(client: httpx.Client, key: str) -> None:
    before = snapshot(client)
    for method, path, body in [("POST", "/namespaces", {"namespace": ["bad"]}),
                               ("POST", "/namespaces/db/tables/t", {"requirements": [], "updates": []}),
                               ("DELETE", "/namespaces/db/tables/t", None)]:
        response = client.request(method, path, json=body, headers={"Idempotency-Key": key})
        assert response.status_code == 400, (path, response.text)
        assert response.json()["error"]["type"] == "BadRequestException"
    assert snapshot(client) == before


@pytest.mark.parametrize("content", [b'{"namespace": ["dup"], "namespace": ["dup2"]}',
                                     b'{"namespace": ["n"], "x": NaN}',
                                     b'{"namespace": ["\xff"]}'])
def test_bodies_without_a_canonical_form_are_400(client: httpx.Client, content: bytes) -> None:
    before = snapshot(client)
    response = client.post("/namespaces", content=content, headers=keyed())
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "BadRequestException"
    assert snapshot(client) == before


def test_a_body_with_an_integer_past_a_double_s_range_is_keyed_by_its_exact_value(client: httpx.Client) -> None:
    # A snapshot id is such an integer: the request is accepted, replayed, and told apart from one a unit away.
    headers = keyed()
    first = client.post("/namespaces", content=b'{"namespace": ["big"], "n": 9007199254740993}', headers=headers)
    assert first.status_code == 200, first.text
    again = client.post("/namespaces", content=b'{"namespace": ["big"], "n": 9007199254740993}', headers=headers)
    assert again.status_code == 200 and again.json() == first.json()
    other = client.post("/namespaces", content=b'{"namespace": ["big"], "n": 9007199254740992}', headers=headers)
    assert other.status_code == 409 and "different request payload" in other.json()["error"]["message"]
