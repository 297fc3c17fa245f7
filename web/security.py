"""Headers every response carries, the hosts the server answers for, and the CSRF
check the write routes make.

Agent state is untrusted text: pages are autoescaped, and the Content-Security-Policy
lets only our own scripts run (no inline script, no eval), so a value that slipped
through as markup still could not execute. Writes (only with ``--allow-writes``) need
the per-server token that only our own pages know, and a same-origin ``Origin``.

DNS rebinding: a page on ``http://evil.example:8000`` whose name the attacker then
points at 127.0.0.1 is, to the browser, same-origin with our server, so the
Content-Security-Policy and the same-origin policy do not stop it reading every page
(and the CSRF token). What gives it away is the name: its requests say
``Host: evil.example:8000``. So the server answers only requests whose ``Host`` names
one of the hosts it was started for (``AllowedHosts``: 127.0.0.1, localhost, [::1],
the ``--host`` value and the names given with ``--allow-host``), and a write's
``Origin`` must name one of them too. Any port of an allowed name is accepted: a
rebound request always carries the port the server really listens on (only the name
is rebound), so checking the port would stop no attack, and it would break the ports
an SSH tunnel or a container forwards (``ssh -L 9000:localhost:8000``). A write's
``Origin`` must still equal its ``Host``, port included.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import secrets
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import rewinddb

from .rendering import error_response

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        # Plotly sets inline styles on the SVG it draws; no inline *scripts* run.
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    ]
)
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"


#: What every response carries, unless its route set the header itself.
SECURITY_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
)


class SecurityHeaders:
    """Add ``SECURITY_HEADERS`` to every HTTP response as its headers go out (a plain
    ASGI middleware: the body streams through untouched, with no task per request)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _ in headers}
                headers += [item for item in SECURITY_HEADERS if item[0] not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


def csrf_ok(
    request: Request, expected: str, submitted: str | None, allowed_hosts: frozenset[str]
) -> bool:
    """True if ``submitted`` is this server's token and the request came from one of
    its own pages: a browser sends ``Origin`` on POSTs, and it must name an allowed
    host and equal the request's own ``Host`` (scheme and port included)."""
    origin = request.headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin)
        host = request.headers.get("host", "")
        if (
            origin == "null"
            or host_name(parts.netloc) not in allowed_hosts
            or (parts.scheme, parts.netloc.lower()) != (request.url.scheme, host.lower())
        ):
            return False
    return submitted is not None and hmac.compare_digest(
        submitted.encode("utf-8", "surrogatepass"), expected.encode()
    )


# -- the hosts the server answers for ------------------------------------------------

#: Always allowed: the names of this machine's loopback interface.
DEFAULT_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: More allowed names, comma-separated, for ``uvicorn rewinddb.web.app:create_app
#: --factory`` (read when ``create_app`` is given no ``allowed_hosts``).
HOSTS_ENV = "REWINDDB_ALLOWED_HOSTS"

_HOST = re.compile(r"(?P<name>\[[0-9a-f:.]+\]|[a-z0-9_.-]+)(?::[0-9]{1,5})?")
_NAME = re.compile(r"[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?")


def host_name(netloc: str) -> str | None:
    """The host name of a ``Host`` header (or an ``Origin``'s netloc): lowercase,
    without its port, an IPv6 address in brackets, a final dot dropped; None if it
    is not a well-formed ``host[:port]``."""
    found = _HOST.fullmatch(netloc.strip().lower())
    if found is None:
        return None
    name = found["name"]
    if name.startswith("["):
        try:
            return f"[{ipaddress.IPv6Address(name[1:-1]).compressed}]"
        except ValueError:
            return None
    name = name.removesuffix(".")
    if _NAME.fullmatch(name) is None or ".." in name:
        return None
    return name


def allowed_host(name: object) -> str:
    """A name ``--allow-host`` or ``allowed_hosts=`` gives, as ``host_name`` writes it
    (``::1`` and ``[::1]`` are both ``[::1]``; a non-ASCII name in its IDNA form)."""
    if not isinstance(name, str):
        raise rewinddb.InvalidInputError(
            f"an allowed host is a name, not {type(name).__name__}", code="invalid.option"
        )
    text = name.strip()
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return f"[{ipaddress.IPv6Address(bare).compressed}]"
    except ValueError:
        pass
    if ":" in text and not text.startswith("["):
        problem = "give it without a port (any port of an allowed name is accepted)"
    elif "*" in text:
        problem = "wildcards are not accepted: give each name"
    else:
        try:
            found = host_name(text.encode("idna").decode("ascii")) if text else None
        except UnicodeError:
            found = None
        if found is not None:
            return found
        problem = "it is neither a host name nor an IP address"
    raise rewinddb.InvalidInputError(
        f"cannot allow the host {name!r}: {problem}", code="invalid.option"
    )


def allowed_hosts(names: Iterable[str] | None) -> frozenset[str]:
    """The defaults plus ``names`` (None: those in ``$REWINDDB_ALLOWED_HOSTS``)."""
    if names is None:
        names = [part for part in os.environ.get(HOSTS_ENV, "").split(",") if part.strip()]
    elif isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise rewinddb.InvalidInputError(
            f"allowed_hosts is a list of names, not {type(names).__name__}",
            code="invalid.option",
        )
    return frozenset([*DEFAULT_HOSTS, *(allowed_host(name) for name in names)])


class AllowedHosts:
    """Answer only requests whose ``Host`` names an allowed host (any port); others get
    421 Misdirected Request (400 for a missing or malformed ``Host``), an error page,
    JSON under ``/api``, before anything reads the database."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        values = [value for key, value in scope["headers"] if key == b"host"]
        name = host_name(values[0].decode("latin-1")) if len(values) == 1 else None
        if name in self.hosts:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if name is None:
            status, message = 400, "the request needs one well-formed Host header"
        else:
            status = 421
            message = (
                f"this server does not answer for the host {name!r}: start it with "
                f"--allow-host {name} (or set {HOSTS_ENV}) if that name is yours"
            )
        request = Request(scope)
        response = error_response(request, status, "invalid.host", message, with_token=False)
        await response(scope, receive, send)
