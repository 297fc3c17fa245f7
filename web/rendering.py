"""Jinja2 templates, filters and the response helpers every route uses.

Templates are autoescaped: every value that reaches a page is escaped, agent state
included. JSON embedded in a page (the Plotly figure, in an attribute) also has ``<``,
``>`` and ``&`` written as ``\\u003c`` escapes, so it stays inert wherever it is put.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
import orjson
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from rewinddb import presenters
from rewinddb.presenters import readable, short
from rewinddb.story import question_text, role_of, status_text

from .assets import HTMX_VERSION
from .urls import (
    branch_url,
    compare_url,
    event_url,
    key_url,
    point_text,
    step_url,
    steps_url,
    tilde_encode,
    transcript_url,
)

TEMPLATES = Path(__file__).parent / "templates"
#: Characters of a value's JSON text shown in a page before "load all".
VALUE_LIMIT = 300
#: Children of an object or array shown in a tree before "N more".
CHILDREN_LIMIT = 100


def json_bytes(data: Any, *, indent: bool = False) -> bytes:
    option = orjson.OPT_SORT_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(data, option=option, default=_default)


def _default(value: Any) -> Any:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    raise TypeError(f"cannot encode {type(value).__name__}")


def script_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">`` (and still valid JSON)."""
    text = json_bytes(data).decode()
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def value_text(value: Any, limit: int | None = VALUE_LIMIT) -> tuple[str, int]:
    """(JSON text shortened to ``limit`` characters, full length). Templates decode a
    value once, at its top (the ``readable`` filter), before they show it."""
    text = json_bytes(value).decode()
    if limit is not None and len(text) > limit:
        return text[:limit], len(text)
    return text, len(text)


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 key``, ``2 keys``, ``1,000 branches`` (``many``: the plural, if not ``word + s``)."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"


def visible(name: str) -> str:
    """A name as a link can show it: a blank one (a thread id of spaces, or empty) as
    visible spaces, so it is not an invisible link."""
    if name.strip():
        return name
    return "␣" * len(name) if name else "(empty)"


def noun(count: int, word: str, many: str | None = None) -> str:
    """``word`` for one, its plural for any other count (``plural`` without the number)."""
    return word if count == 1 else many or word + "s"


def split_rows(changes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Diff rows (``Change.to_dict()``, perhaps with ``label`` and ``hidden``) as (shown,
    hidden), each with a ``label`` (its key, unless a presenter named it)."""
    shown: list[dict[str, Any]] = []
    hidden: list[dict[str, Any]] = []
    for change in changes:
        row = change if "label" in change else {**change, "label": change["key"]}
        (hidden if row.get("hidden") else shown).append(row)
    return shown, hidden


def kind_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many of ``rows`` (``Change.to_dict()``) add, remove and change something: a
    diff's head counts the rows it shows, and names the hidden ones apart."""
    counts = {"added": 0, "removed": 0, "changed": 0}
    for row in rows:
        counts[row["kind"]] += 1
    return counts


def is_container(value: Any) -> bool:
    return isinstance(value, (dict, list)) and bool(value)


def children(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [(str(key), item) for key, item in value.items()]
    return [(f"[{index}]", item) for index, item in enumerate(value)]


def make_templates(*, allow_writes: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        value_text=value_text,
        value_line=presenters.value_text,
        is_container=is_container,
        children=children,
        tilde=tilde_encode,
        script_json=script_json,
        readable=readable,
        plural=plural,
        visible=visible,
        noun=noun,
        role=role_of,
        question_text=question_text,
        shorten=short,
        split_rows=split_rows,
        kind_counts=kind_counts,
        status_text=status_text,
    )
    env.globals.update(
        branch_url=branch_url,
        event_url=event_url,
        key_url=key_url,
        compare_url=compare_url,
        step_url=step_url,
        steps_url=steps_url,
        transcript_url=transcript_url,
        point_text=point_text,
        allow_writes=allow_writes,
        htmx_version=HTMX_VERSION,
        CHILDREN_LIMIT=CHILDREN_LIMIT,
    )
    return env


def render(
    request: Request, template: str, context: dict[str, Any], status: int = 200
) -> HTMLResponse:
    env: jinja2.Environment = request.app.state.templates
    values = {
        "request": request,
        "csrf_token": request.app.state.csrf_token,
        "fragment": is_fragment(request),
        **context,  # may override csrf_token (an error page for a foreign host)
    }
    html = env.get_template(template).render(**values)
    response = HTMLResponse(html, status_code=status)
    # One URL answers a fragment to htmx and the whole page otherwise: caches (the
    # browser's back button included) must tell them apart.
    response.headers["Vary"] = "HX-Request"
    if is_fragment(request):
        response.headers["Cache-Control"] = "no-store"
    return response


def json_response(data: Any, status: int = 200) -> Response:
    return Response(json_bytes(data), status_code=status, media_type="application/json")


def is_fragment(request: Request) -> bool:
    """htmx asks for fragments (``HX-Request``) unless it is restoring history."""
    return fragment_requested(request.headers)


def fragment_requested(headers: Headers) -> bool:
    """``is_fragment`` of a request's headers."""
    return (
        headers.get("hx-request") == "true" and headers.get("hx-history-restore-request") != "true"
    )


def wants_json(request: Request) -> bool:
    path = request.url.path
    return path.startswith("/api/") or path.endswith(".json")


def error_response(
    request: Request, status: int, code: str, message: str, *, with_token: bool = True
) -> Response:
    """The error page (JSON under /api or for .json); ``with_token=False`` leaves the
    CSRF token out of it (a request for a host the server does not answer for)."""
    if wants_json(request):
        return json_response({"error": {"code": code, "message": message}}, status)
    context: dict[str, Any] = {"status": status, "code": code, "message": message}
    if not with_token:
        context["csrf_token"] = ""
    return render(request, "error.html", context, status)
