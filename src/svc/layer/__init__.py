"""Reading (and atomically writing) the checkout and its `.ai/` folder."""

from __future__ import annotations

from svc.layer._continuity import ActiveTask as ActiveTask
from svc.layer._continuity import Continuity as Continuity
from svc.layer._continuity import ContinuityRecord as ContinuityRecord
from svc.layer._continuity import ContinuityTallies as ContinuityTallies
from svc.layer._continuity import OpenSession as OpenSession
from svc.layer._continuity import continuity_state as continuity_state
from svc.layer._directories import DirectoryReport as DirectoryReport
from svc.layer._directories import DirectoryState as DirectoryState
from svc.layer._directories import directory_report as directory_report
from svc.layer._env_model import EnvironmentProvenance as EnvironmentProvenance
from svc.layer._env_model import RepositoryEnvironment as RepositoryEnvironment
from svc.layer._files import ensure_local_state as ensure_local_state
from svc.layer._files import remove_stale_temps as remove_stale_temps
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
from svc.layer._yaml import YamlAliases as YamlAliases
from svc.layer._yaml import YamlError as YamlError
from svc.layer._yaml import dump_yaml as dump_yaml
from svc.layer._yaml import load_yaml as load_yaml

__all__ = [
    "DEFAULT_SECTIONS",
    "GRAPH_IDS",
    "MAX_FILE_BYTES",
    "SKIPPED_DIRS",
    "ActiveTask",
    "CapabilityFacts",
    "Continuity",
    "ContinuityRecord",
    "ContinuityTallies",
    "DirectoryReport",
    "DirectoryState",
    "EnvironmentProvenance",
    "Executable",
    "GitState",
    "Graph",
    "GraphList",
    "IndexDiagnostic",
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
    "Repository",
    "RepositoryEnvironment",
    "ScannedFile",
    "SourceClass",
    "Unreadable",
    "YamlAliases",
    "YamlError",
    "acquire_lease",
    "check_repository_dir",
    "check_repository_file",
    "checkout_id",
    "clip",
    "continuity_state",
    "derive_graph",
    "directory_report",
    "discard_lease",
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
    "source_classes",
    "write_atomic",
]
