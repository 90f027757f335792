"""The ``arco`` command line."""

from __future__ import annotations

import errno
import os
import socket
import sys

import click

from arco.cli.common import WAREHOUSE_HELP, parse_options, storage_options_option, warehouse_option  # noqa: F401
from arco.settings import (
    VENDING_AZURE_SAS_SCOPES,
    VENDING_MAX_LIFETIME_S,
    VENDING_MIN_LIFETIME_S,
    ServerSettings,
)

# Kept for modules that import these names from here.
_warehouse_option = warehouse_option
_storage_options_option = storage_options_option
_parse_options = parse_options


KEEP_ALIVE_S = 75  # as nginx's default: see serve


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="arco")
def cli() -> None:
    """Arco: a serverless catalog for Iceberg and Delta tables (Iceberg REST and Unity Catalog APIs).

    All state lives in the warehouse (a directory or an object storage prefix); any number of `arco serve`
    processes can serve one warehouse. `arco COMMAND --help` explains each command.

    \b
    First steps:
      arco quickstart --warehouse ./warehouse     # sample tables, a demo user and token, query commands
      arco serve --warehouse ./warehouse          # prints the admin token once, and client recipes
    """


@cli.command()
@_warehouse_option()
@_storage_options_option()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8181, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 256),
              help="Worker processes; all serve the same warehouse safely.")
@click.option("--idempotency-in-progress-timeout", "in_progress_timeout", default=600, show_default=True,
              type=click.IntRange(1), help="Seconds after which an unfinished request's Idempotency-Key may be "
              "taken over by a retry.")
@click.option("--max-body-bytes", default=16 * 1024 * 1024, show_default=True, type=click.IntRange(1024),
              help="Largest request body accepted; larger ones get 413.")
@click.option("--access-log/--no-access-log", default=False, show_default=True,
              help="Log one JSON line per request to stderr: request id, method, route, status, duration, "
                   "principal.")
@click.option("--metrics-public", is_flag=True, default=False,
              help="Serve GET /metrics (Prometheus) without a token, for scrapers on a private network [default: "
                   "metastore admins' tokens only].")
@click.option("--vending-s3-role-arn", envvar="ARCO_VENDING_S3_ROLE_ARN", show_envvar=True, default=None,
              help="IAM role that STS AssumeRole takes on to vend S3 credentials scoped to one table.")
@click.option("--vending-sts-endpoint", envvar="ARCO_VENDING_STS_ENDPOINT", show_envvar=True, default=None,
              help="STS endpoint for vending [default: the s3.endpoint storage option, else AWS STS].")
@click.option("--vending-lifetime", "vending_lifetime_s", envvar="ARCO_VENDING_LIFETIME", show_envvar=True,
              default=3600, show_default=True, type=click.IntRange(VENDING_MIN_LIFETIME_S, VENDING_MAX_LIFETIME_S),
              help="Seconds a vended S3 or Azure credential lives (STS AssumeRole allows 900-43200).")
@click.option("--vending-azure-sas-scope", envvar="ARCO_VENDING_AZURE_SAS_SCOPE", show_envvar=True,
              default="directory", show_default=True, type=click.Choice(VENDING_AZURE_SAS_SCOPES),
              help="Azure SAS per table directory (ADLS Gen2 accounts) or per container (covers the whole "
                   "container; for flat-namespace accounts; never the warehouse's own container). "
                   "container-unsafe also signs one for the warehouse's container, which lets any grantee read "
                   "and rewrite the catalog and act as anyone: for a single-user setup or an emulator only.")
@click.option("--vending-gcs-credentials-file", envvar="ARCO_VENDING_GCS_CREDENTIALS_FILE", show_envvar=True,
              default=None, type=click.Path(dir_okay=False),
              help="Service-account key whose tokens are downscoped per table [default: Application Default "
                   "Credentials].")
@click.option("--scan-planning-async-manifests", "async_manifests", default=100, show_default=True,
              type=click.IntRange(0), help="Scans reading more manifests than this are planned asynchronously "
              "(planTableScan answers 'submitted'; clients fetch the result).")
@click.option("--scan-planning-tasks-per-chunk", "tasks_per_chunk", default=2000, show_default=True,
              type=click.IntRange(1), help="File scan tasks per plan task in a scan planning result.")
@click.option("--scan-plan-lifetime", "plan_lifetime_s", default=3600, show_default=True, type=click.IntRange(1),
              help="Seconds a scan plan's results stay fetchable.")
@click.option("--scan-plan-heartbeat-timeout", "plan_heartbeat_timeout_s", default=60.0, show_default=True,
              type=click.FloatRange(1), help="Seconds without a heartbeat after which an asynchronous plan's "
              "server is taken for dead and the plan answered 'failed' (use one value for every server).")
@click.option("--external-url", envvar="ARCO_EXTERNAL_URL", show_envvar=True, default=None,
              help="URL recipients reach this server at: Delta Sharing activation links, profile endpoints and "
                   "signed file URLs use it [default: http://<host>:<port>].")
@click.option("--sharing-url-lifetime", "sharing_url_lifetime_s", default=3600, show_default=True,
              type=click.IntRange(60, 7 * 24 * 3600), help="Seconds a Delta Sharing file URL stays valid.")
@click.option("--read-freshness-ms", "read_freshness_ms", envvar="ARCO_READ_FRESHNESS_MS", show_envvar=True,
              default=0, show_default=True, type=click.IntRange(0, 60_000),
              help="Reads (GET, HEAD) may answer from what this server checked at most this many milliseconds "
                   "before they arrived: another server's commit or catalog change shows within this window. "
                   "0 checks storage on every read. A server's own writes always show at once on it.")
@click.option("--catalog-cache-tables", "catalog_cache_tables", envvar="ARCO_CATALOG_CACHE_TABLES", show_envvar=True,
              default=200_000, show_default=True, type=click.IntRange(1),
              help="Tables of the catalog this server keeps in memory, namespace by namespace (about 1-2 KB "
                   "each); beyond it the least recently used namespaces are read from storage again when asked for.")
@click.option("--metadata-cache-mb", "metadata_cache_mb", envvar="ARCO_METADATA_CACHE_MB", show_envvar=True,
              default=192, show_default=True, type=click.IntRange(1),
              help="Memory for parsed table and view metadata and the loadTable answers built from it (the "
                   "least recently used go first); tables with long histories have large metadata.")
@click.option("--forwarded-allow-ips", "forwarded_allow_ips", envvar="ARCO_FORWARDED_ALLOW_IPS", show_envvar=True,
              default=None,
              help="Addresses of reverse proxies (comma-separated IPs or networks, or *) whose X-Forwarded-For "
                   "and X-Forwarded-Proto headers are believed: the client address recipients' IP access lists and "
                   "the audit log use [default: none; the connection's peer address is the client's].")
@click.option("--recipient-token-lifetime", "recipient_token_lifetime_s", envvar="ARCO_RECIPIENT_TOKEN_LIFETIME",
              show_envvar=True, default=None, type=click.IntRange(60),
              help="Seconds a new Delta Sharing recipient token stays valid (its profile's expirationTime) "
                   "[default: no expiry].")
def serve(warehouse: str, storage_options: tuple[str, ...], host: str, port: int, workers: int,
          in_progress_timeout: int, max_body_bytes: int, access_log: bool, metrics_public: bool,
          vending_s3_role_arn: str | None,
          vending_sts_endpoint: str | None, vending_lifetime_s: int, vending_azure_sas_scope: str,
          vending_gcs_credentials_file: str | None, async_manifests: int, tasks_per_chunk: int,
          plan_lifetime_s: int, plan_heartbeat_timeout_s: float, external_url: str | None,
          sharing_url_lifetime_s: int, read_freshness_ms: int, recipient_token_lifetime_s: int | None,
          catalog_cache_tables: int, metadata_cache_mb: int, forwarded_allow_ips: str | None) -> None:
    """Serve the Iceberg REST, Unity Catalog and Delta Sharing APIs for a warehouse.

    The first start on a warehouse prints the bootstrap admin token (once; ARCO_ADMIN_TOKEN sets your own), then
    recipes for PyIceberg, Spark, DuckDB, the Databricks SDK and curl.

    \b
    Examples:
      arco serve --warehouse ./warehouse
      arco serve --warehouse s3://bucket/prefix --storage-option s3.region=eu-west-1 --port 9000 --workers 4
    """
    import uvicorn

    from arco.api.app import ADMIN_TOKEN_ENV
    from arco.api.http_protocol import BoundedHeadProtocol
    from arco.catalog.bootstrap import initialise_warehouse
    from arco.catalog.warehouse_format import ensure_format
    from arco.cli.banner import startup_banner
    from arco.cli.open_files import raise_open_file_limit
    from arco.settings import SETTINGS_ENV
    from arco.storage.base import CasNotSupported, StorageError
    from arco.storage.factory import open_storage
    from arco.storage.probe import probe_conditional_writes

    try:
        settings = ServerSettings(
            warehouse=warehouse, storage_options=_parse_options(storage_options), host=host, port=port,
            workers=workers, idempotency_in_progress_timeout_s=in_progress_timeout,
            idempotency_key_lifetime_s=max(3600, in_progress_timeout), max_body_bytes=max_body_bytes,
            access_log=access_log, metrics_public=metrics_public, read_freshness_ms=read_freshness_ms,
            catalog_cache_tables=catalog_cache_tables, metadata_cache_mb=metadata_cache_mb,
            vending_s3_role_arn=vending_s3_role_arn or None,
            vending_sts_endpoint=vending_sts_endpoint or None, vending_lifetime_s=vending_lifetime_s,
            vending_azure_sas_scope=vending_azure_sas_scope,
            vending_gcs_credentials_file=vending_gcs_credentials_file or None,
            scan_planning_async_manifests=async_manifests, scan_planning_tasks_per_chunk=tasks_per_chunk,
            scan_plan_lifetime_s=plan_lifetime_s, scan_plan_heartbeat_timeout_s=plan_heartbeat_timeout_s,
            external_url=external_url or None, sharing_url_lifetime_s=sharing_url_lifetime_s,
            recipient_token_lifetime_s=recipient_token_lifetime_s,
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    check_port_free(host, port)  # before anything is written or printed (a generated token would be lost)
    raise_open_file_limit()
    try:
        storage = open_storage(settings.warehouse, settings.storage_options)
        ensure_format(storage)  # a warehouse in a form this version cannot read is refused before the probe writes
        probe_conditional_writes(storage)
        env_token = os.environ.get(ADMIN_TOKEN_ENV) or None
        generated = initialise_warehouse(storage, env_token=env_token).generated_admin_token
    except CasNotSupported as exc:
        raise click.ClickException(str(exc)) from exc
    except StorageError as exc:
        raise click.ClickException(f"cannot open the warehouse {settings.warehouse_display()}: {exc}") from exc
    click.echo(startup_banner(settings, generated, env_token_set=bool(env_token)), err=True)
    if settings.vending_azure_sas_scope == "container-unsafe":
        click.echo("WARNING: --vending-azure-sas-scope container-unsafe: a SAS vended for a table in the warehouse's "
                   "container reaches the catalog itself; anyone granted a table can act as anyone. For a "
                   "single-user setup or an emulator only.", err=True)
    sys.stderr.flush()
    # uvicorn's own access log stays off: Arco's (--access-log) carries request ids, route templates and principals.
    # A request's head is bounded (arco.api.http_protocol): httptools sets no limit of its own.
    # An idle keep-alive connection is closed after KEEP_ALIVE_S, longer than clients keep theirs idle (httpx 5 s,
    # aiohttp 15 s): closed as a client sends its next request on it, it is a request lost in flight (uvicorn's
    # 5 s equals httpx's, so a client held up for a moment hit that race).
    # Forwarding headers are believed only from the proxies named: uvicorn's default believes any process on this
    # host, so a caller behind a same-host TLS terminator (or the host's own users) could claim any address and
    # pass a recipient's IP access list.
    proxies = dict(proxy_headers=True, forwarded_allow_ips=forwarded_allow_ips) if forwarded_allow_ips else dict(
        proxy_headers=False)
    common = dict(host=host, port=port, log_level="warning", access_log=False, server_header=False,
                  http=BoundedHeadProtocol, timeout_keep_alive=KEEP_ALIVE_S, **proxies)
    if workers == 1:
        from arco.api.app import served_app
        from arco.api.observability import configure_logging

        configure_logging(access_log)
        uvicorn.run(served_app(settings, storage), **common)
    else:
        import tempfile

        from arco.metrics import MULTIPROCESS_ENV

        os.environ[SETTINGS_ENV] = settings.to_env()
        # Each worker process keeps its metric samples in files here; /metrics sums them (arco.metrics).
        with tempfile.TemporaryDirectory(prefix="arco-metrics-") as samples:
            os.environ[MULTIPROCESS_ENV] = samples
            uvicorn.run("arco.api.app:app_from_environment", factory=True, workers=workers, **common)


@cli.command("admin-token")
@_warehouse_option()
@_storage_options_option()
@click.option("--rotate", is_flag=True, required=True,
              help="Make a new bootstrap admin token; the old one stops working on the next request of every "
                   "running server.")
def admin_token(warehouse: str, storage_options: tuple[str, ...], rotate: bool) -> None:
    """Replace the warehouse's bootstrap admin token and print the new one (ARCO_ADMIN_TOKEN is not affected).

    \b
    Example:
      export ARCO_TOKEN=$(arco admin-token --rotate --warehouse ./warehouse)
    """
    from arco.auth.bootstrap import rotate_bootstrap_admin
    from arco.cli.common import open_warehouse

    done = open_warehouse(warehouse, storage_options, admin_token=False)
    click.echo(rotate_bootstrap_admin(done.store.storage, done.store))


@cli.command()
@_warehouse_option()
@_storage_options_option()
@click.option("--catalog", default=None, help="Only this catalog's tables (default: every catalog).")
@click.option("--table", default=None, metavar="NAMESPACE.TABLE", help="Only this table (in --catalog, else main).")
@click.option("--max-depth", default=10_000, show_default=True, type=click.IntRange(1),
              help="Versions of a table's metadata log to walk at most.")
def reconcile(warehouse: str, storage_options: tuple[str, ...], catalog: str | None, table: str | None,
              max_depth: int) -> None:
    """Backfill missing committed receipts from each table's metadata log and from the catalog log.

    Safe to run at any time, also while servers are running: receipts are written create-only.

    \b
    Example:
      arco reconcile --warehouse ./warehouse --catalog main --table sales.orders
    """
    from rich.console import Console

    from arco.cli.common import open_warehouse
    from arco.cli.reconcile import print_summary, run_reconcile

    if table is not None and catalog is None:
        catalog = "main"
    console = Console(stderr=True)
    counts = run_reconcile(open_warehouse(warehouse, storage_options).store.storage, catalog, table, max_depth,
                           console)
    print_summary(counts, Console())
    if counts.unreadable:
        console.print(f"[yellow]{counts.unreadable} metadata file(s) could not be read and were skipped.[/yellow]")


def check_port_free(host: str, port: int) -> None:
    """Fail with one clear line, before the banner, when ``host:port`` cannot be listened on."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise click.ClickException(
                    f"port {port} on {host} is already in use (another arco serve?): stop that process or "
                    f"choose another port with --port") from None
            raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def register_commands() -> click.Group:
    """Add the commands that live in their own modules (imported only when the CLI runs) to :data:`cli`."""
    from arco.cli import grants, identity, spark
    from arco.cli.catalogs import catalog
    from arco.cli.pipeline import pipeline
    from arco.cli.quickstart import quickstart

    for command in [catalog, pipeline, quickstart, *grants.COMMANDS, *identity.COMMANDS, *spark.COMMANDS]:
        cli.add_command(command)
    return cli


def main() -> None:
    register_commands()
    cli()


if __name__ == "__main__":
    main()
