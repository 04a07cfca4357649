"""`svc mesh ...` for the cooperation operations: positional paths and keys, `--advisory`, the peer tree.

Each command runs in this process (CliRunner) and asks the server serving the checkout, found through the
checkout's lease, as it would from a terminal; with no server it answers from its own process, where
cooperation does not run. The command tree's general rules these commands rely on (array arguments,
switches that set a value) are tested on a Struct of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import httpx
import msgspec
import pytest
from msgspec import Meta

from svc.cli._render import render
from svc.registry import Capability, Example, Exposure, HttpExposure, decode_text
from svc.surfaces import struct_parameters
from tests.capabilities._served import lease, serving, svc, svc_json

pytestmark = [pytest.mark.bound(60), pytest.mark.usefixtures("state")]

RECORD = "---\nschema_version: 1\ncreated_at: 2026-11-25T19:04:05Z\nbranch: main\nhead: abcdef0\n---\n\nGo.\n"


async def test_every_cooperation_command_asks_the_serving_server(tmp_path: Path) -> None:
    async with serving(tmp_path, 1) as [runtime]:
        root, coop = runtime.root, runtime.coop
        with lease(runtime):
            code, claim = await svc_json(root, "mesh", "claim", "src/a/", "docs/", "--session", "s1", "--intent", "x")
            assert code == 0
            assert set(claim) == {"key", "event", "lamport", "durability"}
            [held] = [c for c in coop.state().claims if c.key == claim["key"]]
            assert (held.scope, held.mode, held.intent) == (["src/a/", "docs/"], "exclusive", "x")

            code, out, err = await svc(root, "mesh", "claim", "src/a/b.py", "--session", "s2")
            assert code == 10
            assert out == ""
            assert err.startswith(f"svc: refused: claim_conflict: the scope meets {claim['key']}")
            code, advisory = await svc_json(root, "mesh", "claim", "src/a/c.py", "--advisory", "--session", "s2")
            assert code == 0
            assert [c.mode for c in coop.state().claims if c.key == advisory["key"]] == ["advisory"]
            code, _, err = await svc(root, "mesh", "claim", "src/x")
            assert code == 10
            assert "invalid_input: session is required" in err
            code, _, err = await svc(root, "mesh", "claim", "--session", "s1")
            assert code == 2
            assert "PATH..." in err

            code, out, _ = await svc(root, "mesh", "peers", "--view", "full")
            assert code == 0
            rows = [line.split("\t") for line in out.splitlines()]
            assert rows[0][:3] == ["cooperation", "active", coop.key]
            assert (rows[1][0], rows[1][2]) == ("machine", "local")
            assert ["runtime", coop.key, "own", "-", "0", "this"] in rows
            claimed = [r for r in rows if r[0] == "claim" and r[1] == claim["key"]]
            assert claimed == [["claim", claim["key"], "held", "exclusive", f"{coop.stream}/s1", "-", "src/a/,docs/"]]
            async with httpx.AsyncClient(base_url=runtime.url) as http:
                route = await http.get("/api/v1/mesh/peers", params={"view": "full"})
            code, out, _ = await svc(root, "mesh", "peers", "--view", "full", "--json")
            assert out.encode() == route.content + b"\n"

            code, released = await svc_json(root, "mesh", "release", claim["key"])
            assert (code, released["key"]) == (0, claim["key"])
            code, _, err = await svc(root, "mesh", "release", claim["key"])
            assert code == 10
            assert "refused: " in err

            code, answer = await svc_json(root, "mesh", "state", "--kind", "claims", "--open")
            assert code == 0
            assert [c["key"] for c in answer["state"]["claims"]] == [advisory["key"]]
            code, events = await svc_json(root, "mesh", "events", "--newest", "--limit", "2")
            assert (code, events["count"]) == (0, 2)
            code, peer = await svc_json(root, "mesh", "peer", coop.identity.node_id)
            assert (code, peer["found"], peer["runtime"]["runtime"]) == (0, True, coop.key)
            code, status = await svc_json(root, "mesh", "cooperation")
            assert (code, status["active"], status["runtime"]) == (0, True, coop.key)

            code, opened = await svc_json(root, "mesh", "session", "open", "w1", "--intent", "docs", "--dirty")
            assert (code, opened["key"]) == (0, f"{coop.stream}/w1")
            [word] = [s.info for s in coop.state().sessions if s.key == opened["key"]]
            assert word == {"session": "w1", "client": "cli", "intent": "docs", "dirty": True}
            code, closed = await svc_json(root, "mesh", "session", "close", "w1")
            assert (code, closed["key"]) == (0, f"{coop.stream}/w1")

            records = root / ".ai" / "local" / "state" / "handovers"
            records.mkdir(parents=True)
            (records / "20261125T190405Z--main--abcdef0--0011223344556677.md").write_text(RECORD)
            code, published = await svc_json(root, "mesh", "handover", "publish", "--issue", "I3")
            assert code == 0
            code, taken = await svc_json(root, "mesh", "handover", "consume", published["key"], "s3", "--materialize")
            assert code == 0
            assert taken["path"].endswith(f"--main--abcdef0--{published['key'][:16]}.md")
            assert (root / taken["path"]).is_file()

            code, review = await svc_json(root, "mesh", "review", "request", "main", "src/", "docs/", "--session", "s1")
            assert code == 0
            [asked] = [r for r in coop.state().reviews if r.key == review["key"]]
            assert (asked.subject, asked.scope) == ("main", ["src/", "docs/"])
            code, answered = await svc_json(
                root, "mesh", "review", "answer", review["key"], "approved", "--session", "s9"
            )
            assert (code, answered["key"]) == (0, review["key"])
            code, _, _ = await svc(root, "mesh", "review", "answer", review["key"], "maybe", "--session", "s9")
            assert code == 2
            code, withdrawn = await svc_json(root, "mesh", "review", "withdraw", review["key"], "done: merged")
            assert (code, withdrawn) == (10, None)
            code, withdrawn = await svc_json(
                root, "mesh", "review", "withdraw", review["key"], "done: merged", "--session", "s1"
            )
            assert (code, withdrawn["key"]) == (0, review["key"])

            code, verified = await svc_json(root, "mesh", "verify")
            assert (code, verified["ok"]) == (0, True)
            code, out, _ = await svc(root, "mesh", "verify")
            assert code == 0
            assert out.startswith("ok")


async def test_with_no_server_the_commands_say_cooperation_does_not_run_here(tmp_path: Path) -> None:
    async with serving(tmp_path, 1) as [runtime]:
        root = runtime.root
        reason = "this process does not run the mesh (it runs in the serving server: svc serve or svc mcp)"
        code, out, err = await svc(root, "mesh", "peers")
        assert code == 0
        assert out == f"cooperation\tinactive\t{reason}\n"
        assert "no server serves this repository" in err
        code, answer = await svc_json(root, "mesh", "state")
        assert (code, answer) == (0, {"active": False, "reason": reason})
        code, verified = await svc_json(root, "mesh", "verify")
        assert (code, verified["ok"]) == (10, False)
        code, out, err = await svc(root, "mesh", "claim", "src/", "--session", "s1")
        assert code == 10
        assert err.splitlines()[-1] == f"svc: refused: not_active: {reason}"
        code, _, err = await svc(root, "mesh", "release", f"{runtime.coop.stream}/c-000000000000")
        assert code == 10
        assert "not_active" in err


OWN = "a" * 32 + "-" + "1" * 16
TREE: dict[str, Any] = {
    "active": True,
    "runtime": OWN,
    "repository": "r" * 32,
    "digest": "d" * 32,
    "machines": [
        {
            "node": "a" * 32,
            "name": "laptop",
            "local": True,
            "runtimes": [
                {
                    "runtime": OWN,
                    "this_runtime": True,
                    "liveness": "own",
                    "last_beat_ms": 0,
                    "sessions": [
                        {
                            "key": "S/s1",
                            "info": {"session": "s1", "client": "mcp", "intent": "fix\tthe links", "branch": "main"},
                            "state": "active",
                            "claims": [
                                {
                                    "key": "S/c-000000000001",
                                    "stream": "S",
                                    "runtime": "R",
                                    "session": "S/s1",
                                    "scope": ["src/a.py", "docs/"],
                                    "intent": None,
                                    "mode": "exclusive",
                                    "issue": None,
                                    "acquired_lamport": 3,
                                    "acquired_seq": 2,
                                    "state": {"state": "conflicted", "detail": "T/c-000000000002"},
                                }
                            ],
                            "reviews": [
                                {
                                    "key": "S/r-000000000001",
                                    "session": "S/s1",
                                    "subject": "pr 12",
                                    "scope": ["src/"],
                                    "state": "open",
                                    "requested_lamport": 4,
                                }
                            ],
                        }
                    ],
                }
            ],
        },
        {
            "node": "b" * 32,
            "name": "desk",
            "local": False,
            "runtimes": [
                {
                    "runtime": "b" * 32 + "-" + "2" * 16,
                    "this_runtime": False,
                    "liveness": "live",
                    "last_beat_ms": 1200,
                    "link": "connected",
                    "sessions": [],
                }
            ],
        },
    ],
    "refused": [{"endpoint": "10.0.0.9:7742", "direction": "outbound", "refusal": "untrusted", "at": "T"}],
}


def test_the_peer_tree_is_drawn_on_a_terminal_and_one_record_per_line_when_piped() -> None:
    body = msgspec.json.encode(TREE)
    piped = render(body, capability="mesh.peers", tty=False).splitlines()
    assert piped == [
        "cooperation\tactive\t" + OWN + "\t" + "r" * 32 + "\t" + "d" * 32,
        "machine\t" + "a" * 32 + "\tlocal\tlaptop",
        "runtime\t" + OWN + "\town\t-\t0\tthis",
        "session\tS/s1\tactive\tmcp\tfix the links",
        "claim\tS/c-000000000001\tconflicted\texclusive\tS/s1\tT/c-000000000002\tsrc/a.py,docs/",
        "review\tS/r-000000000001\topen\tS/s1\tpr 12",
        "machine\t" + "b" * 32 + "\tremote\tdesk",
        "runtime\t" + "b" * 32 + "-" + "2" * 16 + "\tlive\tconnected\t1200\tother",
        "refused\t10.0.0.9:7742\toutbound\tuntrusted\tT",
    ]
    drawn = render(body, capability="mesh.peers", tty=True).splitlines()
    assert drawn[0] == f"repository {'r' * 32}  digest {'d' * 32}"
    assert drawn[1] == f"laptop  {'a' * 32}  (this machine)"
    assert drawn[2] == f"└── runtime {OWN}  own, this runtime"
    assert drawn[3] == "    └── session s1  active, mcp, main  “fix the links”"
    assert drawn[4] == "        ├── claim c-000000000001  conflicted (T/c-000000000002)  exclusive  src/a.py, docs/"
    assert drawn[5] == "        └── review r-000000000001  open  pr 12"
    assert drawn[6] == f"desk  {'b' * 32}  (another machine)"
    assert drawn[7] == f"└── runtime {'b' * 32}-{'2' * 16}  live, link connected, beat 1200 ms ago"
    assert drawn[-1] == "  10.0.0.9:7742  outbound  untrusted  T"
    inactive = msgspec.json.encode({"active": False, "reason": "off"})
    assert render(inactive, capability="mesh.peers", tty=True) == "cooperation does not run here: off\n"
    assert render(inactive, capability="mesh.peers", tty=False) == "cooperation\tinactive\toff\n"
    assert render(inactive) == "active\tno\nreason\toff\n"


class Paths(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    subject: str
    paths: Annotated[list[str], Meta(description="paths", extra={"metavar": "PATH"})]
    tags: list[str] = msgspec.field(default_factory=list)
    mode: Annotated[Literal["strict", "loose"] | None, Meta(extra={"switch": "loose", "switch_help": "be loose"})] = (
        None
    )
    counts: list[int] | None = None


class Misplaced(msgspec.Struct, frozen=True, kw_only=True):
    paths: list[str]
    subject: str


class RequiredSwitch(msgspec.Struct, frozen=True, kw_only=True):
    mode: Annotated[str, Meta(extra={"switch": "on"})]


def test_array_fields_take_one_value_per_item_and_a_switch_sets_its_value() -> None:
    params = {p.name: p for p in struct_parameters(Paths)}
    assert list(params) == ["SUBJECT", "PATH...", "--tags", "--loose", "--counts"]
    paths, tags = params["PATH..."], params["--tags"]
    assert (paths.positional, paths.multiple, paths.field) == (True, True, "paths")
    assert (tags.positional, tags.multiple) == (False, True)
    assert (params["--loose"].sets, params["--loose"].field, params["--loose"].help) == ("loose", "mode", "be loose")
    with pytest.raises(TypeError, match="last positional argument"):
        struct_parameters(Misplaced)
    with pytest.raises(TypeError, match="cannot be a switch"):
        struct_parameters(RequiredSwitch)

    async def handler(ctx: object, params: Paths) -> Paths:
        return params

    cap = Capability(
        id="demo.paths",
        module="demo",
        title="Paths",
        description="paths",
        input=Paths,
        output=Paths,
        handler=handler,
        examples=(Example(name="a", input={"subject": "s", "paths": ["a"]}),),
        kind="command",
        exposure=Exposure(http=HttpExposure(method="POST", path="/api/v1/paths"), cli=("demo", "paths")),
    )
    decoded = decode_text(
        cap,
        [("subject", "s"), ("paths", "a"), ("paths", "b/c"), ("counts", "1"), ("counts", "2"), ("mode", "loose")],
    )
    assert decoded == Paths(subject="s", paths=["a", "b/c"], counts=[1, 2], mode="loose")
    assert cap.cli_usage == "svc demo paths SUBJECT PATH..."
    with pytest.raises(Exception, match="given more than once"):
        decode_text(cap, [("subject", "s"), ("subject", "t"), ("paths", "a")])
