"""The mesh over UDP: node identity, signed discovery, trust, the node registry, cooperation, doctor, firewall.

Discovery is a sans-I/O core (`MeshCore`: envelopes, checks, trust, registry, `register`) with thin trio
socket tasks around it (`ProviderSet`). Cooperation is the same split: `Links` (hello / welcome admission,
sync rounds, refusals, who dials) and `Journal` (signed events, the ingest chain, marks and beats, the
file) are sans-I/O, `fold` turns a journal into one `CooperationState`, and `Cooperation` runs the link
tasks, the heartbeat and the writes. `Mesh` assembles both per runtime; a server starts it with `start_mesh`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any as _Any

from svc.mesh_udp._canonical import DOMAIN_ENVELOPE as DOMAIN_ENVELOPE
from svc.mesh_udp._canonical import DOMAIN_EVENT as DOMAIN_EVENT
from svc.mesh_udp._canonical import NotCanonical as NotCanonical
from svc.mesh_udp._canonical import canonical_json as canonical_json
from svc.mesh_udp._canonical import link_domain as link_domain
from svc.mesh_udp._canonical import node_id_of as node_id_of
from svc.mesh_udp._canonical import sign_object as sign_object
from svc.mesh_udp._canonical import signed_bytes as signed_bytes
from svc.mesh_udp._canonical import verify_object as verify_object
from svc.mesh_udp._coop_views import ClaimInput as ClaimInput
from svc.mesh_udp._coop_views import ClaimView as ClaimView
from svc.mesh_udp._coop_views import ConsumeAnswer as ConsumeAnswer
from svc.mesh_udp._coop_views import CooperationState as CooperationState
from svc.mesh_udp._coop_views import CooperationStatus as CooperationStatus
from svc.mesh_udp._coop_views import EventList as EventList
from svc.mesh_udp._coop_views import HandoverConsumeInput as HandoverConsumeInput
from svc.mesh_udp._coop_views import HandoverPublishInput as HandoverPublishInput
from svc.mesh_udp._coop_views import HandoverView as HandoverView
from svc.mesh_udp._coop_views import MeshEventsInput as MeshEventsInput
from svc.mesh_udp._coop_views import MeshStateAnswer as MeshStateAnswer
from svc.mesh_udp._coop_views import MeshVerifyReport as MeshVerifyReport
from svc.mesh_udp._coop_views import PeerDetail as PeerDetail
from svc.mesh_udp._coop_views import PeerInput as PeerInput
from svc.mesh_udp._coop_views import PeerTree as PeerTree
from svc.mesh_udp._coop_views import ReleaseInput as ReleaseInput
from svc.mesh_udp._coop_views import ReviewAnswerInput as ReviewAnswerInput
from svc.mesh_udp._coop_views import ReviewRequestInput as ReviewRequestInput
from svc.mesh_udp._coop_views import ReviewWithdrawInput as ReviewWithdrawInput
from svc.mesh_udp._coop_views import SessionCloseInput as SessionCloseInput
from svc.mesh_udp._coop_views import SessionInput as SessionInput
from svc.mesh_udp._coop_views import StateFilter as StateFilter
from svc.mesh_udp._coop_views import Written as Written
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
from svc.mesh_udp._mesh import NOT_RUNNING as NOT_RUNNING
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

#: Names whose modules only a running mesh needs (links, the journal, the fold, handover records): loaded on
#: first use, so a command line that declares the mesh's capabilities does not import them.
_LAZY: dict[str, str] = {
    "ClaimChoice": "svc.mesh_udp._cooperation",
    "Cooperation": "svc.mesh_udp._cooperation",
    "board_session": "svc.mesh_udp._cooperation",
    "Event": "svc.mesh_udp._events",
    "fold": "svc.mesh_udp._fold",
    "Journal": "svc.mesh_udp._journal",
    "JournalStore": "svc.mesh_udp._journal",
    "Links": "svc.mesh_udp._links",
    "materialize_handover": "svc.mesh_udp._handovers",
    "read_handover": "svc.mesh_udp._handovers",
}

if TYPE_CHECKING:
    from svc.mesh_udp._cooperation import ClaimChoice as ClaimChoice
    from svc.mesh_udp._cooperation import Cooperation as Cooperation
    from svc.mesh_udp._cooperation import board_session as board_session
    from svc.mesh_udp._events import Event as Event
    from svc.mesh_udp._fold import fold as fold
    from svc.mesh_udp._handovers import materialize_handover as materialize_handover
    from svc.mesh_udp._handovers import read_handover as read_handover
    from svc.mesh_udp._journal import Journal as Journal
    from svc.mesh_udp._journal import JournalStore as JournalStore
    from svc.mesh_udp._links import Links as Links


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "DOMAIN_ENVELOPE",
    "DOMAIN_EVENT",
    "NOT_RUNNING",
    "PROVIDER_IDS",
    "REFUSAL_REASONS",
    "AdmitCommand",
    "Beacon",
    "ClaimChoice",
    "ClaimInput",
    "ClaimView",
    "ConsumeAnswer",
    "Cooperation",
    "CooperationState",
    "CooperationStatus",
    "DatagramSocket",
    "DeclarationReading",
    "DoctorCheck",
    "Envelope",
    "Event",
    "EventList",
    "FirewallReport",
    "Handled",
    "HandoverConsumeInput",
    "HandoverPublishInput",
    "HandoverView",
    "Host",
    "IdentityError",
    "IdentityReading",
    "Interface",
    "Journal",
    "JournalStore",
    "Links",
    "Mesh",
    "MeshCore",
    "MeshDeclaration",
    "MeshDoctorReport",
    "MeshEventsInput",
    "MeshIdentity",
    "MeshIdentityReport",
    "MeshStateAnswer",
    "MeshStatus",
    "MeshVerifyReport",
    "Network",
    "NodeIdentity",
    "NodeList",
    "NodeRegistry",
    "NotCanonical",
    "Outcome",
    "PeerDetail",
    "PeerInput",
    "PeerTree",
    "RegisterAnswer",
    "ReleaseInput",
    "ReviewAnswerInput",
    "ReviewRequestInput",
    "ReviewWithdrawInput",
    "SessionCloseInput",
    "SessionInput",
    "StateFilter",
    "SystemHost",
    "SystemNetwork",
    "TrustState",
    "TrustStore",
    "Written",
    "board_session",
    "build_envelope",
    "canonical_json",
    "check_envelope",
    "create_identity",
    "display_path",
    "firewall_report",
    "fold",
    "identity_path",
    "link_domain",
    "materialize_handover",
    "node_id_of",
    "read_declaration",
    "read_handover",
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
