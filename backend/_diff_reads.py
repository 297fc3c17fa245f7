"""The reads of the diff engine (``diff``) that the engine does not offer in the shape a
diff wants them.

``changed_keys`` is ``Engine.changed_keys`` grouped by space with each space's keys
sorted, in the order the diff lists them. On SQLite the keys of a lineage step come back
as one JSON array (``json_group_array``) parsed in one call: turning 1,000 rows into
Python tuples cost more than the index range that finds them.
"""

from __future__ import annotations

import sqlite3

from ._engine import Engine
from ._values import loads

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
            by_space.setdefault(space, []).extend(names)
    return _sorted(by_space)


def _rows_by_space(
    engine: Engine, ranges_a: dict[int, int], ranges_b: dict[int, int]
) -> dict[str, list[str]]:
    """``changed_keys`` from ``Engine.changed_keys``' rows (PostgreSQL; a damaged file,
    whose names are then not all text and fail the diff as damaged, as they always did)."""
    by_space: dict[str, list[str]] = {}
    for space, key in engine.changed_keys(ranges_a, ranges_b):
        by_space.setdefault(space, []).append(key)
    return _sorted(by_space)


def _sorted(by_space: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each space's keys once, sorted, spaces in order (a range's keys come in index
    order, (version, key): one version's are sorted already, which ``sorted`` finds
    in one pass when ``dict.fromkeys``, unlike a set, keeps that order)."""
    return {space: sorted(dict.fromkeys(keys)) for space, keys in sorted(by_space.items())}
