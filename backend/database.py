"""``rewinddb.open()``, the ``Database`` and its branch views."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from html import escape
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from . import rendering
from ._connection import (
    DB_FILENAME,
    Connection,
    SQLiteConnection,
    check_options,
    damaged_file,
    is_busy,
    is_damaged,
    storage_error,
)
from ._damage import guarded
from ._engine import DEFAULT_BRANCH, AsOf, Engine, check_count, check_flag
from .blame import LastWrite, last_writes
from .branches import Branches
from .diff import Diff, KeyVersion, Point, diff_points, key_versions
from .documents import Documents
from .erasure import erase_keys
from .errors import InvalidInputError, NotADatabaseError, NotFoundError, RewindError
from .events import Events
from .graph import HistoryGraph, build_graph
from .kv import KV
from .lineage_commits import (
    Written,
    commit_from_row,
    lineage_commit_count,
    lineage_commits,
    written_at,
)
from .models import Branch, Commit, ErasureReceipt
from .progress import Progress
from .retention import (
    GcReport,
    RetentionPolicy,
    check_policy,
    drop_policy,
    gc,
    policies,
    prune,
    set_policy,
)
from .state import State
from .transfer import TransferCounts, export_jsonl, import_jsonl
from .verify import DatabaseVerification
from .verify import verify as verify_history


@guarded
class _Primitives:
    """The primitives of one branch: ``kv``, ``json``, ``events`` and ``state``."""

    def __init__(self, db: Database, branch: str) -> None:
        self._db = db
        self.branch = branch
        self.kv = KV(db._engine, branch)
        self.json = Documents(db._engine, branch)
        self.events = Events(db._engine, branch)
        self.state = State(db._engine, branch)

    @contextmanager
    def transaction(
        self, *, trigger: str | None = None, message: str | None = None
    ) -> Iterator[None]:
        """Group every write on this branch inside the block into one version, atomically."""
        with self._db._engine.transaction(self.branch, trigger, message):
            yield

    def info(self) -> Branch:
        """This branch's record (parent, fork point, head, ...)."""
        return self._db.branches.get(self.branch)

    def snapshot(self, *, as_of: AsOf = None, limit: int | None = None) -> dict[str, Any]:
        """All state of the branch at ``as_of``:
        ``{"version": v, "kv": {...}, "json": {...}, "state": {...}}``; with ``limit``,
        the first ``limit`` keys of each space only (a page of a big state)."""
        if limit is not None:
            check_count(limit, "limit")
        engine = self._db._engine
        with engine.conn.lock, engine.conn.snapshot():
            record = engine.branch(self.branch)
            version = engine.resolve_as_of(record, as_of)
            return {
                "version": version,
                "kv": self.kv.items(as_of=version, limit=limit),
                "json": self.json.items(as_of=version, limit=limit),
                "state": self.state.items(as_of=version, limit=limit),
            }

    def blame(
        self, *, as_of: AsOf = None, limit: int | None = None
    ) -> dict[str, dict[str, LastWrite]]:
        """For every key at ``as_of``: the write (and the event in its version, if any)
        that gave it its value. ``{"kv": {key: LastWrite}, "json": {...}, "state": {...}}``;
        with ``limit``, for the first ``limit`` keys of each space only."""
        if limit is not None:
            check_count(limit, "limit")
        engine = self._db._engine
        with engine.conn.lock, engine.conn.snapshot():
            record = engine.branch(self.branch)
            return last_writes(engine, record, engine.resolve_as_of(record, as_of), limit)

    def key_history(
        self,
        space: str,
        key: str,
        *,
        as_of: AsOf = None,
        readable: bool = False,
        limit: int | None = None,
        before: int | None = None,
        after: int | None = None,
    ) -> list[KeyVersion]:
        """Every version of one key (``space``: ``kv``, ``json`` or ``state``) this branch
        sees, oldest first, each with the diff from the version before it (``readable``:
        of the values decoded as ``rewinddb.presenters.readable`` shows them); with ``limit``, the
        newest ``limit`` only (each still diffed against the one before it); with
        ``before``, only versions older than it (the cursor of a paged history: pass the
        oldest version of one page to get the next); with ``after``, only versions newer
        than it, and ``limit`` keeps the oldest (a page read forwards)."""
        check_flag(readable, "readable")
        spaces = {"kv": self.kv, "json": self.json, "state": self.state}
        if space not in spaces:
            raise InvalidInputError(
                f"space must be one of kv, json, state, not {space!r}", code="invalid.space"
            )
        if limit is not None:
            check_count(limit, "limit")
        if after is not None:
            check_count(after, "after")
            newer = spaces[space]._history(key, as_of, limit, before, after)
            base = spaces[space]._history(key, as_of, 1, after + 1)  # what the first changed
            return key_versions(space, base + newer, readable=readable)[len(base) :]
        entries = spaces[space]._history(key, as_of, None if limit is None else limit + 1, before)
        versions = key_versions(space, entries, readable=readable)
        if limit is None:
            return versions
        return versions[max(len(versions) - limit, 0) :]  # the extra one read is the base

    def restore(
        self,
        snapshot: Mapping[str, Any],
        *,
        trigger: str | None = None,
        message: str | None = None,
    ) -> int | None:
        """Make the branch's kv, json and state equal to ``snapshot`` (from ``snapshot()``)
        as one new version; None if they already are. The event log is not touched."""
        spaces = (self.kv, self.json, self.state)
        if not isinstance(snapshot, Mapping) or any(s.space not in snapshot for s in spaces):
            raise InvalidInputError(
                "restore takes a snapshot: a dict with 'kv', 'json' and 'state' dicts "
                "(from view.snapshot())",
                code="invalid.snapshot",
            )
        wanted = [(space, space._checked(snapshot[space.space], "snapshot")) for space in spaces]
        with self._db._engine.writing(self.branch, trigger, message) as write:
            changed = [space._replace_all(write, values) for space, values in wanted]
            return write.version if any(changed) else None


@guarded
class BranchView(_Primitives):
    """A branch of a database. It holds no state of its own: it is the database seen
    from one branch, and every read and write goes to that branch."""

    def diff(self, from_version: AsOf, to_version: AsOf = None, *, readable: bool = False) -> Diff:
        """What changed on this branch between two versions (default: up to now)."""
        return self._db.diff(
            self.branch,
            self.branch,
            as_of_a=from_version,
            as_of_b=to_version,
            readable=readable,
        )

    def commits(
        self, *, before: int | None = None, after: int | None = None, limit: int | None = None
    ) -> list[Commit]:
        """The commits this branch's state is made of, newest first: its own, then its
        ancestors' up to each fork point (``Commit.branch`` says whose); ``before``:
        only versions older than it, ``after``: only newer (a paged list's cursors).
        ``limit`` keeps the newest that many, or with ``after`` the oldest."""
        engine = self._db._engine
        with engine.conn.lock, engine.conn.snapshot():
            record = engine.branch(self.branch)
            return lineage_commits(engine, record, before=before, after=after, limit=limit)

    def commit_count(self, *, before: int | None = None) -> int:
        """How many commits ``commits(before=before)`` would list."""
        engine = self._db._engine
        with engine.conn.lock, engine.conn.snapshot():
            return lineage_commit_count(engine, engine.branch(self.branch), before=before)

    def written(self, version: int) -> Written:
        """What this branch's history holds at ``version``: the keys (``(space, key)``)
        and the events its commit there wrote (on this branch, or on the ancestor it
        inherited that version from); empty where another branch wrote."""
        engine = self._db._engine
        with engine.conn.lock, engine.conn.snapshot():
            return written_at(engine, engine.branch(self.branch), version)

    def __repr__(self) -> str:
        return f"<BranchView {self.branch!r} of {self._db.path}>"

    def _repr_html_(self) -> str:
        try:
            return rendering.view_html(self.info(), len(self.events), self.snapshot())
        except RewindError as error:
            return f"<div>branch view: {escape(str(error))}</div>"


@guarded
class Database(_Primitives):
    """An open rewinddb database; used directly, it is the ``default`` branch's view."""

    def __init__(self, path: Path | str, connection: Connection) -> None:
        self.path = path
        """The directory (SQLite), or the server's URL without its password."""
        self._engine = Engine(connection)
        self.branches = Branches(self._engine)
        super().__init__(self, DEFAULT_BRANCH)

    # -- lifecycle ---------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; later calls raise ``DatabaseClosedError``."""
        self._engine.conn.close()

    @property
    def closed(self) -> bool:
        return self._engine.conn.closed

    @property
    def readonly(self) -> bool:
        return self._engine.conn.readonly

    def __enter__(self) -> Database:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<rewinddb.Database {str(self.path)!r} ({state})>"

    def _repr_html_(self) -> str:
        if self.closed:
            return rendering.database_html(str(self.path), None)
        return rendering.database_html(str(self.path), self.version, self.branches.list())

    def graph(
        self, *, include_deleted: bool = False, max_points_per_branch: int | None = None
    ) -> HistoryGraph:
        """The branch graph the explorer and the widget draw: lanes, points, fork and
        merge edges (``max_points_per_branch`` thins long branches evenly)."""
        if max_points_per_branch is not None:
            check_count(max_points_per_branch, "max_points_per_branch")
        with self._engine.conn.lock, self._engine.conn.snapshot():
            return build_graph(
                self._engine,
                include_deleted=include_deleted,
                max_points_per_branch=max_points_per_branch,
            )

    @contextmanager
    def read(self) -> Iterator[None]:
        """Make every read inside the block see the same committed history, even while
        other processes write (one read transaction). Writes do not belong inside."""
        with self._engine.conn.snapshot():
            yield

    @contextmanager
    def atomic(self, *, savepoints: bool = True) -> Iterator[None]:
        """Make every write inside the block, on any branches (forks and deletes too),
        commit together or not at all: each write or ``transaction()`` still takes its own
        version, in order, but no reader and no crash ever sees some of them without the
        others. An exception inside rolls all of them back. The block holds the write
        lock (other writers wait), so keep it short.

        A write that fails inside is undone on its own (a savepoint), so the block may
        catch the error and go on. ``savepoints=False`` saves those statements for code
        that never does: a failed write inside then rolls back the whole block at its end,
        even if caught (``RewindError``, code ``transaction.aborted``), and later writes
        in the block are refused; reads in it may see part of the failed write (SQLite)
        or fail (PostgreSQL). Only the outermost block chooses."""
        check_flag(savepoints, "savepoints")
        with self._engine.atomic(savepoints=savepoints):
            yield

    def change_mark(self) -> tuple[int, int, int] | None:
        """A value that stays equal while nothing writes to the database (no other code on
        this connection, no other process) and nothing is rolled back; None where that
        cannot be told cheaply (PostgreSQL). For caches kept beside the database: read
        it inside ``db.read()`` or ``db.atomic()``, and trust what was cached only while
        it is unchanged. Read after the last write of a ``db.atomic()`` block, it is the
        mark the database has once the block commits (if an enclosing block rolls back
        instead, the mark moves on)."""
        conn = self._engine.conn
        with conn.lock:
            conn.check_open()
            token = conn.change_token()
            if type(token) is not int:  # no sign from the server (PostgreSQL)
                return None
            return token, conn.total_changes(), conn.rollbacks

    # -- views and history -------------------------------------------------------

    def at(self, branch: str) -> BranchView:
        """A view of ``branch``: the same primitives, reading and writing that branch."""
        self._engine.branch(branch)
        return BranchView(self, branch)

    def diff(
        self,
        a: str,
        b: str,
        *,
        as_of_a: AsOf = None,
        as_of_b: AsOf = None,
        readable: bool = False,
        events: bool = True,
    ) -> Diff:
        """The structured diff from branch ``a`` (at ``as_of_a``) to ``b`` (at ``as_of_b``).
        With ``readable``, values LangGraph's serde encoded are compared decoded
        (``rewinddb.presenters.readable``), so paths and values name what a person reads;
        ``events=False`` leaves the events out (the state's changes only)."""
        check_flag(readable, "readable")
        check_flag(events, "events")
        engine = self._engine
        with engine.conn.lock:
            record_a, record_b = engine.branch(a), engine.branch(b)
            version_a = engine.resolve_as_of(record_a, as_of_a)
            version_b = engine.resolve_as_of(record_b, as_of_b)
            return diff_points(
                engine, record_a, version_a, record_b, version_b, readable=readable, events=events
            )

    def common_point(self, a: str, b: str, *, as_of_a: AsOf = None, as_of_b: AsOf = None) -> Point:
        """The newest point both ``a`` (at ``as_of_a``) and ``b`` (at ``as_of_b``) see
        through their lineages: where two attempts' histories part (a fork point, or
        the older of two points of one branch)."""
        engine = self._engine
        with engine.conn.lock:
            record_a, record_b = engine.branch(a), engine.branch(b)
            ranges_a = engine.ranges(record_a, engine.resolve_as_of(record_a, as_of_a))
            ranges_b = engine.ranges(record_b, engine.resolve_as_of(record_b, as_of_b))
            shared = [
                (min(ranges_a[branch_id], ranges_b[branch_id]), branch_id)
                for branch_id in ranges_a.keys() & ranges_b.keys()
            ]
            if not shared:  # separate roots (after a deleted ancestor): the start
                return Point(a, 0)
            version, branch_id = max(shared)
            return Point(engine.branch_by_id(branch_id).name, version)

    def export_jsonl(
        self,
        out: IO[bytes],
        *,
        branches: Sequence[str] | None = None,
        progress: Progress | None = None,
    ) -> TransferCounts:
        """Write the history (of ``branches`` and their ancestors; default: all) to ``out``
        as JSON Lines (see ``rewinddb.transfer``)."""
        with self._engine.conn.lock:
            self._engine.conn.check_open()
            self._engine.arrays.check_bases()  # (the export walks down array bases)
        return export_jsonl(self._engine, out, branches=branches, progress=progress)

    def import_jsonl(
        self, lines: Iterable[bytes], *, progress: Progress | None = None
    ) -> TransferCounts:
        """Rebuild an exported history here (a database with no history yet), all or
        nothing: same versions, same answers for every ``as_of`` read, same hashes."""
        return import_jsonl(self._engine, lines, progress=progress)

    @property
    def version(self) -> int:
        """The newest version on the DB-wide clock."""
        with self._engine.conn.lock:
            self._engine.conn.check_open()
            return self._engine.clock()

    @property
    def stamp(self) -> str:
        """A short text that changes whenever the history does (a new version, a fork, a
        deleted branch, an erasure or a prune): cheap to poll, as live views do."""
        with self._engine.conn.lock, self._engine.conn.snapshot():
            branches, deleted, generation = self._engine.conn.fetchone(
                "SELECT count(*), count(deleted_at), (SELECT value FROM rewind_meta "
                "WHERE key = 'generation') FROM rewind_branches"
            )
            stamp = f"{self._engine.clock()}.{branches}.{deleted}"
            return f"{stamp}.{generation}" if generation else stamp

    # -- erasure and retention -----------------------------------------------------

    def erase_key(self, space: str, key: str, *, branch: str | None = None) -> ErasureReceipt:
        """Erase every value ``key`` of ``space`` (``kv``, ``json`` or ``state``) ever had, on
        every branch and at every version, inherited ones included: each becomes an erased
        entry that reads as absent and shows in ``key_history`` as erased at the version
        this ran at. With ``branch``: on that branch, the branches forked from it, and what
        it inherited (for every branch that inherits that too). The commits still verify
        (each keeps the value's digest, not the value), and the bytes are gone from the
        file once the outermost transaction commits (``erasure``)."""
        return erase_keys(self._engine, space, [key], branch=branch)

    def erase_keys(
        self,
        space: str,
        keys: Iterable[str],
        *,
        branch: str | None = None,
        missing_ok: bool = False,
    ) -> ErasureReceipt:
        """:meth:`erase_key` of many keys, in one transaction; keys never written are
        ``not_found.key`` unless ``missing_ok``."""
        check_flag(missing_ok, "missing_ok")
        return erase_keys(self._engine, space, keys, branch=branch, missing_ok=missing_ok)

    def retain(
        self,
        pattern: str,
        *,
        keep_last: int | None = None,
        max_age: timedelta | None = None,
        keep_pinned: bool = True,
    ) -> RetentionPolicy:
        """Set the retention policy of the branches whose names match ``pattern`` (a glob,
        such as ``lg/*``): ``gc()`` keeps their newest ``keep_last`` versions and those
        younger than ``max_age`` (a version goes only when both let it go) and removes the
        rest of their history; pinned branches are exempt unless ``keep_pinned=False``.
        The first policy (by pattern) that matches a branch applies. Setting a pattern's
        policy again replaces it."""
        policy = check_policy(pattern, keep_last, max_age, keep_pinned)
        set_policy(self._engine, policy)
        return policy

    def retention(self) -> list[RetentionPolicy]:
        """The retention policies set, by pattern."""
        with self._engine.conn.lock:
            self._engine.conn.check_open()
            return policies(self._engine)

    def drop_retention(self, pattern: str) -> bool:
        """Remove the policy of ``pattern``; whether there was one."""
        return drop_policy(self._engine, pattern)

    def prune(
        self,
        branch: str,
        *,
        before: int | datetime | None = None,
        keep_last: int | None = None,
        max_age: timedelta | None = None,
        reason: str | None = None,
    ) -> GcReport:
        """Remove ``branch``'s history before a version now: ``before`` (a version or a
        time), or by a policy's terms (``keep_last``, ``max_age``). Reads ``as_of`` a kept
        version answer as before; earlier ones raise ``history_unavailable`` naming
        ``reason`` (or these terms). What its forks read is kept."""
        report = prune(
            self._engine,
            branch,
            before=before,
            keep_last=keep_last,
            max_age=max_age,
            reason=reason,
        )
        return report

    def gc(self, *, dry_run: bool = False, vacuum: bool = False) -> GcReport:
        """Apply the retention policies, remove the rows of deleted branches and give the
        space back, in short write transactions (agents may write meanwhile). With
        ``dry_run`` nothing changes and the report says what a run would remove;
        ``vacuum`` also rewrites the whole file (one long step; a file created before
        schema 8 shrinks only so, its free pages are reused otherwise)."""
        return gc(self._engine, dry_run=dry_run, vacuum=vacuum)

    def verify(self) -> DatabaseVerification:
        """Check the whole stored history: every branch's lineage, the hash chain over
        commits (each commit's hash covers the entries and events it wrote), every event
        log's hash chain and every shared list's item hashes. The result says, for each
        branch, the first bad point it sees (``.ok`` when there is none); nothing is
        changed, whatever it finds."""
        engine = self._engine
        with engine.conn.lock:
            engine.conn.check_open()
            found = engine.conn.schema_migrated[1]  # the schema it has now
            if found < 8:
                raise RewindError(
                    f"{engine.conn.location} has schema {found}, from before commits were "
                    "hashed as this rewinddb hashes them: run `rewinddb migrate "
                    f"{engine.conn.location}` (or open it writable once), then verify it",
                    code="schema.outdated",
                )
            return verify_history(engine)

    def commits(self, branch: str | None = None, *, limit: int | None = None) -> list[Commit]:
        """Commits newest first, of every branch or of ``branch`` alone."""
        engine = self._engine
        with engine.conn.lock:
            engine.conn.check_open()
            sql = (
                "SELECT version, branch_id, ts, trigger, message, merge_branch_id, "
                "merge_version FROM rewind_commits"
            )
            params: list[Any] = []
            if branch is not None:
                sql += " WHERE branch_id = ?"
                params.append(engine.branch(branch).id)
            sql += " ORDER BY version DESC"
            if limit is not None:
                sql += " LIMIT ?"
                params.append(check_count(limit, "limit"))
            return [commit_from_row(engine, row) for row in engine.conn.fetchall(sql, params)]


def open(
    path: str | os.PathLike[str],
    *,
    create: bool = True,
    readonly: bool = False,
    durability: str = "normal",
    busy_timeout: float = 60.0,
    idle_in_transaction_timeout: float = 30.0,
) -> Database:
    """Open (or create) the database in directory ``path``, or on the PostgreSQL server
    a ``postgresql://user@host/dbname`` URL names (in its ``search_path`` schema).

    ``durability="normal"`` (default) survives a crashed or killed process;
    ``"full"`` also survives a power cut, at the cost of an fsync per commit (PostgreSQL
    ``normal`` is ``synchronous_commit = off``: a server crash may lose the newest
    commits, never one in the middle; ``full`` is ``on``).
    ``readonly=True`` opens it so that no call can change it.
    ``busy_timeout``: how many seconds a writer waits for another one's lock before
    ``busy``. ``idle_in_transaction_timeout`` (PostgreSQL; validated and ignored on
    SQLite): the server ends a session of this database that sits idle inside a
    transaction longer than this many seconds (its client frozen, or its host gone),
    releasing the write lock it held; 0 means never.
    """
    if isinstance(path, str) and "://" in path:
        return _open_server(
            path,
            create=create,
            readonly=readonly,
            durability=durability,
            busy_timeout=busy_timeout,
            idle_in_transaction_timeout=idle_in_transaction_timeout,
        )
    if not isinstance(path, (str, os.PathLike)):
        raise RewindError(
            f"path must be a directory path, not {type(path).__name__}", code="invalid.path"
        )
    check_options(durability, busy_timeout, idle_in_transaction_timeout)
    directory = Path(path)
    try:
        _prepare_directory(directory, create=create and not readonly)
    except (OSError, ValueError) as error:  # NUL in the name, a name too long, no access
        raise RewindError(f"cannot use {str(path)!r}: {error}", code="invalid.path") from None
    db_file = directory / DB_FILENAME
    try:
        connection = SQLiteConnection(
            directory, durability=durability, readonly=readonly, busy_timeout=busy_timeout
        )
    except sqlite3.Error as error:
        if is_damaged(error, header=False):  # a SQLite file (so ours), and damaged
            raise damaged_file(str(db_file), error) from error
        raise NotADatabaseError(f"cannot open {db_file}: {error}") from error
    try:
        if not create and not connection.has_schema():  # an empty file, another app's
            raise NotADatabaseError(
                f"{db_file} is not a rewinddb database (it holds no rewinddb tables)",
                path=str(directory),
            )
        connection.ensure_schema()
    except sqlite3.DatabaseError as error:
        connection.close()
        if is_busy(error):
            raise storage_error(error) from error
        raise NotADatabaseError(f"{db_file} is not a rewinddb database: {error}") from error
    except BaseException:
        connection.close()
        raise
    return Database(directory, connection)


def _open_server(
    url: str,
    *,
    create: bool,
    readonly: bool,
    durability: str,
    busy_timeout: float,
    idle_in_transaction_timeout: float,
) -> Database:
    """``open()`` for a PostgreSQL URL."""
    scheme = url.split("://", 1)[0]
    if scheme not in ("postgresql", "postgres"):
        raise RewindError(
            f"{scheme}:// databases are not supported; give a directory (SQLite) or a "
            "postgresql:// URL",
            code="unsupported.backend",
        )
    check_options(durability, busy_timeout, idle_in_transaction_timeout)
    from ._postgres import PostgresConnection

    connection = PostgresConnection(
        url,
        durability=durability,
        readonly=readonly,
        busy_timeout=busy_timeout,
        idle_in_transaction_timeout=idle_in_transaction_timeout,
    )
    try:
        if not create and not connection.has_schema():
            raise NotFoundError(
                f"no rewinddb database at {connection.location}", code="not_found.database"
            )
        connection.ensure_schema()
    except BaseException:
        connection.close()
        raise
    return Database(connection.location, connection)


def _prepare_directory(directory: Path, *, create: bool) -> None:
    """Check that ``directory`` holds a database, or may become one (and make it)."""
    str(directory).encode("utf-8")  # a lone surrogate cannot name a file
    if directory.exists() and not directory.is_dir():
        raise NotADatabaseError(
            f"{directory} is a file; a rewinddb database is a directory", path=str(directory)
        )
    if (directory / DB_FILENAME).exists():
        return
    if not create:
        raise NotFoundError(f"no rewinddb database at {directory}", code="not_found.database")
    if directory.exists() and any(
        not entry.name.startswith(DB_FILENAME) for entry in directory.iterdir()
    ):  # (another process may be creating the database right now)
        raise NotADatabaseError(
            f"{directory} is not a rewinddb database (no {DB_FILENAME} in it) and is not "
            "empty; give a new or empty directory",
            path=str(directory),
        )
    directory.mkdir(parents=True, exist_ok=True)
