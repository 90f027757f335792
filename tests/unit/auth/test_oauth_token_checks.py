"""The pure check of the OAuth endpoint's signed tokens: only the one spelling ``sign`` makes verifies."""

from __future__ import annotations

from arco.auth import oauth_tokens
from arco.auth.oauth_tokens import Claims

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
