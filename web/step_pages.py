"""A branch's steps, one step opened, its conversation's pages, and checkpoint links.

``/branches/{b}/steps/{version}`` opens any step (a LangGraph checkpoint, or a commit of
any branch): the state as of it, its diff from the step before with the bookkeeping
behind "show N hidden", and the raw stored values. ``/branches/{b}/checkpoints/{id}``
finds a step by the framework's id and redirects to it. Each has a ``.json`` twin, and
htmx gets the fragment it swaps in (a step, older steps, earlier messages).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import RedirectResponse, Response

from rewinddb.presenters import STEPS_PAGE

from . import stories
from .errors import BadParameter
from .pages import branch_response, db_of, split_json
from .rendering import is_fragment, json_response, render
from .urls import step_url, tilde_decode

router = APIRouter(include_in_schema=False)

#: A cursor: a version (steps older than it) or a position (messages before it).
Cursor = Annotated[int | None, Query(ge=0, le=2**63 - 1)]
#: Versions are SQLite integers: anything longer cannot name one.
_MAX_DIGITS = 19


def parse_version(segment: str) -> int:
    """A step's version from its path segment (400 for anything but digits)."""
    if not segment.isascii() or not segment.isdigit() or len(segment) > _MAX_DIGITS:
        raise BadParameter(
            f"{segment!r} is not a step: steps are named by their version numbers",
            code="invalid.step",
        )
    version = int(segment)
    if version > 2**63 - 1:
        raise BadParameter(f"{segment!r} is past any version", code="invalid.step")
    return version


@router.get("/branches/{branch}/steps/{version}")
def step_page(request: Request, branch: str, version: str) -> Response:
    name = tilde_decode(branch)
    token, as_json = split_json(version)
    data = stories.step_page(db_of(request), name, parse_version(token))
    if as_json:
        return json_response(stories.step_page_json(data))
    template = "_step.html" if is_fragment(request) else "step.html"
    return render(request, template, data)


@router.get("/branches/{branch}/steps.json")
def steps_json(request: Request, branch: str, before: Cursor = None) -> Response:
    name = tilde_decode(branch)
    db = db_of(request)
    data = stories.branch_story(db, name, steps_before=before)
    return json_response(stories.steps_json(name, data["story"].steps))


@router.get("/branches/{branch}/steps")
def steps_page(request: Request, branch: str, before: Cursor = None) -> Response:
    """Older steps: rows for htmx to put under the ones shown, else the branch page
    starting at them."""
    if is_fragment(request):
        data = stories.branch_story(db_of(request), tilde_decode(branch), steps_before=before)
        return render(request, "_steps.html", data)
    return branch_response(request, tilde_decode(branch), steps_before=before)


@router.get("/branches/{branch}/transcript.json")
def transcript_json(request: Request, branch: str, before: Cursor = None) -> Response:
    name = tilde_decode(branch)
    data = stories.branch_story(db_of(request), name, messages_before=before, limit=STEPS_PAGE)
    return json_response(stories.transcript_json(name, data["story"].transcript))


@router.get("/branches/{branch}/transcript")
def transcript_page(request: Request, branch: str, before: Cursor = None) -> Response:
    """Earlier messages: the messages for htmx to put above the ones shown, else the
    branch page starting at them."""
    name = tilde_decode(branch)
    if is_fragment(request):
        data = stories.branch_story(db_of(request), name, messages_before=before)
        return render(request, "_chat.html", data)
    return branch_response(request, name, messages_before=before)


@router.get("/branches/{branch}/checkpoints/{checkpoint_id}")
def checkpoint_page(request: Request, branch: str, checkpoint_id: str) -> Response:
    """The step a framework's id names (a LangGraph checkpoint id), by redirect."""
    name = tilde_decode(branch)
    token, as_json = split_json(checkpoint_id)
    db = db_of(request)
    step = stories.step_by_id(db, name, tilde_decode(token))
    target = step_url(name, step.version, ".json" if as_json else "")
    return RedirectResponse(target, status_code=303)
