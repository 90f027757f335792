"""The ``arco`` command line."""

from __future__ import annotations

import os
import sys

import click

from arco.settings import (
    DEFAULT_WAREHOUSE,
    VENDING_AZURE_SAS_SCOPES,
    VENDING_MAX_LIFETIME_S,
    VENDING_MIN_LIFETIME_S,
    ServerSettings,
)

WAREHOUSE_HELP = (
    "Where the catalog lives: a directory (created if missing), or s3://bucket/prefix, gs://bucket/prefix, "
    "az://container/prefix. Defaults to $ARCO_WAREHOUSE, else ./warehouse."
)


def _warehouse_option():  # type: ignore[no-untyped-def]
    return click.option(
        "--warehouse",
        default=lambda: os.environ.get("ARCO_WAREHOUSE", DEFAULT_WAREHOUSE),
        show_default="./warehouse",
        help=WAREHOUSE_HELP,
    )


def _storage_options_option():  # type: ignore[no-untyped-def]
    return click.option(
        "--storage-option",
        "storage_options",
        multiple=True,
        metavar="KEY=VALUE",
        help="A storage setting such as s3.endpoint=http://127.0.0.1:8333 (repeatable).",
    )


def _parse_options(pairs: tuple[str, ...]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--storage-option")
        options[key] = value
    return options


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="arco")
def cli() -> None:
    """Arco: a serverless catalog for Iceberg and Delta tables."""


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
@click.option("--access-log/--no-access-log", default=False, show_default=True)
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
                   "container; for flat-namespace accounts).")
@click.option("--vending-gcs-credentials-file", envvar="ARCO_VENDING_GCS_CREDENTIALS_FILE", show_envvar=True,
              default=None, type=click.Path(dir_okay=False),
              help="Service-account key whose tokens are downscoped per table [default: Application Default "
                   "Credentials].")
def serve(warehouse: str, storage_options: tuple[str, ...], host: str, port: int, workers: int,
          in_progress_timeout: int, max_body_bytes: int, access_log: bool, vending_s3_role_arn: str | None,
          vending_sts_endpoint: str | None, vending_lifetime_s: int, vending_azure_sas_scope: str,
          vending_gcs_credentials_file: str | None) -> None:
    """Serve the Iceberg REST (and other) APIs for a warehouse."""
    import uvicorn

    from arco.api.app import ADMIN_TOKEN_ENV
    from arco.auth.bootstrap import ensure_bootstrap_admin
    from arco.cli.banner import startup_banner
    from arco.settings import SETTINGS_ENV
    from arco.storage.base import CasNotSupported, StorageError
    from arco.storage.factory import open_storage
    from arco.storage.probe import probe_conditional_writes

    settings = ServerSettings(
        warehouse=warehouse, storage_options=_parse_options(storage_options), host=host, port=port,
        workers=workers, idempotency_in_progress_timeout_s=in_progress_timeout,
        idempotency_key_lifetime_s=max(3600, in_progress_timeout), max_body_bytes=max_body_bytes,
        access_log=access_log, vending_s3_role_arn=vending_s3_role_arn or None,
        vending_sts_endpoint=vending_sts_endpoint or None, vending_lifetime_s=vending_lifetime_s,
        vending_azure_sas_scope=vending_azure_sas_scope,
        vending_gcs_credentials_file=vending_gcs_credentials_file or None,
    )
    try:
        storage = open_storage(settings.warehouse, settings.storage_options)
        probe_conditional_writes(storage)
        env_token = os.environ.get(ADMIN_TOKEN_ENV) or None
        generated = ensure_bootstrap_admin(storage, env_token)
    except CasNotSupported as exc:
        raise click.ClickException(str(exc)) from exc
    except StorageError as exc:
        raise click.ClickException(f"cannot open the warehouse {settings.warehouse_display()}: {exc}") from exc
    click.echo(startup_banner(settings, generated, env_token_set=bool(env_token)), err=True)
    sys.stderr.flush()
    common = dict(host=host, port=port, log_level="warning", access_log=access_log, server_header=False)
    if workers == 1:
        from arco.api.app import asgi_app

        uvicorn.run(asgi_app(settings, storage), **common)
    else:
        os.environ[SETTINGS_ENV] = settings.to_env()
        uvicorn.run("arco.api.app:app_from_environment", factory=True, workers=workers, **common)


@cli.command("admin-token")
@_warehouse_option()
@_storage_options_option()
@click.option("--rotate", is_flag=True, required=True, help="Make a new bootstrap admin token; the old one stops working.")
def admin_token(warehouse: str, storage_options: tuple[str, ...], rotate: bool) -> None:
    """Replace the warehouse's stored bootstrap admin token and print the new one."""
    from arco.auth.bootstrap import rotate_bootstrap_admin
    from arco.storage.factory import open_storage

    storage = open_storage(warehouse, _parse_options(storage_options))
    click.echo(rotate_bootstrap_admin(storage))


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
    """
    from rich.console import Console

    from arco.cli.reconcile import print_summary, run_reconcile
    from arco.storage.factory import open_storage

    if table is not None and catalog is None:
        catalog = "main"
    console = Console(stderr=True)
    counts = run_reconcile(open_storage(warehouse, _parse_options(storage_options)), catalog, table, max_depth,
                           console)
    print_summary(counts, Console())
    if counts.unreadable:
        console.print(f"[yellow]{counts.unreadable} metadata file(s) could not be read and were skipped.[/yellow]")


@cli.group()
def catalog() -> None:
    """Create and list the catalogs of a warehouse (a new warehouse has one, named main)."""


@catalog.command("create")
@_warehouse_option()
@_storage_options_option()
@click.argument("name")
@click.option("--comment", default=None, help="A description shown in listings.")
def catalog_create(warehouse: str, storage_options: tuple[str, ...], name: str, comment: str | None) -> None:
    """Create catalog NAME; Iceberg clients then use warehouse=NAME. Servers see it at once."""
    from arco.cli.catalogs import create
    from arco.storage.factory import open_storage

    click.echo(create(open_storage(warehouse, _parse_options(storage_options)), name, comment))


@catalog.command("list")
@_warehouse_option()
@_storage_options_option()
def catalog_list(warehouse: str, storage_options: tuple[str, ...]) -> None:
    """List the catalogs: name, storage root, comment (tab-separated)."""
    from arco.cli.catalogs import listing
    from arco.storage.factory import open_storage

    for line in listing(open_storage(warehouse, _parse_options(storage_options))):
        click.echo(line)


@cli.command("spark-jars")
def spark_jars_command() -> None:
    """Print the comma-separated local jar paths a Spark session needs (spark.jars) to talk to Arco."""
    from arco.spark.jars import spark_jars

    click.echo(",".join(str(p) for p in spark_jars()))


def main() -> None:
    from arco.cli.identity import COMMANDS
    from arco.cli.pipeline import pipeline

    for command in [pipeline, *COMMANDS]:
        cli.add_command(command)
    cli()


if __name__ == "__main__":
    main()
