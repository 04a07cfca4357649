"""The command line as data: every command's words, texts and parameters, and the module that declares it.

`describe_cli(registry)` derives the description from the registry's command tree (`svc.surfaces.cli_tree`),
with each help text written for the command line (`cli_terms`). `svc generate` writes it into the package as
`svc/cli/commands.json` (and `--check` compares it), and `load_description` reads that file, so a command line
is built without importing a single capability module: a command imports the one module that declares its
capability when it runs. A source tree without the file (or with an unreadable one) derives the description
from the registry instead.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from svc.surfaces._cli_model import CliParameter

if TYPE_CHECKING:
    from svc.registry import Registry

__all__ = [
    "DESCRIPTION_FILE",
    "CliDescription",
    "CliEntry",
    "CliGroup",
    "describe_cli",
    "encode_description",
    "load_description",
]

#: The description as the package ships it, next to this module.
DESCRIPTION_FILE = Path(__file__).with_name("commands.json")


class CliGroup(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A group of commands that runs nothing itself (`svc mesh review`)."""

    words: list[str]
    help: str
    short_help: str


class CliEntry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One runnable command.

    A capability command names its `capability` and the Python module that declares it (`declared_in`);
    `direct` when that capability is a read of the checkout alone, answered with no event loop (unless one of
    its `live` fields is given: then the serving server answers). An
    infrastructure command names its options Struct (`options`). `group` when other commands sit under its
    words (`svc plan` runs `plan.model` and holds `svc plan next`).
    """

    words: list[str]
    help: str
    short_help: str
    parameters: list[CliParameter] = msgspec.field(default_factory=list)
    capability: str | None = None
    declared_in: str | None = None
    direct: bool = False
    live: list[str] = msgspec.field(default_factory=list)
    verdict: str | None = None
    preset: dict[str, Any] | None = None
    options: str | None = None
    group: bool = False


class CliDescription(msgspec.Struct, frozen=True, kw_only=True):
    """The whole command line: the options of `svc` itself, the groups and the commands, sorted by words."""

    options: list[CliParameter]
    groups: list[CliGroup]
    commands: list[CliEntry]


#: The end of a sentence: a full stop and a space, not the one of an abbreviation (`e.g.`, `i.e.`).
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\.\s")


def _lower_first(text: str) -> str:
    """`text` with its first letter in lower case, unless it starts an acronym (`MCP`)."""
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text


def _short_help(description: str) -> str:
    """The first sentence of a group's description, up to its first colon: what the group is about."""
    sentence = _SENTENCE_END.split(description, maxsplit=1)[0].rstrip(".")
    head, colon, _ = sentence.partition(": ")
    return (head if colon else sentence) + "."


def describe_cli(registry: Registry) -> CliDescription:
    """The description of the command line over `registry`."""
    from svc.cli._terms import cli_terms
    from svc.surfaces import cli_tree, global_options

    def terms(text: str) -> str:
        return cli_terms(text, lambda: registry)

    tree = cli_tree(registry)
    prefixes = {tuple(c.words[:i]) for c in tree for i in range(1, len(c.words))}
    commands: list[CliEntry] = []
    for spec in tree:
        group = tuple(spec.words) in prefixes
        if spec.options is not None:
            projection = (
                f"\n\nThe command-line projection of the capability {spec.capability}." if spec.capability else ""
            )
            commands.append(
                CliEntry(
                    words=spec.words,
                    help=f"{spec.summary}\n\n{spec.help}{projection}",
                    short_help=spec.summary,
                    parameters=spec.parameters,
                    options=spec.options,
                )
            )
            continue
        assert spec.capability is not None
        cap = registry.by_id[spec.capability]
        about = terms(cap.description)
        text = f"{spec.summary}.\n\n{about}\n\nRuns the capability {cap.id}."
        module = registry.module_by_id.get(spec.words[0]) if group and len(spec.words) == 1 else None
        if module is not None:
            # A group of its own (`svc plan`): what the group is about first, then what it answers alone. Its short
            # help stays the capability's title, as the generated reference lists it.
            alone = f"`svc {spec.words[0]}` alone answers {_lower_first(spec.summary)}: {_lower_first(about)}"
            text = f"{terms(module.description)}\n\n{alone}\n\nRuns the capability {cap.id}."
        commands.append(
            CliEntry(
                words=spec.words,
                help=text,
                short_help=spec.summary,
                parameters=spec.parameters,
                capability=cap.id,
                declared_in=cap.source_path.removeprefix("src/").removesuffix(".py").replace("/", "."),
                direct=cap.read is not None and not cap.cli_remote,
                live=list(cap.live),
                verdict=cap.cli_verdict,
                preset=spec.preset,
                group=group,
            )
        )
    runnable = {tuple(c.words): c for c in commands}
    described: dict[tuple[str, ...], CliGroup] = {}
    for words in sorted(prefixes - set(runnable), key=len, reverse=True):
        module = registry.module_by_id.get(words[0]) if len(words) == 1 else None
        if module is not None:
            about = terms(module.description)
            described[words] = CliGroup(words=list(words), help=about, short_help=_short_help(about))
            continue
        # A group no module describes (`svc mesh review`) says what its commands do, in the order they are listed.
        children = sorted({c.words[len(words)] for c in tree if tuple(c.words[: len(words)]) == words})
        under = [(runnable.get((*words, w)) or described[(*words, w)]).short_help.rstrip(".") for w in children]
        parts = [under[0], *map(_lower_first, under[1:])]
        listed = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"
        described[words] = CliGroup(words=list(words), help=f"{listed}.", short_help=f"{listed}.")
    groups = [described[words] for words in sorted(described)]
    return CliDescription(options=global_options(), groups=groups, commands=commands)


def encode_description(description: CliDescription) -> bytes:
    """The file `svc generate` writes: indented JSON, one trailing newline."""
    return msgspec.json.format(msgspec.json.encode(description), indent=1) + b"\n"


def load_description() -> CliDescription:
    """The description the package ships, else (no file, or one that does not decode) the registry's own."""
    try:
        return msgspec.json.decode(DESCRIPTION_FILE.read_bytes(), type=CliDescription)
    except (OSError, msgspec.DecodeError):
        from svc.capabilities import builtin_registry

        return describe_cli(builtin_registry())
