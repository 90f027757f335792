"""The Spark catalog properties Arco hands out for its Iceberg REST endpoint."""

from __future__ import annotations

from arco.spark.session import rest_catalog_conf


def test_a_token_comes_with_the_auth_type_and_arco_s_token_endpoint() -> None:
    """Iceberg's client infers both from ``token`` and ``uri`` and warns that it did (the endpoint's fallback is
    deprecated): naming them keeps Spark's log clean."""
    conf = rest_catalog_conf("http://127.0.0.1:8181/iceberg/", "main", "t0k")
    assert conf["token"] == "t0k" and conf["rest.auth.type"] == "oauth2"
    assert conf["oauth2-server-uri"] == "http://127.0.0.1:8181/iceberg/v1/oauth/tokens"


def test_without_a_token_no_auth_is_configured_and_headers_become_header_properties() -> None:
    conf = rest_catalog_conf("http://h/iceberg", "main", None, headers={"X-Iceberg-Access-Delegation": "vended"})
    assert conf == {"type": "rest", "uri": "http://h/iceberg", "warehouse": "main",
                    "header.X-Iceberg-Access-Delegation": "vended"}
