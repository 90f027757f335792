"""Engines with no S3 keys of their own, on an S3 warehouse in SeaweedFS: PyIceberg and DuckDB through vended
credentials, PyIceberg through remote signing, boto3 holding what a grantee was vended, Polars through UC
temporary credentials. SeaweedFS enforces the session policies, so every 403 here is the storage's own."""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import httpx
import pyarrow as pa
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from support import emulators
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli

pytestmark = [pytest.mark.timeout(300), pytest.mark.emulator]
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
COLUMNS = [{"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "type_json": "{}"}]
KEYLESS_ENV = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": ""}


@pytest.fixture(scope="module")
def world(seaweedfs_sts_server: emulators.StsS3Server, tmp_path_factory: pytest.TempPathFactory,
          ) -> Iterator[dict]:
    s3 = seaweedfs_sts_server
    bucket = f"arco-e2e-{uuid.uuid4().hex[:10]}"
    admin_s3 = s3_client(s3.endpoint_url, s3.access_key_id, s3.secret_access_key)
    admin_s3.create_bucket(Bucket=bucket)
    workdir = tmp_path_factory.mktemp("vended")
    warehouse = f"s3://{bucket}/wh"
    options = [f"--storage-option={k}={v}" for k, v in s3.options().items()]
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN,
                     extra_args=(*options, "--vending-s3-role-arn", s3.role_arn)) as server:
        cli = ("--storage-option", f"s3.endpoint={s3.endpoint_url}", "--storage-option",
               f"s3.access-key-id={s3.access_key_id}", "--storage-option",
               f"s3.secret-access-key={s3.secret_access_key}")
        run_cli(warehouse, "user", "create", "ann@x.com", *cli)
        token = run_cli(warehouse, "token", "create", "ann@x.com", *cli).strip()
        yield {"server": server, "s3": s3, "bucket": bucket, "admin_s3": admin_s3, "ann": token}


def s3_client(endpoint: str, key: str, secret: str, session: str | None = None):  # type: ignore[no-untyped-def]
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=key,
                        aws_secret_access_key=secret, aws_session_token=session,
                        config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}))


def catalog(server: RunningServer, token: str = ARCO_TOKEN, delegation: str = "vended-credentials") -> RestCatalog:
    """A PyIceberg catalog with no storage keys: only what the server hands out."""
    return RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=token,
                       **{"header.X-Iceberg-Access-Delegation": delegation})


def load(world: dict, table: str, token: str = ARCO_TOKEN, delegation: str = "vended-credentials") -> httpx.Response:
    namespace, name = table.split(".")
    return httpx.get(f"{world['server'].iceberg_uri}/v1/main/namespaces/{namespace}/tables/{name}", timeout=30,
                     headers={"Authorization": f"Bearer {token}", "X-Iceberg-Access-Delegation": delegation})


def vended_client(world: dict, response: httpx.Response):  # type: ignore[no-untyped-def]
    assert response.status_code == 200, response.text
    (credential,) = response.json()["storage-credentials"]
    config = credential["config"]
    return s3_client(config["s3.endpoint"], config["s3.access-key-id"], config["s3.secret-access-key"],
                     config["s3.session-token"]), credential["prefix"]


def grant_ann(world: dict, target: tuple[str, str, str]) -> None:
    """Give ann@x.com ``target``'s privilege (kind, full name, privilege) and USE on its catalog and schema."""
    kind, full_name, privilege = target
    catalog_name, schema_name = full_name.split(".")[:2]
    for securable, name, privileges in (("catalog", catalog_name, ["USE_CATALOG"]),
                                        ("schema", f"{catalog_name}.{schema_name}", ["USE_SCHEMA"]),
                                        (kind, full_name, [privilege])):
        granted = httpx.patch(f"{world['server'].base_url}/api/2.1/unity-catalog/permissions/{securable}/{name}",
                              headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30,
                              json={"changes": [{"principal": "ann@x.com", "add": privileges}]})
        assert granted.status_code == 200, granted.text


def key_of(world: dict, url: str) -> str:
    return url.removeprefix(f"s3://{world['bucket']}/")


@pytest.fixture(autouse=True)
def no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYLESS_ENV:
        monkeypatch.delenv(name, raising=False)


def test_pyiceberg_creates_appends_reads_and_deletes_with_vended_credentials_only(world: dict) -> None:
    cat = catalog(world["server"])
    cat.create_namespace("v")
    table = cat.create_table("v.events", SCHEMA)
    table.append(ROWS)
    assert sorted(cat.load_table("v.events").scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    table = cat.load_table("v.events")
    table.delete("id = 2")
    assert sorted(cat.load_table("v.events").scan().to_arrow().column("id").to_pylist()) == [1, 3]
    answer = load(world, "v.events").json()
    assert answer["config"]["client.refresh-credentials-endpoint"].endswith("/namespaces/v/tables/events/credentials")
    assert answer["storage-credentials"][0]["prefix"].startswith(answer["metadata"]["location"])
    assert int(answer["config"]["s3.session-token-expires-at-ms"]) > 0


def test_a_select_only_grantee_is_vended_read_only_credentials(world: dict) -> None:
    cat = catalog(world["server"])
    cat.create_namespace("ro")
    cat.create_table("ro.t", SCHEMA).append(ROWS)
    grant_ann(world, ("table", "main.ro.t", "SELECT"))
    rows = catalog(world["server"], world["ann"]).load_table("ro.t").scan().to_arrow()
    assert rows.num_rows == 3  # reading works with the read-only credential
    client, prefix = vended_client(world, load(world, "ro.t", world["ann"]))
    key = key_of(world, prefix) + "data/intruder.parquet"
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=world["bucket"], Key=key, Body=b"x")
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    with pytest.raises(ClientError):
        client.delete_object(Bucket=world["bucket"], Key=key_of(world, prefix) + "metadata/x")
    refused_creds = httpx.get(f"{world['server'].iceberg_uri}/v1/main/namespaces/v/tables/events/credentials",
                              headers={"Authorization": f"Bearer {world['ann']}"}, timeout=30)
    assert refused_creds.status_code == 403  # no SELECT on v.events: no credential for it


def test_a_credential_for_one_table_cannot_reach_another(world: dict) -> None:
    cat = catalog(world["server"])
    cat.create_namespace("iso")
    for name in ("a", "ab"):
        cat.create_table(f"iso.{name}", SCHEMA).append(ROWS)
    client, prefix_a = vended_client(world, load(world, "iso.a"))
    other = cat.load_table("iso.ab").metadata.location
    listed = client.list_objects_v2(Bucket=world["bucket"], Prefix=key_of(world, prefix_a))
    assert listed["KeyCount"] > 0
    for call in (lambda: client.list_objects_v2(Bucket=world["bucket"], Prefix=key_of(world, other) + "/"),
                 lambda: client.put_object(Bucket=world["bucket"], Key=key_of(world, other) + "/data/x", Body=b"x"),
                 lambda: client.get_object(Bucket=world["bucket"], Key="wh/_catalog/log/00000000000000000001.json"),
                 lambda: client.list_objects_v2(Bucket=world["bucket"], Prefix="")):
        with pytest.raises(ClientError) as refused:
            call()
        assert refused.value.response["Error"]["Code"] == "AccessDenied"


def test_a_table_in_an_external_location_is_vended_that_location_s_role(world: dict) -> None:
    """An external location reached through a read-only role makes read-only credentials for the tables in it,
    through Iceberg REST as through Unity Catalog, whatever the caller's grant."""
    root = f"s3://{world['bucket']}/wh/read-only-lake"
    for path, body in (("/storage-credentials", {"name": "read-only-role",
                                                 "aws_iam_role": {"role_arn": world["s3"].read_only_role_arn}}),
                       ("/external-locations", {"name": "read-only-lake", "url": root,
                                                "credential_name": "read-only-role"})):
        assert uc_post(world, path, body).status_code == 200, path
    cat = catalog(world["server"])
    cat.create_namespace("rol")
    created = httpx.post(f"{world['server'].iceberg_uri}/v1/main/namespaces/rol/tables", timeout=30,
                         json={"name": "t", "location": f"{root}/t", "schema": {"type": "struct", "fields": [
                             {"id": 1, "name": "id", "type": "long", "required": False}]}},
                         headers={"Authorization": f"Bearer {ARCO_TOKEN}",
                                  "X-Iceberg-Access-Delegation": "vended-credentials"})
    refreshed = httpx.get(f"{world['server'].iceberg_uri}/v1/main/namespaces/rol/tables/t/credentials", timeout=30,
                          headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    assert refreshed.status_code == 200, refreshed.text
    for answer in (created, load(world, "rol.t"), refreshed):
        client, prefix = vended_client(world, answer)  # the owner's read-write credential, of a read-only role
        metadata = cat.load_table("rol.t").metadata_location
        assert client.get_object(Bucket=world["bucket"], Key=key_of(world, metadata))["Body"].read()
        assert_denied(functools.partial(client.put_object, Bucket=world["bucket"], Body=b"x",
                                        Key=f"{key_of(world, prefix)}/data/x"))
    # Remote signing would use the server's own keys, which the role does not bind: not offered, and refused.
    signed = load(world, "rol.t", delegation="remote-signing")
    assert signed.status_code == 200 and "s3.remote-signing-enabled" not in signed.json()["config"]
    refused = httpx.post(f"{world['server'].iceberg_uri}/v1/main/namespaces/rol/tables/t/sign", timeout=30,
                         headers={"Authorization": f"Bearer {ARCO_TOKEN}"},
                         json={"method": "PUT", "region": "us-east-1", "headers": {},
                               "uri": f"{world['s3'].endpoint_url}/{world['bucket']}/{key_of(world, root)}/t/data/x"})
    assert refused.status_code == 403 and "vended credentials" in refused.json()["error"]["message"]


def test_a_table_in_an_external_location_made_read_only_is_vended_read_only_credentials(world: dict) -> None:
    """An external location's read-only flag holds for the tables already in it: the owner's vended credential
    then reads and does not write, and remote signing signs no write."""
    root = f"s3://{world['bucket']}/wh/flipped-lake"
    for path, body in (("/storage-credentials", {"name": "flipped-role",
                                                 "aws_iam_role": {"role_arn": world["s3"].role_arn}}),
                       ("/external-locations", {"name": "flipped-lake", "url": root,
                                                "credential_name": "flipped-role"})):
        assert uc_post(world, path, body).status_code == 200, path
    cat = catalog(world["server"])
    cat.create_namespace("flip")
    cat.create_table("flip.t", SCHEMA, location=f"{root}/t").append(ROWS)
    flipped = httpx.patch(f"{world['server'].base_url}/api/2.1/unity-catalog/external-locations/flipped-lake",
                          json={"read_only": True}, headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30)
    assert flipped.status_code == 200 and flipped.json()["read_only"] is True, flipped.text
    client, prefix = vended_client(world, load(world, "flip.t"))
    assert client.list_objects_v2(Bucket=world["bucket"], Prefix=key_of(world, prefix))["KeyCount"] > 0
    assert_denied(functools.partial(client.put_object, Bucket=world["bucket"], Body=b"x",
                                    Key=f"{key_of(world, prefix)}/data/x"))
    assert catalog(world["server"]).load_table("flip.t").scan().to_arrow().num_rows == 3


def test_pyiceberg_reads_and_writes_through_remote_signing(world: dict) -> None:
    cat = catalog(world["server"], delegation="remote-signing")
    cat.create_namespace("sig")
    table = cat.create_table("sig.t", SCHEMA)
    table.append(ROWS)
    assert cat.load_table("sig.t").scan().to_arrow().num_rows == 3
    config = load(world, "sig.t", delegation="remote-signing").json()["config"]
    assert config["s3.remote-signing-enabled"] == "true"
    assert config["s3.signer.endpoint"].endswith("/namespaces/sig/tables/t/sign")
    other = cat.create_table("sig.other", SCHEMA).metadata.location
    refused = httpx.post(f"{world['server'].iceberg_uri}/{config['s3.signer.endpoint']}", timeout=30,
                         headers={"Authorization": f"Bearer {ARCO_TOKEN}"},
                         json={"method": "GET", "region": "us-east-1", "headers": {},
                               "uri": f"{world['s3'].endpoint_url}/{world['bucket']}/{key_of(world, other)}/x"})
    assert refused.status_code == 403 and "outside the table's prefix" in refused.json()["error"]["message"]


def test_bad_delegation_requests(world: dict) -> None:
    catalog(world["server"]).create_namespace("bad")
    catalog(world["server"]).create_table("bad.t", SCHEMA)
    unsupported = load(world, "bad.t", delegation="vended-credentials,carrier-pigeon")
    assert unsupported.status_code == 400
    assert "vended-credentials, remote-signing" in unsupported.json()["error"]["message"]
    sign_url = f"{world['server'].iceberg_uri}/v1/main/namespaces/bad/tables/t/sign"
    for body in ({"method": "GET"},
                 *({"method": "GET", "region": "us-east-1", "headers": {}, "uri": uri}
                   for uri in ("http://[::1/b/k", "http://127.0.0.1:99999/b/k", "http://127.0.0.1:port/b/k"))):
        malformed = httpx.post(sign_url, timeout=30, headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, json=body)
        assert malformed.status_code == 400, (body, malformed.text)
        assert malformed.json()["error"]["type"] == "BadRequestException"


@pytest.mark.duckdb
def test_duckdb_reads_and_writes_with_vended_credentials(world: dict) -> None:
    from support.duckdb_ext import connect_with

    catalog(world["server"]).create_namespace("duck")
    con = connect_with(("httpfs", "avro", "iceberg"))
    con.execute(f"CREATE SECRET arco (TYPE iceberg, TOKEN '{ARCO_TOKEN}')")
    con.execute(f"ATTACH 'main' AS arco (TYPE iceberg, SECRET arco, ENDPOINT '{world['server'].iceberg_uri}', "
                "ACCESS_DELEGATION_MODE 'vended_credentials')")
    con.execute("CREATE TABLE arco.duck.t (id BIGINT)")
    con.execute("INSERT INTO arco.duck.t VALUES (1), (2)")
    assert con.execute("SELECT sum(id) FROM arco.duck.t").fetchone() == (3,)
    assert catalog(world["server"]).load_table("duck.t").scan().to_arrow().num_rows == 2


def test_polars_reads_an_external_delta_table_through_uc_temporary_credentials(world: dict, tmp_path: Path) -> None:
    import polars as pl
    from deltalake import write_deltalake

    s3, bucket = world["s3"], world["bucket"]
    root = f"s3://{bucket}/external"
    write_deltalake(f"{root}/people", pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]}),
                    storage_options={"AWS_ENDPOINT_URL": s3.endpoint_url, "AWS_ACCESS_KEY_ID": s3.access_key_id,
                                     "AWS_SECRET_ACCESS_KEY": s3.secret_access_key, "AWS_REGION": "us-east-1",
                                     "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"})
    uc = f"{world['server'].base_url}/api/2.1/unity-catalog"
    headers = {"Authorization": f"Bearer {ARCO_TOKEN}"}
    for path, body in (("/storage-credentials", {"name": "lake", "aws_iam_role": {"role_arn": s3.role_arn}}),
                       ("/external-locations", {"name": "external", "url": root, "credential_name": "lake"}),
                       ("/schemas", {"name": "pl", "catalog_name": "main"}),
                       ("/tables", {"name": "people", "catalog_name": "main", "schema_name": "pl",
                                    "table_type": "EXTERNAL", "data_source_format": "DELTA",
                                    "storage_location": f"{root}/people", "columns": [
                                        {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0,
                                         "type_json": '{"name":"id","type":"long","nullable":true,"metadata":{}}'},
                                        {"name": "name", "type_name": "STRING", "type_text": "string",
                                         "position": 1, "type_json": '{"name":"name","type":"string",'
                                                                     '"nullable":true,"metadata":{}}'}]})):
        made = httpx.post(uc + path, headers=headers, json=body, timeout=30)
        assert made.status_code == 200, made.text
    frame = pl.Catalog(world["server"].base_url, bearer_token=ARCO_TOKEN, require_https=False).scan_table(
        "main", "pl", "people", storage_options={"aws_endpoint_url": s3.endpoint_url, "aws_allow_http": "true",
                                                 "aws_region": "us-east-1"}).collect()
    assert sorted(frame["id"].to_list()) == [1, 2]


def test_scan_planning_vends_credentials_that_read_the_planned_files(world: dict) -> None:
    """planTableScan on an S3 warehouse: the server reads the manifests with its own keys, and a caller asking for
    vended credentials gets, with the tasks, a credential scoped to the table that reads the planned files."""
    cat = catalog(world["server"])
    cat.create_namespace("planned")
    table = cat.create_table("planned.t", SCHEMA)
    table.append(ROWS)
    url = f"{world['server'].iceberg_uri}/v1/main/namespaces/planned/tables/t/plan"
    headers = {"Authorization": f"Bearer {ARCO_TOKEN}"}
    answer = httpx.post(url, json={}, timeout=30, headers={**headers,
                                                           "X-Iceberg-Access-Delegation": "vended-credentials"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "completed" and len(body["file-scan-tasks"]) == 1
    (credential,) = body["storage-credentials"]
    assert credential["prefix"].startswith(table.metadata.location)
    data_file = body["file-scan-tasks"][0]["data-file"]
    config = credential["config"]
    client = s3_client(config["s3.endpoint"], config["s3.access-key-id"], config["s3.secret-access-key"],
                       config["s3.session-token"])
    fetched = client.get_object(Bucket=world["bucket"], Key=key_of(world, data_file["file-path"]))
    assert fetched["ContentLength"] == data_file["file-size-in-bytes"]
    plain = httpx.post(url, json={}, timeout=30, headers=headers).json()
    assert "storage-credentials" not in plain and plain["file-scan-tasks"] == body["file-scan-tasks"]


def uc_post(world: dict, path: str, body: dict, token: str = ARCO_TOKEN) -> httpx.Response:
    return httpx.post(f"{world['server'].base_url}/api/2.1/unity-catalog{path}", json=body, timeout=30,
                      headers={"Authorization": f"Bearer {token}"})


def uc_temporary_credentials(world: dict, token: str, call: str, request: object) -> dict:
    """``TemporaryCredentialsApi.<call>(request)`` through the unitycatalog-client, as a dict."""
    import asyncio

    from unitycatalog.client import ApiClient, Configuration, TemporaryCredentialsApi

    async def run() -> dict:
        config = Configuration(host=f"{world['server'].base_url}/api/2.1/unity-catalog")
        async with ApiClient(config, header_name="Authorization", header_value=f"Bearer {token}") as client:
            return (await getattr(TemporaryCredentialsApi(client), call)(request)).to_dict()

    return asyncio.run(run())


def uc_s3_client(world: dict, credentials: dict):  # type: ignore[no-untyped-def]
    aws = credentials["aws_temp_credentials"]
    return s3_client(world["s3"].endpoint_url, aws["access_key_id"], aws["secret_access_key"], aws["session_token"])


def assert_denied(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ClientError) as refused:
        call()
    assert refused.value.response["Error"]["Code"] == "AccessDenied"


def test_volume_credentials_follow_the_volumes_grants(world: dict) -> None:
    from unitycatalog.client.exceptions import ForbiddenException, NotFoundException
    from unitycatalog.client.models import GenerateTemporaryVolumeCredential, VolumeOperation

    assert uc_post(world, "/schemas", {"name": "vols", "catalog_name": "main"}).status_code == 200
    made = {name: uc_post(world, "/volumes", {"name": name, "catalog_name": "main", "schema_name": "vols",
                                              "volume_type": "MANAGED"}).json() for name in ("files", "files2")}
    volume, sibling = made["files"], made["files2"]
    key, sibling_key = key_of(world, volume["storage_location"]), key_of(world, sibling["storage_location"])
    world["admin_s3"].put_object(Bucket=world["bucket"], Key=f"{key}/in.csv", Body=b"a,b")
    world["admin_s3"].put_object(Bucket=world["bucket"], Key=f"{sibling_key}/in.csv", Body=b"c,d")

    def ask(operation: VolumeOperation, token: str = ARCO_TOKEN, volume_id: str = volume["volume_id"]) -> dict:
        return uc_temporary_credentials(world, token, "generate_temporary_volume_credentials",
                                        GenerateTemporaryVolumeCredential(volume_id=volume_id, operation=operation))

    writer = uc_s3_client(world, written := ask(VolumeOperation.WRITE_VOLUME))  # the owner may write
    assert written["url"].rstrip("/") == volume["storage_location"]  # scoped to the volume's prefix
    writer.put_object(Bucket=world["bucket"], Key=f"{key}/out.csv", Body=b"e,f")
    assert writer.get_object(Bucket=world["bucket"], Key=f"{key}/in.csv")["Body"].read() == b"a,b"
    assert_denied(lambda: writer.put_object(Bucket=world["bucket"], Key=f"{sibling_key}/x.csv", Body=b"x"))
    assert_denied(lambda: writer.get_object(Bucket=world["bucket"], Key=f"{sibling_key}/in.csv"))

    with pytest.raises(ForbiddenException):  # no grant yet
        ask(VolumeOperation.READ_VOLUME, world["ann"])
    grant_ann(world, ("volume", "main.vols.files", "READ_VOLUME"))
    reader = uc_s3_client(world, ask(VolumeOperation.READ_VOLUME, world["ann"]))
    assert reader.get_object(Bucket=world["bucket"], Key=f"{key}/out.csv")["Body"].read() == b"e,f"
    assert_denied(lambda: reader.put_object(Bucket=world["bucket"], Key=f"{key}/intruder.csv", Body=b"x"))
    with pytest.raises(ForbiddenException):  # READ_VOLUME does not give WRITE_VOLUME
        ask(VolumeOperation.WRITE_VOLUME, world["ann"])
    with pytest.raises(ForbiddenException):  # nor another volume
        ask(VolumeOperation.READ_VOLUME, world["ann"], sibling["volume_id"])
    with pytest.raises(NotFoundException):
        ask(VolumeOperation.READ_VOLUME, volume_id=str(uuid.uuid4()))
    unknown = uc_post(world, "/temporary-volume-credentials", {"volume_id": volume["volume_id"],
                                                               "operation": "DELETE_VOLUME"})
    assert unknown.status_code == 400 and "operation must be one of" in unknown.json()["message"]


def test_model_version_credentials_write_only_while_the_version_is_pending(world: dict) -> None:
    from unitycatalog.client.exceptions import BadRequestException, ForbiddenException
    from unitycatalog.client.models import GenerateTemporaryModelVersionCredential, ModelVersionOperation

    assert uc_post(world, "/schemas", {"name": "ml", "catalog_name": "main"}).status_code == 200
    assert uc_post(world, "/models", {"name": "churn", "catalog_name": "main", "schema_name": "ml"}).status_code == 200
    version = uc_post(world, "/models/versions", {"model_name": "churn", "catalog_name": "main", "schema_name": "ml",
                                                  "source": "runs:/1/model"}).json()
    key = key_of(world, version["storage_location"])

    def ask(operation: ModelVersionOperation, token: str = ARCO_TOKEN) -> dict:
        return uc_temporary_credentials(world, token, "generate_temporary_model_version_credentials",
                                        GenerateTemporaryModelVersionCredential(
                                            catalog_name="main", schema_name="ml", model_name="churn",
                                            version=version["version"], operation=operation))

    writer = uc_s3_client(world, ask(ModelVersionOperation.READ_WRITE_MODEL_VERSION))
    writer.put_object(Bucket=world["bucket"], Key=f"{key}/model.pkl", Body=b"weights")
    assert_denied(lambda: writer.put_object(Bucket=world["bucket"], Key=f"{key_of(world, version['storage_location'])}"
                                            f"-other/model.pkl", Body=b"x"))
    with pytest.raises(ForbiddenException):  # ann has no EXECUTE on the model
        ask(ModelVersionOperation.READ_MODEL_VERSION, world["ann"])
    finalized = httpx.patch(f"{world['server'].base_url}/api/2.1/unity-catalog/models/main.ml.churn/versions/1/"
                            "finalize", json={"full_name": "main.ml.churn", "version": 1}, timeout=30,
                            headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    assert finalized.status_code == 200, finalized.text
    with pytest.raises(BadRequestException):  # a READY version's files are not rewritten
        ask(ModelVersionOperation.READ_WRITE_MODEL_VERSION)
    reader = uc_s3_client(world, ask(ModelVersionOperation.READ_MODEL_VERSION))
    assert reader.get_object(Bucket=world["bucket"], Key=f"{key}/model.pkl")["Body"].read() == b"weights"
    assert_denied(lambda: reader.put_object(Bucket=world["bucket"], Key=f"{key}/model.pkl", Body=b"x"))


def test_a_staging_table_gets_credentials_as_a_table_does_for_its_creator_alone(world: dict) -> None:
    """The spec: credentials for a staging table "as though the staging table were a regular table", so a CTAS
    writes its data before the managed table exists; they reach the staging location only. Once promoted, the
    table's grants decide."""
    from unitycatalog.client.exceptions import ForbiddenException
    from unitycatalog.client.models import GenerateTemporaryTableCredential, TableOperation

    assert uc_post(world, "/schemas", {"name": "ctas", "catalog_name": "main"}).status_code == 200
    staged = uc_post(world, "/staging-tables", {"name": "t", "catalog_name": "main", "schema_name": "ctas"}).json()
    key = key_of(world, staged["staging_location"])

    def ask(token: str = ARCO_TOKEN, table_id: str = staged["id"],
            operation: TableOperation = TableOperation.READ_WRITE) -> dict:
        return uc_temporary_credentials(world, token, "generate_temporary_table_credentials",
                                        GenerateTemporaryTableCredential(table_id=table_id, operation=operation))

    writer = uc_s3_client(world, ask())
    writer.put_object(Bucket=world["bucket"], Key=f"{key}/_delta_log/{0:020d}.json", Body=b"{}")
    assert_denied(lambda: writer.put_object(Bucket=world["bucket"], Key=f"{key}-other/x", Body=b"x"))
    with pytest.raises(ForbiddenException):
        ask(world["ann"])

    # Promotion makes the staging table the table: from then on its grants decide, for its creator too.
    grant_ann(world, ("schema", "main.ctas", "CREATE_TABLE"))
    promoted_by_other = uc_post(world, "/tables", {
        "name": "t", "catalog_name": "main", "schema_name": "ctas", "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": staged["staging_location"], "columns": COLUMNS},
        token=world["ann"])
    assert promoted_by_other.status_code == 403  # admin's staging table is admin's to promote
    mine = uc_post(world, "/staging-tables", {"name": "mine", "catalog_name": "main", "schema_name": "ctas"},
                   token=world["ann"]).json()
    writer = uc_s3_client(world, ask(world["ann"], mine["id"]))
    writer.put_object(Bucket=world["bucket"], Key=f"{key_of(world, mine['staging_location'])}/_delta_log/"
                                                  f"{0:020d}.json", Body=b"{}")
    promoted = uc_post(world, "/tables", {
        "name": "mine", "catalog_name": "main", "schema_name": "ctas", "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": mine["staging_location"], "columns": COLUMNS},
        token=world["ann"])
    assert promoted.status_code == 200 and promoted.json()["table_id"] == mine["id"], promoted.text
    given_away = httpx.patch(f"{world['server'].base_url}/api/2.1/unity-catalog/tables/main.ctas.mine",
                             json={"owner": "admin"}, headers={"Authorization": f"Bearer {world['ann']}"}, timeout=30)
    assert given_away.status_code == 200, given_away.text
    with pytest.raises(ForbiddenException):  # no longer the owner, and no grant: no credential at all
        ask(world["ann"], mine["id"])
    grant_ann(world, ("table", "main.ctas.mine", "SELECT"))
    with pytest.raises(ForbiddenException):  # SELECT reads, and no more
        ask(world["ann"], mine["id"])
    reader = uc_s3_client(world, ask(world["ann"], mine["id"], TableOperation.READ))
    assert_denied(lambda: reader.put_object(Bucket=world["bucket"], Key=f"{key_of(world, mine['staging_location'])}"
                                            "/_delta_log/evil.json", Body=b"x"))


def test_path_credentials_never_reach_managed_storage_inside_an_external_location(world: dict) -> None:
    """READ_FILES and WRITE_FILES on an external location reach its files, not those of a catalog whose managed
    storage lies inside it: its tables' grants decide who reads and writes those."""
    root = f"s3://{world['bucket']}/wh/ext-managed"  # managed storage lies inside the warehouse
    for path, body in (("/storage-credentials", {"name": "managed-lake",
                                                 "aws_iam_role": {"role_arn": world["s3"].role_arn}}),
                       ("/external-locations", {"name": "with-managed", "url": root,
                                                "credential_name": "managed-lake"}),
                       ("/catalogs", {"name": "hr", "storage_root": f"{root}/hrroot"}),
                       ("/schemas", {"name": "pay", "catalog_name": "hr"}),
                       ("/tables", {"name": "salaries", "catalog_name": "hr", "schema_name": "pay",
                                    "table_type": "MANAGED", "data_source_format": "DELTA", "columns": COLUMNS})):
        assert uc_post(world, path, body).status_code == 200, path
    table = httpx.get(f"{world['server'].base_url}/api/2.1/unity-catalog/tables/hr.pay.salaries", timeout=30,
                      headers={"Authorization": f"Bearer {ARCO_TOKEN}"}).json()
    granted = httpx.patch(f"{world['server'].base_url}/api/2.1/unity-catalog/permissions/external_location/"
                          "with-managed", headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30,
                          json={"changes": [{"principal": "ann@x.com", "add": ["READ_FILES", "WRITE_FILES"]}]})
    assert granted.status_code == 200, granted.text
    for url in (table["storage_location"], f"{root}/hrroot", root):
        for operation in ("PATH_READ", "PATH_READ_WRITE"):
            refused = uc_post(world, "/temporary-path-credentials", {"url": url, "operation": operation},
                              token=world["ann"])
            assert refused.status_code == 403 and "managed storage of catalog hr" in refused.json()["message"], url
    landing = uc_post(world, "/temporary-path-credentials", {"url": f"{root}/landing", "operation": "PATH_READ_WRITE"},
                      token=world["ann"])
    assert landing.status_code == 200, landing.text
    files = uc_s3_client(world, landing.json())
    files.put_object(Bucket=world["bucket"], Key=f"{key_of(world, root)}/landing/in.csv", Body=b"a")
    assert_denied(lambda: files.put_object(Bucket=world["bucket"], Body=b"x",
                                           Key=f"{key_of(world, table['storage_location'])}/_delta_log/evil.json"))


def test_a_delta_sharing_recipient_gets_read_only_credentials_for_the_shared_table_only(world: dict) -> None:
    from deltalake import write_deltalake

    s3 = world["s3"]
    keys = {"AWS_ENDPOINT_URL": s3.endpoint_url, "AWS_ACCESS_KEY_ID": s3.access_key_id,
            "AWS_SECRET_ACCESS_KEY": s3.secret_access_key, "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
            "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    assert uc_post(world, "/schemas", {"name": "shared", "catalog_name": "main"}).status_code == 200
    locations = {}
    for name in ("orders", "orders_private"):
        staged = uc_post(world, "/staging-tables", {"name": name, "catalog_name": "main", "schema_name": "shared"})
        locations[name] = staged.json()["staging_location"]
        write_deltalake(locations[name], ROWS, storage_options=keys)
        made = uc_post(world, "/tables", {
            "name": name, "catalog_name": "main", "schema_name": "shared", "table_type": "MANAGED",
            "data_source_format": "DELTA", "storage_location": locations[name], "columns": [
                {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "type_json": "{}"}]})
        assert made.status_code == 200, made.text
    assert uc_post(world, "/shares", {"name": "files"}).status_code == 200
    base = f"{world['server'].base_url}/api/2.1/unity-catalog"
    admin = {"Authorization": f"Bearer {ARCO_TOKEN}"}
    shared = {"name": "main.shared.orders", "data_object_type": "TABLE", "history_data_sharing_status": "ENABLED"}
    latest_only = {"name": "main.shared.orders_private", "data_object_type": "TABLE"}  # without its history
    assert httpx.patch(f"{base}/shares/files", headers=admin, timeout=30, json={"updates": [
        {"action": "ADD", "data_object": shared}, {"action": "ADD", "data_object": latest_only}]}).status_code == 200
    recipient = uc_post(world, "/recipients", {"name": "lakehouse", "authentication_type": "TOKEN"}).json()
    assert httpx.patch(f"{base}/shares/files/permissions", headers=admin, timeout=30, json={
        "changes": [{"principal": "lakehouse", "add": ["SELECT"]}]}).status_code == 200
    profile = httpx.get(recipient["tokens"][-1]["activation_url"], timeout=30).json()
    endpoint = profile["endpoint"].rstrip("/")
    as_recipient = {"Authorization": f"Bearer {profile['bearerToken']}"}
    # The listing says the table's directory may be read directly, and where it is; the client asks for that.
    listed = httpx.get(f"{endpoint}/shares/files/all-tables", headers=as_recipient, timeout=30).json()["items"]
    assert [(i["name"], i["accessModes"], i.get("location")) for i in listed] == [
        ("orders", ["url", "dir"], locations["orders"]), ("orders_private", ["url"], None)]
    table = f"{endpoint}/shares/files/schemas/shared/tables"
    for capabilities in ("responseformat=parquet", "responseformat=delta"):  # beside deltaMetadata in the latter
        metadata = httpx.get(f"{table}/orders/metadata", timeout=30,
                             headers={**as_recipient, "delta-sharing-capabilities": capabilities})
        line = [json.loads(raw) for raw in metadata.content.splitlines()][1]["metaData"]
        assert (line["accessModes"], line["location"]) == (["url", "dir"], locations["orders"]), capabilities
    latest = [json.loads(raw) for raw in httpx.get(f"{table}/orders_private/metadata", headers=as_recipient,
                                                    timeout=30).content.splitlines()][1]["metaData"]
    assert latest["accessModes"] == ["url"] and "location" not in latest
    answer = httpx.post(f"{table}/orders/temporary-table-credentials", headers=as_recipient,
                        json={"location": listed[0]["location"]}, timeout=30)
    assert answer.status_code == 200, answer.text
    credentials = answer.json()["credentials"]
    assert credentials["location"].rstrip("/") == locations["orders"] and credentials["expirationTime"] > 0
    aws = credentials["awsTempCredentials"]
    client = s3_client(s3.endpoint_url, aws["accessKeyId"], aws["secretAccessKey"], aws["sessionToken"])
    key = key_of(world, locations["orders"])
    log = client.get_object(Bucket=world["bucket"], Key=f"{key}/_delta_log/{0:020d}.json")["Body"].read()
    assert b"commitInfo" in log or b"protocol" in log  # the recipient's engine reads the log itself
    assert_denied(lambda: client.put_object(Bucket=world["bucket"], Key=f"{key}/_delta_log/{1:020d}.json",
                                            Body=b"{}"))
    private = key_of(world, locations["orders_private"])
    assert_denied(lambda: client.get_object(Bucket=world["bucket"], Key=f"{private}/_delta_log/{0:020d}.json"))
    assert_denied(lambda: client.list_objects_v2(Bucket=world["bucket"], Prefix=f"{private}/"))
