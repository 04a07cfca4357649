"""The plan: derived from the `.ai/` records on every read, validated, and moved only by sealed transitions.

Sans-I/O at its core: `load_records` parses ``(file name, bytes)`` pairs, `derive` is a pure function of
the records, the view functions shape each capability's answer, `set_fields`/`stamp_record` rewrite record
text. `read_snapshot`, `move_issue`, `repair_ledger`, `reseal` and the ledger functions are the thin file
layer (directory reads, the cross-process lock, atomic writes, the append-only ledger and its crash repair).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svc import _lazy

if TYPE_CHECKING:
    from svc.plan._derive import derive as derive
    from svc.plan._derive import overlap as overlap
    from svc.plan._derive import priority_rank as priority_rank
    from svc.plan._derive import reconcile as reconcile
    from svc.plan._edit import check_move as check_move
    from svc.plan._edit import reseal_record as reseal_record
    from svc.plan._edit import set_fields as set_fields
    from svc.plan._edit import stamp_record as stamp_record
    from svc.plan._ledger import LedgerError as LedgerError
    from svc.plan._ledger import LedgerReading as LedgerReading
    from svc.plan._ledger import append_line as append_line
    from svc.plan._ledger import declared_events as declared_events
    from svc.plan._ledger import ledger_line as ledger_line
    from svc.plan._ledger import read_ledger as read_ledger
    from svc.plan._load import IssueRecord as IssueRecord
    from svc.plan._load import MilestoneRecord as MilestoneRecord
    from svc.plan._load import ProjectRecord as ProjectRecord
    from svc.plan._load import Records as Records
    from svc.plan._load import load_records as load_records
    from svc.plan._model import FINDING_CODES as FINDING_CODES
    from svc.plan._model import FINDING_LEVELS as FINDING_LEVELS
    from svc.plan._model import ISSUE_STATUSES as ISSUE_STATUSES
    from svc.plan._model import MILESTONE_STATUSES as MILESTONE_STATUSES
    from svc.plan._model import FindingCode as FindingCode
    from svc.plan._model import FindingLevel as FindingLevel
    from svc.plan._model import Plan as Plan
    from svc.plan._model import PlanCounts as PlanCounts
    from svc.plan._model import PlanEdge as PlanEdge
    from svc.plan._model import PlanFinding as PlanFinding
    from svc.plan._model import PlanFindingCounts as PlanFindingCounts
    from svc.plan._model import PlanIssue as PlanIssue
    from svc.plan._model import PlanIssueList as PlanIssueList
    from svc.plan._model import PlanIssueRecord as PlanIssueRecord
    from svc.plan._model import PlanMilestone as PlanMilestone
    from svc.plan._model import PlanMilestoneProgress as PlanMilestoneProgress
    from svc.plan._model import PlanMilestoneRecord as PlanMilestoneRecord
    from svc.plan._model import PlanNextIssue as PlanNextIssue
    from svc.plan._model import PlanProject as PlanProject
    from svc.plan._model import PlanRoadmap as PlanRoadmap
    from svc.plan._model import PlanSkipped as PlanSkipped
    from svc.plan._model import PlanStatusReport as PlanStatusReport
    from svc.plan._model import PlanTake as PlanTake
    from svc.plan._model import PlanTransition as PlanTransition
    from svc.plan._model import PlanTransitionResult as PlanTransitionResult
    from svc.plan._model import PlanUnprovenStamp as PlanUnprovenStamp
    from svc.plan._model import PlanValidation as PlanValidation
    from svc.plan._model import PlanVocabulary as PlanVocabulary
    from svc.plan._model import PlanWave as PlanWave
    from svc.plan._model import PlanWaveReport as PlanWaveReport
    from svc.plan._model import PlanWaveView as PlanWaveView
    from svc.plan._proof import UnprovenStamp as UnprovenStamp
    from svc.plan._proof import unproven_stamps as unproven_stamps
    from svc.plan._seal import LEGACY_CUTOFF as LEGACY_CUTOFF
    from svc.plan._seal import MOVES as MOVES
    from svc.plan._seal import SEAL_SCHEMA as SEAL_SCHEMA
    from svc.plan._seal import Move as Move
    from svc.plan._seal import domain_problem as domain_problem
    from svc.plan._seal import known_domains as known_domains
    from svc.plan._seal import proven as proven
    from svc.plan._seal import seal as seal
    from svc.plan._store import LedgerRepair as LedgerRepair
    from svc.plan._store import Reseal as Reseal
    from svc.plan._store import ResealStamp as ResealStamp
    from svc.plan._store import Snapshot as Snapshot
    from svc.plan._store import move_issue as move_issue
    from svc.plan._store import read_plan as read_plan
    from svc.plan._store import read_snapshot as read_snapshot
    from svc.plan._store import repair_ledger as repair_ledger
    from svc.plan._store import reseal as reseal
    from svc.plan._views import FAILURES_COMMAND as FAILURES_COMMAND
    from svc.plan._views import NO_ISSUE as NO_ISSUE
    from svc.plan._views import NONE_READY as NONE_READY
    from svc.plan._views import NONE_UNCLAIMED as NONE_UNCLAIMED
    from svc.plan._views import Passing as Passing
    from svc.plan._views import issue_list as issue_list
    from svc.plan._views import next_issue as next_issue
    from svc.plan._views import next_ready as next_ready
    from svc.plan._views import next_unclaimed as next_unclaimed
    from svc.plan._views import record_view as record_view
    from svc.plan._views import roadmap as roadmap
    from svc.plan._views import status_report as status_report
    from svc.plan._views import validation as validation
    from svc.plan._views import wave_report as wave_report
    from svc.plan._where import project_directory as project_directory

__getattr__, __dir__ = _lazy.exports(__name__, __file__)

__all__ = [
    "FAILURES_COMMAND",
    "FINDING_CODES",
    "FINDING_LEVELS",
    "ISSUE_STATUSES",
    "LEGACY_CUTOFF",
    "MILESTONE_STATUSES",
    "MOVES",
    "NONE_READY",
    "NONE_UNCLAIMED",
    "NO_ISSUE",
    "SEAL_SCHEMA",
    "FindingCode",
    "FindingLevel",
    "IssueRecord",
    "LedgerError",
    "LedgerReading",
    "LedgerRepair",
    "MilestoneRecord",
    "Move",
    "Passing",
    "Plan",
    "PlanCounts",
    "PlanEdge",
    "PlanFinding",
    "PlanFindingCounts",
    "PlanIssue",
    "PlanIssueList",
    "PlanIssueRecord",
    "PlanMilestone",
    "PlanMilestoneProgress",
    "PlanMilestoneRecord",
    "PlanNextIssue",
    "PlanProject",
    "PlanRoadmap",
    "PlanSkipped",
    "PlanStatusReport",
    "PlanTake",
    "PlanTransition",
    "PlanTransitionResult",
    "PlanUnprovenStamp",
    "PlanValidation",
    "PlanVocabulary",
    "PlanWave",
    "PlanWaveReport",
    "PlanWaveView",
    "ProjectRecord",
    "Records",
    "Reseal",
    "ResealStamp",
    "Snapshot",
    "UnprovenStamp",
    "append_line",
    "check_move",
    "declared_events",
    "derive",
    "domain_problem",
    "issue_list",
    "known_domains",
    "ledger_line",
    "load_records",
    "move_issue",
    "next_issue",
    "next_ready",
    "next_unclaimed",
    "overlap",
    "priority_rank",
    "project_directory",
    "proven",
    "read_ledger",
    "read_plan",
    "read_snapshot",
    "reconcile",
    "record_view",
    "repair_ledger",
    "reseal",
    "reseal_record",
    "roadmap",
    "seal",
    "set_fields",
    "stamp_record",
    "status_report",
    "unproven_stamps",
    "validation",
    "wave_report",
]
