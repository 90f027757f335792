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


BOOTSTRAP_ADMIN = Principal(name="admin", kind="user", is_account_admin=True)
# Arco's own batch jobs, when they commit through the catalog (table maintenance); only known in-process.
PIPELINE = Principal(name="arco-pipeline", kind="service_principal", is_account_admin=True)
