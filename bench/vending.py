"""What credential vending costs, measured against its peers in the same run (rounds interleaved).

1. loadTable over HTTP on an S3 warehouse in SeaweedFS: without ``X-Iceberg-Access-Delegation``, and with
   ``vended-credentials`` (after the first call the credential comes from the per principal, table and privilege
   cache, so the ratio shows what the cache leaves of STS's cost); and one uncached mint (STS AssumeRole).
2. PyIceberg ``append`` of 10 rows: with vended credentials only, beside a client holding static keys.
3. Remote signing: one S3 GET a client asks the signing endpoint to sign, signed in process by Arco
   (:func:`arco.vending.signing.sign`) and by botocore's S3 signer (``S3SigV4Auth``), which produce the same
   headers (tests/unit/vending/test_signing.py); a client with remote signing asks once per S3 request it makes.

Usage: .venv/bin/python bench/vending.py [--rounds 200]
       .venv/bin/python bench/vending.py --only-signing
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
    parser.add_argument("--only-signing", action="store_true", help="only the in-process signing figures")
    args = parser.parse_args()
    if args.only_signing:
        signing_figures(args.rounds * 50)
        return
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
    signing_figures(args.rounds * 50)


def signing_figures(rounds: int) -> None:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from arco.vending.signing import S3Credentials, parse_sign_request, sign

    request = parse_sign_request({
        "method": "GET", "region": "us-east-1", "uri": "http://127.0.0.1:8333/bucket/wh/db/t/data/00000-0-a.parquet",
        "headers": {"User-Agent": ["pyiceberg"], "Range": ["bytes=4-1027"],
                    "x-amz-content-sha256": ["UNSIGNED-PAYLOAD"]}})
    ours = S3Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    theirs = Credentials(ours.access_key_id, ours.secret_access_key)

    def botocore() -> None:
        aws = AWSRequest(method=request.method, url=request.uri)
        for name, values in request.headers.items():
            for value in values:
                aws.headers.add_header(name, value)
        S3SigV4Auth(theirs, "s3", request.region).add_auth(aws)

    samples: dict[str, list[float]] = {"sign, Arco": [], "sign, botocore": []}
    for _ in range(rounds // 100):  # batches of 100: one call is shorter than the clock's resolution is useful
        samples["sign, Arco"].append(timed(lambda: [sign(request, ours) for _ in range(100)]) * 10)
        samples["sign, botocore"].append(timed(lambda: [botocore() for _ in range(100)]) * 10)
    print("\nremote signing, one request signed in process (microseconds)")
    for label, values in samples.items():
        print(f"  {label:<18} p50 {statistics.median(values):7.1f} us   "
              f"x{statistics.median(values) / statistics.median(samples['sign, botocore']):.2f} of botocore")


if __name__ == "__main__":
    main()
