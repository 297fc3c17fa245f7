"""The reads of the diff engine (``diff``) that the engine does not offer in the shape a
diff wants them.

``changed_keys`` is ``Engine.changed_keys`` grouped by space with each space's keys
sorted, in the order the diff lists them. On SQLite the keys of a lineage step come back
as one JSON array (``json_group_array``) parsed in one call: turning 1,000 rows into
Python tuples cost more than the index range that finds them.

Rows another program edited are refused where a diff or a merge meets them, since
nothing else would fail on them (``_damage``): a space that is none of rewinddb's or a
key it never writes (empty, with a NUL, not text) as the changed keys are listed
(``changed_keys``), and a kind that is none of its kinds where an entry's stored form
is taken to be decoded (``bad_kind``): such an entry was decoded as JSON and reported as
an ordinary change, its key read back cut short at the NUL, or listed in a space no
read knows. Each is ``corrupt.entries``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ._engine import KIND_BYTES, KIND_JSON, SPACES, Engine
from ._values import loads
from .errors import CorruptDatabaseError

#: The kinds of an entry that hold a value (JSON, bytes); ``NO_VALUE`` holds the others
#: (deleted, erased). An entry of any other kind is damaged (``bad_kind``).
VALUE_KINDS = frozenset((KIND_JSON, KIND_BYTES))


def bad_kind(engine: Engine, space: str, key: str, row: Any) -> CorruptDatabaseError:
    """The error of an entry ``row`` (an ``EntryRow``) whose kind is none of rewinddb's."""
    entry = f"the {space} entry {key!r} of branch id {row[5]!r} at version {row[3]!r}"
    return engine.damaged_kind(row[0], entry)


def _bad_name(engine: Engine, space: Any, key: Any = None) -> CorruptDatabaseError:
    """The error of a changed entry in a space that is none of rewinddb's, or (``key``)
    whose key is one rewinddb never writes."""
    if type(space) is not str or space not in SPACES:
        what = f"rewind_entries.space holds {space!r}, none of rewinddb's spaces (kv, json, state)"
    else:
        what = (
            f"rewind_entries.key holds {key!r} (of space {space!r}), a key rewinddb never "
            "writes (empty, holding a NUL, or not text)"
        )
    return CorruptDatabaseError(
        f"{engine.conn.location} is damaged: {what}: the row was edited by another program; "
        "restore the file from a copy, or export what still reads into a new database",
        code="corrupt.entries",
        table="rewind_entries",
    )


def _check_keys(engine: Engine, space: Any, keys: list[Any]) -> None:
    """Refuse ``keys`` of ``space`` unless the space is rewinddb's and each key is one
    it writes: text, not empty, without NUL (the seeks of ``Engine.read_entries`` would
    read a key with a NUL back cut short, and miss it)."""
    if type(space) is not str or space not in SPACES:
        raise _bad_name(engine, space)
    for key in keys:
        if type(key) is not str or not key or "\x00" in key:
            raise _bad_name(engine, space, key)


#: The keys one lineage step wrote in a range of versions, as one JSON array, and the
#: lowest and highest space they are in (most ranges write one space: no grouping).
_CHANGED_KEYS = (
    "SELECT min(space), max(space), json_group_array(iif(typeof(key) = 'text', key, NULL)) "
    "FROM rewind_entries "
    "WHERE branch_id = ? AND version > ? AND version <= ?"
)
#: ``_CHANGED_KEYS`` of a range that wrote several spaces: one array per space.
_CHANGED_KEYS_BY_SPACE = (
    "SELECT space, json_group_array(iif(typeof(key) = 'text', key, NULL)) "
    "FROM rewind_entries WHERE branch_id = ? AND version > ? AND version <= ? GROUP BY space"
)


def changed_keys(
    engine: Engine, ranges_a: dict[int, int], ranges_b: dict[int, int]
) -> dict[str, list[str]]:
    """space -> the keys (sorted) written in the part of history only one of two points
    sees (``Engine.changed_keys``), spaces in order: a key written nowhere in that part
    has the same value at both points, so a diff only looks at these."""
    if engine.conn.dialect != "sqlite":
        return _rows_by_space(engine, ranges_a, ranges_b)
    by_space: dict[str, list[str]] = {}
    fetchone, fetchall = engine.conn.fetchone, engine.conn.fetchall
    for branch_id in ranges_a.keys() | ranges_b.keys():
        low, high = sorted((ranges_a.get(branch_id, 0), ranges_b.get(branch_id, 0)))
        if low == high:
            continue
        params = (branch_id, low, high)
        try:
            lowest, highest, keys = fetchone(_CHANGED_KEYS, params)
            if lowest is None:  # nothing written in the range
                continue
            arrays = (
                [(lowest, keys)] if lowest == highest else fetchall(_CHANGED_KEYS_BY_SPACE, params)
            )
        except sqlite3.DataError:  # the keys' array longer than SQLite's longest string
            return _rows_by_space(engine, ranges_a, ranges_b)
        for space, keys in arrays:
            names = loads(keys)
            if type(space) is not str or None in names:  # a damaged file: a BLOB name
                return _rows_by_space(engine, ranges_a, ranges_b)  # (which says so)
            # A key with a NUL or an empty one shows in the JSON text (as ``\u0000``,
            # ``""``); so do some sound keys (a backslash then ``u0000``; a quote at the
            # end), which the look at each key lets through.
            if space not in SPACES or "\\u0000" in keys or '""' in keys:
                _check_keys(engine, space, names)
            by_space.setdefault(space, []).extend(names)
    return _sorted(by_space)


def _rows_by_space(
    engine: Engine, ranges_a: dict[int, int], ranges_b: dict[int, int]
) -> dict[str, list[str]]:
    """``changed_keys`` from ``Engine.changed_keys``' rows (PostgreSQL; a damaged file,
    whose names are then not all text: ``corrupt.entries``)."""
    by_space: dict[str, list[str]] = {}
    for space, key in engine.changed_keys(ranges_a, ranges_b):
        by_space.setdefault(space, []).append(key)
    for space, keys in by_space.items():
        _check_keys(engine, space, keys)
    return _sorted(by_space)


def _sorted(by_space: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each space's keys once, sorted, spaces in order (a range's keys come in index
    order, (version, key): one version's are sorted already, which ``sorted`` finds
    in one pass when ``dict.fromkeys``, unlike a set, keeps that order)."""
    return {space: sorted(dict.fromkeys(keys)) for space, keys in sorted(by_space.items())}
