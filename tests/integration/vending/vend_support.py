"""Helpers for the vending tests: table prefixes, and storage clients built only from vended properties."""

from __future__ import annotations

import boto3
from botocore.config import Config

from arco.vending import VendedCredential

TABLE_A = "wh/main/db/t-a/"
# A sibling whose name starts with table A's: a prefix check without the trailing slash would let A reach it.
TABLE_AB = "wh/main/db/t-ab/"


def s3_client(config: dict[str, str]) -> object:
    """A boto3 S3 client built from FileIO properties alone, as an engine would build it."""
    path_style = config.get("s3.path-style-access", "true" if config.get("s3.endpoint") else "false") == "true"
    return boto3.client(
        "s3", endpoint_url=config.get("s3.endpoint"), region_name=config["s3.region"],
        aws_access_key_id=config["s3.access-key-id"], aws_secret_access_key=config["s3.secret-access-key"],
        aws_session_token=config.get("s3.session-token"),
        config=Config(s3={"addressing_style": "path" if path_style else "auto"},
                      retries={"total_max_attempts": 1}))


def vended_s3(credential: VendedCredential | None) -> object:
    assert credential is not None
    return s3_client(credential.config)


def container_client(account_url: str, account: str, container: str, credential: VendedCredential | None) -> object:
    """A container client authenticated by the vended SAS token alone (as Iceberg Java picks it, by host)."""
    from azure.storage.blob import ContainerClient

    assert credential is not None
    token = credential.config[f"adls.sas-token.{account}.blob.core.windows.net"]
    return ContainerClient(account_url, container, credential=token)
