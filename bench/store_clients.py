"""Arco's object store calls next to the same calls through the vendors' SDKs they replace on the commit path:
S3 (arco.storage.s3_wire: SigV4 signing and kept-alive connections of its own) next to boto3, on SeaweedFS;
Azure Blob (arco.storage.azure_wire: Shared Key signing over the same connections) next to azure-storage-blob, on
Azurite; GCS (arco.storage.gcs_wire: the JSON API with a bearer token) next to google-cloud-storage, on
fake-gcs-server; each emulator started here.

For each call: p50 latency (ms) and CPU time of this process per call (us, ``time.process_time``, which counts the
kernel's loopback work done on this process's behalf too), interleaved (a, b, a, b, ...) so a noisy neighbour
slows both alike. The CPU figure is the whole process's, so work a library call leaves running in the background
lands in the call after it: interleaved with google-cloud-storage, Arco's GCS put shows 0.7-0.8 ms of CPU, where
alone (the same measure, no library call between) it takes 77-82 us.

The calls: a create-only PUT of 600 bytes (``If-None-Match: *``), a GET of it, a GET of a missing key, and (S3) a
pre-signed GET URL (no request: a Delta Sharing answer carries one per file).

    .venv/bin/python bench/store_clients.py [--rounds 400]
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from azure.core.exceptions import ResourceNotFoundError  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
from google.api_core.exceptions import NotFound as GcsNotFound  # noqa: E402

from arco.storage.azure import _service, create_container  # noqa: E402
from arco.storage.base import DoesNotExist, NotFound, StorageBackend  # noqa: E402
from arco.storage.factory import open_storage  # noqa: E402
from arco.storage.gcs import _client as gcs_client  # noqa: E402
from arco.storage.gcs import create_bucket as create_gcs_bucket  # noqa: E402
from arco.storage.s3 import _client, create_bucket  # noqa: E402
from support import emulators  # noqa: E402

BODY = b"x" * 600


def measure(ops: dict[str, Callable[[int], object]], rounds: int) -> dict[str, tuple[float, float]]:
    """(p50 ms, CPU us per call) of each op, the ops taking turns."""
    wall: dict[str, list[float]] = {name: [] for name in ops}
    cpu: dict[str, float] = {name: 0.0 for name in ops}
    for i in range(-20, rounds):
        for name, op in ops.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            op(i)
            if i >= 0:
                wall[name].append((time.perf_counter() - started) * 1000)
                cpu[name] += time.process_time() - cpu_started
    return {name: (statistics.median(wall[name]), cpu[name] / rounds * 1e6) for name in ops}


def s3_figures(workdir: Path, rounds: int) -> dict[str, tuple[float, float]]:
    with emulators.seaweedfs(workdir) as s3:
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        options = s3.options()
        create_bucket(bucket, options)
        arco = open_storage(f"s3://{bucket}/arco", options)
        boto = _client(options, retries=1)
        presigner = _client(options, retries=1, signature_version="s3v4")
        run = uuid.uuid4().hex[:8]
        arco.put("present", BODY)
        boto.put_object(Bucket=bucket, Key="boto/present", Body=BODY)

        def boto_missing(i: int) -> None:
            try:
                boto.get_object(Bucket=bucket, Key=f"boto/missing-{i}")["Body"].read()
                raise AssertionError("found")
            except ClientError as exc:
                assert exc.response["Error"]["Code"] == "NoSuchKey"

        return measure({
            "s3 put arco": lambda i: arco.put(f"{run}/p{i}", BODY, DoesNotExist()),
            "s3 put sdk": lambda i: boto.put_object(Bucket=bucket, Key=f"boto/{run}/p{i}", Body=BODY,
                                                    IfNoneMatch="*"),
            "s3 get arco": lambda i: arco.get("present"),
            "s3 get sdk": lambda i: boto.get_object(Bucket=bucket, Key="boto/present")["Body"].read(),
            "s3 missing arco": lambda i: missing(arco, f"missing-{i}"),
            "s3 missing sdk": boto_missing,
            "s3 presign arco": lambda i: arco.presign_get(f"s3://{bucket}/arco/p{i}.parquet", 3600),
            "s3 presign sdk": lambda i: presigner.generate_presigned_url(
                "get_object", Params={"Bucket": bucket, "Key": f"arco/p{i}.parquet"}, ExpiresIn=3600),
        }, rounds)


def azure_figures(workdir: Path, rounds: int) -> dict[str, tuple[float, float]]:
    with emulators.azurite(workdir) as azurite:
        container = f"bench-{uuid.uuid4().hex[:8]}"
        options = azurite.options()
        create_container(container, options)
        arco = open_storage(f"az://{container}/arco", options)
        sdk = _service(options, retries=0).get_container_client(container)
        run = uuid.uuid4().hex[:8]
        arco.put("present", BODY)
        sdk.upload_blob("sdk/present", BODY, overwrite=True)

        def sdk_missing(i: int) -> None:
            try:
                sdk.get_blob_client(f"sdk/missing-{i}").download_blob().readall()
                raise AssertionError("found")
            except ResourceNotFoundError:
                pass

        return measure({
            "azure put arco": lambda i: arco.put(f"{run}/p{i}", BODY, DoesNotExist()),
            "azure put sdk": lambda i: sdk.upload_blob(f"sdk/{run}/p{i}", BODY, overwrite=False),
            "azure get arco": lambda i: arco.get("present"),
            "azure get sdk": lambda i: sdk.get_blob_client("sdk/present").download_blob().readall(),
            "azure missing arco": lambda i: missing(arco, f"missing-{i}"),
            "azure missing sdk": sdk_missing,
        }, rounds)


def gcs_figures(workdir: Path, rounds: int) -> dict[str, tuple[float, float]]:
    with emulators.fake_gcs(workdir) as fake:
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        options = fake.options()
        create_gcs_bucket(bucket, options)
        arco = open_storage(f"gs://{bucket}/arco", options)
        sdk = gcs_client(options).bucket(bucket)
        run = uuid.uuid4().hex[:8]
        arco.put("present", BODY)
        sdk.blob("sdk/present").upload_from_string(BODY)

        def sdk_missing(i: int) -> None:
            try:
                sdk.blob(f"sdk/missing-{i}").download_as_bytes()
                raise AssertionError("found")
            except GcsNotFound:
                pass

        return measure({
            "gcs put arco": lambda i: arco.put(f"{run}/p{i}", BODY, DoesNotExist()),
            "gcs put sdk": lambda i: sdk.blob(f"sdk/{run}/p{i}").upload_from_string(BODY, if_generation_match=0,
                                                                                   retry=None),
            "gcs get arco": lambda i: arco.get("present"),
            "gcs get sdk": lambda i: sdk.blob("sdk/present").download_as_bytes(raw_download=True),
            "gcs missing arco": lambda i: missing(arco, f"missing-{i}"),
            "gcs missing sdk": sdk_missing,
        }, rounds)


def missing(storage: StorageBackend, key: str) -> None:
    try:
        storage.get(key)
        raise AssertionError("found")
    except NotFound:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {**s3_figures(Path(tmp), args.rounds), **azure_figures(Path(tmp), args.rounds),
                   **gcs_figures(Path(tmp), args.rounds)}
    print(f"{'':20} {'p50 ms':>8} {'cpu us':>8}")
    for name, (p50, cpu) in results.items():
        line = f"{name:20} {p50:8.3f} {cpu:8.0f}"
        if name.endswith("arco"):
            peer = results[name[:-len("arco")] + "sdk"]
            line += f"   {p50 / peer[0]:5.2f}x the SDK's latency, {cpu / peer[1]:5.2f}x its CPU"
        print(line)


if __name__ == "__main__":
    main()
