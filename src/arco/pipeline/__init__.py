"""Tier 2 batch jobs on Spark: compaction of receipts into Parquet history, reconciliation, garbage collection
and table maintenance. Spark spreads the work; each task reads and writes through Arco's storage backends, so a
job runs the same on a local directory and on object storage, on ``local[*]`` or on a cluster."""
