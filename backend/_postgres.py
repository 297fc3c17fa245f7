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
- Statements are sent with libpq's own calls (``_pg_direct``), under the connection's
  lock, and prepared when run again; psycopg runs only ``executemany`` and statements
  with a parameter only it adapts.
- Reads inside ``db.read()`` and every snapshot run in one REPEATABLE READ, READ ONLY
  transaction.
- A lost connection fails the call in progress with ``connection_lost`` (a transaction
  that was open is not committed: PostgreSQL rolls it back); the next call reconnects.

Statements are written with ``?`` placeholders; they are translated to libpq's ``$1``
(or psycopg's ``%s``) once per distinct statement.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .errors import ConnectionLostError, DatabaseBusyError, RewindError

try:
    import psycopg
    from psycopg import errors as pg_errors

    from ._pg_direct import DirectStatements
except ImportError:  # pragma: no cover - depends on the installed extras
    psycopg = None  # type: ignore[assignment]

from sqlalchemy.dialects import postgresql

from . import _pg_routines
from ._connection import Connection, Params

#: The write lock: every writer holds this row lock to commit.
WRITE_LOCK = "SELECT value FROM rewind_meta WHERE key = 'format' FOR UPDATE"
#: The advisory lock that stands in for it while the schema is created or migrated
#: ("rewind"); migrations also take the row lock once the table exists.
SCHEMA_LOCK_KEY = 0x72657769_6E64


def _check_driver() -> None:
    if psycopg is None:  # pragma: no cover - depends on the installed extras
        raise RewindError(
            'PostgreSQL needs its driver: pip install "rewinddb[postgres]" (psycopg 3)',
            code="missing.dependency",
        )


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
    ) -> None:
        _check_driver()
        super().__init__(readonly=readonly, busy_timeout=busy_timeout)
        self.url = url
        self.durability = durability
        self.location = redact(url)
        self._sql: dict[str, str] = {}
        self._raw: Any = None
        self._direct: DirectStatements | None = None
        self._connect()

    # -- the connection ------------------------------------------------------------

    def _connect(self) -> None:
        try:
            raw = psycopg.connect(self.url, autocommit=True)
        except psycopg.OperationalError as error:
            raise ConnectionLostError(
                f"cannot connect to {self.location}: {str(error).strip()}"
            ) from None
        except psycopg.ProgrammingError as error:  # a malformed URL
            raise RewindError(
                f"not a PostgreSQL URL: {self.location} ({error})", code="invalid.path"
            ) from None
        raw.execute(f"SET lock_timeout = {int(self.busy_timeout * 1000)}")
        # "normal" is SQLite's promise: a killed or crashed client loses nothing it
        # committed; a crash of the server (or the machine) may lose the newest commits,
        # never one in the middle (commits reach the log in version order). "full" waits
        # for the disk at every commit.
        synchronous = "on" if self.durability == "full" else "off"
        raw.execute(f"SET synchronous_commit = {synchronous}")
        # The write routines run as statements of their own: in READ COMMITTED, whatever
        # the server's default, so what they read after the write lock is the newest.
        raw.execute("SET default_transaction_isolation = 'read committed'")
        if self.readonly:
            raw.execute("SET default_transaction_read_only = on")
        self._raw = raw
        self._direct = DirectStatements(raw)

    def _usable(self) -> Any:
        """The live connection; outside a transaction a lost one is replaced."""
        if self._raw is None or self._raw.closed or self._raw.broken:
            self.check_open()  # never reconnect a database closed (by another thread) meanwhile
            if self._depth:
                raise ConnectionLostError(
                    f"the connection to {self.location} was lost in this transaction; "
                    "nothing of it was written"
                )
            self._connect()
        return self._raw

    def _translate(self, sql: str) -> str:
        translated = self._sql.get(sql)
        if translated is None:
            translated = sql.replace("%", "%%").replace("?", "%s")
            self._sql[sql] = translated
        return translated

    def _failed(self, error: Exception, *, committing: bool = False) -> RewindError:
        if isinstance(error, pg_errors.LockNotAvailable):
            return DatabaseBusyError(
                f"another writer held the database for longer than busy_timeout ({error}); "
                "retry, or open it with a longer busy_timeout"
            )
        if self._raw is not None and (self._raw.closed or self._raw.broken):
            if committing or not self._depth:  # the server may have committed before it went
                outcome = (
                    "the statement was a transaction of its own (a write routine) or a COMMIT, "
                    "which the server may have carried out before the connection went: read "
                    "before retrying"
                )
            else:
                outcome = "nothing of the transaction in progress was written"
            return ConnectionLostError(
                f"the connection to {self.location} was lost ({str(error).strip()}); "
                f"{outcome}; the next call reconnects"
            )
        return RewindError(f"PostgreSQL failed: {str(error).strip()}", code="storage")

    def _run(self, sql: str, params: Params) -> Any:
        with self.lock:
            direct = self._direct_statements()
            try:
                if not params and not direct.is_data_statement(sql):
                    return direct.script(sql)
                encoded = direct.encode(params)
                if encoded is not None:
                    return direct.rows(sql, encoded)
            except psycopg.Error as error:
                raise self._refused(error) from error
            return self._execute(sql, params)  # a parameter only psycopg adapts

    def _run_one(self, sql: str, params: Params) -> Any:
        with self.lock:
            direct = self._direct_statements()
            encoded = direct.encode(params)
            if encoded is None:  # a parameter only psycopg adapts
                return self._execute(sql, params).fetchone()
            try:
                return direct.fetchone(sql, encoded)
            except psycopg.Error as error:
                raise self._refused(error) from error

    def _direct_statements(self) -> DirectStatements:
        """The live connection's ``DirectStatements`` (a lost connection is replaced)."""
        self._usable()
        direct = self._direct
        assert direct is not None  # made with every connection
        return direct

    def _execute(self, sql: str, params: Params) -> Any:
        """``sql`` run by psycopg (its cursor, with the rows)."""
        raw = self._usable()
        try:
            return raw.execute(self._translate(sql), params)
        except psycopg.Error as error:
            raise self._refused(error) from error

    def _run_many(self, sql: str, rows: Sequence[Params]) -> None:
        raw = self._usable()
        try:
            with raw.cursor() as cursor:
                cursor.executemany(self._translate(sql), rows)
        except psycopg.Error as error:
            raise self._refused(error) from error

    def _refused(self, error: psycopg.Error) -> RewindError:
        """A statement's error as a RewindError: never a raw driver error to the caller."""
        if isinstance(error, (pg_errors.LockNotAvailable, psycopg.OperationalError)):
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
        assert self._direct is not None  # made with every connection
        script = self._direct.script
        try:
            script("COMMIT" if commit else "ROLLBACK")
        except psycopg.Error as error:
            if not commit:
                return
            if not raw.closed and not raw.broken:
                script("ROLLBACK")
            raise self._failed(error, committing=True) from error

    def _close(self) -> None:
        if self._raw is not None:
            self._raw.close()

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
