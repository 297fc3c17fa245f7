"""The JSON API under ``/api/``, described by FastAPI's OpenAPI schema (``/api/docs``).

Branch names and keys in paths are tilde-encoded (see ``urls``); the pages' ``.json``
twins return the same documents.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel

from . import queries
from .pages import Before, Limit, Text, db_of
from .urls import tilde_decode

router = APIRouter(prefix="/api", tags=["read"])

Segment = Annotated[str, Path(min_length=1, max_length=4096, description="tilde-encoded")]


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "A parameter that cannot mean anything"},
    404: {"model": ErrorResponse, "description": "No such branch, event, key or version"},
    422: {"model": ErrorResponse, "description": "Malformed parameters"},
    500: {"model": ErrorResponse, "description": "The database is damaged (a corrupt.* code)"},
    503: {"model": ErrorResponse, "description": "The database is busy or closed; retry"},
}


@router.get(
    "/version",
    responses=ERRORS,
    summary="The newest version on the clock, and a stamp that changes with any history",
)
def version(request: Request) -> dict[str, int | str]:
    db = db_of(request)
    with db.read():
        return {"version": db.version, "stamp": db.stamp}


@router.get("/overview", responses=ERRORS, summary="Attempts table and branch graph")
def overview(
    request: Request,
    all: Annotated[bool, Query(description="also the internal branches")] = False,
) -> dict[str, Any]:
    return queries.overview_json(queries.overview(db_of(request), include_internal=all))


@router.get("/branches", responses=ERRORS, summary="Every live branch")
def branches(request: Request) -> list[dict[str, Any]]:
    return [branch.to_dict() for branch in db_of(request).branches.list()]


@router.get("/branches/{branch}", responses=ERRORS, summary="A branch and its first events")
def branch(request: Request, branch: Segment, type: Text = None, q: Text = None) -> dict[str, Any]:
    return queries.branch_page(db_of(request), tilde_decode(branch), event_type=type, search=q)


@router.get("/branches/{branch}/events", responses=ERRORS, summary="A page of events")
def events(
    request: Request,
    branch: Segment,
    after: Annotated[int | None, Query(ge=0)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = queries.PAGE_SIZE,
    type: Text = None,
    q: Text = None,
) -> dict[str, Any]:
    return queries.timeline(
        db_of(request), tilde_decode(branch), after=after, event_type=type, search=q, limit=limit
    )


@router.get(
    "/branches/{branch}/events/{sequence}",
    responses=ERRORS,
    summary="State as of an event, who last changed each key, and the diff from the event before",
)
def event(
    request: Request, branch: Segment, sequence: Annotated[int, Path(ge=0)]
) -> dict[str, Any]:
    return queries.event_detail(db_of(request), tilde_decode(branch), sequence)


@router.get("/branches/{branch}/keys/{key}", responses=ERRORS, summary="Every version of a key")
def key(
    request: Request,
    branch: Segment,
    key: Segment,
    space: Annotated[str, Query(pattern="^(kv|json|state)$")] = "kv",
    before: Before = None,
    limit: Limit = queries.PAGE_SIZE,
) -> dict[str, Any]:
    """The newest ``limit`` versions older than version ``before``; ``older`` is the
    ``before`` of the next page, or null."""
    return queries.key_history(
        db_of(request),
        tilde_decode(branch),
        space,
        tilde_decode(key),
        limit=limit,
        before=before,
    )


@router.get("/compare", responses=ERRORS, summary="Two points: logs, first divergence, diff")
def compare(
    request: Request,
    a: Annotated[str, Query(min_length=1, max_length=1024, description="BRANCH@VERSION")],
    b: Annotated[str, Query(min_length=1, max_length=1024, description="BRANCH@VERSION")],
) -> dict[str, Any]:
    return queries.compare_json(queries.compare(db_of(request), a, b))
