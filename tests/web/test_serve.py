"""``rewinddb demo`` and ``rewinddb serve`` as real processes on localhost."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

import rewinddb


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def build_demo_process(path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "rewinddb", "demo", str(path), "--no-serve"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert built.returncode == 0, built.stderr
    assert "built a demo database" in built.stdout


@contextmanager
def serving(path: Path, *options: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``rewinddb serve path --port P *options`` as a real process, once it answers."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "rewinddb", "serve", str(path), "--port", str(port), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "/api/version", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stdout.read() if server.stdout else ""
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        yield url, server
    finally:
        server.terminate()
        server.communicate(timeout=10)  # reaps it and closes its pipe


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, subprocess.Popen[str]]]:
    path = tmp_path / "demo"
    build_demo_process(path)
    with serving(path) as (url, server):
        yield url, path, server


def test_serve_answers_on_localhost_read_only(
    served: tuple[str, Path, subprocess.Popen[str]],
) -> None:
    url, _path, _server = served
    assert "research-retry-2" in httpx.get(url + "/").text
    assert httpx.post(url + "/merge", data={"source": "run-1"}).status_code in (404, 405)


def test_another_process_appends_and_the_live_timeline_sees_it(
    served: tuple[str, Path, subprocess.Popen[str]],
) -> None:
    url, path, _server = served
    length = httpx.get(url + "/branches/research.json").json()["branch"]["events"]
    poll = f"{url}/branches/research/timeline?after={length - 1}&poll=1"
    assert httpx.get(poll).status_code == 204
    with rewinddb.open(path) as db:
        db.at("research").events.append("live.event", {"n": 1})
    fresh = httpx.get(poll)
    assert fresh.status_code == 200 and "live.event" in fresh.text
    stamp = httpx.get(url + "/api/version").json()["stamp"]
    assert httpx.get(f"{url}/fragments/overview?since={stamp}").status_code == 204
    with rewinddb.open(path) as db:
        db.branches.fork("research", "new-idea")  # no new version, but a new branch
    assert httpx.get(f"{url}/fragments/overview?since={stamp}").status_code == 200


def test_serve_refuses_a_missing_database(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "rewinddb", "serve", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "no rewinddb database" in result.stderr


def serve_once(path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewinddb", "serve", str(path), *options],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_serve_refuses_a_port_that_is_no_port(tmp_path: Path) -> None:
    for port in ("99999", "-1", "http"):
        result = serve_once(tmp_path, "--port", port)
        assert result.returncode == 2, port
        assert "is not a port number" in result.stderr and "Traceback" not in result.stderr
        assert "press Ctrl-C" not in result.stdout


def test_serve_says_the_port_is_in_use_before_announcing_anything(
    served: tuple[str, Path, subprocess.Popen[str]],
) -> None:
    url, path, _server = served
    result = serve_once(path, "--port", url.rsplit(":", 1)[1])
    assert result.returncode == 1
    assert "cannot listen on 127.0.0.1 port" in result.stderr and "in use" in result.stderr
    assert "Traceback" not in result.stderr and "press Ctrl-C" not in result.stdout


def test_serve_on_port_0_announces_the_port_it_got(tmp_path: Path) -> None:
    path = tmp_path / "demo"
    build_demo_process(path)
    server = subprocess.Popen(
        [sys.executable, "-m", "rewinddb", "serve", str(path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        url = banner.split(": ", 1)[1].strip().rstrip("/")
        port = int(url.rsplit(":", 1)[1])
        assert port > 0
        deadline = time.monotonic() + 30
        while True:
            try:
                assert "research" in httpx.get(url + "/api/branches", timeout=1).text
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
    finally:
        server.terminate()
        server.communicate(timeout=10)


def test_demo_reuses_an_existing_demo(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "rewinddb", "demo", str(tmp_path / "d"), "--no-serve"]
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    again = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "using the demo database already" in again.stdout


def test_uvicorn_factory_reads_the_path_and_hosts_from_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "demo"
    subprocess.run(
        [sys.executable, "-m", "rewinddb", "demo", str(path), "--no-serve"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "rewinddb.web.app:create_app",
            "--factory",
            "--port",
            str(port),
        ],
        env={**os.environ, "REWINDDB_PATH": str(path), "REWINDDB_ALLOWED_HOSTS": "agent.box"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/api/branches", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None, server.communicate()[0]
                assert time.monotonic() < deadline, "uvicorn did not start"
                time.sleep(0.1)
        assert "research" in {branch["name"] for branch in response.json()}
        api = f"http://127.0.0.1:{port}/api/branches"
        assert httpx.get(api, headers={"Host": f"agent.box:{port}"}).status_code == 200
        refused = httpx.get(api, headers={"Host": f"evil.example:{port}"})
        assert refused.status_code == 421 and "research" not in refused.text
    finally:
        server.terminate()
        server.communicate(timeout=10)


def test_create_app_without_a_path_says_what_to_give(monkeypatch: pytest.MonkeyPatch) -> None:
    from rewinddb.web import create_app

    monkeypatch.delenv("REWINDDB_PATH", raising=False)
    with pytest.raises(rewinddb.RewindError) as info:
        create_app()
    assert info.value.code == "invalid.path" and "REWINDDB_PATH" in str(info.value)


# -- DNS rebinding, against the real server -------------------------------------------


def rebound(url: str) -> dict[str, str]:
    """The headers of a request from a page on evil.example rebound to 127.0.0.1."""
    port = url.rsplit(":", 1)[1]
    return {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}


def test_a_rebound_name_reads_nothing_from_rewinddb_serve(
    served: tuple[str, Path, subprocess.Popen[str]],
) -> None:
    url, _path, _server = served
    for page in ("/", "/.json", "/api/branches", "/branches/research/events/3"):
        response = httpx.get(url + page, headers=rebound(url))
        assert response.status_code == 421, page
        assert "research" not in response.text and "run-1" not in response.text
    assert "research" in httpx.get(url + "/api/branches").text
    assert httpx.get(url + "/api/branches", headers={"Host": "localhost:1"}).status_code == 200


def test_a_rebound_name_cannot_fork_on_rewinddb_serve_with_writes(tmp_path: Path) -> None:
    path = tmp_path / "demo"
    build_demo_process(path)
    with serving(path, "--allow-writes", "--allow-host", "agent.box") as (url, _server):
        page = httpx.get(url + "/").text
        token = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        assert len(token) > 20
        evil = rebound(url)
        stolen = httpx.get(url + "/", headers=evil).text
        assert token not in stolen
        for headers in (evil, {**evil, "X-CSRF-Token": token, "HX-Request": "true"}):
            fork = httpx.post(
                url + "/branches/research/fork",
                data={"name": "stolen", "csrf_token": token},
                headers=headers,
            )
            assert fork.status_code == 421
        merge = httpx.post(
            url + "/merge",
            data={"source": "run-2", "target": "run-3", "strategy": "source", "csrf_token": token},
            headers=evil,
        )
        assert merge.status_code == 421
        names = {branch["name"] for branch in httpx.get(url + "/api/branches").json()}
        assert "stolen" not in names
        # A foreign Origin on the real Host: the CSRF check refuses it too.
        foreign = httpx.post(
            url + "/branches/research/fork",
            data={"name": "stolen", "csrf_token": token},
            headers={"Origin": evil["Origin"]},
        )
        assert foreign.status_code == 403
        # The name given with --allow-host is answered, and may write from its own pages.
        port = url.rsplit(":", 1)[1]
        boxed = {"Host": f"agent.box:{port}", "Origin": f"http://agent.box:{port}"}
        assert httpx.get(url + "/api/branches", headers=boxed).status_code == 200
        mine = httpx.post(
            url + "/branches/research/fork",
            data={"name": "mine", "csrf_token": token},
            headers=boxed,
        )
        assert mine.status_code == 303


def test_a_request_without_a_host_is_400(
    served: tuple[str, Path, subprocess.Popen[str]],
) -> None:
    url, _path, _server = served
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /api/branches HTTP/1.0\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400") and b"research" not in answer


# -- many readers while an agent writes ------------------------------------------------

WRITER = """
import sys, time
import rewinddb
with rewinddb.open(sys.argv[1]) as db:
    view = db.at("research")
    deadline = time.monotonic() + float(sys.argv[2])
    steps = 0
    while time.monotonic() < deadline:
        with view.transaction(trigger="agent.step"):
            view.events.append("agent.step", {"n": steps})
            view.kv.put("steps", steps)
        steps += 1
        time.sleep(0.02)
print(steps)
"""


def test_concurrent_readers_while_another_process_writes(tmp_path: Path) -> None:
    """20 clients for 3 s on ``--read-connections 3`` while an agent appends: every
    answer is 200 or 204 (none a 5xx, none refused), and the readers see the writes."""
    import asyncio

    path = tmp_path / "demo"
    build_demo_process(path)
    with serving(path, "--read-connections", "3") as (url, _server):
        start = httpx.get(url + "/branches/research.json").json()["branch"]["events"]
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), "3"], stdout=subprocess.PIPE, text=True
        )
        pages = [
            "/api/version",
            "/branches/research/timeline?after=0&poll=1",
            "/fragments/overview?since=0",
            "/branches/research",
            "/branches/research/events/3",
            "/api/branches/research/events",
            "/",
        ]

        async def load() -> list[int]:
            statuses: list[int] = []
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:

                async def one(offset: int) -> None:
                    deadline = time.monotonic() + 3
                    n = offset
                    while time.monotonic() < deadline and n < offset + 500:
                        response = await client.get(pages[n % len(pages)])
                        statuses.append(response.status_code)
                        n += 1

                await asyncio.gather(*(one(i) for i in range(20)))
            return statuses

        statuses = asyncio.run(load())
        steps = int(writer.communicate(timeout=30)[0])
        end = httpx.get(url + "/branches/research.json").json()["branch"]["events"]
    assert steps > 10 and end == start + steps
    assert len(statuses) > 50
    assert set(statuses) <= {200, 204}, sorted(set(statuses))
