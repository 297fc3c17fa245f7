"""The read connections: each request that reads borrows one database of its own.

One ``rewinddb.Database`` is one connection, and its calls take turns on it, so a server
with one database answers one reader at a time. SQLite in WAL mode (and PostgreSQL) let
several connections read at once, even while another process writes, so the explorer
opens read-only databases (``rewinddb.open(path, create=False, readonly=True)``, a
directory or a ``postgresql://`` URL alike: one by default on SQLite, four on
PostgreSQL, see ``DEFAULT_READERS``) and lends one to each GET request for as long as
its route runs: everything one request reads comes from one database object.
Requests that find every reader lent out wait their turn, first come first served, in
the event loop (not in a worker thread). Writes (``--allow-writes``) keep using the one
writable database, ``app.state.db``.

One more read-only database is never lent: it only reads ``db.stamp`` for the shared
renders (``responses``), so that a request answered from them needs no reader.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import rewinddb

#: Read connections by default on SQLite: one. Its pages are Python work under one
#: interpreter lock, so a second connection overlaps almost nothing, and each connection
#: reads colder (its page cache and its memory start again after every write of another
#: process): under the load run's writes a compare page took 204 ms of CPU with one
#: reader, 284 ms with two and 351 ms with four (benchmarks/web.py --part load).
DEFAULT_READERS = 1
#: On a PostgreSQL URL: reads wait on the network, so several connections overlap them.
DEFAULT_SERVER_READERS = 4
#: The most ``read_connections`` may ask for.
MAX_READERS = 64
#: ``read_connections`` for ``uvicorn rewinddb.web.app:create_app --factory``.
READERS_ENV = "REWINDDB_READ_CONNECTIONS"
#: Where a request's borrowed database sits in its ASGI scope.
SCOPE_KEY = "rewinddb.reader"
#: Where the ASGI scope may hold what to call once the request is lent its database.
ON_LENT = "rewinddb.on_lent"
#: Paths served without reading the database.
_NO_DATABASE = ("/static/", "/static-plotly/")


def default_readers(path: object) -> int:
    """``DEFAULT_READERS`` for a directory, ``DEFAULT_SERVER_READERS`` for a URL."""
    return DEFAULT_SERVER_READERS if "://" in str(path) else DEFAULT_READERS


def reader_count(value: object) -> int:
    """``read_connections`` checked: a whole number from 1 to ``MAX_READERS``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_READERS:
        raise rewinddb.InvalidInputError(
            f"read_connections is a whole number from 1 to {MAX_READERS}, not {value!r}",
            code="invalid.option",
        )
    return value


class Readers:
    """``size`` read-only databases opened by ``open_reader``, lent one per request, and
    one more that only reads the stamp (``stamp``)."""

    def __init__(self, open_reader: Callable[[], rewinddb.Database], size: int) -> None:
        self._open_reader = open_reader
        self.size = reader_count(size)
        self._lock = threading.Lock()
        self._all: list[rewinddb.Database] = []
        self._free: list[rewinddb.Database] = []
        self._waiting: deque[asyncio.Future[rewinddb.Database]] = deque()
        self._stamp_lock = threading.Lock()
        self._stamp_db: rewinddb.Database | None = None
        self.open()

    def open(self) -> None:
        """Open the databases (again, after ``close``): the first now, so that a bad path
        fails here rather than on a request."""
        with self._lock:
            if self._all and not self._all[0].closed:
                return
            self._all, self._free = [], []
        opened: list[rewinddb.Database] = []
        try:
            for _ in range(self.size + 1):
                opened.append(self._open_reader())
        except BaseException:
            for db in opened:
                db.close()
            raise
        stamp_db = opened.pop()
        with self._stamp_lock:
            self._stamp_db = stamp_db
        with self._lock:
            self._all, self._free = opened, list(reversed(opened))

    @property
    def first(self) -> rewinddb.Database:
        return self._all[0]

    def close(self) -> None:
        """Close every database; requests still waiting for one get a
        ``DatabaseClosedError`` rather than wait for ever."""
        with self._lock:
            databases, self._all, self._free = self._all, [], []
            waiting, self._waiting = list(self._waiting), deque()
        for waiter in waiting:
            waiter.get_loop().call_soon_threadsafe(_refuse, waiter)
        with self._stamp_lock:
            if self._stamp_db is not None:
                databases.append(self._stamp_db)
            self._stamp_db = None
        for db in databases:
            db.close()

    def stamp(self) -> str | None:
        """``db.stamp`` now, read on the database that is never lent; None when it cannot
        be read (closed, damaged: the route that follows says what is wrong)."""
        with self._stamp_lock:
            db = self._stamp_db
            if db is None or db.closed:
                return None
            try:
                return db.stamp
            except Exception:  # the route that follows reports it, with its code
                return None

    async def borrow(self) -> rewinddb.Database:
        """A database no other request holds; waits (in turn) while all are lent."""
        with self._lock:
            if self._free:
                return self._free.pop()
            if not self._all:
                raise rewinddb.DatabaseClosedError("the explorer's databases are closed")
            waiter: asyncio.Future[rewinddb.Database] = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            with self._lock:
                if waiter in self._waiting:
                    self._waiting.remove(waiter)
            if waiter.done() and not waiter.cancelled():
                self.give_back(waiter.result())  # handed over just as it gave up
            raise

    def give_back(self, db: rewinddb.Database) -> None:
        """Lend ``db`` to the request that has waited longest, or keep it free."""
        with self._lock:
            if db not in self._all:  # closed (and reopened) while it was lent
                return
            while self._waiting:
                waiter = self._waiting.popleft()
                if not waiter.done():
                    waiter.get_loop().call_soon_threadsafe(self._hand_over, waiter, db)
                    return
            self._free.append(db)

    def _hand_over(self, waiter: asyncio.Future[rewinddb.Database], db: rewinddb.Database) -> None:
        if waiter.done():  # it was cancelled meanwhile: the next in line gets it
            self.give_back(db)
        else:
            waiter.set_result(db)


class LendReaders:
    """Lend each GET (and HEAD) request a database from ``readers`` while its route runs.

    The database goes back when the response starts: our routes build their whole body
    before that (no response streams from the database), and a slow client then holds
    no database while it reads."""

    def __init__(self, app: ASGIApp, readers: Readers) -> None:
        self.app = app
        self.readers = readers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in ("GET", "HEAD")
            or scope["path"].startswith(_NO_DATABASE)
        ):
            await self.app(scope, receive, send)
            return
        db = await self.readers.borrow()
        lent = True
        started = scope.get(ON_LENT)
        if started is not None:
            started()  # a shared render: its reads start now (responses)

        def give_back() -> None:
            nonlocal lent
            if lent:
                lent = False
                self.readers.give_back(db)

        async def send_and_give_back(message: Message) -> None:
            if message["type"] == "http.response.start":
                give_back()
            await send(message)

        scope[SCOPE_KEY] = db
        try:
            await self.app(scope, receive, send_and_give_back)
        finally:
            give_back()


def lent_database(request: Request) -> rewinddb.Database | None:
    """The database lent to ``request``, if it was lent one."""
    db: rewinddb.Database | None = request.scope.get(SCOPE_KEY)
    return db


def _refuse(waiter: asyncio.Future[rewinddb.Database]) -> None:
    if not waiter.done():
        waiter.set_exception(rewinddb.DatabaseClosedError("the explorer's databases are closed"))
