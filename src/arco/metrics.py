"""Prometheus metrics of a serving process, and the few calls that record them.

Every label is bounded: routes are route templates (``/iceberg/v1/{prefix}/namespaces/{namespace}``), never raw
paths (those carry names, which are data and unbounded); statuses, methods, operations and outcomes are small
fixed sets. Principals and names go to the logs, never into labels.

With ``arco serve --workers N`` each worker is its own process: the serve command points
``PROMETHEUS_MULTIPROC_DIR`` at a fresh directory before the workers start, prometheus-client then keeps every
worker's samples in files there, and ``/metrics`` (answered by whichever worker gets the scrape) adds them up
(:func:`exposition`). Counters and histograms sum across workers, so a scrape sees the whole server.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Our own registry: the default one also carries process and GC collectors, which multiprocess mode cannot merge.
REGISTRY = CollectorRegistry(auto_describe=True)

# Request latencies span sub-millisecond cache hits to multi-second commits on slow object stores.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUEST_SECONDS = Histogram(
    "arco_http_request_duration_seconds", "HTTP requests by route template, method and status.",
    ["route", "method", "status"], buckets=LATENCY_BUCKETS, registry=REGISTRY)
COMMITS = Counter(
    "arco_iceberg_commits_total",
    "Iceberg table commits (updateTable, transactions) by outcome: committed, conflict_retried (committed after "
    "losing a compare-and-swap), refused (409: a requirement failed, or too many concurrent changes), rejected "
    "(another 4xx: a bad update, a missing table), failed (an error of the server or its storage).",
    ["outcome"], registry=REGISTRY)
CAS = Counter(
    "arco_cas_attempts_total",
    "Compare-and-swap writes by target (table_pointer, catalog_log) and outcome (won, lost); each lost one is "
    "retried or given up.", ["target", "outcome"], registry=REGISTRY)
STORAGE_SECONDS = Histogram(
    "arco_storage_operation_duration_seconds",
    "Storage calls by operation (get, head, put, put_if_absent, put_if_match, delete, delete_if_match, list) and "
    "outcome (ok, not_found, precondition_failed, error).",
    ["operation", "outcome"], buckets=LATENCY_BUCKETS, registry=REGISTRY)
METRICS_REPORTS_DROPPED = Counter(
    "arco_metrics_reports_dropped_total",
    "Iceberg metrics reports answered 204 but not stored, by reason: rate (their principal sent more than the "
    "rate allows: arco.iceberg.metrics), no_table (the table does not exist yet: a staged create's report).",
    ["reason"], registry=REGISTRY)
CACHE = Counter(
    "arco_cache_requests_total",
    "Cache lookups by cache (metadata_files, view_metadata, load_table_responses, catalog_state, "
    "vended_credentials) and result (hit, miss).", ["cache", "result"], registry=REGISTRY)


class CacheMeter:
    """Hits and misses of one cache, with the labelled children bound once (a lookup per call costs a lock)."""

    def __init__(self, cache: str) -> None:
        self.hit = CACHE.labels(cache, "hit").inc
        self.miss = CACHE.labels(cache, "miss").inc


_CAS_CHILDREN: dict[tuple[str, bool], Counter] = {}


def cas(target: str, won: bool) -> None:
    child = _CAS_CHILDREN.get((target, won))
    if child is None:
        child = _CAS_CHILDREN[(target, won)] = CAS.labels(target, "won" if won else "lost")
    child.inc()
    if not won:
        tally = _commit_tally.get()
        if tally is not None:
            tally.lost_cas += 1


@dataclass
class CommitTally:
    lost_cas: int = 0


_commit_tally: ContextVar[CommitTally | None] = ContextVar("arco_commit_tally", default=None)


@contextmanager
def counted_commit() -> Iterator[CommitTally]:
    """Count one commit's outcome. The compare-and-swaps it loses (recorded by :func:`cas`, in the same thread)
    make a success ``conflict_retried``; a 409 is ``refused``, another 4xx ``rejected``, any other error
    ``failed``."""
    tally = CommitTally()
    token = _commit_tally.set(tally)
    try:
        yield tally
    except Exception as exc:
        if not getattr(exc, "runs_again", False):  # the request is made again: its next run has the outcome
            COMMITS.labels(_outcome_of(exc)).inc()
        raise
    else:
        COMMITS.labels("conflict_retried" if tally.lost_cas else "committed").inc()
    finally:
        _commit_tally.reset(token)


def _outcome_of(exc: Exception) -> str:
    from arco.catalog.errors import CatalogError, ConflictError

    status = getattr(exc, "status", None)  # Iceberg REST errors carry the status they answer with
    if status == 409 or isinstance(exc, ConflictError):
        return "refused"
    if (isinstance(status, int) and 400 <= status < 500) or isinstance(exc, CatalogError):
        return "rejected"  # the catalog's own errors are the caller's: a missing table, a taken name
    return "failed"


def exposition() -> tuple[bytes, str]:
    """The Prometheus text exposition of this server (all of its worker processes), and its content type."""
    if os.environ.get(MULTIPROCESS_ENV):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
