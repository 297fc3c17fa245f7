"""``create_app(path)``: the explorer as a FastAPI application.

Run it with ``rewinddb serve PATH`` or ``uvicorn rewinddb.web.app:create_app --factory``
(the path then comes from ``REWINDDB_PATH``, more allowed host names from
``REWINDDB_ALLOWED_HOSTS``, the number of read connections from
``REWINDDB_READ_CONNECTIONS``). Pages read from read-only databases, one lent to each
request (``readers``), and the heavy ones are rendered once for every request that asks
for them between two writes (``responses``). With ``allow_writes`` one more database is
opened read-write, and only the fork and merge routes use it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.middleware.gzip import GZipMiddleware

import rewinddb

from . import api, pages, security, step_pages, writes
from .assets import plotly_js_route
from .errors import BadParameter, handle_error, handle_http_error
from .queries import PageNotFound
from .readers import READERS_ENV, LendReaders, Readers, default_readers, reader_count
from .rendering import make_templates
from .responses import ServeShared, SharedRenders
from .security import AllowedHosts, SecurityHeaders, new_csrf_token
from .urls import BadSegment

STATIC = Path(__file__).parent / "static"
#: gzip's level: 5 packs the 1 MB overview in about 11 ms where 9 (Starlette's default)
#: takes 65 ms, for 10% more bytes.
GZIP_LEVEL = 5


def create_app(
    path: str | os.PathLike[str] | None = None,
    *,
    allow_writes: bool = False,
    allowed_hosts: Iterable[str] | None = None,
    read_connections: int | None = None,
) -> FastAPI:
    """The explorer for the database at ``path`` (default: ``$REWINDDB_PATH``).

    The database must exist; it is opened read-only unless ``allow_writes``. The app
    answers only requests whose ``Host`` is 127.0.0.1, localhost, [::1] or one of
    ``allowed_hosts`` (any port; default: the comma-separated names in
    ``$REWINDDB_ALLOWED_HOSTS``), others get 421: that stops DNS rebinding. Reads use
    ``read_connections`` read-only databases (default: ``$REWINDDB_READ_CONNECTIONS``,
    else 1 for a directory and 4 for a ``postgresql://`` URL), one per request at a
    time. The pages many tabs ask for are rendered once per ``db.stamp`` (``responses``).
    """
    if path is None:
        path = os.environ.get("REWINDDB_PATH")
        if not path:
            raise rewinddb.RewindError(
                "give the database path: create_app(path) or REWINDDB_PATH=...",
                code="invalid.path",
            )
    hosts = security.allowed_hosts(allowed_hosts)
    if read_connections is None:
        from_env = os.environ.get(READERS_ENV, "").strip()
        try:
            digits = from_env.isascii() and from_env.isdigit()
            size = reader_count(int(from_env) if digits else from_env or default_readers(path))
        except rewinddb.InvalidInputError as error:
            raise rewinddb.InvalidInputError(
                f"{READERS_ENV}={from_env!r}: {error.message}", code=error.code
            ) from None
    else:
        size = reader_count(read_connections)

    def open_writer() -> rewinddb.Database:
        return rewinddb.open(path, create=False)

    def open_reader() -> rewinddb.Database:
        return rewinddb.open(path, create=False, readonly=True)

    # Now, so that a bad path fails here rather than on a request; the writer first,
    # since opening it writable brings the schema up to date for the readers.
    writer = open_writer() if allow_writes else None
    try:
        readers = Readers(open_reader, size)
    except BaseException:
        if writer is not None:
            writer.close()
        raise

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Served again after a shutdown (tests do this): open what it closed.
        if allow_writes and app.state.db.closed:
            app.state.db = open_writer()
        readers.open()
        shared.clear()
        if not allow_writes:
            app.state.db = readers.first
        yield
        readers.close()
        if allow_writes:
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
    #: The writable database (with ``allow_writes``), else the first reader.
    app.state.db = writer if writer is not None else readers.first
    app.state.readers = readers
    #: The overview and compare pages, rendered once per stamp (``responses``).
    app.state.shared = shared = SharedRenders(readers)
    app.state.allow_writes = allow_writes
    app.state.allowed_hosts = hosts
    app.state.csrf_token = new_csrf_token()
    app.state.templates = make_templates(allow_writes=allow_writes)
    # Outermost last: headers on every response, then the Host check (before anything
    # reads), then the shared renders (they keep responses gzipped), gzip, then a
    # database lent to the request.
    app.add_middleware(LendReaders, readers=readers)
    app.add_middleware(GZipMiddleware, minimum_size=1000, compresslevel=GZIP_LEVEL)
    app.add_middleware(ServeShared, shared=shared)
    app.add_middleware(AllowedHosts, hosts=hosts)
    app.add_middleware(SecurityHeaders)
    for kind in (rewinddb.RewindError, PageNotFound, BadSegment, BadParameter):
        app.add_exception_handler(kind, handle_error)
    app.add_exception_handler(RequestValidationError, handle_error)
    app.add_exception_handler(HTTPException, handle_http_error)  # type: ignore[arg-type]
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_api_route("/static-plotly/plotly.min.js", plotly_js_route, include_in_schema=False)
    app.include_router(api.router)
    if allow_writes:
        app.include_router(writes.router)
    app.include_router(step_pages.router)
    app.include_router(pages.router)
    return app
