"""rewinddb: the state layer for AI agents.

Every attempt gets its own branch (forking copies nothing), every write is a version on
one DB-wide clock, and every read can be taken ``as_of`` any past version::

    import rewinddb

    with rewinddb.open("./agent") as db:
        db.kv.put("task", "reduce risk")
        db.branches.fork("default", "run-1")
        work = db.at(branch="run-1")
        work.events.append("tool.call", {"tool": "read"})
"""

from __future__ import annotations

if __name__ != "rewinddb":  # pragma: no cover - a packaging guard
    raise ImportError(
        f"rewinddb's core was imported as {__name__!r}; import it as 'rewinddb' "
        "(install the project with pip install -e . and run pytest with "
        "--import-mode=importlib)"
    )

from ._values import MAX_DEPTH
from .blame import LastWrite
from .branches import Branches
from .database import BranchView, Database, open
from .diff import Change, Diff, KeyVersion, Point
from .errors import (
    AppendConflictError,
    BranchExistsError,
    BranchNotFound,
    ConnectionLostError,
    CorruptDatabaseError,
    DatabaseBusyError,
    DatabaseClosedError,
    EventNotFound,
    HistoryUnavailableError,
    ImportFormatError,
    InvalidInputError,
    InvalidJSONPathError,
    InvalidValueError,
    MergeConflictError,
    NotADatabaseError,
    NotFoundError,
    ReadOnlyError,
    RewindError,
)
from .events import EventLogDiff, Verification, diff_event_logs
from .graph import GraphBranch, GraphEdge, GraphPoint, HistoryGraph
from .merge import MergeChange, MergeConflict, MergeReceipt
from .models import Branch, Commit, ErasureReceipt, Event, EventItem, HistoryEntry
from .retention import GcReport, RetentionPolicy
from .state import State, Transition
from .transfer import TransferCounts
from .verify import BranchCheck, DatabaseVerification, Problem

__version__ = "0.1.0"

__all__ = [
    "MAX_DEPTH",
    "AppendConflictError",
    "Branch",
    "BranchCheck",
    "BranchExistsError",
    "BranchNotFound",
    "BranchView",
    "Branches",
    "Change",
    "Commit",
    "ConnectionLostError",
    "CorruptDatabaseError",
    "Database",
    "DatabaseBusyError",
    "DatabaseClosedError",
    "DatabaseVerification",
    "Diff",
    "Event",
    "EventItem",
    "EventLogDiff",
    "EventNotFound",
    "GraphBranch",
    "GraphEdge",
    "GraphPoint",
    "HistoryGraph",
    "HistoryEntry",
    "HistoryUnavailableError",
    "ImportFormatError",
    "InvalidInputError",
    "InvalidJSONPathError",
    "InvalidValueError",
    "KeyVersion",
    "LastWrite",
    "MergeChange",
    "MergeConflict",
    "MergeConflictError",
    "MergeReceipt",
    "ErasureReceipt",
    "GcReport",
    "RetentionPolicy",
    "NotADatabaseError",
    "NotFoundError",
    "Point",
    "Problem",
    "ReadOnlyError",
    "RewindError",
    "State",
    "TransferCounts",
    "Transition",
    "Verification",
    "__version__",
    "diff_event_logs",
    "open",
]
