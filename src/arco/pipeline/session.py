"""The Spark session of a pipeline job: local by default, the cluster's when started by ``spark-submit``."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

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
def spark_progress(spark: SparkSession, progress: Progress, description: str) -> Iterator[None]:
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


def new_progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    transient=False)
