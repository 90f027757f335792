"""Bearer tokens: how they are made, stored (only as hashes) and checked.

Tokens are 256-bit random strings, so a plain SHA-256 is the right hash: there is nothing to brute-force, and a
slow password hash would cost every request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

TOKEN_PREFIX = "arco_"


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_matches(token: str, token_hash: str) -> bool:
    return hmac.compare_digest(hash_token(token), token_hash)
