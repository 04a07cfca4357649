"""The refusal of a capability that reads the `.ai/` layer when the checkout has none.

A checkout is the top level of the Git work tree containing the working directory, or that directory itself
outside Git. Without an `.ai/` folder there, nothing a layer query answers would mean anything (an empty plan
would read as a valid one), so such a query is `NotFound` (404 over HTTP, a tool error over MCP, exit 10 on
the command line) with one message naming what is missing and what to do. The message names the checkout by
its directory name only, never by its path.
"""

from __future__ import annotations

from svc._errors import NotFound
from svc.layer._repository import Repository

__all__ = ["require_layer"]


def require_layer(repo: Repository) -> None:
    """Return when `repo` carries an `.ai/` folder.

    Raises:
        NotFound: it has none; the message says whether the directory is inside a Git checkout.
    """
    if repo.has_layer:
        return
    if repo.git_dir is None:
        raise NotFound(
            f"there is no .ai/ layer to read: {repo.name}/ is not inside a Git checkout and has no .ai/ folder; "
            "run svc inside a checkout that has one (or name it with --repo)"
        )
    raise NotFound(
        f"there is no .ai/ layer to read: the checkout {repo.name}/ has no .ai/ folder at its top level; "
        "create .ai/manifest.yaml (schema: ai-repository/v1) to start one, or run svc in a checkout that has one"
    )
