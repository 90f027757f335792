"""moto's standalone server (``python -m moto.server``), with its writes made one at a time.

moto 5.2 checks a conditional write's precondition (``If-Match``, ``If-None-Match``) and then writes, in two steps,
on a threaded server: two writes expecting the same ETag can both pass the check and both land, a lost update that
S3 never allows (the storage conformance test of eight writers incrementing a counter once ended at 399 of 400).
Arco's correctness rests on conditional writes being atomic, so the tests' moto must be: here every write request
(PUT, POST, DELETE) holds one lock from its check to its write. Reads stay concurrent.

    python moto_one_write_at_a_time.py HOST PORT
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple

WRITES = frozenset({"PUT", "POST", "DELETE"})


class OneWriteAtATime:
    """A WSGI middleware: write requests run one after the other, their whole answer included."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in WRITES:
            return self.app(environ, start_response)
        with self.lock:  # the whole answer: a WSGI app may do its work while its body is produced
            answer = self.app(environ, start_response)
            try:
                return list(answer)
            finally:
                if hasattr(answer, "close"):
                    answer.close()


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))  # moto names its own endpoint by it, as moto.server does
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, OneWriteAtATime(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
