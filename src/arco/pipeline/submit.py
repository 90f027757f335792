"""Entry point for ``spark-submit``: ``spark-submit [options] <this file> <job> --warehouse <url> [...]``.

``python -c "import arco.pipeline.submit as s; print(s.__file__)"`` prints its path. The executors need Arco
installed too (the same virtualenv on every node, or ``--archives`` with a packed one).
"""

from __future__ import annotations

from arco.cli.pipeline import pipeline

if __name__ == "__main__":
    pipeline(prog_name="arco pipeline")
