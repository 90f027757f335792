"""What credential vending costs, measured against its peers in the same run (rounds interleaved).

1. loadTable over HTTP on an S3 warehouse in SeaweedFS: without ``X-Iceberg-Access-Delegation``, and with
   ``vended-credentials`` (after the first call the credential comes from the per principal, table and privilege
   cache, so the ratio shows what the cache leaves of STS's cost); and one uncached mint (STS AssumeRole).
2. PyIceberg ``append`` of 10 rows: with vended credentials only, beside a client holding static keys.

Usage: .venv/bin/python bench/vending.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import boto3
import httpx
import pyarrow as pa
from botocore.config import Config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support import emulators  # noqa: E402
from support.arco_server import arco_server  # noqa: E402

TOKEN = "bench-token"


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def report(name: str, samples: dict[str, list[float]], base: str) -> None:
    print(f"\n{name}")
    for label, values in samples.items():
        ratio = statistics.median(values) / statistics.median(samples[base])
        print(f"  {label:<34} p50 {statistics.median(values):7.2f} ms   p99 {p(values, 99):7.2f} ms   "
              f"x{ratio:.2f} of {base}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    with tempfile.TemporaryDirectory(prefix="arco-bench-vending-") as tmp, \
            emulators.seaweedfs_sts(Path(tmp)) as s3:
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        boto3.client("s3", endpoint_url=s3.endpoint_url, region_name="us-east-1", aws_access_key_id=s3.access_key_id,
                     aws_secret_access_key=s3.secret_access_key,
                     config=Config(s3={"addressing_style": "path"})).create_bucket(Bucket=bucket)
        options = [f"--storage-option={k}={v}" for k, v in s3.options().items()]
        with arco_server(f"s3://{bucket}/wh", Path(tmp), admin_token=TOKEN,
                         extra_args=(*options, "--vending-s3-role-arn", s3.role_arn)) as server:
            schema = Schema(NestedField(1, "id", LongType(), required=False))
            vended = RestCatalog("v", uri=server.iceberg_uri, warehouse="main", token=TOKEN)
            static = RestCatalog("s", uri=server.iceberg_uri, warehouse="main", token=TOKEN,
                                 **{"header.X-Iceberg-Access-Delegation": "", **s3.options()})
            vended.create_namespace("b")
            vended.create_table("b.t", schema).append(pa.table({"id": pa.array([1], pa.int64())}))
            url = f"{server.iceberg_uri}/v1/main/namespaces/b/tables/t"
            client = httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
            plain = {}
            with_creds = {"X-Iceberg-Access-Delegation": "vended-credentials"}
            loads: dict[str, list[float]] = {"loadTable, no delegation": [], "loadTable, vended (cached)": []}
            for _ in range(args.rounds):
                loads["loadTable, no delegation"].append(timed(lambda: client.get(url, headers=plain)))
                loads["loadTable, vended (cached)"].append(timed(lambda: client.get(url, headers=with_creds)))
            report("loadTable over HTTP (SeaweedFS warehouse)", loads, "loadTable, no delegation")

            from arco.settings import ServerSettings
            from arco.vending.model import Access
            from arco.vending.vendor import CredentialVendor

            vendor = CredentialVendor(ServerSettings(vending_s3_role_arn=s3.role_arn), s3.options())
            vendor.vend(f"s3://{bucket}/wh/main/b/warm", Access.READ, "bench")  # the STS client is built once
            mint = [timed(lambda i=i: vendor.vend(f"s3://{bucket}/wh/main/b/x{i}", Access.READ, "bench"))
                    for i in range(min(args.rounds, 50))]  # a new prefix each time: never cached
            report("one STS AssumeRole (uncached mint), beside a cached vended loadTable",
                   {"mint": mint, "loadTable, vended (cached)": loads["loadTable, vended (cached)"]},
                   "loadTable, vended (cached)")

            rows = pa.table({"id": pa.array(range(10), pa.int64())})
            tables = {"append, vended credentials": vended.load_table("b.t"),
                      "append, static keys": static.load_table("b.t")}
            appends: dict[str, list[float]] = {label: [] for label in tables}
            for _ in range(max(10, args.rounds // 10)):
                for label in appends:
                    table = (vended if "vended" in label else static).load_table("b.t")
                    appends[label].append(timed(lambda table=table: table.append(rows)))
            report("PyIceberg append of 10 rows (SeaweedFS)", appends, "append, static keys")


if __name__ == "__main__":
    main()
