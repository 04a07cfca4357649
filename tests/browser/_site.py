"""The pages the browser tests visit: the navigation, and the first page each list links to.

The navigation is svc's own (`svc.api.cockpit.NAVIGATION`), so a page added to it is visited without a change
here. "The first page linked from a list" is found the way a person finds it: the first link in the list page's
`<main>` whose path starts with the item pages' prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from svc.api.cockpit import NAVIGATION
from tests.browser._watch import links

#: Every page of the navigation, by path.
NAVIGATION_PATHS = tuple(item.path for item in NAVIGATION)
HTML = {"Accept": "text/html"}


@dataclass(frozen=True)
class Listed:
    """A kind of item page: its name, the list page that links to it, and the prefix of its paths.

    `via` are the prefixes of the pages between the list and the item, each reached by its first link (the
    objects page lists kinds, each kind's page lists its objects).
    """

    name: str
    listed_on: str
    prefix: str
    via: tuple[str, ...] = ()


#: The item pages reached from each list of the navigation.
LISTED = (
    Listed("capability", "/cockpit", "/cockpit/capabilities/"),
    Listed("issue", "/cockpit/plan", "/cockpit/plan/issue?"),
    Listed("milestone", "/cockpit/plan", "/cockpit/plan/milestone?"),
    Listed("object", "/cockpit/objects", "/cockpit/object?", via=("/cockpit/objects?kind=",)),
    Listed("graph", "/cockpit/graphs", "/cockpit/graphs/"),
    Listed("command", "/cockpit/commands", "/cockpit/commands/"),
)


def path_of(url: str) -> str:
    """The path and query of a URL (what a test asks its server for)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def main_links(api: httpx.Client, path: str) -> list[str]:
    """The paths (with query) of every link inside the `<main>` of the page at `path`, in order."""
    answer = api.get(path, headers=HTML)
    assert answer.status_code == 200, f"{path} answered {answer.status_code}"
    body = answer.text
    start = body.find("<main")
    assert start >= 0, f"{path} has no <main>"
    end = body.find("</main>", start)
    return [path_of(url) for url in links(body[start:end], str(api.base_url))]


def first_link(api: httpx.Client, page: str, prefix: str) -> str:
    """The first link inside the `<main>` of `page` whose path starts with `prefix` (other than `page` itself)."""
    for path in main_links(api, page):
        if path.startswith(prefix) and path != page:
            return path
    raise AssertionError(f"{page} links no page starting {prefix!r}")


def first_linked(api: httpx.Client, listed: Listed) -> str:
    """The path of the first `listed` item page reached from its list page, through `via`."""
    page = listed.listed_on
    for prefix in (*listed.via, listed.prefix):
        page = first_link(api, page, prefix)
    return page


def start_demonstration(api: httpx.Client, *, steps: int, delay_ms: int) -> dict[str, object]:
    """Start `executions.demonstrate` over HTTP; its ExecutionView as answered (state queued)."""
    answer = api.post(
        "/api/v1/executions/start",
        json={"capability": "executions.demonstrate", "input": {"steps": steps, "delay_ms": delay_ms}},
    )
    assert answer.status_code in (200, 201, 202), answer.text
    view: dict[str, object] = answer.json()
    return view


def cockpit_link(view: dict[str, object]) -> str:
    """The execution's page (`links.cockpit`), as a path."""
    found = view.get("links")
    assert isinstance(found, dict), view
    assert isinstance(found.get("cockpit"), str), view
    return path_of(str(found["cockpit"]))


#: The main pages, by name (`main_pages` finds their paths).
MAIN_PAGES = (
    "home",
    "registry",
    "capability",
    "plan",
    "issue",
    "executions",
    "execution",
    "mesh",
    "objects",
    "object",
    "graphs",
    "graph",
    "commands",
    "docs",
)


def main_pages(api: httpx.Client) -> dict[str, str]:
    """The main pages by name: every section, and one item page of each list (one execution started for it)."""
    item = {listed.name: listed for listed in LISTED}
    execution = cockpit_link(start_demonstration(api, steps=1, delay_ms=0))
    return {
        "home": "/",
        "registry": "/cockpit",
        "capability": first_linked(api, item["capability"]),
        "plan": "/cockpit/plan",
        "issue": first_linked(api, item["issue"]),
        "executions": "/cockpit/executions",
        "execution": execution,
        "mesh": "/cockpit/mesh",
        "objects": "/cockpit/objects",
        "object": first_linked(api, item["object"]),
        "graphs": "/cockpit/graphs",
        "graph": first_linked(api, item["graph"]),
        "commands": "/cockpit/commands",
        "docs": "/docs/",
    }
