"""Three-way merge of one branch into another, with a receipt that tells the truth.

The merge base is the newest point both branches share: the fork point of their common
ancestor, or the source as of its last merge into the target (or the target as of its
last merge into the source), whichever is newest. Keys (kv) merge whole; JSON documents
merge member by member, so two branches that changed different members of one document
both win. A conflict (both sides changed the same thing differently) fails the merge with
every conflict listed and nothing written, unless a strategy resolves it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat
from typing import Any, Literal, Union

from . import _diff_reads, jsonpath
from ._engine import (
    KIND_BYTES,
    KIND_JSON,
    MISSING,
    NO_VALUE,
    BranchRecord,
    CopiedEntry,
    Engine,
    EntryRow,
    StoredValue,
)
from ._merge_applied import AppliedChanges, PendingChange
from ._values import loads, same
from .erasure import purged, still_read
from .errors import (
    CorruptDatabaseError,
    HistoryUnavailableError,
    InvalidInputError,
    MergeConflictError,
)
from .events import append_event, identity

Strategy = Literal["fail", "source", "target"]
EventMode = Literal["skip", "append"]


@dataclass(frozen=True)
class MergeChange:
    """A change the merge applied to the target."""

    primitive: str
    key: str
    path: str
    old: Any
    new: Any


@dataclass(frozen=True)
class MergeConflict:
    """Both sides changed ``path`` differently; ``resolution`` says whose value won."""

    primitive: str
    key: str
    path: str
    base: Any
    source: Any
    target: Any
    resolution: str | None = None

    def __str__(self) -> str:
        return f"{self.primitive} {self.key!r} {self.path}"


@dataclass(frozen=True)
class MergeReceipt:
    """Exactly what a merge moved, what it kept, and what it did not carry."""

    source: str
    target: str
    version: int | None
    """The merge commit's version; None when the target was already up to date."""
    base: tuple[str, int]
    strategy: str
    applied: list[MergeChange] = field(default_factory=list)
    conflicts: list[MergeConflict] = field(default_factory=list)
    events_carried: int = 0
    events_not_carried: int = 0

    @property
    def up_to_date(self) -> bool:
        return self.version is None

    @property
    def complete(self) -> bool:
        """True only if everything the source did reached the target: no events left
        behind and no conflict resolved in the target's favour."""
        return self.events_not_carried == 0 and not any(
            c.resolution == "target" for c in self.conflicts
        )

    @property
    def keys_applied(self) -> list[str]:
        applied = self.applied
        if isinstance(applied, AppliedChanges):  # (without building its changes)
            return sorted(set(applied.keys()))
        return sorted({change.key for change in applied})

    def summary(self) -> str:
        """One honest line: what was applied, what conflicted, what was left behind."""
        if self.version is None:
            pending = (
                f"; {self.events_not_carried} events still NOT carried (events='skip')"
                if self.events_not_carried
                else ""
            )
            return f"{self.source} -> {self.target}: nothing new to merge{pending}"
        kept = sum(1 for c in self.conflicts if c.resolution == "target")
        conflicts = f"{len(self.conflicts)} conflicts"
        if self.conflicts:
            conflicts += f" ({len(self.conflicts) - kept} took the source, {kept} kept the target)"
        events = f"{self.events_carried} events carried"
        if self.events_not_carried:
            events += f", {self.events_not_carried} NOT carried (events='skip')"
        return (
            f"{self.source} -> {self.target} at version {self.version}: "
            f"{len(self.applied)} changes applied to {len(self.keys_applied)} keys; "
            f"{conflicts}; {events}"
        )

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "version": self.version,
            "base": {"branch": self.base[0], "version": self.base[1]},
            "strategy": self.strategy,
            "complete": self.complete,
            "applied": [vars(change) for change in self.applied],
            "conflicts": [vars(conflict) for conflict in self.conflicts],
            "events_carried": self.events_carried,
            "events_not_carried": self.events_not_carried,
        }


def contained_history(engine: Engine, record: BranchRecord, version: int) -> dict[int, int]:
    """Everything the point (record, version) holds: branch id -> newest version of it,
    through its lineage and, recursively, through every merge it contains."""
    held: dict[int, int] = {}
    pending = [(record, version)]
    while pending:
        point, cap_of_point = pending.pop()
        for branch_id, cap in engine.lineage(point, cap_of_point):
            if held.get(branch_id, -1) >= cap:
                continue
            held[branch_id] = cap
            for merged_branch, merged_version in engine.conn.fetchall(
                "SELECT merge_branch_id, merge_version FROM rewind_commits "
                "WHERE branch_id = ? AND version <= ? AND merge_branch_id IS NOT NULL",
                (branch_id, cap),
            ):
                pending.append((engine.branch_by_id(merged_branch), merged_version))
    return held


def merge_base(
    engine: Engine, source: BranchRecord, target: BranchRecord, now: int
) -> tuple[BranchRecord, int]:
    """The newest point in history that both ``source`` and ``target`` contain.

    Both sides' histories are followed through forks and merges (also merges of third
    branches); of the branches both hold, the newest point both reach is the base.
    """
    source_holds = contained_history(engine, source, now)
    target_holds = contained_history(engine, target, now)
    version, branch_id = max(
        (min(source_holds[branch_id], target_holds[branch_id]), branch_id)
        for branch_id in source_holds.keys() & target_holds.keys()
    )
    return engine.branch_by_id(branch_id), version


def _three_way(
    base: Any,
    source: Any,
    target: Any,
    tokens: tuple[jsonpath.Token, ...],
    by_path: bool,
    applied: list[tuple[tuple[jsonpath.Token, ...], Any, Any]],
    conflicts: list[tuple[tuple[jsonpath.Token, ...], Any, Any, Any]],
) -> Any:
    """The merged value; records what came from the source and what conflicted."""
    if _same(source, target) or _same(source, base):
        return target
    if (
        by_path
        and isinstance(source, dict)
        and isinstance(target, dict)
        and (base is MISSING or isinstance(base, dict))
    ):
        base_dict = {} if base is MISSING else base
        merged = {}
        for member in sorted(base_dict.keys() | source.keys() | target.keys()):
            value = _three_way(
                base_dict.get(member, MISSING),
                source.get(member, MISSING),
                target.get(member, MISSING),
                (*tokens, member),
                by_path,
                applied,
                conflicts,
            )
            if value is not MISSING:
                merged[member] = value
        return merged
    if _same(target, base):
        applied.append((tokens, target, source))
        return source
    conflicts.append((tokens, base, source, target))
    return target


def _same(a: Any, b: Any) -> bool:
    """``same(a, b)``, settled by ``==`` when that already says no (values that are the
    same stored value are ``==``; the converse fails only for ``1``, ``1.0``, ``True``
    and ``0.0``, ``-0.0``, which ``same`` tells apart)."""
    return a is b or (a == b and same(a, b))


#: Keys whose entries one batch of ``Engine.read_entries`` calls reads, at each point.
_KEYS_PER_READ = 500


#: The target's changes since the merge base are listed when they are at most this many
#: keys, or four times the keys the source changed (a listed key costs less than a read
#: entry); beyond that, the target's entries of the keys the source changed are read.
_TARGET_CHANGES_READ = 2_000


def _target_changes(
    engine: Engine, base_ranges: dict[int, int], target_ranges: dict[int, int], most: int
) -> set[tuple[str, str]] | None:
    """The (space, key) pairs the target wrote since the merge base, when the base is a
    point of the target's own lineage and they are at most ``most``; else None.

    The target holds every key outside them as the base does (the same entry), so it
    need not be read for those. A base the target holds only through a merge (its
    lineage steps are not the target's) gives None, as does a target that changed
    more keys than the source may have: then the target is read key by key instead.
    """
    if most <= 0 or any(target_ranges.get(b, -1) < cap for b, cap in base_ranges.items()):
        return None
    changed: set[tuple[str, str]] = set()
    sqlite = engine.conn.dialect == "sqlite"
    for branch_id, high in target_ranges.items():
        low = base_ranges.get(branch_id, 0)
        if high <= low:
            continue
        params = (branch_id, low, high, most + 1)
        rows = None
        if sqlite:  # each space's keys as one JSON array, parsed in one call
            try:
                rows = engine.conn.fetchall(_TARGET_KEYS, params)
            except sqlite3.DataError:  # longer than SQLite's longest string
                rows = None
        if rows is not None:
            for space, names in rows:
                keys = loads(names)
                if type(space) is not str or None in keys:  # a damaged file's BLOB name:
                    rows = None  # row by row, as always
                    break
                changed.update(zip(repeat(space), keys))
        if rows is None:
            changed.update(
                (space, key)  # (keys an earlier step listed may come again)
                for space, key in engine.conn.fetchall(_TARGET_ROWS, params)
            )
        if len(changed) > most:
            return None
    return changed


#: The (space, key) pairs a lineage step wrote in a range of versions, at most so many.
_TARGET_ROWS = (
    "SELECT DISTINCT space, key FROM rewind_entries "
    "WHERE branch_id = ? AND version > ? AND version <= ? LIMIT ?"
)
#: ... on SQLite, as one JSON array of keys per space.
_TARGET_KEYS = (
    "SELECT space, json_group_array(iif(typeof(key) = 'text', key, NULL)) "
    f"FROM ({_TARGET_ROWS}) GROUP BY space"
)


#: A named tuple from a tuple of its fields (no Python ``__new__``).
_new_tuple = tuple.__new__

#: The kinds whose stored form is the value itself, stored whole (no shared arrays):
#: two such forms that differ hold different values (JSON is stored canonically:
#: ``_values``), so a key whose target holds the base's entry copies the source's.
_PLAIN_KINDS = frozenset((KIND_JSON, KIND_BYTES))

Form = tuple[int, Union[bytes, None], Union[bytes, None]]  # noqa: UP007 - a runtime alias


def _moved(
    engine: Engine,
    space: str,
    keys: list[str],
    points: tuple[tuple[BranchRecord, int], ...],
    target_moved: set[str] | frozenset[str] | None,
) -> tuple[
    list[tuple[str, Form | None, Form | None, Form | None, EntryRow | None]], list[str], list[Any]
]:
    """What the merge must look at of ``keys`` (sorted): the keys whose source entry
    differs from the base's and from the target's (equal stored forms hold the same
    value, so those keys are skipped undecoded), in order, as (key, base, source and
    target stored forms (None: no value), the source's entry).

    The target is read only for keys the source moved, and of those only for the ones
    it wrote since the base when ``target_moved`` lists them (its keys of this space
    that ``_target_changes`` found): the others it holds as the base does (their target
    form *is* the base's). Then the values of the keys that need them are decoded in one
    call: all but those of a kv key whose target holds the base's entry and whose base
    and source forms are plain (no value, or one of ``_PLAIN_KINDS`` without refs): such
    a key takes the source's entry as it is stored. Returns (the keys' forms, the
    decoded keys, their (base, source, target) values in a row)."""
    base_point, source_point, target_point = points
    base_rows = engine.read_entries(*base_point, space, keys).get
    source_rows = engine.read_entries(*source_point, space, keys).get
    no_value, plain_kinds = NO_VALUE, _PLAIN_KINDS
    moved = []
    for key in keys:
        source_row, base_row = source_rows(key), base_rows(key)
        # Each stored form (kind, body, refs), None where there is no value; an entry of
        # a kind that is none of rewinddb's is damaged: decoded, or copied as stored, it
        # would pass for JSON.
        if source_row is not None and source_row[0] in plain_kinds:
            source_form = source_row[:3]
        elif source_row is None or source_row[0] in no_value:
            source_form = None
        else:
            raise _diff_reads.bad_kind(engine, space, key, source_row)
        if base_row is not None and base_row[0] in plain_kinds:
            base_form = base_row[:3]
        elif base_row is None or base_row[0] in no_value:
            base_form = None
        else:
            raise _diff_reads.bad_kind(engine, space, key, base_row)
        if source_form != base_form:  # (else one stored value, or none on both sides)
            moved.append((key, base_form, source_form, source_row))
    if not moved:
        return [], [], []
    if target_moved is None:
        target_keys = [key for key, _, _, _ in moved]
    else:
        target_keys = [key for key, _, _, _ in moved if key in target_moved]
    target_rows = engine.read_entries(*target_point, space, target_keys) if target_keys else {}
    whole = space != "json"
    found = []
    decoded: list[str] = []
    forms: list[Form | None] = []
    for key, base_form, source_form, source_row in moved:
        if target_moved is None or key in target_moved:
            target_row = target_rows.get(key)
            if target_row is not None and target_row[0] in plain_kinds:
                target_form = target_row[:3]
            elif target_row is None or target_row[0] in no_value:
                target_form = None
            else:
                raise _diff_reads.bad_kind(engine, space, key, target_row)
        else:
            target_form = base_form
        if target_form == source_form:
            continue  # the target has the source's value already
        found.append((key, base_form, source_form, target_form, source_row))
        if (
            whole
            and target_form == base_form
            and (base_form is None or (base_form[2] is None and base_form[0] in plain_kinds))
            and (source_form is None or (source_form[2] is None and source_form[0] in plain_kinds))
        ):
            continue  # copied as stored (both plain): no value needed
        decoded.append(key)
        forms += (base_form, source_form, target_form)
    return found, decoded, engine.decode_many(forms) if forms else []


def _merge_key(
    space: str,
    key: str,
    base_value: Any,
    source_value: Any,
    target_value: Any,
    strategy: Strategy,
    applied: list[MergeChange],
    conflicts: list[MergeConflict],
) -> Any:
    """The merged value of one key; appends what it applied and what conflicted."""
    if _same(base_value, source_value):
        return target_value
    key_applied: list[tuple[tuple[jsonpath.Token, ...], Any, Any]] = []
    key_conflicts: list[tuple[tuple[jsonpath.Token, ...], Any, Any, Any]] = []
    merged = _three_way(
        base_value, source_value, target_value, (), space == "json", key_applied, key_conflicts
    )
    for tokens, conflict_base, conflict_source, conflict_target in key_conflicts:
        resolution = None if strategy == "fail" else strategy
        conflicts.append(
            MergeConflict(
                space,
                key,
                jsonpath.format_path(tokens),
                _shown(conflict_base),
                _shown(conflict_source),
                _shown(conflict_target),
                resolution,
            )
        )
        if strategy == "source":
            merged = _put(merged, tokens, conflict_source)
            key_applied.append((tokens, conflict_target, conflict_source))
    applied += [
        MergeChange(space, key, jsonpath.format_path(tokens), _shown(old), _shown(new))
        for tokens, old, new in key_applied
    ]
    return merged


def merge_branches(
    engine: Engine,
    source: str,
    target: str,
    *,
    strategy: Strategy = "fail",
    events: EventMode = "skip",
    trigger: str | None = None,
    message: str | None = None,
) -> MergeReceipt:
    """Merge ``source`` into ``target`` as one commit with two parents."""
    if strategy not in ("fail", "source", "target"):
        raise InvalidInputError(
            f"strategy must be 'fail', 'source' or 'target', not {strategy!r}",
            code="invalid.strategy",
        )
    if events not in ("skip", "append"):
        raise InvalidInputError(
            f"events must be 'skip' or 'append', not {events!r}", code="invalid.events"
        )
    with engine.writing(target, trigger, message) as write:
        target_record = write.branch
        source_record = engine.branch(source)
        if source_record.id == target_record.id:
            raise InvalidInputError(
                f"cannot merge branch {source!r} into itself", code="invalid.merge"
            )
        now = engine.clock()
        base_record, base_version = merge_base(engine, source_record, target_record, now)
        _check_base(engine, base_record, base_version)
        base_ranges = engine.ranges(base_record, base_version)
        source_ranges = engine.ranges(source_record, now)
        target_ranges = engine.ranges(target_record, now)

        writes: dict[str, dict[str, Any]] = {}
        #: The changes applied, in order: each a MergeChange or, not decoded yet, a
        #: ``PendingChange`` (the receipt decodes it when first read).
        pending: list[Any] = []
        undecoded = False
        conflicts: list[MergeConflict] = []
        # space -> the keys (sorted) the source wrote since the base, spaces in order
        by_space = _diff_reads.changed_keys(engine, base_ranges, source_ranges)
        points = ((base_record, base_version), (source_record, now), (target_record, now))
        source_moved = sum(len(keys) for keys in by_space.values())
        most = max(_TARGET_CHANGES_READ, 4 * source_moved) if source_moved else 0
        target_moved = _target_changes(engine, base_ranges, target_ranges, most)
        for space, keys in by_space.items():  # in (space, key) order
            space_moved = (
                None
                if target_moved is None
                else frozenset(key for key_space, key in target_moved if key_space == space)
            )
            whole = space != "json"  # kv values merge whole, JSON documents per member
            space_writes: dict[str, Any] = {}
            for start in range(0, len(keys), _KEYS_PER_READ):
                found, decoded, values = _moved(
                    engine, space, keys[start : start + _KEYS_PER_READ], points, space_moved
                )
                index_of = {key: 3 * index for index, key in enumerate(decoded)}
                for key, base_form, source_form, target_form, source_row in found:
                    at = index_of.get(key)
                    if at is None:
                        # A kv key the target left as the base had it, both sides stored
                        # whole (``_moved``): the source's entry, copied as stored; the
                        # receipt decodes the change when it is read.
                        pending.append(PendingChange(space, key, base_form, source_form))
                        undecoded = True
                        if source_form is None:
                            space_writes[key] = MISSING
                        else:
                            assert source_row is not None
                            space_writes[key] = _new_tuple(
                                CopiedEntry,
                                (source_form[0], source_form[1], source_row[5], source_row[3]),
                            )
                        continue
                    base_value, source_value, target_value = values[at : at + 3]
                    if target_form == base_form:
                        target_value = base_value  # one value: later checks settle by identity
                    if whole and target_value is base_value:
                        # The target holds the base's value: the source's wins whole,
                        # as _merge_key would find.
                        if not _same(base_value, source_value):
                            pending.append(
                                MergeChange(
                                    space, key, "$", _shown(base_value), _shown(source_value)
                                )
                            )
                            # Stored whole, it is copied as stored (not encoded again).
                            whole_form = source_form is not None and source_form[2] is None
                            space_writes[key] = (
                                StoredValue(source_form[0], source_form[1])
                                if source_form and whole_form
                                else source_value
                            )
                        continue
                    merged = _merge_key(
                        space,
                        key,
                        base_value,
                        source_value,
                        target_value,
                        strategy,
                        pending,
                        conflicts,
                    )
                    if not _same(merged, target_value):
                        space_writes[key] = merged
            if space_writes:
                writes[space] = space_writes

        if conflicts and strategy == "fail":
            raise MergeConflictError(
                f"merging {source!r} into {target!r} found {len(conflicts)} conflicts: "
                + ", ".join(str(c) for c in conflicts)
                + "; nothing was written. Pass strategy='source' or 'target' to resolve them",
                conflicts,
            )

        source_events = _events_to_carry(engine, source_ranges, target_ranges)
        new_events = [e for e in source_events if not _in_log(engine, base_ranges, e.origin)]
        base_point = (base_record.name, base_version)
        events_to_record = source_events if events == "append" else new_events
        if not (events_to_record or writes or pending or conflicts):
            # Nothing new to merge; events an earlier merge skipped are still not carried.
            return MergeReceipt(
                source,
                target,
                None,
                base_point,
                strategy,
                events_not_carried=len(source_events),
            )

        if write.merge_from is not None and write.merge_from[0] != source_record.id:
            raise InvalidInputError(
                "a transaction can merge from one branch only (a commit has two parents); "
                "merge the other branch in its own transaction",
                code="invalid.transaction",
            )
        write.merged_from(source_record.id, now)
        version = write.commit()
        for space in sorted(writes):  # one statement per space for most entries
            engine.write_values(write, space, writes[space], validated=True)
        carried = 0
        if events == "append":
            for event in source_events:
                append_event(engine, write, event.event_type, event.payload, origin=event.origin)
                carried += 1
        return MergeReceipt(
            source,
            target,
            version,
            base_point,
            strategy,
            AppliedChanges(
                pending, build=partial(_build_applied, engine.decode_many) if undecoded else None
            ),
            conflicts,
            events_carried=carried,
            events_not_carried=len(source_events) - carried,
        )


@dataclass(frozen=True)
class _Carry:
    """An event of the source that the target's log does not hold yet."""

    sequence: int
    event_type: str
    payload: bytes
    origin: tuple[int, int]


def _events_to_carry(
    engine: Engine, source_ranges: dict[int, int], target_ranges: dict[int, int]
) -> list[_Carry]:
    """The events of the source's log that the target's log lacks (also those an earlier
    merge with ``events="skip"`` left behind).

    An event is itself wherever merges copied it (``origin``), so nothing is carried
    twice, however branches were merged back and forth before.
    """
    found = []
    for branch_id, high in source_ranges.items():
        low = min(high, target_ranges.get(branch_id, 0))  # below that, both logs hold it
        if high <= low:
            continue
        for sequence, event_type, payload, origin_id, origin_seq in engine.conn.fetchall(
            "SELECT sequence, event_type, payload, origin_branch_id, origin_sequence "
            "FROM rewind_events WHERE branch_id = ? AND version > ? AND version <= ?",
            (branch_id, low, high),
        ):
            origin = identity(
                branch_id, sequence, None if origin_id is None else (origin_id, origin_seq)
            )
            if not _in_log(engine, target_ranges, origin):
                found.append(_Carry(sequence, event_type, bytes(payload), origin))
    found.sort(key=lambda carry: carry.sequence)
    return found


def _in_log(engine: Engine, ranges: dict[int, int], origin: tuple[int, int]) -> bool:
    """Whether the log seen through ``ranges`` holds the event ``origin`` or a copy of it."""
    rows = engine.conn.fetchall(
        "SELECT branch_id, version FROM rewind_events WHERE branch_id = ? AND sequence = ? "
        "UNION ALL SELECT branch_id, version FROM rewind_events "
        "WHERE origin_branch_id = ? AND origin_sequence = ?",
        (*origin, *origin),
    )
    return any(branch_id in ranges and version <= ranges[branch_id] for branch_id, version in rows)


def _put(document: Any, tokens: tuple[jsonpath.Token, ...], value: Any) -> Any:
    """``document`` with ``value`` at ``tokens`` (``MISSING`` removes it)."""
    if value is MISSING:
        return jsonpath.delete_value(document, tokens)[0]
    return jsonpath.set_value(document, tokens, value, jsonpath.format_path(tokens))


def _shown(value: Any) -> Any:
    return None if value is MISSING else value


def _check_base(engine: Engine, record: BranchRecord, version: int) -> None:
    """Refuse a merge whose base is history that is gone: retention cut it from its
    branch, or its branch was purged (``purge``, ``db.gc()``) and no branch that is not
    purged reads it there through its lineage (``erasure.still_read``), so its rows
    there may be gone. A deleted branch keeps its rows until it is purged, and a purge
    keeps those another branch reads (and, as links, the merge commits the base was
    found through: ``erasure._merge_reach``). Read where rows are gone, the base would be
    what is left (an older value, or none), and the merge would drop the source's changes
    or report conflicts that are not there."""
    engine.check_kept(record, version)
    while purged(record):
        if still_read(engine, record.id, version):
            return
        if version > record.forked_at or record.parent_id is None:
            raise HistoryUnavailableError(
                f"the merge base is version {version} of a purged branch (id {record.id}) that "
                "no branch reads there any more, whose rows there may be gone: the merge cannot "
                "tell what either side changed since then; copy the values you want with "
                "kv.put instead",
                branch=record.name,
                as_of=version,
            )
        record = engine.branch_by_id(record.parent_id)  # its own rows are not read there


def _damaged(
    decode_many: Callable[[list[Form | None]], list[Any]], pending: list[Any]
) -> CorruptDatabaseError:
    """The error of a receipt whose moved values do not decode: the merge copied the
    source's entries as they are stored, and one of them, or a base entry, is damaged
    (another program's bytes where JSON belongs)."""
    for item in pending:
        if type(item) is PendingChange:
            try:
                decode_many([item.base, item.source])
            except (ValueError, TypeError):
                return CorruptDatabaseError(
                    f"the merge moved {item.primitive} key {item.key!r}, whose stored value (at "
                    "the merge base or on the source) is not JSON: rewind_entries.body is damaged",
                    code="corrupt.entries",
                )
    return CorruptDatabaseError(
        "a value this merge moved does not decode: rewind_entries.body is damaged",
        code="corrupt.entries",
    )


def _build_applied(
    decode_many: Callable[[list[Form | None]], list[Any]], pending: list[Any]
) -> list[MergeChange]:
    """The receipt's changes from the merge's list of them (``AppliedChanges``): each
    ``PendingChange`` (a whole kv value moved from the base's to the source's) decoded
    from its stored forms, all in one call."""
    forms: list[Form | None] = []
    for item in pending:
        if type(item) is PendingChange:
            forms += (item.base, item.source)
    try:
        values = iter(decode_many(forms)).__next__ if forms else None
    except (ValueError, TypeError) as error:  # (orjson's JSONDecodeError is a ValueError)
        raise _damaged(decode_many, pending) from error
    changes = []
    for item in pending:
        if type(item) is PendingChange:
            assert values is not None
            old, new = values(), values()
            item = MergeChange(item.primitive, item.key, "$", _shown(old), _shown(new))
        changes.append(item)
    return changes
