"""Damaged databases, told apart from bugs at one edge: the public API's methods.

Reads use the rows they fetch where they need them (a timestamp becomes a datetime, a
version is compared, a body is decoded), and a row another program edited out of shape
(text where a version belongs, a NULL timestamp, a body that is not JSON, an id that
names nothing) fails there with whatever Python raises. Checking every value on the read
path would cost every read; instead the classes of the public API are ``guarded``: when
a method fails with such an error, ``diagnose`` looks the stored rows over (their types
and ranges, the ids they name, the JSON they hold, the branches' parents) and, if it
finds damage, raises a ``CorruptDatabaseError`` that names the table, chained to the
original error. If the rows are sound, the original error goes on untouched: a bug stays
a bug. The check runs only on that failure path; a normal call costs one function call.

Damage that would not fail by itself is caught where it happens: SQLite's "malformed"
and "no such table" (``Connection.damage``), a branch record out of shape or a parent
cycle (``_engine``), an array whose base is not older or whose items are missing
(``_arrays``).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from sqlalchemy import Integer, LargeBinary

from . import _schema
from .errors import CorruptDatabaseError, RewindError

if TYPE_CHECKING:
    from ._engine import Engine

T = TypeVar("T")

#: What Python raises when a stored value is not what the code expects.
_SYMPTOMS = (
    TypeError,
    ValueError,
    KeyError,
    IndexError,
    AttributeError,
    ArithmeticError,
    RecursionError,
)

#: The largest timestamp a datetime holds (9999-12-31), in microseconds.
_MAX_MICROS = 253_402_300_799_999_999

#: (table, column) -> the condition every non-NULL value meets.
_RANGES = {
    ("rewind_branches", "forked_at"): "{c} >= 0",
    ("rewind_branches", "created_at"): f"{{c}} BETWEEN 0 AND {_MAX_MICROS}",
    ("rewind_branches", "deleted_at"): f"{{c}} BETWEEN 0 AND {_MAX_MICROS}",
    ("rewind_commits", "version"): "{c} >= 1",
    ("rewind_commits", "ts"): f"{{c}} BETWEEN 0 AND {_MAX_MICROS}",
    ("rewind_commits", "merge_version"): "{c} >= 0",
    ("rewind_entries", "kind"): "{c} IN (0, 1, 2, 3)",
    ("rewind_horizons", "kept_from"): "{c} >= 0",
    ("rewind_entries", "space"): "{c} IN ('kv', 'json', 'state')",
    ("rewind_entries", "version"): "{c} >= 1",
    ("rewind_seqs", "base_len"): "{c} >= 0",
    ("rewind_seq_items", "idx"): "{c} >= 0",
    ("rewind_events", "sequence"): "{c} >= 0",
    ("rewind_events", "version"): "{c} >= 1",
    ("rewind_events", "ts"): f"{{c}} BETWEEN 0 AND {_MAX_MICROS}",
}

#: (table, condition no row meets, what such a row is).
_ROWS = (
    ("rewind_entries", "kind IN (0, 1) AND body IS NULL", "a value without a body"),
    ("rewind_entries", "kind <> 0 AND refs IS NOT NULL", "shared arrays in a non-JSON value"),
    ("rewind_entries", "kind = 3 AND body IS NULL", "an erased value without its digest"),
    ("rewind_entries", "key = ''", "an entry with an empty key"),
    (
        "rewind_commits",
        "(merge_branch_id IS NULL) <> (merge_version IS NULL)",
        "a merge commit without both its source branch and version",
    ),
)

#: (table, column, table, column): every non-NULL value of the first names a row of the
#: second (the rows retention kept below a branch's horizon name no commit: left out).
_REFERENCES = (
    ("rewind_branches", "parent_id", "rewind_branches", "id"),
    ("rewind_commits", "branch_id", "rewind_branches", "id"),
    ("rewind_commits", "merge_branch_id", "rewind_branches", "id"),
    ("rewind_commits", "merge_version", "rewind_commits", "version"),
    ("rewind_entries", "branch_id", "rewind_branches", "id"),
    ("rewind_entries", "version", "rewind_commits", "version"),
    ("rewind_seqs", "base_id", "rewind_seqs", "id"),
    ("rewind_seq_items", "seq_id", "rewind_seqs", "id"),
    ("rewind_events", "branch_id", "rewind_branches", "id"),
    ("rewind_events", "version", "rewind_commits", "version"),
    ("rewind_events", "origin_branch_id", "rewind_branches", "id"),
    ("rewind_horizons", "branch_id", "rewind_branches", "id"),
)

#: Rows that name no commit by design: what retention kept below a branch's horizon.
_BELOW_HORIZON = (
    "EXISTS (SELECT 1 FROM rewind_horizons h WHERE h.branch_id = t.branch_id "
    "AND t.version < h.kept_from)"
)

#: (table, key columns, JSON column, condition): the rows whose column must decode.
_JSON = (
    ("rewind_entries", "branch_id, space, key, version", "body", "kind = 0 AND body IS NOT NULL"),
    ("rewind_entries", "branch_id, space, key, version", "refs", "refs IS NOT NULL"),
    ("rewind_seq_items", "seq_id, idx", "item", "1 = 1"),
    # An erased payload (``events.erased_payload``) starts with a NUL byte: not JSON.
    ("rewind_events", "branch_id, sequence", "payload", "NOT (payload >= ? AND payload < ?)"),
)


def guarded(cls: type[T]) -> type[T]:
    """Route the failures of ``cls``'s public methods and properties through ``diagnose``
    (the instances reach the engine as ``_engine``, or ``_db._engine``)."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(member, property) and member.fget is not None:
            setattr(cls, name, property(_guard(member.fget), member.fset, member.fdel))
        elif callable(member) and not isinstance(member, (type, staticmethod, classmethod)):
            setattr(cls, name, _guard(member))
    return cls


#: The body of every guard; the signature is the method's own (see ``_guard``).
_GUARD = """
def guard({parameters}):
    try:
        return _rewind_method_({arguments})
    except _rewind_error_:
        raise
    except Exception as error:
        failure = _rewind_failure_({owner}, error)
        if failure is error:
            raise
        raise failure from error
"""


def _guard(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` with its failures passed through ``_failure``. The guard is compiled with
    the method's own parameters (as ``dataclasses`` makes its methods), so a call costs one
    plain function call rather than packing ``*args, **kwargs`` and unpacking them again:
    it sits on every public read."""
    namespace: dict[str, Any] = {
        "_rewind_method_": method,
        "_rewind_failure_": _failure,
        "_rewind_error_": RewindError,
    }
    parameters: list[str] = []
    arguments: list[str] = []
    starred, positional_only = False, 0
    for number, parameter in enumerate(inspect.signature(method).parameters.values()):
        name, kind = parameter.name, parameter.kind
        default = ""
        if parameter.default is not parameter.empty:
            namespace[f"_rewind_default_{number}"] = parameter.default
            default = f"=_rewind_default_{number}"
        if kind is parameter.VAR_POSITIONAL:
            parameters.append(f"*{name}")
            arguments.append(f"*{name}")
            starred = True
        elif kind is parameter.VAR_KEYWORD:
            parameters.append(f"**{name}")
            arguments.append(f"**{name}")
        elif kind is parameter.KEYWORD_ONLY:
            if not starred:
                parameters.append("*")
                starred = True
            parameters.append(f"{name}{default}")
            arguments.append(f"{name}={name}")
        else:  # positional (or keyword): passed on by position
            parameters.append(f"{name}{default}")
            arguments.append(name)
            positional_only += kind is parameter.POSITIONAL_ONLY
    if positional_only:  # (they come first)
        parameters.insert(positional_only, "/")
    source = _GUARD.format(
        parameters=", ".join(parameters), arguments=", ".join(arguments), owner=arguments[0]
    )
    exec(source, namespace)  # our own text, built from the signature
    guard: Callable[..., Any] = functools.wraps(method)(namespace["guard"])
    return guard


def _failure(owner: Any, error: Exception) -> BaseException:
    """``CorruptDatabaseError`` if the database is damaged, else ``error`` (also when the
    call itself was wrong: an error raised before the method's body ran)."""
    traceback = error.__traceback__
    if traceback is None or traceback.tb_next is None or getattr(error, "_rewind_sound", False):
        return error
    engine: Engine | None = getattr(owner, "_engine", None)
    if engine is None:
        engine = getattr(getattr(owner, "_db", None), "_engine", None)
    if engine is None:
        return error
    conn = engine.conn
    damage: BaseException = conn.damage(error) if isinstance(error, conn.errors) else error
    if damage is error and isinstance(error, _SYMPTOMS):
        damage = diagnose(engine, error)
    if damage is error:
        with contextlib.suppress(AttributeError):  # an outer guard need not look again
            error._rewind_sound = True  # type: ignore[attr-defined]
    return damage


def diagnose(engine: Engine, error: BaseException) -> BaseException:
    """A ``CorruptDatabaseError`` naming the first damage found in the stored rows, or
    ``error`` if there is none (or the database cannot be looked at now)."""
    conn = engine.conn
    with conn.lock:
        if conn.closed:
            return error
        try:
            found = _find_damage(engine)
        except RewindError as failure:  # the look itself met damage (a missing table)
            return failure
        except Exception:  # pragma: no cover - whatever stops the look, the error stands
            return error
    if found is None:
        return error
    table, detail = found
    return CorruptDatabaseError(
        f"{conn.location} is damaged: {detail} (the call failed with "
        f"{type(error).__name__}: {error}); restore it from a copy, or export what still "
        "reads into a new database",
        code=f"corrupt.{table.removeprefix('rewind_')}",
        table=table,
    )


def _find_damage(engine: Engine) -> tuple[str, str] | None:
    """(table, what is wrong) of the first damage found, or None."""
    conn = engine.conn
    checks = [_meta, _types, _ranges, _rows, _references, _cycles, _decodes]
    for check in checks:
        found = check(conn)
        if found is not None:
            return found
    return None


def _first(conn: Any, sql: str) -> Any:
    return conn.fetchone(sql)


def _meta(conn: Any) -> tuple[str, str] | None:
    rows = dict(conn.fetchall("SELECT key, value FROM rewind_meta"))
    version = rows.get("schema_version")
    if rows.get("format") != "rewinddb":
        return "rewind_meta", f"its format marker is {rows.get('format')!r}"
    if not isinstance(version, str) or not version.isdigit() or int(version) < 1:
        return "rewind_meta", f"its schema version is {version!r}"
    return None


def _types(conn: Any) -> tuple[str, str] | None:
    """Each column holds its type (SQLite stores whatever it is given)."""
    if conn.dialect != "sqlite":
        return None  # the server enforces the column types
    for table in _schema.TABLES:
        present = {row[1] for row in conn.fetchall(f"PRAGMA table_info({table.name})")}
        for column in table.columns:
            if column.name not in present:
                if column.nullable:
                    continue  # a column a later schema added, not there yet
                return table.name, f"column {table.name}.{column.name} is missing"
            if isinstance(column.type, Integer):
                allowed = "'integer'"
            elif isinstance(column.type, LargeBinary):
                allowed = "'blob'"
            else:
                allowed = "'text'"
            if column.nullable and not column.primary_key:
                allowed += ", 'null'"
            row = _first(
                conn,
                f"SELECT {column.name}, typeof({column.name}) FROM {table.name} "
                f"WHERE typeof({column.name}) NOT IN ({allowed}) LIMIT 1",
            )
            if row is not None:
                return table.name, (
                    f"{table.name}.{column.name} holds {row[0]!r} ({row[1]}) where "
                    f"{allowed.replace(chr(39), '')} belongs"
                )
    return None


def _ranges(conn: Any) -> tuple[str, str] | None:
    for (table, column), rule in _RANGES.items():
        row = _first(
            conn,
            f"SELECT {column} FROM {table} WHERE {column} IS NOT NULL "
            f"AND NOT ({rule.format(c=column)}) LIMIT 1",
        )
        if row is not None:
            return table, f"{table}.{column} holds {row[0]!r}, an impossible value"
    return None


#: ``_ROWS`` a SQLite file alone can hold (PostgreSQL's text holds no NUL).
_SQLITE_ROWS = (
    (
        "rewind_entries",
        "instr(CAST(key AS BLOB), x'00') > 0",  # (text functions stop at a NUL)
        "an entry whose key holds a NUL",
    ),
)


def _rows(conn: Any) -> tuple[str, str] | None:
    for table, condition, what in _ROWS + (_SQLITE_ROWS if conn.dialect == "sqlite" else ()):
        if _first(conn, f"SELECT 1 FROM {table} WHERE {condition} LIMIT 1") is not None:
            return table, f"{table} holds {what}"
    return None


def _references(conn: Any) -> tuple[str, str] | None:
    for table, column, target, key in _REFERENCES:
        kept = (
            f" AND NOT {_BELOW_HORIZON}"
            if column == "version" and table in ("rewind_entries", "rewind_events")
            else ""
        )
        row = _first(
            conn,
            f"SELECT t.{column} FROM {table} t WHERE t.{column} IS NOT NULL AND NOT EXISTS "
            f"(SELECT 1 FROM {target} r WHERE r.{key} = t.{column}){kept} LIMIT 1",
        )
        if row is not None:
            return table, f"{table}.{column} names {row[0]!r}, which is no row of {target}"
    return None


def _cycles(conn: Any) -> tuple[str, str] | None:
    parents = dict(conn.fetchall("SELECT id, parent_id FROM rewind_branches"))
    for start in parents:
        seen = {start}
        step = parents.get(start)
        while step is not None:
            if step in seen:
                return "rewind_branches", f"branch id {start} is its own ancestor"
            seen.add(step)
            step = parents.get(step)
    return None


def _decodes(conn: Any) -> tuple[str, str] | None:
    """The JSON bodies, references, items and payloads decode (checked in Python: the
    encoder is orjson, whose JSON SQLite's own json_valid does not quite match)."""
    for table, keys, column, where in _JSON:
        params = (b"\x00erased@", b"\x00erased@\xff") if "?" in where else ()
        for row in conn.fetchall(f"SELECT {keys}, {column} FROM {table} WHERE {where}", params):
            try:
                orjson.loads(bytes(row[-1]))
            except (orjson.JSONDecodeError, TypeError, ValueError):
                return table, f"{table}.{column} of the row {tuple(row[:-1])!r} is not JSON"
    return None
