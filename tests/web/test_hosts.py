"""DNS rebinding: the explorer answers only for the hosts it was started for.

A page on ``http://evil.example:PORT`` whose name is then pointed at 127.0.0.1 is, to the
browser, same-origin with the explorer; its requests say ``Host: evil.example:PORT``.
They get 421 (no agent state, no CSRF token), and a write's ``Origin`` must name an
allowed host too. (The same against real ``rewinddb serve`` processes is in
test_serve.py; in Chromium, in test_browser.py.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request

import rewinddb
from rewinddb.cli import build_parser, main
from rewinddb.demo import build_demo
from rewinddb.web import create_app
from rewinddb.web.security import HOSTS_ENV, allowed_host, allowed_hosts, csrf_ok, host_name

EVIL = "http://evil.example:8000"
#: Pages full of agent state (and their JSON), the static files and the API schema.
READS = [
    "/",
    "/.json",
    "/fragments/overview",
    "/branches/research",
    "/branches/research.json",
    "/branches/research/events/3",
    "/branches/research/timeline?after=-1",
    "/branches/research/keys/plan?space=json",
    "/compare?a=run-1&b=run-2",
    "/api/overview",
    "/api/branches",
    "/api/branches/research/events",
    "/api/version",
    "/api/openapi.json",
    "/api/docs",
    "/static/app.js",
    "/nothing-here",
]
#: Text that is in the demo's pages (agent state, branch names) and must not leak.
SECRETS = ("research", "run-1", "portfolio")


def token_of(html: str) -> str:
    found = re.search(r'<meta name="csrf-token" content="([^"]*)">', html)
    assert found is not None, html[:300]
    return found.group(1)


@pytest.fixture
def writable_app(tmp_path: Path) -> Iterator[tuple[Path, TestClient]]:
    path = tmp_path / "demo"
    build_demo(path).close()
    with TestClient(create_app(path, allow_writes=True), base_url="http://localhost") as client:
        yield path, client


def branch_names(path: Path) -> set[str]:
    with rewinddb.open(path, readonly=True) as db:
        return set(db.branches.names())


def test_a_foreign_host_reads_nothing(client: TestClient) -> None:
    for url in READS:
        response = client.get(url, headers={"Host": "evil.example:8000"})
        assert response.status_code == 421, (url, response.status_code)
        assert not any(secret in response.text for secret in SECRETS), url
        assert "content-security-policy" in response.headers  # still one of our responses
        if url.startswith("/api/") or url.endswith(".json"):
            assert response.json()["error"]["code"] == "invalid.host", url
        else:
            assert "421 not this server" in response.text and "invalid.host" in response.text


def test_the_local_names_are_answered_on_any_port(client: TestClient) -> None:
    for host in (
        "127.0.0.1:8000",
        "localhost:1234",
        "LOCALHOST",
        "localhost.:80",
        "[::1]:8000",
        "[0:0::1]",
        "127.0.0.1",
    ):
        response = client.get("/api/branches", headers={"Host": host})
        assert response.status_code == 200, host
        assert "research" in response.text


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:8000",
        "localhost.evil.example:8000",
        "127.0.0.1.evil.example",
        "127.0.0.2:8000",  # another loopback address is another name
        "[::2]:8000",
        "0.0.0.0:8000",  # not the --host the app was made for
    ],
)
def test_other_names_are_421(client: TestClient, host: str) -> None:
    response = client.get("/api/overview", headers={"Host": host})
    assert response.status_code == 421 and "research" not in response.text


@pytest.mark.parametrize(
    "host", ["", "evil example", "localhost:", "localhost:port", "localhost:99999999", "[::1"]
)
def test_malformed_hosts_are_400(client: TestClient, host: str) -> None:
    response = client.get("/api/overview", headers={"Host": host})
    assert response.status_code == 400 and "research" not in response.text
    assert response.json()["error"]["code"] == "invalid.host"


def test_a_rebound_page_gets_no_csrf_token(writable_app: tuple[Path, TestClient]) -> None:
    _path, client = writable_app
    assert token_of(client.get("/").text) == client.app.state.csrf_token  # type: ignore[attr-defined]
    refused = client.get("/", headers={"Host": "evil.example:8000"})
    assert refused.status_code == 421
    assert client.app.state.csrf_token not in refused.text  # type: ignore[attr-defined]
    assert token_of(refused.text) == ""


def test_a_rebound_page_cannot_fork_or_merge(writable_app: tuple[Path, TestClient]) -> None:
    path, client = writable_app
    token = client.app.state.csrf_token  # type: ignore[attr-defined]
    before = branch_names(path)
    version = client.get("/api/version").json()
    evil = {"Host": "evil.example:8000", "Origin": EVIL}
    fork = client.post(
        "/branches/research/fork",
        data={"name": "stolen", "csrf_token": token},
        headers=evil,
        follow_redirects=False,
    )
    assert fork.status_code == 421
    via_htmx = client.post(
        "/branches/research/fork",
        data={"name": "stolen"},
        headers={**evil, "HX-Request": "true", "X-CSRF-Token": token},
    )
    assert via_htmx.status_code == 421
    merge = client.post(
        "/merge",
        data={"source": "run-2", "target": "run-3", "strategy": "source", "csrf_token": token},
        headers=evil,
    )
    assert merge.status_code == 421
    assert branch_names(path) == before
    assert client.get("/api/version").json() == version  # nothing was written
    ok = client.post(
        "/branches/research/fork",
        data={"name": "mine", "csrf_token": token},
        headers={"Origin": "http://localhost"},
        follow_redirects=False,
    )
    assert ok.status_code == 303 and "mine" in branch_names(path)


@pytest.mark.parametrize(
    "origin",
    [
        EVIL,  # a foreign name, with the request's own Host allowed
        "http://localhost:3000",  # another port of an allowed name: another origin
        "http://127.0.0.1",  # an allowed name, but not the request's Host
        "https://localhost",
        "null",
        "http://user@localhost",
    ],
)
def test_a_write_from_another_origin_is_403(
    writable_app: tuple[Path, TestClient], origin: str
) -> None:
    path, client = writable_app
    token = client.app.state.csrf_token  # type: ignore[attr-defined]
    response = client.post(
        "/branches/research/fork",
        data={"name": "from-elsewhere", "csrf_token": token},
        headers={"Origin": origin},
    )
    assert response.status_code == 403
    assert "from-elsewhere" not in branch_names(path)


def test_names_given_with_allowed_hosts_are_answered(tmp_path: Path) -> None:
    path = tmp_path / "demo"
    build_demo(path).close()
    app = create_app(path, allow_writes=True, allowed_hosts=["Agent.Box", "::1", "10.0.0.7"])
    with TestClient(app, base_url="http://agent.box:8000") as client:
        assert "research" in client.get("/api/branches").text
        token = token_of(client.get("/").text)
        fork = client.post(
            "/branches/research/fork",
            data={"name": "boxed", "csrf_token": token},
            headers={"Origin": "http://agent.box:8000"},
            follow_redirects=False,
        )
        assert fork.status_code == 303
        assert client.get("/", headers={"Host": "10.0.0.7:8000"}).status_code == 200
        assert client.get("/", headers={"Host": "evil.example:8000"}).status_code == 421
    assert app.state.allowed_hosts == {"127.0.0.1", "localhost", "[::1]", "agent.box", "10.0.0.7"}


def test_the_environment_adds_names_for_the_uvicorn_factory(
    demo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(HOSTS_ENV, " agent.box , notes.lan,")
    with TestClient(create_app(demo_path), base_url="http://notes.lan:8000") as client:
        assert client.get("/api/branches").status_code == 200
        assert client.get("/", headers={"Host": "agent.box"}).status_code == 200
    # Names given to create_app replace the environment's.
    explicit = create_app(demo_path, allowed_hosts=["other.lan"])
    with TestClient(explicit, base_url="http://notes.lan:8000") as client:
        assert client.get("/api/branches").status_code == 421
    monkeypatch.setenv(HOSTS_ENV, "bad:80")
    with pytest.raises(rewinddb.InvalidInputError) as info:
        create_app(demo_path)
    assert info.value.code == "invalid.option" and "without a port" in info.value.message


@pytest.mark.parametrize(
    ("names", "says"),
    [
        ("localhost", "list of names"),
        (b"localhost", "list of names"),
        (7, "list of names"),
        ([7], "is a name, not int"),
        ([None], "is a name, not NoneType"),
        (["agent.box:8000"], "without a port"),
        (["http://agent.box"], "without a port"),
        (["*.example"], "wildcards"),
        ([""], "neither a host name"),
        (["a b"], "neither a host name"),
        (["evil..example"], "neither a host name"),
        (["agent/box"], "neither a host name"),
        (["[::g]"], "neither a host name"),
    ],
)
def test_bad_allowed_hosts_are_refused(demo_path: Path, names: object, says: str) -> None:
    with pytest.raises(rewinddb.InvalidInputError) as info:
        create_app(demo_path, allowed_hosts=names)  # type: ignore[arg-type]
    assert info.value.code == "invalid.option" and says in info.value.message


def test_host_names_are_read_as_a_browser_writes_them() -> None:
    assert host_name("LocalHost:8000") == "localhost"
    assert host_name("[0:0:0::1]:80") == "[::1]"
    assert host_name("localhost.") == "localhost"
    for bad in ("", " ", "a b", "[::1", "::1", ":80", "x:", "x:²", "user@localhost", "a..b"):
        assert host_name(bad) is None, bad
    assert allowed_host("Bücher.Example") == "xn--bcher-kva.example"
    assert allowed_host("[::1]") == allowed_host("::1") == "[::1]"
    assert allowed_hosts([]) == {"127.0.0.1", "localhost", "[::1]"}


def test_serve_takes_allow_host_and_refuses_bad_names(
    demo_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = build_parser().parse_args(
        ["serve", "db", "--allow-host", "a.lan", "--allow-host", "b.lan"]
    )
    assert args.allow_host == ["a.lan", "b.lan"]
    assert build_parser().parse_args(["serve", "db"]).allow_host is None
    assert main(["serve", str(demo_path), "--allow-host", "a.lan:8000"]) == 1
    assert "without a port" in capsys.readouterr().err
    assert main(["serve", str(demo_path), "--host", "not a host"]) == 1
    assert "cannot allow the host" in capsys.readouterr().err


def request_from(host: str, origin: str) -> Request:
    headers = [(b"host", host.encode()), (b"origin", origin.encode())]
    scope = {"type": "http", "method": "POST", "scheme": "http", "path": "/merge"}
    return Request({**scope, "query_string": b"", "headers": headers})


def test_csrf_ok_wants_an_origin_on_the_allowed_list() -> None:
    hosts = allowed_hosts(["agent.box"])
    token = "t" * 40
    assert csrf_ok(request_from("agent.box:8000", "http://agent.box:8000"), token, token, hosts)
    assert csrf_ok(request_from("localhost:8000", "http://localhost:8000"), token, token, hosts)
    # Origin equal to Host is not enough when the name is not allowed (the Host check
    # stops such requests first; this is the second lock).
    for host in ("evil.example:8000", "evil.example", "agent.box.evil.example:80"):
        assert not csrf_ok(request_from(host, f"http://{host}"), token, token, hosts), host
    assert not csrf_ok(request_from("localhost:8000", "http://localhost:8000"), token, "t", hosts)
    assert not csrf_ok(request_from("localhost:8000", "http://[::1]:8000"), token, token, hosts)
