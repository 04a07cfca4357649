"""The registry for a person: every capability in a filtered table, and one page per capability.

`GET /cockpit` (also `/cockpit/capabilities`) lists the answer of `capabilities.list`: `kind` and `exposure`
are that capability's own filters; `module`, `stability` and a text `search` over id, title and description
narrow its answer further. `GET /cockpit/capabilities/<id>` shows the answer of `capabilities.describe`: the
description whole, the facts, the names on every surface, the input and output schemas as field tables (read
from the registry's OpenAPI components, the referenced types one level down), the examples, and for a query
that reads a form that runs it over `/api/v1`. A command gets no form: commands run over MCP or the command
line.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode

import msgspec
from quart import Response, request
from quart_trio import QuartTrio

from svc._errors import InvalidInput
from svc.api.cockpit._render import Cockpit
from svc.registry import CapabilityView

__all__ = [
    "FILTER_NAMES",
    "SEARCH_LIMIT",
    "Control",
    "Field",
    "Filters",
    "SchemaTable",
    "allowed_values",
    "constraints",
    "example_url",
    "form_controls",
    "parse_filters",
    "routes",
    "schema_table",
    "type_parts",
]

#: The list page's query parameters, in the order the filter form shows them.
FILTER_NAMES = ("kind", "module", "exposure", "stability", "search")
#: The longest `search` text accepted.
SEARCH_LIMIT = 200
_REF_PREFIX = "#/components/schemas/"
#: A piece of a rendered type: its text, and the component it names (a link) or None.
TypePart = tuple[str, str | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    """The list page's filters; None where the page was not asked to filter."""

    kind: str | None = None
    module: str | None = None
    exposure: str | None = None
    stability: str | None = None
    search: str | None = None

    def params(self, **changes: str | None) -> dict[str, str | None]:
        """The filters as query parameters, with `changes` applied (for a link that adds or drops one)."""
        values: dict[str, str | None] = {name: getattr(self, name) for name in FILTER_NAMES}
        values.update(changes)
        return values

    @property
    def active(self) -> bool:
        """Whether any filter is set."""
        return any(getattr(self, name) is not None for name in FILTER_NAMES)


@dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    """One property of an object schema, as a row of a field table."""

    name: str
    type: tuple[TypePart, ...]
    required: bool
    #: The default as JSON text; None when the schema declares none.
    default: str | None
    constraints: tuple[str, ...]
    description: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SchemaTable:
    """A schema for a person: its fields when it is an object, its variants when it is one of several types."""

    #: The component name, or None for a schema written in place.
    name: str | None
    description: str
    fields: tuple[Field, ...]
    #: The component names of a union's members (`anyOf` / `oneOf` of references).
    variants: tuple[str, ...]
    #: The type when the schema is neither an object nor a union of components.
    shape: tuple[TypePart, ...]
    #: The component names its fields (or variants) refer to.
    refs: tuple[str, ...]
    raw: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Control:
    """One control of a query's form: a top-level input field."""

    name: str
    widget: Literal["select", "number", "text"]
    #: A select's values (the empty "default" choice is added by the template when the field is optional).
    options: tuple[str, ...]
    required: bool
    #: The default as the text a query parameter would carry; None when there is none (or it is null).
    default: str | None
    step: str | None
    minimum: str | None
    maximum: str | None
    #: The field is an array: the control sends one value.
    array: bool
    description: str


# -- filters ---------------------------------------------------------------------------------------------


def _enum(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """The enum values of a schema (or of its non-null `anyOf` member), as text."""
    if "enum" in schema:
        return tuple(str(v) for v in schema["enum"])
    for member in schema.get("anyOf", ()):
        if isinstance(member, Mapping) and "enum" in member:
            return tuple(str(v) for v in member["enum"])
    return ()


def _literal_values(struct: type[msgspec.Struct], name: str) -> tuple[str, ...]:
    """The values a `Literal` field of `struct` takes, sorted (as its JSON Schema lists them)."""
    info = msgspec.inspect.type_info(struct)
    if not isinstance(info, msgspec.inspect.StructType):
        return ()
    for field in info.fields:
        if field.name == name and isinstance(field.type, msgspec.inspect.LiteralType):
            return tuple(sorted(str(v) for v in field.type.values))
    return ()


def allowed_values(listing: Mapping[str, Any], modules: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """What each select filter accepts.

    Kinds and surfaces as `capabilities.list` takes them (`listing` is its input schema), the stabilities a
    capability may declare, and the modules of the registry.
    """
    properties = listing.get("properties", {})
    return {
        "kind": _enum(properties.get("kind", {})),
        "module": tuple(sorted(set(modules))),
        "exposure": _enum(properties.get("exposure", {})),
        "stability": _literal_values(CapabilityView, "stability"),
    }


def parse_filters(items: Iterable[tuple[str, str]], allowed: Mapping[str, tuple[str, ...]]) -> Filters:
    """The filters of the list page's query parameters; an empty value is no filter.

    Raises:
        InvalidInput: an unknown parameter, one given twice, a value outside the allowed ones (the message
            names them), or a search longer than `SEARCH_LIMIT`.
    """
    values: dict[str, str] = {}
    for name, text in items:
        if name not in FILTER_NAMES:
            raise InvalidInput(f"unknown parameter {name!r} (parameters of this page: {', '.join(FILTER_NAMES)})")
        if name in values:
            raise InvalidInput(f"parameter {name!r} is given more than once")
        values[name] = text
    chosen: dict[str, str] = {}
    for name, text in values.items():
        text = text.strip()
        if not text:
            continue
        if name == "search":
            if len(text) > SEARCH_LIMIT:
                raise InvalidInput(f"search is {len(text)} characters long; at most {SEARCH_LIMIT} are accepted")
        elif text not in allowed[name]:
            raise InvalidInput(f"unknown {name} {text!r}: one of {', '.join(allowed[name])}")
        chosen[name] = text
    return Filters(**chosen)


def _matches(cap: Mapping[str, Any], filters: Filters) -> bool:
    if filters.module is not None and cap["module"] != filters.module:
        return False
    if filters.stability is not None and cap["stability"] != filters.stability:
        return False
    if filters.search is not None:
        needle = filters.search.casefold()
        return any(needle in str(cap[key]).casefold() for key in ("id", "title", "description"))
    return True


# -- schemas ---------------------------------------------------------------------------------------------


def _ref_name(schema: Mapping[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
        return ref[len(_REF_PREFIX) :]
    return None


def _join(parts: Iterable[tuple[TypePart, ...]], separator: str) -> tuple[TypePart, ...]:
    out: list[TypePart] = []
    for i, piece in enumerate(parts):
        if i:
            out.append((separator, None))
        out.extend(piece)
    return tuple(out)


def type_parts(schema: Any) -> tuple[TypePart, ...]:
    """The type of a schema as a person reads it (`array of PlanIssue`, `string | null`), components named."""
    if not isinstance(schema, Mapping):
        return (("any", None),)
    name = _ref_name(schema)
    if name is not None:
        return ((name, name),)
    for key in ("anyOf", "oneOf"):
        members = schema.get(key)
        if isinstance(members, list) and members:
            return _join((type_parts(m) for m in members), " | ")
    if "const" in schema:
        return ((json.dumps(schema["const"]), None),)
    kind = schema.get("type")
    if isinstance(kind, list):
        return _join((type_parts({**schema, "type": k}) for k in kind), " | ")
    if kind == "array":
        items = schema.get("items")
        return (("array of ", None), *type_parts(items)) if isinstance(items, Mapping) and items else (("array", None),)
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return (("map of ", None), *type_parts(extra))
        return (("object", None),)
    if isinstance(kind, str):
        return ((kind, None),)
    if "enum" in schema:
        values = schema["enum"]
        if all(isinstance(v, str) for v in values):
            return (("string", None),)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return (("integer", None),)
        return (("enum", None),)
    return (("any", None),)


_BOUNDS = (
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "length ≥ {}"),
    ("maxLength", "length ≤ {}"),
    ("minItems", "items ≥ {}"),
    ("maxItems", "items ≤ {}"),
    ("minProperties", "entries ≥ {}"),
    ("maxProperties", "entries ≤ {}"),
    ("multipleOf", "multiple of {}"),
    ("format", "format {}"),
    ("pattern", "pattern {}"),
)


def constraints(schema: Any, prefix: str = "") -> tuple[str, ...]:
    """The constraints a value of `schema` must meet, in words (an array's items' too, as `each ...`)."""
    if not isinstance(schema, Mapping):
        return ()
    out: list[str] = []
    if "enum" in schema:
        out.append(
            prefix + "one of " + ", ".join(json.dumps(v) if not isinstance(v, str) else v for v in schema["enum"])
        )
    out.extend(prefix + words.format(schema[key]) for key, words in _BOUNDS if key in schema)
    if schema.get("uniqueItems") is True:
        out.append(prefix + "unique items")
    for key in ("anyOf", "oneOf"):
        for member in schema.get(key, ()):
            if isinstance(member, Mapping) and member != {"type": "null"}:
                out.extend(constraints(member, prefix))
    items = schema.get("items")
    if schema.get("type") == "array" and isinstance(items, Mapping) and not prefix:
        out.extend(constraints(items, "each "))
    return tuple(dict.fromkeys(out))


def _refs(schema: Any, found: dict[str, None]) -> None:
    """Collect the component names a schema refers to (not following them)."""
    if isinstance(schema, Mapping):
        name = _ref_name(schema)
        if name is not None:
            found[name] = None
        for value in schema.values():
            _refs(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _refs(value, found)


def schema_table(schema: Mapping[str, Any], components: Mapping[str, Any]) -> SchemaTable:
    """`schema` (a reference, a union of references, or a schema written in place) as a field table."""
    name = _ref_name(schema)
    resolved: Mapping[str, Any] = components[name] if name is not None else schema
    found: dict[str, None] = {}
    fields: list[Field] = []
    variants: tuple[str, ...] = ()
    shape: tuple[TypePart, ...] = ()
    members = resolved.get("anyOf") or resolved.get("oneOf")
    properties = resolved.get("properties")
    if isinstance(properties, Mapping):
        required = set(resolved.get("required", ()))
        for field_name, prop in properties.items():
            _refs(prop, found)
            fields.append(
                Field(
                    name=field_name,
                    type=type_parts(prop),
                    required=field_name in required,
                    default=json.dumps(prop["default"]) if "default" in prop else None,
                    constraints=constraints(prop),
                    description=str(prop.get("description", "")),
                )
            )
    elif isinstance(members, list) and members and all(_ref_name(m) is not None for m in members):
        variants = tuple(n for m in members if (n := _ref_name(m)) is not None)
        found.update(dict.fromkeys(variants))
    else:
        shape = type_parts(resolved)
        _refs(resolved, found)
    found.pop(name or "", None)
    return SchemaTable(
        name=name,
        description=str(resolved.get("description", "")),
        fields=tuple(fields),
        variants=variants,
        shape=shape,
        refs=tuple(found),
        raw=resolved,
    )


def _first_kind(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, str) and kind != "null":
        return kind
    if isinstance(kind, list):
        return next((k for k in kind if k != "null"), None)
    for member in schema.get("anyOf", ()):
        if isinstance(member, Mapping):
            found = _first_kind(member)
            if found is not None:
                return found
    return None


def _bound(schema: Mapping[str, Any], key: str) -> str | None:
    if key in schema:
        return str(schema[key])
    for member in schema.get("anyOf", ()):
        if isinstance(member, Mapping) and key in member:
            return str(member[key])
    return None


def _query_text(value: Any) -> str:
    """A value as the text of a query parameter (booleans as `true`/`false`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def form_controls(input_schema: Mapping[str, Any], components: Mapping[str, Any]) -> tuple[Control, ...]:
    """One control per top-level field of a query's input.

    A select for enums and booleans, a number input for numbers, text otherwise (an array field sends the one
    value its text input holds).
    """
    name = _ref_name(input_schema)
    resolved: Mapping[str, Any] = components[name] if name is not None else input_schema
    required = set(resolved.get("required", ()))
    controls: list[Control] = []
    for field_name, prop in resolved.get("properties", {}).items():
        kind = _first_kind(prop)
        options = _enum(prop)
        widget: Literal["select", "number", "text"] = "text"
        step = None
        if options:
            widget = "select"
        elif kind == "boolean":
            widget, options = "select", ("true", "false")
        elif kind in ("integer", "number"):
            widget, step = "number", ("1" if kind == "integer" else "any")
        default = prop.get("default")
        controls.append(
            Control(
                name=field_name,
                widget=widget,
                options=options,
                required=field_name in required,
                default=None if default is None or isinstance(default, (list, dict)) else _query_text(default),
                step=step,
                minimum=_bound(prop, "minimum") if widget == "number" else None,
                maximum=_bound(prop, "maximum") if widget == "number" else None,
                array=kind == "array",
                description=str(prop.get("description", "")),
            )
        )
    return tuple(controls)


# -- pages -----------------------------------------------------------------------------------------------


def example_url(path: str, example: Mapping[str, Any]) -> str:
    """The GET URL that runs an example (a null field is no parameter; an array repeats its parameter)."""
    params: list[tuple[str, str]] = []
    for key, value in example.get("input", {}).items():
        if isinstance(value, list):
            params.extend((key, _query_text(v)) for v in value)
        elif value is not None:
            params.append((key, _query_text(value)))
    return f"{path}?{urlencode(params)}" if params else path


def _runs_here(cap: Mapping[str, Any]) -> bool:
    """Whether the page may run the capability: a query that only reads, on a GET route."""
    http = cap["exposure"].get("http")
    return (
        cap["kind"] == "query" and cap["execution"]["effect"] == "read" and http is not None and http["method"] == "GET"
    )


def _why_no_form(cap: Mapping[str, Any]) -> str:
    effect = cap["execution"]["effect"]
    if cap["kind"] == "command":
        reason = (
            "This is a command: commands run over MCP or the command line; executions started over HTTP are "
            "followed on their pages."
        )
        if effect == "repository_mutation":
            reason += " It writes the repository, which HTTP never does."
        return reason
    if cap["kind"] == "resource":
        return "This is an MCP resource: it is read over MCP by its URI."
    if effect != "read":
        return f"It changes {effect.replace('_', ' ')}: only queries that read run from this page."
    return "It has no GET route to run it from this page."


def _facts(cap: Mapping[str, Any]) -> list[tuple[str, str]]:
    execution = cap["execution"]
    cache = cap["cache"]
    cache_words = cache["policy"]
    if "max_entries" in cache:
        cache_words += f", at most {cache['max_entries']} entries"
    if "ttl_seconds" in cache:
        cache_words += f", {cache['ttl_seconds']:g} s"
    benchmark = cap["benchmark"]
    bench_words = benchmark["policy"]
    if "reason" in benchmark:
        bench_words += f" ({benchmark['reason']})"
    if "when" in benchmark:
        bench_words += f": {benchmark['when']}"
    hints = [name.replace("_", " ") for name, on in execution["hints"].items() if on]
    return [
        ("Kind", cap["kind"]),
        ("Module", cap["module"]),
        ("Stability", cap["stability"]),
        ("Effect", execution["effect"]),
        ("Cancellable", "yes" if execution["cancellable"] else "no"),
        ("Concurrency", execution["concurrency"]),
        ("Confirmation", "asked" if execution["confirmation"] else "not asked"),
        ("Hints", ", ".join(hints) or "none"),
        ("Cache", cache_words),
        ("Benchmark", bench_words),
        ("Tags", ", ".join(cap.get("tags") or ()) or "none"),
        ("Availability", cap["availability"]),
        ("Visibility", cap["visibility"]),
        ("Provenance", f"{cap['provenance']['source']} ({cap['provenance']['module']})"),
    ]


def routes(app: QuartTrio, cockpit: Cockpit) -> None:
    """`GET /cockpit` and `/cockpit/capabilities` (the list), `GET /cockpit/capabilities/<id>` (one).

    The registry's schemas are read by the pages, not when they are mounted: built on first use, they are no
    part of a server's start.
    """

    @app.get("/cockpit")
    @app.get("/cockpit/capabilities")
    async def registry_page() -> Response:
        everything = await cockpit.ask("capabilities.list")
        listing = cockpit.registry.by_id["capabilities.list"]
        modules = (c["module"] for c in everything["capabilities"])
        allowed = allowed_values(cockpit.registry.input_schema(listing), modules)
        filters = parse_filters(request.args.items(multi=True), allowed)
        listed = everything
        if filters.kind is not None or filters.exposure is not None:
            listed = await cockpit.ask("capabilities.list", {"kind": filters.kind, "exposure": filters.exposure})
        shown = [c for c in listed["capabilities"] if _matches(c, filters)]
        return cockpit.render(
            "registry.html",
            section="registry",
            title="Registry",
            filters=filters,
            allowed=allowed,
            summary=everything["summary"],
            capabilities=shown,
            by_kind=sorted(Counter(c["kind"] for c in shown).items()),
            by_stability=sorted(Counter(c["stability"] for c in shown).items()),
            search_limit=SEARCH_LIMIT,
        )

    @app.get("/cockpit/capabilities/<cap_id>")
    async def capability_page(cap_id: str) -> Response:
        cap = await cockpit.ask("capabilities.describe", {"id": cap_id})
        components: Mapping[str, Any] = cockpit.registry.schemas.components
        input_table = schema_table(cap["input"]["schema"], components)
        output_table = schema_table(cap["output"]["schema"], components)
        referenced = dict.fromkeys((*input_table.refs, *output_table.refs))
        tables = [schema_table({"$ref": _REF_PREFIX + name}, components) for name in referenced]
        runs = _runs_here(cap)
        http = cap["exposure"].get("http")
        return cockpit.render(
            "capability.html",
            section="registry",
            title=cap["title"],
            cap=cap,
            description_html=cockpit.markdown_html(cap["description"]),
            facts=_facts(cap),
            input_table=input_table,
            output_table=output_table,
            tables=tables,
            shown=frozenset(referenced),
            runs=runs,
            why_no_form=None if runs else _why_no_form(cap),
            controls=form_controls(cap["input"]["schema"], components) if runs else (),
            example_links=[
                example_url(http["path"], e) if runs and http is not None and e.get("status", 200) < 400 else None
                for e in cap["examples"]
            ],
        )
