"""The deployments of a layer: strict decoding, refusals naming all five facts, the local checks, golden answers.

The golden files `tests/layer/golden/deployments-*.json` are the whole answers over the fixture of
`_deploy_layer.py`; `SVC_UPDATE_GOLDEN=1` rewrites them.
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest

from svc.layer import (
    Deployment,
    DeploymentRefusal,
    ObjectIndex,
    Repository,
    deployment_check,
    deployment_list,
    load_yaml,
)
from svc.layer._deployments import THE_OBJECT, decode_deployment, workspace_packages
from tests.conftest import make_checkout
from tests.layer._deploy_layer import DEPLOYMENTS, READ_IDS, UNREADABLE_FILES, WEB, write_deploy_layer
from tests.layer.test_graphs import _golden

#: The GET paths the checks are decided against (what svc's registry serves for health).
ROUTES = frozenset({"/api/v1/live", "/api/v1/ready", "/api/v1/health"})
FIVE = ("file", "key", "found", "problem", "correction")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_deploy_layer(tmp_path_factory.mktemp("deploy") / "checkout").resolve()


@pytest.fixture(scope="module")
def index(root: Path) -> ObjectIndex:
    return ObjectIndex.build(Repository.discover(root))


def _assert_complete(refusals: list[DeploymentRefusal], root: Path) -> None:
    for refusal in refusals:
        for name in FIVE:
            value = getattr(refusal, name)
            assert isinstance(value, str), (refusal, name)
            assert value.strip(), (refusal, name)
        assert str(root) not in msgspec.json.encode(refusal).decode(), refusal


def test_the_list_is_its_golden_answer_in_natural_order(index: ObjectIndex, root: Path) -> None:
    answer = deployment_list(index)
    _golden("deployments-list", answer)
    assert [d.id for d in answer.deployments] == READ_IDS
    assert answer.count == len(READ_IDS)
    assert sorted(r.file for r in answer.unreadable) == UNREADABLE_FILES
    _assert_complete(answer.unreadable, root)
    assert str(root) not in msgspec.json.encode(answer).decode()


def test_the_complete_object_is_its_golden_view(index: ObjectIndex) -> None:
    (web,) = (d for d in deployment_list(index).deployments if d.id == "web")
    _golden("deployments-web", web)
    assert web.file == f"{DEPLOYMENTS}/web.yaml"
    assert (web.listen.port, web.listen.interface) == (8080, "all")
    assert (web.health.liveness, web.health.readiness) == ("/api/v1/live", "/api/v1/ready")
    assert web.provider.fly is not None
    assert web.provider.fly.concurrency is not None
    assert (web.provider.fly.concurrency.soft_limit, web.provider.fly.concurrency.hard_limit) == (20, 40)
    assert web.created_at == "2026-01-15T09:30:00Z"


def test_the_check_is_its_golden_answer(index: ObjectIndex, root: Path) -> None:
    answer = deployment_check(index, root, ROUTES)
    _golden("deployments-check", answer)
    assert (answer.ok, answer.decided) == (False, len(READ_IDS))
    _assert_complete(answer.refusals, root)
    assert str(root) not in msgspec.json.encode(answer).decode()


def test_unreadable_files_are_refused_first_and_each_names_its_key(index: ObjectIndex, root: Path) -> None:
    refusals = deployment_check(index, root, ROUTES).refusals
    head = [(r.file.rsplit("/", 1)[-1], r.key, r.found) for r in refusals[: len(UNREADABLE_FILES)]]
    assert head[0][:2] == ("broken.yaml", THE_OBJECT)
    assert "is not YAML" in head[0][2]
    assert head[1:] == [
        ("nested-key.yaml", "build.dockerfile", "Dockerfile"),
        ("port-80.yaml", "listen.port", "80"),
        ("schema-v2.yaml", "schema", "deployment/v2"),
        ("top-key.yaml", "fly_api_token", "secret"),
    ]


@pytest.mark.parametrize(
    ("stem", "key", "found", "fragment"),
    [
        ("health-404", "health.liveness", "/healthz", "does not answer"),
        ("no-package", "build.package", "nowhere", "does not contain"),
        ("no-binary", "build.binary", "shipyard-cli", "not an executable shipyard produces"),
        ("climbing", "build.inputs.0", "../outside", "not a path inside"),
        ("climbing", "build.inputs.1", "/etc/passwd", "not a path inside"),
        ("climbing", "build.inputs.2", "src/../Dockerfile", "not a path inside"),
        ("climbing", "build.site", "../site", "not a path inside"),
        ("missing-input", "build.inputs.0", "not/here", "does not have"),
        ("missing-input", "build.inputs.1", "leak", "a symlink leaving the repository"),
        ("missing-input", "build.inputs.2", "leak/passwd", "a symlink leaving the repository"),
        ("overcommitted", "machines.min_running", "3", "above machines.count (2)"),
        ("loopback", "listen.interface", "loopback", "unreachable from outside"),
        ("soft-over-hard", "provider.fly.concurrency.soft_limit", "50", "above the hard limit (40)"),
    ],
)
def test_each_check_refuses_its_variant(
    index: ObjectIndex, root: Path, stem: str, key: str, found: str, fragment: str
) -> None:
    refusals = deployment_check(index, root, ROUTES).refusals
    mine = [r for r in refusals if r.file == f"{DEPLOYMENTS}/{stem}.yaml"]
    (hit,) = (r for r in mine if r.key == key)
    assert hit.found == found
    assert fragment in hit.problem


def test_valid_deployments_earn_no_refusal_and_their_corrections_name_the_alternatives(
    index: ObjectIndex, root: Path
) -> None:
    refusals = deployment_check(index, root, ROUTES).refusals
    assert not [r for r in refusals if r.file.rsplit("/", 1)[-1] in {"web.yaml", "web-2.yaml", "web-10.yaml"}]
    by_key = {r.key: r for r in refusals}
    assert by_key["build.package"].correction == "name one of: shipyard, tool, worker"
    assert by_key["build.binary"].correction == "name one of: shipyard, shipyard-admin"
    # Every read deployment's refusals follow the unreadable files, in natural order of id.
    files = [r.file for r in refusals[len(UNREADABLE_FILES) :]]
    stems = list(dict.fromkeys(f.rsplit("/", 1)[-1].removesuffix(".yaml") for f in files))
    assert stems == [i for i in READ_IDS if i in stems]


def test_a_health_path_is_refused_only_when_the_routes_lack_it(index: ObjectIndex, root: Path) -> None:
    narrow = deployment_check(index, root, {"/api/v1/live"}).refusals
    assert {(r.file.rsplit("/", 1)[-1], r.key) for r in narrow if r.key.startswith("health.")} >= {
        ("web.yaml", "health.readiness"),
        ("health-404.yaml", "health.liveness"),
    }
    wide = deployment_check(index, root, ROUTES | {"/healthz"}).refusals
    assert not [r for r in wide if r.key.startswith("health.")]


def test_the_workspace_packages_come_from_pyproject_and_cargo_manifests(root: Path) -> None:
    packages = workspace_packages(root)
    assert [(p.name, p.binaries, p.manifest) for p in packages] == [
        ("shipyard", ("shipyard", "shipyard-admin"), "pyproject.toml"),
        ("tool", ("tool",), "apps/tool/pyproject.toml"),
        ("worker", ("worker-run",), "apps/worker/Cargo.toml"),
    ]


def test_a_cargo_package_without_bin_targets_produces_its_own_name(tmp_path: Path) -> None:
    (tmp_path / "apps" / "lib").mkdir(parents=True)
    (tmp_path / "apps" / "lib" / "Cargo.toml").write_text('[package]\nname = "engine"\n')
    (tmp_path / "apps" / "linked").symlink_to(tmp_path / "apps" / "lib")
    packages = workspace_packages(tmp_path)
    assert [(p.name, p.binaries) for p in packages] == [("engine", ("engine",))]


# ---------------------------------------------------------------------------------------------- decoding


def _web() -> dict[str, Any]:
    loaded = load_yaml(WEB)
    assert isinstance(loaded, dict)
    return loaded


def _set(path: str, value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for name in parents:
            data = data[name]
        if value is _DROP:
            del data[last]
        else:
            data[last] = value

    return change


_DROP = object()


@pytest.mark.parametrize(
    ("path", "value", "key", "found", "fragment"),
    [
        ("listen.port", 80, "listen.port", "80", "below 1024"),
        ("listen.port", 70000, "listen.port", "70000", "above 65535"),
        ("listen.port", "8080", "listen.port", "8080", "text where a whole number is expected"),
        ("listen.interface", "public", "listen.interface", "public", "not one of the values"),
        ("health.liveness", "https://example.invalid/live", "health.liveness", "https://example.invalid/live", "/"),
        ("health.readiness", "/api//ready", "health.readiness", "/api//ready", "absolute path"),
        ("health.readiness", "/ready?full=1", "health.readiness", "/ready?full=1", "absolute path"),
        ("health.readiness", "/re ady", "health.readiness", "/re ady", "absolute path"),
        ("health.interval_seconds", 0, "health.interval_seconds", "0", "below 1"),
        ("resources.memory_mb", 0, "resources.memory_mb", "0", "below 1"),
        ("machines.count", -1, "machines.count", "-1", "below 1"),
        ("machines.autostop", "yes", "machines.autostop", "yes", "`true` or `false`"),
        ("status", "paused", "status", "paused", "not one of the values"),
        ("provider.name", "aws", "provider.name", "aws", "not one of the values"),
        ("budgets.image_bytes", 0, "budgets.image_bytes", "0", "below 1"),
        ("build.inputs", ["a", 3], "build.inputs.1", "3", "a whole number where text is expected"),
        ("build", "src", "build", "src", "text where a mapping is expected"),
        ("region", _DROP, "region", "(absent)", "missing"),
        ("build.binary", _DROP, "build.binary", "(absent)", "missing at `build`"),
        ("fly_api_token", "x", "fly_api_token", "x", "does not define at the top level"),
        ("build.dockerfile", "Dockerfile", "build.dockerfile", "Dockerfile", "does not define at `build`"),
        ("provider.fly.token", {"a": 1}, "provider.fly.token", '{"a":1}', "does not define at `provider.fly`"),
        ("schema", "deployment/v2", "schema", "deployment/v2", "reads deployment/v1"),
        ("schema", _DROP, "schema", "(absent)", "reads deployment/v1"),
        ("kind", "release-record", "kind", "release-record", "not `deployment`"),
    ],
)
def test_a_value_outside_the_shape_is_one_refusal_naming_all_five(
    path: str, value: Any, key: str, found: str, fragment: str
) -> None:
    data = copy.deepcopy(_web())
    _set(path, value)(data)
    refusal = decode_deployment(".ai/repo/deployments/x.yaml", data)
    assert isinstance(refusal, DeploymentRefusal), refusal
    assert (refusal.file, refusal.key, refusal.found) == (".ai/repo/deployments/x.yaml", key, found)
    assert fragment in refusal.problem, refusal.problem
    assert refusal.correction.strip()
    if key not in {"schema", "kind"}:
        assert key.split(".")[-1] in refusal.correction or "remove it" in refusal.correction


def test_the_complete_object_decodes_and_optional_blocks_default_empty() -> None:
    data = _web()
    del data["budgets"], data["provider"]["fly"], data["status"]
    decoded = decode_deployment("x.yaml", data)
    assert isinstance(decoded, Deployment)
    assert msgspec.json.encode(decoded.budgets) == b"{}"
    assert decoded.provider.fly is None
    assert decoded.status is None
    assert b'"status"' not in msgspec.json.encode(decoded)


def test_metadata_that_is_no_mapping_is_refused_as_the_object() -> None:
    refusal = decode_deployment("x.yaml", ["a", "list"])
    assert isinstance(refusal, DeploymentRefusal)
    assert (refusal.key, refusal.found) == (THE_OBJECT, '["a","list"]')


# ---------------------------------------------------------------------------------------------- other layers


def test_a_layer_without_deployments_lists_none_and_checks_clean(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "checkout")
    index = ObjectIndex.build(Repository.discover(root))
    assert msgspec.json.encode(deployment_list(index)) == b'{"count":0,"deployments":[]}'
    assert msgspec.json.encode(deployment_check(index, root, ROUTES)) == b'{"ok":true,"decided":0,"refusals":[]}'


def test_files_the_index_refuses_are_unreadable_deployments(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "checkout")
    folder = root / DEPLOYMENTS
    folder.mkdir(parents=True)
    (folder / "a.yaml").write_text(WEB)
    (folder / "b.yaml").write_text(WEB)  # the same id: both left out
    (folder / "linked.yaml").symlink_to("/etc/hostname")
    (folder / "no-id.yaml").write_text(WEB.replace("id: web\n", ""))
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
    answer = deployment_list(ObjectIndex.build(Repository.discover(root)))
    assert answer.count == 0
    assert [(r.file.rsplit("/", 1)[-1], r.key) for r in answer.unreadable] == [
        ("a.yaml", THE_OBJECT),
        ("b.yaml", THE_OBJECT),
        ("linked.yaml", THE_OBJECT),
        ("no-id.yaml", THE_OBJECT),
    ]
    _assert_complete(answer.unreadable, root)
    assert "duplicate_identity" in answer.unreadable[0].problem
    assert "symlink" in answer.unreadable[2].problem + answer.unreadable[2].found
    assert "`id`" in answer.unreadable[3].correction


def test_a_path_no_file_can_have_is_refused_without_touching_the_disk(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "checkout")
    folder = root / DEPLOYMENTS
    folder.mkdir(parents=True)
    text = WEB.replace("  inputs: [pyproject.toml, src/shipyard, Dockerfile]\n", '  inputs: ["a\\0b", "."]\n')
    (folder / "web.yaml").write_text(text)
    (root / "pyproject.toml").write_text('[project]\nname = "shipyard"\n')
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
    answer = deployment_check(ObjectIndex.build(Repository.discover(root)), root, ROUTES)
    assert [(r.key, r.found, r.problem) for r in answer.refusals] == [
        ("build.inputs.0", "a\x00b", "not a path inside the repository")
    ]
