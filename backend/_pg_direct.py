"""Statements sent with libpq's own calls, past psycopg's cursor: the PostgreSQL backend's
way of running nearly everything.

Every write routine call and single-key read is one statement returning one row. A
psycopg cursor runs each statement through its non-blocking wait loop and its per-query
adaptation; with 16 writers on 2 cores, where a write is CPU-bound, that measured about
70 us of client CPU per ``rewind_append_event`` call against about 33 us through
``PGconn.exec_prepared`` (psycopg's binding of libpq's ``PQexecPrepared``). In
``benchmarks/postgres.py`` at 16 writers, ``kv.put`` went from 0.55-0.57 of raw psycopg to
0.67-0.69 and ``events.append`` from 0.38-0.46 to 0.47-0.51 (3 interleaved runs each).

- A statement with parameters is sent with them typed as psycopg would type them (text as
  ``unknown``, the server infers it; an int as the smallest integer type that holds it);
  a parameter of any other Python type answers None from ``encode``, and the caller runs
  the statement through psycopg. Run again on the connection, it is prepared there, once
  for each set of parameter types.
- Statements without parameters (transaction control, schema changes, ``BEGIN ...;
  SELECT ...`` in one round trip) use the simple protocol. psycopg never sees them: its
  own preparing (kept for ``executemany``) would DEALLOCATE ALL after a ROLLBACK, DROP
  or ALTER it saw, the statements prepared here included.
- Rows are decoded by psycopg's own loaders (its ``Transformer``), so values come back as
  the same Python types; a result's rows are decoded as they are read.

libpq releases the GIL while it waits. As in SQLite's busy wait, Ctrl-C is seen when the
statement returns (a wait for the write lock ends at ``busy_timeout``), so a write of its
own that was interrupted may have been carried out; a transaction interrupted so is
rolled back (``PostgresConnection._begin``, ``Connection.write``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg import abc, pq
from psycopg import errors as pg_errors
from psycopg.adapt import Transformer

_TEXT, _BINARY = pq.Format.TEXT, pq.Format.BINARY
_UNKNOWN_OID, _BOOL_OID, _BYTEA_OID = 0, 16, 17
_INT_OIDS = ((1 << 15, 21), (1 << 31, 23), (1 << 63, 20))  # int2, int4, int8
_NUMERIC_OID = 1700
_PLACEHOLDER = re.compile(r"\?")
_CHUNK = 1000  # rows decoded at a time
_SUCCEEDED = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK, pq.ExecStatus.EMPTY_QUERY)
#: One statement that reads or writes rows (no ``;``): worth preparing, parameters or not.
_DATA_STATEMENT = re.compile(r"\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH)\b[^;]*\Z", re.IGNORECASE)
_SCHEMA_CHANGE = re.compile(r"\s*(?:CREATE|ALTER|DROP)\b", re.IGNORECASE)
#: A statement run this often on a connection (with the same parameter types) is prepared
#: there: parsing and planning ``SELECT * FROM routine($1, ...)`` on every call measured
#: about 20 us more server CPU per append (of about 75).
PREPARE_AT = 2
#: At most this many statements are prepared on one connection; later ones run unnamed.
MOST_PREPARED = 100

#: Parameters as libpq takes them: values, type OIDs, formats.
Encoded = tuple[list[bytes | None], list[int], list[int]]


def _int_oid(value: int) -> int:
    for limit, oid in _INT_OIDS:
        if -limit <= value < limit:
            return oid
    return _NUMERIC_OID


def _error(result: pq.abc.PGresult, encoding: str) -> psycopg.Error:
    """The failed statement's error as psycopg would raise it: its class, its message
    (with the server's DETAIL and HINT) and its ``diag``."""
    message = result.get_error_message(encoding)
    state = result.error_field(pq.DiagnosticField.SQLSTATE)
    if not state:  # no answer from the server: the connection went
        return psycopg.OperationalError(message, info=result, encoding=encoding)
    try:
        kind = pg_errors.lookup(bytes(state).decode())
    except KeyError:
        kind = psycopg.DatabaseError
    return kind(message, info=result, encoding=encoding)


def _decoded(transformer: abc.Transformer, result: pq.abc.PGresult) -> Iterator[tuple[Any, ...]]:
    """The rows of ``result`` (``transformer`` set to it), decoded by psycopg's loaders a
    chunk at a time (an export reads millions)."""
    count = result.ntuples
    for start in range(0, count, _CHUNK):
        yield from transformer.load_rows(start, min(start + _CHUNK, count), tuple)


class DirectStatements:
    """The statements of one psycopg connection, sent past its cursors (made again with
    every new connection: prepared statements belong to one)."""

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self._raw = raw
        self._encoding = raw.info.encoding
        self._queries: dict[str, bytes] = {}
        self._runs: dict[tuple[str, tuple[int, ...]], int] = {}
        self._prepared: dict[tuple[str, tuple[int, ...]], bytes] = {}
        #: Names are never reused: one prepared by an interrupted call may exist unrecorded.
        self._names = itertools.count()
        #: Decodes ``fetchone``'s row (``rows`` makes one per result: they are read later).
        self._transformer = Transformer(raw)

    @staticmethod
    def is_data_statement(sql: str) -> bool:
        """``sql`` is one statement that reads or writes rows: sent with ``rows`` (and
        prepared when run again), where anything else goes by ``script``."""
        return _DATA_STATEMENT.match(sql) is not None

    def encode(self, params: Sequence[Any]) -> Encoded | None:
        """``params`` as libpq takes them, or None if one is of a type not handled here."""
        values: list[bytes | None] = []
        oids: list[int] = []
        formats: list[int] = []
        for value in params:
            kind = type(value)
            if value is None:
                values.append(None)
                oids.append(_UNKNOWN_OID)
                formats.append(_TEXT)
            elif kind is str:
                if "\x00" in value:  # libpq would cut it there; psycopg refuses it
                    return None
                values.append(value.encode(self._encoding))
                oids.append(_UNKNOWN_OID)
                formats.append(_TEXT)
            elif kind is bytes:
                values.append(value)
                oids.append(_BYTEA_OID)
                formats.append(_BINARY)
            elif kind is int:
                values.append(str(value).encode())
                oids.append(_int_oid(value))
                formats.append(_TEXT)
            elif kind is bool:
                values.append(b"t" if value else b"f")
                oids.append(_BOOL_OID)
                formats.append(_TEXT)
            else:
                return None
        return values, oids, formats

    def fetchone(self, sql: str, params: Encoded) -> tuple[Any, ...] | None:
        """The first row of ``sql`` (one statement, ``?`` placeholders), or None if it has
        none; a failure raises the psycopg error. The caller serialises use of the
        connection (as for every method here)."""
        result = self._checked(self._execute(sql, params))
        if result is None or not result.ntuples:
            return None
        self._transformer.set_pgresult(result)
        return self._transformer.load_row(0, tuple)

    def rows(self, sql: str, params: Encoded) -> Iterator[tuple[Any, ...]]:
        """The rows of ``sql`` (one statement, ``?`` placeholders), decoded as they are
        read (the result itself is already here: the connection is free)."""
        return self._rows(self._execute(sql, params))

    def script(self, sql: str) -> Iterator[tuple[Any, ...]]:
        """Statements without parameters, several allowed (``BEGIN ...; SELECT ...``): the
        last one's rows."""
        with self._raw.lock:
            result = self._raw.pgconn.exec_(sql.encode(self._encoding))
        if _SCHEMA_CHANGE.match(sql) and result.status == pq.ExecStatus.COMMAND_OK:
            # A plan prepared before may no longer fit (a table's columns, a routine's
            # result): prepare again, under new names.
            self._runs.clear()
            self._prepared.clear()
        return self._rows(result)

    def command(self, sql: str) -> None:
        """One statement without parameters whose rows are not wanted (``COMMIT``); a
        failure raises the first error the server sent.

        Unlike ``script`` (libpq's ``PQexec``), this keeps an error the server sent before
        the statement arrived: the FATAL with which it ends a session that sat idle in a
        transaction longer than ``idle_in_transaction_session_timeout`` (SQLSTATE 25P03),
        which ``PQexec`` reports only as "server closed the connection unexpectedly". So
        a failed ``COMMIT`` tells whether it may have been carried out."""
        failed: pq.abc.PGresult | None = None
        with self._raw.lock:
            pgconn = self._raw.pgconn
            pgconn.send_query(sql.encode(self._encoding))
            while (result := pgconn.get_result()) is not None:
                if failed is None and result.status not in _SUCCEEDED:
                    failed = result
        if failed is not None:
            raise _error(failed, self._encoding)

    def _execute(self, sql: str, params: Encoded) -> pq.abc.PGresult:
        query = self._queries.get(sql)
        if query is None:
            numbers = itertools.count(1)
            query = _PLACEHOLDER.sub(lambda _: f"${next(numbers)}", sql).encode(self._encoding)
            self._queries[sql] = query
        values, oids, formats = params
        key = (sql, tuple(oids))
        name = self._prepared.get(key)
        with self._raw.lock:  # psycopg's own lock: no psycopg call on it meanwhile
            pgconn = self._raw.pgconn
            if name is None:
                name = self._prepare(pgconn, key, query, oids)
            if name is None:
                return pgconn.exec_params(query, values, oids, formats, _BINARY)
            # a None value is NULL there too (psycopg's stub leaves it out)
            return pgconn.exec_prepared(name, values, formats, _BINARY)  # type: ignore[arg-type]

    def _prepare(
        self, pgconn: pq.abc.PGconn, key: tuple[str, tuple[int, ...]], query: bytes, oids: list[int]
    ) -> bytes | None:
        """The name ``key``'s statement is prepared under, once it has run often enough."""
        runs = self._runs[key] = self._runs.get(key, 0) + 1
        if runs < PREPARE_AT or len(self._prepared) >= MOST_PREPARED:
            return None
        name = b"rewind_%d" % next(self._names)
        result = pgconn.prepare(name, query, oids)
        if result.status != pq.ExecStatus.COMMAND_OK:
            raise _error(result, self._encoding)
        del self._runs[key]
        self._prepared[key] = name
        return name

    def _checked(self, result: pq.abc.PGresult) -> pq.abc.PGresult | None:
        """``result`` if it has rows, None if the statement returns none (as SQLite's
        cursor has none); a failure is raised."""
        status = result.status
        if status == pq.ExecStatus.TUPLES_OK:
            return result
        if status == pq.ExecStatus.COMMAND_OK:
            return None
        raise _error(result, self._encoding)

    def _rows(self, result: pq.abc.PGresult) -> Iterator[tuple[Any, ...]]:
        checked = self._checked(result)  # now, not when the rows are first read
        if checked is None:
            return iter(())
        transformer = Transformer(self._raw)
        transformer.set_pgresult(checked)  # its loaders now, under the caller's lock
        return _decoded(transformer, checked)
