"""The one diff engine: what changed between two points (branch, version) in history.

Only keys written in the part of history that one point sees and the other does not are
compared, so a diff costs what changed, not the size of the state. JSON values are
compared structurally: objects member by member, arrays item by item, so a list that
grew by one item is one ``added`` change at ``$[n]``, not a rewrite of the list.
The web explorer, the notebook widget and the CLI render this; none diffs on its own.
Its records, ``Point`` and ``Change``, are plain records of ``models`` (the renderings
draw them too); a ``Diff`` is the two points and the changes between them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from . import _decoding, _diff_reads, jsonpath, rendering
from ._engine import MISSING, NO_VALUE, BranchRecord, Engine
from ._values import same, short_text
from .events import events_between
from .models import Change as Change
from .models import ChangeKind as ChangeKind
from .models import HistoryEntry, change_counts
from .models import Point as Point


@dataclass(frozen=True)
class Diff:
    """The changes that turn the state at ``a`` into the state at ``b``."""

    a: Point
    b: Point
    changes: list[Change] = field(default_factory=list)

    def __iter__(self) -> Iterator[Change]:
        return iter(self.changes)

    def __len__(self) -> int:
        return len(self.changes)

    def __bool__(self) -> bool:
        return bool(self.changes)

    def counts(self) -> dict[str, int]:
        return change_counts(self.changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": {"branch": self.a.branch, "version": self.a.version},
            "b": {"branch": self.b.branch, "version": self.b.version},
            "counts": self.counts(),
            "changes": [change.to_dict() for change in self.changes],
        }

    def to_text(self) -> str:
        """A plain-text rendering: one line per change, ``+`` added, ``-`` removed,
        ``~`` changed."""
        lines = [f"--- {self.a}", f"+++ {self.b}"]
        for change in self.changes:
            if change.primitive == "events":
                where = f"events #{change.key}"
            else:
                where = f"{change.primitive} {change.key!r} {change.path}"
            if change.kind == "added":
                lines.append(f"+ {where}: {short_text(change.new)}")
            elif change.kind == "removed":
                lines.append(f"- {where}: {short_text(change.old)}")
            else:
                lines.append(f"~ {where}: {short_text(change.old)} -> {short_text(change.new)}")
        counts = self.counts()
        if self.changes:
            lines.append(
                f"{rendering.plural(len(self.changes), 'change')}: {counts['added']} added, "
                f"{counts['removed']} removed, {counts['changed']} changed"
            )
        else:
            lines.append("no changes")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        """The diff as a table: a branch's keys named by its presenter (a LangGraph
        channel by its name), values decoded, bookkeeping folded; a plain branch's as
        stored."""
        return rendering.told_diff_html(self)


@dataclass(frozen=True)
class KeyVersion:
    """One written version of a key and the changes from the version before it."""

    entry: HistoryEntry
    changes: list[Change]

    def to_dict(self) -> dict[str, Any]:
        return {**self.entry.to_dict(), "changes": [c.to_dict() for c in self.changes]}


def key_versions(
    primitive: str, entries: list[HistoryEntry], *, readable: bool = False
) -> list[KeyVersion]:
    """Each entry of one key's history with the structural diff from the previous one
    (of the values as ``rewinddb.presenters.readable`` shows them, with ``readable``)."""
    versions = []
    previous: Any = MISSING
    memo: dict[Any, Any] | None = {} if readable else None
    for entry in entries:
        current = MISSING if entry.deleted or entry.erased_at is not None else entry.value
        versions.append(KeyVersion(entry, _diff(primitive, entry.key, previous, current, memo)))
        previous = current
    return versions


def _diff(
    primitive: str, key: str, old: Any, new: Any, memo: dict[Any, Any] | None
) -> list[Change]:
    """``diff_values`` of two stored values, or (with a ``memo``) of the values as people
    read them (``diff_readable``)."""
    if memo is None:
        return diff_values(primitive, key, old, new)
    return diff_readable(primitive, key, old, new, memo)


def diff_readable(
    primitive: str,
    key: str,
    old: Any,
    new: Any,
    memo: dict[Any, Any],
    tokens: tuple[jsonpath.Token, ...] = (),
) -> list[Change]:
    """``diff_values`` of ``old`` and ``new`` as ``rewinddb.presenters.readable`` shows
    them, decoding only where the stored values differ: equal stored parts are equal
    when decoded, so they are skipped unread, and objects and arrays are walked down to
    the parts that differ, or that a presenter decodes as a whole (``encoded``). A list
    that grew by one encoded message decodes that message alone."""
    if same(old, new):
        return []
    if (
        old is not MISSING
        and new is not MISSING
        and not _decoding.encoded(old)
        and not _decoding.encoded(new)
    ):
        if isinstance(old, dict) and isinstance(new, dict):
            changes: list[Change] = []
            for member in sorted(old.keys() | new.keys()):
                changes += diff_readable(
                    primitive,
                    key,
                    old.get(member, MISSING),
                    new.get(member, MISSING),
                    memo,
                    (*tokens, member),
                )
            return changes
        if isinstance(old, list) and isinstance(new, list):
            changes = []
            for index in range(max(len(old), len(new))):
                changes += diff_readable(
                    primitive,
                    key,
                    old[index] if index < len(old) else MISSING,
                    new[index] if index < len(new) else MISSING,
                    memo,
                    (*tokens, index),
                )
            return changes
    shown_old = old if old is MISSING else _shown(old, memo)
    shown_new = new if new is MISSING else _shown(new, memo)
    return diff_values(primitive, key, shown_old, shown_new, tokens)


def diff_values(
    primitive: str, key: str, old: Any, new: Any, tokens: tuple[jsonpath.Token, ...] = ()
) -> list[Change]:
    """Structural changes from ``old`` to ``new`` (either may be ``MISSING``), at the path
    ``tokens`` names."""
    changes: list[Change] = []
    _walk(primitive, key, old, new, jsonpath.format_path(tokens), changes)
    return changes


def _shown(value: Any, memo: dict[Any, Any] | None) -> Any:
    """``value``, decoded for people (``rewinddb.presenters.readable``) when a ``memo`` is given
    (one per diff: the values compared share most of what they hold)."""
    return value if memo is None else _decoding.readable(value, memo)


def diff_points(
    engine: Engine,
    a: BranchRecord,
    version_a: int,
    b: BranchRecord,
    version_b: int,
    *,
    readable: bool = False,
    events: bool = True,
) -> Diff:
    """The structured diff from (a, version_a) to (b, version_b); versions are resolved.
    With ``readable``, values are compared as ``rewinddb.presenters.readable`` shows them;
    without ``events``, the events are left out.

    The keys written in the history only one point sees are found with one index range
    per lineage step; their entries at each point are then read together, a few
    statements per side (``Engine.read_entries``), and only entries whose stored forms
    differ are decoded and compared: k changed keys cost O(k), whatever the state's size.
    """
    with engine.memory.reading():
        ranges_a = engine.ranges(a, version_a)
        ranges_b = engine.ranges(b, version_b)
        changes: list[Change] = []
        memo: dict[Any, Any] | None = {} if readable else None
        for space, keys in _diff_reads.changed_keys(engine, ranges_a, ranges_b).items():
            changes += _space_changes(engine, space, keys, (a, version_a), (b, version_b), memo)
        if events:
            changes += _event_changes(engine, ranges_a, ranges_b, memo)
    return Diff(Point(a.name, version_a), Point(b.name, version_b), changes)


#: Keys whose entries one ``Engine.read_entries`` call reads, at each point. What the
#: memory does not answer it seeks with one statement per lineage step whose text is
#: the same for any keys (``Engine._SEEK_KEYS``: the keys are one JSON parameter), so
#: it is compiled once per connection: the first diff of 1,000 changed keys after
#: reopening took 27-28 ms with statements whose text followed the count of seeks,
#: now 12-14 ms (CPU, median of 9). Batches of 100 to 1,000 keys cost the same.
_KEYS_PER_READ = 100


def _space_changes(
    engine: Engine,
    space: str,
    keys: list[str],
    point_a: tuple[BranchRecord, int],
    point_b: tuple[BranchRecord, int],
    memo: dict[Any, Any] | None,
) -> list[Change]:
    """The changes of ``keys`` (sorted) of one space from ``point_a`` to ``point_b``.

    Entries whose stored forms (kind, body, refs) are the same hold the same value and
    are skipped undecoded; so are keys with no value at either point. The values of
    the rest are decoded together (``Engine.decode_many``). An entry of a kind that is
    none of rewinddb's is ``corrupt.entries`` (``_diff_reads.bad_kind``), whichever
    point reads it: decoded, it would pass for JSON.
    """
    changes: list[Change] = []
    value_kinds, no_value = _diff_reads.VALUE_KINDS, NO_VALUE
    for start in range(0, len(keys), _KEYS_PER_READ):
        chunk = keys[start : start + _KEYS_PER_READ]
        found_a = engine.read_entries(*point_a, space, chunk).get
        found_b = engine.read_entries(*point_b, space, chunk).get
        differing: list[str] = []
        forms: list[tuple[int, bytes | None, bytes | None] | None] = []
        for key in chunk:
            row_a, row_b = found_a(key), found_b(key)
            if row_a is not None and row_a[0] not in value_kinds:
                if row_a[0] not in no_value:
                    raise _diff_reads.bad_kind(engine, space, key, row_a)
                row_a = None
            if row_b is not None and row_b[0] not in value_kinds:
                if row_b[0] not in no_value:
                    raise _diff_reads.bad_kind(engine, space, key, row_b)
                row_b = None
            if row_a is None:
                if row_b is None:
                    continue
            elif row_b is not None and (
                row_a[1] == row_b[1] and row_a[0] == row_b[0] and row_a[2] == row_b[2]
            ):
                continue  # the same stored form: the same value
            differing.append(key)
            forms.append(None if row_a is None else row_a[:3])
            forms.append(None if row_b is None else row_b[:3])
        values = engine.decode_many(forms)
        if memo is None:
            walk = _walk
            for key, old, new in zip(differing, values[::2], values[1::2], strict=True):
                walk(space, key, old, new, "$", changes)
        else:
            for index, key in enumerate(differing):
                changes += diff_readable(space, key, values[2 * index], values[2 * index + 1], memo)
    return changes


#: Types whose values are the same stored value exactly when they are ``==`` and of one
#: type (``True == 1`` and ``1 == 1.0``, but JSON tells them apart; floats go through
#: ``same``, which also tells ``0.0`` from ``-0.0``).
_EXACT = frozenset((str, int, bool, type(None)))

_new_object = object.__new__


def _change(primitive: str, key: str, path: str, kind: ChangeKind, old: Any, new: Any) -> Change:
    """``Change(primitive, key, path, kind, old, new)``, its fields set in its ``__dict__``:
    a frozen dataclass's ``__init__`` sets each through ``object.__setattr__``, which
    cost over half of building a diff's changes (tests/backend/test_diff_fast.py checks
    the two are the same record)."""
    change = _new_object(Change)
    fields = change.__dict__
    fields["primitive"] = primitive
    fields["key"] = key
    fields["path"] = path
    fields["kind"] = kind
    fields["old"] = old
    fields["new"] = new
    return change


def _walk(primitive: str, key: str, old: Any, new: Any, path: str, out: list[Change]) -> None:
    """Append the structural changes from ``old`` to ``new`` at ``path`` to ``out``,
    members in sorted order and items by index, each path built from its parent's:
    scalars are compared by type and ``==``, and an equal subtree once (``==``, then
    ``same``), not again at every level below it."""
    if old is new:
        return
    kind = type(old)
    if kind is dict and type(new) is dict:  # the common case first (a diff's values)
        names = old.keys()
        for name in sorted(names) if names == new.keys() else sorted(names | new.keys()):
            old_item, new_item = old.get(name, MISSING), new.get(name, MISSING)
            if old_item is new_item:
                continue
            kind = type(old_item)
            if kind is type(new_item):
                if kind in _EXACT:
                    if old_item != new_item:
                        step = _STEPS.get(name) or _member(name)
                        out.append(
                            _change(primitive, key, path + step, "changed", old_item, new_item)
                        )
                    continue
                if (
                    (kind is dict or kind is list)
                    and old_item == new_item
                    and same(old_item, new_item)
                ):
                    continue
            _walk(
                primitive, key, old_item, new_item, path + (_STEPS.get(name) or _member(name)), out
            )
        return
    if old is MISSING:
        out.append(_change(primitive, key, path, "added", None, new))
        return
    if new is MISSING:
        out.append(_change(primitive, key, path, "removed", old, None))
        return
    if kind is type(new) and kind in _EXACT:
        if old != new:
            out.append(_change(primitive, key, path, "changed", old, new))
        return
    if isinstance(old, dict) and isinstance(new, dict):  # (subclasses: not from storage)
        names = old.keys()
        for name in sorted(names if names == new.keys() else names | new.keys()):
            _member_or_item(
                primitive,
                key,
                old.get(name, MISSING),
                new.get(name, MISSING),
                path,
                _STEPS.get(name) or _member(name),
                out,
            )
        return
    if isinstance(old, list) and isinstance(new, list):
        len_old, len_new = len(old), len(new)
        for index in range(max(len_old, len_new)):
            _member_or_item(
                primitive,
                key,
                old[index] if index < len_old else MISSING,
                new[index] if index < len_new else MISSING,
                path,
                f"[{index}]",
                out,
            )
        return
    if not same(old, new):
        out.append(_change(primitive, key, path, "changed", old, new))


def _member_or_item(
    primitive: str, key: str, old: Any, new: Any, path: str, step: str, out: list[Change]
) -> None:
    """``_walk`` at ``path + step``, settling the common cases first: the same object,
    scalars of one type, equal containers."""
    if old is new:
        return
    kind = type(old)
    if kind is type(new):
        if kind in _EXACT:
            if old != new:
                out.append(_change(primitive, key, path + step, "changed", old, new))
            return
        if (kind is dict or kind is list) and old == new and same(old, new):
            return
    _walk(primitive, key, old, new, path + step, out)


#: The path step of each object member met lately (``_member``).
_STEPS: dict[str, str] = {}
_MOST_STEPS = 4096
_LONGEST_STEP = 128


def _member(name: str) -> str:
    """The path step of an object member (``jsonpath.format_path``'s spelling),
    remembered in ``_STEPS`` (``_STEPS.get(name) or _member(name)``: a dict's look-up
    is cheaper than a cached function's call)."""
    step = jsonpath.format_path((name,))[1:]
    if len(name) <= _LONGEST_STEP:  # (a long name costs its own bytes, twice)
        if len(_STEPS) >= _MOST_STEPS:
            _STEPS.clear()
        _STEPS[name] = step
    return step


def _event_changes(
    engine: Engine,
    ranges_a: dict[int, int],
    ranges_b: dict[int, int],
    memo: dict[Any, Any] | None,
) -> list[Change]:
    """Events only one point's log holds: ``removed`` from a's, ``added`` in b's."""
    changes: list[Change] = []
    for branch_id in sorted(ranges_a.keys() | ranges_b.keys()):
        high_a, high_b = ranges_a.get(branch_id, 0), ranges_b.get(branch_id, 0)
        if high_a == high_b:
            continue
        kind: ChangeKind = "added" if high_b > high_a else "removed"
        for event in events_between(engine, branch_id, min(high_a, high_b), max(high_a, high_b)):
            body = {
                "event_type": event.event_type,
                "payload": _shown(event.payload, memo),
                "version": event.version,
            }
            if event.erased_at is not None:
                body["erased_at"] = event.erased_at
            changes.append(
                Change(
                    "events",
                    str(event.sequence),
                    "$",
                    kind,
                    body if kind == "removed" else None,
                    body if kind == "added" else None,
                )
            )
    changes.sort(key=lambda c: (c.kind != "removed", int(c.key)))
    return changes
