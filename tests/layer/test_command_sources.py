"""The command graph's readers: the tool registry, the workflows (`just --dump` and the text), the cache.

The graph-wide rules (identity, order, checks, fingerprint) are tested here on hand-built contributions;
svc's own executable commands in `tests/surfaces/test_executable_commands.py`; the capabilities over every
surface in `tests/capabilities/test_commands.py`.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import msgspec
import pytest

from svc.layer._command_graph import (
    SCHEMA,
    CommandArgument,
    CommandAvailability,
    CommandExecution,
    CommandNode,
    CommandProjections,
    CommandProvenance,
    CommandValueSource,
    Contribution,
    assemble,
    command_id,
    command_index,
    fingerprint,
    machine_verdict,
    secrecy_of,
)
from svc.layer._command_sources import (
    CACHE,
    JUST_DUMP,
    TEXT_READER,
    load_command_graph,
    read_command_cache,
    read_tool_registry,
    read_workflows,
    refresh_command_graph,
    tool_nodes,
)
from svc.layer._share import SHARE_ENV

JUSTFILE = """\
# Build the site
[group('site')]
site:
    echo build

# Remove the build
[confirm]
clean:
    rm -rf public

deploy env target='web' *flags:
    echo {{env}}

alias d := deploy
"""

#: What `just --dump --dump-format json` prints for JUSTFILE (the fields the reading uses, and an absolute path).
DUMP = {
    "aliases": {"d": {"attributes": [], "name": "d", "target": "deploy"}},
    "assignments": {},
    "first": "site",
    "modules": {},
    "recipes": {
        "clean": {"attributes": ["confirm"], "doc": "Remove the build", "name": "clean", "parameters": []},
        "deploy": {
            "attributes": [],
            "doc": None,
            "name": "deploy",
            "parameters": [
                {"default": None, "export": False, "kind": "singular", "name": "env"},
                {"default": "web", "export": False, "kind": "singular", "name": "target"},
                {"default": None, "export": False, "kind": "star", "name": "flags"},
            ],
        },
        "site": {"attributes": [{"group": "site"}], "doc": "Build the site", "name": "site", "parameters": []},
        "_tidy": {"attributes": [], "doc": None, "name": "_tidy", "parameters": [], "private": True},
    },
    "source": "/home/someone/checkout/justfile",
}


def node(origin: str, path: list[str], **changes: object) -> CommandNode:
    """A small runnable node of `origin` (read-only, non-interactive), with `changes` applied."""
    built = CommandNode(
        id=command_id(origin, path),  # type: ignore[arg-type]
        origin=origin,  # type: ignore[arg-type]
        path=path,
        invocation=" ".join(["just" if origin == "workflow" else "svc", *path]),
        summary="s",
        runnable=True,
        arguments=[],
        execution=CommandExecution(origin=origin, argv=path),  # type: ignore[arg-type]
        effect="read_only",
        interactivity="non_interactive",
        stability="implemented",
        availability=CommandAvailability(available=True),
        provenance=CommandProvenance(declared_in="justfile"),
        projections=CommandProjections(docs="/docs/commands/"),
    )
    return msgspec.structs.replace(built, **changes)


def no_just_path(tmp_path: Path) -> str:
    """A search path without `just` on it (an empty directory)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return str(empty)


def fake_just(tmp_path: Path, dump: object, *, exit_code: int = 0) -> str:
    """A directory holding a `just` that prints `dump` for `--dump --dump-format json` (and fails otherwise)."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "dump.json").write_text(json.dumps(dump) if not isinstance(dump, str) else dump, encoding="utf-8")
    script = bin_dir / "just"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in *"--dump --dump-format json"*) ;; *) exit 2 ;; esac\n'
        f'cat "{bin_dir}/dump.json"\n'
        f"exit {exit_code}\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(bin_dir)


# Identity, policy and the assembly.


def test_identities_lower_case_each_word_and_replace_other_characters() -> None:
    assert command_id("executable", ["plan", "status"]) == "executable.plan.status"
    assert command_id("workflow", ["Site Build"]) == "workflow.site-build"
    assert command_id("workflow", ["a_b", "C.d"]) == "workflow.a-b.c-d"


def test_the_machine_verdict_names_each_reason() -> None:
    assert machine_verdict(runnable=True, effect="local_mutation", interactivity="non_interactive") is None
    assert "hang" in (machine_verdict(runnable=True, effect="read_only", interactivity="interactive") or "")
    assert "stopped" in (machine_verdict(runnable=True, effect="read_only", interactivity="long_running") or "")
    above = machine_verdict(runnable=True, effect="repository_mutation", interactivity="non_interactive")
    assert above == "effect repository_mutation is above the machine ceiling local_mutation"
    assert "groups" in (machine_verdict(runnable=False, effect="read_only", interactivity="non_interactive") or "")


@pytest.mark.parametrize(
    ("name", "placeholder", "expected"),
    [
        ("api_token", None, "secret"),
        ("password", None, "secret"),
        ("x", "API-KEY", "secret"),
        ("credential", None, "sensitive"),
        ("key", None, "sensitive"),
        ("author", None, "public"),
        ("monkey", None, "public"),
        ("path", "PATH", "public"),
    ],
)
def test_secrecy_is_read_from_whole_words(name: str, placeholder: str | None, expected: str) -> None:
    assert secrecy_of(name, placeholder) == expected


def test_the_assembly_sorts_checks_and_fingerprints() -> None:
    a = node("workflow", ["a_b"])
    b = node("workflow", ["a-b"])
    tool = node("tool", ["x"], projections=CommandProjections(docs="/", mcp="svc_x"))
    exe = node("executable", ["z"], projections=CommandProjections(docs="/", mcp="svc_x"))
    cycle = node("executable", ["y"], execution=CommandExecution(origin="workflow", argv=["y"]))
    secret = CommandArgument(
        name="token",
        positional=True,
        takes_value=True,
        required=True,
        variadic=False,
        global_=False,
        help="",
        source=CommandValueSource(kind="branch"),
        secrecy="secret",
    )
    leaky = node("executable", ["w"], arguments=[secret])
    graph = assemble(Contribution(nodes=(a, tool, b)), Contribution(nodes=(exe, cycle, leaky)))
    assert [n.id for n in graph.commands] == [
        "executable.w",
        "executable.y",
        "executable.z",
        "tool.x",
        "workflow.a-b",
        "workflow.a-b",
    ]
    assert [(d.severity, d.code, d.commands) for d in graph.diagnostics] == [
        ("error", "duplicate-command-id", ["workflow.a-b"]),
        ("error", "duplicate-mcp-projection", ["executable.z", "tool.x"]),
        ("error", "execution-cycle", ["executable.y"]),
        ("error", "secret-is-suggestible", ["executable.w"]),
    ]
    assert graph.schema == SCHEMA
    assert graph.fingerprint == fingerprint(graph.commands)
    assert len(graph.fingerprint) == 16
    assert int(graph.fingerprint, 16) >= 0


def test_the_fingerprint_is_over_the_schema_and_each_nodes_compact_json() -> None:
    import hashlib

    nodes = [node("executable", ["a"]), node("workflow", ["b"])]
    expected = hashlib.sha256(SCHEMA.encode() + b"".join(msgspec.json.encode(n) for n in nodes)).hexdigest()[:16]
    assert fingerprint(nodes) == expected
    assert fingerprint(nodes) != fingerprint(nodes[:1])


def test_the_index_filters_by_origin_effect_ceiling_and_search() -> None:
    graph = assemble(
        Contribution(
            nodes=(
                node("executable", ["plan", "status"], summary="Plan STATUS", tags=["Plan"]),
                node("executable", ["generate"], effect="repository_mutation"),
                node("workflow", ["clean"], effect="destructive"),
            )
        )
    )
    assert command_index(graph).total == 3
    assert [c.id for c in command_index(graph, effect="read_only").commands] == ["executable.plan.status"]
    assert [c.id for c in command_index(graph, effect="repository_mutation").commands] == [
        "executable.generate",
        "executable.plan.status",
    ]
    assert [c.id for c in command_index(graph, origin="workflow").commands] == ["workflow.clean"]
    assert [c.id for c in command_index(graph, search="pLaN sTaTuS").commands] == ["executable.plan.status"]
    assert command_index(graph, search="nothing like it").commands == []
    assert command_index(graph, search="nothing like it").total == 3


# The tool registry.


def test_the_tool_registry_maps_classes_syntax_and_requirements() -> None:
    read = tool_nodes(
        {
            "version": 1,
            "commands": [
                {"id": "check", "summary": "Check.", "class": "read-only", "requires_task": "required"},
                {"id": "checkpoint", "summary": "Record.", "class": "state-mutating", "syntax": "t checkpoint < b.md"},
                {"id": "init", "class": "generated-output-mutating", "syntax": "t init --scope <path>"},
                {"id": "later", "summary": "Newer.", "class": "network-mutating", "requires_repository": False},
                {"id": "hidden", "visibility": "internal"},
                {"summary": "no id"},
                "not a mapping",
            ],
        }
    )
    by_id = {n.id: n for n in read.nodes}
    assert list(by_id) == ["tool.check", "tool.checkpoint", "tool.init", "tool.later"]
    effects = ["read_only", "local_mutation", "repository_mutation", "repository_mutation"]
    assert [n.effect for n in by_id.values()] == effects
    assert by_id["tool.checkpoint"].interactivity == "interactive"
    assert by_id["tool.init"].interactivity == "non_interactive"
    assert by_id["tool.check"].availability.requires == ["repository", "layer", "task"]
    assert by_id["tool.later"].availability.requires == ["layer"]
    assert by_id["tool.check"].invocation == "svc check"
    assert by_id["tool.check"].projections.docs == "/commands/check/"
    assert by_id["tool.check"].projections.withheld == "no capability backs it; MCP and HTTP run capabilities only"
    assert by_id["tool.checkpoint"].projections.withheld == (
        "asks the person something; a request/response surface would hang"
    )
    assert by_id["tool.init"].summary == ""
    assert [(d.code, d.message) for d in read.diagnostics] == [
        ("tool-registry-unreadable", "svc/share/commands.yaml commands[5] has no string `id`"),
        ("tool-registry-unreadable", "svc/share/commands.yaml commands[6] has no string `id`"),
    ]


def test_a_registry_of_another_version_is_a_warning_and_is_still_read() -> None:
    read = tool_nodes({"version": 2, "commands": [{"id": "x", "summary": "X.", "class": "read-only"}]})
    assert [n.id for n in read.nodes] == ["tool.x"]
    assert [(d.severity, d.code) for d in read.diagnostics] == [("warning", "tool-registry-version")]
    assert "version 2" in read.diagnostics[0].message
    assert "no version" in tool_nodes({"commands": []}).diagnostics[0].message


def test_the_share_directory_comes_from_svc_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    share = tmp_path / "share"
    share.mkdir()
    monkeypatch.setenv(SHARE_ENV, str(share))
    assert read_tool_registry() == Contribution()
    (share / "commands.yaml").write_text("version: 1\ncommands:\n  - {id: x, summary: X}\n", encoding="utf-8")
    assert [n.id for n in read_tool_registry().nodes] == ["tool.x"]
    (share / "commands.yaml").write_text("version: 1\ncommands: [\n", encoding="utf-8")
    (broken,) = read_tool_registry().diagnostics
    assert (broken.severity, broken.code) == ("error", "tool-registry-unreadable")
    assert str(tmp_path) not in broken.message
    (share / "commands.yaml").write_text("- a list\n", encoding="utf-8")
    assert read_tool_registry().diagnostics[0].message == (
        "SVC_SHARE/commands.yaml is not a mapping with a `commands` list"
    )
    (share / "commands.yaml").unlink()
    (share / "commands.yaml").symlink_to("/etc/passwd")
    (outside,) = read_tool_registry().diagnostics
    assert outside.message == "SVC_SHARE/commands.yaml cannot be read: a symlink leaving the repository"
    monkeypatch.setenv(SHARE_ENV, str(tmp_path / "nowhere"))
    (missing,) = read_tool_registry().diagnostics
    assert missing.message == (
        "SVC_SHARE names no directory; unset it to read svc's own share (svc/share); no tool registry was read"
    )


def test_svc_ships_no_tool_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SHARE_ENV, raising=False)
    assert read_tool_registry() == Contribution()


# The workflows.


def test_without_just_the_recipes_are_read_from_the_text(tmp_path: Path) -> None:
    (tmp_path / "justfile").write_text(JUSTFILE, encoding="utf-8")
    read = read_workflows(tmp_path, search_path=no_just_path(tmp_path))
    by_id = {n.id: n for n in read.nodes}
    assert list(by_id) == ["workflow.clean", "workflow.deploy", "workflow.site"]
    clean, deploy, site = by_id.values()
    assert (clean.effect, clean.interactivity) == ("destructive", "interactive")
    assert (deploy.effect, deploy.interactivity) == ("repository_mutation", "non_interactive")
    assert deploy.aliases == ["d"]
    assert [(a.name, a.required, a.variadic, a.value_name) for a in deploy.arguments] == [
        ("env", True, False, "ENV"),
        ("target", False, False, "TARGET"),
        ("flags", False, True, "FLAGS"),
    ]
    assert (site.group, site.entrypoint, deploy.entrypoint) == ("site", True, False)
    assert deploy.summary == "The justfile recipe `deploy` (no doc comment)."
    assert site.availability == CommandAvailability(
        available=False, reason="`just` is not on the PATH", requires=["repository", "workflow_runner"]
    )
    assert site.provenance == CommandProvenance(declared_in="justfile", read_by=TEXT_READER)
    assert site.projections == CommandProjections(
        cli="just site",
        workflow="site",
        docs="/docs/commands/",
        withheld="effect repository_mutation is above the machine ceiling local_mutation",
    )
    assert [(d.severity, d.code) for d in read.diagnostics] == [("info", "workflow-runner-missing")]


def test_with_just_the_recipes_are_its_dump(tmp_path: Path) -> None:
    (tmp_path / "justfile").write_text(JUSTFILE, encoding="utf-8")
    read = read_workflows(tmp_path, search_path=fake_just(tmp_path, DUMP))
    assert read.diagnostics == ()
    assert [n.id for n in read.nodes] == ["workflow.clean", "workflow.deploy", "workflow.site"]
    assert {n.provenance.read_by for n in read.nodes} == {JUST_DUMP}
    assert all(n.availability.available and n.availability.reason is None for n in read.nodes)
    text = read_workflows(tmp_path, search_path=no_just_path(tmp_path))

    def common(n: CommandNode) -> CommandNode:
        return msgspec.structs.replace(
            n, availability=CommandAvailability(available=True), provenance=CommandProvenance(declared_in="")
        )

    # Both readings agree on everything but where the recipes came from and whether `just` is there.
    assert [common(n) for n in text.nodes] == [common(n) for n in read.nodes]
    assert "/home/someone" not in msgspec.json.encode(read.nodes).decode()


@pytest.mark.parametrize(("dump", "exit_code", "said"), [("not json", 0, "printed no JSON"), (DUMP, 1, "failed")])
def test_a_dump_that_fails_falls_back_to_the_text(tmp_path: Path, dump: object, exit_code: int, said: str) -> None:
    (tmp_path / "justfile").write_text(JUSTFILE, encoding="utf-8")
    read = read_workflows(tmp_path, search_path=fake_just(tmp_path, dump, exit_code=exit_code))
    (finding,) = read.diagnostics
    assert (finding.severity, finding.code) == ("warning", "workflow-dump-failed")
    assert said in finding.message
    assert [n.id for n in read.nodes] == ["workflow.clean", "workflow.deploy", "workflow.site"]
    assert read.nodes[0].availability.reason == "`just` could not read justfile"


def test_an_alias_naming_no_recipe_is_an_error_and_a_hostile_justfile_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "Justfile").write_text("a:\nalias b := nowhere\n", encoding="utf-8")
    read = read_workflows(tmp_path, search_path=no_just_path(tmp_path))
    assert [d.code for d in read.diagnostics] == ["workflow-runner-missing", "alias-names-no-command"]
    assert read.nodes[0].provenance.declared_in == "Justfile"
    (tmp_path / "Justfile").unlink()
    (tmp_path / "justfile").symlink_to("/etc/passwd")
    (finding,) = read_workflows(tmp_path, search_path=no_just_path(tmp_path)).diagnostics
    assert (finding.code, finding.message) == (
        "workflow-source-unreadable",
        "justfile is not read: a symlink leaving the repository",
    )
    bare = tmp_path / "bare"
    bare.mkdir()
    assert read_workflows(bare, search_path=no_just_path(tmp_path)) == Contribution()


def test_a_justfile_that_is_not_utf8_is_a_finding(tmp_path: Path) -> None:
    (tmp_path / "justfile").write_bytes(b"\xff\xfe:\n")
    read = read_workflows(tmp_path, search_path=no_just_path(tmp_path))
    assert [d.code for d in read.diagnostics] == ["workflow-runner-missing", "workflow-source-unreadable"]
    assert read.nodes == ()


# The cache.


def test_a_refresh_writes_the_cache_and_a_request_reads_the_workflows_back(tmp_path: Path) -> None:
    (tmp_path / "justfile").write_text(JUSTFILE, encoding="utf-8")
    executable = Contribution(nodes=(node("executable", ["a"]),))
    written = refresh_command_graph(tmp_path, executable, search_path=no_just_path(tmp_path))
    assert (tmp_path / ".ai/local/.gitignore").is_file()
    on_disk = msgspec.json.decode((tmp_path / CACHE).read_bytes(), type=dict[str, object])
    assert on_disk["schema"] == SCHEMA
    assert on_disk["fingerprint"] == written.fingerprint
    loaded = load_command_graph(tmp_path, executable)
    assert loaded == written


def test_only_the_workflows_of_an_older_cache_are_taken(tmp_path: Path) -> None:
    workflow = node("workflow", ["lint"])
    retired = node("executable", ["retired"])
    cached = {
        "schema": SCHEMA,
        "fingerprint": "0000000000000000",
        "commands": [
            msgspec.to_builtins(retired),
            {"origin": "executable", "shape": "of an older svc"},
            msgspec.to_builtins(workflow),
        ],
        "diagnostics": [
            {"severity": "info", "code": "workflow-runner-missing", "message": "m"},
            {"severity": "error", "code": "duplicate-command-id", "message": "recomputed, not carried"},
        ],
    }
    (tmp_path / "justfile").write_text("lint:\n", encoding="utf-8")
    os.utime(tmp_path / "justfile", ns=(0, 0))
    (tmp_path / CACHE).parent.mkdir(parents=True)
    (tmp_path / CACHE).write_text(json.dumps(cached), encoding="utf-8")
    read = read_command_cache(tmp_path)
    assert read.nodes == (workflow,)
    assert [d.code for d in read.diagnostics] == ["workflow-runner-missing"]
    graph = load_command_graph(tmp_path, Contribution(nodes=(node("executable", ["now"]),)))
    assert [n.id for n in graph.commands] == ["executable.now", "workflow.lint"]
    assert graph.fingerprint != "0000000000000000"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{not json", "is not a command graph"),
        ('{"schema": "svc/command-graph/v0", "commands": []}', "has schema 'svc/command-graph/v0'"),
        (f'{{"schema": "{SCHEMA}", "commands": 3}}', "is malformed"),
        (f'{{"schema": "{SCHEMA}", "commands": [{{"origin": "workflow", "id": 1}}]}}', "holds a malformed command"),
    ],
)
def test_a_bad_cache_is_a_warning_not_a_failure(tmp_path: Path, content: str, said: str) -> None:
    (tmp_path / CACHE).parent.mkdir(parents=True)
    (tmp_path / CACHE).write_text(content, encoding="utf-8")
    graph = load_command_graph(tmp_path, Contribution(nodes=(node("executable", ["a"]),)))
    assert [n.id for n in graph.commands] == ["executable.a"]
    (finding,) = graph.diagnostics
    assert (finding.severity, finding.code) == ("warning", "workflow-cache-unreadable")
    assert said in finding.message
    assert finding.remedy == "run `svc commands refresh` to write it again"
    assert str(tmp_path) not in finding.message


def test_a_cached_node_whose_id_is_not_its_paths_or_that_names_no_justfile_is_left_out(tmp_path: Path) -> None:
    forged = msgspec.structs.replace(node("workflow", ["lint"]), id="workflow.other")
    elsewhere = node("workflow", ["x"], provenance=CommandProvenance(declared_in=str(tmp_path / "justfile")))
    (tmp_path / CACHE).parent.mkdir(parents=True)
    (tmp_path / CACHE).write_bytes(
        msgspec.json.encode({"schema": SCHEMA, "fingerprint": "", "commands": [forged, elsewhere]})
    )
    read = read_command_cache(tmp_path)
    assert read.nodes == ()
    assert [d.message for d in read.diagnostics] == [
        f"{CACHE} holds `workflow.other`, which is not the identity of its path; that command is left out",
        f"{CACHE} holds `workflow.x`, which names no justfile of the checkout; that command is left out",
    ]


def test_a_missing_cache_is_said_only_when_there_is_a_justfile_and_a_changed_one_is_stale(tmp_path: Path) -> None:
    assert read_command_cache(tmp_path) == Contribution()
    (tmp_path / "justfile").write_text(JUSTFILE, encoding="utf-8")
    (absent,) = read_command_cache(tmp_path).diagnostics
    assert (absent.severity, absent.code) == ("info", "workflow-cache-absent")
    refresh_command_graph(tmp_path, Contribution(), search_path=no_just_path(tmp_path))
    assert [d.code for d in read_command_cache(tmp_path).diagnostics] == ["workflow-runner-missing"]
    later = (tmp_path / CACHE).stat().st_mtime_ns + 5_000_000_000
    os.utime(tmp_path / "justfile", ns=(later, later))
    stale = read_command_cache(tmp_path).diagnostics[-1]
    assert (stale.code, stale.message) == (
        "workflow-cache-stale",
        f"{CACHE} is older than the workflows it lists: justfile changed",
    )
    (tmp_path / "justfile").unlink()
    assert "justfile is gone" in read_command_cache(tmp_path).diagnostics[-1].message
