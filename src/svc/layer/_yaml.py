"""YAML as the `.ai/` layer writes it: timestamps and dates stay the text they were written as, no aliases.

Seals hash the stamp text, so a loader that turned `2026-09-04T02:54:00Z` into a datetime would break every
seal. Integers, booleans and null resolve as usual.

Aliases (`*name`) are refused (`YamlAliases`): a 530-byte document of nested ten-fold aliases expands to
gigabytes, and nothing svc reads needs one. A text without a `*` cannot hold an alias and is loaded in one
pass of the C loader; a text with one is first scanned event by event (nothing is expanded) and refused at
its first alias.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["YamlAliases", "YamlError", "dump_yaml", "load_yaml"]

YamlError = yaml.YAMLError

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlAliases(yaml.YAMLError):
    """The document uses an alias, which svc does not read."""

    def __init__(self, line: int) -> None:
        super().__init__(f"uses YAML aliases, which svc does not read (line {line})")
        self.line = line


class _TextStampLoader(_Base):  # type: ignore[misc]
    """A safe loader without the implicit timestamp resolver."""


_TextStampLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _Base.yaml_implicit_resolvers.items()
}


def load_yaml(text: str | bytes) -> Any:
    """Parse one YAML document, keeping timestamps as text.

    Raises:
        YamlAliases: the document uses an alias.
        YamlError: the text is not YAML.
    """
    if ("*" in text) if isinstance(text, str) else (b"*" in text):
        for event in yaml.parse(text, Loader=_Base):
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                raise YamlAliases(mark.line + 1 if mark is not None else 0)
    return yaml.load(text, Loader=_TextStampLoader)


def dump_yaml(data: Any) -> str:
    """Render data as deterministic block YAML (key order kept, UTF-8, no aliases)."""
    return yaml.dump(
        data,
        Dumper=_NoAliasDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1000,
    )


class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True
