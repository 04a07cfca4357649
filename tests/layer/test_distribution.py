"""The distribution model and release records: svc's packaged model, every rule, ordering, findings, checks, triples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from svc._errors import Internal, InvalidInput, NotFound
from svc.layer import ObjectIndex, load_yaml
from svc.layer import _distribution_reports as reports
from svc.layer._distribution import (
    MODEL_FILE,
    Distribution,
    Release,
    _record,
    find_distribution,
    latest_release,
    parse_model,
    record_findings,
    release_records,
    require_distribution,
)
from svc.layer._objects import IndexDiagnostic, LayerObject, ObjectProvenance, SourceClass
from svc.layer._share import SHARE_ENV
from tests.conftest import ROOT
from tests.layer._distribution_layer import (
    MODEL,
    PUBLISHED,
    artifact,
    fixture_records,
    model,
    record,
    write_share,
)

RELEASE_CLASS = SourceClass(id="release-record", kind="release-record", pattern=".ai/repo/releases/*.yaml")


def _dist(data: dict[str, Any] | None = None) -> Distribution:
    return parse_model(MODEL if data is None else data, "fixture")


def _releases(*records: dict[str, Any]) -> tuple[Release, ...]:
    out = [_record(r, f".ai/repo/releases/{r['tag']}.yaml") for r in records]
    return tuple(sorted(out, key=lambda r: (r.version, r.record.tag), reverse=True))


def _object(path: str, meta: dict[str, Any], kind: str = "release-record") -> LayerObject:
    identity = meta.get("tag", path)
    return LayerObject(
        uri=f"svc://{kind}/{identity}",
        id=f"{kind}.{identity}",
        kind=kind,
        identity=identity,
        metadata=meta,
        provenance=ObjectProvenance(path=path, directory=path.rsplit("/", 1)[0], source_class=kind, bytes=1),
        media_type="application/yaml",
    )


# --- svc's own model ------------------------------------------------------------------------------------------------


def test_the_packaged_model_is_valid_and_names_the_repository_svcs_plan_declares(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(SHARE_ENV, raising=False)
    dist = require_distribution(ObjectIndex(()))
    assert dist.source == "svc's share/distribution.yaml"
    project = load_yaml((ROOT / ".ai/repo/project/project.yaml").read_text(encoding="utf-8"))
    assert dist.model.project.repository == project["repository"]
    assert dist.model.project.binary == "svc"
    # One wheel serves every published target: the same name, the wheel's own (PEP 427).
    names = {dist.model.artifact_name(t, "v1.2.3") for t in dist.model.published()}
    assert names == {"svc-1.2.3-py3-none-any.whl"}
    assert [t.id for t in dist.model.targets if not t.published] == ["windows-x86_64"]
    assert dist.model.install_command() == (
        "pip install https://github.com/svc/svc/releases/download/{tag}/svc-{version}-py3-none-any.whl"
    )


def test_svcs_own_release_records_decode_and_every_stable_one_agrees_with_the_model() -> None:
    paths = sorted((ROOT / ".ai/repo/releases").glob("*.yaml"))
    assert paths
    dist = parse_model(load_yaml((ROOT / "src/svc/share/distribution.yaml").read_text(encoding="utf-8")), "svc")
    for path in paths:
        relative = path.relative_to(ROOT).as_posix()
        release = _record(load_yaml(path.read_text(encoding="utf-8")), relative)
        # A stable record is evidence of a complete upload: it must agree with the model entirely.
        if release.stable:
            assert record_findings(dist.model, (release,)) == [], relative


# --- the model's rules ----------------------------------------------------------------------------------------------


def _target(i: int, **changes: Any) -> dict[str, Any]:
    data = dict(MODEL["targets"][i])
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def _targets(i: int, **changes: Any) -> list[dict[str, Any]]:
    targets = [dict(t) for t in MODEL["targets"]]
    targets[i] = _target(i, **changes)
    return targets


BROKEN: list[tuple[str, dict[str, Any], str]] = [
    ("schema", model(schema="majordomus-distribution/v1"), "schema is `majordomus-distribution/v1`"),
    ("binary", model(project={**MODEL["project"], "binary": "my tool"}), "project.binary `my tool`"),
    ("repository", model(project={**MODEL["project"], "repository": "tool"}), "is not owner/name"),
    ("http", model(installer={**MODEL["installer"], "base_url": "http://acme.example"}), "is not an https URL"),
    ("slash", model(installer={**MODEL["installer"], "base_url": "https://acme.example/"}), "ends with `/`"),
    ("script", model(installer={**MODEL["installer"], "script": "{arch}.sh"}), "holds {arch}"),
    ("latest", model(installer={**MODEL["installer"], "latest_url": "ftp://x"}), "installer.latest_url"),
    ("release-url", model(installer={**MODEL["installer"], "release_url": "https://x/latest"}), "holds no {tag}"),
    ("extension", model(archive={**MODEL["archive"], "extension": ".tar.gz"}), "archive.extension"),
    ("placeholder", model(archive={**MODEL["archive"], "name": "{binary}-{os}.{extension}"}), "holds {os}"),
    ("no-extension", model(archive={**MODEL["archive"], "name": "{binary}-{tag}.tgz"}), "does not end with"),
    ("no-tag", model(archive={**MODEL["archive"], "name": "{binary}-{target}.{extension}"}), "holds neither"),
    ("checksum", model(archive={**MODEL["archive"], "checksum": "md5"}), "archive.checksum is `md5`"),
    ("empty", model(targets=[]), "targets is empty"),
    ("id", model(targets=[*MODEL["targets"], _target(0, rust_target="x")]), "two targets claim the id"),
    ("triple", model(targets=_targets(1, rust_target="aarch64-apple-darwin")), "two targets claim the triple"),
    ("no-libc", model(targets=_targets(1, libc=None)), "is linux and declares no libc"),
    ("libc", model(targets=_targets(0, libc="gnu")), "is macos and declares a libc"),
    ("reason", model(targets=_targets(2, reason=None)), "is experimental and records no reason"),
    ("no-build", model(targets=_targets(0, build=None)), "is supported and declares no build"),
    ("build", model(targets=_targets(3, build={"runner": "windows-2025"})), "is unavailable and declares a build"),
]


@pytest.mark.parametrize(("case", "data", "fragment"), BROKEN, ids=[b[0] for b in BROKEN])
def test_each_rule_of_the_model_is_a_500_naming_the_problem(case: str, data: dict[str, Any], fragment: str) -> None:
    with pytest.raises(Internal) as caught:
        parse_model(data, "share/distribution.yaml")
    assert caught.value.message.startswith("the distribution model (share/distribution.yaml) is invalid: ")
    assert fragment in caught.value.message


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (model(extra=1), "unknown field `extra`"),
        (model(project={"binary": "tool", "repository": "acme/tool"}), "missing required field `license`"),
        (model(targets=_targets(0, os="solaris")), "$.targets[0].os"),
        (model(targets=_targets(0, status="maybe")), "$.targets[0].status"),
        (model(archive={**MODEL["archive"], "format": "rar"}), "$.archive.format"),
        (model(project={**MODEL["project"], "binary": 7}), "Expected `str`, got `int`"),
    ],
)
def test_the_model_decodes_strictly(data: dict[str, Any], fragment: str) -> None:
    with pytest.raises(Internal, match="is invalid: ") as caught:
        parse_model(data, "fixture")
    assert fragment in caught.value.message


def test_several_problems_name_the_first_and_count_the_rest() -> None:
    with pytest.raises(Internal) as caught:
        parse_model(model(schema="x", targets=[]), "fixture")
    assert (
        caught.value.message
        == "the distribution model (fixture) is invalid: schema is `x`, not `svc-distribution/v1` (and 1 more)"
    )


# --- where the model comes from -------------------------------------------------------------------------------------


def test_the_share_override_an_empty_share_and_a_broken_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SHARE_ENV, str(write_share(tmp_path / "share", MODEL)))
    found = find_distribution(ObjectIndex(()))
    assert found is not None
    assert found.model.project.binary == "tool"
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv(SHARE_ENV, str(empty))
    assert find_distribution(ObjectIndex(())) is None
    with pytest.raises(NotFound, match="no distribution model"):
        require_distribution(ObjectIndex(()))
    monkeypatch.setenv(SHARE_ENV, str(write_share(tmp_path / "bad", "project: [unclosed\n")))
    with pytest.raises(Internal, match=r"is not YAML") as caught:
        find_distribution(ObjectIndex(()))
    assert str(tmp_path) not in caught.value.message
    monkeypatch.setenv(SHARE_ENV, str(write_share(tmp_path / "list", "- 1\n")))
    with pytest.raises(Internal, match="does not hold a mapping"):
        find_distribution(ObjectIndex(()))
    outside = tmp_path / "outside"
    write_share(outside, MODEL)
    link_share = tmp_path / "linked"
    link_share.mkdir()
    (link_share / MODEL_FILE).symlink_to(outside / MODEL_FILE)
    monkeypatch.setenv(SHARE_ENV, str(link_share))
    with pytest.raises(Internal, match="cannot be read") as caught:
        find_distribution(ObjectIndex(()))
    assert str(tmp_path) not in caught.value.message


def test_a_repository_model_wins_and_two_or_an_unreadable_one_are_500(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SHARE_ENV, raising=False)
    own = _object(".ai/repo/distribution.yaml", MODEL, kind="distribution")
    found = find_distribution(ObjectIndex([own]))
    assert found is not None
    assert (found.source, found.model.project.binary) == (".ai/repo/distribution.yaml", "tool")
    broken = _object(".ai/repo/distribution.yaml", model(schema="x"), kind="distribution")
    with pytest.raises(Internal, match=r"\(\.ai/repo/distribution\.yaml\) is invalid: schema is `x`"):
        find_distribution(ObjectIndex([broken]))
    twin = _object(".ai/repo/other.yaml", MODEL, kind="distribution")
    with pytest.raises(Internal, match="indexes 2 distribution models"):
        find_distribution(ObjectIndex([own, twin]))
    classes = [SourceClass(id="distribution", kind="distribution", pattern=".ai/repo/distribution.yaml")]
    diagnostic = IndexDiagnostic(
        severity="error", code="malformed_yaml", path=".ai/repo/distribution.yaml", message="not YAML"
    )
    with pytest.raises(Internal, match=r"model \(\.ai/repo/distribution\.yaml\) cannot be read: not YAML"):
        find_distribution(ObjectIndex([], classes, diagnostics=[diagnostic]))


# --- release records ------------------------------------------------------------------------------------------------


def test_records_sort_by_pep_440_newest_first_and_the_latest_skips_prereleases_and_yanked() -> None:
    objects = [_object(f".ai/repo/releases/{r['tag']}.yaml", r) for r in fixture_records()]
    releases = release_records(ObjectIndex(objects, [RELEASE_CLASS]), ROOT)
    assert [r.record.tag for r in releases] == ["v0.10.1", "v0.10.1rc1", "v0.10.0", "v0.9.0"]
    latest = latest_release(releases)
    assert latest is not None
    assert latest.record.tag == "v0.10.0"
    assert latest_release(_releases(record("1.0.0", channel="prerelease"), record("0.1.0", yanked=True))) is None


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"schema": "release/v2"}, "schema is `release/v2`, not `release/v1`"),
        ({"version": "one", "tag": "vone"}, "version `one` is not a version"),
        ({"tag": "v9.9.9"}, "tag `v9.9.9` is not `v` followed by the version `1.0.0`"),
        ({"channel": "beta"}, "$.channel"),
        ({"version": 1.0}, "Expected `str`, got `float`"),
        ({"mirror": "x"}, "unknown field `mirror`"),
        ({"artifacts": [{**artifact("1.0.0", "macos-aarch64"), "size": -1}]}, "$.artifacts[0].size"),
    ],
)
def test_a_record_that_does_not_decode_is_a_500_naming_its_path(change: dict[str, Any], fragment: str) -> None:
    meta = {**record("1.0.0"), **change}
    with pytest.raises(Internal) as caught:
        _record(meta, ".ai/repo/releases/v1.0.0.yaml")
    assert caught.value.message.startswith("the release record .ai/repo/releases/v1.0.0.yaml is invalid: ")
    assert fragment in caught.value.message


def test_a_record_is_named_by_its_tag() -> None:
    with pytest.raises(Internal, match=r"the file is named `latest` and the tag is `v1\.0\.0`"):
        _record(record("1.0.0"), ".ai/repo/releases/latest.yaml")


def test_a_record_file_the_index_could_not_read_is_a_500_naming_it() -> None:
    diagnostic = IndexDiagnostic(
        severity="error", code="malformed_yaml", path=".ai/repo/releases/v2.yaml", message="it is not YAML"
    )
    index = ObjectIndex([], [RELEASE_CLASS], diagnostics=[diagnostic])
    with pytest.raises(Internal, match=r"record \.ai/repo/releases/v2\.yaml cannot be read: it is not YAML"):
        release_records(index, ROOT)
    # A file of another class, or a warning, is not a record's problem.
    other = IndexDiagnostic(severity="error", code="malformed_yaml", path="docs/x.yaml", message="no")
    note = IndexDiagnostic(severity="warning", code="out_of_scope", path=".ai/repo/releases/v3.yaml", message="no")
    assert release_records(ObjectIndex([], [RELEASE_CLASS], diagnostics=[other, note]), ROOT) == ()


def test_two_records_of_one_tag_are_read_and_named_by_the_findings(tmp_path: Path) -> None:
    for directory in ("a", "b"):
        folder = tmp_path / ".ai/repo/releases" / directory
        folder.mkdir(parents=True)
        (folder / "v1.0.0.yaml").write_text(msgspec.json.encode(record("1.0.0")).decode(), encoding="utf-8")
    classes = [SourceClass(id="releases", kind="release-record", pattern=".ai/repo/releases/**/*.yaml")]
    diagnostics = [
        IndexDiagnostic(
            severity="error", code="duplicate_identity", path=f".ai/repo/releases/{d}/v1.0.0.yaml", message="twice"
        )
        for d in ("a", "b")
    ]
    releases = release_records(ObjectIndex([], classes, diagnostics=diagnostics), tmp_path)
    assert [r.path for r in releases] == [".ai/repo/releases/b/v1.0.0.yaml", ".ai/repo/releases/a/v1.0.0.yaml"]
    assert record_findings(_dist().model, releases) == ["two records claim the tag `v1.0.0`"]


def test_every_way_a_record_disagrees_with_the_model_is_a_finding() -> None:
    good = artifact("1.0.0", "macos-aarch64")
    bad = record("1.0.0", targets=())
    bad["artifacts"] = [
        good,
        good,
        {**artifact("1.0.0", "linux-x86_64-gnu"), "name": "tool.tar.gz"},
        {
            **artifact("1.0.0", "linux-x86_64-musl"),
            "url": "https://mirror.example/v1.0.0/x",
            "sha256": "abc",
            "size": 0,
        },
        {**artifact("1.0.0", "windows-x86_64"), "name": "tool-v1.0.0-x86_64-pc-windows-msvc.zip"},
        {**good, "target": "plan9-mips"},
    ]
    assert record_findings(_dist().model, _releases(bad)) == [
        "v1.0.0: two artifacts for `macos-aarch64`",
        "v1.0.0: the artifact for `linux-x86_64-gnu` is named `tool.tar.gz`; the model derives "
        "`tool-v1.0.0-x86_64-unknown-linux-gnu.tar.gz`",
        "v1.0.0: the URL of `linux-x86_64-gnu` does not end with /v1.0.0/tool.tar.gz",
        "v1.0.0: the artifact for `linux-x86_64-musl` is served from `https://mirror.example/v1.0.0/x`, not from "
        "https://github.com/acme/tool/releases/download/",
        "v1.0.0: the URL of `linux-x86_64-musl` does not end with /v1.0.0/tool-v1.0.0-x86_64-unknown-linux-musl.tar.gz",
        "v1.0.0: the digest of `linux-x86_64-musl` is not 64 hexadecimal characters",
        "v1.0.0: the size of `linux-x86_64-musl` is zero",
        "v1.0.0: an artifact for `windows-x86_64`, which the model does not publish",
        "v1.0.0: the URL of `windows-x86_64` does not end with /v1.0.0/tool-v1.0.0-x86_64-pc-windows-msvc.zip",
        "v1.0.0: an artifact for `plan9-mips`, which the model does not declare",
    ]
    missing = record("1.0.1", targets=PUBLISHED[:1])
    assert record_findings(_dist().model, _releases(missing)) == [
        "v1.0.1: no artifact for `linux-x86_64-gnu`, which the model publishes",
        "v1.0.1: no artifact for `linux-x86_64-musl`, which the model publishes",
    ]
    assert record_findings(_dist().model, _releases(*fixture_records())) == []


# --- names -----------------------------------------------------------------------------------------------------------


def test_the_artifact_of_a_target_by_id_or_triple_with_a_format_override() -> None:
    dist = _dist(model(targets=_targets(3, status="experimental", build={"runner": "windows-2025"})))
    view = reports.artifact_view(dist, "x86_64-pc-windows-msvc", "v1.0.0")
    assert (view.target, view.name, view.root) == (
        "windows-x86_64",
        "tool-v1.0.0-x86_64-pc-windows-msvc.zip",
        "tool-v1.0.0-x86_64-pc-windows-msvc",
    )
    assert view.url == "https://github.com/acme/tool/releases/download/v1.0.0/tool-v1.0.0-x86_64-pc-windows-msvc.zip"
    placeholder = reports.artifact_view(_dist(), "linux-x86_64-gnu", "{tag}")
    assert placeholder.name == "tool-{tag}-x86_64-unknown-linux-gnu.tar.gz"
    with pytest.raises(NotFound, match="no target 'plan9'"):
        reports.artifact_view(_dist(), "plan9", "v1.0.0")
    with pytest.raises(InvalidInput, match=r"declared and not published: The launcher is POSIX shell\."):
        reports.artifact_view(_dist(), "windows-x86_64", "v1.0.0")
    for tag in ("1.0.0", "v", "vx", "v1/../../x", "latest", "{version}"):
        with pytest.raises(InvalidInput, match="is not a tag"):
            reports.artifact_view(_dist(), "macos-aarch64", tag)


# --- the installability checks ----------------------------------------------------------------------------------------


def _states(report: reports.InstallabilityReport) -> dict[str, str]:
    return {c.id: c.state for c in report.checks}


def test_a_complete_consistent_stable_release_is_installable() -> None:
    report = reports.installability(_dist(), _releases(*fixture_records()), "0.10.1")
    assert [c.id for c in report.checks] == ["model", "version", "release", "artifacts", "metadata", "public"]
    assert _states(report) == {
        "model": "ok",
        "version": "ok",
        "release": "ok",
        "artifacts": "ok",
        "metadata": "ok",
        "public": "unknown",
    }
    assert report.installable is True
    assert report.summary == "v0.10.0 is recorded, complete and consistent; the published command installs it"
    assert (report.stable_tag, report.required_targets, report.published_artifacts) == ("v0.10.0", 3, 3)
    assert report.install_command == "curl -fsSL https://acme.example/tool/install.sh | sh"
    assert report.checks[-1].next == "curl -fsSL https://acme.example/tool/releases/latest.json | head -1"


def test_the_model_check_fails_when_nothing_is_published() -> None:
    unpublished = [
        {k: v for k, v in t.items() if k != "build"} | {"status": "unavailable", "reason": "not yet"}
        for t in MODEL["targets"]
    ]
    report = reports.installability(_dist(model(targets=unpublished)), (), "1.0.0")
    assert _states(report)["model"] == "failed"
    assert report.installable is False
    assert report.summary == "the model publishes no target, so a release could build nothing"
    assert report.checks[0].next == "declare a target with `status: supported` in fixture"


def test_the_release_check_fails_without_a_stable_unyanked_record_and_artifacts_are_then_unknown() -> None:
    records = _releases(record("1.0.0", yanked=True), record("1.1.0rc1", channel="prerelease"))
    report = reports.installability(_dist(), records, "1.1.0")
    assert _states(report) == {
        "model": "ok",
        "version": "ok",
        "release": "failed",
        "artifacts": "unknown",
        "metadata": "ok",
        "public": "unknown",
    }
    release = report.checks[2]
    assert release.observed == "no stable release is recorded (2 record(s) in total)"
    assert release.next == (
        "git tag v1.1.0 && git push origin v1.1.0, then record .ai/repo/releases/v1.1.0.yaml (channel: stable)"
    )
    assert report.summary == release.cause
    assert report.stable_tag is None


def test_the_artifacts_check_fails_for_a_partial_stable_release() -> None:
    report = reports.installability(_dist(), _releases(record("1.0.0", targets=PUBLISHED[:2])), "1.0.0")
    artifacts = report.checks[3]
    assert (artifacts.state, artifacts.observed) == ("failed", "2 of 3 required artifact(s)")
    assert report.summary == "the stable release does not publish every target the model publishes"
    assert _states(report)["metadata"] == "failed"  # the same record misses a published target


def test_the_metadata_check_fails_alone_for_a_record_that_disagrees() -> None:
    wrong = record("0.9.0", channel="prerelease")
    wrong["artifacts"][0]["size"] = 0
    report = reports.installability(_dist(), _releases(record("1.0.0"), wrong), "1.0.0")
    assert [c.id for c in report.checks if c.state == "failed"] == ["metadata"]
    metadata = report.checks[4]
    assert metadata.observed == "1 finding(s): v0.9.0: the size of `macos-aarch64` is zero"
    assert report.summary == "a release record disagrees with the distribution model"


# --- this build ------------------------------------------------------------------------------------------------------

TRIPLES = [
    ("linux-x86_64", ("glibc", "2.36"), "x86_64", "x86_64-unknown-linux-gnu"),
    ("linux-x86_64", ("musl", "1.2.4"), "x86_64", "x86_64-unknown-linux-musl"),
    ("linux-x86_64", ("", ""), "x86_64", "x86_64-unknown-linux-musl"),
    ("linux-aarch64", ("glibc", "2.39"), "aarch64", "aarch64-unknown-linux-gnu"),
    ("linux-aarch64", ("libc", ""), "aarch64", "aarch64-unknown-linux-musl"),
    ("linux-i686", ("glibc", "2.31"), "i686", "i686-unknown-linux-gnu"),
    ("macosx-11.0-arm64", ("", ""), "arm64", "aarch64-apple-darwin"),
    ("macosx-10.9-x86_64", ("", ""), "x86_64", "x86_64-apple-darwin"),
    ("macosx-10.9-universal2", ("", ""), "arm64", "aarch64-apple-darwin"),
    ("macosx-10.9-universal2", ("", ""), "x86_64", "x86_64-apple-darwin"),
    ("win-amd64", ("", ""), "AMD64", "x86_64-pc-windows-msvc"),
    ("win-arm64", ("", ""), "ARM64", "aarch64-pc-windows-msvc"),
    ("win32", ("", ""), "x86", "i686-pc-windows-msvc"),
    ("freebsd-14.0-RELEASE-amd64", ("", ""), "amd64", "x86_64-unknown-freebsd"),
    ("cygwin-3.5.4-x86_64", ("", ""), "x86_64", "cygwin-3.5.4-x86_64"),
]


@pytest.mark.parametrize(
    ("plat", "libc", "machine", "triple"), TRIPLES, ids=[f"{t[0]}-{t[2]}-{t[1][0]}" for t in TRIPLES]
)
def test_the_running_interpreter_maps_to_its_triple(
    monkeypatch: pytest.MonkeyPatch, plat: str, libc: tuple[str, str], machine: str, triple: str
) -> None:
    monkeypatch.setattr("sysconfig.get_platform", lambda: plat)
    monkeypatch.setattr("platform.libc_ver", lambda *_a, **_k: libc)
    monkeypatch.setattr("platform.machine", lambda: machine)
    assert reports.running_triple() == triple


def test_the_build_matches_the_models_target_of_its_triple(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sysconfig.get_platform", lambda: "macosx-11.0-arm64")
    monkeypatch.setattr("platform.machine", lambda: "arm64")
    built = reports.build_report(_dist(), "abc123")
    assert (built.target, built.commit, built.distribution_target) == (
        "aarch64-apple-darwin",
        "abc123",
        "macos-aarch64",
    )
    monkeypatch.setattr("sysconfig.get_platform", lambda: "linux-riscv64")
    monkeypatch.setattr("platform.libc_ver", lambda *_a, **_k: ("glibc", "2.40"))
    bare = reports.build_report(None, None)
    assert (bare.target, bare.commit, bare.distribution_target) == ("riscv64gc-unknown-linux-gnu", "unknown", None)
    assert reports.build_report(_dist(), None).distribution_target is None


def test_a_source_checkout_is_debug_and_an_installed_package_is_release(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "src/svc").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\nname = 'svc'\n", encoding="utf-8")
    assert reports.build_profile(checkout / "src/svc") == "debug"
    installed = tmp_path / "venv/lib/python3.11/site-packages/svc"
    installed.mkdir(parents=True)
    assert reports.build_profile(installed) == "release"
    (tmp_path / "bare/src/svc").mkdir(parents=True)
    assert reports.build_profile(tmp_path / "bare/src/svc") == "release"
    # svc's own tests run from its source checkout.
    assert reports.build_profile() == "debug"
