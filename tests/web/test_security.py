"""Agent state is untrusted text: everything is escaped, scripts cannot run (CSP), the
server is read-only unless told, and writes need the CSRF token."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

import rewinddb
from rewinddb.cli import build_parser
from rewinddb.web import create_app
from rewinddb.web.security import CONTENT_SECURITY_POLICY
from rewinddb.web.urls import tilde_encode

EVIL = [
    "<script>window.__pwned=1</script>",
    '"><img src=x onerror="window.__pwned=2">',
    "'><svg onload=alert(3)>",
    "</script><script>alert(4)</script>",
    "javascript:alert(5)",
]


@pytest.fixture(scope="module")
def evil_client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    path = tmp_path_factory.mktemp("evil") / "db"
    with rewinddb.open(path) as db:
        for index, text in enumerate(EVIL):
            db.kv.put(text, text)
            db.json.set(f"doc{index}", "$", {text: [text, {"nested": text}]})
            db.state.set(text, text, trigger=text)
            db.events.append(text, {"payload": text})
            db.branches.fork("default", text)
            db.at(text).events.append("tool.call", {text: text})
    return TestClient(create_app(path), base_url="http://localhost")


def _pages(client: TestClient) -> list[str]:
    urls = ["/", "/fragments/overview?since=0", "/compare?a=default&b=" + EVIL[0]]
    for index, text in enumerate(EVIL):
        branch = tilde_encode(text)
        urls += [
            f"/branches/{branch}",
            f"/branches/{branch}/events/{index + 1}",  # its own event, after the inherited
            f"/branches/default/keys/{tilde_encode(text)}?space=kv",
            f"/branches/default/keys/{tilde_encode(text)}?space=state",
            # what a key page's "value" loads when opened
            f"/branches/default/value?space=kv&key={quote(text)}",
        ]
    urls += [f"/branches/default/events/{i}" for i in range(len(EVIL))]
    urls += ["/branches/default/keys/doc1?space=json"]
    return urls


def test_every_value_is_escaped_in_every_page(evil_client: TestClient) -> None:
    for url in _pages(evil_client):
        response = evil_client.get(url)
        assert response.status_code == 200, (url, response.text[:300])
        html = response.text
        for tag in ("<script>window", "<img src=x", "<svg onload", "<script>alert"):
            assert tag not in html, (url, tag)
        # The only <script> elements are ours: external files, or JSON data blocks.
        for script in re.findall(r"<script[^>]*>", html):
            assert 'src="/static' in script or 'type="application/json"' in script, script
        assert _handler_attributes(html) == [], url


class _Attributes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            url = name in ("href", "src", "action", "formaction", "hx-get", "hx-post")
            if name.startswith("on") or (url and "javascript:" in (value or "").lower()):
                self.found.append((tag, name))


def _handler_attributes(html: str) -> list[tuple[str, str]]:
    """Event-handler attributes and javascript: URLs in the page's real markup."""
    parser = _Attributes()
    parser.feed(html)
    return parser.found


def test_the_text_is_still_shown(evil_client: TestClient) -> None:
    page = evil_client.get(f"/branches/{tilde_encode(EVIL[0])}").text
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page


def test_embedded_graph_json_stays_inert(evil_client: TestClient) -> None:
    html = evil_client.get("/").text
    attribute = html.split('data-figure="', 1)[1].split('"', 1)[0]
    assert "<" not in attribute and ">" not in attribute
    assert "\\u003c/script\\u003e" in attribute


def test_every_response_has_a_content_security_policy(evil_client: TestClient) -> None:
    for url in ("/", "/branches/default", "/.json", "/branches/nope"):
        policy = evil_client.get(url).headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-eval" not in policy
        assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    assert (
        "access-control-allow-origin"
        not in evil_client.get("/.json", headers={"Origin": "http://evil.example"}).headers
    )


def test_every_kind_of_response_carries_the_security_headers(evil_client: TestClient) -> None:
    """Pages, fragments, JSON, assets, errors (a 404, a refused host) and gzipped bodies
    each get the four headers once."""
    wanted = {
        "content-security-policy": CONTENT_SECURITY_POLICY,
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin",
        "x-frame-options": "DENY",
    }
    answers = [
        evil_client.get("/", headers={"Accept-Encoding": "gzip"}),
        evil_client.get("/fragments/overview", headers={"HX-Request": "true"}),
        evil_client.get("/api/branches"),
        evil_client.get("/static/app.js"),
        evil_client.get("/branches/nope"),
        evil_client.get("/", headers={"Host": "evil.example"}),
    ]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 200, 404, 421]
    assert answers[0].headers["content-encoding"] == "gzip"
    for answer in answers:
        for name, value in wanted.items():
            assert answer.headers.get_list(name) == [value], (answer.url, name)


def test_read_only_by_default(demo_path: Path) -> None:
    app = create_app(demo_path)
    assert app.state.db.readonly
    with TestClient(app, base_url="http://localhost") as client:
        for url in ("/merge", "/branches/run-1/fork"):
            response = client.post(url, data={"source": "run-1", "target": "default"})
            assert response.status_code in (404, 405)
        posts = [route for route in app.routes if "POST" in getattr(route, "methods", set())]
        assert posts == []


def test_serve_binds_to_localhost_and_is_read_only_unless_told() -> None:
    args = build_parser().parse_args(["serve", "somewhere"])
    assert (args.host, args.allow_writes) == ("127.0.0.1", False)
    args = build_parser().parse_args(["demo"])
    assert (args.host, args.allow_writes) == ("127.0.0.1", False)


def test_writes_need_the_csrf_token(writable: TestClient) -> None:
    form = {"name": "from-event-3", "at_event": "3"}
    assert writable.post("/branches/research/fork", data=form).status_code == 403
    wrong = {**form, "csrf_token": "guess"}
    assert writable.post("/branches/research/fork", data=wrong).status_code == 403
    token = writable.app.state.csrf_token  # type: ignore[attr-defined]
    foreign = writable.post(
        "/branches/research/fork",
        data={**form, "csrf_token": token},
        headers={"Origin": "http://evil.example"},
    )
    assert foreign.status_code == 403
    assert "from-event-3" not in writable.get("/api/branches").text
    ok = writable.post(
        "/branches/research/fork", data={**form, "csrf_token": token}, follow_redirects=False
    )
    assert ok.status_code == 303 and ok.headers["location"] == "/branches/from-event-3"
    forked = writable.get("/branches/from-event-3.json").json()["branch"]
    assert forked["parent"] == "research" and forked["events"] == 4
    via_htmx = writable.post(
        "/branches/research/fork",
        data={"name": "by-htmx", "at_event": "2"},
        headers={"HX-Request": "true", "X-CSRF-Token": token},
    )
    assert via_htmx.status_code == 204 and via_htmx.headers["HX-Redirect"] == "/branches/by-htmx"


def test_merge_shows_the_receipt_or_every_conflict(writable: TestClient) -> None:
    token = writable.app.state.csrf_token  # type: ignore[attr-defined]
    before = writable.get("/api/version").json()
    refused = writable.post(
        "/merge", data={"source": "run-2", "target": "run-3", "csrf_token": token}
    )
    assert refused.status_code == 409
    assert "Nothing was written" in refused.text and "portfolio" in refused.text
    assert writable.get("/api/version").json() == before
    merged = writable.post(
        "/merge",
        data={"source": "run-2", "target": "run-3", "strategy": "source", "csrf_token": token},
    )
    assert merged.status_code == 200 and "merge commit" in merged.text
    bad = writable.post("/merge", data={"source": "run-2", "target": "nope", "csrf_token": token})
    assert bad.status_code == 404
    existing = writable.post("/branches/research/fork", data={"name": "run-1", "csrf_token": token})
    assert existing.status_code == 409
