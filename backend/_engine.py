"""The versioned store underneath every primitive: branches, the clock, lineage reads.

A *point* in history is (branch, version). The state a branch sees at version ``v`` is
made of its own rows up to ``v``, then its parent's rows up to the fork point, and so on
up to the root. Resolving a key is therefore one index seek per lineage step, newest
first; nothing is copied on fork and nothing is replayed on read.
"""

from __future__ import annotations

import operator
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple, Union

import orjson

from . import _commit_hash
from ._arrays import SharedArrays
from ._clock import CLOCK, INSERT_COMMIT, NEXT_COMMIT, next_commit
from ._connection import Connection
from ._horizons import Horizon, horizon
from ._memory import UNKNOWN as UNKNOWN
from ._values import loads, validate
from .errors import (
    BranchNotFound,
    CorruptDatabaseError,
    HistoryUnavailableError,
    InvalidInputError,
    RewindError,
)
from .models import from_micros, to_micros

AsOf = Union[int, datetime, None]  # noqa: UP007 - a runtime alias, Python 3.10

DEFAULT_BRANCH = "default"

KIND_JSON, KIND_BYTES, KIND_DELETED = 0, 1, 2
#: An erased entry (``erasure``): it reads as absent, and keeps its place in history.
KIND_ERASED = _commit_hash.KIND_ERASED
#: The kinds that hold no value.
NO_VALUE = frozenset((KIND_DELETED, KIND_ERASED))
#: The spaces entries are written in (``kv``, ``json`` documents, ``state``).
SPACES = ("kv", "json", "state")

#: How a value is stored: (kind, body, arrays to share or None); see ``Engine.encode``.
Encoded = tuple[int, Union[bytes, None], Any]  # noqa: UP007 - a runtime alias, Python 3.10


class StoredValue(NamedTuple):
    """A value as an entry stores it whole (no shared arrays): what a merge copies from
    the source's entry instead of encoding the value again (``Engine.write_values``)."""

    kind: int
    body: bytes | None


class CopiedEntry(NamedTuple):
    """A ``StoredValue`` that is the stored form of the entry of the same space and key at
    (``branch_id``, ``version``), stored whole: ``write_values`` copies such entries with
    one ``INSERT ... SELECT`` per (branch, version) on SQLite, rather than send them."""

    kind: int
    body: bytes | None
    branch_id: int
    version: int


#: ``write_values`` copies entries with ``Engine._COPY_ENTRIES`` when at least so many
#: come from one (branch, version); fewer it sends as rows.
_FEWEST_COPIED = 8


#: ``Engine._seek_entries`` asks whether a lineage step holds any entry (``_ANY_ENTRY``)
#: before it seeks at least so many keys there, on a lineage of several steps.
_PROBED = 32
#: A named tuple from a tuple of its fields (no Python ``__new__``).
_new_tuple = tuple.__new__

#: ``decode_many``: each body's array holds its one value.
_SINGLE = frozenset((1,))
_FIRST = operator.itemgetter(0)


class _Unencodable(Exception):
    """Keys orjson cannot write as JSON text (``_json_texts``)."""


def _json_texts(texts: list[str]) -> str:
    """``texts`` as one JSON array (for ``json_each``)."""
    try:
        return orjson.dumps(texts).decode()
    except orjson.JSONEncodeError as error:  # (a lone surrogate: never a checked name)
        raise _Unencodable from error


class _Missing:
    """The value of a key that does not exist (distinct from a stored ``None``)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


def _after_prefix(prefix: str) -> str | None:
    """The least text above every text that starts with ``prefix`` (by code points, as
    UTF-8 bytes compare), or None when there is none (``prefix`` is all U+10FFFF). The
    last character below U+10FFFF is the one that moves: every text above ``prefix``
    and below it starts with ``prefix``, as nothing sorts past U+10FFFF."""
    kept = prefix.rstrip("\U0010ffff")
    if not kept:
        return None
    last = ord(kept[-1])
    following = last + 1 if last + 1 != 0xD800 else 0xE000  # no surrogates in UTF-8
    return kept[:-1] + chr(following)


def now_micros() -> int:
    return time.time_ns() // 1000


def _check_acyclic(steps: list[tuple[BranchRecord, int]]) -> None:
    """A lineage that meets a branch twice is a parent cycle: ``corrupt.branches``."""
    seen: dict[int, str] = {}
    for step, _ in steps:
        if step.id in seen:
            chain = " -> ".join([*seen.values(), step.name])
            raise CorruptDatabaseError(
                f"branch {step.name!r} is its own ancestor in rewind_branches ({chain}): "
                "the parent ids were edited into a loop",
                code="corrupt.branches",
                branch=step.name,
            )
        seen[step.id] = step.name


def check_name(value: Any, what: str) -> str:
    """Keys, branch names and event types: non-empty strings without NUL."""
    # The usual name, settled in one test (ASCII text holds no lone surrogate).
    if (
        type(value) is str
        and 0 < len(value) <= 1024
        and value.isascii()
        and "\x00" not in value
        and not value.isspace()
    ):
        return value
    if not isinstance(value, str):
        raise InvalidInputError(
            f"{what} must be a string, not {type(value).__name__}", code=f"invalid.{what}"
        )
    if not value or not value.strip():
        raise InvalidInputError(f"{what} must not be empty", code=f"invalid.{what}")
    if "\x00" in value:
        raise InvalidInputError(f"{what} must not contain NUL characters", code=f"invalid.{what}")
    if len(value) > 1024:
        raise InvalidInputError(f"{what} is longer than 1024 characters", code=f"invalid.{what}")
    _check_utf8(value, what)
    return value


def _check_utf8(value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"{what} is not valid Unicode text (it holds a lone surrogate)",
            code=f"invalid.{what}",
        ) from None


def check_count(value: Any, what: str) -> int:
    """Sequences, limits, indexes: a non-negative int that fits in 64 bits."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise InvalidInputError(
            f"{what} must be a non-negative int, not {value!r}", code=f"invalid.{what}"
        )
    return value


def check_flag(value: Any, what: str) -> bool:
    """An on/off option: True or False, nothing that merely looks like one."""
    if not isinstance(value, bool):
        raise InvalidInputError(
            f"{what} must be True or False, not {value!r}", code=f"invalid.{what}"
        )
    return value


def check_text(value: Any, what: str) -> str | None:
    """Optional metadata (trigger, message): None or a string."""
    if value is None:
        return None
    if not isinstance(value, str) or "\x00" in value:
        raise InvalidInputError(f"{what} must be a string or None", code=f"invalid.{what}")
    _check_utf8(value, what)
    return value


@dataclass(frozen=True)
class BranchRecord:
    id: int
    name: str
    parent_id: int | None
    forked_at: int
    created_at: int
    deleted_at: int | None


def branch_record(row: Any) -> BranchRecord:
    """A ``rewind_branches`` row (``Engine._BRANCH_COLUMNS``) as a record, checked once
    (records are cached): a row another program edited out of shape is ``corrupt``."""
    branch_id, name, parent_id, forked_at, created_at, deleted_at = row
    if (
        type(branch_id) is not int
        or type(name) is not str
        or not name
        or (parent_id is not None and (type(parent_id) is not int or parent_id == branch_id))
        or type(forked_at) is not int
        or not 0 <= forked_at < 2**63
        or type(created_at) is not int
        or (deleted_at is not None and type(deleted_at) is not int)
    ):
        raise CorruptDatabaseError(
            f"the row of branch {name!r} (id {branch_id!r}) in rewind_branches is damaged: "
            f"parent {parent_id!r}, forked at {forked_at!r}, created at {created_at!r}, "
            f"deleted at {deleted_at!r}",
            code="corrupt.branches",
            branch=name,
        )
    return BranchRecord(branch_id, name, parent_id, forked_at, created_at, deleted_at)


#: ``Engine._seek_entry``'s statement of one key on each of so many lineage steps, made
#: once for each depth up to ``_MOST_LINEAGE_SEEKS`` (SQLite allows 500 terms in a
#: compound SELECT: deeper lineages are not met in practice).
_LINEAGE_SEEKS: dict[int, str] = {}
_MOST_LINEAGE_SEEKS = 64
#: Entries whose stored value is larger than this are not remembered (``read_entry``).
_LARGEST_REMEMBERED = 256 * 1024

#: The cap of a read of now (``Engine.read_key``): above every version, so the newest
#: row of each step is the newest entry, whatever the clock says.
_NOW = 2**63 - 1

#: The newest commit at or below a version, and whether it was committed by a time
#: (parameters: time, version); and the oldest between two versions (time, above, below).
#: The time is compared in SQL, so a hand-edited ``ts`` that is no integer reads as later.
_COMMIT_BELOW = (
    "SELECT version, ts <= ? FROM rewind_commits WHERE version <= ? ORDER BY version DESC LIMIT 1"
)
#: How many of the newest commits ``version_at`` walks back through before it bisects,
#: and the walk: the newest version above a version committed by a time.
_RECENT_COMMITS = 256
_NEWEST_BY = "SELECT max(version) FROM rewind_commits WHERE version > ? AND ts <= ?"
_COMMIT_ABOVE = (
    "SELECT version, ts <= ? FROM rewind_commits WHERE version > ? AND version < ? "
    "ORDER BY version LIMIT 1"
)

#: A lineage walk this deep checks that it meets no branch twice (a parent cycle that
#: another program wrote), and again at each doubling of its depth.
_DEEP_LINEAGE = 64


#: The call of each write routine, built once (``Engine.write_in_server``).
_ROUTINE_CALLS: dict[str, str] = {}


class EntryRow(NamedTuple):
    """One row of ``rewind_entries`` as the engine reads it."""

    kind: int
    body: bytes | None
    refs: bytes | None
    version: int
    trigger: str | None
    branch_id: int


@dataclass
class WriteContext:
    """The commit being written: its version is allocated at the first write."""

    engine: Engine
    branch: BranchRecord
    trigger: str | None
    message: str | None
    version: int | None = None
    ts: int = 0
    merge_from: tuple[int, int] | None = None
    written: set[tuple[str, str]] = field(default_factory=set)
    entry_trigger: str | None = None
    """The trigger of the write being made now (a group's writes each keep their own)."""
    log_head: tuple[int, str] | None = None
    """(sequence, hash) of the newest event this commit appended (``events.append_event``),
    which the next append in it builds on without reading the log again."""
    previous_hash: str | None = None
    """The hash of the commit before this one, as its allocation read it."""
    recorded_hash: str | None = None
    """The hash its row holds until it is sealed: the previous commit's, or the hash it
    will have if it writes nothing more than it knew when its row was recorded (the seal
    then leaves the row alone)."""
    recorded: bool = False
    """Whether its row is in ``rewind_commits`` yet (``reserve`` may allocate first)."""
    entry_parts: dict[tuple[str, str], bytes] = field(default_factory=dict)
    """What this commit's hash covers of each entry it wrote: its digest (``_commit_hash``)."""
    event_parts: list[bytes] = field(default_factory=list)
    """... and of each event it appended, in order."""
    _hashed: tuple[tuple[Any, ...], str] | None = field(default=None, repr=False)

    def reserve(self) -> int:
        """This commit's version (and time), allocated on first use. Allocated from what
        the connection remembers, its row waits for :meth:`commit`, so that what the
        caller writes next counts in the hash the row is recorded with (no UPDATE when
        it is sealed); else ``NEXT_COMMIT`` allocates and records it in one statement,
        with the previous commit's hash until the seal."""
        if self.version is None:
            engine = self.engine
            now = now_micros()
            known = engine.remembered_allocation(self.branch.id)
            if known is None:
                merge_branch, merge_version = self.merge_from or (None, None)
                version, ts, previous = engine.conn.fetchone(
                    NEXT_COMMIT,
                    (
                        self.branch.id,
                        now,
                        now,
                        self.trigger,
                        self.message,
                        merge_branch,
                        merge_version,
                        self.branch.id,
                        self.branch.id,
                        self.branch.id,
                    ),
                )
                self.version, self.ts, self.previous_hash = int(version), int(ts), previous
                self.recorded_hash, self.recorded = previous, True
            else:  # the same row, from what the connection remembers, recorded by commit()
                clock, newest_ts, previous = known
                self.version, self.ts = next_commit(clock, newest_ts, now)
                self.previous_hash = previous
            engine.allocated(self)
        return self.version

    def commit(self) -> int:
        """The version of this commit, its row recorded (on first use): with its final
        hash when what it writes is known already (``write_value``, ``write_values``,
        ``append_event`` reserve first), else the previous commit's."""
        version = self.reserve()
        if not self.recorded:
            known_parts = self.entry_parts or self.event_parts
            previous = self.previous_hash
            self.recorded_hash = self.hash_after(previous) if known_parts else previous
            self.engine.conn.execute(INSERT_COMMIT, (*self._fields(), self.recorded_hash))
            self.recorded = True
        return version

    def hash_after(self, previous: str | None) -> str:
        """This commit's hash, chained on ``previous`` (the commit before it). The last
        one computed is kept with what it was computed from: a commit recorded with its
        final hash at its allocation is not hashed again when it is sealed."""
        fields = self._fields()
        inputs = (previous, fields, tuple(self.entry_parts.values()), tuple(self.event_parts))
        if self._hashed is not None and self._hashed[0] == inputs:
            return self._hashed[1]
        digest = _commit_hash.commit_hash(previous, fields, inputs[2], inputs[3])
        self._hashed = (inputs, digest)
        return digest

    def _fields(self) -> tuple[int, int, int, str | None, str | None, int | None, int | None]:
        """The commit's row without its hash: (version, branch id, ts, trigger, message,
        merge branch id, merge version), as its hash covers them too."""
        merge_branch, merge_version = self.merge_from or (None, None)
        assert self.version is not None
        return (
            self.version,
            self.branch.id,
            self.ts,
            self.trigger,
            self.message,
            merge_branch,
            merge_version,
        )

    def merged_from(self, branch_id: int, version: int) -> None:
        """Record this commit's second parent (also when it was already allocated)."""
        self.merge_from = (branch_id, version)
        if self.recorded:  # (a row still to be recorded is recorded with it)
            self.engine.conn.execute(
                "UPDATE rewind_commits SET merge_branch_id = ?, merge_version = ? "
                "WHERE version = ?",
                (branch_id, version, self.version),
            )

    def saved(self) -> SavedContext:
        """What a write inside this commit may change, to restore if it rolls back."""
        return SavedContext(
            version=self.version,
            ts=self.ts,
            written=set(self.written),
            merge_from=self.merge_from,
            trigger=self.trigger,
            log_head=self.log_head,
            previous_hash=self.previous_hash,
            recorded_hash=self.recorded_hash,
            recorded=self.recorded,
            entry_parts=dict(self.entry_parts),
            events=len(self.event_parts),
            entry_trigger=self.entry_trigger,
        )

    def restore(self, saved: SavedContext) -> None:
        """Forget what a rolled-back write did to this context (its rows are gone)."""
        self.version, self.ts = saved.version, saved.ts
        self.written, self.merge_from = saved.written, saved.merge_from
        self.trigger, self.log_head = saved.trigger, saved.log_head
        self.previous_hash, self.entry_parts = saved.previous_hash, saved.entry_parts
        self.recorded_hash, self.entry_trigger = saved.recorded_hash, saved.entry_trigger
        self.recorded = saved.recorded
        del self.event_parts[saved.events :]


@dataclass(frozen=True)
class SavedContext:
    """A :class:`WriteContext` as it was before one write of its commit (a savepoint)."""

    version: int | None
    ts: int
    written: set[tuple[str, str]]
    merge_from: tuple[int, int] | None
    trigger: str | None
    log_head: tuple[int, str] | None
    previous_hash: str | None
    recorded_hash: str | None
    recorded: bool
    entry_parts: dict[tuple[str, str], bytes]
    events: int
    entry_trigger: str | None


class Engine:
    """Branches, the version clock, commits and lineage reads of one database."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.arrays = SharedArrays(conn)
        #: What is known of the database between statements (``_memory``: one rule). The
        #: engine keeps there, by slot: ``branch`` (live branch records by name),
        #: ``branch_id`` (records by id), ``clock`` (the newest version), ``entry`` (the
        #: newest entry of a key on a branch, as ``read_entry`` finds it now, or None),
        #: ``log_end`` (events.py: the newest event of a branch's log now, or None).
        self.memory = conn.memory
        self._group: WriteContext | None = None
        #: The commits the open write transaction allocated, to seal before it commits:
        #: (transaction serial, their write contexts in order of allocation).
        #: The open write transaction's commits to seal: (its serial, the commits, the
        #: connection's rollback count at its first allocation).
        self._unsealed: tuple[int | None, list[WriteContext], int] = (None, [], 0)
        conn.before_commit.append(self.seal)
        #: ``read_past``'s statement: an older value's form and the token, or (-1, NULL,
        #: NULL, the token) when the key has no entry then. None: no token column.
        self._past: str | None = None
        if conn.token_column is not None:
            self._past = (
                f"SELECT * FROM (SELECT kind, body, refs, {conn.token_column} "
                "FROM rewind_entries WHERE branch_id = ? AND space = ? AND key = ? "
                "AND version <= ? ORDER BY version DESC LIMIT 1) "
                f"UNION ALL SELECT -1, NULL, NULL, {conn.token_column} LIMIT 1"
            )

    # -- branches ----------------------------------------------------------------

    _BRANCH_COLUMNS = "id, name, parent_id, forked_at, created_at, deleted_at"

    def live_branch_id(self, name: str) -> int | None:
        """The id of the live (not deleted) branch called ``name``, if there is one."""
        row = self.conn.fetchone(
            "SELECT id FROM rewind_branches WHERE name = ? AND deleted_at IS NULL", (name,)
        )
        return None if row is None else int(row[0])

    def forget_cached(self) -> None:
        """Forget what is known (this connection changed branches or the clock in a way
        no write path writes through: a fork, a delete, an import)."""
        self.memory.clear()

    def branch(self, name: str) -> BranchRecord:
        """The live branch called ``name``; ``BranchNotFound`` if there is none."""
        with self.conn.lock:
            # A name the memory holds was checked when it was first looked up.
            record: BranchRecord = self.memory.get("branch", name) if type(name) is str else UNKNOWN
            if record is UNKNOWN:
                check_name(name, "branch")
                record = self._branch_row(name)
                self.memory.put("branch", name, record)
            return record

    def _branch_row(self, name: str) -> BranchRecord:
        row = self.conn.fetchone(
            f"SELECT {self._BRANCH_COLUMNS} FROM rewind_branches "
            "WHERE name = ? AND deleted_at IS NULL",
            (name,),
        )
        if row is None:
            deleted = self.conn.fetchone(
                "SELECT max(deleted_at) FROM rewind_branches WHERE name = ?", (name,)
            )
            if name == DEFAULT_BRANCH:  # created with the database, never deleted
                raise CorruptDatabaseError(
                    "the row of the default branch in rewind_branches is "
                    + ("marked deleted" if deleted and deleted[0] is not None else "missing"),
                    code="corrupt.branches",
                    branch=name,
                )
            if deleted and deleted[0] is not None:
                raise BranchNotFound(
                    f"branch {name!r} was deleted at {from_micros(deleted[0]).isoformat()}; "
                    "its reads are gone (branches forked from it keep their history)",
                    branch=name,
                )
            raise BranchNotFound(f"branch {name!r} does not exist (or was deleted)", branch=name)
        record = branch_record(row)
        self.memory.put("branch_id", record.id, record)
        return record

    def branch_by_id(self, branch_id: int) -> BranchRecord:
        """A branch by id, deleted or not (name, parent and fork point never change)."""
        record: BranchRecord = self.memory.get("branch_id", branch_id)
        if record is UNKNOWN:
            row = self.conn.fetchone(
                f"SELECT {self._BRANCH_COLUMNS} FROM rewind_branches WHERE id = ?",
                (branch_id,),
            )
            if row is None:
                raise CorruptDatabaseError(
                    f"branch id {branch_id!r} is named by rows of the database (as a parent, "
                    "or by commits, entries or events) but rewind_branches has no such row",
                    code="corrupt.branches",
                )
            record = branch_record(row)
            self.memory.put("branch_id", branch_id, record)
        return record

    def _lineage_records(
        self, record: BranchRecord, version: int
    ) -> list[tuple[BranchRecord, int]]:
        """[(branch, highest visible version)], the branch first, then its ancestors."""
        steps = [(record, version)]
        cap, deep = version, _DEEP_LINEAGE
        while record.parent_id is not None:
            cap = min(cap, record.forked_at)  # a fork at an inherited event is below its
            record = self.branch_by_id(record.parent_id)  # parent's own fork point
            steps.append((record, cap))
            if len(steps) == deep:
                _check_acyclic(steps)
                deep *= 2
        return steps

    def lineage(self, record: BranchRecord, version: int) -> list[tuple[int, int]]:
        """[(branch id, highest visible version)], the branch first, then its ancestors."""
        return [(step.id, cap) for step, cap in self._lineage_records(record, version)]

    def row_lineage(self, record: BranchRecord, version: int) -> list[tuple[int, int]]:
        """``lineage`` without the steps that cannot hold a visible row: a branch's own rows
        are all newer than its fork point, so a step capped at or below it reads nothing
        (the parent of a branch forked at version 0, for one)."""
        return [
            (step.id, cap)
            for step, cap in self._lineage_records(record, version)
            if cap > step.forked_at
        ]

    def owner_at(self, record: BranchRecord, version: int) -> BranchRecord:
        """The branch of ``record``'s lineage whose history holds ``version``: reading it
        there gives what ``record`` inherited at that version (for inherited history)."""
        start, hops = record, 0
        while record.parent_id is not None and version < record.forked_at:
            record = self.branch_by_id(record.parent_id)
            hops += 1
            if hops == _DEEP_LINEAGE:
                self._lineage_records(start, version)  # ends, or raises on a cycle
        return record

    def ranges(self, record: BranchRecord, version: int) -> dict[int, int]:
        return dict(self.lineage(record, version))

    # -- the clock ---------------------------------------------------------------

    def clock(self) -> int:
        """The newest version (including the one being written in this connection).

        A database imported from part of another one starts its clock where the
        original's stood (``clock_floor``), so new versions never land in its past.
        """
        with self.conn.lock:
            known: int = self.memory.get("clock")
            if known is UNKNOWN:
                known = self._read_clock()
                self.memory.put("clock", None, known)
            return known

    def _read_clock(self) -> int:
        row = self.conn.fetchone(f"SELECT clock.v FROM {CLOCK}")
        return int(row[0]) if row is not None and row[0] is not None else 0

    def version_at(self, when: datetime) -> int:
        """The newest version committed at or before ``when`` (after the newest commit:
        the clock, which an imported database may hold above its newest commit)."""
        micros = to_micros(when)
        newest = self.conn.fetchone(_COMMIT_BELOW, (micros, _NOW))
        if newest is None or newest[1]:
            return max(newest[0] if newest else 0, self.clock())
        # Commits' times never go back (the clock's ``next_ts``; the importer checks it):
        # a recent time is found among the newest commits, walking back from the newest;
        # an older one by bisecting the versions below them, ``low`` committed by then and
        # everything from ``high`` on after it (versions have gaps where retention cut).
        high = newest[0] - _RECENT_COMMITS + 1
        recent = self.conn.fetchone(_NEWEST_BY, (high - 1, micros))
        if recent[0] is not None:
            return int(recent[0])
        first = self.conn.fetchone(_COMMIT_ABOVE, (micros, -1, high))
        if first is None or not first[1]:
            return 0
        low = first[0]
        while True:
            middle = (low + high) // 2
            row = self.conn.fetchone(_COMMIT_ABOVE, (micros, middle, high))
            if row is None:
                row = self.conn.fetchone(_COMMIT_BELOW, (micros, middle))
                if row is None or row[0] <= low:
                    return int(low)
            if row[1]:
                low = row[0]
            else:
                high = row[0]

    def resolve_as_of(self, record: BranchRecord, as_of: AsOf) -> int:
        """The version ``as_of`` names on ``record``, checked against its history."""
        now = self.clock()
        if as_of is None:
            return max(now, record.forked_at)
        if isinstance(as_of, datetime):
            if as_of.tzinfo is None:
                raise InvalidInputError(
                    "as_of datetime must be timezone-aware (for example "
                    "datetime.now(timezone.utc)); a naive one is ambiguous",
                    code="invalid.as_of",
                )
            if as_of > datetime.now(timezone.utc):
                raise InvalidInputError(
                    f"as_of {as_of.isoformat()} is in the future", code="invalid.as_of"
                )
            version = self.version_at(as_of)
            if version < record.forked_at:
                raise HistoryUnavailableError(
                    f"branch {record.name!r} did not exist at {as_of.isoformat()} "
                    f"(it was forked at version {record.forked_at})",
                    branch=record.name,
                    as_of=as_of.isoformat(),
                )
            self.check_kept(record, version)
            return version
        if isinstance(as_of, bool) or not isinstance(as_of, int):
            raise InvalidInputError(
                f"as_of must be a version (int) or a datetime, not {type(as_of).__name__}",
                code="invalid.as_of",
            )
        if as_of < 0 or as_of > max(now, record.forked_at):
            raise InvalidInputError(
                f"version {as_of} does not exist yet (the newest is {now})",
                code="invalid.as_of",
            )
        if as_of < record.forked_at:
            raise HistoryUnavailableError(
                f"branch {record.name!r} was forked at version {record.forked_at}; "
                f"version {as_of} is before it existed",
                branch=record.name,
                as_of=as_of,
            )
        self.check_kept(record, as_of)
        return as_of

    def horizon(self, branch_id: int) -> Horizon | None:
        """Where retention cut the branch's history (``_horizons``), or None (always, in a
        database read as it is from before schema 8, which had no retention)."""
        if self.conn.schema_migrated[1] < 8:
            return None
        return horizon(self.memory, self.conn, branch_id)

    def kept_froms(self) -> dict[int, int]:
        """Every cut branch's ``kept_from`` by branch id (``horizon`` of each, read at once)."""
        if self.conn.schema_migrated[1] < 8:
            return {}
        rows = self.conn.fetchall("SELECT branch_id, kept_from FROM rewind_horizons")
        return {branch_id: kept_from for branch_id, kept_from in rows}

    def check_kept(self, record: BranchRecord, version: int) -> None:
        """Refuse a read at a version retention removed from ``record``'s history."""
        found = self.horizon(record.id)
        if found is not None and version < found.kept_from:
            raise HistoryUnavailableError(
                f"version {version} of branch {record.name!r} was removed by retention "
                f"({found.policy}); its history is kept from version {found.kept_from} on",
                branch=record.name,
                as_of=version,
                kept_from=found.kept_from,
                policy=found.policy,
            )

    # -- writing -----------------------------------------------------------------

    @contextmanager
    def writing(
        self, branch: str, trigger: str | None = None, message: str | None = None
    ) -> Iterator[WriteContext]:
        """One atomic write on ``branch``: its own commit, or part of the open group."""
        trigger = check_text(trigger, "trigger")
        message = check_text(message, "message")
        with self.conn.write():
            record = self.branch(branch)
            group = self._group
            if group is None:
                yield WriteContext(self, record, trigger, message, entry_trigger=trigger)
                return
            if group.branch.id != record.id:
                raise RewindError(
                    f"this transaction writes to branch {group.branch.name!r}; "
                    f"write to {branch!r} outside it or open its own transaction",
                    code="invalid.transaction",
                )
            saved = group.saved()
            if trigger is not None and group.trigger is None and group.version is None:
                group.trigger = trigger
            group.entry_trigger = trigger or group.trigger
            try:
                yield group
            except BaseException:
                group.restore(saved)  # the savepoint rolled its rows back
                raise
            group.entry_trigger = saved.entry_trigger

    @contextmanager
    def atomic(self, *, savepoints: bool = True) -> Iterator[None]:
        """Writes inside commit together (``db.atomic()``): the outermost block is a
        transaction, an inner one a savepoint (none with ``savepoints=False``: see
        ``Connection.write``); when it rolls back inside an open ``transaction()``, that
        transaction forgets what the block wrote."""
        with self.conn.write(savepoints=savepoints):
            group = self._group
            if group is None:
                yield
                return
            saved = group.saved()
            try:
                yield
            except BaseException:
                group.restore(saved)
                raise

    def remembered_allocation(self, branch_id: int) -> tuple[int, int, str | None] | None:
        """(clock, the newest commit's time, the hash a commit of ``branch_id`` chains on)
        when the memory holds all three, else None (``NEXT_COMMIT`` reads them). They are
        written through by this connection's allocations (``allocated``) and seals."""
        memory = self.memory
        clock = memory.get("clock")
        newest_ts = memory.get("commit_ts")
        head = memory.get("chain", branch_id)
        if clock is UNKNOWN or newest_ts is UNKNOWN or head is UNKNOWN:
            return None
        return clock, newest_ts, head

    def allocated(self, context: WriteContext) -> None:
        """``context`` allocated its version in the open write transaction: it is the
        clock until the transaction ends, and it is sealed before it commits."""
        serial = self.conn.write_transaction
        assert context.version is not None
        self.memory.put("clock", None, context.version)
        self.memory.put("commit_ts", None, context.ts)
        owner, contexts, _ = self._unsealed
        if owner != serial:  # the first of this transaction (an older list was rolled back)
            contexts = []
            self._unsealed = serial, contexts, self.conn.rollbacks
        # The one rule for rolled-back commits: a commit allocated at or after this version
        # was rolled back (a savepoint), or its version would not have come round again;
        # one rolled back at the end of the list updates no row when sealed.
        while contexts and (contexts[-1].version or 0) >= context.version:
            contexts.pop()
        contexts.append(context)

    def seal(self) -> None:
        """Give each commit of the committing transaction its hash, in version order,
        each chained on its branch's commit before it (``_commit_hash``)."""
        owner, contexts, rollbacks = self._unsealed
        if not contexts:
            return
        self._unsealed = (None, [], 0)
        if owner != self.conn.write_transaction:
            return
        # A savepoint rolled back in this transaction may have left a commit of it in the
        # list (its row is gone): then no chain head is remembered, and the next commit of
        # each branch reads its own (``NEXT_COMMIT``).
        remember = self.conn.rollbacks == rollbacks
        # In allocation order, which is version order: a commit rolled back by a
        # savepoint left the list when its version came round again (``allocated``).
        # Each chains on its branch's commit before it: one of this transaction, or the
        # one its allocation read.
        newest: dict[int, str] = {}
        for context in contexts:
            if context.version is None or not context.recorded:  # rolled back first
                continue
            branch_id = context.branch.id
            digest = context.hash_after(newest.get(branch_id, context.previous_hash))
            newest[branch_id] = digest
            if digest != context.recorded_hash:
                self.conn.execute(
                    "UPDATE rewind_commits SET hash = ? WHERE version = ?",
                    (digest, context.version),
                )
            if remember:
                self.memory.put("chain", branch_id, digest)  # what its next commit chains on

    def check_fork_source(self, record: BranchRecord) -> None:
        """Refuse to fork the branch an open transaction has written to: the fork would
        see the transaction's later writes too."""
        group = self._group
        if group is not None and group.branch.id == record.id and group.version is not None:
            raise RewindError(
                f"branch {record.name!r} has uncommitted writes in this transaction; fork "
                "it before the transaction's first write or after the transaction",
                code="invalid.transaction",
            )

    @contextmanager
    def transaction(
        self, branch: str, trigger: str | None = None, message: str | None = None
    ) -> Iterator[WriteContext]:
        """Group every write on ``branch`` inside the block into one version."""
        with self.conn.lock:
            if self._group is not None:
                with self.writing(branch, trigger, message) as context:
                    yield context
                return
            trigger = check_text(trigger, "trigger")
            message = check_text(message, "message")
            with self.conn.write():
                self._group = WriteContext(self, self.branch(branch), trigger, message)
                try:
                    yield self._group
                finally:
                    self._group = None

    # -- entries (kv values and JSON documents) ----------------------------------

    _ENTRY_COLUMNS = "kind, body, refs, version, trigger"
    _INSERT_ENTRY = (
        "INSERT INTO rewind_entries (branch_id, space, key, version, kind, body, refs, trigger) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )

    #: The newest entry of a key on one lineage step, at or below a version.
    _SEEK = (
        f"SELECT {_ENTRY_COLUMNS}, branch_id FROM rewind_entries "
        "WHERE branch_id = ? AND space = ? AND key = ? AND version <= ? "
        "ORDER BY version DESC LIMIT 1"
    )

    #: ... and only what its value is made of: (kind, body, refs).
    _SEEK_FORM = (
        "SELECT kind, body, refs FROM rewind_entries "
        "WHERE branch_id = ? AND space = ? AND key = ? AND version <= ? "
        "ORDER BY version DESC LIMIT 1"
    )

    def read_key(self, branch: str, space: str, key: str, as_of: AsOf) -> Any:
        """The value of ``key`` (a name the caller checked) on ``branch`` at ``as_of``, or
        ``MISSING``: one read of ``kv``, ``json`` or ``state``, start to end.

        What ``branch``, ``resolve_as_of`` and ``read_entry`` do, with the change token
        asked once and the memory's answers looked up directly (this is every read; each
        step falls back to those methods, which raise the errors, when the memory does
        not answer it). A read of now needs no clock: the newest entry is the newest row
        of the lineage, remembered or sought without a cap.
        """
        conn = self.conn
        with conn.lock:
            if conn.routines:
                found = self.read_in_server(branch, as_of, space, key)
                if found is not None:
                    return found[0]
            memory = self.memory
            if type(as_of) is int and self._past is not None and not conn.in_transaction:
                found = self.read_past(branch, space, key, as_of)
                if found is not UNKNOWN:
                    return found
            token = conn.change_token()
            if as_of is None and type(branch) is str:  # a remembered key now: the usual read
                known = memory.held_under(token)
                if known is not None:
                    record = known.get(("branch", branch), UNKNOWN)
                    if record is not UNKNOWN:
                        row = known.get(("entry", (record.id, space, key)), UNKNOWN)
                        if row is None or (row is not UNKNOWN and row.refs is None):
                            return self._value(row)  # (shared arrays: read in the block)
            with memory.reading(token):
                held = memory.answers()
                record = held.get(("branch", branch), UNKNOWN) if type(branch) is str else UNKNOWN
                if record is UNKNOWN and as_of is None and type(branch) is str:
                    found = conn.row(self._BRANCH_AND_ENTRY, (space, key, space, key, branch))
                    if found is not None:  # (else no such branch: ``branch`` says so)
                        return self._read_with_branch(found, space, key)
                if record is UNKNOWN:
                    record = self.branch(branch)
                    held = memory.answers()
                slot = (record.id, space, key)
                row = held.get(("entry", slot), UNKNOWN)
                if as_of is None:
                    if row is UNKNOWN:
                        row = self._seek_entry(self.row_lineage(record, _NOW), space, key)
                        self._remember_entry(slot, row)
                else:
                    now = held.get(("clock", None), UNKNOWN)
                    if (
                        type(as_of) is int
                        and now is not UNKNOWN
                        and record.forked_at <= as_of <= now
                    ):
                        version = as_of  # what ``resolve_as_of`` allows, but for retention:
                        if self.conn.schema_migrated[1] >= 8:
                            cut = held.get(("horizon", record.id), UNKNOWN)
                            if cut is UNKNOWN or (cut is not None and version < cut.kept_from):
                                self.check_kept(record, version)
                    else:
                        version = self.resolve_as_of(record, as_of)
                        now = self.clock()
                    if row is UNKNOWN or (row is not None and row.version > version):
                        # (``read_entry``: the newest entry known answers from its version on)
                        if record.parent_id is None:
                            steps = [(record.id, version)] if version > record.forked_at else []
                        else:
                            steps = self.row_lineage(record, version)
                        if version >= now:
                            row = self._seek_entry(steps, space, key)
                            self._remember_entry(slot, row)
                        elif len(steps) == 1:  # an older value, not remembered: its form only
                            step, cap = steps[0]
                            row = conn.row(self._SEEK_FORM, (step, space, key, cap))
                        else:
                            row = self._seek_entry(steps, space, key)
                return self._value(row)

    #: A live branch's row and its own newest entry of a key (NULLs: none): a read of now
    #: on a branch the memory does not know (another connection committed since the last
    #: read, most often), in one statement rather than two.
    _BRANCH_AND_ENTRY = (
        "SELECT b.id, b.name, b.parent_id, b.forked_at, b.created_at, b.deleted_at, "
        "e.kind, e.body, e.refs, e.version, e.trigger, e.branch_id "
        "FROM rewind_branches b LEFT JOIN rewind_entries e "
        "ON e.branch_id = b.id AND e.space = ? AND e.key = ? AND e.version = ("
        "SELECT max(version) FROM rewind_entries WHERE branch_id = b.id AND space = ? "
        "AND key = ?) WHERE b.name = ? AND b.deleted_at IS NULL"
    )

    def _read_with_branch(self, found: Any, space: str, key: str) -> Any:
        """``read_key`` of now from a row of ``_BRANCH_AND_ENTRY`` (in its read block): the
        branch is remembered as ``branch`` does, the entry as the newest now (sought in
        the ancestors when the branch itself has none)."""
        memory = self.memory
        record = branch_record(found[:6])
        memory.put("branch_id", record.id, record)
        memory.put("branch", record.name, record)
        row = None if found[6] is None else EntryRow(*found[6:])
        if row is None and record.parent_id is not None:
            steps = self.row_lineage(record, _NOW)
            row = self._seek_entry([step for step in steps if step[0] != record.id], space, key)
        self._remember_entry((record.id, space, key), row)
        return self._value(row)

    def read_past(self, branch: str, space: str, key: str, as_of: int) -> Any:
        """``read_key`` of an older value on a root branch, as one statement: the value's
        form and the change token, read together. The branch, the clock and the horizon
        are the memory's, taken on trust until the statement's token says they are true
        (it is the one they are held under: nobody committed since). ``UNKNOWN`` when
        this cannot answer (the memory lacks one of them, or it answers the key itself,
        a fork, a version outside the branch's history, or the token moved): then
        ``read_key`` asks for the token and reads as usual, errors included."""
        memory = self.memory
        held = memory.held()
        if held is None or type(branch) is not str:
            return UNKNOWN
        token, answers = held
        record = answers.get(("branch", branch), UNKNOWN)
        if record is UNKNOWN or record.parent_id is not None:
            return UNKNOWN
        now = answers.get(("clock", None), UNKNOWN)
        if now is UNKNOWN or not record.forked_at < as_of < now:
            return UNKNOWN  # (at the clock: the newest entry, which ``read_key`` remembers)
        if self.conn.schema_migrated[1] >= 8:
            cut = answers.get(("horizon", record.id), UNKNOWN)
            if cut is UNKNOWN or (cut is not None and as_of < cut.kept_from):
                return UNKNOWN
        known = answers.get(("entry", (record.id, space, key)), UNKNOWN)
        if known is not UNKNOWN and (known is None or known.version <= as_of):
            return UNKNOWN  # the memory answers: once the token says so
        assert self._past is not None
        found = self.conn.row(self._past, (record.id, space, key, as_of))
        if found is None or found[3] != token:
            return UNKNOWN  # another connection committed: nothing held may be true
        if found[0] == -1:
            return MISSING
        if found[2] is None:
            return self._value(found)
        with memory.reading(token):  # shared arrays, read with what the memory holds
            return self._value(found)

    def _value(self, row: tuple[Any, ...] | None) -> Any:
        """The value of an entry (or of its form: kind, body, refs), or ``MISSING``."""
        if row is None:
            return MISSING
        kind, body, refs = row[0], row[1], row[2]
        if kind == KIND_JSON and refs is None and type(body) is bytes and body:
            return loads(body)  # (``decode``, for a value stored whole)
        return self.decode(kind, body, refs)

    def read_entry(
        self, record: BranchRecord, version: int, space: str, key: str
    ) -> EntryRow | None:
        """The newest entry of ``key`` visible at (record, version), or None.

        One index seek per lineage step, sent as one statement; the branch's own rows are
        newer than its ancestors', so the newest row found wins. The newest entry now is
        remembered (``entry``): it answers every version from its own on.
        """
        slot = (record.id, space, key)
        known = self.memory.get("entry", slot)
        if known is not UNKNOWN and (known is None or known.version <= version):
            return known  # type: ignore[no-any-return]
        newest = version >= self.clock()
        row = self._seek_entry(self.row_lineage(record, version), space, key)
        if newest:
            self._remember_entry(slot, row)
        return row

    def _seek_entry(self, steps: list[tuple[int, int]], space: str, key: str) -> EntryRow | None:
        """The newest entry of ``key`` on these lineage steps (``row_lineage``), or None."""
        if len(steps) == 1:  # a root branch, or one read at its own versions only
            branch_id, cap = steps[0]
            found = self.conn.row(self._SEEK, (branch_id, space, key, cap))
            return None if found is None else EntryRow(*found)
        if len(steps) > _MOST_LINEAGE_SEEKS:
            return self._seek_entries(steps, space, [key]).get(key)
        # One statement of a seek per step (its text depends on the depth alone).
        sql = _LINEAGE_SEEKS.get(len(steps))
        if sql is None:
            sql = _LINEAGE_SEEKS[len(steps)] = " UNION ALL ".join(
                f"SELECT * FROM ({self._SEEK}) step{number}" for number in range(len(steps))
            )
        params = [value for branch_id, cap in steps for value in (branch_id, space, key, cap)]
        newest = None
        for found in self.conn.fetchall(sql, params):
            if newest is None or newest[3] < found[3]:
                newest = found
        return None if newest is None else EntryRow(*newest)

    def read_entries(
        self, record: BranchRecord, version: int, space: str, keys: list[str]
    ) -> dict[str, EntryRow]:
        """The newest entry visible at (record, version) of each of ``keys`` that has
        one: what ``read_entry`` gives for each, with one statement per lineage step for
        all the keys the memory does not answer."""
        found: dict[str, EntryRow] = {}
        unknown = []
        branch_id = record.id
        with self.memory.reading():  # (the token once, for every key's answer)
            held = self.memory.answers().get
            for key in keys:
                known = held(("entry", (branch_id, space, key)), UNKNOWN)
                if known is UNKNOWN or (known is not None and known.version > version):
                    unknown.append(key)
                elif known is not None:
                    found[key] = known
            if not unknown:
                return found
            newest = version >= self.clock()
            sought = self._seek_entries(self.row_lineage(record, version), space, unknown)
            found.update(sought)
            if newest:
                get = sought.get
                self._remember_entries([((branch_id, space, key), get(key)) for key in unknown])
        return found

    #: The newest entry at or below a cap of each key of a JSON array of keys on one
    #: lineage step (SQLite): the same text whatever the keys, so it is compiled once per
    #: connection and kept in its statement cache. ``CROSS JOIN`` keeps the keys the
    #: outer loop; each key then costs two primary-key seeks (its newest version at or
    #: below the cap, then that row).
    _SEEK_KEYS = (
        "SELECT e.kind, e.body, e.refs, e.version, e.trigger, e.branch_id, e.key "
        "FROM json_each(?) j CROSS JOIN rewind_entries e "
        "ON e.branch_id = ? AND e.space = ? AND e.key = j.value AND e.version = ("
        "SELECT max(version) FROM rewind_entries "
        "WHERE branch_id = ? AND space = ? AND key = j.value AND version <= ?)"
    )
    #: ... on PostgreSQL: the keys as one text array, each sought by a ``LATERAL`` seek
    #: (a join lets the planner hash the step's every row instead).
    _SEEK_KEYS_PG = (
        "SELECT e.kind, e.body, e.refs, e.version, e.trigger, e.branch_id, j.key "
        "FROM unnest(CAST(? AS text[])) AS j(key) CROSS JOIN LATERAL ("
        "SELECT kind, body, refs, version, trigger, branch_id FROM rewind_entries "
        "WHERE branch_id = ? AND space = ? AND key = j.key AND version <= ? "
        "ORDER BY version DESC LIMIT 1) e"
    )

    def _seek_entries(
        self, steps: list[tuple[int, int]], space: str, keys: list[str]
    ) -> dict[str, EntryRow]:
        """The newest entry of each of ``keys`` that has one on these lineage steps (newest
        first): one statement per step (``_SEEK_KEYS``) for the keys no earlier step
        holds, since a branch's own rows are newer than everything it inherits."""
        found: dict[str, EntryRow] = {}
        wanted = keys
        fetchall = self.conn.fetchall
        sqlite = self.conn.dialect == "sqlite"
        for number, (branch_id, cap) in enumerate(steps):
            if number:
                wanted = [key for key in wanted if key not in found]
                if not wanted:
                    break
            if (
                len(wanted) >= _PROBED
                and len(steps) > 1
                and self.conn.row(self._ANY_ENTRY, (branch_id, cap)) is None
            ):
                continue  # a step that wrote nothing up to its cap (a fork's fork, often)
            if sqlite:
                try:
                    rows = fetchall(
                        self._SEEK_KEYS,
                        (_json_texts(wanted), branch_id, space, branch_id, space, cap),
                    )
                except (sqlite3.DataError, _Unencodable):
                    # The keys' array longer than SQLite's longest string (or not text
                    # orjson can write): a seek per key.
                    rows = self._seek_each(branch_id, cap, space, wanted)
            else:
                rows = fetchall(self._SEEK_KEYS_PG, (wanted, branch_id, space, cap))
            for row in rows:
                found[row[6]] = _new_tuple(EntryRow, row[:6])
        return found

    #: Whether a lineage step holds any entry up to its cap (one seek of the version index).
    _ANY_ENTRY = "SELECT 1 FROM rewind_entries WHERE branch_id = ? AND version <= ? LIMIT 1"

    def _seek_each(
        self, branch_id: int, cap: int, space: str, keys: list[str]
    ) -> list[tuple[Any, ...]]:
        """``_SEEK_KEYS``' rows, with one ``_SEEK`` statement per key."""
        rows = []
        row = self.conn.row
        for key in keys:
            found = row(self._SEEK, (branch_id, space, key, cap))
            if found is not None:
                rows.append((*found, key))
        return rows

    def _remember_entry(self, slot: tuple[int, str, str], row: EntryRow | None) -> None:
        """Remember ``row`` as the newest entry of ``slot`` now (not a large value's)."""
        self._remember_entries([(slot, row)])

    def _remember_entries(self, rows: list[tuple[tuple[int, str, str], EntryRow | None]]) -> None:
        """``_remember_entry`` of each (slot, row)."""
        kept = [  # (slot, row, its size as the memory counts it: its bytes, and 100)
            (slot, row, 100 if row is None else len(row[1] or b"") + len(row[2] or b"") + 100)
            for slot, row in rows
        ]
        most = _LARGEST_REMEMBERED + 100
        if any(size > most for _, _, size in kept):
            for slot, _, size in kept:
                if size > most:
                    self.memory.forget("entry", slot)
            kept = [answer for answer in kept if answer[2] <= most]
        self.memory.put_many("entry", kept)

    def decode(self, kind: int, body: bytes | None, refs: bytes | None) -> Any:
        """The value of a stored form (``MISSING`` for a deletion or an erased value); a
        kind that is none of rewinddb's is damage, never read as JSON."""
        if kind == KIND_JSON:
            return self.arrays.decode(bytes(body or b"null"), None if refs is None else bytes(refs))
        if kind == KIND_BYTES:
            return bytes(body or b"")
        if kind in NO_VALUE:
            return MISSING
        raise self.damaged_kind(kind)

    def damaged_kind(self, kind: Any, entry: str = "an entry") -> CorruptDatabaseError:
        """The error of ``entry`` (as the caller names it) whose kind is none of rewinddb's:
        read as JSON it would pass for a value, so every read refuses it."""
        return CorruptDatabaseError(
            f"{self.conn.location} is damaged: {entry} has kind {kind!r}, none of rewinddb's "
            "(0 JSON, 1 bytes, 2 deleted, 3 erased): rewind_entries.kind was edited by another "
            "program; restore the file from a copy, or export what still reads into a new "
            "database",
            code="corrupt.entries",
            table="rewind_entries",
        )

    def decode_many(self, forms: list[tuple[int, bytes | None, bytes | None] | None]) -> list[Any]:
        """The values of stored forms (``(kind, body, refs)``; None: ``MISSING``), in
        order. JSON stored whole (its body is the value's JSON) is parsed in one call for
        all of them (diffs and merges decode many); the rest one by one (``decode``)."""
        whole = [
            form[1] or b"null"
            for form in forms
            if form is not None and form[0] == KIND_JSON and form[2] is None
        ]
        # Each body in an array of its own: a damaged body (``1,2``, or ``[1`` and ``2]``
        # in a row) cannot then shift the values after it without changing how many
        # arrays there are or how long one is; then each is decoded alone, which says so.
        parsed: list[Any] = loads(b"[[" + b"],[".join(whole) + b"]]") if whole else []
        if len(parsed) == len(whole) and set(map(len, parsed)) <= _SINGLE:
            parsed = list(map(_FIRST, parsed))
        else:
            parsed = [self.decode(KIND_JSON, body, None) for body in whole]
        if len(parsed) == len(forms):  # all stored whole: the common case
            return parsed
        values: list[Any] = []
        next_parsed = iter(parsed).__next__
        for form in forms:
            if form is None:
                values.append(MISSING)
            elif form[0] == KIND_JSON and form[2] is None:
                values.append(next_parsed())
            else:
                values.append(self.decode(*form))
        return values

    def read_in_server(self, branch: str, as_of: AsOf, space: str, key: str) -> tuple[Any] | None:
        """``(value,)`` of ``key`` on ``branch`` at ``as_of`` (now, or a version) read by one
        call of ``rewind_read_entry`` on a backend with routines; None where the ordinary
        path must answer (no routines, a datetime, no such branch, an out-of-range
        version: it raises the right error)."""
        if not self.conn.routines or self.conn.closed:
            return None
        if as_of is not None and (type(as_of) is not int or not 0 <= as_of < 2**63):
            return None
        check_name(branch, "branch")
        status, kind, body, refs = self.conn.fetchone(
            "SELECT * FROM rewind_read_entry(?, ?, ?, ?)", (branch, space, key, as_of)
        )
        if status == 1:
            return None
        return (MISSING,) if status == 2 else (self.decode(kind, body, refs),)

    def newest_entry(
        self, record: BranchRecord, space: str, key: str
    ) -> tuple[int, bytes | None] | None:
        """(kind, refs) of the newest entry of ``key`` visible on ``record`` now, or None:
        what this connection wrote last when nobody else has written since."""
        row = self.read_entry(record, self.clock(), space, key)
        return None if row is None else (row.kind, row.refs)

    def exists_now(self, record: BranchRecord, space: str, key: str) -> bool:
        """Whether ``key`` holds a value on ``record`` now (it is not absent or deleted)."""
        newest = self.newest_entry(record, space, key)
        return newest is not None and newest[0] not in NO_VALUE

    def read_value(self, record: BranchRecord, version: int, space: str, key: str) -> Any:
        """The value of ``key`` at (record, version), or ``MISSING``."""
        row = self.read_entry(record, version, space, key)
        if row is None:
            return MISSING
        return self.decode(row.kind, row.body, row.refs)

    def encode(self, value: Any, *, validated: bool = False) -> Encoded:
        """How ``value`` (or ``MISSING``, a deletion) is stored: (kind, body, shared). With
        ``shared`` (arrays long enough to share) the body is None until ``write_value``
        encodes it against the key's previous entry."""
        if value is MISSING:
            return KIND_DELETED, None, None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return KIND_BYTES, bytes(value), None
        if not validated:
            validate(value, allow_bytes=False)
        whole, shared = self.arrays.plan(value)
        return KIND_JSON, whole, shared or None

    def write_value(
        self,
        context: WriteContext,
        space: str,
        key: str,
        value: Any,
        *,
        validated: bool = False,
        encoded: Encoded | None = None,
    ) -> int:
        """Write ``value`` (or ``MISSING`` to delete) as ``key``'s entry in this commit."""
        kind, body, shared = encoded or self.encode(value, validated=validated)
        refs = None
        if shared:
            previous = self.newest_entry(context.branch, space, key)
            previous_refs = None
            if previous is not None and previous[1] is not None:
                previous_refs = self.arrays.refs_of(bytes(previous[1]))
            body, refs = self.arrays.encode(value, shared, previous_refs)
        slot = (space, key)
        # Its part of the commit hash first, so a commit this write allocates is recorded
        # with its final hash when this is all it writes.
        context.entry_parts[slot] = _commit_hash.entry_digest(
            _commit_hash.entry_part(space, key, kind, body, refs, context.entry_trigger)
        )
        version = context.commit()
        if slot in context.written:
            self.conn.execute(
                "UPDATE rewind_entries SET kind = ?, body = ?, refs = ?, trigger = ? "
                "WHERE branch_id = ? AND space = ? AND key = ? AND version = ?",
                (kind, body, refs, context.entry_trigger, context.branch.id, space, key, version),
            )
        else:
            self.conn.execute(
                self._INSERT_ENTRY,
                (context.branch.id, space, key, version, kind, body, refs, context.entry_trigger),
            )
            context.written.add(slot)
        self._remember_entry(
            (context.branch.id, space, key),
            EntryRow(kind, body, refs, version, context.entry_trigger, context.branch.id),
        )
        return version

    def write_values(
        self, context: WriteContext, space: str, values: dict[str, Any], *, validated: bool = False
    ) -> int:
        """Write several entries (``MISSING``: a deletion; a ``StoredValue``: another
        entry's stored form, copied; a ``CopiedEntry``: one that names its entry) in this
        commit, keys in sorted order; the entries that need no earlier row go in one
        statement (and the ``CopiedEntry`` ones of each source version in one more). The
        commit's row is recorded after their hash parts are known (with its final hash
        when they are all it writes)."""
        version = context.reserve()
        rows = []
        copies: dict[tuple[int, int], list[str]] = {}
        branch_id, trigger = context.branch.id, context.entry_trigger
        written, parts = context.written, context.entry_parts
        entry_part, entry_digest = _commit_hash.entry_part, _commit_hash.entry_digest
        for key in sorted(values):
            value = values[key]
            kind_of = type(value)
            if kind_of is StoredValue or kind_of is CopiedEntry:  # written as it is stored
                encoded: Encoded = (value.kind, value.body, None)
            else:
                encoded = self.encode(value, validated=validated)
            kind, body, shared = encoded
            slot = (space, key)
            if shared or slot in written:
                self.write_value(context, space, key, value, encoded=encoded)
                continue
            if kind_of is CopiedEntry:
                copies.setdefault((value.branch_id, value.version), []).append(key)
            rows.append((branch_id, space, key, version, kind, body, None, trigger))
            written.add(slot)
            parts[slot] = entry_digest(entry_part(space, key, kind, body, None, trigger))
        context.commit()
        if rows:
            sent = rows
            if copies and self.conn.dialect == "sqlite":
                copied = self._copy_entries(context, space, copies)
                if copied:
                    sent = [row for row in rows if row[2] not in copied]
            if sent:
                if copies:  # copied entries sent as rows: checked here instead
                    named = {key for keys in copies.values() for key in keys}
                    self._check_copied([row for row in sent if row[2] in named])
                self.conn.executemany(self._INSERT_ENTRY, sent)
            self._remember_entries(
                [
                    (
                        (branch_id, space, key),
                        _new_tuple(EntryRow, (kind, body, None, version, trigger, branch_id)),
                    )
                    for branch_id, _, key, version, kind, body, _, trigger in rows
                ]
            )
        return version

    #: ``write_values``' copies of the entries of keys (a JSON array) at one version of one
    #: branch into the commit being written, as stored (their refs are NULL: whole); a JSON
    #: body that is not JSON (another program's bytes) is not copied, so the copy comes up
    #: short and says the file is damaged.
    _COPY_ENTRIES = (
        "INSERT INTO rewind_entries (branch_id, space, key, version, kind, body, refs, trigger) "
        "SELECT ?, e.space, e.key, ?, e.kind, e.body, NULL, ? "
        "FROM json_each(?) j CROSS JOIN rewind_entries e "
        "ON e.branch_id = ? AND e.space = ? AND e.key = j.value AND e.version = ? "
        f"WHERE e.kind <> {KIND_JSON} OR json_valid(CAST(e.body AS TEXT))"
    )

    #: The first key ``_COPY_ENTRIES`` did not copy (to name it in the error).
    _NOT_COPIED = (
        "SELECT j.value FROM json_each(?) j LEFT JOIN rewind_entries e "
        "ON e.branch_id = ? AND e.space = ? AND e.key = j.value AND e.version = ? "
        f"WHERE e.key IS NULL OR (e.kind = {KIND_JSON} AND NOT json_valid(CAST(e.body AS TEXT))) "
        "LIMIT 1"
    )

    def _check_copied(self, rows: list[tuple[Any, ...]]) -> None:
        """Refuse to write entries copied as stored (rows of ``write_values``) whose JSON
        body does not decode: nothing decoded them on the way (a merge copies what the
        target left alone as the source stores it), and the damage would spread to the
        branch written, under a valid hash. One decode for all of them."""
        forms: list[tuple[int, bytes | None, bytes | None] | None] = [
            (row[4], row[5], None) for row in rows if row[4] == KIND_JSON
        ]
        try:
            self.decode_many(forms)
        except (ValueError, TypeError):
            for row in rows:
                try:
                    self.decode_many([(row[4], row[5], None)])
                except (ValueError, TypeError):
                    raise CorruptDatabaseError(
                        f"the {row[1]} entry {row[2]!r} to copy is not JSON: "
                        "rewind_entries.body is damaged",
                        code="corrupt.entries",
                    ) from None
            raise CorruptDatabaseError(  # (each decodes alone: not met on a sound file)
                "entries to copy do not decode together: rewind_entries.body is damaged",
                code="corrupt.entries",
            ) from None

    def _copy_entries(
        self, context: WriteContext, space: str, copies: dict[tuple[int, int], list[str]]
    ) -> set[str]:
        """The keys of ``copies`` ((branch id, version) -> keys whose entries there
        ``write_values`` writes as they are) copied by ``_COPY_ENTRIES``: those of each
        (branch, version) with at least ``_FEWEST_COPIED`` keys. Each copied entry was
        read in this write transaction (its row cannot have gone); a copy that finds
        fewer rows than keys says the file is damaged."""
        copied: set[str] = set()
        for (source_id, source_version), keys in copies.items():
            if len(keys) < _FEWEST_COPIED:
                continue
            try:
                names = _json_texts(keys)
            except _Unencodable:
                continue
            try:
                cursor = self.conn.execute(
                    self._COPY_ENTRIES,
                    (
                        context.branch.id,
                        context.version,
                        context.entry_trigger,
                        names,
                        source_id,
                        space,
                        source_version,
                    ),
                )
            except sqlite3.DataError:  # the keys' array longer than SQLite's longest string
                continue
            if cursor.rowcount != len(keys):
                bad = self.conn.row(self._NOT_COPIED, (names, source_id, space, source_version))
                raise CorruptDatabaseError(
                    f"the {space} entry {bad[0] if bad else '?'!r} of branch id {source_id} at "
                    f"version {source_version} to copy is missing from rewind_entries or its "
                    "JSON body is not JSON: the file is damaged",
                    code="corrupt.entries",
                )
            copied.update(keys)
        return copied

    def put_value(
        self,
        branch: str,
        space: str,
        key: str,
        value: Any,
        trigger: str | None = None,
        message: str | None = None,
        *,
        validated: bool = False,
    ) -> int:
        """Write one entry: a commit of its own, or part of the open transaction.

        On PostgreSQL a commit of its own is one call of ``rewind_put_entry`` (one round
        trip) when the value needs no earlier row to encode.
        """
        encoded = self.encode(value, validated=validated)
        kind, body, shared = encoded
        with self.conn.lock:
            if not shared and self.standalone_write():
                trigger = check_text(trigger, "trigger")
                part = _commit_hash.entry_part(space, key, kind, body, None, trigger)
                row = self.write_in_server(
                    "rewind_put_entry", branch, (space, key, kind, body, part), trigger, message
                )
                if row[0] is not None:
                    return int(row[0])  # else no such branch: the ordinary path says so
            with self.writing(branch, trigger, message) as write:
                return self.write_value(write, space, key, value, encoded=encoded)

    def write_in_server(
        self,
        routine: str,
        branch: str,
        arguments: tuple[Any, ...],
        trigger: str | None,
        message: str | None,
    ) -> tuple[Any, ...]:
        """The row of one call of a write routine (``_pg_routines``), whose parameters are
        the branch, ``arguments``, the commit hash's encoding of the trigger and message
        (``_commit_hash.texts_part``), trigger, message and the time, in that order. The caller
        checked ``standalone_write()``; the checks ``writing()`` makes come first here."""
        trigger = check_text(trigger, "trigger")
        message = check_text(message, "message")
        check_name(branch, "branch")
        texts = _commit_hash.texts_part(trigger, message)
        values = (branch, *arguments, texts, trigger, message, now_micros())
        sql = _ROUTINE_CALLS.get(routine)
        if sql is None:
            marks = ", ".join("?" * len(values))
            sql = _ROUTINE_CALLS[routine] = f"SELECT * FROM {routine}({marks})"
        row: tuple[Any, ...] = self.conn.fetchone(sql, values)
        return row

    def standalone_write(self) -> bool:
        """A write now would be a transaction of its own on a backend with write routines
        (so it may be one call). The caller holds ``conn.lock``."""
        conn = self.conn
        return (
            conn.routines
            and not conn.in_transaction
            and not conn.readonly
            and not conn.closed
            and self._group is None
        )

    def entries(
        self,
        record: BranchRecord,
        version: int,
        space: str,
        *,
        with_values: bool = True,
        prefix: str | None = None,
    ) -> dict[str, tuple[int, bytes | None, bytes | None]]:
        """The newest entry of every key of ``space`` (that starts with ``prefix``) that
        exists at (record, version): key -> (kind, body, refs), deleted keys left out. One
        query per lineage step."""
        columns = "e.kind, e.body, e.refs" if with_values else "e.kind, NULL, NULL"
        newest: dict[str, tuple[int, bytes | None, bytes | None]] = {}
        for branch_id, cap in self.row_lineage(record, version):
            for key, kind, body, refs in self.newest_rows(
                branch_id, cap, space, columns, prefix=prefix
            ):
                if prefix is None or key.startswith(prefix):
                    newest.setdefault(key, (kind, body, refs))
        return {key: row for key, row in newest.items() if row[0] not in NO_VALUE}

    def first_entries(
        self, record: BranchRecord, version: int, space: str, limit: int
    ) -> dict[str, tuple[int, bytes | None, bytes | None]]:
        """``entries`` of the first ``limit`` keys (in key order) that exist at (record,
        version): a page of a state too big to read whole. On SQLite each lineage step
        is walked on from where its own last walk stopped, and only when the keys up to
        there are settled: a key is settled once every step has walked past it (the
        first step that holds it wins, a deletion hides the ancestors' value); a round
        that settles no live key doubles the walks. Elsewhere keys may compare by a
        collation Python does not know: all are read."""
        if self.conn.dialect != "sqlite":
            found = self.entries(record, version, space)
            return {key: found[key] for key in sorted(found)[:limit]}
        steps = self.row_lineage(record, version)
        walked: list[dict[str, tuple[int, bytes | None, bytes | None]]] = [{} for _ in steps]
        last: list[str | None] = ["" for _ in steps]  # (None: walked to the end; "": not yet)
        kept: dict[str, tuple[int, bytes | None, bytes | None]] = {}
        frontier: str | None = ""
        size = max(limit, 1)
        while limit and len(kept) < limit and frontier is not None:
            for index, (branch_id, cap) in enumerate(steps):
                if last[index] == frontier:  # (it limits what is settled: walk it on)
                    rows, last[index] = self._walk_keys(branch_id, cap, space, frontier, size)
                    walked[index].update(
                        (key, (kind, body, refs)) for key, kind, body, refs in rows
                    )
            ends = [end for end in last if end is not None]
            frontier = min(ends) if ends else None
            settled: dict[str, tuple[int, bytes | None, bytes | None]] = {}
            for buffered in walked:  # (the branch itself first: its rows win)
                for key in [key for key in buffered if frontier is None or key <= frontier]:
                    settled.setdefault(key, buffered.pop(key))
            before = len(kept)
            for key in sorted(settled):
                row = settled[key]
                if row[0] not in NO_VALUE:
                    kept[key] = row
                    if len(kept) == limit:
                        break
            if len(kept) == before:
                size *= 2
        return kept

    def _walk_keys(
        self, branch_id: int, cap: int, space: str, start: str, limit: int
    ) -> tuple[list[Any], str | None]:
        """The newest entries at or below ``cap`` of the next ``limit`` keys after
        ``start`` that ``branch_id`` itself wrote in ``space`` (``newest_rows``'s walk,
        bounded), and the last key walked if the walk stopped before the end (None: no
        key of the branch is left after these)."""
        rows = self.conn.fetchall(
            "WITH RECURSIVE k(key, n) AS ("
            "SELECT (SELECT min(key) FROM rewind_entries WHERE branch_id = ? AND space = ? "
            "AND key > ?), 1 "
            "UNION ALL SELECT (SELECT min(key) FROM rewind_entries "
            "WHERE branch_id = ? AND space = ? AND key > k.key), k.n + 1 "
            "FROM k WHERE k.key IS NOT NULL AND k.n < ?) "
            "SELECT k.key, e.kind, e.body, e.refs FROM k LEFT JOIN rewind_entries e "
            "ON e.branch_id = ? AND e.space = ? AND e.key = k.key AND e.version = ("
            "SELECT max(version) FROM rewind_entries "
            "WHERE branch_id = ? AND space = ? AND key = k.key AND version <= ?) "
            "WHERE k.key IS NOT NULL",
            (branch_id, space, start, branch_id, space, limit, *(branch_id, space) * 2, cap),
        )
        walked = [row[0] for row in rows]
        last = max(walked) if len(walked) >= limit else None
        return [row for row in rows if row[1] is not None], last

    def newest_rows(
        self, branch_id: int, cap: int, space: str, columns: str, *, prefix: str | None = None
    ) -> list[Any]:
        """``key, <columns>`` of the newest entry at or below ``cap`` of every key that
        ``branch_id`` itself wrote in ``space`` (``e`` names the entry).

        The keys are walked with one index seek each (a recursive skip-scan), then one
        seek finds each key's newest version: the cost follows the number of keys, not
        the length of their history (a branch that wrote two keys 10,000 times each
        reads two rows, not 20,000). With ``prefix`` on SQLite, whose keys compare by
        their bytes, the walk starts at the prefix and stops past it (elsewhere keys may
        compare by a collation: all are walked and the caller filters).
        """
        low, high = "", ""
        params: tuple[Any, ...] = (branch_id, space)
        walk: tuple[Any, ...] = (branch_id, space)
        if prefix and self.conn.dialect == "sqlite":
            low = " AND key >= ?"
            params = (branch_id, space, prefix)
            after = _after_prefix(prefix)
            if after is not None:
                high, walk = " AND key < ?", (branch_id, space, after)
        return self.conn.fetchall(
            "WITH RECURSIVE k(key) AS ("
            f"SELECT (SELECT min(key) FROM rewind_entries WHERE branch_id = ? AND space = ?{low}) "
            "UNION ALL SELECT (SELECT min(key) FROM rewind_entries "
            f"WHERE branch_id = ? AND space = ? AND key > k.key{high}) "
            "FROM k WHERE k.key IS NOT NULL) "
            f"SELECT e.key, {columns} FROM k JOIN rewind_entries e "
            "ON e.branch_id = ? AND e.space = ? AND e.key = k.key AND e.version = ("
            "SELECT max(version) FROM rewind_entries "
            "WHERE branch_id = ? AND space = ? AND key = k.key AND version <= ?)",
            (*params, *walk, branch_id, space, branch_id, space, cap),
        )

    def changed_keys(
        self, ranges_a: dict[int, int], ranges_b: dict[int, int]
    ) -> set[tuple[str, str]]:
        """(space, key) pairs written in the part of history only one of two points sees.

        A key written nowhere in that part has the same value at both points, so diffs
        and merges only look at these.
        """
        changed: set[tuple[str, str]] = set()
        for branch_id in ranges_a.keys() | ranges_b.keys():
            lo, hi = sorted((ranges_a.get(branch_id, 0), ranges_b.get(branch_id, 0)))
            if lo == hi:
                continue
            changed.update(
                (space, key)
                for space, key in self.conn.fetchall(
                    "SELECT DISTINCT space, key FROM rewind_entries "
                    "WHERE branch_id = ? AND version > ? AND version <= ?",
                    (branch_id, lo, hi),
                )
            )
        return changed
