"""What the front ends show of branches, built once from the presenters' records.

The web explorer's pages and the notebook widget render these models; neither asks a
presenter, reads state or diffs on its own, so the two always tell the same story: a
branch as its steps and conversation (:func:`branch_story`), one step as the state as
of it and what it changed with the bookkeeping set apart (:func:`step_detail`), two
attempts side by side (:func:`compare_stories`), and the attempts of a database with
their outcomes (:func:`attempts`). :func:`chat` and :func:`step_items` arrange a page
of them the way both draw it (the fork point marked, a tool result shown once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import presenters
from .diff import Change, Point
from .events import EventLogDiff, diff_event_logs
from .models import Branch
from .presenters import (
    STEPS_PAGE,
    Fork,
    Interrupt,
    Message,
    Presenter,
    Step,
    StepPage,
    Summary,
    Transcript,
    payload_text,
)

if TYPE_CHECKING:
    from .database import Database

#: Steps a comparison reads of each side, at most, to find the first that differs.
COMPARE_STEPS = 2000


@dataclass(frozen=True)
class DiffRow:
    """One row of a step's diff: the change, what a person calls its key, and whether
    the presenter counts it as bookkeeping (hidden until asked for)."""

    change: Change
    label: str
    hidden: bool


class _DiffRows:
    """Diff rows split as the pages show them: the visible ones, and how many are hidden."""

    rows: tuple[DiffRow, ...]

    @property
    def visible(self) -> tuple[DiffRow, ...]:
        return tuple(row for row in self.rows if not row.hidden)

    @property
    def hidden_count(self) -> int:
        return sum(row.hidden for row in self.rows)


@dataclass(frozen=True)
class StepDetail(_DiffRows):
    """One step opened: the state as of it (decoded and named as people read it, and as
    stored), and its diff from the step before (from the branch's start for its first)."""

    branch: str
    presenter: str
    step: Step
    previous: Step | None
    state: dict[str, Any]
    stored: dict[str, Any]
    rows: tuple[DiffRow, ...]


@dataclass(frozen=True)
class BranchStory:
    """A branch as its presenter tells it: the summary, one page of steps, and (for a
    conversation) one page of its transcript."""

    branch: Branch
    summary: Summary
    steps: StepPage
    transcript: Transcript | None


@dataclass(frozen=True)
class Attempt:
    """An overview row: a branch, what it is and how it ended."""

    branch: Branch
    summary: Summary


@dataclass(frozen=True)
class StoryComparison(_DiffRows):
    """Two attempts side by side: their summaries (outcomes), the point their histories
    share, and from there the steps each took. Steps after that point that did the same
    thing (the same ``Presenter.fingerprint``, at other versions) count as shared too, so
    ``first_a``/``first_b`` are the first steps where each went its own way; the event
    logs are compared by content."""

    a: Summary
    b: Summary
    shared: Point
    """The newest point both histories contain (``db.common_point``)."""
    same_after: int
    """Steps after ``shared`` that both sides took alike, before they part."""
    first_a: Step | None
    first_b: Step | None
    events: EventLogDiff
    compared_all: bool
    """False when a side took more than ``COMPARE_STEPS`` steps after ``shared`` (only
    the oldest that many were compared)."""
    rows: tuple[DiffRow, ...] = ()
    """The state diff from a to b, labelled and set apart as ``b``'s presenter says."""
    point_a: Point | None = None
    point_b: Point | None = None
    """The two points compared, their versions resolved (a head is its version then)."""


# -- how a page arranges a story (the web and the widget draw these) ---------------

#: The roles a message is drawn as; any other role is drawn as ``other`` (and named).
ROLES = frozenset({"human", "ai", "tool", "system"})
_ROLE_NAMES = {"user": "human", "assistant": "ai"}


@dataclass(frozen=True)
class ChatItem:
    """One thing in the conversation column: a message, an approval card, or the mark
    of the fork point (``fork``)."""

    kind: str  # "message", "interrupt" or "fork"
    message: Message | None = None
    interrupt: Interrupt | None = None
    fork: Fork | None = None
    inherited: bool = False


@dataclass(frozen=True)
class StepItem:
    """One row of the steps list: a step, or the mark of the fork point."""

    kind: str  # "step" or "fork"
    step: Step | None = None
    fork: Fork | None = None


def role_of(message: Message) -> str:
    """The role a message is drawn as (``human``, ``ai``, ``tool``, ``system``, ``other``)."""
    role = _ROLE_NAMES.get(message.role, message.role)
    return role if role in ROLES else "other"


def question_text(interrupt: Interrupt) -> tuple[str, Any]:
    """An interrupt's question as (the text a person reads, the rest of it or None):
    ``{"question": "Book it?", "args": {...}}`` reads "Book it?" with the args beside."""
    question = interrupt.question
    if isinstance(question, str):
        return question, None
    text = interrupt.text
    if isinstance(question, dict):
        for field in ("question", "message", "text", "prompt"):
            if isinstance(question.get(field), str) and text in (None, question[field]):
                rest = {key: value for key, value in question.items() if key != field}
                return question[field], rest or None
    if text is not None:
        return text, question
    return payload_text(question), None


def status_text(summary: Summary) -> str:
    """``finished``, ``interrupted, waiting on approve``, ``open``, ..."""
    if summary.status == "interrupted" and summary.waiting_on:
        return f"interrupted, waiting on {summary.waiting_on}"
    return summary.status


def _inherited(message: Message, fork: Fork | None) -> bool:
    return fork is not None and message.step is not None and message.step <= fork.version


def chat(transcript: Transcript, fork: Fork | None) -> list[ChatItem]:
    """A page of the conversation as the column shows it: messages oldest first, each
    interrupt before the first message that came after it, the fork point marked
    between the inherited messages and the branch's own. A tool message is left out
    when a call's card on this page already shows it as that call's result."""
    messages = transcript.messages
    answered = {
        call.id
        for message in messages
        for call in message.tool_calls
        if call.id is not None and call.result is not None
    }
    first_page = transcript.start == 0
    newest_page = transcript.start + len(messages) >= transcript.total
    steps = [m.step for m in messages if m.step is not None]
    low = -math.inf if first_page or not steps else min(steps)
    high = math.inf if newest_page or not steps else max(steps)
    waiting = sorted(
        (i for i in transcript.interrupts if i.step is None or low <= i.step <= high),
        key=lambda i: math.inf if i.step is None else i.step,
    )
    items: list[ChatItem] = []
    marked = fork is None
    seen_inherited = False
    for message in messages:
        while (
            waiting
            and waiting[0].step is not None
            and (message.step is not None and waiting[0].step < message.step)
        ):
            items.append(ChatItem("interrupt", interrupt=waiting.pop(0)))
        inherited = _inherited(message, fork)
        # A message whose step is unknown cannot say which side of the fork it is on.
        own = fork is not None and message.step is not None and not inherited
        starts = first_page and fork is not None and fork.version > 0
        if not marked and own and (seen_inherited or starts):
            items.append(ChatItem("fork", fork=fork))
            marked = True
        seen_inherited = seen_inherited or inherited
        if role_of(message) == "tool" and message.tool_call_id in answered:
            continue
        items.append(ChatItem("message", message=message, inherited=inherited))
    items += [ChatItem("interrupt", interrupt=i) for i in waiting]
    if not marked and newest_page and seen_inherited:
        items.append(ChatItem("fork", fork=fork))  # nothing of its own said yet
    return items


def step_items(page: StepPage, fork: Fork | None, *, newest: bool) -> list[StepItem]:
    """A page of steps with the fork point marked between the inherited ones and the
    branch's own, where this page holds that boundary (``newest``: no page after it)."""
    items: list[StepItem] = []
    before: bool | None = None  # whether the step before this one was inherited
    for step in page.steps:
        starts = before is None and page.older is None  # the first step of all
        if fork is not None and not step.inherited and (before or starts):
            items.append(StepItem("fork", fork=fork))
        before = step.inherited
        items.append(StepItem("step", step=step))
    if fork is not None and newest and (before or not page.steps):
        items.append(StepItem("fork", fork=fork))  # nothing of its own yet
    return items


def presenter_of(db: Database, branch: str) -> Presenter:
    """The presenter of a live branch (a ``not_found`` error names a missing one)."""
    return presenters.presenter_for(db.branches.get(branch))


def attempts(db: Database, *, include_internal: bool = False) -> list[Attempt]:
    """Every live branch with its summary; integrations' bookkeeping branches and an
    empty ``default`` are left out unless ``include_internal``."""
    found = []
    with db.read():
        for branch in db.branches.list():
            summary = presenters.presenter_for(branch).summary(db, branch)
            if include_internal or not summary.internal:
                found.append(Attempt(branch, summary))
    return found


def branch_story(
    db: Database,
    branch: str,
    *,
    before: int | None = None,
    limit: int = STEPS_PAGE,
    transcript_before: int | None = None,
) -> BranchStory:
    """``branch``'s summary, the steps older than version ``before`` (None: the newest
    page) and its transcript's newest page before position ``transcript_before``."""
    with db.read():
        record = db.branches.get(branch)
        presenter = presenters.presenter_for(record)
        return BranchStory(
            record,
            presenter.summary(db, record),
            presenter.steps(db, branch, before=before, limit=limit),
            presenter.transcript(db, branch, before=transcript_before, limit=limit),
        )


def step_detail(db: Database, branch: str, version: int) -> StepDetail:
    """The step of ``branch`` at ``version`` (``not_found.step`` if none is there)."""
    with db.read():
        presenter = presenter_of(db, branch)
        step = presenter.step(db, branch, version)
        page = presenter.steps(db, branch, before=step.version, limit=1)
        previous = page.steps[-1] if page.steps else None
        if previous is not None:
            start = (previous.branch, previous.version)
        else:  # the first step: from the start of the history that holds it
            start = (step.branch, db.branches.get(step.branch).forked_at)
        diff = db.diff(start[0], step.branch, as_of_a=start[1], as_of_b=step.version, readable=True)
        rows = _rows(presenter, diff.changes)
        snapshot = db.at(step.branch).snapshot(as_of=step.version)
        return StepDetail(
            branch,
            presenter.name,
            step,
            previous,
            presenter.state(db, step),
            {space: snapshot[space] for space in ("kv", "json", "state")},
            rows,
        )


def compare_stories(
    db: Database, a: tuple[str, int | None], b: tuple[str, int | None]
) -> StoryComparison:
    """Two points (branch, version; None for its head) as two attempts."""
    with db.read():
        shared = db.common_point(a[0], b[0], as_of_a=a[1], as_of_b=b[1])
        sides = []
        complete = True
        for branch, version in (a, b):
            record = db.branches.get(branch)
            presenter = presenters.presenter_for(record)
            steps, whole = _steps_after(db, presenter, branch, version, shared.version)
            complete = complete and whole
            sides.append((presenter, presenter.summary(db, record, as_of=version), steps))
        (presenter_a, summary_a, steps_a), (presenter_b, summary_b, steps_b) = sides
        same = 0
        for left, right in zip(steps_a, steps_b, strict=False):
            if presenter_a.fingerprint(db, left) != presenter_b.fingerprint(db, right):
                break
            same += 1
        log_a = db.at(a[0]).events.list(as_of=a[1])
        log_b = db.at(b[0]).events.list(as_of=b[1])
        diff = db.diff(a[0], b[0], as_of_a=a[1], as_of_b=b[1], readable=True)
        return StoryComparison(
            summary_a,
            summary_b,
            shared,
            same,
            steps_a[same] if same < len(steps_a) else None,
            steps_b[same] if same < len(steps_b) else None,
            diff_event_logs(log_a, log_b),
            complete,
            _rows(presenter_b, diff.changes),
            diff.a,
            diff.b,
        )


def _rows(presenter: Presenter, changes: list[Change]) -> tuple[DiffRow, ...]:
    return tuple(
        DiffRow(change, presenter.key_label(change.primitive, change.key), presenter.hidden(change))
        for change in changes
    )


def _steps_after(
    db: Database, presenter: Presenter, branch: str, version: int | None, after: int
) -> tuple[list[Step], bool]:
    """The steps of ``branch`` up to ``version`` newer than version ``after``, oldest
    first (at most ``COMPARE_STEPS``: the oldest ones), and whether that is all."""
    pages: list[tuple[Step, ...]] = []
    before = None if version is None else version + 1
    read, reached = 0, False
    while not reached and read < 2 * COMPARE_STEPS:
        page = presenter.steps(db, branch, before=before, limit=STEPS_PAGE)
        newer = tuple(step for step in page.steps if step.version > after)
        pages.append(newer)
        read += len(newer)
        reached = len(newer) < len(page.steps) or page.older is None
        before = page.older
    steps = [step for page_steps in reversed(pages) for step in page_steps]
    return steps[:COMPARE_STEPS], reached and len(steps) <= COMPARE_STEPS
