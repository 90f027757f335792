"""The pure check of the OAuth endpoint's signed tokens: only the one spelling ``sign`` makes verifies."""

from __future__ import annotations

import base64
import hashlib
import hmac

import orjson

from arco.auth import oauth_tokens
from arco.auth.oauth_tokens import Claims
from arco.auth.sealed import seal

KEY = b"k" * 32
NOW = 1_800_000_000_000


def test_a_signed_token_verifies_until_it_expires() -> None:
    claims = Claims("etl-bot", "key-1", NOW, NOW + 3_600_000)
    token = oauth_tokens.sign(claims, KEY)
    assert oauth_tokens.check(token, KEY, NOW + 1) == claims
    assert oauth_tokens.check(token, KEY, NOW + 3_600_000) is None
    assert oauth_tokens.check(token, b"o" * 32, NOW + 1) is None


def test_a_signature_in_other_characters_is_no_match_not_an_error() -> None:
    token = oauth_tokens.sign(Claims("etl-bot", "key-1", NOW, NOW + 3_600_000), KEY)
    payload, signature = token.split(".")
    for forged in (f"{payload}.\u00e9", f"{payload}.{signature[:-1]}\u00e9", f"{payload}.{signature}\u0000"):
        assert oauth_tokens.check(forged, KEY, NOW + 1) is None  # hmac.compare_digest raises on non-ASCII text


def test_the_token_format_is_the_documented_one() -> None:
    """Tokens already in clients' hands keep verifying across upgrades: base64url JSON claims, then the HMAC-SHA256
    of that text under the signing key, with no purpose mixed in."""
    payload = base64.urlsafe_b64encode(orjson.dumps({"sub": "etl-bot", "kid": "key-1", "iat": NOW,
                                                     "exp": NOW + 60_000})).rstrip(b"=")
    mac = base64.urlsafe_b64encode(hmac.new(KEY, payload, hashlib.sha256).digest()).rstrip(b"=")
    token = f"{oauth_tokens.PREFIX}{payload.decode()}.{mac.decode()}"
    assert oauth_tokens.check(token, KEY, NOW + 1) == Claims("etl-bot", "key-1", NOW, NOW + 60_000)
    assert oauth_tokens.sign(Claims("etl-bot", "key-1", NOW, NOW + 60_000), KEY) == token


def test_a_token_sealed_for_another_purpose_is_no_oauth_token() -> None:
    fields = {"sub": "etl-bot", "kid": "key-1", "iat": NOW, "exp": NOW + 60_000}
    assert oauth_tokens.check(oauth_tokens.PREFIX + seal(KEY, fields, b"page"), KEY, NOW + 1) is None
    assert oauth_tokens.check(oauth_tokens.PREFIX + seal(KEY, fields), KEY, NOW + 1) is not None
