"""``create_app(path)``: the explorer as a FastAPI application.

Run it with ``rewinddb serve PATH`` or ``uvicorn rewinddb.web.app:create_app --factory``
(the path then comes from ``REWINDDB_PATH``, more allowed host names from
``REWINDDB_ALLOWED_HOSTS``). The database is opened read-only unless ``allow_writes``
is set, and then only the fork and merge routes can change it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import Response

import rewinddb

from . import api, pages, security, writes
from .assets import plotly_js_route
from .queries import PageNotFound
from .rendering import error_response, make_templates
from .security import AllowedHosts, SecurityHeaders, new_csrf_token
from .urls import BadSegment

STATIC = Path(__file__).parent / "static"


def create_app(
    path: str | os.PathLike[str] | None = None,
    *,
    allow_writes: bool = False,
    allowed_hosts: Iterable[str] | None = None,
) -> FastAPI:
    """The explorer for the database at ``path`` (default: ``$REWINDDB_PATH``).

    The database must exist; it is opened read-only unless ``allow_writes``. The app
    answers only requests whose ``Host`` is 127.0.0.1, localhost, [::1] or one of
    ``allowed_hosts`` (any port; default: the comma-separated names in
    ``$REWINDDB_ALLOWED_HOSTS``), others get 421: that stops DNS rebinding.
    """
    if path is None:
        path = os.environ.get("REWINDDB_PATH")
        if not path:
            raise rewinddb.RewindError(
                "give the database path: create_app(path) or REWINDDB_PATH=...",
                code="invalid.path",
            )
    hosts = security.allowed_hosts(allowed_hosts)

    def open_database() -> rewinddb.Database:
        return rewinddb.open(path, create=False, readonly=not allow_writes)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if app.state.db.closed:  # served again after a shutdown (tests do this)
            app.state.db = open_database()
        yield
        app.state.db.close()

    app = FastAPI(
        title="rewinddb explorer",
        version=rewinddb.__version__,
        description="Branches, events, state and diffs of one rewinddb database.",
        lifespan=lifespan,
        docs_url=None,  # Swagger UI loads its JavaScript from a CDN: /api/docs is ours
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.state.db = open_database()  # now, so a bad path fails here, not on a request
    app.state.allow_writes = allow_writes
    app.state.allowed_hosts = hosts
    app.state.csrf_token = new_csrf_token()
    app.state.templates = make_templates(allow_writes=allow_writes)
    # Outermost last: headers on every response, then gzip, then the Host check (before
    # anything reads).
    app.add_middleware(AllowedHosts, hosts=hosts)
    app.add_middleware(GZipMiddleware, minimum_size=1000)
    app.add_middleware(SecurityHeaders)
    app.add_exception_handler(rewinddb.RewindError, _handle_error)
    app.add_exception_handler(PageNotFound, _handle_error)
    app.add_exception_handler(BadSegment, _handle_error)
    app.add_exception_handler(RequestValidationError, _handle_error)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_api_route("/static-plotly/plotly.min.js", plotly_js_route, include_in_schema=False)
    app.include_router(api.router)
    if allow_writes:
        app.include_router(writes.router)
    app.include_router(pages.router)
    return app


_NOT_FOUND = (rewinddb.NotFoundError, rewinddb.HistoryUnavailableError, PageNotFound, BadSegment)
#: Names and versions in a URL that cannot exist: nothing there, so 404 rather than 422.
_NOT_FOUND_CODES = {"invalid.as_of", "invalid.branch", "invalid.key"}


async def _handle_error(request: Request, error: Any) -> Response:
    """RewindErrors and bad parameters as 404/422 pages (JSON under /api or .json)."""
    if isinstance(error, RequestValidationError):
        messages = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()
        )
        return error_response(request, 422, "invalid.request", messages)
    code = getattr(error, "code", "not_found")
    if isinstance(error, _NOT_FOUND) or code in _NOT_FOUND_CODES:
        return error_response(request, 404, code, str(error))
    if isinstance(error, rewinddb.ReadOnlyError):
        return error_response(request, 403, code, str(error))
    if isinstance(error, (rewinddb.MergeConflictError, rewinddb.BranchExistsError)):
        return error_response(request, 409, code, str(error))
    if isinstance(error, (rewinddb.DatabaseBusyError, rewinddb.DatabaseClosedError)):
        return error_response(request, 503, code, str(error))
    return error_response(request, 422, code, str(error))
