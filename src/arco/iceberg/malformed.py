"""What PyIceberg's models raise when a client's JSON does not describe one, and how that is said to the client.

Pydantic reports a wrong shape as its ``ValidationError``, but PyIceberg's own validators also raise past it:
their ``ValidationError`` (not pydantic's: ``"decimal(a,b)"``), ``KeyError`` (a list type without its element),
``AttributeError`` (a null where a validator expects an object), ``TypeError`` and ``ValueError`` (a transform
such as ``bucket[x]``). Each is the client's mistake, answered 400, so every parse of client JSON into a PyIceberg
model catches :data:`MALFORMED`, not a subset of it.
"""

from __future__ import annotations

from pydantic import ValidationError
from pyiceberg.exceptions import ValidationError as IcebergValidationError

# PyIceberg's field names where its KeyError names them, and the JSON names a client wrote (or left out).
_JSON_NAMES = {"element_type": "element", "key_type": "key", "value_type": "value"}

MALFORMED: tuple[type[Exception], ...] = (ValidationError, IcebergValidationError, ValueError, TypeError, KeyError,
                                          IndexError, AttributeError)


def describe(error: Exception, limit: int = 5) -> str:
    """Where and what, in a line: pydantic's first few errors by location, a missing key by name, else the text."""
    if isinstance(error, ValidationError):
        parts = []
        for item in error.errors()[:limit]:
            where = ".".join(str(p) for p in item.get("loc", ()))
            message = item.get("msg", "invalid")
            parts.append(f"{where}: {message}" if where else message)
        return "; ".join(parts) or "invalid"
    if isinstance(error, KeyError):
        name = str(error.args[0]) if error.args else ""
        return f"missing field '{_JSON_NAMES.get(name, name)}'" if name else "a field is missing"
    return str(error) or type(error).__name__
