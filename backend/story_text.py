"""The story as a terminal prints it (``rewinddb story``): the attempts, and one
attempt's conversation and steps, in the words the explorer uses (``story``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import story
from ._values import short_text
from .database import Database
from .diff import Diff, Point
from .errors import BranchNotFound, InvalidInputError
from .presenters import DiffRow, Fork, Message, Presenter, Step, payload_text
from .rendering import plural

#: How much of a message or an outcome a line shows.
TEXT_CHARS = 300


def _short(text: str, limit: int = TEXT_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def attempt_branch(db: Database, name: str) -> str:
    """The branch ``name`` means: a branch of that name, else the one attempt titled so
    (a LangGraph thread by its thread id)."""
    try:
        if db.branches.exists(name):
            return name
    except InvalidInputError:
        pass  # no branch can be called so (empty, too long): a title still may be
    titled = [a.branch.name for a in story.attempts(db) if a.summary.title == name]
    if len(titled) == 1:
        return titled[0]
    if titled:
        raise InvalidInputError(
            f"{len(titled)} attempts are called {name!r}: name one by its branch "
            f"({', '.join(titled)})",
            code="invalid.branch",
        )
    raise BranchNotFound(
        f"no attempt or branch is called {name!r}; `rewinddb story PATH` lists them",
        branch=name,
    )


def branch_named(db: Database, name: str) -> str:
    """The branch a command's or a helper's argument names: a branch, or an attempt by
    its title (``attempt_branch``); a name neither is stays as given, so that the
    store's own read says why (no such branch, deleted when)."""
    try:
        return attempt_branch(db, name)
    except BranchNotFound:
        return name


def attempts_lines(attempts: list[story.Attempt]) -> Iterator[str]:
    """Each attempt: its title, kind and status, where it came from, how it ended."""
    titles = {attempt.branch.name: attempt.summary.title for attempt in attempts}
    for attempt in attempts:
        summary = attempt.summary
        current = ", current" if summary.current == attempt.branch.name else ""
        yield f"{summary.title}  ({summary.kind}, {story.status_text(summary)}{current})"
        if summary.title != attempt.branch.name:
            yield f"  branch   {attempt.branch.name}"
        if summary.fork is not None:
            yield f"  from     {summary.fork.label}"
        if summary.current is not None and summary.current != attempt.branch.name:
            yield f"  now on   {titles.get(summary.current, summary.current)}"
        if summary.outcome:
            yield f"  outcome  {_short(summary.outcome)}"


def current_title(db: Database, told: story.BranchStory) -> str | None:
    """The title of the attempt ``told``'s thread continues on (None: this one), as the
    list of attempts names it."""
    current = told.summary.current
    if current is None or current == told.branch.name:
        return None
    branch = db.branches.get(current)
    return story.presenter_of(db, current).summary(db, branch).title


def story_lines(told: story.BranchStory, continues_on: str | None = None) -> Iterator[str]:
    """One attempt: its summary, then its conversation (if it has one) and its steps,
    the newest page of each, oldest first (``continues_on``: the title of the attempt
    its thread continues on, ``current_title``'s; else that attempt's branch name)."""
    summary, fork = told.summary, told.summary.fork
    current = ", current" if summary.current == told.branch.name else ""
    yield f"{summary.kind} {summary.title} - {story.status_text(summary)}{current}"
    yield f"  branch   {told.branch.name}"
    if summary.current is not None and summary.current != told.branch.name:
        yield f"  now on   {continues_on or summary.current} (its thread continues there)"
    if fork is not None:
        yield f"  from     {fork.label}"
    if summary.outcome:
        yield f"  outcome  {_short(summary.outcome)}"
    transcript = told.transcript
    if transcript is not None and transcript.total:
        yield ""
        yield f"conversation ({_page_words(len(transcript.messages), transcript.total, 'message')})"
        for said in story.chat(transcript, fork):
            yield from _chat_lines(said)
    page = told.steps
    yield ""
    yield f"steps ({_page_words(len(page.steps), page.total, 'step')})"
    for row in story.step_items(page, fork, newest=page.newer is None):
        if row.step is not None:
            yield _step_line(row.step)
        elif row.fork is not None:
            yield _fork_line(row.fork)


def _page_words(shown: int, total: int, noun: str) -> str:
    plural = noun if total == 1 else noun + "s"
    return f"{total:,} {plural}" if shown == total else f"the last {shown:,} of {total:,} {plural}"


def _chat_lines(item: story.ChatItem) -> Iterator[str]:
    if item.message is not None:
        yield from _message_lines(item.message, item.inherited, item.pending)
    elif item.interrupt is not None:
        question, _rest = story.question_text(item.interrupt)
        asked = f"  ? {item.interrupt.node or 'the graph'} asks: {_short(question)}"
        if item.interrupt.resumed:
            asked += f" -> answered {_short(payload_text(item.interrupt.resume), 120)}"
        else:
            asked += " (waiting for an answer)"
        yield asked
    elif item.fork is not None:
        yield _fork_line(item.fork)


def _message_lines(message: Message, inherited: bool, pending: str) -> Iterator[str]:
    role = story.role_of(message)
    name = message.role if role == "other" else role
    mark = "  " if not inherited else "  ."  # (said before the fork point)
    if message.text:
        yield f"{mark}{name:6} {_short(message.text)}"
    for call in message.tool_calls:
        arguments = _short(payload_text(call.arguments), 120)
        result = pending if call.result is None else _short(call.result, 160)
        yield f"{mark}{name:6} calls {call.name}({arguments}) -> {result}"


def _step_line(step: Step) -> str:
    where = f" (on {step.branch})" if step.inherited else ""
    source = f" [{step.source}]" if step.source else ""
    return f"  {step.number:>4}  {_short(step.label, 80)}{source}  v{step.version}{where}"


def _fork_line(fork: Fork) -> str:
    return f"  ---- {fork.label} ----"


def point_label(db: Database, teller: Presenter, point: Point, title: str) -> str:
    """A diff's side as people name it: the attempt's title and the step its state is
    of (``t1 (step 3, version 15)``), or the version read where no step holds it."""
    page = teller.steps(db, point.branch, before=point.version + 1, limit=1)
    if not page.steps:
        return f"{title} (version {point.version})"
    step = page.steps[-1]
    return f"{title} (step {step.number}, version {step.version})"


def diff_lines(
    diff: Diff, rows: tuple[DiffRow, ...], headers: tuple[str, str], teller: Presenter
) -> Iterator[str]:
    """A diff as its branches' presenter tells it (``story.diff_rows``), between the
    sides ``headers`` names (``point_label``): one line per row people read (``~
    messages[2]: "hotel" -> "hostel"``, a message as ``teller`` reads it: ``+
    messages[4]: ai: It is sunny.``), the stored changes it leaves out (bookkeeping, the
    fields inside a message told whole) counted."""

    def text(value: Any) -> str:
        told = teller.value_text(value)
        return _short(told) if told is not None else short_text(value)

    yield f"--- {headers[0]}"
    yield f"+++ {headers[1]}"
    shown = [row for row in rows if not row.hidden]
    for row in shown:
        if row.kind == "added":
            yield f"+ {row.path}: {text(row.new)}"
        elif row.kind == "removed":
            yield f"- {row.path}: {text(row.old)}"
        else:
            yield f"~ {row.path}: {text(row.old)} -> {text(row.new)}"
    kinds = [row.kind for row in shown]
    hidden = len(rows) - len(shown)
    line = (
        f"{plural(len(shown), 'change')}: {kinds.count('added')} added, "
        f"{kinds.count('removed')} removed, {kinds.count('changed')} changed"
        if shown
        else "no changes"
    )
    if hidden:
        line += f" ({plural(hidden, 'more stored change')} not shown: --stored shows them)"
    yield line
