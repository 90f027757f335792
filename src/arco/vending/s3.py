"""S3: STS AssumeRole with an inline session policy for the table's prefix.

The server calls STS with its own keys (the warehouse's ``s3.access-key-id``/``s3.secret-access-key``, else the
AWS SDK's usual chain). The STS endpoint is ``vending_sts_endpoint``, else the S3 endpoint when one is set
(S3-compatible servers such as SeaweedFS serve STS on their S3 port), else AWS STS for the region.
"""

from __future__ import annotations

from typing import Any

import boto3
import orjson
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from arco.settings import ServerSettings
from arco.storage.s3_options import client_config, endpoint_of
from arco.vending.locations import StorageLocation
from arco.vending.model import Access, VendedCredential, VendingFailed, VendingUnavailable
from arco.vending.s3_policy import session_name, session_policy

ROLE_HINT = "set --vending-s3-role-arn (or ARCO_VENDING_S3_ROLE_ARN)"


class S3Minter:
    def __init__(self, settings: ServerSettings, storage_options: dict[str, str]) -> None:
        self._role_arn = settings.vending_s3_role_arn
        self._lifetime_s = settings.vending_lifetime_s
        self._options = storage_options
        self._client_config = client_config(storage_options)
        self._sts: Any = None
        self._sts_endpoint = settings.vending_sts_endpoint or endpoint_of(storage_options)

    def _client(self) -> Any:
        if self._sts is None:
            self._sts = boto3.session.Session().client(
                "sts", endpoint_url=self._sts_endpoint, region_name=self._client_config["s3.region"],
                aws_access_key_id=self._options.get("s3.access-key-id"),
                aws_secret_access_key=self._options.get("s3.secret-access-key"),
                aws_session_token=self._options.get("s3.session-token"),
                config=Config(retries={"total_max_attempts": 3, "mode": "standard"}, connect_timeout=5,
                              read_timeout=15),
            )
        return self._sts

    def resolve_role(self, role_arn: str | None) -> str:
        role = role_arn or self._role_arn
        if not role:
            raise VendingUnavailable(f"credential vending for S3 needs an IAM role to assume: {ROLE_HINT}")
        return role

    def configured(self, location: StorageLocation, role_arn: str | None) -> bool:
        return bool(role_arn or self._role_arn)

    def mint(self, location: StorageLocation, access: Access, principal: str, role_arn: str | None) -> VendedCredential:
        role = self.resolve_role(role_arn)
        try:
            answer = self._client().assume_role(
                RoleArn=role, RoleSessionName=session_name(principal), DurationSeconds=self._lifetime_s,
                Policy=orjson.dumps(session_policy(location, access)).decode())
        except NoCredentialsError as exc:
            raise VendingUnavailable("credential vending for S3 calls STS with the server's own keys, and there "
                                     "are none: set s3.access-key-id and s3.secret-access-key (--storage-option) "
                                     "or the AWS SDK's environment") from exc
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise VendingFailed(f"STS AssumeRole of {role} failed: "
                                f"{error.get('Code')}: {error.get('Message')}") from exc
        except BotoCoreError as exc:
            raise VendingFailed(f"STS AssumeRole of {role} failed: {exc}") from exc
        creds = answer["Credentials"]
        expires_at_ms = int(creds["Expiration"].timestamp() * 1000)
        config = {
            **self._client_config,
            "s3.access-key-id": creds["AccessKeyId"],
            "s3.secret-access-key": creds["SecretAccessKey"],
            "s3.session-token": creds["SessionToken"],
            "s3.session-token-expires-at-ms": str(expires_at_ms),
        }
        unity = {"aws_temp_credentials": {"access_key_id": creds["AccessKeyId"],
                                          "secret_access_key": creds["SecretAccessKey"],
                                          "session_token": creds["SessionToken"]}}
        return VendedCredential(location.url, config, expires_at_ms, unity)
