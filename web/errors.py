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
from rewinddb.errors import CODES

from .rendering import error_response


class BadParameter(ValueError):
    """A path segment or parameter that cannot mean anything (a step that is not a
    number): a 400 naming ``code``."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


#: The code of the explorer's own errors that carry none (``PageNotFound``,
#: ``BadSegment``): the URL names nothing there.
UNCODED = "not_found"
#: Starlette's own misses, by status.
ROUTE_CODES = {400: "invalid.body", 404: "not_found.page", 405: "invalid.method"}


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
    """The HTTP status of a RewindError (or one of the explorer's own errors): the one
    ``rewinddb.errors.CODES`` gives its code. A code outside the registry (a presenter
    of another package may raise its own) falls back on its class: 404 for what is not
    found, 422 for bad input, 500 for the rest."""
    entry = CODES.get(code_for(error))
    if entry is not None:
        return entry.status
    if isinstance(error, rewinddb.NotFoundError):
        return 404
    if isinstance(error, rewinddb.InvalidInputError):
        return 422
    return 500


def code_for(error: BaseException) -> str:
    """The code the page names: the error's own, or ``UNCODED``."""
    code = getattr(error, "code", None)
    return code if isinstance(code, str) else UNCODED


async def handle_error(request: Request, error: Any) -> Response:
    """RewindErrors, the explorer's own errors and bad parameters as error pages, each
    with the status ``rewinddb.errors.CODES`` gives its code: 404 for what does not
    exist, 400/422 for bad input, 500 for a damaged database or a failed disk."""
    if isinstance(error, RequestValidationError):
        messages = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()
        )
        return error_response(request, status_of("invalid.request"), "invalid.request", messages)
    return error_response(request, status_for(error), code_for(error), message_for(error))


def status_of(code: str) -> int:
    """The HTTP status ``rewinddb.errors.CODES`` gives ``code``."""
    return CODES[code].status


async def handle_http_error(request: Request, error: HTTPException) -> Response:
    """Starlette's own misses (no such route, a method the route does not take, a static
    file that is not there, a body it cannot read) as the explorer's error page, not
    ``{"detail": ...}``; a status it raises that the explorer has no code for (none is
    known) is answered as ``invalid.request``."""
    status = error.status_code
    if status == 404:
        message = f"there is no page at {request.url.path}: the overview links to every branch"
    elif status == 405:
        message = f"{request.method} is not allowed here"
    else:
        message = str(error.detail)
    code = ROUTE_CODES.get(status, "invalid.request")
    response = error_response(request, status_of(code), code, message)
    for name, value in (error.headers or {}).items():
        response.headers.setdefault(name, value)
    return response
