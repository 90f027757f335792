"""``arco user|group|service-principal|token``: identities and tokens of a warehouse, made by an operator."""

from __future__ import annotations

import click

from arco.auth.principals import BOOTSTRAP_ADMIN
from arco.catalog.errors import CatalogError
from arco.catalog.store import CatalogStore
from arco.cli.common import open_warehouse, warehouse_options


def _store(warehouse: str, storage_options: tuple[str, ...]) -> CatalogStore:
    """The warehouse's catalog, initialised as ``arco serve`` would on a new warehouse."""
    return open_warehouse(warehouse, storage_options).store


_options = warehouse_options


def _run(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    try:
        return fn(*args, **kwargs)
    except CatalogError as exc:
        raise click.ClickException(str(exc)) from exc


BY = BOOTSTRAP_ADMIN.name


@click.group()
def user() -> None:
    """Create and list users (named by email); give them tokens with `arco token create`."""


@user.command("create")
@_options
@click.argument("email")
@click.option("--account-admin", is_flag=True, help="May do everything, like the bootstrap admin.")
def user_create(warehouse: str, storage_options: tuple[str, ...], email: str, account_admin: bool) -> None:
    """Create the user EMAIL.

    \b
    Example:
      arco user create ann@example.com --warehouse ./warehouse
    """
    from arco.auth.identity import create_principal

    entry = _run(create_principal, _store(warehouse, storage_options), "user", email, by=BY,
                 account_admin=account_admin)
    click.echo(f"created user {entry.name}; give them a token with: arco token create {entry.name}")


@user.command("list")
@_options
def user_list(warehouse: str, storage_options: tuple[str, ...]) -> None:
    """List users, groups (with their members) and service principals, tab-separated."""
    with _store(warehouse, storage_options).read() as state:
        for entry in sorted(state.principals.values(), key=lambda p: (p.kind, p.name.casefold())):
            members = f"\tmembers: {', '.join(entry.members)}" if entry.kind == "group" else ""
            admin = "\taccount admin" if entry.account_admin else ""
            click.echo(f"{entry.kind}\t{entry.name}{admin}{members}")


@click.group()
def group() -> None:
    """Groups of users, service principals and other groups (grant to a group, not to each member)."""


@group.command("create")
@_options
@click.argument("name")
@click.option("--member", "members", multiple=True, help="A user, service principal or group (repeatable).")
def group_create(warehouse: str, storage_options: tuple[str, ...], name: str, members: tuple[str, ...]) -> None:
    """Create the group NAME.

    \b
    Example:
      arco group create analysts --member ann@example.com --member bob@example.com
    """
    from arco.auth.identity import create_principal

    entry = _run(create_principal, _store(warehouse, storage_options), "group", name, by=BY, members=list(members))
    click.echo(f"created group {entry.name} with {len(entry.members)} member(s)")


@group.command("add-member")
@_options
@click.argument("name")
@click.argument("member")
def group_add(warehouse: str, storage_options: tuple[str, ...], name: str, member: str) -> None:
    """Add MEMBER (a user, service principal or group) to the group NAME."""
    from arco.auth.identity import update_members

    entry = _run(update_members, _store(warehouse, storage_options), name, by=BY, add=[member])
    click.echo(f"{entry.name}: {', '.join(entry.members)}")


@group.command("remove-member")
@_options
@click.argument("name")
@click.argument("member")
def group_remove(warehouse: str, storage_options: tuple[str, ...], name: str, member: str) -> None:
    """Remove MEMBER from the group NAME."""
    from arco.auth.identity import update_members

    entry = _run(update_members, _store(warehouse, storage_options), name, by=BY, remove=[member])
    click.echo(f"{entry.name}: {', '.join(entry.members) or '(no members)'}")


@click.command("service-principal")
@_options
@click.argument("application_id")
def service_principal(warehouse: str, storage_options: tuple[str, ...], application_id: str) -> None:
    """Create the service principal APPLICATION_ID and print its OAuth2 client secret (once).

    \b
    Example:
      arco service-principal etl-bot --warehouse ./warehouse
    """
    from arco.auth.identity import create_service_principal

    entry, secret = _run(create_service_principal, _store(warehouse, storage_options), application_id, by=BY)
    click.echo(f"client id:     {entry.name}\nclient secret: {secret}\n"
               f"PyIceberg / Spark: credential={entry.name}:{secret}")


@click.group()
def token() -> None:
    """Personal access tokens (shown once, stored hashed)."""


@token.command("create")
@_options
@click.argument("principal")
@click.option("--lifetime-days", type=click.IntRange(1), default=None, help="Expire after this many days.")
@click.option("--comment", default=None, help="A note shown by `arco token list`.")
@click.option("--workspace", type=click.IntRange(0), default=None,
              help="Make the token work in this workspace only (and so in its metastore); default: any workspace, "
                   "chosen per request with the X-Databricks-Workspace-Id header, else workspace 0.")
def token_create(warehouse: str, storage_options: tuple[str, ...], principal: str, lifetime_days: int | None,
                 comment: str | None, workspace: int | None) -> None:
    """Print a new personal access token for PRINCIPAL (only once: just its hash is stored).

    \b
    Example:
      export ARCO_TOKEN=$(arco token create ann@example.com --lifetime-days 30)
    """
    from arco.auth.identity import create_token

    issued = _run(create_token, _store(warehouse, storage_options), principal, by=BY,
                  lifetime_s=lifetime_days * 86400 if lifetime_days else None, comment=comment,
                  workspace_id=workspace)
    click.echo(issued.token)
    click.echo(f"token id {issued.entry.id} for {issued.entry.principal}; revoke with: arco token revoke "
               f"{issued.entry.id}", err=True)


@token.command("list")
@_options
def token_list(warehouse: str, storage_options: tuple[str, ...]) -> None:
    """List tokens: id, principal, active/revoked, workspace, comment (never the tokens themselves)."""
    with _store(warehouse, storage_options).read() as state:
        for entry in sorted(state.tokens.values(), key=lambda t: t.created_at_ms):
            status = "revoked" if entry.revoked else "active"
            where = "any workspace" if entry.workspace_id is None else f"workspace {entry.workspace_id}"
            click.echo(f"{entry.id}\t{entry.principal}\t{status}\t{where}\t{entry.comment or ''}")


@token.command("revoke")
@_options
@click.argument("token_id")
def token_revoke(warehouse: str, storage_options: tuple[str, ...], token_id: str) -> None:
    """Revoke the token TOKEN_ID (see `arco token list`); every server refuses it from its next request."""
    from arco.auth.identity import revoke_token

    _run(revoke_token, _store(warehouse, storage_options), token_id, by=BY)
    click.echo(f"revoked {token_id}; servers refuse it from their next request")


@click.group()
def oauth() -> None:
    """OAuth2 tokens of service principals: signed and short-lived, never stored; end them early here."""


@oauth.command("revoke")
@_options
@click.argument("principal")
def oauth_revoke(warehouse: str, storage_options: tuple[str, ...], principal: str) -> None:
    """End every OAuth token issued to PRINCIPAL so far (new exchanges keep working)."""
    from arco.auth.oauth_tokens import revoke_tokens

    _run(revoke_tokens, _store(warehouse, storage_options), principal, by=BY)
    click.echo(f"OAuth tokens issued to {principal} until now are revoked")


@oauth.command("rotate-key")
@_options
def oauth_rotate_key(warehouse: str, storage_options: tuple[str, ...]) -> None:
    """Sign OAuth tokens with a new key from now on; every token issued before stops working."""
    from arco.auth.oauth_tokens import SigningKeys, rotate_key

    store = _store(warehouse, storage_options)
    key_id = _run(rotate_key, store, SigningKeys(store.storage), by=BY)
    click.echo(f"OAuth signing key rotated (key id {key_id}); earlier tokens no longer work")


COMMANDS = [user, group, service_principal, token, oauth]
