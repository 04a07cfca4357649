"""Reading (and atomically writing) the checkout and its `.ai/` folder."""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc import _lazy

if TYPE_CHECKING:
    from svc.layer._continuity import ActiveTask as ActiveTask
    from svc.layer._continuity import Continuity as Continuity
    from svc.layer._continuity import ContinuityRecord as ContinuityRecord
    from svc.layer._continuity import ContinuityTallies as ContinuityTallies
    from svc.layer._continuity import OpenSession as OpenSession
    from svc.layer._continuity import continuity_state as continuity_state
    from svc.layer._deployments import Deployment as Deployment
    from svc.layer._deployments import DeploymentCheck as DeploymentCheck
    from svc.layer._deployments import DeploymentList as DeploymentList
    from svc.layer._deployments import DeploymentRefusal as DeploymentRefusal
    from svc.layer._deployments import DeploymentView as DeploymentView
    from svc.layer._deployments import deployment_check as deployment_check
    from svc.layer._deployments import deployment_list as deployment_list
    from svc.layer._design import DESIGN_ASSET_ROUTE as DESIGN_ASSET_ROUTE
    from svc.layer._design import DesignReport as DesignReport
    from svc.layer._design import design_system as design_system
    from svc.layer._design_contrast import ContrastReport as ContrastReport
    from svc.layer._design_contrast import design_contrast as design_contrast
    from svc.layer._design_render import DesignAsset as DesignAsset
    from svc.layer._design_render import design_asset as design_asset
    from svc.layer._directories import DirectoryReport as DirectoryReport
    from svc.layer._directories import DirectoryState as DirectoryState
    from svc.layer._directories import directory_report as directory_report
    from svc.layer._distribution_reports import TAG_PATTERN as DISTRIBUTION_TAG_PATTERN
    from svc.layer._distribution_reports import BuildReport as BuildReport
    from svc.layer._distribution_reports import DistributionReport as DistributionReport
    from svc.layer._distribution_reports import InstallabilityReport as InstallabilityReport
    from svc.layer._distribution_reports import ReleaseArtifactView as ReleaseArtifactView
    from svc.layer._distribution_reports import ReleasesReport as ReleasesReport
    from svc.layer._distribution_reports import distribution_artifact as distribution_artifact
    from svc.layer._distribution_reports import distribution_build as distribution_build
    from svc.layer._distribution_reports import distribution_model as distribution_model
    from svc.layer._distribution_reports import distribution_releases as distribution_releases
    from svc.layer._distribution_reports import distribution_status as distribution_status
    from svc.layer._env_model import EnvironmentProvenance as EnvironmentProvenance
    from svc.layer._env_model import RepositoryEnvironment as RepositoryEnvironment
    from svc.layer._files import ensure_local_state as ensure_local_state
    from svc.layer._files import remove_stale_temps as remove_stale_temps
    from svc.layer._files import temp_beside as temp_beside
    from svc.layer._files import write_all as write_all
    from svc.layer._files import write_atomic as write_atomic
    from svc.layer._front import front_matter as front_matter
    from svc.layer._git import run_git as run_git
    from svc.layer._graphs import GRAPH_IDS as GRAPH_IDS
    from svc.layer._graphs import CapabilityFacts as CapabilityFacts
    from svc.layer._graphs import Graph as Graph
    from svc.layer._graphs import GraphList as GraphList
    from svc.layer._graphs import ModuleFacts as ModuleFacts
    from svc.layer._graphs import RegistryFacts as RegistryFacts
    from svc.layer._graphs import derive_graph as derive_graph
    from svc.layer._graphs import graph_list as graph_list
    from svc.layer._index import LayerIndex as LayerIndex
    from svc.layer._lease import Executable as Executable
    from svc.layer._lease import Lease as Lease
    from svc.layer._lease import LeaseHeld as LeaseHeld
    from svc.layer._lease import acquire_lease as acquire_lease
    from svc.layer._lease import discard_lease as discard_lease
    from svc.layer._lease import pid_alive as pid_alive
    from svc.layer._lease import publish_url as publish_url
    from svc.layer._lease import read_lease as read_lease
    from svc.layer._lease import release_lease as release_lease
    from svc.layer._manifest import DEFAULT_SECTIONS as DEFAULT_SECTIONS
    from svc.layer._manifest import LayerReading as LayerReading
    from svc.layer._manifest import read_manifest as read_manifest
    from svc.layer._objects import SKIPPED_DIRS as SKIPPED_DIRS
    from svc.layer._objects import IndexDiagnostic as IndexDiagnostic
    from svc.layer._objects import LayerObject as LayerObject
    from svc.layer._objects import ObjectIndex as ObjectIndex
    from svc.layer._objects import ObjectProvenance as ObjectProvenance
    from svc.layer._objects import Provenance as Provenance
    from svc.layer._objects import SourceClass as SourceClass
    from svc.layer._objects import glob_regex as glob_regex
    from svc.layer._objects import literal_prefix as literal_prefix
    from svc.layer._objects import object_uri as object_uri
    from svc.layer._objects import source_classes as source_classes
    from svc.layer._read import MAX_FILE_BYTES as MAX_FILE_BYTES
    from svc.layer._read import ScannedFile as ScannedFile
    from svc.layer._read import Unreadable as Unreadable
    from svc.layer._read import check_repository_dir as check_repository_dir
    from svc.layer._read import check_repository_file as check_repository_file
    from svc.layer._read import clip as clip
    from svc.layer._read import read_repository_dir as read_repository_dir
    from svc.layer._read import read_repository_file as read_repository_file
    from svc.layer._read import scan_repository_dir as scan_repository_dir
    from svc.layer._repository import GitState as GitState
    from svc.layer._repository import Repository as Repository
    from svc.layer._repository import checkout_id as checkout_id
    from svc.layer._stamps import RACY_NS as RACY_NS
    from svc.layer._stamps import Stat as Stat
    from svc.layer._stamps import digest as digest
    from svc.layer._stamps import settled as settled
    from svc.layer._stamps import stat_key as stat_key
    from svc.layer._yaml import YamlAliases as YamlAliases
    from svc.layer._yaml import YamlError as YamlError
    from svc.layer._yaml import dump_yaml as dump_yaml
    from svc.layer._yaml import load_yaml as load_yaml

__getattr__, __dir__ = _lazy.exports(__name__, __file__)

__all__ = [
    "DEFAULT_SECTIONS",
    "DESIGN_ASSET_ROUTE",
    "DISTRIBUTION_TAG_PATTERN",
    "GRAPH_IDS",
    "MAX_FILE_BYTES",
    "RACY_NS",
    "SKIPPED_DIRS",
    "ActiveTask",
    "BuildReport",
    "CapabilityFacts",
    "Continuity",
    "ContinuityRecord",
    "ContinuityTallies",
    "ContrastReport",
    "Deployment",
    "DeploymentCheck",
    "DeploymentList",
    "DeploymentRefusal",
    "DeploymentView",
    "DesignAsset",
    "DesignReport",
    "DirectoryReport",
    "DirectoryState",
    "DistributionReport",
    "EnvironmentProvenance",
    "Executable",
    "GitState",
    "Graph",
    "GraphList",
    "IndexDiagnostic",
    "InstallabilityReport",
    "LayerIndex",
    "LayerObject",
    "LayerReading",
    "Lease",
    "LeaseHeld",
    "ModuleFacts",
    "ObjectIndex",
    "ObjectProvenance",
    "OpenSession",
    "Provenance",
    "RegistryFacts",
    "ReleaseArtifactView",
    "ReleasesReport",
    "Repository",
    "RepositoryEnvironment",
    "ScannedFile",
    "SourceClass",
    "Stat",
    "Unreadable",
    "YamlAliases",
    "YamlError",
    "acquire_lease",
    "check_repository_dir",
    "check_repository_file",
    "checkout_id",
    "clip",
    "continuity_state",
    "deployment_check",
    "deployment_list",
    "derive_graph",
    "design_asset",
    "design_contrast",
    "design_system",
    "digest",
    "directory_report",
    "discard_lease",
    "distribution_artifact",
    "distribution_build",
    "distribution_model",
    "distribution_releases",
    "distribution_status",
    "dump_yaml",
    "ensure_local_state",
    "front_matter",
    "glob_regex",
    "graph_list",
    "literal_prefix",
    "load_yaml",
    "object_uri",
    "pid_alive",
    "publish_url",
    "read_lease",
    "read_manifest",
    "read_repository_dir",
    "read_repository_file",
    "release_lease",
    "remove_stale_temps",
    "run_git",
    "scan_repository_dir",
    "settled",
    "source_classes",
    "stat_key",
    "temp_beside",
    "write_all",
    "write_atomic",
]
