"""The mesh over UDP: node identity, signed discovery, trust, the node registry, doctor and firewall.

A sans-I/O core (`MeshCore`: envelopes, checks, trust, registry, `register`) with thin trio socket tasks
around it (`ProviderSet`), assembled per runtime by `Mesh` and started by a server with `start_mesh`.
Cooperation (links, journal, claims) plugs in later through `MeshCore.link_handler` and the link socket.
"""

from __future__ import annotations

from svc.mesh_udp._canonical import DOMAIN_ENVELOPE as DOMAIN_ENVELOPE
from svc.mesh_udp._canonical import DOMAIN_EVENT as DOMAIN_EVENT
from svc.mesh_udp._canonical import NotCanonical as NotCanonical
from svc.mesh_udp._canonical import canonical_json as canonical_json
from svc.mesh_udp._canonical import link_domain as link_domain
from svc.mesh_udp._canonical import node_id_of as node_id_of
from svc.mesh_udp._canonical import sign_object as sign_object
from svc.mesh_udp._canonical import signed_bytes as signed_bytes
from svc.mesh_udp._canonical import verify_object as verify_object
from svc.mesh_udp._core import REFUSAL_REASONS as REFUSAL_REASONS
from svc.mesh_udp._core import Beacon as Beacon
from svc.mesh_udp._core import Handled as Handled
from svc.mesh_udp._core import MeshCore as MeshCore
from svc.mesh_udp._core import Outcome as Outcome
from svc.mesh_udp._declaration import DeclarationReading as DeclarationReading
from svc.mesh_udp._declaration import MeshDeclaration as MeshDeclaration
from svc.mesh_udp._declaration import read_declaration as read_declaration
from svc.mesh_udp._doctor import run_doctor as run_doctor
from svc.mesh_udp._firewall import AdmitCommand as AdmitCommand
from svc.mesh_udp._firewall import FirewallReport as FirewallReport
from svc.mesh_udp._firewall import Host as Host
from svc.mesh_udp._firewall import SystemHost as SystemHost
from svc.mesh_udp._firewall import firewall_report as firewall_report
from svc.mesh_udp._identity import IdentityError as IdentityError
from svc.mesh_udp._identity import IdentityReading as IdentityReading
from svc.mesh_udp._identity import NodeIdentity as NodeIdentity
from svc.mesh_udp._identity import create_identity as create_identity
from svc.mesh_udp._identity import display_path as display_path
from svc.mesh_udp._identity import identity_path as identity_path
from svc.mesh_udp._identity import read_identity as read_identity
from svc.mesh_udp._identity import repository_id as repository_id
from svc.mesh_udp._identity import runtime_id as runtime_id
from svc.mesh_udp._mesh import Mesh as Mesh
from svc.mesh_udp._mesh import start_mesh as start_mesh
from svc.mesh_udp._net import DatagramSocket as DatagramSocket
from svc.mesh_udp._net import Interface as Interface
from svc.mesh_udp._net import Network as Network
from svc.mesh_udp._net import SystemNetwork as SystemNetwork
from svc.mesh_udp._net import select_interfaces as select_interfaces
from svc.mesh_udp._nodes import NodeRegistry as NodeRegistry
from svc.mesh_udp._providers import PROVIDER_IDS as PROVIDER_IDS
from svc.mesh_udp._trust import TrustState as TrustState
from svc.mesh_udp._trust import TrustStore as TrustStore
from svc.mesh_udp._views import DoctorCheck as DoctorCheck
from svc.mesh_udp._views import MeshDoctorReport as MeshDoctorReport
from svc.mesh_udp._views import MeshIdentity as MeshIdentity
from svc.mesh_udp._views import MeshIdentityReport as MeshIdentityReport
from svc.mesh_udp._views import MeshStatus as MeshStatus
from svc.mesh_udp._views import NodeList as NodeList
from svc.mesh_udp._views import RegisterAnswer as RegisterAnswer
from svc.mesh_udp._wire import Envelope as Envelope
from svc.mesh_udp._wire import build_envelope as build_envelope
from svc.mesh_udp._wire import check_envelope as check_envelope

__all__ = [
    "DOMAIN_ENVELOPE",
    "DOMAIN_EVENT",
    "PROVIDER_IDS",
    "REFUSAL_REASONS",
    "AdmitCommand",
    "Beacon",
    "DatagramSocket",
    "DeclarationReading",
    "DoctorCheck",
    "Envelope",
    "FirewallReport",
    "Handled",
    "Host",
    "IdentityError",
    "IdentityReading",
    "Interface",
    "Mesh",
    "MeshCore",
    "MeshDeclaration",
    "MeshDoctorReport",
    "MeshIdentity",
    "MeshIdentityReport",
    "MeshStatus",
    "Network",
    "NodeIdentity",
    "NodeList",
    "NodeRegistry",
    "NotCanonical",
    "Outcome",
    "RegisterAnswer",
    "SystemHost",
    "SystemNetwork",
    "TrustState",
    "TrustStore",
    "build_envelope",
    "canonical_json",
    "check_envelope",
    "create_identity",
    "display_path",
    "firewall_report",
    "identity_path",
    "link_domain",
    "node_id_of",
    "read_declaration",
    "read_identity",
    "repository_id",
    "run_doctor",
    "runtime_id",
    "select_interfaces",
    "sign_object",
    "signed_bytes",
    "start_mesh",
    "verify_object",
]
