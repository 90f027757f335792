"""The server's limit on open files, raised as far as the system allows before it starts.

Every client connection and every pooled storage connection is a file descriptor. Many Linux systems start
processes with a soft limit of 1,024 (and a far higher hard limit), so a server left at the soft limit stops
accepting connections at about a thousand clients and fails storage calls with "Too many open files". Servers
such as Go's runtime and nginx's ``worker_rlimit_nofile`` raise the soft limit to the hard one; so does
``arco serve``. Workers started by ``--workers`` inherit the raised limit.
"""

from __future__ import annotations

import logging

_log = logging.getLogger("arco.cli")

ENOUGH_OPEN_FILES = 1 << 20  # far past any connection count one server process serves; the ceiling asked for


def raise_open_file_limit() -> int | None:
    """Raise this process's soft limit on open files to its hard limit (at most :data:`ENOUGH_OPEN_FILES`); the
    soft limit now in force, or None where the platform has no such limit."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = ENOUGH_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, ENOUGH_OPEN_FILES)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError) as exc:  # e.g. a hard limit past the kernel's nr_open
            _log.warning("open-file limit left at %d (could not raise it to %d: %s)", soft, wanted, exc)
            return soft
        return wanted
    return soft
