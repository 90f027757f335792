"""The web UI over plain HTTP against a real ``arco serve``: sign-in, the session cookie, escaping, and that its
pages and JSON API show nothing without a valid token and nothing the caller's grants do not allow."""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import ListType, LongType, MapType, NestedField, StringType, StructType

from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli

pytestmark = pytest.mark.timeout(300)

HOSTILE = "<script>alert('x')</script>"
ODD_NAME = "o\"dd'<i>t"  # names may not hold spaces, slashes or periods, but may hold quotes and angle brackets
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "address", StructType(NestedField(3, "city", StringType(), required=False),
                                         NestedField(4, "zip", StringType(), required=False)), required=False),
    NestedField(5, "tags", ListType(6, StringType(), element_required=False), required=False),
    NestedField(7, "attrs", MapType(8, StringType(), 9, LongType(), value_required=False), required=False),
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir: Path = tmp_path_factory.mktemp("ui-http")
    warehouse = workdir / "warehouse"
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN, extra_args=("--access-log",)) as server:
        for user in ("eve@x.com", "ann@x.com"):
            run_cli(warehouse, "user", "create", user)
        tokens = {user: run_cli(warehouse, "token", "create", user).strip() for user in ("eve@x.com", "ann@x.com")}
        catalog = RestCatalog("admin", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
        catalog.create_namespace("db")
        table = catalog.create_table("db.people", SCHEMA, properties={"note": HOSTILE})
        table.append(pa.Table.from_pylist([{"id": 1}, {"id": 2}], schema=table.schema().as_arrow()))
        catalog.create_table(f"db.{ODD_NAME}", SCHEMA)
        uc(server, ARCO_TOKEN, "PATCH", "/tables/main.db.people", json={"comment": HOSTILE})
        for kind, name, privileges in (("catalog", "main", ["USE_CATALOG"]), ("schema", "main.db", ["USE_SCHEMA"]),
                                       ("table", "main.db.people", ["SELECT"])):
            change = {"principal": "ann@x.com", "add": privileges}
            assert uc(server, ARCO_TOKEN, "PATCH", f"/permissions/{kind}/{name}",
                      json={"changes": [change]}).status_code == 200
        yield {"server": server, "tokens": tokens, "warehouse": warehouse, "workdir": workdir}


def uc(server: RunningServer, token: str, method: str, path: str, **kwargs: object) -> httpx.Response:
    return httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}",
                         headers={"Authorization": f"Bearer {token}"}, timeout=30, **kwargs)  # type: ignore[arg-type]


@contextmanager
def browser(world: dict, token: str | None) -> Iterator[httpx.Client]:
    """A client that signs in as a browser does (the form post), keeping the session cookie."""
    with httpx.Client(base_url=world["server"].base_url, timeout=30) as client:
        if token is not None:
            signed = client.post("/ui/signin", data={"token": token, "next": "/"})
            assert signed.status_code == 303, signed.text
        yield client


def test_signed_out_pages_show_the_sign_in_form_and_nothing_else(world: dict) -> None:
    with browser(world, None) as client:
        home = client.get("/")
        assert home.status_code == 200 and 'name="token"' in home.text
        assert 'data-testid="catalogs"' not in home.text and "/catalogs/main" not in home.text
        for path in ("/catalogs/main", "/catalogs/main/db", "/tables/main.db.people", "/runs", "/shares"):
            page = client.get(path)
            assert page.status_code == 401, path
            assert 'name="token"' in page.text and "people" not in page.text.replace(path, ""), path
            assert page.headers["cache-control"] == "no-store"


def test_the_json_api_needs_a_bearer_token(world: dict) -> None:
    base = world["server"].base_url
    assert httpx.get(f"{base}/ui/api/tables/main.db.people").status_code == 401
    assert httpx.get(f"{base}/ui/api/tables/main.db.people",
                     headers={"Authorization": "Bearer wrong"}).status_code == 401
    # The session cookie is the pages' credential, not the API's: a cookie alone does not open the API.
    with browser(world, ARCO_TOKEN) as client:
        assert client.get("/ui/api/tables/main.db.people").status_code == 401


def test_the_json_api_answers_a_table_with_its_versions_and_sources(world: dict) -> None:
    deadline = time.monotonic() + 10
    while True:  # a commit's receipt is written just after its answer (arco.events.after_answer)
        got = httpx.get(f"{world['server'].base_url}/ui/api/tables/main.db.people",
                        headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
        assert got.status_code == 200
        body = got.json()
        if all(v["source"].get("principal") for v in body["versions"]) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert body["full_name"] == "main.db.people" and body["snapshot_count"] == 1
    assert [v["number"] for v in body["versions"]] == [1, 0]
    assert {v["source"]["label"] for v in body["versions"]} == {"External (Iceberg REST)"}
    assert all(v["source"]["principal"] == "admin" and v["source"]["client"].startswith("PyIceberg")
               for v in body["versions"])
    columns = [(c["depth"], c["name"], c["type"]) for c in body["columns"]]
    assert columns == [(0, "id", "long"), (0, "address", "struct"), (1, "city", "string"), (1, "zip", "string"),
                       (0, "tags", "list"), (1, "element", "string"), (0, "attrs", "map"), (1, "key", "string"),
                       (1, "value", "long")]


def test_unknown_tables_are_404(world: dict) -> None:
    base = world["server"].base_url
    headers = {"Authorization": f"Bearer {ARCO_TOKEN}"}
    assert httpx.get(f"{base}/ui/api/tables/main.db.nope", headers=headers).status_code == 404
    assert httpx.get(f"{base}/ui/api/tables/not-a-full-name", headers=headers).status_code == 404
    with browser(world, ARCO_TOKEN) as client:
        page = client.get("/tables/main.db.nope")
        assert page.status_code == 404 and "Not found" in page.text
        assert client.get("/tables/nosuch.db.t").status_code == 404


def test_names_comments_and_properties_are_escaped(world: dict) -> None:
    with browser(world, ARCO_TOKEN) as client:
        page = client.get("/tables/main.db.people")
        assert page.status_code == 200
        assert HOSTILE not in page.text
        assert page.text.count("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;") == 2  # comment and property
        assert "script-src 'self'" in page.headers["content-security-policy"]
        listing = client.get("/catalogs/main/db")
        assert ODD_NAME not in listing.text
        assert "o&#34;dd&#39;&lt;i&gt;t" in listing.text
        assert 'href="/tables/main.db.o%22dd%27%3Ci%3Et"' in listing.text
        odd = client.get("/tables/main.db.o%22dd%27%3Ci%3Et")
        assert odd.status_code == 200 and "o&#34;dd&#39;&lt;i&gt;t" in odd.text and "<i>t" not in odd.text


def test_the_session_cookie_is_http_only_strict_and_forgotten_with_the_browser(world: dict) -> None:
    response = httpx.post(f"{world['server'].base_url}/ui/signin", data={"token": ARCO_TOKEN, "next": "/runs"})
    assert response.status_code == 303 and response.headers["location"] == "/runs"
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    assert "expires" not in cookie and "max-age" not in cookie
    assert ARCO_TOKEN not in response.headers["location"]


def test_a_bad_token_stays_signed_out_with_a_message(world: dict) -> None:
    with httpx.Client(base_url=world["server"].base_url) as client:
        refused = client.post("/ui/signin", data={"token": "not-a-token"})
        assert refused.status_code == 401 and "not accepted" in refused.text
        assert "set-cookie" not in refused.headers
        empty = client.post("/ui/signin", data={"token": ""})
        assert empty.status_code == 401 and "Paste a token" in empty.text
        stale = client.get("/catalogs/main", cookies={"arco_ui_session": "revoked-or-made-up"})
        assert stale.status_code == 401 and "no longer valid" in stale.text and 'name="token"' in stale.text


def test_sign_in_refuses_cross_site_posts_and_foreign_redirects(world: dict) -> None:
    base = world["server"].base_url
    forged = httpx.post(f"{base}/ui/signin", data={"token": ARCO_TOKEN}, headers={"Sec-Fetch-Site": "cross-site"})
    assert forged.status_code == 403 and "set-cookie" not in forged.headers
    foreign = httpx.post(f"{base}/ui/signin", data={"token": ARCO_TOKEN},
                         headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403
    for target in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        landed = httpx.post(f"{base}/ui/signin", data={"token": ARCO_TOKEN, "next": target})
        assert landed.headers["location"] == "/", target


def test_a_user_without_grants_sees_nothing(world: dict) -> None:
    eve = world["tokens"]["eve@x.com"]
    with browser(world, eve) as client:
        home = client.get("/")
        assert home.status_code == 200 and "eve@x.com" in home.text and "No catalogs you may use" in home.text
        assert client.get("/catalogs/main").status_code == 403
        assert client.get("/catalogs/main/db").status_code == 403
        denied = client.get("/tables/main.db.people")
        assert denied.status_code == 403 and "may not use catalog main" in denied.text and HOSTILE not in denied.text
        assert "address" not in denied.text and "Versions" not in denied.text
        assert client.get("/runs").status_code == 403
    api = httpx.get(f"{world['server'].base_url}/ui/api/tables/main.db.people",
                    headers={"Authorization": f"Bearer {eve}"})
    assert api.status_code == 403
    listed = httpx.get(f"{world['server'].base_url}/ui/api/catalogs", headers={"Authorization": f"Bearer {eve}"})
    assert listed.status_code == 200 and listed.json()["catalogs"] == []
    admin = httpx.get(f"{world['server'].base_url}/ui/api/catalogs/main/db",
                      headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    assert {"people", ODD_NAME} <= {t["name"] for t in admin.json()["tables"]}


def test_a_grantee_sees_the_table_and_only_their_own_grants(world: dict) -> None:
    with browser(world, world["tokens"]["ann@x.com"]) as client:
        schema = client.get("/catalogs/main/db")
        assert schema.status_code == 200 and "people" in schema.text and "&lt;i&gt;t" not in schema.text
        page = client.get("/tables/main.db.people")
        assert page.status_code == 200 and "Your privileges on this table" in page.text
        grants = page.text.split('data-testid="grants"', 1)[1].split("</table>", 1)[0]
        assert "<td>ann@x.com</td><td>SELECT</td>" in grants and "eve@x.com" not in grants
        assert client.get("/tables/main.db.o%22dd%27%3Ci%3Et").status_code == 403


def test_a_reader_through_a_group_is_shown_the_group_s_privileges(world: dict) -> None:
    catalog = RestCatalog("admin", uri=world["server"].iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    catalog.create_table("db.team_only", SCHEMA)
    run_cli(world["warehouse"], "group", "create", "readers", "--member", "ann@x.com")
    assert uc(world["server"], ARCO_TOKEN, "PATCH", "/permissions/table/main.db.team_only", json={"changes": [
        {"principal": "readers", "add": ["SELECT"]}]}).status_code == 200
    with browser(world, world["tokens"]["ann@x.com"]) as client:
        page = client.get("/tables/main.db.team_only")
        assert page.status_code == 200
        grants = page.text.split('data-testid="grants"', 1)[1].split("</table>", 1)[0]
        assert "<td>readers</td><td>SELECT</td>" in grants


def test_sign_out_forgets_the_session_and_the_token_is_never_logged(world: dict) -> None:
    with browser(world, ARCO_TOKEN) as client:
        assert client.get("/").status_code == 200
        out = client.post("/ui/signout")
        assert out.status_code == 303
        assert client.get("/catalogs/main").status_code == 401
    assert ARCO_TOKEN not in world["server"].log()
    assert world["tokens"]["eve@x.com"] not in world["server"].log()


def test_shares_recipients_and_pipeline_runs(world: dict) -> None:
    from arco.pipeline.runs import Run
    from arco.storage.factory import open_storage

    admin = world["server"]
    assert uc(admin, ARCO_TOKEN, "POST", "/shares", json={"name": "partners", "comment": HOSTILE}).status_code == 200
    assert uc(admin, ARCO_TOKEN, "PATCH", "/shares/partners", json={"updates": [
        {"action": "ADD", "data_object": {"name": "main.db.people", "data_object_type": "TABLE"}}]}).status_code == 200
    recipient = uc(admin, ARCO_TOKEN, "POST", "/recipients", json={"name": "acme", "authentication_type": "TOKEN"})
    assert recipient.status_code == 200
    activation = recipient.json()["tokens"][0]["activation_url"]
    run = Run("compact")
    run.count("receipts_new", 12)
    run.errors.append(f"bad receipt {HOSTILE}")
    run.finish(open_storage(str(world["warehouse"])))
    with browser(world, ARCO_TOKEN) as client:
        shares = client.get("/shares")
        assert shares.status_code == 200 and "partners" in shares.text and "main.db.people" in shares.text
        assert "acme" in shares.text and HOSTILE not in shares.text
        assert activation.rsplit("/", 1)[-1] not in shares.text  # the activation link is a secret
        runs = client.get("/runs")
        assert runs.status_code == 200 and run.run_id in runs.text and "receipts new: 12" in runs.text
        assert HOSTILE not in runs.text
    with browser(world, world["tokens"]["eve@x.com"]) as client:
        theirs = client.get("/shares")
        assert theirs.status_code == 200 and "partners" not in theirs.text and "acme" not in theirs.text


def test_a_unity_catalog_view_shows_its_columns_and_definition(world: dict) -> None:
    created = uc(world["server"], ARCO_TOKEN, "POST", "/tables", json={
        "name": "recent", "catalog_name": "main", "schema_name": "db", "table_type": "VIEW",
        "view_definition": f"SELECT id FROM people WHERE note = '{HOSTILE}'", "comment": "a view",
        "columns": [{"name": "id", "type_name": "LONG", "nullable": False}]})
    assert created.status_code == 200, created.text
    with browser(world, ARCO_TOKEN) as client:
        page = client.get("/tables/main.db.recent")
        assert page.status_code == 200
        assert "VIEW" in page.text and "View definition" in page.text and HOSTILE not in page.text
        assert "SELECT id FROM people WHERE note = &#39;&lt;script&gt;" in page.text
        assert 'data-testid="versions"' not in page.text  # no Iceberg history for a UC view


def admin_api(world: dict, path: str) -> httpx.Response:
    return httpx.get(f"{world['server'].base_url}/ui/api{path}", headers={"Authorization": f"Bearer {ARCO_TOKEN}"},
                     timeout=30)


def test_lists_page_through_with_the_services_page_token(world: dict) -> None:
    catalog = RestCatalog("admin", uri=world["server"].iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    catalog.create_namespace("paged")
    names = [f"t{i}" for i in range(5)]
    for name in names:
        catalog.create_table(f"paged.{name}", Schema(NestedField(1, "id", LongType())))
    seen, token, pages_read = [], None, 0
    while True:  # the JSON passes the page token through
        body = admin_api(world, f"/catalogs/main/paged?max_results=2{f'&page_token={token}' if token else ''}").json()
        seen += [t["name"] for t in body["tables"]]
        pages_read += 1
        token = body["paging"]["next_page_token"]
        if token is None:
            break
    assert seen == names and pages_read == 3
    with browser(world, ARCO_TOKEN) as client:  # the page links its next page
        shown, url = [], "/catalogs/main/paged?max_results=2"
        while url:
            page = client.get(url)
            assert page.status_code == 200
            shown += [n for n in names if f'href="/tables/main.paged.{n}"' in page.text]
            found = re.search(r'href="(\?page_token=[^"]+)" rel="next"', page.text)
            url = "/catalogs/main/paged" + html.unescape(found.group(1)) if found else None
        assert shown == names
        first = client.get("/catalogs/main/paged?max_results=9")
        assert 'data-testid="pager"' not in first.text  # one page: no pager
        assert client.get("/catalogs/main/paged?max_results=x").status_code == 400


def test_a_name_search_covers_every_page_of_a_list_and_pages_through_its_matches(world: dict) -> None:
    catalog = RestCatalog("admin", uri=world["server"].iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    catalog.create_namespace("searched")
    names = [f"{prefix}{i}" for i in range(4) for prefix in ("Sales_", "hr_")]
    for name in names:
        catalog.create_table(f"searched.{name}", Schema(NestedField(1, "id", LongType())))
    wanted = sorted((n for n in names if "sales" in n.casefold()), key=str.casefold)
    with browser(world, ARCO_TOKEN) as client:
        # Two per page: the matches are on more pages than the first, and the pager keeps the search.
        shown, url = [], "/catalogs/main/searched?max_results=2&q=SALES"
        while url:
            page = client.get(url)
            assert page.status_code == 200 and 'value="SALES"' in page.text
            shown += [n for n in names if f'href="/tables/main.searched.{n}"' in page.text]
            found = re.search(r'href="(\?page_token=[^"]+)" rel="next"', page.text)
            url = "/catalogs/main/searched" + html.unescape(found.group(1)) if found else None
            assert url is None or "q=SALES" in url
        assert shown == wanted
        none = client.get("/catalogs/main/searched?q=zz")
        assert 'data-testid="no-match"' in none.text and "href=\"/tables/" not in none.text
        assert 'data-testid="clear-search"' in none.text
        # The catalog list and the schema list search too; a hostile search is shown as text.
        assert 'href="/catalogs/main/searched"' in client.get("/catalogs/main?q=earch").text
        assert 'href="/catalogs/main/searched"' not in client.get("/catalogs/main?q=nope").text
        assert 'href="/catalogs/main"' in client.get("/?q=MAI").text
        hostile = client.get("/catalogs/main?q=" + HOSTILE)
        assert hostile.status_code == 200 and HOSTILE not in hostile.text and "&lt;script&gt;alert(" in hostile.text
        assert client.get("/catalogs/main?q=" + "x" * 256).status_code == 400
    # The JSON API takes the search too, and it never shows a name the caller may not see.
    body = admin_api(world, "/catalogs/main/searched?q=hr_").json()
    assert [t["name"] for t in body["tables"]] == [n for n in names if n.startswith("hr_")]
    assert body["paging"]["query"] == "hr_"
    with browser(world, world["tokens"]["ann@x.com"]) as client:  # ann may read db.people only
        assert "searched" not in client.get("/catalogs/main?q=search").text


def test_missing_or_unreadable_metadata_gets_the_error_page_loadtable_agrees_with(world: dict) -> None:
    catalog = RestCatalog("admin", uri=world["server"].iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    catalog.create_namespace("broken")
    files = {}
    for name in ("missing", "corrupt"):
        table = catalog.create_table(f"broken.{name}", SCHEMA)
        files[name] = Path(table.metadata_location.removeprefix("file://"))
    with browser(world, ARCO_TOKEN) as client:
        assert client.get("/tables/main.broken.missing").status_code == 200  # this server has read it: warm
        files["missing"].unlink()
        files["corrupt"].write_text('{"format-version": 2, garbage')
        loaded = httpx.get(f"{world['server'].iceberg_uri}/v1/main/namespaces/broken/tables/missing",
                           headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
        assert loaded.status_code == 404
        page = client.get("/tables/main.broken.missing")
        assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
        assert "missing from storage" in page.text and 'data-testid="error"' in page.text
    assert admin_api(world, "/tables/main.broken.missing").status_code == 404
    # A server that has not read the corrupt file yet (this one still holds it, parsed when it was written).
    with arco_server(world["warehouse"], world["workdir"], admin_token=ARCO_TOKEN) as cold:
        with httpx.Client(base_url=cold.base_url, timeout=30) as client:
            assert client.post("/ui/signin", data={"token": ARCO_TOKEN}).status_code == 303
            page = client.get("/tables/main.broken.corrupt")
            assert page.status_code == 500 and page.headers["content-type"].startswith("text/html")
            assert "is not an Iceberg table metadata document" in page.text and "garbage" not in page.text
            # ... as loadTable on that server says it (the same status and words, in the API's error shape).
            loaded = httpx.get(f"{cold.iceberg_uri}/v1/main/namespaces/broken/tables/corrupt",
                               headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
            assert loaded.status_code == 500 and "garbage" not in loaded.text
            assert "is not an Iceberg table metadata document" in loaded.json()["error"]["message"]
            missing = client.get("/tables/main.broken.missing")
            assert missing.status_code == 404 and "missing from storage" in missing.text
        api = httpx.get(f"{cold.base_url}/ui/api/tables/main.broken.corrupt",
                        headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
        assert api.status_code == 500 and api.json()["error_code"] == "METADATA_UNREADABLE"


def test_odd_parameters_and_forms_are_refused_plainly(world: dict) -> None:
    with browser(world, ARCO_TOKEN) as client:
        assert client.get("/tables/main.db.people", params={"versions": "\u00b2"}).status_code == 200
    assert admin_api(world, "/tables/main.db.people?versions=%C2%B2").status_code == 200
    crowded = httpx.post(f"{world['server'].base_url}/ui/signin",
                         content=f"a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&token={ARCO_TOKEN}",
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert crowded.status_code == 400 and "set-cookie" not in crowded.headers
    huge = httpx.post(f"{world['server'].base_url}/ui/signin", content=f"token={ARCO_TOKEN}&pad={'x' * 20_000}",
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert huge.status_code == 413 and "larger than 16 KB" in huge.text and "set-cookie" not in huge.headers


def test_a_user_who_may_not_use_the_catalog_learns_nothing_of_its_names(world: dict) -> None:
    eve = world["tokens"]["eve@x.com"]
    with browser(world, eve) as client:
        for path in ("/tables/main.db.people", "/tables/main.db.nope", "/tables/main.nope.nope",
                     "/catalogs/main/db", "/catalogs/main/nope"):
            page = client.get(path)
            assert page.status_code == 403 and "may not use catalog main" in page.text, path
        assert client.get("/tables/nosuch.db.t").status_code == 404  # as Iceberg REST: a catalog's name is no secret
        assert 'href="/runs"' not in client.get("/").text  # pipeline runs are for account admins
    for path in ("/tables/main.db.people", "/tables/main.db.nope", "/catalogs/main/nope"):
        got = httpx.get(f"{world['server'].base_url}/ui/api{path}", headers={"Authorization": f"Bearer {eve}"})
        assert got.status_code == 403, path
    with browser(world, ARCO_TOKEN) as client:
        assert 'href="/runs"' in client.get("/").text


def test_a_schema_the_caller_may_not_use_answers_alike_for_views_and_missing_names(
        world: dict) -> None:
    server = world["server"]
    assert uc(server, ARCO_TOKEN, "POST", "/schemas", json={"name": "hid", "catalog_name": "main"}).status_code == 200
    made = uc(server, ARCO_TOKEN, "POST", "/tables", json={
        "name": "v", "catalog_name": "main", "schema_name": "hid", "table_type": "VIEW",
        "view_definition": "SELECT 1", "columns": [{"name": "x", "type_name": "INT"}]})
    assert made.status_code == 200, made.text  # a UC view: the page asks UC for it (an Iceberg table, the guard)
    run_cli(world["warehouse"], "user", "create", "cat@x.com")
    cat = run_cli(world["warehouse"], "token", "create", "cat@x.com").strip()
    assert uc(server, ARCO_TOKEN, "PATCH", "/permissions/catalog/main", json={"changes": [
        {"principal": "cat@x.com", "add": ["USE_CATALOG"]}]}).status_code == 200
    with browser(world, cat) as client:
        missing = client.get("/tables/main.hid.nope")
        assert missing.status_code == 403
        view = client.get("/tables/main.hid.v")
        assert view.status_code == 403 and view.text.replace("hid.v", "hid.nope") == missing.text
    api = [httpx.get(f"{server.base_url}/ui/api/tables/main.hid.{name}", headers={"Authorization": f"Bearer {cat}"})
           for name in ("v", "nope")]
    assert [a.status_code for a in api] == [403, 403]
    assert api[0].text.replace("hid.v", "hid.nope") == api[1].text


def _view_version(sql: str, version_id: int, columns: list[str]) -> dict:
    return {"version-id": version_id, "schema-id": version_id - 1, "timestamp-ms": 1_700_000_000_000 + version_id,
            "summary": {"engine-name": "spark", "engine-version": "3.5.1"}, "default-namespace": ["db"],
            "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}]}, {
            "type": "struct", "schema-id": version_id - 1,
            "fields": [{"id": i + 1, "name": c, "type": "long", "required": False} for i, c in enumerate(columns)]}


def test_an_iceberg_view_s_page_shows_every_version_it_keeps(world: dict) -> None:
    server = world["server"]
    headers = {"Authorization": f"Bearer {ARCO_TOKEN}"}
    catalog = RestCatalog("admin", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    catalog.create_namespace(("db", "deep"))
    for namespace in ("db", "db%1Fdeep"):
        views = f"{server.iceberg_uri}/v1/main/namespaces/{namespace}/views"
        first, schema = _view_version("SELECT id FROM db.people", 1, ["id"])
        made = httpx.post(views, headers=headers, json={
            "name": "evolving", "schema": schema, "view-version": first, "properties": {"comment": "made twice"}})
        assert made.status_code == 200, made.text
        second, schema = _view_version(f"SELECT id, id * 2 AS twice FROM db.people -- {HOSTILE}", 2, ["id", "twice"])
        replaced = httpx.post(f"{views}/evolving", headers=headers, json={"requirements": [], "updates": [
            {"action": "add-schema", "schema": schema}, {"action": "add-view-version", "view-version": second},
            {"action": "set-current-view-version", "view-version-id": -1}]})
        assert replaced.status_code == 200, replaced.text
    with browser(world, ARCO_TOKEN) as client:
        for path in ("/tables/main.db.evolving", "/tables/main.db.deep.evolving"):
            page = client.get(path)
            assert page.status_code == 200, (path, page.text)
            versions = re.findall(r'data-testid="view-version" data-version="(\d+)"', page.text)
            assert versions == ["2", "1"], path  # newest first
            assert page.text.count('<span class="tag">current</span>') == 1
            assert "SELECT id FROM db.people" in page.text and "id * 2 AS twice" in page.text
            assert HOSTILE not in page.text  # the SQL is text
            assert "spark 3.5.1" in page.text and "made twice" in page.text
            assert ">twice<" in page.text  # the current version's columns, in the schema list
            assert "on this view" in page.text or path.endswith("deep.evolving")  # grants: a view's, said so
    body = admin_api(world, "/tables/main.db.evolving").json()
    assert [v["version_id"] for v in body["view_versions"]] == [2, 1]
    assert body["view_versions"][0]["current"] and body["info"]["table_type"] == "VIEW"
    with browser(world, world["tokens"]["ann@x.com"]) as client:  # ann may read db.people, not the view
        assert client.get("/tables/main.db.evolving").status_code == 403


def test_page_requests_name_their_principal_in_the_access_log(world: dict) -> None:
    with browser(world, world["tokens"]["ann@x.com"]) as client:
        assert client.get("/catalogs/main/db", headers={"X-Request-Id": "ui-page-principal"}).status_code == 200
    deadline = time.monotonic() + 10
    while '"ui-page-principal"' not in world["server"].log() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [json.loads(line) for line in world["server"].log().splitlines() if '"ui-page-principal"' in line]
    assert [(e["route"], e["principal"]) for e in lines if e.get("logger") == "arco.access"] == \
        [("/catalogs/{catalog}/{schema}", "ann@x.com")]


def test_sign_in_keeps_the_query_of_the_page_asked_for(world: dict) -> None:
    with httpx.Client(base_url=world["server"].base_url, timeout=30) as client:
        page = client.get("/tables/main.db.people?versions=2")
        assert page.status_code == 401
        assert 'name="next" value="/tables/main.db.people?versions=2"' in page.text
        landed = client.post("/ui/signin", data={"token": ARCO_TOKEN, "next": "/tables/main.db.people?versions=2"})
        assert landed.headers["location"] == "/tables/main.db.people?versions=2"


def test_favicon_strays_bidi_names_and_unreadable_runs(world: dict) -> None:
    base = world["server"].base_url
    icon = httpx.get(f"{base}/favicon.ico")
    assert icon.status_code == 204
    with browser(world, ARCO_TOKEN) as client:
        for path in ("/catalogs/", "/tables/", "/catalogs/main/db/x", "/tables/main.db.people/x"):
            stray = client.get(path)
            assert stray.status_code == 404 and stray.headers["content-type"].startswith("text/html"), path
            assert "There is no page at" in stray.text
        page = client.get("/tables/main.db.people")
        assert "<bdi>people</bdi></nav>" in page.text and 'href="/ui/static/favicon.svg"' in page.text
        assert client.get("/ui/static/favicon.svg").status_code == 200
        runs = Path(world["warehouse"]) / "_catalog" / "pipeline" / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        (runs / "zzzz-torn.json").write_text('{"run_id":"zz","job":"comp')
        (runs / "zzzz-older.json").write_text('{"run_id":"zz"}')
        listed = client.get("/runs")
        assert listed.status_code == 200 and "zzzz-torn.json" in listed.text
        (runs / "zzzz-torn.json").unlink()
    assert httpx.get(f"{base}/catalogs/x").status_code == 401  # signed out: the sign-in page, as on every page


def test_history_charts_partition_specs_and_nested_namespaces(world: dict) -> None:
    from pyiceberg.transforms import IdentityTransform

    catalog = RestCatalog("admin", uri=world["server"].iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    catalog.create_namespace("deep")
    catalog.create_namespace("deep.inner")
    table = catalog.create_table("deep.inner.evolved", Schema(NestedField(1, "id", LongType()),
                                                             NestedField(2, "kind", StringType())))
    with table.update_spec() as spec:
        spec.add_field("kind", IdentityTransform(), "kind")
    body = admin_api(world, "/tables/main.deep.inner.evolved").json()
    assert body["full_name"] == "main.deep.inner.evolved"
    assert [f["name"] for f in body["partition_fields"]] == ["kind"]
    assert [s["fields"] for s in body["earlier_specs"]] == [[]]
    # The commits-per-day chart counts the versions the list shows.
    assert body["activity"]["counted"] == body["version_count"] == 2
    with browser(world, ARCO_TOKEN) as client:
        assert 'data-testid="nested-note"' in client.get("/catalogs/main").text
        page = client.get("/tables/main.deep.inner.evolved")
        assert page.status_code == 200 and 'data-testid="earlier-specs"' in page.text


def test_a_huge_property_or_comment_is_cut_to_what_a_page_can_lay_out(world: dict) -> None:
    catalog = RestCatalog("admin", uri=world["server"].iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    catalog.create_table("db.wordy", SCHEMA, properties={"blob": "x" * 1_000_000})
    assert uc(world["server"], ARCO_TOKEN, "PATCH", "/tables/main.db.wordy",
              json={"comment": "c" * 200_000}).status_code == 200
    with browser(world, ARCO_TOKEN) as client:
        page = client.get("/tables/main.db.wordy")
    assert page.status_code == 200 and len(page.text) < 100_000
    assert "(1,000,000 characters; the API gives all of it)" in page.text
    assert "(200,000 characters; the API gives all of it)" in page.text
    whole = uc(world["server"], ARCO_TOKEN, "GET", "/tables/main.db.wordy").json()
    assert len(whole["properties"]["blob"]) == 1_000_000  # only the page is cut


def test_a_schema_page_lists_the_volumes_and_functions_the_caller_may_use(world: dict) -> None:
    server = world["server"]
    assert uc(server, ARCO_TOKEN, "POST", "/volumes", json={
        "name": "landing_files", "catalog_name": "main", "schema_name": "db", "volume_type": "MANAGED",
        "comment": "raw drops"}).status_code == 200
    made = uc(server, ARCO_TOKEN, "POST", "/functions", json={"function_info": {
        "name": "add_one", "catalog_name": "main", "schema_name": "db", "data_type": "INT", "full_data_type": "int",
        "input_params": {"parameters": [{"name": "x", "type_text": "int", "type_name": "INT", "position": 0,
                                         "type_json": '{"type":"int"}'}]},
        "routine_body": "SQL", "routine_definition": "x + 1", "parameter_style": "S", "is_deterministic": True,
        "sql_data_access": "CONTAINS_SQL", "is_null_call": False, "security_type": "DEFINER",
        "specific_name": "add_one"}})
    assert made.status_code == 200, made.text
    with browser(world, ARCO_TOKEN) as client:
        page = client.get("/catalogs/main/db")
    volumes = page.text.split('data-testid="volumes"', 1)[1].split("</table>", 1)[0]
    functions = page.text.split('data-testid="functions"', 1)[1].split("</table>", 1)[0]
    assert "landing_files" in volumes and "MANAGED" in volumes and "raw drops" in volumes
    assert "add_one" in functions and "<td>int</td>" in functions
    with browser(world, world["tokens"]["ann@x.com"]) as client:  # ann holds neither READ_VOLUME nor EXECUTE
        page = client.get("/catalogs/main/db")
    assert page.status_code == 200 and "landing_files" not in page.text and "add_one" not in page.text
    assert admin_api(world, "/catalogs/main/db").json()["volumes"][0]["name"] == "landing_files"


def test_a_page_asked_with_a_trailing_slash_is_the_page_without_it(world: dict) -> None:
    with browser(world, ARCO_TOKEN) as client:
        moved = client.get("/catalogs/main/db/?page_token=x", follow_redirects=False)
        assert moved.status_code == 308 and moved.headers["location"] == "/catalogs/main/db?page_token=x"
        assert client.get("/tables/main.db.people/", follow_redirects=True).status_code == 200
        assert client.get("/catalogs/", follow_redirects=False).status_code == 404
