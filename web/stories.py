"""What the story pages show: ``rewinddb.story``'s models and arrangements (the ones the
notebook widget renders too: ``story.chat``, ``story.step_items``) with what a page
adds to them: links, paging, how many diff rows it shows.

Nothing here reads state or asks a framework anything: the presenters describe, the
models gather and arrange, this links. The ``.json`` twins are ``rewinddb.presenters.to_dict`` of
the same models plus these arrangements' facts.
"""

from __future__ import annotations

from typing import Any

import rewinddb
from rewinddb import story
from rewinddb.presenters import (
    STEPS_PAGE,
    Fork,
    Step,
    StepPage,
    Transcript,
    to_dict,
)
from rewinddb.story import ChatItem, chat, status_text, step_items

from .urls import branch_url, step_url

#: Diff rows a step page or a comparison shows before "N more" (the JSON has them all).
DIFF_ROWS = 200


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
        current = told.summary.current
        return {
            "current_title": _title_of(db, current) if current and current != branch else None,
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


def _title_of(db: rewinddb.Database, branch: str) -> str:
    """What a person calls ``branch`` (its presenter's title)."""
    record = db.branches.get(branch)
    return rewinddb.presenters.presenter_for(record).summary(db, record).title


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
        "writes": detail.wrote,
        "shown": shown[:DIFF_ROWS],
        "shown_more": max(len(shown) - DIFF_ROWS, 0),
        "hidden": hidden[:DIFF_ROWS],
        "hidden_more": max(len(hidden) - DIFF_ROWS, 0),
        "hidden_count": len(hidden),
        "messages": [ChatItem("message", message=m) for m in detail.step.messages],
        "state_keys": rewinddb.presenters.STATE_KEYS,
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
