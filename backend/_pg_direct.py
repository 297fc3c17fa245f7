"""One statement and its first row through libpq's blocking call, past psycopg's cursor.

Every write routine call and every single-key read on PostgreSQL is a ``fetchone``. A
psycopg cursor runs each statement through its non-blocking wait loop and its per-query
adaptation; with 16 writers on 2 cores, where a write is CPU-bound, that measured about
70 us of client CPU per ``rewind_append_event`` call against about 33 us through
``PGconn.exec_prepared`` (psycopg's binding of libpq's ``PQexecPrepared``). In
``benchmarks/postgres.py`` at 16 writers, ``kv.put`` went from 0.55-0.57 of raw psycopg to
0.67-0.69 and ``events.append`` from 0.38-0.46 to 0.47-0.51 (3 interleaved runs each).

The parameters are sent with the types psycopg would give them (text as ``unknown``, the
server infers it; an int as the smallest integer type that holds it); a parameter of any
other Python type answers None from ``encode``, and the caller runs the statement the
ordinary way. A statement run again is prepared on its connection, once for each set of
parameter types, as psycopg would prepare it (the connection's psycopg preparing is off,
see ``PostgresConnection._connect``). The row is decoded by psycopg's own loaders (binary
format), so values come back as the same Python types. libpq releases the GIL while it
waits; as in SQLite's busy wait, Ctrl-C is seen when the statement returns (at most
``busy_timeout``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import pq

_TEXT, _BINARY = pq.Format.TEXT, pq.Format.BINARY
_UNKNOWN_OID, _BOOL_OID, _BYTEA_OID = 0, 16, 17
_INT_OIDS = ((1 << 15, 21), (1 << 31, 23), (1 << 63, 20))  # int2, int4, int8
_NUMERIC_OID = 1700
_PLACEHOLDER = re.compile(r"\?")
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
    """The failed statement's error as the psycopg exception psycopg would raise."""
    field = result.error_field
    message = field(pq.DiagnosticField.MESSAGE_PRIMARY) or result.error_message
    text = bytes(message).decode(encoding, "replace")
    state = field(pq.DiagnosticField.SQLSTATE)
    if not state:  # no answer from the server: the connection went
        return psycopg.OperationalError(text)
    try:
        return pg_errors.lookup(bytes(state).decode())(text)
    except KeyError:
        return psycopg.DatabaseError(text)


class DirectStatements:
    """``fetchone`` for one psycopg connection (made again when it is replaced)."""

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self._raw = raw
        self._encoding = raw.info.encoding
        self._queries: dict[str, bytes] = {}
        self._runs: dict[tuple[str, tuple[int, ...]], int] = {}
        self._prepared: dict[tuple[str, tuple[int, ...]], bytes] = {}
        self._loaders: dict[int, Callable[[bytes], Any]] = {}

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
        """The first row of ``sql`` (``?`` placeholders), or None if it has none; a
        failure raises the psycopg error. The caller serialises use of the connection."""
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
                result = pgconn.exec_params(query, values, oids, formats, _BINARY)
            else:  # a None value is NULL there too (psycopg's stub leaves it out)
                result = pgconn.exec_prepared(name, values, formats, _BINARY)  # type: ignore[arg-type]
        return self._row(result)

    def _prepare(
        self, pgconn: pq.abc.PGconn, key: tuple[str, tuple[int, ...]], query: bytes, oids: list[int]
    ) -> bytes | None:
        """The name ``key``'s statement is prepared under, once it has run often enough."""
        runs = self._runs[key] = self._runs.get(key, 0) + 1
        if runs < PREPARE_AT or len(self._prepared) >= MOST_PREPARED:
            return None
        name = b"rewind_%d" % len(self._prepared)
        result = pgconn.prepare(name, query, oids)
        if result.status != pq.ExecStatus.COMMAND_OK:
            raise _error(result, self._encoding)
        del self._runs[key]
        self._prepared[key] = name
        return name

    def _row(self, result: pq.abc.PGresult) -> tuple[Any, ...] | None:
        status = result.status
        if status == pq.ExecStatus.COMMAND_OK:  # no rows: as SQLite's cursor answers
            return None
        if status != pq.ExecStatus.TUPLES_OK:
            raise _error(result, self._encoding)
        if not result.ntuples:
            return None
        row = []
        for column in range(result.nfields):
            data = result.get_value(0, column)
            row.append(None if data is None else self._loader(result.ftype(column))(data))
        return tuple(row)

    def _loader(self, oid: int) -> Callable[[bytes], Any]:
        load = self._loaders.get(oid)
        if load is None:
            adapters = self._raw.adapters
            loader = adapters.get_loader(oid, _BINARY) or adapters.get_loader(0, _BINARY)
            assert loader is not None  # psycopg registers a loader for unknown types
            load = self._loaders[oid] = loader(oid, self._raw).load
        return load
