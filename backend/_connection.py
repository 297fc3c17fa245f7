"""The one database connection of a ``Database``, and how writes are made atomic.

The schema comes from SQLModel (``_schema``); statements on the hot path go straight to
the DB-API connection with portable SQL (``?`` placeholders, standard syntax), because
SQLAlchemy's per-statement overhead alone would cost more than SQLite's commit. The
embedded backend is ``SQLiteConnection`` (here); ``_postgres.PostgresConnection`` is the
other. Both allocate the version clock under one write lock held to commit, so versions
are committed in order and an ``as_of`` read never sees half of one.

SQLite runs in WAL mode: readers never block the writer.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy.dialects import sqlite
from sqlalchemy.schema import CreateIndex, CreateTable

from . import _migrations, _schema
from ._memory import Memory
from .errors import (
    CorruptDatabaseError,
    DatabaseBusyError,
    DatabaseClosedError,
    NotADatabaseError,
    ReadOnlyError,
    RewindError,
)

DB_FILENAME = "rewind.sqlite3"
FORMAT_MARKER = "rewinddb"

#: ``normal``: WAL + synchronous=NORMAL. A crashed or killed process loses nothing it
#: committed; a power cut may lose the last commits (the database stays consistent).
#: ``full``: synchronous=FULL, every commit is on disk before the call returns.
DURABILITY_LEVELS = {"normal": "NORMAL", "full": "FULL"}

Params = Sequence[Any]


def check_options(
    durability: object, busy_timeout: object, idle_in_transaction_timeout: object = 0.0
) -> None:
    """Refuse bad ``open()`` options before anything is created on disk."""
    if not isinstance(durability, str) or durability not in DURABILITY_LEVELS:
        raise RewindError(
            f"durability must be one of {sorted(DURABILITY_LEVELS)}, not {durability!r}",
            code="invalid.option",
        )
    for name, seconds in (
        ("busy_timeout", busy_timeout),
        ("idle_in_transaction_timeout", idle_in_transaction_timeout),
    ):
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not 0 <= seconds < 10**6  # (NaN fails this too)
        ):
            raise RewindError(
                f"{name} is a number of seconds, not {seconds!r}", code="invalid.option"
            )


class Connection:
    """One database connection with explicit transactions and a lock for threads.

    The transaction discipline (the outermost ``write()`` is a transaction, inner ones
    savepoints; ``snapshot()`` is one read transaction; rollbacks call ``rolled_back``)
    is shared by both backends; subclasses say how to talk to their server.
    """

    #: ``sqlite`` or ``postgresql``: the few statements that differ look at this.
    dialect = ""
    #: Where the database is, for messages (a file, or a URL without its password).
    location = ""
    #: The server has routines (``_pg_routines``): a write that is a transaction of its
    #: own, or the read of one key, can be one call.
    routines = False
    #: An SQL expression of the change token (``change_token``) outside a transaction, for
    #: a statement that reads it with its rows, in their snapshot; None: there is none.
    token_column: str | None = None

    def __init__(self, *, readonly: bool, busy_timeout: float) -> None:
        self.readonly = readonly
        self.busy_timeout = busy_timeout
        self.lock = threading.RLock()
        self._depth = 0
        #: The newest savepoint, while no statement has run since it was set: a level
        #: that starts then rolls back to it too instead of setting its own.
        self._fresh_savepoint: str | None = None
        self._reading = False  # the open transaction is a snapshot (read-only)
        #: The open write transaction gives inner levels savepoints (``write()``).
        self._savepoints = True
        #: An inner level of a transaction without savepoints failed: it must roll back.
        self._doomed = False
        #: Counts write transactions begun: what a cache may key "this transaction" on.
        self._write_serial = 0
        self._closed = False
        #: Called after a transaction rolls back (caches of rows it wrote are stale).
        self.rolled_back: list[Callable[[], None]] = []
        #: Called in a write transaction just before it commits (its last statements:
        #: bookkeeping, such as sealing commits, whose changes ``total_changes`` omits).
        self.before_commit: list[Callable[[], None]] = []
        self._bookkeeping_changes = 0
        #: How many times writes were rolled back: part of ``Database.change_mark()``.
        self.rollbacks = 0
        #: An erasure asked for the space back (``request_reclaim``), and whether that
        #: waits for the caller (``deferring_reclaim``: gc, which reclaims once at its end).
        self._reclaim_requested = False
        self._reclaim_deferred = 0
        #: What this connection remembers of the database between statements, under
        #: one rule (``_memory``).
        self.memory = Memory(self.change_token, self.rolled_back)
        #: (schema version found, schema version now), set by ``ensure_schema``.
        self.schema_migrated = (0, 0)
        #: ``ensure_schema`` has checked (and migrated) the schema: it is the current one.
        self.schema_ready = False

    # -- what a backend provides ---------------------------------------------------

    def _run(self, sql: str, params: Params) -> Any:
        """Execute one statement (``?`` placeholders) and return its rows, to be read once
        (a cursor, or an iterator)."""
        raise NotImplementedError

    def _run_many(self, sql: str, rows: Sequence[Params]) -> None:
        raise NotImplementedError

    def _begin(self, *, write: bool) -> None:
        raise NotImplementedError

    def _end(self, *, commit: bool) -> None:
        raise NotImplementedError

    def reclaim(self, *, step_pages: int = 256, full: bool = False) -> float:
        """Give the space of deleted rows back to the file system (see the backends);
        returns the longest any of its steps held the write lock, in seconds."""
        return 0.0

    def _close(self) -> None:
        raise NotImplementedError

    def _has_meta(self) -> bool:
        raise NotImplementedError

    def _prepare_new(self) -> None:
        """Before the schema of a new database is created (SQLite switches to WAL)."""

    def install_routines(self) -> None:
        """Create the server-side routines in the open write transaction (a backend with
        ``routines``; the schema's creation and migrations 3, 4 and 5 call it)."""

    def _is_empty(self) -> bool:
        raise NotImplementedError

    def _ddl_dialect(self) -> Any:
        raise NotImplementedError

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        """The driver's exception classes (a statement the database refused)."""
        raise NotImplementedError

    def change_token(self) -> Hashable | None:
        """A value that stays the same while no OTHER connection can commit (so rows this
        connection read are still current, unless it changed them itself); None when
        that cannot be told. Without a cheaper sign from the server it is the open write
        transaction's serial: that transaction holds the write lock, so nobody else
        commits until it ends (``_memory`` keeps what this connection knows under it)."""
        serial = self.write_transaction
        return None if serial is None else ("write", serial)

    def total_changes(self) -> int:
        """How many rows this connection has changed since it opened, not counting the
        bookkeeping done just before each commit (-1: not known)."""
        return -1

    def contains_text(self, column: str, *, binary: bool = False) -> str:
        """A condition: ``column`` (text, or UTF-8 bytes if ``binary``) matches the ``?``
        parameter, a LIKE pattern with ``\\`` as escape; ASCII letters match either case."""
        raise NotImplementedError

    # -- lifecycle ---------------------------------------------------------------

    def has_schema(self) -> bool:
        """True if this database holds rewinddb's tables."""
        return self._has_meta()

    def ensure_schema(self) -> None:
        """Create the tables on a new database, or check that an old one is ours."""
        if not self._has_meta():
            if self.readonly:
                raise NotADatabaseError(f"{self.location} holds no rewinddb database yet")
            self._prepare_new()
            with self.write():  # two processes creating one database: one creates it
                if not self._has_meta():
                    self._create_schema()
        marker = self.fetchone("SELECT value FROM rewind_meta WHERE key = 'format'")
        if marker is None or marker[0] != FORMAT_MARKER:
            raise NotADatabaseError(f"{self.location} is not a rewinddb database")
        self.schema_migrated = _migrations.migrate(self)
        self.schema_ready = True

    def _create_schema(self) -> None:
        """Run the SQLModel schema's DDL in the open transaction, then mark it ours."""
        if not self._is_empty():
            raise NotADatabaseError(
                f"{self.location} is not a rewinddb database (it holds other tables)"
            )
        dialect = self._ddl_dialect()
        for table in _schema.TABLES:
            self.execute(str(CreateTable(table).compile(dialect=dialect)))
            for index in sorted(table.indexes, key=lambda index: str(index.name)):
                self.execute(str(CreateIndex(index).compile(dialect=dialect)))
        self.execute(
            "INSERT INTO rewind_meta (key, value) VALUES (?, ?), (?, ?)",
            ("format", FORMAT_MARKER, "schema_version", str(_schema.SCHEMA_VERSION)),
        )
        # Every database has its root branch from the start (version 0, empty).
        self.execute(
            "INSERT INTO rewind_branches (name, parent_id, forked_at, created_at) "
            "VALUES ('default', NULL, 0, ?)",
            (time.time_ns() // 1000,),
        )
        self.install_routines()

    def create_missing(self) -> None:
        """Create the schema's tables and indexes an older database lacks (a migration
        that adds them), in the open transaction."""
        dialect = self._ddl_dialect()
        for table in _schema.TABLES:
            self.execute(str(CreateTable(table, if_not_exists=True).compile(dialect=dialect)))
            for index in sorted(table.indexes, key=lambda index: str(index.name)):
                self.execute(str(CreateIndex(index, if_not_exists=True).compile(dialect=dialect)))

    def close(self) -> None:
        with self.lock:
            if not self._closed:
                self._closed = True
                self._close()

    @property
    def closed(self) -> bool:
        return self._closed

    def request_reclaim(self) -> None:
        """Rows were removed (an erasure): give the space back, and checkpoint the WAL so
        no old page image keeps them, once the outermost transaction has committed."""
        self._reclaim_requested = True
        if not self._depth:
            self._reclaim_if_requested()

    @contextmanager
    def deferring_reclaim(self) -> Iterator[None]:
        """Within the block, erasures' requests wait (the caller reclaims at its end)."""
        self._reclaim_deferred += 1
        try:
            yield
        finally:
            self._reclaim_deferred -= 1

    def _reclaim_if_requested(self) -> None:
        if self._reclaim_requested and not self._reclaim_deferred and not self._depth:
            self._reclaim_requested = False
            self.reclaim()

    def _after_rollback(self) -> None:
        """Writes were rolled back (a transaction, or a level's savepoint)."""
        self.rollbacks += 1
        if not self._depth:  # the whole transaction: what it removed is back
            self._reclaim_requested = False
        for callback in self.rolled_back:
            callback()

    def _transaction_lost(self) -> bool:
        """The open transaction was rolled back by the database itself (not by us)."""
        return False

    def _as_rewind_error(self, error: BaseException) -> BaseException:
        """What a failure inside a write transaction surfaces as: a driver's error (disk
        full, I/O error, an interrupted statement) becomes a ``storage`` RewindError."""
        return error

    @property
    def write_transaction(self) -> int | None:
        """The serial number of the open write transaction (None outside one): nobody
        else writes until it ends, so what it alone changes can be tracked in memory."""
        return self._write_serial if self._depth and not self._reading else None

    @property
    def in_transaction(self) -> bool:
        """A transaction (read or write) is open on this connection."""
        return self._depth > 0

    def check_open(self) -> None:
        if self._closed:
            raise DatabaseClosedError("the database is closed; open it again with rewinddb.open()")

    # -- statements --------------------------------------------------------------

    # Each statement's driver error passes ``damage()``: one that says the file is damaged
    # (an unreadable page, a missing table) surfaces as a ``CorruptDatabaseError``.

    def execute(self, sql: str, params: Params = ()) -> Any:
        if self._closed:
            self.check_open()
        self._fresh_savepoint = None
        try:
            return self._run(sql, params)
        except Exception as error:
            failure = self.damage(error)
            if failure is error:
                raise
            raise failure from error

    def executemany(self, sql: str, rows: Sequence[Params]) -> None:
        self.check_open()
        self._fresh_savepoint = None
        try:
            self._run_many(sql, rows)
        except Exception as error:
            failure = self.damage(error)
            if failure is error:
                raise
            raise failure from error

    def fetchone(self, sql: str, params: Params = ()) -> Any:
        if self._closed:
            self.check_open()
        self._fresh_savepoint = None
        try:
            return self._run_one(sql, params)
        except Exception as error:
            failure = self.damage(error)
            if failure is error:
                raise
            raise failure from error

    def damage(self, error: BaseException) -> BaseException:
        """``error`` as a ``CorruptDatabaseError`` if it says the database is damaged,
        else ``error`` itself (a backend knows its driver's errors)."""
        return error

    def _run_one(self, sql: str, params: Params) -> Any:
        """The first row of one statement (a backend may send these its own way)."""
        return self._run(sql, params).fetchone()

    def row(self, sql: str, params: Params = ()) -> Any:
        """``fetchone`` of a statement of one row at most, on the read path: the caller
        holds ``lock`` (so a backend may run these on a cursor it keeps for them)."""
        return self.fetchone(sql, params)

    def fetchall(self, sql: str, params: Params = ()) -> list[Any]:
        cursor = self.execute(sql, params)
        try:  # (SQLite reads most pages while the rows are fetched)
            rows: list[Any] = list(cursor)
        except Exception as error:
            failure = self.damage(error)
            if failure is error:
                raise
            raise failure from error
        return rows

    def insert_id(self, sql: str, params: Params = ()) -> int:
        """Run an ``INSERT`` into a table with an ``id`` key and return the new id."""
        row = self.fetchone(f"{sql} RETURNING id", params)
        return int(row[0])

    # -- transactions ------------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read transaction: every statement inside sees the same committed state."""
        with self.lock:
            self.check_open()
            if self._depth:
                yield
                return
            self._begin(write=False)
            self._depth += 1
            self._reading = True
            try:
                yield
            finally:
                self._depth -= 1
                self._reading = False
                self._end(commit=True)

    @contextmanager
    def write(self, *, savepoints: bool = True) -> Iterator[None]:
        """An atomic write: the outermost level is a transaction, inner ones savepoints.

        Any exception rolls back this level completely, so a refused write inside a
        larger transaction leaves nothing behind either. A level that starts before any
        statement has run since the newest savepoint shares it (rolling back to it undoes
        this level's statements and nothing else): a write inside a ``transaction()``
        inside ``db.atomic()`` costs one savepoint, not two.

        ``savepoints=False`` (the outermost level's choice) gives inner levels none: an
        exception in one then dooms the whole transaction, which rolls back at its end
        even if the exception was caught inside (and says so with ``transaction.aborted``).
        """
        with self.lock:
            self.check_open()
            if self.readonly:
                raise ReadOnlyError("this database was opened read-only")
            if self._reading:
                raise RewindError(
                    "writes do not belong inside db.read() (a read-only snapshot); "
                    "write before or after the block",
                    code="invalid.transaction",
                )
            depth = self._depth
            if depth and self._doomed:
                raise _aborted()
            savepoint, own = self._fresh_savepoint, False
            if depth == 0:
                self._begin(write=True)
                self._write_serial += 1
                savepoint = self._fresh_savepoint = None
                self._savepoints, self._doomed = savepoints, False
            elif not self._savepoints:
                savepoint = None
            elif savepoint is None:
                savepoint, own = f"rw{depth}", True
                self._run(f"SAVEPOINT {savepoint}", ())
                self._fresh_savepoint = savepoint
            self._depth += 1
            try:
                yield
            except BaseException as error:
                self._depth -= 1
                failure = self._as_rewind_error(error)
                if depth == 0:
                    self._fresh_savepoint = None
                    try:
                        self._end(commit=False)
                    finally:
                        self._after_rollback()
                elif savepoint is None or self._transaction_lost():
                    # No savepoint, or the database rolled the whole transaction back
                    # itself (SQLite does on a full disk): the transaction's end rolls
                    # back, and what it wrote is forgotten now.
                    self._doomed = True
                    self._fresh_savepoint = None
                    if savepoint is not None:
                        self._after_rollback()
                else:
                    self._run(f"ROLLBACK TO SAVEPOINT {savepoint}", ())
                    if own:
                        self._run(f"RELEASE SAVEPOINT {savepoint}", ())
                    # A shared savepoint is as fresh as when this level began; an own one
                    # is gone, and the enclosing one was not fresh (else it was shared).
                    self._fresh_savepoint = None if own else savepoint
                    self._after_rollback()
                if failure is error:
                    raise
                raise failure from error
            if depth == 0 and not self._doomed:
                try:  # the transaction's last statements, still inside it
                    changes = self.total_changes()
                    for callback in self.before_commit:
                        callback()
                    self._bookkeeping_changes += self.total_changes() - changes
                except BaseException as error:
                    self._depth -= 1
                    try:
                        self._end(commit=False)
                    finally:
                        self._after_rollback()
                    failure = self._as_rewind_error(error)
                    if failure is error:
                        raise
                    raise failure from error
            self._depth -= 1
            self._fresh_savepoint = None
            if depth == 0:
                if self._doomed:
                    self._end(commit=False)
                    self._after_rollback()
                    raise _aborted()
                try:
                    self._end(commit=True)
                except RewindError:  # the commit failed: nothing was written
                    self._after_rollback()
                    raise
                self._reclaim_if_requested()
            elif own:
                self._run(f"RELEASE SAVEPOINT {savepoint}", ())


#: How long a run of short write transactions (gc's steps) pauses between two, so that a
#: writer waiting on the database (it tries every 2 ms at most) gets its turn.
PAUSE = 0.003

#: The page size of a new database file: SQLite's default. (8 KiB pages keep a 1-2 KB
#: record of a WITHOUT ROWID table off an overflow page of its own, about 40% less file
#: for chat data, but cost single writes about a sixth and double the smallest file.)
PAGE_SIZE = 4096
#: The WAL is copied into the database once it holds this many pages (SQLite's default)
#: and then cut back to ``WAL_KEEP_BYTES``: it stays within about 4 MiB while a database
#: is open. (Each checkpoint costs fsyncs: a WAL much smaller slows single writes.)
WAL_CHECKPOINT_PAGES = 1000
WAL_KEEP_BYTES = WAL_CHECKPOINT_PAGES * PAGE_SIZE


class SQLiteConnection(Connection):
    """The embedded backend: one SQLite file in WAL mode.

    Every write transaction starts with ``BEGIN IMMEDIATE``, which takes the write lock
    up front, so the version clock is allocated in commit order; a busy database is
    waited on (``busy_timeout``), not reported.
    """

    dialect = "sqlite"
    token_column = "(SELECT data_version FROM pragma_data_version())"

    def __init__(
        self,
        directory: Path,
        *,
        durability: str = "normal",
        readonly: bool = False,
        busy_timeout: float = 60.0,
    ) -> None:
        check_options(durability, busy_timeout)
        super().__init__(readonly=readonly, busy_timeout=busy_timeout)
        self.path = directory / DB_FILENAME
        self.location = str(self.path)
        if readonly:
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            raw = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        else:
            raw = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._raw = raw
        #: The cursor of ``row`` and ``change_token``: used only under ``lock``, it saves
        #: a cursor's making per statement on the read path.
        self._kept = raw.cursor()
        #: ``PRAGMA data_version`` as read in the open transaction (fixed until it ends).
        self._token: int | None = None
        # A busy database is waited on here (``_patiently``), not in SQLite's busy handler,
        # whose sleeps grow to 100 ms: a writer then waits for a whole run of short write
        # transactions (gc's steps) instead of slipping in between two of them.
        raw.execute("PRAGMA busy_timeout = 0")
        self._patiently(f"PRAGMA synchronous = {DURABILITY_LEVELS[durability]}")
        self._patiently("PRAGMA foreign_keys = OFF")
        self._patiently(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
        self._patiently(f"PRAGMA journal_size_limit = {WAL_KEEP_BYTES}")
        # Deleted rows and freed pages are overwritten with zeros, so what erasure and
        # retention remove (``erasure``) is not left readable in the file.
        self._patiently("PRAGMA secure_delete = ON")

    def _patiently(self, sql: str, params: Params = ()) -> sqlite3.Cursor:
        """Run one statement; while the database is busy (another connection holds the
        write lock), try again every 0.2-2 ms until ``busy_timeout`` has passed. A
        statement refused as busy did nothing, so trying it again is safe."""
        try:  # the usual case, at no cost
            return self._raw.execute(sql, params)
        except sqlite3.OperationalError as error:
            if not is_busy(error):
                raise
        cursor: sqlite3.Cursor = self._patient(lambda: self._raw.execute(sql, params))
        return cursor

    def _patient(self, call: Callable[[], Any]) -> Any:
        """``call()``, tried again while the database is busy (see ``_patiently``)."""
        deadline, delay = None, 0.0002
        while True:
            try:
                return call()
            except sqlite3.OperationalError as error:
                if not is_busy(error):
                    raise
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self.busy_timeout
                if now >= deadline:
                    raise
                time.sleep(min(delay, deadline - now))
                delay = min(delay * 2, 0.002)

    _run = _patiently

    def _run_many(self, sql: str, rows: Sequence[Params]) -> None:
        self._raw.executemany(sql, rows)  # only in a write transaction: never busy

    def change_token(self) -> int:
        """``PRAGMA data_version``: it changes when another connection commits. Inside a
        transaction nobody else's commit becomes visible (a write transaction holds the
        write lock, a read transaction its snapshot), so it is read once per transaction."""
        token = self._token
        if token is None:
            with self.lock:  # (``_kept`` is used under the lock only)
                self.check_open()
                try:
                    token = int(self._kept.execute("PRAGMA data_version").fetchone()[0])
                except sqlite3.OperationalError as error:
                    if not is_busy(error):
                        raise
                    token = int(self._patiently("PRAGMA data_version").fetchone()[0])
                if self._depth:
                    self._token = token
        return token

    def row(self, sql: str, params: Params = ()) -> Any:
        if self._closed:
            self.check_open()
        self._fresh_savepoint = None
        try:  # (every row fetched: a statement left on a row holds its snapshot open)
            rows = self._kept.execute(sql, params).fetchall()
        except Exception as error:
            if isinstance(error, sqlite3.OperationalError) and is_busy(error):
                return self.fetchone(sql, params)  # waits, as every statement does
            failure = self.damage(error)
            if failure is error:
                raise
            raise failure from error
        return rows[0] if rows else None

    def total_changes(self) -> int:
        return self._raw.total_changes - self._bookkeeping_changes

    def _begin(self, *, write: bool) -> None:
        self._token = None
        if not write:
            self._patiently("BEGIN")
            return
        try:
            self._patiently("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise storage_error(error) from error

    def _transaction_lost(self) -> bool:
        return not self._raw.in_transaction

    def _as_rewind_error(self, error: BaseException) -> BaseException:
        return storage_error(error) if isinstance(error, sqlite3.Error) else error

    def _end(self, *, commit: bool) -> None:
        self._token = None
        if not commit:
            if self._raw.in_transaction:  # SQLite may have rolled it back already
                self._raw.execute("ROLLBACK")
            return
        try:
            self._patiently("COMMIT")
        except sqlite3.Error as error:  # disk full, I/O error: leave no open txn
            if self._raw.in_transaction:
                self._raw.execute("ROLLBACK")
            raise storage_error(error) from error

    def _close(self) -> None:
        self._raw.close()

    def reclaim(self, *, step_pages: int = 256, full: bool = False) -> float:
        """Give the space of deleted rows back: checkpoint the WAL and truncate it (so no
        old page image keeps erased bytes), then shrink the file by its free pages, a
        short write transaction at a time (``full``: rewrite the whole file, ``VACUUM``,
        which a file created before incremental vacuum needs to shrink)."""
        longest = 0.0
        with self.lock:
            self.check_open()
            if self.readonly or self._depth:
                return longest
            self._reclaim_requested = False
            run, raw = self._patiently, self._raw
            try:
                if full:
                    run("PRAGMA auto_vacuum = INCREMENTAL")
                    run("VACUUM")
                elif run("PRAGMA auto_vacuum").fetchone()[0] == 2:
                    while run("PRAGMA freelist_count").fetchone()[0]:
                        start = time.perf_counter()
                        # A script steps the pragma to its end (one execute frees
                        # a single page); outside a transaction it commits itself.
                        vacuum = f"PRAGMA incremental_vacuum({int(step_pages)});"
                        self._patient(partial(raw.executescript, vacuum))
                        longest = max(longest, time.perf_counter() - start)
                        time.sleep(PAUSE)  # let a waiting writer in
                # Readers and writers of other connections may keep the WAL from being
                # truncated at a given moment: try in the gaps between them for a while
                # (a later checkpoint, or the last close, truncates it otherwise).
                for _ in range(100):
                    if not run("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
                        break
                    time.sleep(PAUSE)
            except sqlite3.Error as error:
                raise storage_error(error) from error
            return longest

    def _prepare_new(self) -> None:
        """Switch a new file to WAL. SQLite does not wait on busy_timeout for this, so
        when several processes create one database at once, retry until it does."""
        deadline = time.monotonic() + self.busy_timeout
        self._patiently(f"PRAGMA page_size = {PAGE_SIZE}")  # only a new file takes it
        # Free pages can be given back to the file system in short steps (``reclaim``).
        self._patiently("PRAGMA auto_vacuum = INCREMENTAL")
        while True:
            try:
                self._raw.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as error:
                if not is_busy(error) or time.monotonic() > deadline:
                    raise storage_error(error) from error
                time.sleep(0.01)

    def _has_meta(self) -> bool:
        return (
            self.fetchone(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rewind_meta'"
            )
            is not None
        )

    def _is_empty(self) -> bool:
        others = self.fetchone("SELECT count(*) FROM sqlite_master")
        return others is None or not others[0]

    def _ddl_dialect(self) -> Any:
        return sqlite.dialect()

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        return (sqlite3.Error,)

    def damage(self, error: BaseException) -> BaseException:
        """SQLite's "malformed" and "not a database" (a damaged page, a garbage header, a
        truncated file) and a missing table or column are ``corrupt``; the rest is not."""
        if not isinstance(error, sqlite3.DatabaseError):
            return error
        if is_damaged(error):
            return damaged_file(self.location, error)
        if str(error).startswith("Could not decode to UTF-8"):  # another program's bytes
            return CorruptDatabaseError(
                f"{self.location} is damaged: a text column holds bytes that are not UTF-8 "
                f"(SQLite: {error})",
                code="corrupt",
            )
        missing = _MISSING.match(str(error))
        if missing is None:
            return error
        what, name = missing.groups()
        table = name.split(".")[0]
        short = table.removeprefix("rewind_") if table.startswith("rewind_") else ""
        return CorruptDatabaseError(
            f"{self.location} is damaged: its {what} {name} is missing (SQLite: {error})",
            code=f"corrupt.{short}" if short else "corrupt",
        )

    def contains_text(self, column: str, *, binary: bool = False) -> str:
        text = f"CAST({column} AS TEXT)" if binary else column
        return f"{text} LIKE ? ESCAPE '\\'"


def _aborted() -> RewindError:
    return RewindError(
        "a write inside this transaction failed, and a transaction without savepoints "
        "cannot undo one write alone: it rolls back whole, and writes no more",
        code="transaction.aborted",
    )


_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26
_MISSING = re.compile(r"no such (table|column): (\S+)")


def is_damaged(error: BaseException, *, header: bool = True) -> bool:
    """SQLite says the file is damaged: "malformed" (a bad page, a truncated file) or,
    with ``header``, "not a database" (a bad header)."""
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    codes = (_SQLITE_CORRUPT, _SQLITE_NOTADB) if header else (_SQLITE_CORRUPT,)
    return isinstance(error, sqlite3.DatabaseError) and code in codes


def damaged_file(location: str, error: BaseException) -> CorruptDatabaseError:
    return CorruptDatabaseError(
        f"{location} is damaged (SQLite: {error}); restore it from a copy, or export what "
        "still reads (rewinddb export) into a new database"
    )


def is_busy(error: sqlite3.Error) -> bool:
    text = str(error).lower()
    return "locked" in text or "busy" in text


def _disk_full(error: sqlite3.Error) -> bool:
    code = getattr(error, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return bool(code == getattr(sqlite3, "SQLITE_FULL", 13))
    return "disk is full" in str(error)


def storage_error(error: sqlite3.Error) -> RewindError:
    """A SQLite failure as a RewindError: ``busy`` for lock time-outs, ``corrupt`` for a
    damaged file, else ``storage``."""
    if is_damaged(error):
        return damaged_file("the database file", error)
    if is_busy(error):
        return DatabaseBusyError(
            f"the database stayed locked by another writer for longer than busy_timeout "
            f"({error}); retry, or open it with a longer busy_timeout"
        )
    if _disk_full(error):
        return RewindError(
            f"the disk is full (SQLite: {error}); nothing of the transaction was written: "
            "free some space and retry",
            code="storage",
        )
    return RewindError(f"SQLite failed: {error}; nothing was written", code="storage")
