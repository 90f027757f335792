"""What S3 storage options (and the AWS SDK's environment) say about where the store is: endpoint, region,
addressing. Pure, and free of boto3, so that the parts of the server that only describe a store to clients (the
FileIO properties of a vended credential or a remote-signing config) do not load the SDK on a server whose
warehouse is a local directory."""

from __future__ import annotations

import os


def endpoint_of(options: dict[str, str]) -> str | None:
    """The S3 endpoint the options or the AWS SDK's environment name (None: AWS itself)."""
    return options.get("s3.endpoint") or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")


def path_style(options: dict[str, str]) -> bool:
    return options.get("s3.path-style-access", "true" if endpoint_of(options) else "false").lower() == "true"


def region(options: dict[str, str]) -> str:
    return options.get("s3.region") or os.environ.get("AWS_REGION") or "us-east-1"


def client_config(options: dict[str, str]) -> dict[str, str]:
    """The non-secret FileIO properties that reach the S3 these options reach (a vended credential's config, and
    with the server's own keys, its own Iceberg reads): the endpoint, region and addressing of
    :mod:`arco.storage.s3`'s own client."""
    config = {"s3.region": region(options), "client.region": region(options)}
    endpoint = endpoint_of(options)
    if endpoint:
        config["s3.endpoint"] = endpoint
    if path_style(options):
        config["s3.path-style-access"] = "true"
    return config
