"""Request parsing for the protocol (pure): names, paging, timestamps, the capabilities header, query bodies."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from arco.sharing import paging
from arco.sharing.errors import bad_request, malformed, not_found

MAX_PAGE = 1000  # the server may return fewer than maxResults; a larger ask is served in pages of this size
MAX_NAME = 255
_FORBIDDEN_CHARS = {" ", "/", "\x7f"}


def check_name(kind: str, name: str) -> str:
    """A share, schema or table name from the path: the protocol's naming rules, else 404 (no such object)."""
    if (not name or len(name) > MAX_NAME or any(c in _FORBIDDEN_CHARS or ord(c) < 0x20 for c in name)
            or (kind != "share" and "." in name)):
        raise not_found(f"{kind} {name[:MAX_NAME]!r} does not exist")
    return name


def max_results(raw: str | None) -> int:
    if raw is None or raw == "":
        return MAX_PAGE
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"maxResults must be a non-negative integer, not {raw[:40]!r}") from None
    if value < 0:
        raise bad_request("maxResults must be non-negative")
    return min(value, MAX_PAGE)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def page_token(listing: str, after: str) -> str:
    return _b64(orjson.dumps({"l": listing, "a": after}))


def read_page_token(listing: str, token: str | None) -> str | None:
    """The last name of the previous page; 400 for a token that is malformed or from another listing."""
    if not token:
        return None
    try:
        fields = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if fields["l"] == listing and isinstance(fields["a"], str):
            return fields["a"]
    except (ValueError, TypeError, KeyError, orjson.JSONDecodeError):
        pass
    raise bad_request("pageToken is not a token this listing returned")


def paginate(listing: str, items: list[dict[str, Any]], key: str, token: str | None,
             limit_raw: str | None) -> dict[str, Any]:
    """One page of ``items`` (sorted by ``key``, case-folded) after the token's name."""
    after = read_page_token(listing, token)
    limit = max_results(limit_raw)
    ordered = sorted(items, key=lambda i: _sort_key(i, key))
    if after is not None:
        ordered = [i for i in ordered if _sort_key(i, key) > after]
    page = ordered[:limit]
    out: dict[str, Any] = {"items": page}
    if len(ordered) > limit:
        last = page[-1] if page else None
        out["nextPageToken"] = page_token(listing, _sort_key(last, key) if last else (after or ""))
    return out


def _sort_key(item: dict[str, Any], key: str) -> str:
    # all-tables pages order by (table, schema): the schema joins the key so equal table names do not collide
    return f"{str(item[key]).casefold()}\x00{str(item.get('schema', '')).casefold()}"


def parse_timestamp(raw: Any, field: str) -> int:
    """The protocol's ISO 8601 UTC timestamp (``2022-01-01T00:00:00Z``) in epoch milliseconds."""
    if not isinstance(raw, str) or not raw:
        raise bad_request(f"{field} must be a timestamp such as 2022-01-01T00:00:00Z")
    text = raw.strip()
    if "t" not in text.lower():  # a date alone is no point in time (the reference refuses it too)
        raise bad_request(f"{field} must be a timestamp such as 2022-01-01T00:00:00Z, not {raw[:60]!r}")
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise bad_request(f"{field} must be a timestamp such as 2022-01-01T00:00:00Z, not {raw[:60]!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def parse_version(raw: Any, field: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, str) and raw.strip().lstrip("-").isdigit():
        # Past 20 digits no version (and past 4,300, Python's int() itself refuses): refused below, not a 500.
        raw = int(raw) if len(raw.strip()) <= 20 else -1
    if not isinstance(raw, int) or isinstance(raw, bool) or raw < 0 or raw > 2**63 - 1:
        raise bad_request(f"{field} must be a non-negative integer version")
    return raw


def parse_flag(raw: Any, field: str) -> bool:
    """An optional boolean: JSON's true / false, or the text of one in any case (Python clients send ``True``)."""
    if raw is None or isinstance(raw, bool):
        return bool(raw)
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise bad_request(f"{field} must be true or false")


def capabilities(header: str | None) -> dict[str, list[str]]:
    """``responseformat=delta,parquet;readerfeatures=deletionvectors`` as lower-cased lists per key."""
    out: dict[str, list[str]] = {}
    for part in (header or "").split(";"):
        key, eq, values = part.partition("=")
        if eq and key.strip():
            out[key.strip().lower()] = [v.strip().lower() for v in values.split(",") if v.strip()]
    return out


def response_format(caps: dict[str, list[str]], needs_delta: bool) -> str:
    """``parquet`` unless the client asked only for delta, or the table needs delta and the client accepts it."""
    asked = caps.get("responseformat") or ["parquet"]
    if "delta" in asked and (needs_delta or "parquet" not in asked):
        return "delta"
    if "parquet" not in asked:
        raise bad_request(f"unsupported responseformat {','.join(asked)!r}; parquet or delta")
    if needs_delta:
        raise bad_request("this table uses Delta reader features that the parquet response format cannot express; "
                          "ask for responseformat=delta")
    return "parquet"


QUERY_FIELDS = ("predicateHints", "jsonPredicateHints", "limitHint", "version", "timestamp", "startingVersion",
                "endingVersion", "includeHistoricalProtocol")  # what a query asks, as opposed to how it is paged
MAX_IDEMPOTENCY_KEY = 256


@dataclass(frozen=True)
class QueryBody:
    predicate_hints: list[str] | None = None
    json_predicate_hints: str | None = None
    limit_hint: int | None = None
    version: int | None = None
    timestamp_ms: int | None = None
    starting_version: int | None = None
    ending_version: int | None = None
    include_historical_protocol: bool = False
    # how the answer is paged and refreshed (arco.sharing.paging), and an asynchronous query's key
    max_files: int | None = None
    page_token: str | None = None
    include_refresh_token: bool = False
    refresh_token: str | None = None
    idempotency_key: str | None = None

    def params(self) -> dict[str, Any]:
        """The query itself (what every page of it must agree on), as plain JSON values."""
        return {"predicateHints": self.predicate_hints, "jsonPredicateHints": self.json_predicate_hints,
                "limitHint": self.limit_hint, "version": self.version, "timestamp": self.timestamp_ms,
                "startingVersion": self.starting_version, "endingVersion": self.ending_version,
                "includeHistoricalProtocol": self.include_historical_protocol}

    @property
    def time_travel(self) -> bool:
        return self.version is not None or self.timestamp_ms is not None


def query_body(raw: Any) -> QueryBody:
    """The query's fields; hints of the wrong shape are dropped (they are only hints), time travel, paging and
    refresh tokens are checked as Delta Sharing's reference server checks them."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise malformed("the query body must be a JSON object")
    hints = raw.get("predicateHints")
    hints = [h for h in hints if isinstance(h, str)] if isinstance(hints, list) else None
    json_hints = raw.get("jsonPredicateHints")
    json_hints = json_hints if isinstance(json_hints, str) else None
    limit = raw.get("limitHint")
    limit = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0 else None
    version = parse_version(raw.get("version"), "version")
    timestamp = parse_timestamp(raw["timestamp"], "timestamp") if raw.get("timestamp") is not None else None
    starting = parse_version(raw.get("startingVersion"), "startingVersion")
    ending = parse_version(raw.get("endingVersion"), "endingVersion")
    pinned = sum(x is not None for x in (version, timestamp, starting))
    if pinned > 1:
        raise bad_request("version, timestamp and startingVersion are mutually exclusive")
    if ending is not None and starting is None:
        raise bad_request("endingVersion needs startingVersion")
    if starting is not None and ending is not None and ending < starting:
        raise bad_request("endingVersion must not be before startingVersion")
    historical_protocol = parse_flag(raw.get("includeHistoricalProtocol"), "includeHistoricalProtocol")
    page_token = _optional_text(raw.get("pageToken"), "pageToken")
    include_refresh = parse_flag(raw.get("includeRefreshToken"), "includeRefreshToken")
    refresh = _optional_text(raw.get("refreshToken"), "refreshToken")
    for flag, given in (("includeRefreshToken", include_refresh), ("refreshToken", refresh is not None)):
        if given and pinned:
            raise bad_request(f"{flag} cannot be used when querying a specific version or a range of versions")
        if given and page_token is not None:
            raise bad_request(f"{flag} can only be used in the request for a query's first page")
    key = _optional_text(raw.get("idempotencyKey", raw.get("idempotency_key")), "idempotencyKey")
    if key is not None and len(key) > MAX_IDEMPOTENCY_KEY:
        raise bad_request(f"idempotencyKey must be at most {MAX_IDEMPOTENCY_KEY} characters")
    return QueryBody(hints, json_hints, limit, version, timestamp, starting, ending, historical_protocol,
                     paging.max_files(raw.get("maxFiles")), page_token, include_refresh, refresh, key)


def _optional_text(raw: Any, field: str) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise bad_request(f"{field} must be a non-empty string")
    return raw
