"""What kv and json have in common: keyed values with a history on a branch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._commit_hash import KIND_ERASED, erased_version
from ._damage import guarded
from ._engine import (
    MISSING,
    AsOf,
    BranchRecord,
    Engine,
    WriteContext,
    check_count,
    check_name,
    check_text,
)
from ._values import same, validate
from .errors import InvalidInputError
from .models import HistoryEntry, from_micros


@guarded
class KeySpace:
    """Keyed values of one kind (``space``) as seen from one branch."""

    space = ""

    def __init__(self, engine: Engine, branch: str) -> None:
        self._engine = engine
        self._branch = branch

    def _read(self, key: str, as_of: AsOf) -> Any:
        """The stored value of ``key`` at ``as_of``, or ``MISSING``."""
        return self._engine.read_key(self._branch, self.space, check_name(key, "key"), as_of)

    def _read_many(self, keys: Any, as_of: AsOf) -> dict[str, Any]:
        """The stored values of those of ``keys`` that exist at ``as_of``."""
        try:
            names = list(keys) if not isinstance(keys, (str, bytes, dict)) else None
        except TypeError:
            names = None
        if names is None:
            raise InvalidInputError(
                f"keys must be an iterable of key names, not {type(keys).__name__}",
                code="invalid.key",
            )
        wanted = sorted({check_name(key, "key") for key in names})
        engine = self._engine
        with engine.conn.lock, engine.memory.reading():
            record = engine.branch(self._branch)
            version = engine.resolve_as_of(record, as_of)
            rows = engine.read_entries(record, version, self.space, wanted)
            values = {key: engine.decode(row.kind, row.body, row.refs) for key, row in rows.items()}
        return {key: value for key, value in values.items() if value is not MISSING}

    def keys(
        self, prefix: str | None = None, *, as_of: AsOf = None, limit: int | None = None
    ) -> list[str]:
        """The keys that exist at ``as_of`` (default: now), sorted, optionally by prefix;
        with ``limit``, the first ``limit`` of them only (without a prefix, only those are
        read)."""
        if prefix is not None:
            check_text(prefix, "prefix")
        if limit is not None:
            check_count(limit, "limit")
            if prefix is None:
                return list(self._first(as_of, limit, decoded=False))
        engine = self._engine
        with engine.conn.lock:
            record = engine.branch(self._branch)
            version = engine.resolve_as_of(record, as_of)
            found = engine.entries(record, version, self.space, with_values=False, prefix=prefix)
            return sorted(found)[:limit]

    def items(self, *, as_of: AsOf = None, limit: int | None = None) -> dict[str, Any]:
        """Every key and its value at ``as_of`` (default: now), in key order; with
        ``limit``, the first ``limit`` keys only (a page of a state too big to read whole:
        only those are read and decoded)."""
        if limit is not None:
            check_count(limit, "limit")
            return self._first(as_of, limit, decoded=True)
        engine = self._engine
        with engine.conn.lock:
            record = engine.branch(self._branch)
            return self._items_at(record, engine.resolve_as_of(record, as_of))

    def _first(self, as_of: AsOf, limit: int, *, decoded: bool) -> dict[str, Any]:
        """The first ``limit`` keys at ``as_of``, in key order, with their values if
        ``decoded`` (else their stored forms), read in one snapshot."""
        engine = self._engine
        with engine.conn.lock, engine.conn.snapshot():
            record = engine.branch(self._branch)
            version = engine.resolve_as_of(record, as_of)
            found = engine.first_entries(record, version, self.space, limit)
            if not decoded:
                return found
            return {key: engine.decode(*row) for key, row in found.items()}

    def _items_at(self, record: BranchRecord, version: int) -> dict[str, Any]:
        engine = self._engine
        found = engine.entries(record, version, self.space)
        return {key: engine.decode(*found[key]) for key in sorted(found)}

    allows_bytes = True

    def _checked(self, values: Any, what: str) -> dict[str, Any]:
        """``values`` as a dict of valid keys and values, or ``invalid.<what>``/``value``."""
        if not isinstance(values, Mapping):
            raise InvalidInputError(
                f"expected a dict of key -> value, not {type(values).__name__}",
                code=f"invalid.{what}",
            )
        for key, value in values.items():
            check_name(key, "key")
            validate(value, allow_bytes=self.allows_bytes)
        return dict(values)

    def _write_many(
        self, method: str, values: Any, what: str, trigger: str | None, message: str | None
    ) -> int:
        """Several keys as one version (``kv.put_many``, ``state.set_many``); an argument
        that is not a dict, or an empty one, is ``invalid.<what>``."""
        values = self._checked(values, what)
        if not values:
            raise InvalidInputError(f"{method} needs at least one key", code=f"invalid.{what}")
        with self._engine.writing(self._branch, trigger, message) as write:
            return self._engine.write_values(write, self.space, values, validated=True)

    def _replace_all(self, write: WriteContext, values: dict[str, Any]) -> bool:
        """Within ``write``, make this space hold exactly ``values`` (validated already):
        delete the other keys, skip keys that already hold their value. True if anything
        changed."""
        engine = self._engine
        current = self.items(as_of=engine.clock())
        changes = {key: MISSING for key in current if key not in values}
        changes.update(
            (key, value)
            for key, value in values.items()
            if not same(current.get(key, MISSING), value)
        )
        if changes:
            engine.write_values(write, self.space, changes, validated=True)
        return bool(changes)

    def _history(
        self,
        key: str | None,
        as_of: AsOf,
        limit: int | None = None,
        before: int | None = None,
        after: int | None = None,
    ) -> list[HistoryEntry]:
        """Every write of ``key`` (of every key if None) this branch sees, oldest first;
        with ``limit``, the newest ``limit`` only (and only those are read and decoded),
        or with ``after`` the oldest; with ``before``, only versions older than it, with
        ``after`` only newer (a page's cursors: they may reach into inherited history,
        below the fork point no ``as_of`` may name)."""
        if key is not None:
            check_name(key, "key")
        if limit is not None:
            check_count(limit, "limit")
        if before is not None:
            check_count(before, "before")
        if after is not None:
            check_count(after, "after")
        engine = self._engine
        # An entry retention kept below its branch's cut has no commit: its time is the
        # cut's (a database read as it is from before schema 8 has no cuts, nor their table).
        cut = engine.conn.schema_migrated[1] >= 8
        sql = (
            "SELECT e.key, e.kind, e.body, e.refs, e.version, e.trigger, "
            + ("coalesce(c.ts, h.pruned_at, 0) " if cut else "c.ts ")
            + "FROM rewind_entries e LEFT JOIN rewind_commits c ON c.version = e.version "
            + ("LEFT JOIN rewind_horizons h ON h.branch_id = e.branch_id " if cut else "")
            + "WHERE e.branch_id = ? AND e.space = ? AND e.version <= ?"
        )
        if after is not None:
            sql += " AND e.version > ?"
        if key is not None:
            sql += " AND e.key = ?"
        # With a limit and no ``after``, newest first, step by step from the branch itself
        # (its rows are newest); otherwise oldest first, from the root's rows on.
        newest_first = limit is not None and after is None
        sql += (
            " ORDER BY e.version DESC, e.key DESC" if newest_first else " ORDER BY e.version, e.key"
        )
        if limit is not None:
            sql += " LIMIT ?"
        with engine.conn.lock:
            record = engine.branch(self._branch)
            version = engine.resolve_as_of(record, as_of)
            steps = engine.row_lineage(record, version)
            if before is not None:
                steps = [(branch_id, min(cap, before - 1)) for branch_id, cap in steps]
            rows: list[tuple[str, list[Any]]] = []
            for branch_id, cap in steps if newest_first else reversed(steps):
                wanted = None if limit is None else limit - sum(len(r) for _, r in rows)
                if wanted == 0:
                    break
                params: tuple[object, ...] = (branch_id, self.space, cap)
                if after is not None:
                    params += (after,)
                if key is not None:
                    params += (key,)
                if wanted is not None:
                    params += (wanted,)
                found = engine.conn.fetchall(sql, params)
                rows.append(
                    (engine.branch_by_id(branch_id).name, found[::-1] if newest_first else found)
                )
            if newest_first:
                rows.reverse()  # oldest first, as without a limit
            entries: list[HistoryEntry] = []
            for name, found in rows:
                for entry_key, kind, body, refs, entry_version, trigger, ts in found:
                    value = engine.decode(kind, body, refs)
                    erased = erased_version(trigger) if kind == KIND_ERASED else None
                    entries.append(
                        HistoryEntry(
                            key=entry_key,
                            version=entry_version,
                            timestamp=from_micros(ts),
                            value=None if value is MISSING else value,
                            trigger=None if erased is not None else trigger,
                            deleted=value is MISSING and erased is None,
                            branch=name,
                            erased_at=erased,
                        )
                    )
            return entries

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._read(key, None) is not MISSING
