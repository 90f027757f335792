"""The Spark session of a pipeline job: local by default, the cluster's when started by ``spark-submit``."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def under_spark_submit() -> bool:
    # spark-submit starts the Python driver with a gateway to its JVM already running (and the cluster's conf).
    return "PYSPARK_GATEWAY_PORT" in os.environ


def pipeline_session(job: str, master: str | None = None) -> SparkSession:
    if under_spark_submit():
        from pyspark.sql import SparkSession

        return SparkSession.builder.appName(f"arco-pipeline-{job}").getOrCreate()
    from arco.spark.session import local_spark_session

    parallelism = os.cpu_count() or 2
    return local_spark_session(f"arco-pipeline-{job}", extra_conf={
        "spark.master": master or "local[*]",
        "spark.default.parallelism": str(parallelism),
    })


@contextmanager
def spark_progress(spark: SparkSession, progress: Progress | LineProgress, description: str) -> Iterator[None]:
    """Show the running Spark stage's tasks as a progress bar while the block runs its Spark actions."""
    task = progress.add_task(description, total=None)
    tracker = spark.sparkContext.statusTracker()
    done = threading.Event()

    def poll() -> None:
        while not done.wait(0.3):
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    progress.update(task, total=info.numTasks, completed=info.numCompletedTasks)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        yield
    finally:
        done.set()
        poller.join(2)
        total = progress.tasks[task].total or 1
        progress.update(task, total=total, completed=total)


def new_progress() -> Progress | LineProgress:
    """A progress bar on a terminal; elsewhere (cron, a log file, a pipe), where a bar draws nothing until the job
    ends, a line per step."""
    if not Console().is_terminal:
        return LineProgress()
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    transient=False)


@dataclass
class LineTask:
    description: str
    total: float | None
    completed: float = 0


class LineProgress:
    """The part of rich's ``Progress`` the jobs use, printing a timestamped line when a task starts, when its
    description changes (maintain names each table it starts) and when it completes."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.tasks: list[LineTask] = []
        self._out = out or sys.stdout
        self._started = time.monotonic()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def _line(self, task: LineTask) -> None:
        count = f" [{task.completed:g}/{task.total:g}]" if task.total else ""
        print(f"{time.monotonic() - self._started:7.1f}s {task.description}{count}", file=self._out, flush=True)

    def add_task(self, description: str, total: float | None = None) -> int:
        self.tasks.append(LineTask(description, total))
        self._line(self.tasks[-1])
        return len(self.tasks) - 1

    def update(self, task_id: int, *, description: str | None = None, total: float | None = None,
               completed: float | None = None, advance: float | None = None) -> None:
        task = self.tasks[task_id]
        was_done = task.total is not None and task.completed >= task.total
        task.total = total if total is not None else task.total
        task.completed = completed if completed is not None else task.completed + (advance or 0)
        now_done = task.total is not None and task.completed >= task.total
        if (description is not None and description != task.description) or (now_done and not was_done):
            task.description = description or task.description
            self._line(task)
