"""The web UI in a real headless Chromium (Debian's package, installed by scripts/install-emulators.sh), driven by
Playwright: sign in, browse to a table Spark wrote and PyIceberg then appended to, see both versions with their
different sources, and check what signed-out browsers, bad tokens and users without grants see.

A screenshot of the table page is saved as a test artifact: ``artifacts/ui/table-page.png`` at the repository
root (ignored by git), or under ``$ARCO_TEST_ARTIFACTS`` when that is set.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from arco.spark.session import rest_catalog_conf
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.spark,
    pytest.mark.timeout(600),
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (scripts/install-emulators.sh "
                                                "installs it); the web UI's browser tests need it"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is not installed")

SPARK_CATALOG = "arco_ui"
TABLE = "main.sales.orders"
ARTIFACTS = Path(os.environ.get("ARCO_TEST_ARTIFACTS") or Path(__file__).resolve().parents[2] / "artifacts") / "ui"


@pytest.fixture(scope="module")
def world(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A server of its own; sales.orders created and written by Spark, then appended to by PyIceberg; eve has no
    grants at all."""
    workdir = tmp_path_factory.mktemp("ui-e2e")
    warehouse = workdir / "warehouse"
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as server:
        run_cli(warehouse, "user", "create", "eve@x.com")
        eve = run_cli(warehouse, "token", "create", "eve@x.com").strip()
        for key, value in rest_catalog_conf(server.iceberg_uri, "main", ARCO_TOKEN).items():
            spark.conf.set(f"spark.sql.catalog.{SPARK_CATALOG}.{key}", value)
        spark.conf.set(f"spark.sql.catalog.{SPARK_CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
        spark.sql(f"CREATE NAMESPACE {SPARK_CATALOG}.sales")
        spark.sql(f"CREATE TABLE {SPARK_CATALOG}.sales.orders (id BIGINT, customer STRUCT<name: STRING, "
                  "city: STRING>, items ARRAY<STRING>, amount DOUBLE) USING iceberg PARTITIONED BY (bucket(4, id)) "
                  "TBLPROPERTIES ('comment' = 'Orders <b>as</b> written by Spark')")
        spark.sql(f"INSERT INTO {SPARK_CATALOG}.sales.orders VALUES "
                  "(1, named_struct('name', 'Ada', 'city', 'Turin'), array('pen'), 9.5), "
                  "(2, named_struct('name', 'Bo', 'city', 'Oslo'), array('ink', 'pad'), 4.0)")
        table = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN).load_table("sales.orders")
        rows = [{"id": 3, "customer": {"name": "Cy", "city": "Lima"}, "items": ["cup"], "amount": 2.5}]
        table.append(pa.Table.from_pylist(rows, schema=table.schema().as_arrow()))
        yield {"server": server, "eve": eve}


@pytest.fixture(scope="module")
def browser(world: dict[str, Any]) -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium's sandbox cannot run as root
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        yield launched
        launched.close()


def new_page(browser: Any, server: RunningServer) -> Any:
    context = browser.new_context(base_url=server.base_url, viewport={"width": 1280, "height": 1000})
    return context.new_page()


def sign_in(page: Any, token: str) -> None:
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_load_state()


def test_sign_in_browse_to_the_table_and_see_both_writers(browser: Any, world: dict[str, Any]) -> None:
    page = new_page(browser, world["server"])
    console_errors: list[str] = []  # a failed request (a favicon refused 401) is one too
    page.on("console", lambda message: console_errors.append(message.text) if message.type == "error" else None)
    page.goto("/")
    sign_in(page, ARCO_TOKEN)
    assert page.get_by_test_id("signed-in-as").inner_text() == "admin"
    page.get_by_test_id("catalogs").get_by_role("link", name="main", exact=True).click()
    page.get_by_test_id("schemas").get_by_role("link", name="sales", exact=True).click()
    page.get_by_test_id("tables").get_by_role("link", name="orders", exact=True).click()
    page.wait_for_load_state()
    assert page.url.endswith(f"/tables/{TABLE}")
    assert page.get_by_test_id("table-name").inner_text() == TABLE
    # The comment is a property holding HTML: shown as text, never as markup.
    assert page.get_by_test_id("comment").inner_text() == "Orders <b>as</b> written by Spark"
    assert page.locator("[data-testid=comment] b").count() == 0

    schema = page.get_by_test_id("schema").inner_text()
    for column in ("customer", "struct", "city", "items", "list", "element", "amount", "double"):
        assert column in schema
    assert page.get_by_test_id("snapshots").locator("tbody tr").count() == 2
    assert "main" in page.get_by_test_id("refs").inner_text()

    versions = page.get_by_test_id("version")
    assert versions.count() >= 3  # created by Spark, written by Spark, appended to by PyIceberg
    texts = [versions.nth(i).inner_text() for i in range(versions.count())]
    newest, spark_write = texts[0], next(t for t in texts[1:] if "engine spark 3.5" in t)  # as Spark writes it
    assert "current" in newest
    assert "External (Iceberg REST)" in newest and "PyIceberg" in newest and "append" in newest
    assert "PyIceberg" not in spark_write
    assert all("principal admin" in t and "Lineage: Unknown (external write)" in t for t in texts)
    assert all("declared, unverified" in t and "Quality: not checked" in t for t in texts)
    assert page.locator("#charts svg").count() >= 2  # rows/files/bytes per snapshot, and commits per day
    assert "Your own privileges" not in page.locator("#grants").inner_text()

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "table-page.png"), full_page=False)
    page.screenshot(path=str(ARTIFACTS / "table-page-full.png"), full_page=True)
    assert console_errors == []
    page.context.close()


def test_a_signed_out_browser_sees_the_sign_in_page_and_no_data(browser: Any, world: dict[str, Any]) -> None:
    page = new_page(browser, world["server"])
    response = page.goto(f"/tables/{TABLE}")
    assert response.status == 401
    assert page.locator("#token").is_visible()
    body = page.locator("body").inner_text()
    assert "customer" not in body and "Versions" not in body and "Spark" not in body
    sign_in(page, ARCO_TOKEN)  # signing in here lands on the page asked for
    assert page.url.endswith(f"/tables/{TABLE}")
    assert page.get_by_test_id("versions").is_visible()
    page.context.close()


def test_a_bad_token_stays_signed_out_with_a_clear_message(browser: Any, world: dict[str, Any]) -> None:
    page = new_page(browser, world["server"])
    page.goto("/")
    sign_in(page, "not-a-real-token")
    assert "not accepted" in page.get_by_test_id("signin-error").inner_text()
    assert page.locator("#token").is_visible()
    assert page.context.cookies() == []
    assert page.goto("/catalogs/main").status == 401
    page.context.close()


def test_a_user_without_grants_sees_nothing(browser: Any, world: dict[str, Any]) -> None:
    page = new_page(browser, world["server"])
    page.goto("/")
    sign_in(page, world["eve"])
    assert page.get_by_test_id("signed-in-as").inner_text() == "eve@x.com"
    assert page.get_by_test_id("no-catalogs").is_visible()
    assert page.locator("a[href^='/catalogs/']").count() == 0
    # As on Iceberg REST, one who may not use the catalog is refused alike for names in it that exist and not.
    for path, status in ((f"/tables/{TABLE}", 403), ("/catalogs/main", 403), ("/catalogs/main/sales", 403),
                         ("/tables/main.sales.nosuch", 403), ("/catalogs/main/nosuch", 403)):
        response = page.goto(path)
        assert response.status == status, path
        body = page.locator("body").inner_text()
        assert "customer" not in body and "Versions" not in body and "PyIceberg" not in body, path
    assert page.locator("a[href='/runs']").count() == 0  # pipeline runs are for account admins
    # The session cookie is out of scripts' reach.
    assert page.evaluate("document.cookie") == ""
    page.context.close()


def test_long_and_right_to_left_names_stay_in_their_place(browser: Any, world: dict[str, Any]) -> None:
    catalog = RestCatalog("py", uri=world["server"].iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    # An override character is refused in names; right-to-left letters are names like any other, and a page must
    # keep them from reordering what follows them.
    with pytest.raises(BadRequestError, match="reorder text"):
        catalog.create_namespace("\u202eevil")
    long_name, rtl_name = "w" * 250, "\u05e9\u05dc\u05d5\u05dd_1"
    for name in (long_name, rtl_name):
        catalog.create_namespace(name)
    page = new_page(browser, world["server"])
    page.goto("/catalogs/main")
    sign_in(page, ARCO_TOKEN)
    schemas = page.get_by_test_id("schemas")
    # The 250-character name wraps in its cell: the list is no wider than the page, the owner column stays on it.
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    assert schemas.get_by_role("link", name=long_name).is_visible()
    # A right-to-left name does not reach past itself: the breadcrumb after it reads in order.
    page.goto(f"/catalogs/main/{rtl_name}")
    crumbs = page.locator(".crumbs bdi")
    assert crumbs.count() == 2 and crumbs.nth(1).inner_text() == rtl_name
    assert page.evaluate("getComputedStyle(document.querySelector('.crumbs bdi')).unicodeBidi") == "isolate"
    page.context.close()


def test_the_search_box_finds_a_name_on_any_page_of_a_paged_list(browser: Any, world: dict[str, Any]) -> None:
    catalog = RestCatalog("py", uri=world["server"].iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    catalog.create_namespace("many")
    for i in range(6):
        catalog.create_table(f"many.t{i:02d}", Schema(NestedField(1, "id", LongType())))
    page = new_page(browser, world["server"])
    page.goto("/catalogs/main/many?max_results=2")  # t05 is on the last of three pages
    sign_in(page, ARCO_TOKEN)
    assert page.get_by_test_id("tables").get_by_role("link", name="t05").count() == 0
    page.get_by_role("searchbox").fill("T05")
    page.get_by_role("searchbox").press("Enter")
    page.wait_for_load_state()
    assert "q=T05" in page.url
    links = page.get_by_test_id("tables").get_by_role("link")
    assert [links.nth(i).inner_text() for i in range(links.count())] == ["t05"]
    assert page.locator("input.filter").count() == 0  # the page's own filter box is not offered beside it
    page.get_by_test_id("clear-search").click()
    page.wait_for_load_state()
    assert page.get_by_test_id("tables").get_by_role("link").count() == 6
    page.context.close()
