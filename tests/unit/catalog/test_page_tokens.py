"""Page tokens (pure): the server's own are marked and opaque; a Unity Catalog list also takes the reference
server's kind, the last name listed."""

from __future__ import annotations

import pytest

from arco.catalog.errors import InvalidRequestError
from arco.catalog.paging import page

NAMES = ["a", "b", "c", "d"]


def test_pages_follow_the_tokens_they_hand_out() -> None:
    first, token = page(NAMES, str, None, 2)
    assert first == ["a", "b"] and token is not None and token.startswith("~")
    assert page(NAMES, str, token, 2) == (["c", "d"], None)


def test_a_name_is_a_token_only_where_the_api_says_how_to_read_one() -> None:
    assert page(NAMES, str, "b", 10, plain=str.casefold) == (["c", "d"], None)
    assert page(NAMES, str, "B", 10, plain=str.casefold) == (["c", "d"], None)
    with pytest.raises(InvalidRequestError):
        page(NAMES, str, "b", 10)  # Iceberg's tokens are opaque: only the server's own


@pytest.mark.parametrize("token", ["~", "~!!!", "~////", "~a+b/", "~YQ==", "~YQ=", "~\u00e9"])
def test_a_marked_token_this_server_did_not_issue_is_refused(token: str) -> None:
    with pytest.raises(InvalidRequestError, match="not a token this server issued"):
        page(NAMES, str, token, 2)
    with pytest.raises(InvalidRequestError):
        page(NAMES, str, token, 2, plain=str.casefold)
