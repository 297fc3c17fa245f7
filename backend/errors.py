"""Every error rewinddb raises: one base class with a stable dotted ``code``, and the
registry of those codes (``CODES``).

Callers can catch ``RewindError`` and switch on ``err.code``; the specific classes
also subclass the builtin that fits (``KeyError``, ``ValueError``) so idiomatic
``except KeyError`` keeps working. Every code rewinddb raises is declared once in
``CODES``, with what it means, the HTTP status the web explorer answers it with and what
raises it; docs/errors.md is that table, and a test ties both to the raise sites.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class ErrorCode:
    """One registered code: what it means, the web explorer's HTTP status for it, and
    which exception class (and which calls) raise it."""

    code: str
    status: int
    meaning: str
    raised_by: str


def _registry(*entries: tuple[str, int, str, str]) -> Mapping[str, ErrorCode]:
    table: dict[str, ErrorCode] = {}
    for code, status, meaning, raised_by in entries:
        if code in table:
            raise ValueError(f"error code {code!r} is registered twice")
        table[code] = ErrorCode(code, status, meaning, raised_by)
    return MappingProxyType(table)


_CORRUPT_TABLE = "the table {} holds a row that breaks the schema's rules, or is missing"

#: Every code rewinddb raises, in the order docs/errors.md lists them. Codes are
#: stable: one is added here before anything raises it, and never renamed.
CODES: Mapping[str, ErrorCode] = _registry(
    # -- something named does not exist: 404 ---------------------------------------------
    (
        "not_found.engine.branch",
        404,
        "the branch does not exist, or was deleted",
        "`BranchNotFound`: any call naming a branch (`db.at`, `branches.get`, `fork`, `merge`)",
    ),
    (
        "not_found.event",
        404,
        "no event with that sequence number on the branch (at that version)",
        "`EventNotFound`: `events.get`",
    ),
    (
        "not_found.key",
        404,
        "no branch ever wrote that key (nothing to erase)",
        "`NotFoundError`: `db.erase_key`",
    ),
    (
        "not_found.database",
        404,
        "no rewinddb database at the path or URL, and `create=False`",
        "`NotFoundError`: `rewinddb.open`",
    ),
    (
        "not_found.transition",
        404,
        "the state has no transition with that id on the branch",
        "`NotFoundError`: `state.replay_to`",
    ),
    (
        "not_found.step",
        404,
        "the branch's story has no step with that version or id",
        "`NotFoundError`: `rewinddb.story`, presenters' `step`/`step_by_id`",
    ),
    (
        "not_found.checkpoint",
        404,
        "the LangGraph thread has no checkpoint with that id",
        "`NotFoundError`: the LangGraph presenter (`/checkpoints/<id>` in the explorer)",
    ),
    (
        "history_unavailable",
        404,
        "the version asked for is not part of the branch's history (before the branch "
        "existed, or removed by retention); a merge whose base is such history, or on a "
        "purged branch no branch reads there any more",
        "`HistoryUnavailableError`: any read with `as_of=`, `branches.merge`",
    ),
    (
        "not_found",
        404,
        "the explorer's URL names nothing there: an event past the end, a key never written, "
        "a path segment that is not a tilde-encoded name",
        "the web explorer",
    ),
    ("not_found.page", 404, "there is no page at that URL", "the web explorer"),
    # -- bad input: 422 (a name in a URL that cannot exist: 404) -------------------------
    (
        "invalid.value",
        422,
        "a value that is neither JSON (without NaN or Infinity) nor bytes",
        "`InvalidValueError`: every write (`kv.put`, `json.set`, `state.set`, `events.append`)",
    ),
    (
        "invalid.json_path",
        422,
        "a JSONPath outside the supported subset, or one that cannot be applied to the document",
        "`InvalidJSONPathError`: `json.get`, `json.set`, `json.delete`",
    ),
    (
        "invalid.key",
        404,
        "a key that is not a non-empty string without NUL (at most 1,024 characters)",
        "`InvalidInputError`: every call taking a key",
    ),
    (
        "invalid.branch",
        404,
        "a branch name that is not a non-empty string without NUL (at most 1,024 characters)",
        "`InvalidInputError`: every call taking a branch name",
    ),
    (
        "invalid.branch.default",
        422,
        "the default branch cannot be deleted",
        "`InvalidInputError`: `branches.delete`",
    ),
    (
        "invalid.missing_ok",
        422,
        "`missing_ok` must be True or False",
        "`InvalidInputError`: `db.erase_keys`",
    ),
    (
        "invalid.purge",
        422,
        "`purge` must be True or False",
        "`InvalidInputError`: `branches.delete`",
    ),
    (
        "invalid.branch.pinned",
        422,
        "the branch is pinned: unpin it before deleting or purging it",
        "`InvalidInputError`: `branches.delete`, `db.gc`",
    ),
    (
        "invalid.retention",
        422,
        "a retention policy or gc argument that cannot apply (a pattern that matches "
        "`default`, `keep_last` below 1, a `max_age` that is not a positive duration)",
        "`InvalidInputError`: `db.retain`, `db.gc`, `prune`, `RewindSaver.prune` and "
        "`delete_for_runs`, `rewinddb retain`",
    ),
    (
        "invalid.as_of",
        404,
        "`as_of` is neither a version that exists yet nor a timezone-aware "
        "datetime that is not in the future",
        "`InvalidInputError`: any read with `as_of=`",
    ),
    (
        "invalid.event_type",
        422,
        "an event type that is not a non-empty string without NUL",
        "`InvalidInputError`: `events.append`, `events.list`",
    ),
    (
        "invalid.trigger",
        422,
        "`trigger=` is not a string (without NUL) or None",
        "`InvalidInputError`: every write",
    ),
    (
        "invalid.message",
        422,
        "`message=` is not a string (without NUL) or None",
        "`InvalidInputError`: every write",
    ),
    (
        "invalid.prefix",
        422,
        "`prefix=` is not a string (without NUL) or None",
        "`InvalidInputError`: `kv.keys`, `json.keys`, `state.keys`",
    ),
    (
        "invalid.search",
        422,
        "`search=` is not a string (without NUL) or None",
        "`InvalidInputError`: `events.list`",
    ),
    (
        "invalid.limit",
        422,
        "`limit=` is not a non-negative int (at least 1 for a story's pages)",
        "`InvalidInputError`: `commits`, `history`, `events.list`, `key_history`, "
        "presenters' `steps`/`transcript`",
    ),
    (
        "invalid.before",
        422,
        "`before=` is not a non-negative int (a version)",
        "`InvalidInputError`: `commits`, `commit_count`, `history`, presenters' `steps`/"
        "`transcript`",
    ),
    (
        "invalid.after",
        422,
        "`after=` is not a non-negative int (a sequence number, or for steps, commits and "
        "key histories a version)",
        "`InvalidInputError`: `events.list`, `commits`, `key_history`, presenters' `steps`",
    ),
    (
        "invalid.version",
        422,
        "a version that is not a non-negative int",
        "`InvalidInputError`: `written`, presenters' `step`",
    ),
    (
        "invalid.sequence",
        422,
        "an event sequence number that is not a non-negative int",
        "`InvalidInputError`: `events.get`",
    ),
    (
        "invalid.expected_index",
        422,
        "`expected_index=` is not a non-negative int",
        "`InvalidInputError`: `events.append`",
    ),
    (
        "invalid.max_points_per_branch",
        422,
        "`max_points_per_branch=` is not a non-negative int",
        "`InvalidInputError`: `db.graph`",
    ),
    (
        "invalid.readable",
        422,
        "`readable=` is not True or False",
        "`InvalidInputError`: `diff`, `key_history`",
    ),
    (
        "invalid.savepoints",
        422,
        "`savepoints=` is not True or False",
        "`InvalidInputError`: `db.atomic`",
    ),
    (
        "invalid.kv",
        422,
        "`put_many` takes a non-empty dict of key -> value",
        "`InvalidInputError`: `kv.put_many`",
    ),
    (
        "invalid.state",
        422,
        "`set_many` takes a non-empty dict of key -> value",
        "`InvalidInputError`: `state.set_many`",
    ),
    (
        "invalid.snapshot",
        422,
        "`restore` takes a snapshot: dicts of key -> value (from `snapshot()`)",
        "`InvalidInputError`: `db.restore`, `state.restore`",
    ),
    (
        "invalid.space",
        422,
        "a space that is not `kv`, `json` or `state`",
        "`InvalidInputError`: `key_history`, the explorer's key pages",
    ),
    (
        "invalid.transition",
        422,
        "a transition id that is not of the form `12:phase`",
        "`InvalidInputError`: `state.replay_to`",
    ),
    (
        "invalid.fork",
        422,
        "a fork point that cannot be used (`at=` with `at_event=`, or an "
        "event sharing its version with the events after it)",
        "`InvalidInputError`: `branches.fork`",
    ),
    (
        "invalid.merge",
        422,
        "a branch cannot be merged into itself",
        "`InvalidInputError`: `branches.merge`",
    ),
    (
        "invalid.strategy",
        422,
        "`strategy=` is not `fail`, `source` or `target`",
        "`InvalidInputError`: `branches.merge`",
    ),
    (
        "invalid.events",
        422,
        "`events=` is not `skip` or `append` (merge), or not True or False (diff)",
        "`InvalidInputError`: `branches.merge`, `diff`",
    ),
    (
        "invalid.event_log",
        422,
        "`diff_event_logs` compares branch views or lists of events, "
        "`by=` being `content` or `hash`",
        "`InvalidInputError`: `diff_event_logs`",
    ),
    (
        "invalid.transaction",
        422,
        "a call the open transaction or read cannot hold (a write in "
        "`db.read()`, a second branch, a fork of a branch it wrote, a second merge source)",
        "`RewindError` (`InvalidInputError` for `merge`): writes, `fork`, `merge` in a transaction",
    ),
    (
        "invalid.branches",
        422,
        "`branches=` is not a list of branch names",
        "`RewindError`: `export_jsonl`",
    ),
    (
        "invalid.output",
        422,
        "`export_jsonl` writes bytes: the file must be open in binary mode",
        "`RewindError`: `export_jsonl`",
    ),
    (
        "invalid.import",
        422,
        "the input is not a rewinddb export (the message names the line and why)",
        "`ImportFormatError`, `RewindError`: `import_jsonl`, `rewinddb import`",
    ),
    (
        "invalid.database",
        422,
        "the path exists but is not a rewinddb database",
        "`NotADatabaseError`: `rewinddb.open`",
    ),
    (
        "invalid.path",
        422,
        "a database path or URL that cannot be used",
        "`RewindError`: `rewinddb.open`, `rewinddb.web.create_app`",
    ),
    (
        "invalid.option",
        422,
        "an option of `open` or of the explorer out of range "
        "(`durability`, `busy_timeout`, `read_connections`, `allowed_hosts`...)",
        "`RewindError`, `InvalidInputError`: `rewinddb.open`, `rewinddb.web.create_app`",
    ),
    (
        "invalid.config",
        422,
        "a LangGraph config `RewindSaver` cannot take: a thread id over 65,536 characters "
        "or not valid text, a checkpoint id over 64 characters",
        "`InvalidInputError`: `RewindSaver` (`get_tuple`, `put`, `put_writes`, `list`, "
        "`delete_thread`, `copy_thread`, `prune`)",
    ),
    (
        "unsupported.backend",
        422,
        "a URL scheme rewinddb has no backend for (SQLite takes a "
        "directory, PostgreSQL a `postgresql://` URL)",
        "`RewindError`: `rewinddb.open`",
    ),
    (
        "invalid.presenter",
        422,
        "`register` takes a `Presenter`",
        "`InvalidInputError`: `rewinddb.presenters.register`",
    ),
    (
        "invalid.checkpoint",
        422,
        "a LangGraph checkpoint id that is not a string",
        "`InvalidInputError`: the LangGraph presenter's `step_by_id`",
    ),
    (
        "invalid.point",
        422,
        "a compare point that is not `branch@version`",
        "`InvalidInputError`: the notebook's compare box",
    ),
    (
        "invalid.compare",
        422,
        "the explorer's compare page needs `a=BRANCH@VERSION` and `b=BRANCH@VERSION`",
        "`InvalidInputError`: the web explorer",
    ),
    (
        "invalid.step",
        400,
        "a step in the explorer's URL that is not a version number",
        "the web explorer",
    ),
    (
        "invalid.request",
        422,
        "a request parameter or form field the explorer's route refuses (FastAPI's validation)",
        "the web explorer",
    ),
    ("invalid.body", 400, "a request body the explorer could not read", "the web explorer"),
    ("invalid.method", 405, "the URL does not take that HTTP method", "the web explorer"),
    (
        "invalid.host",
        421,
        "the request's Host is not one this explorer answers for (a missing "
        "or malformed Host header gets 400)",
        "the web explorer",
    ),
    (
        "invalid.postgresql",
        422,
        "a server given by URL is not the test server's to start or stop",
        "`RewindError`: `rewinddb.testing`",
    ),
    # -- conflicts with what is there: 409 -----------------------------------------------
    (
        "conflict.branch_exists",
        409,
        "a branch with that name already exists",
        "`BranchExistsError`: `branches.fork`, `import_jsonl`",
    ),
    (
        "conflict.merge",
        409,
        'the merge found conflicting changes with `strategy="fail"`; nothing was written',
        "`MergeConflictError`: `branches.merge`",
    ),
    (
        "conflict.append",
        409,
        "`expected_index=` did not match the length of the event log",
        "`AppendConflictError`: `events.append`",
    ),
    (
        "conflict.import",
        409,
        "import needs a database with no history yet",
        "`RewindError`: `import_jsonl`, `rewinddb import`",
    ),
    (
        "demo.exists",
        409,
        "the demo's directory already holds a database with history",
        "`RewindError`: `rewinddb.demo.build_demo`, `rewinddb demo`",
    ),
    # -- refused: 403 ----------------------------------------------------------------------
    ("readonly", 403, "a write on a database opened read-only", "`ReadOnlyError`: every write"),
    (
        "csrf",
        403,
        "a write without the page's CSRF token, or from a foreign Origin",
        "the web explorer",
    ),
    # -- try again later: 503 --------------------------------------------------------------
    (
        "busy",
        503,
        "another process held the write lock for longer than `busy_timeout`",
        "`DatabaseBusyError`: every write",
    ),
    (
        "closed",
        503,
        "the database was closed; open it again to continue",
        "`DatabaseClosedError`: every call after `close()`",
    ),
    (
        "connection_lost",
        503,
        "the PostgreSQL server went away during the call; nothing of an "
        "open transaction was kept, and the next call reconnects",
        "`ConnectionLostError`: every call on PostgreSQL",
    ),
    # -- the caller's transaction cannot go on: 422 ----------------------------------------
    (
        "transaction.aborted",
        422,
        "a write inside `db.atomic(savepoints=False)` failed: the "
        "transaction rolls back whole and writes no more",
        "`RewindError`: writes in `db.atomic(savepoints=False)`",
    ),
    # -- the database or the machine: 500 --------------------------------------------------
    (
        "schema.outdated",
        500,
        "the database has an older schema: run `rewinddb migrate` (or open it writable once)",
        "`RewindError`: `rewinddb.open(readonly=True)`, `verify`, `rewinddb migrate`",
    ),
    (
        "storage",
        500,
        "SQLite or PostgreSQL failed (a full disk, an I/O error); nothing of the call was written",
        "`RewindError`: every call",
    ),
    (
        "corrupt",
        500,
        "the database file is damaged, or a table is missing",
        "`CorruptDatabaseError`: every call",
    ),
    (
        "corrupt.meta",
        500,
        _CORRUPT_TABLE.format("rewind_meta"),
        "`CorruptDatabaseError`: every call",
    ),
    (
        "corrupt.branches",
        500,
        _CORRUPT_TABLE.format("rewind_branches"),
        "`CorruptDatabaseError`: every call",
    ),
    (
        "corrupt.commits",
        500,
        _CORRUPT_TABLE.format("rewind_commits"),
        "`CorruptDatabaseError`: every call",
    ),
    (
        "corrupt.entries",
        500,
        _CORRUPT_TABLE.format("rewind_entries"),
        "`CorruptDatabaseError`: every call",
    ),
    (
        "corrupt.seqs",
        500,
        _CORRUPT_TABLE.format("rewind_seqs"),
        "`CorruptDatabaseError`: every call",
    ),
    (
        "corrupt.seq_items",
        500,
        _CORRUPT_TABLE.format("rewind_seq_items"),
        "`CorruptDatabaseError`: every call",
    ),
    (
        "corrupt.events",
        500,
        _CORRUPT_TABLE.format("rewind_events"),
        "`CorruptDatabaseError`: every call",
    ),
    (
        "corrupt.horizons",
        500,
        _CORRUPT_TABLE.format("rewind_horizons"),
        "`CorruptDatabaseError`: every call",
    ),
    (
        "missing.dependency",
        500,
        "an optional dependency is not installed (the message names the extra to install)",
        "`RewindError`: PostgreSQL, `rewinddb serve`, the branch graph's plot, `rewinddb.testing`",
    ),
    (
        "missing.postgresql",
        500,
        "PostgreSQL's server is not installed on this machine",
        "`RewindError`: `rewinddb.testing`",
    ),
    (
        "postgresql.failed",
        500,
        "a PostgreSQL server program (`initdb`, `pg_ctl`) failed",
        "`RewindError`: `rewinddb.testing`",
    ),
)


class UnregisteredCodeWarning(RuntimeWarning):
    """rewinddb built an error whose code is not in ``CODES``: a bug in rewinddb (the
    error is still raised as it is). The tests turn this warning into a failure."""


def _check_code(error: RewindError) -> None:
    """Warn when rewinddb's own code builds an error with an unregistered code.

    Only a miss costs anything: the frames are walked to find who built the error, past
    the ``__init__`` of its classes; code outside rewinddb (a presenter of another
    package) may use codes of its own."""
    if error.code in CODES:
        return
    frame = sys._getframe(2) if hasattr(sys, "_getframe") else None
    depth = 3
    while frame is not None and frame.f_code.co_name == "__init__":
        if frame.f_locals.get("self") is not error:
            break
        frame, depth = frame.f_back, depth + 1
    if frame is None or frame.f_globals.get("__name__", "").partition(".")[0] != "rewinddb":
        return
    warnings.warn(
        f"error code {error.code!r} is not in rewinddb.errors.CODES: register it there",
        UnregisteredCodeWarning,
        stacklevel=depth,
    )


class RewindError(Exception):
    """Base class of all rewinddb errors; ``code`` is stable across releases and is one
    of ``CODES`` (``rewind`` and ``invalid``, the defaults of ``RewindError`` and
    ``InvalidInputError``, are never raised as they are: every raise names its code)."""

    code: str = "rewind"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details
        _check_code(self)

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class NotFoundError(RewindError, KeyError):
    """Something named does not exist (or no longer exists)."""

    code = "not_found"

    # KeyError.__str__ would quote the message; keep the readable form.
    __str__ = RewindError.__str__


class BranchNotFound(NotFoundError):
    """The branch does not exist, or was deleted."""

    code = "not_found.engine.branch"


class EventNotFound(NotFoundError):
    """No event with that sequence number on the branch (at that version)."""

    code = "not_found.event"


class BranchExistsError(RewindError, ValueError):
    """A branch with that name already exists."""

    code = "conflict.branch_exists"


class HistoryUnavailableError(RewindError, LookupError):
    """The requested point in history is not part of the branch's history."""

    code = "history_unavailable"


class InvalidInputError(RewindError, ValueError):
    """User input that rewinddb refuses (bad key, value, path, version...)."""

    code = "invalid"


class InvalidValueError(InvalidInputError):
    """A value that is neither JSON (without NaN/Infinity) nor bytes."""

    code = "invalid.value"


class InvalidJSONPathError(InvalidInputError):
    """A JSONPath outside the supported subset, or one that cannot be applied."""

    code = "invalid.json_path"


class MergeConflictError(RewindError):
    """A merge found conflicting changes and ``strategy="fail"``; nothing was written."""

    code = "conflict.merge"

    def __init__(self, message: str, conflicts: list[Any]) -> None:
        super().__init__(message)
        self.conflicts = conflicts


class AppendConflictError(RewindError):
    """``expected_index`` did not match the length of the event log."""

    code = "conflict.append"


class DatabaseClosedError(RewindError):
    """The database was closed; open it again to continue."""

    code = "closed"


class ConnectionLostError(RewindError):
    """The database server went away during the call (PostgreSQL); nothing of an open
    transaction was kept, and the next call reconnects."""

    code = "connection_lost"


class DatabaseBusyError(RewindError):
    """Another process held the write lock for longer than ``busy_timeout``."""

    code = "busy"


class ReadOnlyError(RewindError):
    """A write was attempted on a database opened read-only."""

    code = "readonly"


class ImportFormatError(RewindError, ValueError):
    """The file is not a valid rewinddb export (the message says which line and why)."""

    code = "invalid.import"


class NotADatabaseError(RewindError):
    """The path exists but is not a rewinddb database."""

    code = "invalid.database"


class CorruptDatabaseError(RewindError):
    """The database file is damaged or was edited by something other than rewinddb: a
    page SQLite cannot read, a missing table, or a row that breaks the schema's rules (a
    wrong type, an impossible value, a dangling id, a branch that is its own ancestor).

    ``code`` is ``corrupt`` for the file itself (or when the table is not known) and
    ``corrupt.<table>`` (``corrupt.branches``, ``corrupt.entries``, ...) for a damaged
    table or row; the message names what is wrong. Nothing was written."""

    code = "corrupt"
