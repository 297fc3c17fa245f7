"""Shared renders of the pages many tabs ask for: the overview, the compare page, a
branch's page, a key's history, their htmx fragments and JSON twins (``SHARED``).

Each of them is a function of the database's history and of the request's URL, its
htmx headers and whether it takes gzip, nothing else: the CSRF token in a page is the
server's own, and the host check, the security headers and the borrowing of a
database happen per request around this. So fifty tabs polling the overview between
two writes need one render, not fifty:

- **Cached, by stamp.** A response rendered at ``db.stamp`` S is kept (one per URL, the
  newest), and served again while the database's stamp is still S. The stamp changes
  with every change of history (a new version, a fork, a deleted branch, an erasure or
  a prune) and never comes back to an old value, so a cached page is exactly what a
  fresh render gives now. The stamp is read on a connection of its own
  (``Readers.stamp``), so a request served from the cache borrows no reader.
- **Computed once, by everyone who asked.** Identical requests that arrive while one of
  them is being rendered share that render, as long as it is one they may see: one
  that has not yet been lent its database (its reads start after they arrived), or
  one that began at the stamp they found (the same history). A request never gets a
  page drawn from history older than what the database held when it arrived.

Only complete 200 responses are shared and kept; anything else (an error page, a 204, a
render that failed) leaves each waiting request to render its own. A response is kept
under the stamp read before it was rendered only if the stamp read after it is the
same (nothing changed meanwhile, so it was drawn from that history whatever snapshots
the route took). The overview poll's ``since`` only decides between 204 (it equals the
stamp: answered by the route, never from here) and the fragment, so it is left out of
the key.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .readers import ON_LENT, Readers
from .rendering import fragment_requested

#: The pages rendered once per stamp, with their htmx fragments and JSON twins: the
#: overview, the comparison, a branch's page (its story, steps and conversation) and a
#: key's history. Not the live polls (``/api/version``, timelines, the events API: tiny,
#: and each tab asks its own), nor event pages and values (many, each seldom asked twice).
SHARED = re.compile(
    r"/|/\.json|/fragments/overview|/compare(\.json)?|/api/(overview|compare|branches)"
    r"|(/api)?/branches/[^/]+(/keys/[^/]+|/steps(\.json|/[^/]+)?|/transcript(\.json)?)?"
)
#: The overview poll: ``since`` is left out of its key (it only decides 204).
OVERVIEW_POLL = "/fragments/overview"
#: The longest text a page's query parameter may hold (``pages.Text``; longer: 422).
TEXT_LIMIT = 1024
#: URLs kept (one response each) and the bytes of all their bodies together.
MAX_ENTRIES = 256
MAX_BYTES = 32 * 1024 * 1024

Key = tuple[str, tuple[tuple[str, str], ...], bool, bool]


@dataclass(frozen=True)
class Entry:
    """One complete response: what the route sent, byte for byte."""

    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes

    async def send(self, send: Send) -> None:
        # A fresh list each time: middleware outside adds its headers to it.
        await send(
            {"type": "http.response.start", "status": self.status, "headers": list(self.headers)}
        )
        await send({"type": "http.response.body", "body": self.body})


@dataclass
class Flight:
    """A render in progress: the stamp its request found, whether it has been lent its
    database yet, and the requests waiting for it."""

    stamp: str
    lent: bool = False
    waiters: list[asyncio.Future[Entry | None]] = field(default_factory=list)


@dataclass
class Counts:
    """What the cache did, since the app started (for tests and benchmarks)."""

    rendered: int = 0  # renders it started (each a request of its own)
    cached: int = 0  # requests served a kept response
    shared: int = 0  # requests served another request's render


class SharedRenders:
    """The kept responses and the renders in progress of one app (``app.state.shared``),
    served by the ``ServeShared`` middleware (module docstring)."""

    def __init__(
        self, readers: Readers, *, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES
    ) -> None:
        self.readers = readers
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.counts = Counts()
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, tuple[str, Entry]] = OrderedDict()
        self._bytes = 0
        self._flights: dict[Key, Flight] = {}

    def clear(self) -> None:
        """Forget every kept response (the app starts again: the files may have been
        replaced meanwhile)."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    async def respond(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a request for one of ``SHARED`` from a kept response, another
        request's render, or a render of its own (by ``app``)."""
        stamp = await anyio.to_thread.run_sync(self.readers.stamp)
        key = request_key(scope, stamp)
        if stamp is None or key is None:  # no stamp to trust, or a poll the route answers 204
            await app(scope, receive, send)
            return
        entry: Entry | None = None
        joined: tuple[Flight, asyncio.Future[Entry | None]] | None = None
        with self._lock:
            kept = self._entries.get(key)
            running = self._flights.get(key)
            if kept is not None and kept[0] == stamp:
                self._entries.move_to_end(key)
                self.counts.cached += 1
                entry = kept[1]
            elif running is not None and (not running.lent or running.stamp == stamp):
                joined = running, asyncio.get_running_loop().create_future()
                running.waiters.append(joined[1])
            else:
                flight = self._flights[key] = Flight(stamp)
                self.counts.rendered += 1
        if entry is not None:
            await entry.send(send)
        elif joined is not None:
            if not await self._wait(*joined, send):
                await app(scope, receive, send)  # that render failed: render our own
        else:
            await self._render(app, key, flight, scope, receive, send)

    async def _wait(self, flight: Flight, waiter: asyncio.Future[Entry | None], send: Send) -> bool:
        try:
            entry = await waiter
        except asyncio.CancelledError:
            with self._lock:
                if waiter in flight.waiters:
                    flight.waiters.remove(waiter)
            raise
        if entry is None:
            return False
        with self._lock:
            self.counts.shared += 1
        await entry.send(send)
        return True

    async def _render(
        self, app: ASGIApp, key: Key, flight: Flight, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Render as the route does, pass the response on as it comes, and keep it."""

        def lent() -> None:
            with self._lock:
                flight.lent = True

        start: Message | None = None
        parts: list[bytes] = []
        complete = False

        async def capture(message: Message) -> None:
            nonlocal start, complete
            if message["type"] == "http.response.start":
                start = {**message, "headers": [tuple(pair) for pair in message.get("headers", ())]}
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
                complete = not message.get("more_body", False)
            await send(message)

        entry: Entry | None = None
        rendered_at: str | None = None
        scope[ON_LENT] = lent
        try:
            await app(scope, receive, capture)
            if start is not None and complete and start["status"] == 200:
                entry = Entry(200, tuple(start["headers"]), b"".join(parts))
                if await anyio.to_thread.run_sync(self.readers.stamp) == flight.stamp:
                    rendered_at = flight.stamp  # nothing changed while it rendered
        finally:
            self._finish(key, flight, entry, rendered_at)

    def _finish(
        self, key: Key, flight: Flight, entry: Entry | None, rendered_at: str | None
    ) -> None:
        with self._lock:
            if self._flights.get(key) is flight:
                del self._flights[key]
            waiters, flight.waiters = flight.waiters, []
            if entry is not None and rendered_at is not None:
                self._keep(key, rendered_at, entry)
        for waiter in waiters:
            waiter.get_loop().call_soon_threadsafe(_resolve, waiter, entry)

    def _keep(self, key: Key, stamp: str, entry: Entry) -> None:
        if len(entry.body) > self.max_bytes // 4:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= len(old[1].body)
        self._entries[key] = (stamp, entry)
        self._bytes += len(entry.body)
        while self._entries and (
            len(self._entries) > self.max_entries or self._bytes > self.max_bytes
        ):
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= len(dropped.body)


class ServeShared:
    """ASGI middleware: requests for ``SHARED`` go through ``shared``; it sits
    inside the host check and outside gzip, so a kept response is kept compressed
    (whether the request takes gzip is part of its key)."""

    def __init__(self, app: ASGIApp, shared: SharedRenders) -> None:
        self.app = app
        self.shared = shared

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and SHARED.fullmatch(scope["path"]):
            await self.shared.respond(self.app, scope, receive, send)
        else:
            await self.app(scope, receive, send)


def _resolve(waiter: asyncio.Future[Entry | None], entry: Entry | None) -> None:
    if not waiter.done():
        waiter.set_result(entry)


def request_key(scope: Scope, stamp: str | None) -> Key | None:
    """What a shared response must match: path, query (the poll's ``since`` left out),
    htmx fragment or not, gzip or not. None for a poll whose ``since`` is the stamp
    (the route answers it 204) or holds what the route refuses."""
    query = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
    if scope["path"] == OVERVIEW_POLL:
        since = [value for name, value in query if name == "since"]
        if since:
            if len(since) > 1 or since[0] == stamp or len(since[0]) > TEXT_LIMIT:
                return None
            query = [(name, value) for name, value in query if name != "since"]
    headers = Headers(scope=scope)
    gzip = "gzip" in headers.get("Accept-Encoding", "")  # as GZipMiddleware decides
    return (scope["path"], tuple(query), fragment_requested(headers), gzip)
