"""Every error rewinddb raises: one base class with a stable dotted ``code``.

Callers can catch ``RewindError`` and switch on ``err.code``; the specific classes
also subclass the builtin that fits (``KeyError``, ``ValueError``) so idiomatic
``except KeyError`` keeps working.
"""

from __future__ import annotations

from typing import Any


class RewindError(Exception):
    """Base class of all rewinddb errors; ``code`` is stable across releases."""

    code: str = "rewind"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details

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
