"""The HTML pages, their htmx fragments, and their ``.json`` twins (Datasette-style).

Every page has a permalink; the same URL with ``.json`` gives the data it was drawn from.
A request from htmx (``HX-Request``) gets only the fragment it swaps in.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

import rewinddb

from . import queries, stories
from .errors import code_for, message_for, status_for
from .figure import figure_data
from .readers import lent_database
from .rendering import is_fragment, json_response, render
from .responses import TEXT_LIMIT
from .urls import BadSegment, compare_url, tilde_decode

router = APIRouter(include_in_schema=False)

Text = Annotated[str | None, Query(max_length=TEXT_LIMIT)]
#: A key history page: versions older than ``before`` (None: the newest), ``limit`` of them.
Before = Annotated[int | None, Query(ge=1, le=2**63 - 1)]
Limit = Annotated[int, Query(ge=1, le=1000)]


def db_of(request: Request) -> rewinddb.Database:
    """The database this request reads: the read-only one lent to it (GET), else the
    app's own (the writable one, for fork and merge)."""
    lent = lent_database(request)
    if lent is not None:
        return lent
    database: rewinddb.Database = request.app.state.db
    return database


@contextmanager
def one_snapshot(request: Request) -> Iterator[rewinddb.Database]:
    """The request's database inside one read snapshot: everything a page shows is read
    at one moment of the history (while other processes write)."""
    db = db_of(request)
    with db.read():
        yield db


def split_json(segment: str) -> tuple[str, bool]:
    """A path segment and whether it asked for the ``.json`` twin."""
    if segment.endswith(".json"):
        return segment[: -len(".json")], True
    return segment, False


def parse_sequence(segment: str) -> int:
    if not segment.isdigit() or len(segment) > 18:
        raise BadSegment(f"{segment!r} is not an event number")
    return int(segment)


#: ``?all=1``: the overview lists the internal branches too.
ShowAll = Annotated[bool, Query()]


def _overview(request: Request, template: str, show_all: bool) -> Response:
    with one_snapshot(request) as db:  # the table, the graph and its labels
        data = queries.overview(db, include_internal=show_all)
        figure = figure_data(data["graph"], data["version"], db=db, rows=data["branches"])
        return render(request, template, {**data, "figure": figure})


@router.get("/")
def overview_page(request: Request, all: ShowAll = False) -> Response:
    return _overview(request, "overview.html", all)


@router.get("/.json")
def overview_json(request: Request, all: ShowAll = False) -> Response:
    with one_snapshot(request) as db:
        data = queries.overview(db, include_internal=all)
    return json_response(queries.overview_json(data))


@router.get("/fragments/overview")
def overview_fragment(request: Request, since: Text = None, all: ShowAll = False) -> Response:
    """The graph and attempts table, or 204 (nothing to swap) while nothing changed
    (``since``: the ``db.stamp`` the page was drawn at)."""
    with one_snapshot(request) as db:
        if since is not None and db.stamp == since:
            return Response(status_code=204)
        return _overview(request, "_overview.html", all)


@router.get("/branches/{branch}")
def branch_page(
    request: Request, branch: str, type: Text = None, q: Text = None, view: Text = None
) -> Response:
    """A branch's story: a conversation beside its steps, or (a plain branch, or
    ``view=events``) its event timeline beside its steps."""
    token, as_json = split_json(branch)
    name = tilde_decode(token)
    if as_json:
        with one_snapshot(request) as db:
            data = queries.branch_page(db, name, event_type=type, search=q)
            data["story"] = stories.branch_story_json(stories.branch_story(db, name))
        return json_response(data)
    return branch_response(request, name, event_type=type, search=q, view=view)


def branch_response(
    request: Request,
    name: str,
    *,
    event_type: str | None = None,
    search: str | None = None,
    view: str | None = None,
    steps_before: int | None = None,
    messages_before: int | None = None,
    detail: dict[str, Any] | None = None,
) -> Response:
    """The branch page: its story, and an event's detail (``detail``) when one is open."""
    with one_snapshot(request) as db:
        told = stories.branch_story(
            db, name, steps_before=steps_before, messages_before=messages_before
        )
        conversation = told["chat"] is not None and view != "events" and detail is None
        record = told["story"].branch
        if conversation:
            page: dict[str, Any] = {"branch": queries.branch_info(db, name, record)}
        else:
            page = queries.branch_page(
                db, name, event_type=event_type, search=search, record=record
            )
    context = {
        **told,
        **page,
        "conversation": conversation,
        "view": view or "",
        "type": event_type or "",
        "q": search or "",
        "detail": detail,
    }
    return render(request, "branch.html", context)


@router.get("/branches/{branch}/timeline")
def timeline_fragment(
    request: Request,
    branch: str,
    after: Annotated[int | None, Query(ge=-1)] = None,
    type: Text = None,
    q: Text = None,
    poll: bool = False,
) -> Response:
    """The next page of rows (``after`` = the last sequence shown; -1: from the start).
    ``poll=1`` is the live view asking for new events: 204 while there are none."""
    data = _timeline(request, branch, after, type, q)
    if poll and not data["events"]:
        return Response(status_code=204)
    return render(request, "_timeline.html", {"timeline": data, "type": type or "", "q": q or ""})


@router.get("/branches/{branch}/timeline.json")
def timeline_json(
    request: Request,
    branch: str,
    after: Annotated[int | None, Query(ge=-1)] = None,
    type: Text = None,
    q: Text = None,
) -> Response:
    return json_response(_timeline(request, branch, after, type, q))


def _timeline(
    request: Request, branch: str, after: int | None, type: str | None, q: str | None
) -> dict[str, Any]:
    after = None if after is None or after < 0 else after
    return queries.timeline(
        db_of(request), tilde_decode(branch), after=after, event_type=type, search=q
    )


@router.get("/branches/{branch}/events/{sequence}")
def event_page(request: Request, branch: str, sequence: str) -> Response:
    name = tilde_decode(branch)
    token, as_json = split_json(sequence)
    with one_snapshot(request) as db:
        # The JSON keeps values exactly as stored; pages show serde encodings decoded.
        detail = queries.event_detail(db, name, parse_sequence(token), readable=not as_json)
        if as_json:
            return json_response(detail)
        if is_fragment(request):
            return render(request, "_event.html", {"detail": detail})
        return branch_response(request, name, detail=detail)


@router.get("/branches/{branch}/keys/{key}")
def key_page(
    request: Request,
    branch: str,
    key: str,
    space: str = "kv",
    before: Before = None,
    limit: Limit = queries.PAGE_SIZE,
) -> Response:
    name = tilde_decode(branch)
    token, as_json = split_json(key)
    with one_snapshot(request) as db:
        data = queries.key_history(
            db, name, space, tilde_decode(token), readable=not as_json, limit=limit, before=before
        )
    if as_json:
        return json_response(data)
    paging = "" if limit == queries.PAGE_SIZE else f"&limit={limit}"  # kept by the links
    return render(request, "key.html", {**data, "before": before, "paging": paging})


@router.get("/branches/{branch}/value")
def value_fragment(
    request: Request,
    branch: str,
    key: Annotated[str, Query(min_length=1, max_length=1024)],
    space: str = "kv",
    as_of: Annotated[int | None, Query(ge=0)] = None,
) -> Response:
    """A whole value, for "load all" under a shortened one."""
    name = tilde_decode(branch)
    value = queries.value(db_of(request), name, space, key, as_of)
    return render(request, "_value.html", {"value": value})


@router.get("/api/docs")
def api_docs(request: Request) -> Response:
    """The JSON API's routes, read from its OpenAPI schema (no JavaScript, no CDN)."""
    schema = request.app.openapi()
    routes = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            routes.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": operation.get("summary", ""),
                    "parameters": [
                        {
                            "name": parameter["name"],
                            "in": parameter["in"],
                            "required": parameter.get("required", False),
                            "description": parameter.get("description")
                            or parameter.get("schema", {}).get("description", ""),
                        }
                        for parameter in operation.get("parameters", [])
                    ],
                }
            )
    return render(request, "api.html", {"routes": routes, "title": schema["info"]["title"]})


@router.get("/compare")
def compare_page(request: Request, a: Text = None, b: Text = None) -> Response:
    return _compare(request, a, b, as_json=False)


@router.get("/compare.json")
def compare_json(request: Request, a: Text = None, b: Text = None) -> Response:
    return _compare(request, a, b, as_json=True)


def _compare(request: Request, a: str | None, b: str | None, *, as_json: bool) -> Response:
    """The comparison, everything it shows read in one snapshot."""
    with one_snapshot(request) as db:
        return _compare_page(request, db, a, b, as_json=as_json)


def _compare_page(
    request: Request, db: rewinddb.Database, a: str | None, b: str | None, *, as_json: bool
) -> Response:
    """Without both points, or with one that names nothing, the HTML page keeps the form
    as it was filled in (and says what was wrong)."""
    if as_json:
        if not a or not b:
            raise rewinddb.InvalidInputError(
                "compare needs a=BRANCH@VERSION and b=BRANCH@VERSION", code="invalid.compare"
            )
        return json_response(queries.compare_json(queries.compare(db, a, b)))
    form = {"a": a or "", "b": b or "", "branches": _point_names(db)}
    if not a or not b:
        return render(request, "compare.html", {**form, "data": None, "error": None})
    try:
        data: dict[str, Any] = queries.compare(db, a, b, readable=True)
    except (rewinddb.RewindError, queries.PageNotFound) as error:
        status = status_for(error)
        failed = {"status": status, "code": code_for(error), "message": message_for(error)}
        return render(request, "compare.html", {**form, "data": None, "error": failed}, status)
    data["json_url"] = compare_url(a, b, ".json")
    return render(request, "compare.html", {**form, "data": data, "error": None})


def _point_names(db: rewinddb.Database) -> list[str]:
    """What the compare form suggests: every live branch (its head)."""
    return db.branches.names()
