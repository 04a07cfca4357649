"""`design.*`: svc's own design system (`design.system`) and whether its colours can be read (`design.contrast`).

Both read only svc's share (package data, or the directory `SVC_SHARE` names), never the supervised
repository, in a worker thread; neither is cached (the answer is cheap and the share may be overridden).
"""

from __future__ import annotations

import trio

from svc.layer import ContrastReport, DesignReport, design_contrast, design_system
from svc.registry import Declarations, Example, McpResource, Module, NoInput
from svc.runtime import Context

MODULE = Module(
    id="design",
    title="Design system",
    description=(
        "svc's own design system: one declaration of the colours (roles and statuses, light and dark), type "
        "scale, layout, radii, motion and theme contract every svc page wears, and whether the colours its "
        "stylesheets put on a ground can be read (WCAG 2.1 AA)."
    ),
)


async def system(ctx: Context, params: NoInput) -> DesignReport:
    """The declaration, fingerprinted (500 when it is missing or inconsistent)."""
    return await trio.to_thread.run_sync(design_system)


async def contrast(ctx: Context, params: NoInput) -> ContrastReport:
    """Every pair the stylesheets state, measured in both themes (500 when a share file is missing)."""
    return await trio.to_thread.run_sync(design_contrast)


declare = Declarations[Context](MODULE, source=__name__)

CAPABILITIES = (
    declare.query(
        "system",
        title="The design system",
        description=(
            "svc's design declaration (svc/share/design/tokens.yaml): its fingerprint (SHA-256 of the "
            "declaration's compact JSON) and `design` (its first 12 hex digits, the stamp tokens.css carries as "
            "--svc-design), the schema, the identity, the type stacks, the theme contract with the one pre-paint "
            "bootstrap statement, the audit widths, how many tokens of each kind, and the files derived from it "
            "(where svc serves them). An inconsistent or missing declaration is 500 naming the first problem."
        ),
        input=NoInput,
        output=DesignReport,
        handler=system,
        examples=(Example(name="default"),),
        http="GET /api/v1/design",
        tool="svc_design",
        resource=McpResource(uri="svc://design", name="design"),
    ),
    declare.query(
        "contrast",
        title="Whether the design's colours can be read",
        description=(
            "Every foreground svc's stylesheets (base.css, kit.css, cockpit.css) put on a ground, resolved "
            "through the declaration and measured in the light and the dark theme against WCAG 2.1 AA: 4.5:1 for text "
            "(enforced), 3:1 for borders and outlines (reported). A rule that sets a colour and a background "
            "states a pair; a colour alone lands on every ground a container sets; a badge is measured on its "
            "own status's ground. `findings` names every text pair below 4.5:1 (role, palette entries, values, "
            "theme, ratio, where it was read) and `readable` is true when there is none. A missing share file "
            "is 500 naming it."
        ),
        input=NoInput,
        output=ContrastReport,
        handler=contrast,
        examples=(Example(name="default"),),
        http="GET /api/v1/design/contrast",
        tool="svc_design_contrast",
    ),
)
