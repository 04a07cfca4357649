"""The cockpit's registry pages on a real server: the filtered list, one page per capability, the query form.

Pairs with `src/svc/api/cockpit/_registry.py`. Every fact a page shows is compared with the JSON the same
server answers on `/api/v1` in the same test.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import httpx
import msgspec
import pytest
import trio
from msgspec import Meta

from svc.api.cockpit import PAGE_HEADERS
from svc.api.cockpit._registry import (
    SEARCH_LIMIT,
    constraints,
    example_url,
    form_controls,
    schema_table,
    type_parts,
)
from svc.capabilities import builtin_capabilities, builtin_modules
from svc.registry import Capability, Example, Exposure, HttpExposure, McpExposure, Module, Registry, build_registry
from svc.runtime import Context
from tests.api._page_tree import Element, parse
from tests.api.conftest import open_executor, serving
from tests.conftest import ROOT

HTML = {"Accept": "text/html"}


async def page(client: httpx.AsyncClient, path: str, status: int = 200, **params: Any) -> Element:
    """A page asked for as a browser does, checked for its status, type and headers."""
    r = await client.get(path, params=params, headers=HTML)
    assert r.status_code == status, (path, params, r.text[:2000])
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    for name, value in PAGE_HEADERS.items():
        assert r.headers[name] == value
    assert str(ROOT) not in r.text
    return parse(r.text)


async def api(client: httpx.AsyncClient, path: str, **params: Any) -> Any:
    r = await client.get(path, params=params)
    assert r.status_code == 200, r.text
    return r.json()


def listed(doc: Element) -> list[str]:
    """The ids of the list page's rows, in order."""
    return [str(row.attrs["data-capability"]) for row in doc.find_all("tr", data_capability=True)]


def error_message(doc: Element) -> str:
    return doc.one("p", class_="svc-callout").text


def assert_unique_ids(doc: Element) -> None:
    ids = [str(n.attrs["id"]) for n in doc.iter() if "id" in n.attrs]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


# -- the list --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/cockpit", "/cockpit/capabilities"])
async def test_the_list_shows_every_capability_as_the_api_lists_it(client: httpx.AsyncClient, path: str) -> None:
    everything = await api(client, "/api/v1/capabilities")
    doc = await page(client, path)
    assert_unique_ids(doc)
    assert doc.one("a", aria_current="page").attrs["href"] == "/cockpit"
    assert listed(doc) == [c["id"] for c in everything["capabilities"]]
    assert len(listed(doc)) == everything["count"] == everything["summary"]["total"]
    for cap in everything["capabilities"]:
        row = doc.one("tr", data_capability=cap["id"])
        cells = [c for c in row.children if isinstance(c, Element)]
        assert [c.tag for c in cells] == ["th", "td", "td", "td", "td", "td", "td"]
        assert cells[0].one("a").attrs["href"] == f"/cockpit/capabilities/{cap['id']}"
        assert cells[1].text == cap["title"]
        assert cells[2].text == cap["kind"]
        assert cells[3].text == cap["module"]
        assert cells[4].text == cap["stability"]
        exposure = cells[5].text
        if "http" in cap["exposure"]:
            assert f"HTTP {cap['exposure']['http']['method']} {cap['exposure']['http']['path']}" in exposure
        if cap["exposure"].get("mcp", {}).get("tool"):
            assert f"MCP {cap['exposure']['mcp']['tool']}" in exposure
        if cap["exposure"].get("cli"):
            assert "CLI svc " + " ".join(cap["exposure"]["cli"]) in exposure
        else:
            assert "CLI" not in exposure
        assert cells[6].text == cap["execution"]["effect"]
    assert doc.by_id("registry-count").text == f"Showing {everything['count']} of {everything['summary']['total']}."
    kinds = {li.one("span").text: int(li.text.split()[-1]) for li in doc.by_id("registry-tally-kind").find_all("li")}
    assert kinds == {k: n for k, n in everything["summary"]["by_kind"].items() if n}
    stabilities = doc.by_id("registry-tally-stability").find_all("li")
    assert {li.one("span").text: int(li.text.split()[-1]) for li in stabilities} == everything["summary"][
        "by_stability"
    ]


async def test_the_filter_form_has_a_labelled_control_for_every_filter(client: httpx.AsyncClient) -> None:
    openapi = await api(client, "/openapi.json")
    schemas = openapi["components"]["schemas"]
    everything = await api(client, "/api/v1/capabilities")
    doc = await page(client, "/cockpit")
    form = doc.by_id("registry-filters")
    assert form.attrs["method"] == "get"
    assert form.attrs["action"] == "/cockpit/capabilities"
    labels = {str(label.attrs["for"]) for label in form.find_all("label")}
    controls = {str(n.attrs["name"]): n for n in form.iter() if n.tag in ("select", "input")}
    assert set(controls) == {"kind", "module", "exposure", "stability", "search"}
    assert labels == {str(n.attrs["id"]) for n in controls.values()}

    def options(name: str) -> list[str]:
        return [str(o.attrs["value"]) for o in controls[name].find_all("option")]

    assert options("kind") == ["", *schemas["ListInput"]["properties"]["kind"]["anyOf"][0]["enum"]]
    assert options("exposure") == ["", *schemas["ListInput"]["properties"]["exposure"]["anyOf"][0]["enum"]]
    assert options("stability") == ["", *schemas["CapabilityView"]["properties"]["stability"]["enum"]]
    assert options("module") == ["", *sorted({c["module"] for c in everything["capabilities"]})]


@pytest.mark.parametrize("name", ["kind", "exposure"])
async def test_the_kind_and_exposure_filters_are_the_apis_own(client: httpx.AsyncClient, name: str) -> None:
    openapi = await api(client, "/openapi.json")
    values = openapi["components"]["schemas"]["ListInput"]["properties"][name]["anyOf"][0]["enum"]
    for value in values:
        expected = await api(client, "/api/v1/capabilities", **{name: value})
        doc = await page(client, "/cockpit/capabilities", **{name: value})
        assert listed(doc) == [c["id"] for c in expected["capabilities"]], value
        selected = doc.by_id(f"filter-{name}").one("option", selected=True)
        assert selected.attrs["value"] == value
        if not expected["capabilities"]:
            assert "No capability matches" in doc.by_id("registry-empty").text


async def test_module_stability_and_search_narrow_the_apis_answer(client: httpx.AsyncClient) -> None:
    everything = (await api(client, "/api/v1/capabilities"))["capabilities"]
    for module in sorted({c["module"] for c in everything}):
        doc = await page(client, "/cockpit/capabilities", module=module)
        assert listed(doc) == [c["id"] for c in everything if c["module"] == module]
    for stability in sorted({c["stability"] for c in everything}):
        doc = await page(client, "/cockpit/capabilities", stability=stability)
        assert listed(doc) == [c["id"] for c in everything if c["stability"] == stability]
    for text in ("PLAN", "writes the repository", "svc://"):
        doc = await page(client, "/cockpit/capabilities", search=text)
        needle = text.casefold()
        expected = [
            c["id"] for c in everything if any(needle in c[k].casefold() for k in ("id", "title", "description"))
        ]
        assert expected, text
        assert listed(doc) == expected, text
        assert doc.by_id("filter-search").attrs["value"] == text
    commands = await api(client, "/api/v1/capabilities", kind="command")
    doc = await page(client, "/cockpit/capabilities", kind="command", module="plan", exposure="")
    assert (
        listed(doc)
        == [c["id"] for c in commands["capabilities"] if c["module"] == "plan"]
        == [
            "plan.take",
            "plan.transition",
        ]
    )
    doc = await page(client, "/cockpit/capabilities", kind="", module="", exposure="", stability="", search=" ")
    assert listed(doc) == [c["id"] for c in everything]
    doc = await page(client, "/cockpit/capabilities", search="no capability says this")
    assert listed(doc) == []
    assert doc.by_id("registry-count").text == f"Showing 0 of {len(everything)} (filtered)."


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"kind": "bogus"}, ["unknown kind 'bogus'", "command, query, resource"]),
        ({"exposure": "smoke"}, ["unknown exposure 'smoke'", "cli, http, mcp"]),
        ({"stability": "solid"}, ["unknown stability 'solid'", "experimental", "implemented"]),
        ({"module": "nowhere"}, ["unknown module 'nowhere'", "capabilities", "plan"]),
        ({"colour": "red"}, ["unknown parameter 'colour'", "kind, module, exposure, stability, search"]),
        ({"search": "x" * (SEARCH_LIMIT + 1)}, [f"at most {SEARCH_LIMIT}"]),
        ({"kind": ["query", "command"]}, ["'kind' is given more than once"]),
    ],
)
async def test_a_bad_filter_answers_a_400_page_naming_what_is_allowed(
    client: httpx.AsyncClient, params: dict[str, Any], words: list[str]
) -> None:
    doc = await page(client, "/cockpit/capabilities", status=400, **params)
    message = error_message(doc)
    for word in words:
        assert word in message, message
    assert "invalid_input" in doc.one("h1").text


async def test_hostile_query_text_is_shown_escaped(client: httpx.AsyncClient) -> None:
    hostile = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    r = await client.get("/cockpit/capabilities", params={"search": hostile}, headers=HTML)
    assert r.status_code == 200
    assert "<script>alert" not in r.text
    assert "<img src=x" not in r.text
    assert parse(r.text).by_id("filter-search").attrs["value"] == hostile
    r = await client.get("/cockpit/capabilities", params={"module": hostile}, headers=HTML)
    assert r.status_code == 400
    assert "<script>alert" not in r.text
    assert "<img src=x" not in r.text
    assert hostile in error_message(parse(r.text))


# -- one capability --------------------------------------------------------------------------------------


def component(schemas: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    name = ref["$ref"].rsplit("/", 1)[1]
    found: dict[str, Any] = schemas[name]
    return found


def enum_of(prop: dict[str, Any]) -> list[str] | None:
    if "enum" in prop:
        return [str(v) for v in prop["enum"]]
    for member in prop.get("anyOf", ()):
        if "enum" in member:
            return [str(v) for v in member["enum"]]
    return None


def types_of(prop: dict[str, Any]) -> set[str]:
    found = {prop["type"]} if isinstance(prop.get("type"), str) else set()
    for member in prop.get("anyOf", ()):
        found |= types_of(member)
    return found


@pytest.mark.parametrize("cap_id", ["plan.issues", "executions.list", "mesh.state", "capabilities.projections"])
async def test_a_query_page_shows_every_input_field_and_a_form_that_runs_it(
    client: httpx.AsyncClient, cap_id: str
) -> None:
    cap = await api(client, "/api/v1/capability", id=cap_id)
    schemas = (await api(client, "/openapi.json"))["components"]["schemas"]
    fields = component(schemas, cap["input"]["schema"])
    doc = await page(client, f"/cockpit/capabilities/{cap_id}")
    assert_unique_ids(doc)
    assert doc.by_id("capability-title").text == cap["title"]
    assert doc.by_id("capability-id").text == cap_id
    table = doc.by_id("schema-input")
    assert [r.attrs["data-field"] for r in table.find_all("tr", data_field=True)] == list(fields["properties"])
    for name, prop in fields["properties"].items():
        cells = [c for c in table.one("tr", data_field=name).children if isinstance(c, Element)]
        assert cells[4].text == prop.get("description", "")
        assert cells[2].text == ("required" if name in fields["required"] else f"default {json.dumps(prop['default'])}")

    form = doc.by_id("capability-query")
    assert form.tag == "form"
    assert "data-svc-query" in form.attrs
    assert form.attrs["action"] == cap["exposure"]["http"]["path"]
    assert form.attrs["method"] == "get"
    controls = [n for n in form.iter() if n.tag in ("select", "input")]
    assert [c.attrs["name"] for c in controls] == list(fields["properties"])
    labels = {str(label.attrs["for"]) for label in form.find_all("label")}
    assert labels == {str(c.attrs["id"]) for c in controls}
    for control in controls:
        prop = fields["properties"][str(control.attrs["name"])]
        enum = enum_of(prop)
        if enum is not None:
            assert control.tag == "select"
            assert [o.attrs["value"] for o in control.find_all("option")] == ["", *enum]
        elif "integer" in types_of(prop):
            assert control.attrs["type"] == "number"
            assert control.attrs["step"] == "1"
        elif "boolean" in types_of(prop):
            assert control.tag == "select"
            assert [o.attrs["value"] for o in control.find_all("option")] == ["", "true", "false"]
        else:
            assert control.attrs["type"] == "text"
    assert form.one(None, data_svc_status=True).attrs["role"] == "status"
    answer = form.one("pre", data_svc_answer=True)
    assert "hidden" in answer.attrs
    form.one("button", type="submit")


async def test_the_form_runs_the_query_as_its_route_answers(client: httpx.AsyncClient) -> None:
    # What the script sends (the form's action and its non-empty fields) is the capability's own answer.
    doc = await page(client, "/cockpit/capabilities/plan.issues")
    form = doc.by_id("capability-query")
    assert "READY" in [o.attrs["value"] for o in doc.by_id("query-field-status").find_all("option")]
    answer = await client.get(str(form.attrs["action"]), params={"status": "READY"})
    assert answer.status_code == 200
    assert answer.json() == await api(client, "/api/v1/plan/issues", status="READY")


async def test_every_capability_page_has_a_form_exactly_when_it_is_a_reading_query(client: httpx.AsyncClient) -> None:
    everything = (await api(client, "/api/v1/capabilities"))["capabilities"]
    for cap in everything:
        doc = await page(client, f"/cockpit/capabilities/{cap['id']}")
        assert_unique_ids(doc)
        forms = doc.find_all("form")
        reading = cap["kind"] == "query" and cap["execution"]["effect"] == "read"
        if reading:
            (form,) = forms
            assert form.attrs["action"] == cap["exposure"]["http"]["path"]
        else:
            assert forms == [], cap["id"]
            note = doc.by_id("capability-no-form").text
            if cap["kind"] == "command":
                assert "commands run over MCP or the command line" in note
        assert doc.by_id("capability-title").text == cap["title"]
        for name, expected in (("http", cap["exposure"].get("http")), ("mcp", cap["exposure"].get("mcp"))):
            shown = doc.find_all("code", data_surface=name)
            if name == "http":
                assert [c.text for c in shown] == ([f"{expected['method']} {expected['path']}"] if expected else [])
            else:
                tool = (expected or {}).get("tool")
                assert [c.text for c in shown] == ([tool] if tool else [])
        resource = cap["exposure"].get("mcp", {}).get("resource")
        assert [c.text for c in doc.find_all("code", data_surface="mcp-resource")] == (
            [resource["uri"]] if resource else []
        )
        cli = cap["exposure"].get("cli")
        assert [c.text for c in doc.find_all("code", data_surface="cli")] == (["svc " + " ".join(cli)] if cli else [])
        presets = [c.text for c in doc.find_all("code", data_surface="cli-preset")]
        assert presets == ["svc " + " ".join(p["words"]) for p in cap["exposure"].get("cli_presets", [])]


async def test_the_description_is_shown_whole(client: httpx.AsyncClient) -> None:
    everything = (await api(client, "/api/v1/capabilities"))["capabilities"]
    longest = max(everything, key=lambda c: len(c["description"]))
    for cap in (longest, *everything[:5]):
        doc = await page(client, f"/cockpit/capabilities/{cap['id']}")
        shown = doc.by_id("capability-description").text
        assert shown == " ".join(cap["description"].replace("`", "").split()), cap["id"]
        assert shown.endswith(" ".join(cap["description"].replace("`", "").split()[-3:]))


async def test_plan_transition_shows_no_form_and_says_why(client: httpx.AsyncClient) -> None:
    cap = await api(client, "/api/v1/capability", id="plan.transition")
    doc = await page(client, "/cockpit/capabilities/plan.transition")
    assert doc.find_all("form") == []
    assert doc.find_all(None, data_svc_query=True) == []
    note = doc.by_id("capability-no-form").text
    assert "commands run over MCP or the command line" in note
    assert "executions started over HTTP are followed on their pages" in note
    assert "writes the repository" in note
    facts = doc.by_id("capability-facts")
    pairs = dict(zip((d.text for d in facts.find_all("dt")), (d.text for d in facts.find_all("dd")), strict=True))
    assert pairs["Kind"] == "command"
    assert pairs["Effect"] == cap["execution"]["effect"] == "repository_mutation"
    assert pairs["Concurrency"] == cap["execution"]["concurrency"]
    assert pairs["Cancellable"] == ("yes" if cap["execution"]["cancellable"] else "no")
    assert pairs["Benchmark"].startswith(cap["benchmark"]["policy"])
    assert pairs["Cache"] == cap["cache"]["policy"]
    assert pairs["Tags"] == ", ".join(cap["tags"])
    assert pairs["Availability"] == cap["availability"]
    assert pairs["Stability"] == cap["stability"]
    # The input is shown even where the page does not run it, and the examples without a link.
    input_rows = doc.by_id("schema-input").find_all("tr", data_field=True)
    assert [r.attrs["data-field"] for r in input_rows] == ["issue", "transition"]
    examples = doc.by_id("capability-examples")
    assert [r.attrs["data-example"] for r in examples.find_all("tr", data_example=True)] == [
        e["name"] for e in cap["examples"]
    ]
    assert examples.find_all("a") == []


async def test_the_schemas_are_field_tables_with_referenced_types_one_level_down(client: httpx.AsyncClient) -> None:
    schemas = (await api(client, "/openapi.json"))["components"]["schemas"]
    doc = await page(client, "/cockpit/capabilities/plan.issues")
    output = doc.by_id("schema-output")
    issues_type = [c for c in output.one("tr", data_field="issues").children if isinstance(c, Element)][1]
    assert issues_type.text == "array of PlanIssue"
    assert issues_type.one("a").attrs["href"] == "#schema-PlanIssue"
    issue = doc.by_id("schema-table-PlanIssue")
    assert [r.attrs["data-field"] for r in issue.find_all("tr", data_field=True)] == list(
        schemas["PlanIssue"]["properties"]
    )
    assert doc.by_id("schema-PlanVocabulary").one("h3").text == "PlanVocabulary"
    # A union of components (plan.record's output) names its members, each shown as a referenced type.
    doc = await page(client, "/cockpit/capabilities/plan.record")
    members = [a.attrs["href"] for a in doc.one("p", data_variants="schema-output").find_all("a")]
    assert members == ["#schema-PlanMilestoneRecord", "#schema-PlanIssueRecord"]
    doc.by_id("schema-table-PlanIssueRecord")
    raw = doc.by_id("schema-raw")
    assert raw.tag == "details"
    assert len(raw.find_all("pre")) == 2


async def test_examples_link_to_their_answer_when_the_page_runs_the_query(client: httpx.AsyncClient) -> None:
    for cap_id in ("objects.get", "deploy.get", "commands.list"):
        cap = await api(client, "/api/v1/capability", id=cap_id)
        doc = await page(client, f"/cockpit/capabilities/{cap_id}")
        table = doc.by_id("capability-examples")
        for example in cap["examples"]:
            row = table.one("tr", data_example=example["name"])
            cells = [c for c in row.children if isinstance(c, Element)]
            assert cells[3].text == str(example.get("status", 200))
            links = row.find_all("a", data_example_link=True)
            if example.get("status", 200) >= 400:
                assert links == []
                continue
            (link,) = links
            href = str(link.attrs["href"])
            assert href == example_url(cap["exposure"]["http"]["path"], example)
            r = await client.get(href)
            assert r.status_code == 200, (href, r.text)
            assert r.json() == await api(client, cap["exposure"]["http"]["path"], **example.get("input", {}))


async def test_an_unknown_capability_is_a_404_page(client: httpx.AsyncClient) -> None:
    doc = await page(client, "/cockpit/capabilities/no.such", status=404)
    assert "not_found" in doc.one("h1").text
    assert "no.such" in error_message(doc)
    r = await client.get("/cockpit/capabilities/no.such")
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"


async def _check_links(client: httpx.AsyncClient, path: str) -> int:
    """Ask for every link, stylesheet and script of the page once; a fragment must name an element of it."""
    r = await client.get(path, headers=HTML)
    assert r.status_code == 200
    doc = parse(r.text)
    ids = {str(n.attrs["id"]) for n in doc.iter() if "id" in n.attrs}
    targets = [str(a.attrs["href"]) for a in doc.find_all("a", href=True)]
    targets += [str(n.attrs["href"]) for n in doc.find_all("link", href=True)]
    targets += [str(n.attrs["src"]) for n in doc.find_all("script", src=True)]
    checked = 0
    for href in dict.fromkeys(targets):
        if href.startswith("#"):
            assert href[1:] in ids, (path, href)
            continue
        parts = urlsplit(href)
        assert (parts.scheme, parts.netloc) == ("", ""), href
        answer = await client.get(href, headers=HTML)
        assert answer.status_code < 400, (path, href, answer.status_code)
        checked += 1
    return checked


@pytest.mark.bound(120)
async def test_every_link_of_the_list_and_of_three_capability_pages_answers(client: httpx.AsyncClient) -> None:
    everything = await api(client, "/api/v1/capabilities")
    assert await _check_links(client, "/cockpit") > everything["count"]
    for cap_id in ("plan.issues", "plan.transition", "objects.get"):
        assert await _check_links(client, f"/cockpit/capabilities/{cap_id}") > 0


# -- the pieces ------------------------------------------------------------------------------------------

COMPONENTS: dict[str, Any] = {
    "Thing": {
        "title": "Thing",
        "description": "a thing",
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$"},
            "flag": {"type": "boolean", "default": False, "description": "on or off"},
            "ratio": {"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "null"}], "default": None},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3, "default": []},
            "parts": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}},
            "index": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Part"}},
            "mode": {"enum": ["a", "b"], "default": "a"},
            "count": {"type": "integer", "minimum": 1, "maximum": 9},
            "blob": {},
        },
        "required": ["name", "count"],
    },
    "Part": {"title": "Part", "type": "object", "properties": {"x": {"$ref": "#/components/schemas/Deep"}}},
    "Deep": {"title": "Deep", "type": "object", "properties": {}},
    "Either": {"anyOf": [{"$ref": "#/components/schemas/Part"}, {"$ref": "#/components/schemas/Deep"}]},
}


def test_a_schema_becomes_a_field_table() -> None:
    table = schema_table({"$ref": "#/components/schemas/Thing"}, COMPONENTS)
    assert table.name == "Thing"
    assert table.description == "a thing"
    rows = {f.name: f for f in table.fields}
    assert list(rows) == list(COMPONENTS["Thing"]["properties"])
    assert rows["name"].required
    assert rows["count"].required
    assert not rows["flag"].required
    assert rows["name"].constraints == ("length ≥ 1", "length ≤ 8", "pattern ^[a-z]+$")
    assert rows["flag"].default == "false"
    assert rows["ratio"].default == "null"
    assert rows["name"].default is None
    assert rows["ratio"].type == (("number", None), (" | ", None), ("null", None))
    assert rows["ratio"].constraints == ("> 0",)
    assert rows["tags"].constraints == ("items ≤ 3", "each length ≤ 4")
    assert rows["parts"].type == (("array of ", None), ("Part", "Part"))
    assert rows["index"].type == (("map of ", None), ("Part", "Part"))
    assert rows["mode"].type == (("string", None),)
    assert rows["mode"].constraints == ("one of a, b",)
    assert rows["blob"].type == (("any", None),)
    assert table.refs == ("Part",)  # one level: Part's own Deep is not followed
    union = schema_table({"$ref": "#/components/schemas/Either"}, COMPONENTS)
    assert union.variants == ("Part", "Deep")
    assert union.fields == ()
    assert union.refs == ("Part", "Deep")
    inline = schema_table({"type": "array", "items": {"$ref": "#/components/schemas/Deep"}}, COMPONENTS)
    assert inline.name is None
    assert inline.shape == (("array of ", None), ("Deep", "Deep"))
    assert inline.refs == ("Deep",)


def test_types_and_constraints_read_as_words() -> None:
    assert type_parts({"type": ["string", "null"]}) == (("string", None), (" | ", None), ("null", None))
    assert type_parts({"const": 3}) == (("3", None),)
    assert type_parts({"enum": [1, 2]}) == (("integer", None),)
    assert type_parts({"type": "array"}) == (("array", None),)
    assert constraints({"enum": [1, None], "format": "date-time", "uniqueItems": True}) == (
        "one of 1, null",
        "format date-time",
        "unique items",
    )


def test_the_form_has_a_control_per_field() -> None:
    controls = {c.name: c for c in form_controls({"$ref": "#/components/schemas/Thing"}, COMPONENTS)}
    assert list(controls) == list(COMPONENTS["Thing"]["properties"])
    assert (controls["flag"].widget, controls["flag"].options, controls["flag"].default) == (
        "select",
        ("true", "false"),
        "false",
    )
    assert (controls["mode"].widget, controls["mode"].options, controls["mode"].default) == ("select", ("a", "b"), "a")
    count = controls["count"]
    assert (count.widget, count.step, count.minimum, count.maximum, count.required) == ("number", "1", "1", "9", True)
    assert (controls["ratio"].widget, controls["ratio"].step, controls["ratio"].default) == ("number", "any", None)
    assert (controls["tags"].widget, controls["tags"].array, controls["tags"].default) == ("text", True, None)
    assert (controls["name"].widget, controls["name"].required) == ("text", True)


def test_an_example_url_carries_its_input_as_query_parameters() -> None:
    assert example_url("/api/v1/x", {"name": "all"}) == "/api/v1/x"
    assert (
        example_url("/api/v1/x", {"input": {"a": True, "b": None, "c": ["p", "q"], "d": 2, "e": "svc://k/i@1"}})
        == "/api/v1/x?a=true&c=p&c=q&d=2&e=svc%3A%2F%2Fk%2Fi%401"
    )
    assert re.fullmatch(r"/api/v1/x\?u=[^/]*", example_url("/api/v1/x", {"input": {"u": "a/b"}}))


# -- hostile text ----------------------------------------------------------------------------------------

HOSTILE = '"><img src=x onerror=alert(1)><script>alert(2)</script>'


class HostileInput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Input whose descriptions and values carry markup."""

    text: Annotated[str | None, Meta(description=HOSTILE)] = None
    mode: Literal['"><b>bold</b>', "plain"] = "plain"


async def _echo(ctx: Context, params: HostileInput) -> HostileInput:
    return params


def hostile_registry() -> Registry:
    """svc's registry with one more capability whose every text carries markup."""
    module = Module(id="hostile", title=HOSTILE, description=HOSTILE)
    cap = Capability(
        id="hostile.echo",
        module="hostile",
        title=f"Echo {HOSTILE}",
        description=f"{HOSTILE} and **more** <b>raw</b>",
        input=HostileInput,
        output=HostileInput,
        handler=_echo,
        examples=(Example(name="markup", input={"text": HOSTILE}, description=HOSTILE),),
        exposure=Exposure(http=HttpExposure(method="GET", path="/api/v1/hostile"), mcp=McpExposure(tool="svc_hostile")),
    )
    return build_registry((*builtin_modules(), module), (*builtin_capabilities(), cap))


async def test_hostile_text_of_a_capability_is_escaped_everywhere(nursery: trio.Nursery) -> None:
    async with (
        open_executor(hostile_registry(), ROOT) as executor,
        serving(executor, nursery) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        for path, params in (
            ("/cockpit", {}),
            ("/cockpit/capabilities", {"module": "hostile"}),
            ("/cockpit/capabilities", {"search": "alert"}),
            ("/cockpit/capabilities/hostile.echo", {}),
        ):
            r = await client.get(path, params=params, headers=HTML)
            assert r.status_code == 200, r.text
            for raw in ("<script>", "<img", "<b>"):
                assert raw not in r.text, (path, raw)
        doc = parse(r.text)
        assert doc.by_id("capability-title").text == f"Echo {HOSTILE}"
        assert HOSTILE in doc.by_id("capability-description").text
        assert doc.by_id("capability-description").one("strong").text == "more"
        field = doc.by_id("schema-input").one("tr", data_field="text")
        assert HOSTILE in field.text
        options = [o.attrs["value"] for o in doc.by_id("query-field-mode").find_all("option")]
        assert options == ["", '"><b>bold</b>', "plain"]
        example = doc.by_id("capability-examples").one("tr", data_example="markup")
        assert HOSTILE in example.text
        link = str(example.one("a").attrs["href"])
        answer = await client.get(link)
        assert answer.json() == {"text": HOSTILE, "mode": "plain"}


async def test_serving_builds_no_schema_a_capability_page_does() -> None:
    registry = build_registry(builtin_modules(), builtin_capabilities())
    with trio.fail_after(60):
        async with (
            open_executor(registry, ROOT) as executor,
            trio.open_nursery() as nursery,
            serving(executor, nursery) as url,
            httpx.AsyncClient(base_url=url) as client,
        ):
            assert "schemas" not in vars(registry)
            page = await client.get("/cockpit/capabilities/plan.next")
            assert page.status_code == 200
            assert "schemas" in vars(registry)
