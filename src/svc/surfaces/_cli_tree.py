"""The command tree of `svc` as data: the CLI is built from it, and so is its generated reference.

Every command's parameters are derived from one msgspec Struct (`msgspec.inspect.type_info`): a capability
command's from the capability's input, an infrastructure command's (`generate`, `mcp`, `run`, `serve`, see
`_commands.py`) from its options Struct. A required field is a positional argument (declaration order), every
other field an option `--name` (underscores become dashes) whose help is the field's description. A boolean is
a `--name/--no-name` flag on a capability command (absent means "not given", as over HTTP) and a switch
`--name` on an infrastructure command. Capability commands add `--json`, and those whose readable view
summarises a large answer (`plan`, `plan validate`, `plan waves`) add `--all`: both shape the output, neither is
an input.

A field's metadata may say more (`Meta(extra=...)`): `metavar` names its value (`KEY` for a positional
argument, `JSON` for an option); `switch` makes an optional field a switch `--<value>` that sets it to that
value (`svc mesh claim --advisory` sets `mode` to `advisory`; absent means "not given"), `switch_help` being
its help. An array field takes each value as one item: a positional array is the last argument and takes one
or more (`PATH...`), an optional one is an option given once per item.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import inspect as mi

from svc.registry._text_kinds import array_kinds, text_kinds
from svc.surfaces._cli_model import VERSION_OPTION, CliCommand, CliParameter, ParameterKind
from svc.surfaces._commands import INFRASTRUCTURE, InfrastructureCommand, SvcOptions

if TYPE_CHECKING:
    from svc.registry._declaration import Capability
    from svc.registry._registry import Registry

__all__ = ["VERSION_OPTION", "CliCommand", "CliParameter", "cli_tree", "global_options", "resolve", "struct_parameters"]

_JSON = CliParameter(name="--json", kind="boolean", help="print the answer as JSON (the HTTP body's bytes)")
_ALL = CliParameter(name="--all", kind="boolean", help="show every item instead of a summary (the readable view only)")
#: Capabilities whose readable view summarises a large answer: their commands take the rendering option `--all`.
_SUMMARISED = frozenset({"plan.model", "plan.validate", "plan.waves"})


def struct_parameters(
    tp: type[msgspec.Struct], *, fixed: Iterable[str] = (), switches: bool = False
) -> list[CliParameter]:
    """The parameters of a command whose values decode into `tp` (fields in `fixed` excepted).

    With `switches`, a boolean is a switch `--name`, which must default to false; without, `--name/--no-name`.

    Raises:
        TypeError: a switch that does not default to false, a `switch` on a required field, or a positional
            array that is not the last positional argument.
    """
    info = mi.type_info(tp)
    assert isinstance(info, mi.StructType)
    kinds = text_kinds(tp)
    arrays = array_kinds(tp)
    skip = set(fixed)
    out: list[CliParameter] = []
    positional_array = False
    for fld in info.fields:
        name = fld.encode_name
        if name in skip:
            continue
        meta = fld.type if isinstance(fld.type, mi.Metadata) else None
        described = (meta.extra_json_schema or {}) if meta is not None else {}
        extra = (meta.extra or {}) if meta is not None else {}
        multiple = name in arrays
        kind: ParameterKind = extra.get("kind", arrays[name] if multiple else kinds[name])
        literal = _non_null(meta.type if meta is not None else fld.type)
        choices = [str(v) for v in literal.values] if isinstance(literal, mi.LiteralType) else None
        common: dict[str, Any] = {
            "field": name,
            "kind": kind,
            "choices": choices,
            "multiple": multiple,
            "help": str(described.get("description", "")),
        }
        if fld.required:
            if "switch" in extra:
                raise TypeError(f"{tp.__name__}.{name}: a required field cannot be a switch")
            if positional_array:
                raise TypeError(f"{tp.__name__}.{name}: a positional array must be the last positional argument")
            positional_array = multiple
            shown = str(extra.get("metavar", name.upper())) + ("..." if multiple else "")
            out.append(CliParameter(name=shown, positional=True, required=True, **common))
            continue
        common["metavar"] = extra.get("metavar")
        default = _default(fld)
        if "switch" in extra:
            value = str(extra["switch"])
            shown_help = str(extra.get("switch_help", common["help"]))
            switch = {**common, "kind": "boolean", "choices": None, "help": shown_help}
            out.append(CliParameter(name=f"--{value}", sets=value, **switch))
            continue
        flag = "--" + name.replace("_", "-")
        if kind == "boolean" and switches:
            if default is not False:
                raise TypeError(f"{tp.__name__}.{name}: a switch must default to false")
            out.append(CliParameter(name=flag, **common))
        else:
            out.append(CliParameter(name=flag, negatable=kind == "boolean", default=default, **common))
    return out


def _default(fld: mi.Field) -> Any:
    if fld.default is not msgspec.NODEFAULT:
        return msgspec.to_builtins(fld.default)
    if fld.default_factory in (list, dict, set, bytearray):
        return msgspec.to_builtins(fld.default_factory())
    return None


def _non_null(tp: mi.Type) -> mi.Type:
    """The one non-null member of an optional type (itself when it is not one)."""
    if isinstance(tp, mi.UnionType):
        rest = [t for t in tp.types if not isinstance(t, mi.NoneType)]
        if len(rest) == 1:
            tp = rest[0]
    return tp.type if isinstance(tp, mi.Metadata) else tp


def _parameters(cap: Capability, fixed: Iterable[str] = ()) -> list[CliParameter]:
    rendering = [_ALL] if cap.id in _SUMMARISED else []
    return [*struct_parameters(cap.input, fixed=fixed), *rendering, _JSON]


def _infrastructure(spec: InfrastructureCommand) -> CliCommand:
    return CliCommand(
        words=list(spec.words),
        summary=spec.summary,
        help=spec.help,
        capability=spec.capability,
        options=spec.options.__name__,
        parameters=struct_parameters(spec.options, switches=True),
    )


def global_options() -> list[CliParameter]:
    """The options of `svc` itself: `--version`, then those of `SvcOptions`."""
    return [VERSION_OPTION, *struct_parameters(SvcOptions, switches=True)]


def cli_tree(registry: Registry) -> list[CliCommand]:
    """Every runnable command, sorted by its words.

    An infrastructure command that projects a capability is listed when the registry has that capability,
    and it then takes that capability's words (`svc run` is `executions.start` on the command line).

    Raises:
        ValueError: two commands have the same words.
    """
    commands = [
        _infrastructure(spec) for spec in INFRASTRUCTURE if spec.capability is None or spec.capability in registry.by_id
    ]
    taken = {tuple(c.words): c.capability for c in commands}

    def add(command: CliCommand) -> None:
        words = tuple(command.words)
        if words in taken:
            raise ValueError(f"two commands are `svc {' '.join(words)}`")
        taken[words] = command.capability
        commands.append(command)

    for cap in registry.capabilities:
        if cap.exposure.cli and taken.get(tuple(cap.exposure.cli), "") != cap.id:
            add(
                CliCommand(
                    words=list(cap.exposure.cli),
                    summary=cap.title,
                    capability=cap.id,
                    parameters=_parameters(cap),
                )
            )
        for preset in cap.exposure.cli_presets:
            add(
                CliCommand(
                    words=list(preset.words),
                    summary=preset.summary,
                    capability=cap.id,
                    preset=dict(preset.input),
                    parameters=_parameters(cap, fixed=preset.input),
                )
            )
    return sorted(commands, key=lambda c: c.words)


def resolve(tree: list[CliCommand], words: tuple[str, ...] | list[str]) -> CliCommand | None:
    """The command with exactly these words, or None."""
    wanted = list(words)
    return next((c for c in tree if c.words == wanted), None)
