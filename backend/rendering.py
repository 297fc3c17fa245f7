"""HTML renderings of rewinddb objects for notebooks (``_repr_html_``) and widgets.

Agent state is untrusted text: every value goes through ``html.escape`` before it reaches
the page, and long values are shortened (with their full length shown). Styles are
inline so the output looks the same in JupyterLab, classic Notebook and VS Code; long
values wrap (at word boundaries first) instead of widening their column.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from html import escape
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import orjson

from . import _decoding
from ._engine import MISSING
from ._values import dumps
from .models import Branch, Change, ChangeKind, change_counts

if TYPE_CHECKING:
    from .models import Event, Point

#: Values longer than this (as JSON text) are shortened in HTML.
MAX_VALUE_CHARS = 500
#: Children of one object or array a tree shows (the first and the last halves).
MAX_TREE_ITEMS = 100
#: Characters of stored JSON shown as raw text before it is cut.
MAX_RAW_CHARS = 50_000

_KIND_STYLE = {
    "added": ("+", "#e6ffed", "#22863a"),
    "removed": ("-", "#ffeef0", "#b31d28"),
    "changed": ("~", "#fff8c5", "#735c0f"),
}
#: The creation time of the stand-in record ``_named`` asks a presenter about.
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: Wrap long text where it must, at spaces when it can, so a column never overflows.
WRAP = "overflow-wrap:anywhere;word-break:normal;white-space:pre-wrap"
_TABLE = "border-collapse:collapse;font-family:monospace;font-size:12px;max-width:100%"
_CELL = (
    "padding:2px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top;"
    "overflow-wrap:anywhere;word-break:normal"
)
#: The key and path columns of a diff: narrow, so the values keep most of the room,
#: but never so narrow that a name breaks into letters.
_NAME_CELL = f"{_CELL};min-width:7em;max-width:16em"
#: The mark and space columns: a word each, never broken.
_TAG_CELL = f"{_CELL};white-space:nowrap;overflow-wrap:normal"


class Changes(Protocol):
    """What :func:`diff_html` draws: the changes from point ``a`` to point ``b`` (a
    ``rewinddb.Diff``)."""

    @property
    def a(self) -> Point: ...

    @property
    def b(self) -> Point: ...

    @property
    def changes(self) -> Sequence[Change]: ...


class Row(Protocol):
    """A diff row as a presenter tells it (``rewinddb.presenters.DiffRow``): the store's
    ``change`` behind it, what a person calls its key (``label``), where it is in the
    value's own shape (``path``), the change there, decoded, and whether it is
    bookkeeping (``hidden``)."""

    @property
    def change(self) -> Change: ...

    @property
    def label(self) -> str: ...

    @property
    def hidden(self) -> bool: ...

    @property
    def path(self) -> str: ...

    @property
    def kind(self) -> ChangeKind: ...

    @property
    def old(self) -> Any: ...

    @property
    def new(self) -> Any: ...


class _StoredRow(NamedTuple):
    """A store's change named and decoded by a presenter, at its stored path."""

    change: Change
    label: str
    hidden: bool
    path: str
    kind: ChangeKind
    old: Any
    new: Any


@runtime_checkable
class Teller(Protocol):
    """What the renderings ask of a registered presenter (``rewinddb.presenters.Presenter``,
    found in the registry ``_decoding`` holds by what it can do, so this module stays
    below the presenters): whether it tells a branch, what it calls a key, what is
    bookkeeping, the values decoded, and a key's rows as it tells them."""

    def claims(self, branch: Branch) -> bool: ...

    def key_label(self, primitive: str, key: str) -> str: ...

    def hidden(self, change: Change) -> bool: ...

    def display(self, value: Any, memo: dict[Any, Any] | None = None) -> Any: ...

    def value_rows(
        self, primitive: str, key: str, old: Any, new: Any, changes: Sequence[Change]
    ) -> Sequence[Row]: ...


def teller_for(branch: Branch) -> Teller | None:
    """The registered presenter that tells ``branch`` its own way (the first that claims
    it, as ``rewinddb.presenters.presenter_for`` picks), or None: a plain branch."""
    for decoder in _decoding.registered():
        if isinstance(decoder, Teller) and decoder.claims(branch):
            return decoder
    return None


def plural(count: int, word: str, words: str | None = None) -> str:
    """``"1 key"``, ``"2 keys"``: ``count`` and the word in the number it needs."""
    return f"{count:,} {word if count == 1 else (words or word + 's')}"


def value_text(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """Escaped JSON text of ``value``; shortened past ``limit`` characters."""
    if isinstance(value, (bytes, bytearray)):
        return escape(f"<{len(value)} bytes>")
    text = dumps(value).decode()
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text):,} characters in all)"
    return escape(text)


def value_tree(value: Any, label: str = "", *, open_levels: int = 1, decode: bool = True) -> str:
    """A collapsible tree (``<details>``) for objects and arrays, text for the rest; serde
    encodings in a stored value are decoded once, here (``readable``), unless ``decode``
    is False (for a value that was decoded already, or to show it as stored)."""
    return _tree(_decoding.readable(value) if decode else value, label, open_levels)


def _tree(value: Any, label: str, open_levels: int) -> str:
    name = f"<b>{escape(label)}</b>: " if label else ""
    if isinstance(value, dict) and value:
        items = [(str(k), v) for k, v in value.items()]
        children = _children(items, open_levels, "key")
        line = _decoding.value_text(value)
        if line is not None:  # a message: the line a person reads, its fields folded
            return _details(f"{name}{escape(line)}", children, False)
        return _details(f"{name}{{{plural(len(value), 'key')}}}", children, open_levels > 0)
    if isinstance(value, list) and value:
        children = _children([(f"[{i}]", v) for i, v in enumerate(value)], open_levels, "item")
        return _details(f"{name}[{plural(len(value), 'item')}]", children, open_levels > 0)
    return f'<div style="margin-left:1em;{WRAP}">{name}<code>{value_text(value)}</code></div>'


def _children(items: list[tuple[str, Any]], open_levels: int, word: str) -> str:
    """The children of an object or array, the middle ones left out past
    ``MAX_TREE_ITEMS`` (the first and the last halves shown: a log's newest are last)."""
    if len(items) <= MAX_TREE_ITEMS:
        return "".join(_tree(v, k, open_levels - 1) for k, v in items)
    half = MAX_TREE_ITEMS // 2
    head, tail = items[:half], items[-half:]
    left_out = len(items) - 2 * half
    gap = (
        f'<div style="margin-left:1em;color:#666"><i>… {plural(left_out, word)} '
        f"({escape(items[half][0])} to {escape(items[-half - 1][0])}) not shown</i></div>"
    )
    return (
        "".join(_tree(v, k, open_levels - 1) for k, v in head)
        + gap
        + "".join(_tree(v, k, open_levels - 1) for k, v in tail)
    )


def _details(summary: str, body: str, is_open: bool) -> str:
    return (
        f'<details style="margin-left:1em"{" open" if is_open else ""}>'
        f"<summary>{summary}</summary>{body}</details>"
    )


def state_html(snapshot: dict[str, Any]) -> str:
    """A ``view.snapshot()`` as three collapsible sections: kv, json, state."""
    parts = []
    for space in ("kv", "json", "state"):
        values = snapshot.get(space, {})
        body = "".join(value_tree(v, k, open_levels=1) for k, v in values.items())
        title = f"<b>{space}</b> ({plural(len(values), 'key')})"
        parts.append(_details(title, body or "<i>empty</i>", bool(values)))
    return "".join(parts)


def diff_html(diff: Changes) -> str:
    """A diff as a colored table: + added, - removed, ~ changed (old -> new)."""
    counts = change_counts(diff.changes)
    head = (
        f'<div style="{WRAP}"><b>{escape(str(diff.a))}</b> &rarr; '
        f"<b>{escape(str(diff.b))}</b>: {counts['added']} added, {counts['removed']} removed, "
        f"{counts['changed']} changed</div>"
    )
    if not diff.changes:
        return head + "<div><i>no changes</i></div>"
    return head + changes_table((change, change.key, False) for change in diff.changes)


def _cell_value(value: Any) -> str:
    """A value in a diff row: the line a presenter reads it as (a message), its JSON
    folded beside; else its JSON text."""
    line = _decoding.value_text(value)
    if line is None:
        return value_text(value)
    return (
        f'{escape(line)} <details style="display:inline"><summary>JSON</summary>'
        f"<code>{value_text(value)}</code></details>"
    )


def diff_rows_html(a: Point, b: Point, rows: Sequence[Row]) -> str:
    """A diff as its presenter tells it (``Presenter.diff_rows``), as the web explorer's
    compare page shows it: the rows people read, counted, then the bookkeeping rows
    folded (greyed) under *show N hidden*."""
    shown = [row for row in rows if not row.hidden]
    hidden = [row for row in rows if row.hidden]
    counts = {kind: sum(row.kind == kind for row in shown) for kind in _KIND_STYLE}
    head = (
        f'<div style="{WRAP}"><b>{escape(str(a))}</b> &rarr; <b>{escape(str(b))}</b>: '
        f"{counts['added']} added, {counts['removed']} removed, {counts['changed']} changed"
        + (f" (and {len(hidden):,} hidden)" if hidden else "")
        + "</div>"
    )
    if shown:
        body = rows_table(shown)
    else:
        body = f"<div><i>{'nothing but bookkeeping' if hidden else 'no changes'}</i></div>"
    if hidden:
        body += _details(
            f"show {len(hidden)} hidden <i>(bookkeeping)</i>", rows_table(hidden), False
        )
    return head + body


def rows_table(rows: Iterable[Row]) -> str:
    """Diff rows as a presenter tells them, in the web explorer's columns: + / - / ~,
    where (what a person calls the key: a channel's name; ``event #n``), the path in the
    value's own shape, and the values, decoded; bookkeeping rows greyed."""
    cells = []
    for row in rows:
        change = row.change
        mark, background, color = _KIND_STYLE[row.kind]
        if row.kind == "changed":
            values = f"{_cell_value(row.old)} &rarr; {_cell_value(row.new)}"
        else:
            values = _cell_value(row.new if row.kind == "added" else row.old)
        where = f"event #{change.key}" if change.primitive == "events" else row.label
        style = f"background:{background};color:{color}" + (";opacity:0.55" if row.hidden else "")
        cells.append(
            f'<tr style="{style}" data-kind="{row.kind}">'
            f'<td style="{_TAG_CELL}">{mark}</td>'
            f'<td style="{_NAME_CELL}">{escape(where)}</td>'
            f'<td style="{_NAME_CELL}">{escape(row.path)}</td>'
            f'<td style="{_CELL}">{values}</td></tr>'
        )
    return f'<table style="{_TABLE};width:100%">{"".join(cells)}</table>'


def told_diff_html(diff: Changes) -> str:
    """A ``Diff`` with nothing but itself (its ``_repr_html_``): a branch a presenter
    tells its own way has its keys named so, its values decoded and its bookkeeping
    folded; a key written or removed whole reads as its value, a change inside one at
    the path the store holds it (telling it in the value's own shape reads the values:
    ``rewinddb.notebook.show_diff``). A plain branch's diff is ``diff_html``."""
    teller = teller_for(_named(diff.b.branch))
    if teller is None:
        return diff_html(diff)
    memo: dict[Any, Any] = {}
    rows: list[Row] = []
    for change in diff.changes:
        if change.path == "$":  # a whole value: as the presenter tells it (not its wrapper)
            old = MISSING if change.kind == "added" else change.old
            new = MISSING if change.kind == "removed" else change.new
            told = teller.value_rows(change.primitive, change.key, old, new, [change])
        else:
            label = teller.key_label(change.primitive, change.key)
            told = [
                _StoredRow(
                    change,
                    label,
                    teller.hidden(change),
                    change.path,
                    change.kind,
                    change.old,
                    change.new,
                )
            ]
        rows += [_decoded(teller, row, memo) for row in told]
    note = (
        '<div style="color:#666"><i>paths as stored; <code>rewinddb.notebook.show_diff'
        "(db, a, b)</code> tells them in the value's own shape</i></div>"
    )
    return diff_rows_html(diff.a, diff.b, rows) + note


def _decoded(teller: Teller, row: Row, memo: dict[Any, Any]) -> Row:
    """``row`` with its values decoded (``Teller.display``) when it holds them as the
    store's change does; a row the presenter told its own way is decoded already."""
    change = row.change
    if row.old is not change.old or row.new is not change.new:
        return row
    return _StoredRow(
        change,
        row.label,
        row.hidden,
        row.path,
        row.kind,
        teller.display(row.old, memo),
        teller.display(row.new, memo),
    )


def _named(branch: str) -> Branch:
    """A stand-in record of the branch called ``branch``, for asking which presenter
    claims it where only its name is at hand (a ``Diff`` holds its points' names)."""
    return Branch(branch, None, 0, _EPOCH, 0, 0, None)


def changes_table(rows: Iterable[tuple[Change, str, bool]]) -> str:
    """Diff rows ``(change, what to call its key, muted)`` as a colored table (+ added,
    - removed, ~ changed old -> new); muted rows (bookkeeping) are greyed."""
    cells = []
    for change, label, muted in rows:
        mark, background, color = _KIND_STYLE[change.kind]
        if change.kind == "changed":
            values = f"{_cell_value(change.old)} &rarr; {_cell_value(change.new)}"
        else:
            values = _cell_value(change.new if change.kind == "added" else change.old)
        style = f"background:{background};color:{color}" + (";opacity:0.55" if muted else "")
        cells.append(
            f'<tr style="{style}">'
            f'<td style="{_TAG_CELL}">{mark}</td>'
            f'<td style="{_TAG_CELL}">{escape(change.primitive)}</td>'
            f'<td style="{_NAME_CELL}">{escape(label)}</td>'
            f'<td style="{_NAME_CELL}">{escape(change.path)}</td>'
            f'<td style="{_CELL}">{values}</td></tr>'
        )
    return f'<table style="{_TABLE};width:100%">{"".join(cells)}</table>'


def json_html(value: Any, limit: int = MAX_RAW_CHARS) -> str:
    """``value`` as indented JSON text (bytes as their length), escaped and wrapped,
    cut past ``limit`` characters: stored data shown exactly as stored."""
    text = orjson.dumps(value, default=_bytes_text, option=orjson.OPT_INDENT_2).decode()
    if len(text) > limit:
        text = f"{text[:limit]}\n… ({len(text):,} characters in all)"
    return (
        f'<pre style="{WRAP};font-size:12px;margin:0;max-height:40em;overflow:auto">'
        f"{escape(text)}</pre>"
    )


def _bytes_text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(value)} bytes>"
    raise TypeError(f"{type(value).__name__} is not JSON")


def event_html(event: Event) -> str:
    """One event: sequence, type, version, time, branch and payload."""
    origin = f" (carried from {escape(event.origin[0])} #{event.origin[1]})" if event.origin else ""
    payload = (
        f"<div><i>[erased at version {event.erased_at}]</i></div>"
        if event.erased_at is not None
        else value_tree(event.payload, "payload")
    )
    return (
        f"<div><b>#{event.sequence}</b> <code>{escape(event.event_type)}</code> "
        f"at version {event.version}, {escape(event.timestamp.isoformat(timespec='seconds'))}"
        f" on <b>{escape(event.branch)}</b>{origin}</div>{payload}"
    )


def database_html(path: str, version: int | None, branches: Iterable[Branch] = ()) -> str:
    """A database: its path, clock and branch table (``version`` None: it is closed)."""
    if version is None:
        return f"<div>rewinddb database <code>{escape(path)}</code> (closed)</div>"
    rows = "".join(
        f'<tr><td style="{_CELL}">{escape(b.name)}</td>'
        f'<td style="{_CELL}">{escape(b.parent or "-")}</td>'
        f'<td style="{_CELL}">{b.forked_at}</td><td style="{_CELL}">{b.head}</td>'
        f'<td style="{_CELL}">{b.commits}</td></tr>'
        for b in branches
    )
    header = "".join(
        f'<th style="{_CELL}">{name}</th>'
        for name in ("branch", "parent", "forked at", "head", "commits")
    )
    return (
        f"<div>rewinddb database <code>{escape(path)}</code> at version "
        f'{version}</div><table style="{_TABLE}"><tr>{header}</tr>{rows}</table>'
    )


def view_html(info: Branch, events: int, snapshot: dict[str, Any]) -> str:
    """A branch view: where the branch came from (``info``), how many ``events`` its log
    holds, and its state now (``snapshot``, as ``view.snapshot()`` returns it)."""
    parent = (
        f", forked from <b>{escape(info.parent)}</b> at version {info.forked_at}"
        if info.parent
        else ""
    )
    teller = teller_for(info)
    state = state_html(snapshot) if teller is None else told_state_html(teller, snapshot)
    return (
        f"<div>branch <b>{escape(info.name)}</b>{parent}; head version {info.head}, "
        f"{plural(events, 'event')}</div>{state}"
    )


def told_state_html(teller: Teller, snapshot: dict[str, Any]) -> str:
    """A branch's state as its presenter names and shows it: each key as a first write
    (``Presenter.value_rows``: a LangGraph channel by its name, its value decoded, not the
    stored wrapper), the bookkeeping keys counted, not shown."""
    memo: dict[Any, Any] = {}
    parts = []
    for space in ("kv", "json", "state"):
        values = snapshot.get(space, {})
        shown, hidden = [], 0
        for key, value in values.items():
            change = Change(space, key, "$", "added", None, value)
            for row in teller.value_rows(space, key, MISSING, value, [change]):
                if row.hidden:
                    hidden += 1
                elif row.new is value:  # told as stored: decoded here
                    shown.append(_tree(teller.display(value, memo), row.label, 1))
                else:
                    shown.append(_tree(row.new, row.path, 1))
        note = f"; {plural(hidden, 'bookkeeping key')} hidden" if hidden else ""
        title = f"<b>{space}</b> ({plural(len(shown), 'key')}{note})"
        parts.append(_details(title, "".join(shown) or "<i>empty</i>", bool(shown)))
    return "".join(parts)
