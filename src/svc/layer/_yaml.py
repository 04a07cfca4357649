"""YAML as the `.ai/` layer writes it: timestamps and dates stay the text they were written as.

Seals hash the stamp text, so a loader that turned `2026-09-04T02:54:00Z` into a datetime would break every
seal. Integers, booleans and null resolve as usual.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["YamlError", "dump_yaml", "load_yaml"]

YamlError = yaml.YAMLError

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _TextStampLoader(_Base):  # type: ignore[misc]
    """A safe loader without the implicit timestamp resolver."""


_TextStampLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _Base.yaml_implicit_resolvers.items()
}


def load_yaml(text: str | bytes) -> Any:
    """Parse one YAML document, keeping timestamps as text.

    Raises:
        YamlError: the text is not YAML.
    """
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
