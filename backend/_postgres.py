"""The PostgreSQL backend: the same tables and statements as SQLite, on a server.

``rewinddb.open("postgresql://user@host/db")`` gives the identical API. What differs is
only how a transaction starts and how the connection is kept:

- Every write transaction first locks one row (``rewind_meta``'s ``format`` row, ``FOR
  UPDATE``: the write lock) and holds it to commit, so versions are allocated and
  committed in order: once a reader sees version ``v``, every version below it is
  committed too, and an ``as_of`` read never sees half of a version. (Writers queue on
  that lock as SQLite's writers queue on its write lock; ``busy_timeout`` bounds the
  wait.) Until the schema exists (creating or migrating it) a transaction-scoped advisory
  lock does the same. A row lock rather than an advisory lock: under contention it
  measured about 20% more commits/s, and it is per schema, not per server database.
- A write that is a transaction of its own is one call of a server routine
  (``_pg_routines``), which takes the same lock.
- Statements run through psycopg's cursors with its own prepared statements: a
  statement that reads or writes rows is prepared on the connection the second time it
  runs there (``PREPARE_THRESHOLD``); transaction control, schema changes and scripts
  of several statements run unprepared, with the simple protocol. ``executemany`` sends
  its rows in psycopg's pipeline mode (one round trip for the batch).
- Reads inside ``db.read()`` and every snapshot run in one REPEATABLE READ, READ ONLY
  transaction.
- A lost connection fails the call in progress with ``connection_lost`` (a transaction
  that was open is not committed: PostgreSQL rolls it back); the next call reconnects.
- A client that vanishes holding the write lock (stopped, or its host gone without
  closing TCP) holds it for a bounded time only: the server ends a session of ours that
  sits idle inside a transaction longer than ``idle_in_transaction_timeout``, and TCP
  keepalives notice a dead host on either side (``IDLE_IN_TRANSACTION_TIMEOUT``,
  ``KEEPALIVES``). Both are set once per connection: nothing per statement.

Statements are written with ``?`` placeholders; they are translated to psycopg's ``%s``
once per distinct statement. Only psycopg's public API is used.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from .errors import ConnectionLostError, DatabaseBusyError, RewindError

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.conninfo import conninfo_to_dict
except ImportError:  # pragma: no cover - depends on the installed extras
    psycopg = None  # type: ignore[assignment]

from sqlalchemy.dialects import postgresql

from . import _pg_routines, _schema
from ._connection import Connection, Params

#: The write lock: every writer holds this row lock to commit.
WRITE_LOCK = "SELECT value FROM rewind_meta WHERE key = 'format' FOR UPDATE"
#: A statement that reads or writes rows is prepared on a connection once it has run there
#: this many times before (psycopg's ``prepare_threshold``): the second run, so that a
#: statement run once costs no extra round trip to prepare it.
PREPARE_THRESHOLD = 1
#: One statement that reads or writes rows (no ``;``): prepared when run again.
_DATA_STATEMENT = re.compile(r"\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH)\b[^;]*\Z", re.IGNORECASE)
#: A statement whose rows a caller may read after the connection ran others: it gets a
#: cursor of its own (every other statement runs on the connection's shared cursor).
_ROWS = re.compile(r"\s*(?:SELECT|WITH)\b|.*\bRETURNING\b", re.IGNORECASE | re.DOTALL)
_TUPLES_OK = psycopg.pq.ExecStatus.TUPLES_OK if psycopg is not None else None


class _Plan(NamedTuple):
    """How one statement (``?`` placeholders) is sent, worked out once per statement."""

    query: str  # with psycopg's placeholders
    data: bool  # one statement that reads or writes rows: prepared when run again
    own_cursor: bool  # its rows may be read later: they get a cursor of their own


#: The advisory lock that stands in for it while the schema is created or migrated
#: ("rewind"); migrations also take the row lock once the table exists.
SCHEMA_LOCK_KEY = 0x72657769_6E64

#: Seconds a session of ours may sit idle inside a transaction before the server ends it
#: (``idle_in_transaction_session_timeout``; ``open(url, idle_in_transaction_timeout=)``,
#: 0 for never). A writer holds the write lock until it commits, so a client stopped
#: between two statements of its transaction (SIGSTOP, a debugger, a host gone without
#: closing TCP) would keep every other writer ``busy`` for as long as it stays stopped.
#: The server counts idleness between statements, not the transaction's length: a long
#: transaction of many statements, or a statement that runs long or waits for the lock,
#: is never cut; only a pause of 30 s between two statements is, thousands of times what
#: Python work between statements takes (and a pause that long already stops every other
#: writer for as long: call a model or a slow tool before the transaction, not inside
#: it). 30 s is half the default ``busy_timeout`` (60 s): a writer that starts waiting
#: once the holder froze gets the lock within 30 s, before its own bound, so with the
#: defaults a frozen client delays the other writers and never fails them with ``busy``
#: (with a ``busy_timeout`` below the bound they get ``busy`` until it has passed). Read
#: transactions (``db.read()``, an export) have the same bound: a frozen reader's
#: snapshot holds back vacuum, and its table locks block a migration.
IDLE_IN_TRANSACTION_TIMEOUT = 30.0
#: The server's SQLSTATE when it ends a session for sitting idle in a transaction.
IDLE_SESSION_ENDED = "25P03"
#: TCP keepalives on our connections, so that a host gone without closing TCP (a power
#: cut, a network cut) is noticed: these libpq parameters on our side (the server's host
#: gone while we wait for an answer: the call fails with ``connection_lost`` instead of
#: waiting for ever), the server's ``tcp_keepalives_*`` settings for our sessions on its
#: side (our host gone: its session is ended even outside a transaction, and its
#: connection slot freed). Probes start after 15 s of silence, one every 5 s, and 3 left
#: unanswered end the connection: about 30 s, as the idle bound, where Linux's defaults
#: take 2 h 11 min. A probe is answered by the peer's kernel, so a live host that is only
#: slow (a statement running, a writer waiting for the lock, a client doing Python work)
#: is never cut. ``tcp_user_timeout`` (30 s) covers what keepalives do not: data sent and
#: never acknowledged (the peer's host gone in the middle of a statement). Parameters
#: given in the URL win over these.
KEEPALIVES = {
    "keepalives": "1",
    "keepalives_idle": "15",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",  # milliseconds
}


def _check_driver() -> None:
    if psycopg is None:  # pragma: no cover - depends on the installed extras
        raise RewindError(
            'PostgreSQL needs its driver: pip install "rewinddb[postgres]" (psycopg 3)',
            code="missing.dependency",
        )


def _milliseconds(seconds: float) -> int:
    """A bound in seconds as PostgreSQL's milliseconds, where 0 means none: 0 stays 0, and
    a positive bound is at least 1 ms."""
    return max(1, round(seconds * 1000)) if seconds > 0 else 0


def redact(url: str) -> str:
    """The URL without its password, for messages and ``db.path``."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


class PostgresConnection(Connection):
    """A psycopg 3 connection to one PostgreSQL database (its ``search_path`` schema)."""

    dialect = "postgresql"
    routines = True

    def __init__(
        self,
        url: str,
        *,
        durability: str = "normal",
        readonly: bool = False,
        busy_timeout: float = 60.0,
        idle_in_transaction_timeout: float = IDLE_IN_TRANSACTION_TIMEOUT,
    ) -> None:
        _check_driver()
        super().__init__(readonly=readonly, busy_timeout=busy_timeout)
        self.url = url
        self.durability = durability
        self.idle_in_transaction_timeout = idle_in_transaction_timeout
        self.location = redact(url)
        self._plans: dict[str, _Plan] = {}
        self._raw: Any = None
        #: The connection's shared cursor, used under ``lock`` (``fetchone``, writes).
        self._cursor: Any = None
        self._connect()

    # -- the connection ------------------------------------------------------------

    def _connect(self) -> None:
        try:
            given = conninfo_to_dict(self.url)
            keepalives: dict[str, Any] = {
                name: value for name, value in KEEPALIVES.items() if name not in given
            }
            if psycopg.pq.version() < 120000:  # pragma: no cover - libpq 12 added it
                keepalives.pop("tcp_user_timeout", None)
            raw = psycopg.connect(
                self.url, autocommit=True, prepare_threshold=PREPARE_THRESHOLD, **keepalives
            )
        except psycopg.OperationalError as error:
            raise ConnectionLostError(
                f"cannot connect to {self.location}: {str(error).strip()}"
            ) from None
        except psycopg.ProgrammingError as error:  # a malformed URL
            raise RewindError(
                f"not a PostgreSQL URL: {self.location} ({error})", code="invalid.path"
            ) from None
        settings = {
            # 0 is no bound there (wait for ever): busy_timeout=0 waits 1 ms, as good as
            # SQLite's not waiting.
            "lock_timeout": max(1, round(self.busy_timeout * 1000)),
            "idle_in_transaction_session_timeout": _milliseconds(self.idle_in_transaction_timeout),
            # "normal" is SQLite's promise: a killed or crashed client loses nothing it
            # committed; a crash of the server (or the machine) may lose the newest
            # commits, never one in the middle (commits reach the log in version order).
            # "full" waits for the disk at every commit.
            "synchronous_commit": "on" if self.durability == "full" else "off",
            # The write routines run as statements of their own: in READ COMMITTED,
            # whatever the server's default, so what they read after the lock is the newest.
            "default_transaction_isolation": "'read committed'",
            # The server's side of KEEPALIVES (ignored on a Unix socket).
            "tcp_keepalives_idle": KEEPALIVES["keepalives_idle"],
            "tcp_keepalives_interval": KEEPALIVES["keepalives_interval"],
            "tcp_keepalives_count": KEEPALIVES["keepalives_count"],
        }
        if raw.info.server_version >= 120000:  # pragma: no branch - PostgreSQL 12 added it
            settings["tcp_user_timeout"] = KEEPALIVES["tcp_user_timeout"]
        if self.readonly:
            settings["default_transaction_read_only"] = "on"
        try:  # one round trip, once per connection
            raw.execute(
                "; ".join(f"SET {name} = {value}" for name, value in settings.items()),
                prepare=False,
            )
        except psycopg.Error as error:
            lost = raw.broken
            raw.close()
            if lost:
                raise ConnectionLostError(
                    f"the connection to {self.location} was lost as it was set up "
                    f"({str(error).strip()}); the next call reconnects"
                ) from None
            raise RewindError(
                f"PostgreSQL refused rewinddb's session settings: {str(error).strip()}",
                code="storage",
            ) from None
        self._raw = raw
        # Binary results: bytea bodies arrive as they are stored, not hex-encoded.
        self._cursor = raw.cursor(binary=True)

    def _usable(self) -> Any:
        """The live connection; outside a transaction a lost one is replaced."""
        if self._raw is None or self._raw.closed or self._raw.broken:
            self.check_open()  # never reconnect a database closed (by another thread) meanwhile
            if self._depth:
                raise ConnectionLostError(
                    f"the connection to {self.location} was lost in this transaction "
                    f"({self._why_lost()}); nothing of it was written; the call after the "
                    "transaction reconnects"
                )
            self._connect()
        return self._raw

    def _failed(self, error: Exception, *, committing: bool = False) -> RewindError:
        if isinstance(error, pg_errors.LockNotAvailable):
            return DatabaseBusyError(
                f"another writer held the database for longer than busy_timeout ({error}); "
                "retry, or open it with a longer busy_timeout"
            )
        if self._raw is not None and (self._raw.closed or self._raw.broken):
            if getattr(error, "sqlstate", None) == IDLE_SESSION_ENDED:
                # Sent before the statement arrived: a COMMIT, too, was never carried out.
                outcome = (
                    "the server had ended the session: it sat idle inside its transaction "
                    "for longer than idle_in_transaction_timeout "
                    f"({self.idle_in_transaction_timeout:g} s); nothing of the transaction "
                    "was written"
                )
            elif committing or not self._depth:  # the server may have committed before it went
                outcome = (
                    "the statement was a transaction of its own (a write routine) or a COMMIT, "
                    "which the server may have carried out before the connection went: read "
                    "before retrying"
                )
            else:
                outcome = f"nothing of the transaction in progress was written ({self._why_lost()})"
            return ConnectionLostError(
                f"the connection to {self.location} was lost ({str(error).strip()}); "
                f"{outcome}; the next call reconnects"
            )
        return RewindError(f"PostgreSQL failed: {str(error).strip()}", code="storage")

    def _why_lost(self) -> str:
        """The likely causes of a connection lost inside a transaction, for messages."""
        bound = self.idle_in_transaction_timeout
        idle = (
            "the server ended the session after it sat idle in its transaction for longer "
            f"than idle_in_transaction_timeout ({bound:g} s), or "
            if bound
            else ""
        )
        return f"{idle}the server restarted, or the network failed"

    def _run(self, sql: str, params: Params) -> Any:
        with self.lock:
            raw = self._usable()
            plan = self._plan(sql)
            # Rows a caller may read later, after other statements ran: a cursor of their own.
            cursor = raw.cursor(binary=True) if plan.own_cursor else self._cursor
            self._send(cursor, plan, params)
            if not plan.data:  # a script of several statements: the last one's rows
                while cursor.nextset():
                    pass
            result = cursor.pgresult
            if result is None or result.status != _TUPLES_OK:
                return iter(())
            return cursor if plan.own_cursor else iter(cursor.fetchall())

    def _run_one(self, sql: str, params: Params) -> Any:
        with self.lock:
            self._usable()
            cursor = self._cursor
            self._send(cursor, self._plan(sql), params)
            result = cursor.pgresult
            if result is None or result.status != _TUPLES_OK:
                return None
            return cursor.fetchone()  # read before another thread's statement replaces it

    def _send(self, cursor: Any, plan: _Plan, params: Params) -> None:
        try:
            if plan.data:  # prepared from its second run (PREPARE_THRESHOLD)
                cursor.execute(plan.query, params)
            else:  # the simple protocol when it has no parameters: perhaps a script
                cursor.execute(plan.query, params, prepare=False, binary=False)
        except psycopg.Error as error:
            raise self._refused(error) from error

    def _plan(self, sql: str) -> _Plan:
        plan = self._plans.get(sql)
        if plan is None:
            plan = self._plans[sql] = _Plan(
                sql.replace("%", "%%").replace("?", "%s"),
                _DATA_STATEMENT.match(sql) is not None,
                _ROWS.match(sql) is not None,
            )
        return plan

    def _run_many(self, sql: str, rows: Sequence[Params]) -> None:
        with self.lock:
            self._usable()
            try:  # psycopg sends the batch in pipeline mode
                self._cursor.executemany(self._plan(sql).query, rows)
            except psycopg.Error as error:
                raise self._refused(error) from error

    def _refused(self, error: psycopg.Error) -> RewindError:
        """A statement's error as a RewindError: never a raw driver error to the caller."""
        if (
            isinstance(error, (pg_errors.LockNotAvailable, psycopg.OperationalError))
            or error.sqlstate == IDLE_SESSION_ENDED  # an InternalError, psycopg says
        ):
            return self._failed(error)
        return RewindError(f"PostgreSQL refused a statement: {str(error).strip()}", code="storage")

    # -- transactions ----------------------------------------------------------------

    def _begin(self, *, write: bool) -> None:
        # Anything raised once BEGIN has run (a Ctrl-C the moment libpq returns included)
        # rolls the transaction back: the caller never saw it start.
        try:
            if not write:
                self._run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", ())
            elif self.schema_ready:  # one round trip: the transaction and the write lock
                self._run(f"BEGIN ISOLATION LEVEL READ COMMITTED; {WRITE_LOCK}", ())
            else:
                self._run(
                    "BEGIN ISOLATION LEVEL READ COMMITTED; "
                    f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})",
                    (),
                )
                if self._has_meta():  # a migration: writers of the current schema wait too
                    self._run(WRITE_LOCK, ())
        except BaseException:
            self._end(commit=False)
            raise

    def _end(self, *, commit: bool) -> None:
        raw = self._raw
        if raw is None or raw.closed or raw.broken:
            if commit:
                raise ConnectionLostError(
                    f"the connection to {self.location} was lost before the commit; "
                    "nothing of the transaction was written; the next call reconnects"
                )
            return  # the server rolled it back when the connection went
        try:
            self._cursor.execute("COMMIT" if commit else "ROLLBACK", prepare=False)
        except psycopg.Error as error:
            if not commit:
                return
            if not raw.closed and not raw.broken:
                # (if the connection went meanwhile, the server rolls it back)
                with contextlib.suppress(psycopg.Error):
                    self._cursor.execute("ROLLBACK", prepare=False)
            raise self._failed(error, committing=True) from error

    def _close(self) -> None:
        if self._raw is not None:
            self._raw.close()

    def reclaim(self, *, step_pages: int = 256, full: bool = False) -> float:
        """``VACUUM`` the tables (outside any transaction), so the space of deleted rows is
        reused (``full``: ``VACUUM FULL``, which returns it to the file system but locks
        each table while it rewrites it)."""
        with self.lock:
            self.check_open()
            if self.readonly or self._depth:
                return 0.0
            self._reclaim_requested = False
            for table in _schema.TABLES:
                self.execute(f"VACUUM {'FULL ' if full else ''}{table.name}")
            return 0.0  # plain VACUUM takes no lock that stops writers

    # -- schema ------------------------------------------------------------------------

    def install_routines(self) -> None:
        _pg_routines.install(self, WRITE_LOCK)

    def _has_meta(self) -> bool:
        # The catalog itself, not to_regclass(): that answers from this backend's cached
        # lookups, which waiting on the write lock does not refresh, so a process that
        # waited while another created the schema would not see it.
        row = self.fetchone(
            "SELECT count(*) FROM pg_catalog.pg_tables "
            "WHERE schemaname = current_schema() AND tablename = 'rewind_meta'"
        )
        return bool(row and row[0])

    def _is_empty(self) -> bool:
        row = self.fetchone(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_name LIKE 'rewind%'"
        )
        return row is None or not row[0]

    def _ddl_dialect(self) -> Any:
        return postgresql.dialect()  # type: ignore[no-untyped-call]

    def contains_text(self, column: str, *, binary: bool = False) -> str:
        # ASCII letters only, as SQLite's LIKE: ILIKE would fold by the server's locale.
        text = f"convert_from({column}, 'UTF8')" if binary else column
        upper, lower = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
        return (
            f"translate({text}, '{upper}', '{lower}') "
            f"LIKE translate(?, '{upper}', '{lower}') ESCAPE '\\'"
        )

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        return (psycopg.Error,)
