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

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from . import presenters
from ._values import same
from .diff import Diff, KeyVersion, Point
from .errors import EventNotFound, HistoryUnavailableError, NotFoundError
from .models import Branch, Event
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
    Wrote,
    payload_text,
)
from .presenters import DiffRow as DiffRow

if TYPE_CHECKING:
    from .database import Database
    from .events import Events

#: Steps after the shared point a comparison compares, at most, to find the first that
#: differs (steps are read a page at a time, and only until they differ).
COMPARE_STEPS = 2000
#: The first page of steps a comparison reads of each side (pages then double, up to
#: ``STEPS_PAGE``): attempts most often part at their first step.
_FIRST_PAGE = 4


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
    wrote: tuple[Wrote, ...] = ()
    """What the tasks that made it wrote, as the presenter tells it (``Presenter.wrote``:
    "node agent wrote channel messages"); the raw events are among ``rows``."""
    partial: tuple[str, ...] = ()
    """The spaces that hold more than ``presenters.STATE_KEYS`` keys: ``stored`` (and a
    plain branch's ``state``) shows the first of them only."""
    kept_from: int | None = None
    """The version the diff starts at when the step before it (or its branch's start)
    lies below a retention cut: the branch's history is kept from there on (else None,
    and the diff starts at ``previous``)."""


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
class LogSplit:
    """Where two event logs part, events compared by what they say (type and payload):
    how many both begin with, each log's length, and each side's first event after
    those (None where a log ends there)."""

    common_prefix: int
    length_a: int
    length_b: int
    first_a: Event | None
    first_b: Event | None

    @property
    def identical(self) -> bool:
        return self.length_a == self.length_b == self.common_prefix

    @property
    def differing(self) -> int:
        """Events after the common prefix, both sides together."""
        return self.length_a + self.length_b - 2 * self.common_prefix


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
    events: LogSplit
    compared_all: bool
    """False when the first ``COMPARE_STEPS`` steps after ``shared`` were alike and a
    side took more (those were not compared)."""
    rows: tuple[DiffRow, ...] = ()
    """The state diff from a to b (the events left out: ``events`` compares the logs),
    labelled and set apart as ``b``'s presenter says."""
    point_a: Point | None = None
    point_b: Point | None = None
    """The two points compared, their versions resolved (a head is its version then)."""


@dataclass(frozen=True)
class KeyStep:
    """One version of a key as its presenter tells it: the store's version (its entry and
    changes), its rows in the value's own shape, and the step it was written at."""

    version: KeyVersion
    rows: tuple[DiffRow, ...]
    step: Step | None


@dataclass(frozen=True)
class KeyStory:
    """A key's history in the agent's words (a LangGraph channel's values by step):
    ``title`` is what the presenter calls the key; ``versions`` oldest first."""

    branch: str
    primitive: str
    key: str
    title: str
    versions: tuple[KeyStep, ...]


# -- how a page arranges a story (the web and the widget draw these) ---------------

#: The roles a message is drawn as; any other role is drawn as ``other`` (and named).
ROLES = frozenset({"human", "ai", "tool", "system"})
_ROLE_NAMES = {"user": "human", "assistant": "ai"}


#: What a tool call with no result shows: none yet, or one the branch got after its
#: fork point for a call it inherited (shown below the fork point's mark).
NO_RESULT = "no result yet"
AFTER_FORK = "its result came after the fork point"


@dataclass(frozen=True)
class ChatItem:
    """One thing in the conversation column: a message, an approval card, or the mark
    of the fork point (``fork``)."""

    kind: str  # "message", "interrupt" or "fork"
    message: Message | None = None
    interrupt: Interrupt | None = None
    fork: Fork | None = None
    inherited: bool = False
    after_inherited: bool = False
    """Of the fork point's mark: inherited messages come before it (a branch that
    inherited none, a subgraph's, has only its own below)."""
    pending: str = NO_RESULT
    """What a tool call of the message with no result shows in its place."""


@dataclass(frozen=True)
class StepItem:
    """One row of the steps list: a step, or the mark of the fork point."""

    kind: str  # "step" or "fork"
    step: Step | None = None
    fork: Fork | None = None
    after_inherited: bool = False
    """Of the fork point's mark: inherited steps come before it."""


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
    between the inherited messages (and interrupts) and the branch's own. A tool
    message is left out when a call's card on this page already shows it as that
    call's result, on the same side of the fork: a result the branch got itself for a
    call it inherited stays a message of its own, below the mark, and the call's card
    above it shows no result."""
    messages = transcript.messages
    sides = {  # (call id -> whether the message that asked for it was inherited)
        call.id: _inherited(message, fork)
        for message in messages
        for call in message.tool_calls
        if call.id is not None and call.result is not None
    }
    crossing = {  # the calls whose result message is on the other side of the fork
        message.tool_call_id
        for message in messages
        if role_of(message) == "tool"
        and message.tool_call_id in sides
        and sides[message.tool_call_id] != _inherited(message, fork)
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
    starts = first_page and fork is not None and fork.version > 0
    items: list[ChatItem] = []
    marked = fork is None
    seen_inherited = False

    def mark_before(step: int | None) -> None:
        """The fork point's mark, before the first thing the branch did itself (a
        message or an interrupt whose step is unknown cannot say which side it is on)."""
        nonlocal marked
        own = fork is not None and step is not None and step > fork.version
        if not marked and own and (seen_inherited or starts):
            items.append(ChatItem("fork", fork=fork, after_inherited=seen_inherited))
            marked = True

    for message in messages:
        while (
            waiting
            and waiting[0].step is not None
            and (message.step is not None and waiting[0].step < message.step)
        ):
            asked = waiting.pop(0)
            mark_before(asked.step)
            if fork is not None and asked.step is not None and asked.step <= fork.version:
                seen_inherited = True
            items.append(ChatItem("interrupt", interrupt=asked))
        inherited = _inherited(message, fork)
        mark_before(message.step)
        seen_inherited = seen_inherited or inherited
        pending = NO_RESULT
        if role_of(message) == "tool" and message.tool_call_id in sides:
            if message.tool_call_id not in crossing:
                continue
        elif any(call.id in crossing for call in message.tool_calls):
            pending = AFTER_FORK
            message = replace(
                message,
                tool_calls=tuple(
                    replace(call, result=None) if call.id in crossing else call
                    for call in message.tool_calls
                ),
            )
        items.append(ChatItem("message", message=message, inherited=inherited, pending=pending))
    for asked in waiting:
        mark_before(asked.step)
        items.append(ChatItem("interrupt", interrupt=asked))
    if not marked and newest_page and seen_inherited:
        items.append(ChatItem("fork", fork=fork, after_inherited=True))  # none of its own yet
    return items


def step_items(page: StepPage, fork: Fork | None, *, newest: bool) -> list[StepItem]:
    """A page of steps with the fork point marked between the inherited ones and the
    branch's own, where this page holds that boundary (``newest``: no page after it)."""
    items: list[StepItem] = []
    before: bool | None = None  # whether the step before this one was inherited
    for step in page.steps:
        starts = before is None and page.older is None  # the first step of all
        if fork is not None and not step.inherited and (before or starts):
            items.append(StepItem("fork", fork=fork, after_inherited=bool(before)))
        before = step.inherited
        items.append(StepItem("step", step=step))
    if fork is not None and newest and (before or not page.steps):
        items.append(StepItem("fork", fork=fork, after_inherited=bool(before)))  # none own yet
    return items


def presenter_of(db: Database, branch: str) -> Presenter:
    """The presenter of a live branch (a ``not_found`` error names a missing one)."""
    return presenters.presenter_for(db.branches.get(branch))


def attempts(db: Database, *, include_internal: bool = False) -> list[Attempt]:
    """Every live branch with its summary, each fork right after the branch it came from
    (an attempt's retries follow it, not the unrelated threads begun after it);
    integrations' bookkeeping branches and an empty ``default`` are left out unless
    ``include_internal``."""
    found = []
    with db.read():
        for branch in db.branches.list():
            summary = presenters.presenter_for(branch).summary(db, branch)
            if include_internal or not summary.internal:
                found.append(Attempt(branch, summary))
    return _by_family(found)


def _by_family(found: list[Attempt]) -> list[Attempt]:
    """``found`` (oldest first) with each branch followed by its forks, depth first; a
    branch whose parent is not listed starts a family of its own."""
    listed = {attempt.branch.name for attempt in found}
    forks: dict[str, list[Attempt]] = {}
    roots = []
    for attempt in found:
        parent = attempt.branch.parent
        if parent is None or parent not in listed or parent == attempt.branch.name:
            roots.append(attempt)
        else:
            forks.setdefault(parent, []).append(attempt)
    ordered: list[Attempt] = []
    stack = roots[::-1]
    while stack:
        attempt = stack.pop()
        ordered.append(attempt)
        stack.extend(forks.pop(attempt.branch.name, [])[::-1])
    for left in forks.values():  # a parent cycle (damage: verify names it), as listed
        ordered.extend(left)
    return ordered


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
        if previous is None and step.parent_cut:  # (no step before it is listed)
            step = replace(step, parent_cut=False)
        if previous is not None:
            start = (previous.branch, previous.version)
        else:  # the first step: from the start of the history that holds it
            start = (step.branch, db.branches.get(step.branch).forked_at)
        # A step kept as the state at a retention cut (listed below it) is read there.
        cut = _kept_from(db, step.branch, step.version)
        read_at = step.version if cut is None else cut
        kept_from = None
        try:
            diff = db.diff(start[0], step.branch, as_of_a=start[1], as_of_b=read_at, readable=True)
        except HistoryUnavailableError as error:  # retention removed the start: from its cut
            kept_from = _kept_from(db, step.branch, start[1])
            if kept_from is None:  # (the start's branch was cut, not the step's)
                kept_from = error.details.get("kept_from")
            if not isinstance(kept_from, int) or kept_from > read_at:
                raise
            diff = db.diff(
                step.branch, step.branch, as_of_a=kept_from, as_of_b=read_at, readable=True
            )
        rows = diff_rows(db, presenter, diff)
        shown = presenters.STATE_KEYS
        snapshot = db.at(step.branch).snapshot(as_of=read_at, limit=shown + 1)
        spaces = ("kv", "json", "state")
        return StepDetail(
            branch,
            presenter.name,
            step,
            previous,
            presenter.state(db, step if cut is None else replace(step, version=cut)),
            {space: dict(list(snapshot[space].items())[:shown]) for space in spaces},
            rows,
            presenter.wrote(db, step),
            tuple(space for space in spaces if len(snapshot[space]) > shown),
            kept_from,
        )


def _kept_from(db: Database, branch: str, version: int) -> int | None:
    """The version ``branch``'s history is kept from, when retention cut it above
    ``version`` (reads as of ``version`` are unavailable); else None."""
    kept_from = db.branches.kept_from(branch)
    return kept_from if kept_from is not None and kept_from > version else None


def key_story(
    db: Database,
    branch: str,
    primitive: str,
    key: str,
    versions: Sequence[KeyVersion],
    *,
    base: KeyVersion | None = None,
) -> KeyStory | None:
    """``versions`` of one key (``BranchView.key_history``'s, oldest first; ``base``:
    the version before the first, None when the first is the key's first) as
    ``branch``'s presenter tells them, each with the step it was written at; None when
    the presenter names no such key (a plain key is shown as the store holds it)."""
    with db.read():
        presenter = presenter_of(db, branch)
        title = presenter.key_title(db, branch, primitive, key)
        if title is None:
            return None
        steps = _steps_at(db, presenter, branch, [v.entry.version for v in versions])
        previous = presenters.ABSENT if base is None else _stored(base)
        found = []
        for version in versions:
            current = _stored(version)
            rows = presenter.value_rows(primitive, key, previous, current, version.changes)
            found.append(KeyStep(version, tuple(rows), steps.get(version.entry.version)))
            previous = current
        return KeyStory(branch, primitive, key, title, tuple(found))


def _stored(version: KeyVersion) -> Any:
    entry = version.entry
    return presenters.ABSENT if entry.deleted or entry.erased_at is not None else entry.value


def _steps_at(
    db: Database, presenter: Presenter, branch: str, versions: list[int]
) -> dict[int, Step]:
    """The steps of ``branch`` written at ``versions`` (those that are steps): one page
    of steps between the oldest and the newest, then each one that page did not reach."""
    if not versions:
        return {}
    wanted = set(versions)
    page = presenter.steps(
        db,
        branch,
        before=max(versions) + 1,
        after=max(min(versions) - 1, 0),
        limit=min(2 * len(versions), STEPS_PAGE * 4),
    )
    found = {step.version: step for step in page.steps if step.version in wanted}
    for version in sorted(wanted - found.keys()):
        with contextlib.suppress(NotFoundError):
            found[version] = presenter.step(db, branch, version)
    return found


def compare_stories(
    db: Database, a: tuple[str, int | None], b: tuple[str, int | None]
) -> StoryComparison:
    """Two points (branch, version; None for its head) as two attempts. Steps and events
    are read from the shared point on, and only until the sides part, so a comparison
    costs what the attempts have in common after it, not their lengths."""
    with db.read():
        shared = db.common_point(a[0], b[0], as_of_a=a[1], as_of_b=b[1])
        records = [db.branches.get(a[0]), db.branches.get(b[0])]
        tellers = [presenters.presenter_for(record) for record in records]
        summaries = [
            teller.summary(db, record, as_of=point[1])
            for teller, record, point in zip(tellers, records, (a, b), strict=True)
        ]
        same_after, first_a, first_b, complete = _where_steps_part(db, tellers, a, b, shared)
        diff = db.diff(a[0], b[0], as_of_a=a[1], as_of_b=b[1], readable=True, events=False)
        return StoryComparison(
            summaries[0],
            summaries[1],
            shared,
            same_after,
            first_a,
            first_b,
            _where_logs_part(db, a, b),
            complete,
            diff_rows(db, tellers[1], diff),
            diff.a,
            diff.b,
        )


class _Steps:
    """One side's steps after the shared point, oldest first, read a page at a time."""

    def __init__(self, db: Database, teller: Presenter, point: tuple[str, int | None], after: int):
        self._db, self._teller, self._branch = db, teller, point[0]
        self._before = None if point[1] is None else point[1] + 1
        self._after, self._page, self._ended = after, _FIRST_PAGE, False
        self._read: list[Step] = []

    def next(self) -> Step | None:
        if not self._read and not self._ended:
            page = self._teller.steps(
                self._db, self._branch, before=self._before, after=self._after, limit=self._page
            )
            self._read = [step for step in page.steps if step.version > self._after]
            self._ended = len(page.steps) < self._page
            if self._read:
                self._after = self._read[-1].version
            self._page = min(self._page * 2, STEPS_PAGE)
        return self._read.pop(0) if self._read else None


def _where_steps_part(
    db: Database,
    tellers: list[Presenter],
    a: tuple[str, int | None],
    b: tuple[str, int | None],
    shared: Point,
) -> tuple[int, Step | None, Step | None, bool]:
    """(steps alike after ``shared``, the first step of a and of b after them, whether
    everything was compared): steps are alike when their presenters' fingerprints are."""
    side_a = _Steps(db, tellers[0], a, shared.version)
    side_b = _Steps(db, tellers[1], b, shared.version)
    alike = 0
    while True:
        left, right = side_a.next(), side_b.next()
        if left is None or right is None:
            return alike, left, right, True
        if alike == COMPARE_STEPS:
            return alike, None, None, False
        if tellers[0].fingerprint(db, left) != tellers[1].fingerprint(db, right):
            return alike, left, right, True
        alike += 1


def _shared_events(
    log_a: Events, as_of_a: int | None, log_b: Events, as_of_b: int | None, most: int
) -> int:
    """How many events the two logs begin with as one history: the events' chained
    hashes are equal up to there (an equal hash means every event before it is equal
    too), so a binary search finds it in a few reads, however long the logs. An event
    retention removed from either log ends what can be shown to be shared."""

    def shared_through(sequence: int) -> bool:
        try:
            left = log_a.get(sequence, as_of=as_of_a)
            right = log_b.get(sequence, as_of=as_of_b)
        except EventNotFound:  # pruned (a log keeps its events from its cut on)
            return False
        return left.hash == right.hash

    low, high = 0, most  # the first ``low`` are shared; more than ``high`` are not
    while low < high:
        middle = (low + high + 1) // 2
        if shared_through(middle - 1):
            low = middle
        else:
            high = middle - 1
    return low


def _where_logs_part(
    db: Database, a: tuple[str, int | None], b: tuple[str, int | None]
) -> LogSplit:
    """The two logs compared by content, a page at a time, from the events both hold
    as one history on, until an event differs or a log ends."""
    log_a, log_b = db.at(a[0]).events, db.at(b[0]).events
    length_a, length_b = log_a.length(as_of=a[1]), log_b.length(as_of=b[1])
    common = _shared_events(log_a, a[1], log_b, b[1], min(length_a, length_b))
    page = _FIRST_PAGE
    while True:
        after = common - 1 if common else None
        left = [item.event for item in log_a.list(as_of=a[1], after=after, limit=page)]
        right = [item.event for item in log_b.list(as_of=b[1], after=after, limit=page)]
        for event_a, event_b in zip(left, right, strict=False):
            if event_a.event_type != event_b.event_type or not same(
                event_a.payload, event_b.payload
            ):
                return LogSplit(common, length_a, length_b, event_a, event_b)
            common += 1
        if len(left) < page or len(right) < page:
            rest_a, rest_b = left[len(right) :], right[len(left) :]
            return LogSplit(
                common,
                length_a,
                length_b,
                rest_a[0] if rest_a else None,
                rest_b[0] if rest_b else None,
            )
        page = min(page * 2, 1024)


def diff_rows(db: Database, presenter: Presenter, diff: Diff) -> tuple[DiffRow, ...]:
    """``diff``'s changes as ``presenter`` tells them (``Presenter.diff_rows``): the rows
    a step page, a comparison and the widget show, each with the store's change behind
    it."""
    return tuple(presenter.diff_rows(db, diff.a, diff.b, diff.changes))
