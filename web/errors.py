"""How the explorer answers what went wrong: every error is a page (JSON under ``/api/``
and for ``.json``), with a status that says whose fault it was and a message written for
someone using a browser, not the Python API."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response

import rewinddb

from .queries import PageNotFound
from .rendering import error_response
from .urls import BadSegment


class BadParameter(ValueError):
    """A path segment or parameter that cannot mean anything (a step that is not a
    number): a 400 naming ``code``."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


_NOT_FOUND = (rewinddb.NotFoundError, rewinddb.HistoryUnavailableError, PageNotFound, BadSegment)
#: Names and versions in a URL that cannot exist: nothing there, so 404 rather than 422.
_NOT_FOUND_CODES = {"invalid.as_of", "invalid.branch", "invalid.key"}
_ROUTE_CODES = {404: "not_found.page", 405: "invalid.method"}


def message_for(error: BaseException) -> str:
    """What the page says: the error's message without its code (the page shows the
    code once), in a web user's words where the API's would send them to Python."""
    if isinstance(error, rewinddb.BranchNotFound):
        name = error.details.get("branch")
        if isinstance(name, str):
            return (
                f"there is no branch {name!r} in this database (it may have been deleted): "
                "the overview lists the branches there are"
            )
    if isinstance(error, rewinddb.RewindError):
        return error.message
    return str(error)


def status_for(error: BaseException) -> int:
    """The HTTP status of a RewindError (or one of the explorer's own errors)."""
    code = getattr(error, "code", "not_found")
    if isinstance(error, BadParameter):
        return 400
    if isinstance(error, _NOT_FOUND) or code in _NOT_FOUND_CODES:
        return 404
    if isinstance(error, rewinddb.ReadOnlyError):
        return 403
    if isinstance(error, (rewinddb.MergeConflictError, rewinddb.BranchExistsError)):
        return 409
    if isinstance(error, (rewinddb.DatabaseBusyError, rewinddb.DatabaseClosedError)):
        return 503
    if isinstance(error, rewinddb.CorruptDatabaseError) or code == "storage":
        # Not the request's fault: the database file is damaged, or its disk failed.
        return 500
    return 422


def code_for(error: BaseException) -> str:
    code = getattr(error, "code", None)
    return code if isinstance(code, str) else "not_found"


async def handle_error(request: Request, error: Any) -> Response:
    """RewindErrors, the explorer's own errors and bad parameters as error pages: 404
    for what does not exist, 400/422 for bad input, 500 for a damaged database or a
    failed disk."""
    if isinstance(error, RequestValidationError):
        messages = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()
        )
        return error_response(request, 422, "invalid.request", messages)
    return error_response(request, status_for(error), code_for(error), message_for(error))


async def handle_http_error(request: Request, error: HTTPException) -> Response:
    """Starlette's own misses (no such route, a method the route does not take, a static
    file that is not there) as the explorer's error page, not ``{"detail": ...}``."""
    status = error.status_code
    if status == 404:
        message = f"there is no page at {request.url.path}: the overview links to every branch"
    elif status == 405:
        message = f"{request.method} is not allowed here"
    else:
        message = str(error.detail)
    response = error_response(request, status, _ROUTE_CODES.get(status, f"http.{status}"), message)
    for name, value in (error.headers or {}).items():
        response.headers.setdefault(name, value)
    return response
