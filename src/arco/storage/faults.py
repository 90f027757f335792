"""A storage wrapper that fails or "crashes" at chosen operations, deterministically, for crash tests.

A rule names an operation (``get``, ``head``, ``put``, ``delete``, ``list``), a key pattern, whether it fires
``before`` the operation reaches storage or ``after`` it took effect, which matching call it fires on, and what
it does:

* ``fail`` raises :class:`InjectedFailure` (a :class:`StorageUnavailable`), as a network or disk error would. With
  ``after`` the write did happen but the caller cannot know: the case that makes retries interesting.
* ``crash`` raises :class:`SimulatedCrash`, which derives from ``BaseException`` so that no ``except Exception``
  in the code under test can swallow it: nothing after that point runs, as if the process had died.

Every call is recorded in ``calls`` so a test can also assert the sequence of storage operations.
"""

from __future__ import annotations

import fnmatch
import threading
from dataclasses import dataclass, field
from typing import Literal

from arco.storage.base import (
    DeleteResult,
    ListPage,
    MatchesVersion,
    ObjectData,
    ObjectMeta,
    Precondition,
    StorageBackend,
    StorageNotReached,
    StorageUnavailable,
    WriteResult,
)

Operation = Literal["get", "head", "put", "delete", "list"]


class InjectedFailure(StorageUnavailable):
    """A storage error raised on purpose by a :class:`FaultRule`: storage unavailable, as a real fault is."""


class InjectedUnreachable(StorageNotReached):
    """Storage that could not be reached, on purpose: the call was not sent (``action="unreachable"``)."""


class SimulatedCrash(BaseException):  # noqa: N818 - it is not an error the code under test may handle
    """The process "died" at this point; only the test harness catches it."""


@dataclass
class FaultRule:
    op: Operation
    key: str = "*"  # fnmatch pattern over the key (for ``list``, over the prefix)
    when: Literal["before", "after"] = "before"
    action: Literal["fail", "unreachable", "crash"] = "crash"  # unreachable: not sent ("before" only)
    nth: int = 1  # fire on the nth matching call (1-based) ...
    times: int = 1  # ... and on this many consecutive matching calls from there
    seen: int = field(default=0, init=False)
    fired: int = field(default=0, init=False)

    def matches(self, op: str, key: str) -> bool:
        return op == self.op and fnmatch.fnmatchcase(key, self.key)


@dataclass(frozen=True)
class Call:
    op: str
    key: str
    outcome: str  # "ok", "precondition-failed", "fault-before", "fault-after", "error"


class FaultyBackend(StorageBackend):
    """Wraps a backend; behaves exactly like it except where a rule fires."""

    def __init__(self, inner: StorageBackend, rules: list[FaultRule] | None = None) -> None:
        self.inner = inner
        self.url = inner.url
        self.capabilities = inner.capabilities
        self.rules: list[FaultRule] = list(rules or [])
        self.calls: list[Call] = []
        self._lock = threading.Lock()

    def inject(self, rule: FaultRule) -> FaultRule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def _due(self, op: str, key: str, when: str) -> FaultRule | None:
        with self._lock:
            for rule in self.rules:
                if rule.when != when or not rule.matches(op, key):
                    continue
                rule.seen += 1
                if rule.seen >= rule.nth and rule.fired < rule.times:
                    rule.fired += 1
                    return rule
        return None

    def _fire(self, rule: FaultRule, op: str, key: str) -> None:
        self.calls.append(Call(op, key, f"fault-{rule.when}"))
        message = f"injected {rule.action} {rule.when} {op} {key!r}"
        if rule.action == "crash":
            raise SimulatedCrash(message)
        if rule.action == "unreachable":
            raise InjectedUnreachable(message)
        raise InjectedFailure(message)

    def _run(self, op: Operation, key: str, fn, *args):  # type: ignore[no-untyped-def]
        rule = self._due(op, key, "before")
        if rule is not None:
            self._fire(rule, op, key)
        try:
            result = fn(*args)
        except BaseException:
            self.calls.append(Call(op, key, "error"))
            raise
        rule = self._due(op, key, "after")
        if rule is not None:
            self._fire(rule, op, key)
        ok = getattr(result, "ok", True)
        self.calls.append(Call(op, key, "ok" if ok else "precondition-failed"))
        return result

    def get(self, key: str) -> ObjectData:
        return self._run("get", key, self.inner.get, key)

    def get_if_changed(self, key: str, version: str) -> ObjectData | None:
        # Counted as a get: it is one read call, whatever storage answers (the body or "not modified").
        return self._run("get", key, self.inner.get_if_changed, key, version)

    def head(self, key: str) -> ObjectMeta | None:
        return self._run("head", key, self.inner.head, key)

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        return self._run("put", key, self.inner.put, key, data, precondition)

    def delete(self, key: str, precondition: MatchesVersion | None = None) -> DeleteResult:
        return self._run("delete", key, self.inner.delete, key, precondition)

    def list_page(self, prefix: str = "", page_size: int = 1000, page_token: str | None = None) -> ListPage:
        return self._run("list", prefix, self.inner.list_page, prefix, page_size, page_token)

    def location_of(self, key: str) -> str:
        return self.inner.location_of(key)

    def fileio_properties(self) -> dict[str, str]:
        return self.inner.fileio_properties()

    def close(self) -> None:
        self.inner.close()
