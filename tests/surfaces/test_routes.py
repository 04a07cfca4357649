"""The server's own routes are one table, and every list of them reads it.

Pairs with `src/svc/surfaces/_routes.py`.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from svc.api._http import PAGE_PATHS, PAGE_PREFIXES
from svc.api._pages import HomeDocument, home_document
from svc.api._server import SERVED
from svc.capabilities import builtin_registry
from svc.layer import Repository
from svc.runtime import Generation, Runtime
from svc.surfaces import SERVER_ROUTES, render_openapi, server_route

#: The spec's "Server routes", in its order.
SPEC_ROUTES = ["/", "/api/v1", "/openapi.json", "/swagger", "/mcp", "/events", "/cockpit", "/docs/"]


@pytest.fixture
def runtime(checkout: Path) -> Runtime:
    repo = Repository.discover(checkout)
    return Runtime(registry=builtin_registry(), repository=repo, generation=Generation(repo, stamp=b""), surface="http")


def test_the_table_holds_the_spec_routes_in_order_each_once() -> None:
    assert [r.path for r in SERVER_ROUTES] == SPEC_ROUTES
    assert {r.method for r in SERVER_ROUTES} == {"GET"}
    assert len({r.id for r in SERVER_ROUTES}) == len(SERVER_ROUTES)
    assert all(r.purpose and r.title for r in SERVER_ROUTES)
    for route in SERVER_ROUTES:
        assert server_route(route.id) is route
    with pytest.raises(KeyError):
        server_route("nope")


def test_the_openapi_document_lists_the_table_as_its_infrastructure() -> None:
    listed = render_openapi(builtin_registry())["x-svc"]["infrastructure"]
    assert listed == [{"method": r.method, "path": r.path, "purpose": r.purpose} for r in SERVER_ROUTES]


def test_the_home_page_offers_every_route_but_itself(runtime: Runtime) -> None:
    home = home_document(runtime, SERVED | {"events"})
    offered = [(s.id, s.title, s.path, s.category) for s in home.surfaces]
    assert offered == [(r.id, r.title, r.path, r.category) for r in SERVER_ROUTES if r.path != "/"]
    assert home.reference == server_route("api").path


def test_a_surface_is_ready_only_when_this_process_serves_it(runtime: Runtime) -> None:
    assert {r.id for r in SERVER_ROUTES} >= SERVED
    assert "cockpit" in SERVED
    (runtime.repository.root / "docs").mkdir(exist_ok=True)
    for served in (SERVED, SERVED - {"cockpit"}, SERVED | {"events"}):
        surfaces = home_document(runtime, served).surfaces
        assert {s.id: s.ready for s in surfaces} == {r.id: r.id in served for r in SERVER_ROUTES if r.path != "/"}
        assert {s.id: s.reason for s in surfaces if not s.ready} == {
            r.id: "not served by this process" for r in SERVER_ROUTES if r.path != "/" and r.id not in served
        }


def test_docs_is_not_ready_in_a_checkout_without_docs(runtime: Runtime, tmp_path: Path) -> None:
    bare = Runtime(
        registry=runtime.registry,
        repository=Repository.discover(tmp_path),
        generation=Generation(Repository.discover(tmp_path), stamp=b""),
        surface="http",
    )
    docs = {s.id: s for s in home_document(bare, SERVED).surfaces}["docs"]
    assert (docs.ready, docs.reason) == (False, "this checkout has no docs/ folder")
    (tmp_path / "docs").mkdir()
    docs = {s.id: s for s in home_document(bare, SERVED).surfaces}["docs"]
    assert (docs.ready, docs.reason) == (True, None)


def test_the_home_document_encodes_its_fields_in_the_spec_order(runtime: Runtime) -> None:
    encoded = msgspec.json.decode(msgspec.json.encode(home_document(runtime, SERVED)))
    assert list(encoded) == [f.name for f in msgspec.structs.fields(HomeDocument)]
    assert list(encoded)[:3] == ["name", "version", "commit"]
    assert encoded["name"] == "svc"
    assert [list(s) for s in encoded["surfaces"]] == [
        ["id", "title", "path", "category", "visibility", "kind", "ready", "reason"]
    ] * len(encoded["surfaces"])


def test_the_page_app_is_dispatched_every_route_but_the_mcp_mount() -> None:
    assert {"/", "/api/v1", "/openapi.json", "/swagger", "/events", "/cockpit", "/docs"} == PAGE_PATHS
    assert set(PAGE_PREFIXES) == {"/swagger/", "/cockpit/", "/docs/"}
    for route in SERVER_ROUTES:
        dispatched = route.path in PAGE_PATHS or route.path.startswith(PAGE_PREFIXES)
        assert dispatched is (route.category != "mcp"), route.path
