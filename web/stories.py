"""What the story pages show: ``rewinddb.story``'s models (the ones the notebook widget
renders too) with what a page adds to them: links, where the fork point falls among the
steps and messages, which tool messages a call's card already shows.

Nothing here reads state or asks a framework anything: the presenters describe, the
models gather, this arranges. The ``.json`` twins are ``rewinddb.presenters.to_dict`` of
the same models plus these arrangements' facts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import rewinddb
from rewinddb import story
from rewinddb.presenters import (
    STEPS_PAGE,
    Fork,
    Interrupt,
    Message,
    Step,
    StepPage,
    Summary,
    Transcript,
    payload_text,
    to_dict,
)

from .urls import branch_url, step_url

#: The roles a message is drawn as; any other role is drawn as ``other`` (and named).
ROLES = frozenset({"human", "ai", "tool", "system"})
_ROLE_NAMES = {"user": "human", "assistant": "ai"}
#: Diff rows a step page or a comparison shows before "N more" (the JSON has them all).
DIFF_ROWS = 200


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
        if not marked and own and (seen_inherited or first_page):
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


def fork_step_url(fork: Fork | None, db: rewinddb.Database) -> str | None:
    """Where the fork's label leads: the parent's step it continues from (or the parent,
    when its presenter names no step), while the parent exists."""
    if fork is None or not db.branches.exists(fork.parent):
        return None
    return branch_url(fork.parent) if fork.step is None else step_url(fork.parent, fork.step)


def branch_story(
    db: rewinddb.Database,
    branch: str,
    *,
    steps_before: int | None = None,
    messages_before: int | None = None,
    limit: int = STEPS_PAGE,
) -> dict[str, Any]:
    """The branch page's story: summary, a page of steps, a page of the conversation.
    ``unavailable`` says why there are no steps (an ancestor they were read on was
    deleted)."""
    with db.read():
        unavailable = None
        try:
            told = story.branch_story(
                db, branch, before=steps_before, limit=limit, transcript_before=messages_before
            )
        except rewinddb.BranchNotFound as error:
            if not db.branches.exists(branch):
                raise
            told = _without_steps(db, branch)
            unavailable = f"its steps cannot be read: {error.message}"
        fork = told.summary.fork
        parent_live = told.branch.parent is not None and db.branches.exists(told.branch.parent)
        return {
            "story": told,
            "summary": told.summary,
            "status": status_text(told.summary),
            "steps": step_items(told.steps, fork, newest=steps_before is None),
            "chat": None if told.transcript is None else chat(told.transcript, fork),
            # Steps of a plain branch have no source or messages: no columns for them.
            "plain": told.transcript is None,
            "fork_url": fork_step_url(fork, db),
            "parent_live": parent_live,
            "url": branch_url(branch),
            "unavailable": unavailable,
        }


def _without_steps(db: rewinddb.Database, branch: str) -> story.BranchStory:
    """The story of a branch whose history cannot be read in steps (an ancestor is gone)."""
    record = db.branches.get(branch)
    summary = rewinddb.presenters.presenter_for(record).summary(db, record)
    return story.BranchStory(record, summary, StepPage((), None, 0), None)


def branch_story_json(data: dict[str, Any]) -> dict[str, Any]:
    told: story.BranchStory = data["story"]
    return {**to_dict(told), "status_text": data["status"]}


def step_page(db: rewinddb.Database, branch: str, version: int) -> dict[str, Any]:
    """A step opened: the model, its diff rows split into shown and hidden (the events it
    appended listed on their own), and the links around it."""
    with db.read():
        detail = story.step_detail(db, branch, version)
        record = db.branches.get(branch)
        summary = rewinddb.presenters.presenter_for(record).summary(db, record)
    events = [row for row in detail.rows if row.change.primitive == "events"]
    state_rows = [row for row in detail.rows if row.change.primitive != "events"]
    shown = [row for row in state_rows if not row.hidden]
    hidden = [row for row in state_rows if row.hidden]
    return {
        "detail": detail,
        "summary": summary,
        "branch": branch,
        "step": detail.step,
        "previous": detail.previous,
        "events": events,
        "shown": shown[:DIFF_ROWS],
        "shown_more": max(len(shown) - DIFF_ROWS, 0),
        "hidden": hidden[:DIFF_ROWS],
        "hidden_more": max(len(hidden) - DIFF_ROWS, 0),
        "hidden_count": len(hidden),
        "messages": [ChatItem("message", message=m) for m in detail.step.messages],
    }


def step_page_json(data: dict[str, Any]) -> dict[str, Any]:
    detail: story.StepDetail = data["detail"]
    return {
        **to_dict(detail),
        "hidden_count": detail.hidden_count,
        "visible_count": len(detail.visible),
    }


def steps_json(branch: str, page: StepPage) -> dict[str, Any]:
    return {"branch": branch, **to_dict(page)}


def transcript_json(branch: str, transcript: Transcript | None) -> dict[str, Any]:
    return {"branch": branch, "transcript": None if transcript is None else to_dict(transcript)}


def step_by_id(db: rewinddb.Database, branch: str, step_id: str) -> Step:
    """The step of ``branch`` whose framework id (a checkpoint id) is ``step_id``, as its
    presenter finds it (a ``not_found`` error when none has that id)."""
    with db.read():
        return story.presenter_of(db, branch).step_by_id(db, branch, step_id)
