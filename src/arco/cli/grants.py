"""``arco grant|revoke|grants show``: Unity Catalog grants from the command line.

The same Tier 1 operation (``update_grants``) and the same checks as the UC permissions API
(:class:`arco.unity.permissions.PermissionsService`), made as the bootstrap admin in the primary metastore. The
words read as SQL's ``GRANT ... ON ... TO``:

    arco grant USE CATALOG on catalog main to ann@example.com
    arco grant SELECT, MODIFY on table main.sales.orders to analysts
    arco grant CREATE_CATALOG on metastore to ann@example.com
    arco revoke SELECT on table main.sales.orders from analysts
"""

from __future__ import annotations

import click

from arco.api.errors import ApiError
from arco.auth.decisions import canonical
from arco.auth.principals import BOOTSTRAP_ADMIN
from arco.catalog.errors import CatalogError
from arco.cli.common import open_warehouse, warehouse_options

SECURABLES = "metastore, catalog, schema, table, external_location, storage_credential (or credential)"
_SHAPE = "PRIVILEGE[, PRIVILEGE...] on <securable type> <name> {word} <principal>"


def _parse(words: tuple[str, ...], preposition: str) -> tuple[list[str], str, str | None, str]:
    """``USE CATALOG , SELECT on catalog main to account users`` -> privileges, type, name, principal."""
    lowered = [w.lower() for w in words]
    shape = _SHAPE.format(word=preposition)
    if "on" not in lowered:
        raise click.UsageError(f"expected {shape}")
    on = lowered.index("on")
    if preposition not in lowered[on + 1:]:
        raise click.UsageError(f"expected {shape}")
    to = lowered.index(preposition, on + 1)
    privileges = [canonical(p) for p in " ".join(words[:on]).split(",") if p.strip()]  # USE CATALOG: USE_CATALOG
    target = words[on + 1:to]
    principal = " ".join(words[to + 1:]).strip()
    if not privileges or not principal or not 1 <= len(target) <= 2:
        raise click.UsageError(f"expected {shape}")
    kind, name = target[0], (target[1] if len(target) == 2 else None)
    return privileges, kind, name, principal


def _resolve_name(done: object, kind: str, name: str | None) -> str:
    from arco.unity.permissions import normalize_type

    if normalize_type(kind) == "metastore":
        # The primary metastore is the one the bootstrap admin works in (workspace 0); its id is optional here.
        return name if name not in (None, "", "current") else done.metastore_id  # type: ignore[attr-defined]
    if name is None:
        raise click.UsageError(f"name the {kind} (e.g. catalog main, schema main.sales, table main.sales.orders)")
    return name


def _change(warehouse: str, storage_options: tuple[str, ...], words: tuple[str, ...], revoke: bool) -> None:
    from arco.unity.permissions import PermissionsService

    privileges, kind, name, principal = _parse(words, "from" if revoke else "to")
    done = open_warehouse(warehouse, storage_options)
    try:
        full_name = _resolve_name(done, kind, name)
        change = {"principal": principal, ("remove" if revoke else "add"): privileges}
        result = PermissionsService(done.store).update(kind, full_name, {"changes": [change]}, BOOTSTRAP_ADMIN)
    except (ApiError, CatalogError) as exc:
        raise click.ClickException(getattr(exc, "message", None) or str(exc)) from exc
    held = next((row["privileges"] for row in result["privilege_assignments"]
                 if row["principal"].casefold() == principal.casefold()), [])
    verb = f"revoked {', '.join(privileges)} on {kind} {full_name} from" if revoke else \
        f"granted {', '.join(privileges)} on {kind} {full_name} to"
    click.echo(f"{verb} {principal}; {principal} now holds: {', '.join(held) or 'nothing'}")


_EXAMPLES = """
    \b
    Securable types: {types}.
    Privileges take either spelling (USE_CATALOG or "USE CATALOG"); separate several with commas.
    The metastore's name may be left out (the primary metastore). Changes are seen by every server at once.

    \b
    Examples:
      arco grant USE CATALOG on catalog main to ann@example.com
      arco grant USE_SCHEMA on schema main.sales to analysts
      arco grant SELECT, MODIFY on table main.sales.orders to "account users"
      arco grant CREATE_CATALOG on metastore to ann@example.com
      arco grant CREATE_EXTERNAL_TABLE on external_location landing to etl-bot
"""


@click.command("grant", context_settings={"ignore_unknown_options": True})
@warehouse_options
@click.argument("words", nargs=-1, required=True, metavar="PRIVILEGE[, ...] on TYPE NAME to PRINCIPAL")
def grant(warehouse: str, storage_options: tuple[str, ...], words: tuple[str, ...]) -> None:
    """Grant privileges on a securable to a user, group or service principal."""
    _change(warehouse, storage_options, words, revoke=False)


@click.command("revoke", context_settings={"ignore_unknown_options": True})
@warehouse_options
@click.argument("words", nargs=-1, required=True, metavar="PRIVILEGE[, ...] on TYPE NAME from PRINCIPAL")
def revoke(warehouse: str, storage_options: tuple[str, ...], words: tuple[str, ...]) -> None:
    """Revoke privileges on a securable from a user, group or service principal.

    \b
    Examples:
      arco revoke SELECT on table main.sales.orders from analysts
      arco revoke "USE CATALOG" on catalog main from ann@example.com
    """
    _change(warehouse, storage_options, words, revoke=True)


grant.help = (grant.help or "") + "\n" + _EXAMPLES.format(types=SECURABLES)


@click.group("grants")
def grants() -> None:
    """Show who holds which privileges on a securable."""


@grants.command("show")
@warehouse_options
@click.argument("kind", metavar="TYPE")
@click.argument("name", required=False)
@click.option("--principal", default=None, help="Only this principal's privileges.")
def grants_show(warehouse: str, storage_options: tuple[str, ...], kind: str, name: str | None,
                principal: str | None) -> None:
    """Print the grants on securable TYPE NAME: one line per principal, tab-separated from its privileges.

    \b
    TYPE is one of metastore (NAME optional), catalog, schema, table, external_location, storage_credential.

    \b
    Examples:
      arco grants show catalog main
      arco grants show table main.sales.orders --principal analysts
    """
    from arco.unity.permissions import PermissionsService

    done = open_warehouse(warehouse, storage_options)
    try:
        full_name = _resolve_name(done, kind, name)
        result = PermissionsService(done.store).get(kind, full_name, principal, BOOTSTRAP_ADMIN)
    except (ApiError, CatalogError) as exc:
        raise click.ClickException(getattr(exc, "message", None) or str(exc)) from exc
    rows = result["privilege_assignments"]
    for row in rows:
        click.echo(f"{row['principal']}\t{', '.join(row['privileges'])}")
    if not rows:
        click.echo(f"no grants on {kind} {full_name}" + (f" to {principal}" if principal else ""), err=True)


COMMANDS = [grant, revoke, grants]
