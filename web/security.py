"""Headers every response carries, and the CSRF check the write routes make.

Agent state is untrusted text: pages are autoescaped, and the Content-Security-Policy
lets only our own scripts run (no inline script, no eval), so a value that slipped
through as markup still could not execute. Writes (only with ``--allow-writes``) need
the per-server token that only our own pages know, and a same-origin ``Origin``.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import Response

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


class SecurityHeaders(BaseHTTPMiddleware):
    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


def csrf_ok(request: Request, expected: str, submitted: str | None) -> bool:
    """True if ``submitted`` is this server's token and the request came from one of
    its own pages (a browser sends ``Origin`` on cross-site POSTs)."""
    origin = request.headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin)
        if origin == "null" or (parts.scheme, parts.netloc) != (
            request.url.scheme,
            request.headers.get("host", ""),
        ):
            return False
    return submitted is not None and hmac.compare_digest(
        submitted.encode("utf-8", "surrogatepass"), expected.encode()
    )
