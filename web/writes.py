"""Fork and merge from the explorer: registered only with ``--allow-writes``.

Each route checks the CSRF token (a form field, or the ``X-CSRF-Token`` header htmx
sends) and the request's ``Origin``. A merge with conflicts under ``strategy=fail``
writes nothing and shows every conflict; otherwise the page shows the receipt.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse, Response

import rewinddb
from rewinddb.errors import CODES

from .pages import db_of
from .rendering import error_response, plural, render
from .security import CSRF_HEADER, csrf_ok
from .urls import branch_url, tilde_decode

router = APIRouter(include_in_schema=False)

Name = Annotated[str, Form(min_length=1, max_length=1024)]


def _refused(request: Request, token: str | None) -> Response | None:
    submitted = token or request.headers.get(CSRF_HEADER)
    state = request.app.state
    if csrf_ok(request, state.csrf_token, submitted, state.allowed_hosts):
        return None
    return error_response(request, 403, "csrf", "missing or wrong CSRF token, or a foreign Origin")


@router.post("/branches/{branch}/fork")
def fork(
    request: Request,
    branch: str,
    name: Name,
    at_event: Annotated[int | None, Form(ge=0)] = None,
    csrf_token: Annotated[str | None, Form()] = None,
) -> Response:
    refused = _refused(request, csrf_token)
    if refused is not None:
        return refused
    try:
        db_of(request).branches.fork(tilde_decode(branch), name, at_event=at_event)
    except rewinddb.InvalidInputError as error:  # a bad new name is 422, not "not found"
        return error_response(request, 422, error.code, str(error))
    target = branch_url(name)
    if request.headers.get("hx-request") == "true":
        return Response(status_code=204, headers={"HX-Redirect": target})
    return RedirectResponse(target, status_code=303)


@router.post("/merge")
def merge(
    request: Request,
    source: Name,
    target: Name,
    strategy: Annotated[str, Form(pattern="^(fail|source|target)$")] = "fail",
    events: Annotated[str, Form(pattern="^(skip|append)$")] = "append",
    csrf_token: Annotated[str | None, Form()] = None,
) -> Response:
    refused = _refused(request, csrf_token)
    if refused is not None:
        return refused
    db = db_of(request)
    context: dict[str, Any] = {"source": source, "target": target, "strategy": strategy}
    try:
        receipt = db.branches.merge(source, target, strategy=strategy, events=events)  # type: ignore[arg-type]
    except rewinddb.MergeConflictError as error:
        context.update(receipt=None, conflicts=[vars(c) for c in error.conflicts], error=str(error))
        return render(request, "merge.html", context, status=CODES[error.code].status)
    context.update(
        receipt=receipt.to_dict(), summary=merge_summary(receipt), conflicts=[], error=None
    )
    return render(request, "merge.html", context)


def merge_summary(receipt: rewinddb.MergeReceipt) -> str:
    """``MergeReceipt.summary()``'s line with its nouns in the number they need
    ("1 change applied to 1 key"; the receipt's own line keeps its fixed wording)."""
    head = f"{receipt.source} -> {receipt.target}"
    if receipt.version is None:
        pending = receipt.events_not_carried
        left = f"; {plural(pending, 'event')} still NOT carried (events='skip')" if pending else ""
        return f"{head}: nothing new to merge{left}"
    kept = sum(1 for c in receipt.conflicts if c.resolution == "target")
    conflicts = plural(len(receipt.conflicts), "conflict")
    if receipt.conflicts:
        conflicts += f" ({len(receipt.conflicts) - kept} took the source, {kept} kept the target)"
    events = f"{plural(receipt.events_carried, 'event')} carried"
    if receipt.events_not_carried:
        events += f", {receipt.events_not_carried:,} NOT carried (events='skip')"
    applied = plural(len(receipt.applied), "change")
    keys = plural(len(receipt.keys_applied), "key")
    return (
        f"{head} at version {receipt.version}: {applied} applied to {keys}; {conflicts}; {events}"
    )
