"""HTML of the story models (``rewinddb.story``) for the explorer widget's panels.

The widget renders what the web explorer renders: a branch's summary, its conversation
(messages by role, tool calls as cards with their results, interrupts as approval
cards), its steps, one step opened (its diff with the bookkeeping set apart, the state
as of it) and two attempts compared. Everything shown is agent state, so every text
goes through ``html.escape``; values are decoded already (the story models do that),
so they are rendered as they are, never decoded again. Long text wraps.
"""

from __future__ import annotations

from html import escape
from typing import Any

import rewinddb
from rewinddb import Change, presenters, rendering, story
from rewinddb.presenters import (
    STATE_KEYS,
    Fork,
    Interrupt,
    Message,
    Step,
    StepPage,
    Summary,
    ToolCall,
    Transcript,
    Wrote,
)
from rewinddb.rendering import WRAP, plural, value_text
from rewinddb.story import DiffRow, StepDetail, StoryComparison

#: Diff rows a step shows of each kind before "N more".
DIFF_ROWS = 200
#: The role of the message a presenter tells a failed task by (LangGraph's error
#: write): a step lists it with its messages, but it is not one the agent said.
FAILED_ROLE = "error"

_MUTED = "color:#666"
_CARD = f"border:1px solid #ddd;border-radius:6px;padding:4px 8px;margin:4px 0;{WRAP}"
_STATUS_COLOR = {
    "finished": "#22863a",
    "interrupted": "#b08800",
    "failed": "#b31d28",
    "open": "#0366d6",
    "empty": "#666",
}
_ROLE_STYLE = {
    "human": ("#0366d6", "#f1f8ff"),
    "ai": ("#22863a", "#f0fff4"),
    "tool": ("#6f42c1", "#f8f5ff"),
    "system": ("#666", "#f6f8fa"),
}


def message(text: str, *, error: bool = False) -> str:
    """A line of text for the widget (red for a problem)."""
    color = "#b31d28" if error else "#555"
    return f'<div style="color:{color};{WRAP}">{escape(text)}</div>'


def _text(value: Any) -> str:
    """A string as escaped text; anything else as escaped JSON."""
    return escape(value) if isinstance(value, str) else value_text(value)


def _badge(text: str, color: str) -> str:
    return (
        f'<span style="border:1px solid {color};color:{color};border-radius:8px;'
        f'padding:0 6px;font-size:11px">{escape(text)}</span>'
    )


# -- the branch ---------------------------------------------------------------------


def summary_html(summary: Summary) -> str:
    """What the branch is and how it ended: kind, status, outcome, where it came from."""
    status = story.status_text(summary)
    parts = [
        f"<b>{escape(summary.title)}</b>",
        _badge(summary.kind, "#555"),
        _badge(status, _STATUS_COLOR.get(summary.status, "#555")),
    ]
    if summary.internal:
        parts.append(_badge("internal", "#999"))
    if summary.current == summary.branch:
        parts.append(_badge("current", "#1e40af"))
    if summary.title != summary.branch:
        parts.append(f'<code style="{_MUTED}">{escape(summary.branch)}</code>')
    lines = [" ".join(parts)]
    if summary.fork is not None:
        lines.append(f'<div style="{_MUTED}">&#8627; {escape(summary.fork.label)}</div>')
    if summary.current is not None and summary.current != summary.branch:
        lines.append(
            f'<div style="{_MUTED}">its thread continues on '
            f"<code>{escape(summary.current)}</code> now</div>"
        )
    if summary.outcome is not None:
        lines.append(f"<div><b>outcome</b>: {escape(summary.outcome)}</div>")
    return f'<div style="{WRAP}">{"".join(f"<div>{line}</div>" for line in lines)}</div>'


# -- the conversation ---------------------------------------------------------------


def tool_call_html(call: ToolCall, pending: str = story.NO_RESULT) -> str:
    """A tool call as a card: the tool, its arguments and, once it answered, the result
    (else ``pending``: none yet, or one that came after the fork point)."""
    result = (
        f'<div><span style="{_MUTED}">result</span> {escape(call.result)}</div>'
        if call.result is not None
        else f'<div style="{_MUTED}"><i>{escape(pending)}</i></div>'
    )
    ident = f' <span style="{_MUTED}">{escape(call.id)}</span>' if call.id else ""
    return (
        f'<div style="{_CARD};background:#fff" data-kind="tool-call">'
        f'<span style="{_MUTED}">tool call</span> <b>{escape(call.name)}</b>{ident}'
        f'<div><code style="{WRAP}">{value_text(call.arguments)}</code></div>{result}</div>'
    )


def interrupt_html(interrupt: Interrupt) -> str:
    """An interrupt as an approval card: the question, who asked, the answer (or none yet)."""
    asked = f" &middot; asked by <b>{escape(interrupt.node)}</b>" if interrupt.node else ""
    question, rest = story.question_text(interrupt)
    details = f'<div><code style="{WRAP}">{value_text(rest)}</code></div>' if rest else ""
    answer = (
        f'<div><span style="{_MUTED}">answered</span> {_text(interrupt.resume)}</div>'
        if interrupt.resumed
        else '<div style="color:#b08800"><i>waiting for an answer</i></div>'
    )
    return (
        f'<div style="{_CARD};border-color:#b08800;background:#fffbdd" data-kind="approval">'
        f"<b>approval</b>{asked}<div>{escape(question)}</div>{details}{answer}</div>"
    )


def message_html(item: Message, *, inherited: bool = False, pending: str = story.NO_RESULT) -> str:
    """One message: its role, its text, and the tool calls it asked for as cards."""
    role = story.role_of(item)
    color, background = _ROLE_STYLE.get(role, ("#555", "#fff"))
    who = escape(item.role) + (f" &middot; {escape(item.name)}" if item.name else "")
    if item.tool_call_id:
        who += f' <span style="{_MUTED}">answers {escape(item.tool_call_id)}</span>'
    if inherited:
        who += f' <span style="{_MUTED}">(before the fork)</span>'
    text = f"<div>{escape(item.text)}</div>" if item.text else ""
    calls = "".join(tool_call_html(call, pending) for call in item.tool_calls)
    faded = ";opacity:0.75" if inherited else ""
    return (
        f'<div style="border-left:3px solid {color};background:{background};'
        f'padding:4px 8px;margin:4px 0;{WRAP}{faded}" data-role="{role}">'
        f'<div style="color:{color};font-size:11px"><b>{who}</b></div>{text}{calls}</div>'
    )


def fork_mark(fork: Fork, *, after_inherited: bool = True) -> str:
    """The line between what a branch inherited (``after_inherited``: shown above it)
    and what it did itself."""
    above = f" above, inherited from {escape(fork.parent)};" if after_inherited else ""
    return (
        '<div style="border-top:2px dashed #b08800;color:#735c0f;margin:6px 0;'
        f'padding-top:2px;{WRAP}" data-kind="fork">&#9670; <b>fork point</b>: '
        f"{escape(fork.label)}:{above} below, this branch's own</div>"
    )


def chat_html(transcript: Transcript, fork: Fork | None = None) -> str:
    """A page of conversation as ``rewinddb.story.chat`` arranges it (the web's too):
    messages oldest first, approval cards where they were asked, the fork point marked,
    a tool result shown once, on its call's card."""
    parts = []
    for item in story.chat(transcript, fork):
        if item.kind == "fork" and item.fork is not None:
            parts.append(fork_mark(item.fork, after_inherited=item.after_inherited))
        elif item.kind == "interrupt" and item.interrupt is not None:
            parts.append(interrupt_html(item.interrupt))
        elif item.message is not None:
            parts.append(message_html(item.message, inherited=item.inherited, pending=item.pending))
    return "".join(parts)


def transcript_html(transcript: Transcript | None, fork: Fork | None = None) -> str:
    """A branch's conversation page, or a line saying it has none."""
    if transcript is None:
        return message("This branch holds no conversation: its story is its steps.")
    if not transcript.messages and not transcript.interrupts:
        return message("No messages yet.")
    end = transcript.start + len(transcript.messages)
    head = message(
        f"messages {transcript.start + 1}-{end} of {transcript.total:,}"
        if transcript.messages
        else "No messages."
    )
    return head + chat_html(transcript, fork)


# -- steps --------------------------------------------------------------------------


def step_name(step: Step) -> str:
    """One line of plain text naming a step (for the step list; no HTML)."""
    parts = [f"{step.number}. {step.label}"]
    if step.nodes and ", ".join(step.nodes) != step.label:
        parts.append(f"({', '.join(step.nodes)})")
    if step.source:
        parts.append(f"[{step.source}]")
    said = [m for m in step.messages if m.role != FAILED_ROLE]
    if said:
        parts.append(f"+{plural(len(said), 'message')}")
    failed = len(step.messages) - len(said)
    if failed:
        parts.append(f"({plural(failed, 'task')} failed)")
    if step.interrupts:
        parts.append("asks")
    if step.inherited:
        parts.append(f"(on {step.branch})")
    return " ".join(parts)


def step_names(page: StepPage, fork: Fork | None) -> list[str]:
    """The step list's lines for a page (``rewinddb.story.step_items``): the branch's
    first own step after the inherited ones carries the fork point's mark."""
    names: list[str] = []
    mark: Fork | None = None
    for item in story.step_items(page, fork, newest=False):
        if item.kind == "fork":
            mark = item.fork
        elif item.step is not None:
            name = step_name(item.step)
            names.append(f"◆ {mark.label}: {name}" if mark is not None else name)
            mark = None
    return names


def step_heading(step: Step, fork: Fork | None = None) -> str:
    """A step's heading: number, label, source, nodes, writes, and where it was written."""
    facts = [f"version {step.version}", escape(step.timestamp.isoformat(timespec="seconds"))]
    if step.source:
        facts.append(f"source {escape(step.source)}")
    if step.nodes:
        facts.append("ran " + escape(", ".join(step.nodes)))
    if step.id:
        facts.append(f"id <code>{escape(step.id)}</code>")
    lines = [
        f"<b>step {step.number}</b>: {escape(step.label)}",
        f'<span style="{_MUTED}">{"; ".join(facts)}</span>',
    ]
    if step.writes:
        lines.append(f'<span style="{_MUTED}">wrote {escape(", ".join(step.writes))}</span>')
    if step.inherited:
        lines.append(
            f'<span style="color:#735c0f">inherited: written on <b>{escape(step.branch)}</b> '
            "before this branch forked</span>"
        )
    if fork is not None and fork.step == step.version:
        lines.append(f'<span style="color:#735c0f">&#9670; fork point: {escape(fork.label)}</span>')
    return f'<div style="{WRAP}">{"<br>".join(lines)}</div>'


def _events_html(rows: list[DiffRow]) -> str:
    """The events a step appended (diff rows of the ``events`` space), one line each."""
    lines = []
    for row in rows[:DIFF_ROWS]:
        event = row.change.new if isinstance(row.change.new, dict) else {}
        lines.append(
            f'<div style="{WRAP}">#{escape(row.label)} '
            f"<code>{escape(str(event.get('event_type', '')))}</code> "
            + (
                "<i>[erased]</i></div>"
                if event.get("erased_at") is not None
                else f"<code>{value_text(event.get('payload'))}</code></div>"
            )
        )
    return "".join(lines) + _more(len(rows))


def _shown(row: DiffRow) -> Change:
    """A diff row as the presenter tells it (where in the value's own shape, decoded),
    for ``rendering.changes_table``; the stored change behind it is ``row.change``."""
    change = row.change
    return Change(change.primitive, change.key, row.path, row.kind, row.old, row.new)


def _rows_table(rows: list[DiffRow]) -> str:
    """A step's diff rows: as the presenter tells them (the web's columns: where, path,
    values) when it names a key or a place its own way, else as the store has them (a
    plain branch: space, key, path)."""
    if any(_told(row) for row in rows):
        return rendering.rows_table(rows)
    return rendering.changes_table((_shown(row), row.label, row.hidden) for row in rows)


def _told(row: DiffRow) -> bool:
    """Whether a presenter named ``row`` its own way (a channel, a path in the value)."""
    change = row.change
    return change.primitive != "events" and (row.label != change.key or row.path != change.path)


def diff_html(db: rewinddb.Database, diff: rewinddb.Diff) -> str:
    """A diff of two points as the later point's branch's presenter tells it (as the web
    explorer's compare page does: a LangGraph channel by its name, at paths in the
    value's own shape, bookkeeping folded); a plain branch's as the store has it."""
    presenter = story.presenter_of(db, diff.b.branch)
    if presenter is presenters.generic():
        return rendering.diff_html(diff)
    return rendering.diff_rows_html(diff.a, diff.b, story.diff_rows(db, presenter, diff))


def _wrote_html(wrote: tuple[Wrote, ...]) -> str:
    """What the tasks that made a step wrote: "node agent wrote channel messages: …"."""
    lines = []
    for item in wrote[:DIFF_ROWS]:
        shown = (
            "<br>".join(_said(part) for part in item.value)
            if isinstance(item.value, list) and 0 < len(item.value) <= 20
            else _said(item.value)
        )
        lines.append(f'<div style="{WRAP}">{escape(item.text)}: {shown}</div>')
    return "".join(lines) + _more(len(wrote))


def _said(value: Any) -> str:
    """A decoded value as one escaped line: a message as "ai: ...", else its JSON."""
    line = presenters.value_text(value)
    return escape(line) if line is not None else f"<code>{value_text(value)}</code>"


def _more(count: int) -> str:
    if count <= DIFF_ROWS:
        return ""
    return message(f"… and {plural(count - DIFF_ROWS, 'more row')}")


def detail_html(detail: StepDetail, *, show_hidden: bool, fork: Fork | None = None) -> str:
    """A step opened: heading, the messages and approvals it added, the events it
    appended, its diff from the step before (bookkeeping rows only when ``show_hidden``,
    greyed), each list cut at ``DIFF_ROWS``."""
    step = detail.step
    added = chat_html(Transcript(step.messages, 0, len(step.messages), step.interrupts))
    if detail.kept_from is not None:  # (the step before lies below a retention cut)
        since = f"version {detail.kept_from} (the history before it was removed by retention)"
    elif detail.previous is not None and step.parent_cut:  # (its parent was cut)
        since = f"step {detail.previous.number} (the steps between were removed by retention)"
    elif detail.previous is not None:
        since = f"step {detail.previous.number}"
    else:
        since = "the branch's start"
    hidden = detail.hidden_count
    events = [r for r in detail.visible if r.change.primitive == "events"]
    rows = [
        r
        for r in (detail.rows if show_hidden else detail.visible)
        if r.hidden or r.change.primitive != "events"
    ]
    note = ""
    if hidden:
        note = (
            f' <span style="{_MUTED}">({plural(hidden, "bookkeeping row")} '
            f"{'shown greyed' if show_hidden else 'hidden'})</span>"
        )
    if rows:
        table = _rows_table(rows[:DIFF_ROWS]) + _more(len(rows))
    elif events or hidden:
        table = "<div><i>no state changes</i></div>" if not hidden else ""
    else:
        table = "<div><i>no changes</i></div>"
    return (
        step_heading(step, fork)
        + (f"<div><b>added</b></div>{added}" if added else "")
        + (f"<div><b>wrote</b></div>{_wrote_html(detail.wrote)}" if detail.wrote else "")
        + (f"<div><b>appended</b></div>{_events_html(events)}" if events else "")
        + f"<div><b>changed since {since}</b>: {plural(len(detail.rows), 'row')}{note}</div>"
        + table
    )


def state_html(detail: StepDetail) -> str:
    """The state as of a step, decoded and named as people read it."""
    body = "".join(
        rendering.value_tree(value, name, open_levels=1, decode=False)
        for name, value in detail.state.items()
    )
    cut = ""
    if detail.partial and len(detail.state) >= STATE_KEYS:
        cut = f"<div><i>the first {STATE_KEYS} keys of each space</i></div>"
    head = f"<div><b>state as of step {detail.step.number}</b></div>"
    return head + (body or "<i>empty</i>") + cut


def raw_html(detail: StepDetail) -> str:
    """The state as of a step exactly as stored (kv, json, state), as JSON text."""
    return "<div><b>stored</b> (raw JSON)</div>" + rendering.json_html(detail.stored)


# -- compare ------------------------------------------------------------------------


def _side(title: str, summary: Summary, first: Step | None) -> str:
    step = (
        f"<div><b>first own step</b>: {escape(step_name(first))} "
        f'<span style="{_MUTED}">(version {first.version})</span></div>'
        if first is not None
        else f'<div style="{_MUTED}">no steps of its own after the shared point</div>'
    )
    outcome = escape(summary.outcome) if summary.outcome is not None else "<i>none yet</i>"
    return (
        f'<div style="flex:1 1 18em;min-width:0;{_CARD}"><div><b>{escape(title)}</b> '
        f"{_badge(summary.status, _STATUS_COLOR.get(summary.status, '#555'))}</div>"
        f"<div><b>outcome</b>: {outcome}</div>{step}</div>"
    )


def comparison_html(comparison: StoryComparison, a: str, b: str) -> str:
    """Two attempts compared: where they part (the first step and event that differ)
    and both outcomes, side by side."""
    shared = comparison.shared
    alike = f", then {plural(comparison.same_after, 'step')} alike" if comparison.same_after else ""
    lead = (
        f"<div>They share history up to <b>{escape(shared.branch)}</b> at version "
        f"{shared.version}{alike}.</div>"
    )
    if comparison.first_a is None and comparison.first_b is None:
        lead += "<div><b>No step differs.</b></div>"
    events = comparison.events
    if events.identical:
        lead += f"<div>Event logs: the same {plural(events.common_prefix, 'event')}.</div>"
    else:
        first = events.first_a or events.first_b
        side = a if events.first_a else b
        assert first is not None  # logs that are not identical part somewhere
        only_a = events.length_a - events.common_prefix
        only_b = events.length_b - events.common_prefix
        lead += (
            f"<div>Event logs: {plural(events.common_prefix, 'event')} in common; "
            f"the first that differs is <code>{escape(first.event_type)}</code> "
            f"#{first.sequence} of {escape(side)} "
            f"({only_a} only in {escape(a)}, {only_b} only in {escape(b)}).</div>"
        )
    if not comparison.compared_all:
        lead += message("Only the oldest steps after the shared point were compared.")
    return (
        f'<div style="{WRAP}">{lead}</div><div style="display:flex;flex-wrap:wrap;gap:0.5em">'
        + _side(a, comparison.a, comparison.first_a)
        + _side(b, comparison.b, comparison.first_b)
        + "</div>"
    )
