"""The bootstrap admin token: initialised once, rotated through Tier 1, seen by every authenticator at once."""

from __future__ import annotations

from pathlib import Path

from arco.auth.authenticator import Authenticator
from arco.auth.bootstrap import admin_hash_in, read_stored_admin_hash, rotate_bootstrap_admin
from arco.auth.principals import BOOTSTRAP_ADMIN
from arco.auth.tokens import hash_token
from arco.catalog.bootstrap import initialise_warehouse
from arco.catalog.store import CatalogStore
from arco.storage.factory import open_storage


def _server(warehouse: Path) -> Authenticator:
    """What one server holds: its own storage handle and catalog store."""
    storage = open_storage(str(warehouse), {})
    return Authenticator(storage, frozenset(), read_stored_admin_hash(storage), store=CatalogStore(storage))


def test_initialise_makes_main_the_metastore_and_one_admin_token(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path / "wh"), {})
    first = initialise_warehouse(storage)
    assert first.generated_admin_token and first.metastore_id
    again = initialise_warehouse(open_storage(str(tmp_path / "wh"), {}))
    assert again.generated_admin_token is None and again.metastore_id == first.metastore_id
    with again.store.read() as state:
        assert [c.name for c in state.catalogs.values()] == ["main"]
        assert admin_hash_in(state) == hash_token(first.generated_admin_token)


def test_a_rotation_is_refused_on_the_next_request_of_every_authenticator(tmp_path: Path) -> None:
    old = initialise_warehouse(open_storage(str(tmp_path / "wh"), {})).generated_admin_token
    assert old is not None
    one, two = _server(tmp_path / "wh"), _server(tmp_path / "wh")
    assert one.authenticate(old) == BOOTSTRAP_ADMIN == two.authenticate(old)
    storage = open_storage(str(tmp_path / "wh"), {})
    new = rotate_bootstrap_admin(storage, CatalogStore(storage))
    assert one.authenticate(old) is None and two.authenticate(old) is None
    assert one.authenticate(new) == BOOTSTRAP_ADMIN == two.authenticate(new)
    assert read_stored_admin_hash(storage) == hash_token(new)  # the file is kept in step


def test_env_tokens_are_not_touched_by_a_rotation(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path / "wh"), {})
    assert initialise_warehouse(storage, env_token="mine").generated_admin_token is None
    server = Authenticator(storage, frozenset({hash_token("mine")}), None, store=CatalogStore(storage))
    rotate_bootstrap_admin(storage, CatalogStore(storage))
    assert server.authenticate("mine") == BOOTSTRAP_ADMIN


def test_a_cli_command_mints_no_second_admin_secret_on_a_warehouse_served_with_an_env_token(tmp_path: Path) -> None:
    """Servers started with ARCO_ADMIN_TOKEN store no admin token; a CLI command run without it later must not make
    one (and announce a new warehouse); on a warehouse it finds new, it makes and prints one as before."""
    served = open_storage(str(tmp_path / "served"), {})
    initialise_warehouse(served, env_token="mine")
    later = initialise_warehouse(open_storage(str(tmp_path / "served"), {}), admin_token_if_new=True)
    assert later.generated_admin_token is None and read_stored_admin_hash(served) is None
    new = initialise_warehouse(open_storage(str(tmp_path / "new"), {}), admin_token_if_new=True)
    assert new.generated_admin_token is not None
    assert read_stored_admin_hash(open_storage(str(tmp_path / "new"), {})) == hash_token(new.generated_admin_token)
