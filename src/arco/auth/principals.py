"""Who is calling: the principal a request acts as."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PrincipalKind = Literal["user", "service_principal"]


@dataclass(frozen=True, slots=True)
class Principal:
    name: str  # a user's email, a service principal's application id
    kind: PrincipalKind = "user"
    is_account_admin: bool = False
    # The workspace this request works in, and so its metastore (arco.catalog.tenancy); set per request.
    workspace_id: int = 0
    # A token made for one workspace (a PAT created in it) works in that workspace only; None: any.
    token_workspace: int | None = None
    # When the credential this request came with stops working (None: it does not expire), and whether it is an
    # OAuth access token: a token made through the tokens API never outlives it (arco.unity.tokens_api).
    credential_expires_at_ms: int | None = None
    oauth: bool = False


BOOTSTRAP_ADMIN = Principal(name="admin", kind="user", is_account_admin=True)
# Arco's own batch jobs, when they commit through the catalog (table maintenance); only known in-process.
PIPELINE = Principal(name="arco-pipeline", kind="service_principal", is_account_admin=True)


def is_pipeline(principal: Principal) -> bool:
    """Arco's own jobs (the only principal that writes the ``system`` catalog)."""
    return principal.name == PIPELINE.name and principal.kind == PIPELINE.kind and principal.is_account_admin
