"""Several read connections: each request reads from a database of its own, so one slow
reader does not hold up the others. (Fifty clients against a real server while an agent
writes: benchmarks/web.py; a smaller run of that is in test_serve.py.)"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

import rewinddb
from rewinddb.demo import build_demo
from rewinddb.web import create_app
from rewinddb.web.pages import db_of
from rewinddb.web.readers import (
    DEFAULT_READERS,
    DEFAULT_SERVER_READERS,
    READERS_ENV,
    Readers,
    default_readers,
)

LOCAL = "http://localhost"


class Held:
    """A route added to the real app for this test: it reads inside ``db.read()`` (which
    holds its database) until the test lets it go, and says which database it got."""

    def __init__(self, app: FastAPI) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.seen: list[rewinddb.Database] = []
        app.router.add_api_route("/test-hold", self.route)

    def route(self, request: Request) -> dict[str, Any]:
        db = db_of(request)
        with db.read():
            self.seen.append(db)
            self.entered.set()
            self.release.wait(30)
            assert db_of(request) is db  # one request, one database
            return {"version": db.version, "readonly": db.readonly}


def in_thread(call: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(call()), daemon=True)
    thread.start()
    return thread, out


@pytest.fixture
def app(demo_path: Path) -> FastAPI:
    return create_app(demo_path, read_connections=2)


def test_a_slow_reader_does_not_hold_up_the_others(app: FastAPI) -> None:
    held = Held(app)
    with TestClient(app, base_url=LOCAL) as client:
        slow, slow_out = in_thread(lambda: client.get("/test-hold"))
        try:
            assert held.entered.wait(10)
            quick, quick_out = in_thread(lambda: client.get("/api/overview"))
            quick.join(10)
            assert quick_out, "a request waited for another request's database"
            assert quick_out[0].status_code == 200
        finally:
            held.release.set()
            slow.join(10)
        assert slow_out[0].json()["readonly"] is True


def test_requests_wait_their_turn_when_every_reader_is_lent(app: FastAPI) -> None:
    first = Held(app)
    with TestClient(app, base_url=LOCAL) as client:
        threads = [in_thread(lambda: client.get("/test-hold"))[0]]
        try:
            assert first.entered.wait(10)
            first.entered.clear()
            threads.append(in_thread(lambda: client.get("/test-hold"))[0])
            assert first.entered.wait(10)  # the second reader
            assert first.seen[0] is not first.seen[1]
            assert {db.readonly for db in first.seen} == {True}
            third, out = in_thread(lambda: client.get("/api/version"))
            third.join(0.5)
            assert not out, "a third request read while both readers were lent"
        finally:
            first.release.set()
            for thread in threads:
                thread.join(10)
        third.join(10)
        assert out[0].status_code == 200


def test_reads_use_read_only_connections_and_writes_the_writable_one(tmp_path: Path) -> None:
    path = tmp_path / "demo"
    build_demo(path).close()
    app = create_app(path, allow_writes=True, read_connections=3)
    held = Held(app)
    held.release.set()
    with TestClient(app, base_url=LOCAL) as client:
        assert client.get("/test-hold").json()["readonly"] is True
        assert held.seen[0] is not app.state.db and not app.state.db.readonly
        token = app.state.csrf_token
        fork = client.post(
            "/branches/research/fork",
            data={"name": "seen-by-readers", "csrf_token": token},
            follow_redirects=False,
        )
        assert fork.status_code == 303
        for _ in range(6):  # whichever reader answers sees the new branch
            assert client.get("/branches/seen-by-readers.json").status_code == 200


def test_the_readers_close_with_the_app_and_open_again(demo_path: Path) -> None:
    app = create_app(demo_path, read_connections=3)
    readers: Readers = app.state.readers
    opened = list(readers._all)
    assert len(opened) == 3 and all(db.readonly for db in opened)
    with TestClient(app, base_url=LOCAL) as client:
        assert client.get("/api/version").status_code == 200
    assert all(db.closed for db in opened)
    with TestClient(app, base_url=LOCAL) as client:  # served again (as tests do)
        assert client.get("/api/branches").status_code == 200
        assert app.state.db is readers.first and not readers.first.closed


def test_borrowing_is_first_come_first_served(demo_path: Path) -> None:
    def open_reader() -> rewinddb.Database:
        return rewinddb.open(demo_path, create=False, readonly=True)

    readers = Readers(open_reader, 1)

    async def scenario() -> list[str]:
        order: list[str] = []
        db = await readers.borrow()

        async def wait(name: str) -> None:
            got = await readers.borrow()
            order.append(name)
            await asyncio.sleep(0)
            readers.give_back(got)

        tasks = [asyncio.create_task(wait(name)) for name in "abc"]
        await asyncio.sleep(0.01)
        tasks[1].cancel()  # b gives up waiting: the reader goes to c after a
        await asyncio.sleep(0.01)
        readers.give_back(db)
        await asyncio.gather(tasks[0], tasks[2])
        return order

    try:
        assert asyncio.run(scenario()) == ["a", "c"]
        assert len(readers._free) == 1
    finally:
        readers.close()


@pytest.mark.parametrize("count", [0, -1, 65, True, 2.5, "4", [2]])
def test_bad_read_connections_are_refused(demo_path: Path, count: object) -> None:
    with pytest.raises(rewinddb.InvalidInputError) as info:
        create_app(demo_path, read_connections=count)  # type: ignore[arg-type]
    assert info.value.code == "invalid.option" and "read_connections" in info.value.message


def test_read_connections_from_the_environment(
    demo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(READERS_ENV, "3")
    assert create_app(demo_path).state.readers.size == 3
    monkeypatch.setenv(READERS_ENV, "lots")
    with pytest.raises(rewinddb.InvalidInputError) as info:
        create_app(demo_path)
    assert READERS_ENV in info.value.message
    monkeypatch.delenv(READERS_ENV)
    assert create_app(demo_path).state.readers.size == DEFAULT_READERS == 1


def test_the_default_readers_are_one_on_sqlite_and_four_on_postgresql() -> None:
    assert default_readers(Path("agent")) == DEFAULT_READERS == 1
    assert default_readers("postgresql://me@localhost/agents") == DEFAULT_SERVER_READERS == 4


def test_serve_refuses_bad_read_connections(demo_path: Path) -> None:
    from rewinddb.cli import main

    assert main(["serve", str(demo_path), "--read-connections", "0"]) == 1


@pytest.fixture
def never_served(demo_path: Path) -> Iterator[FastAPI]:
    app = create_app(demo_path, read_connections=2)
    yield app
    app.state.readers.close()


def test_an_app_never_started_still_lends_readers(never_served: FastAPI) -> None:
    client = TestClient(never_served, base_url=LOCAL)  # no lifespan: no `with`
    assert client.get("/api/version").status_code == 200
    assert client.get("/").status_code == 200


# -- shared renders: a page many tabs ask for is rendered once per stamp ---------------


class HeldPage:
    """A route of the real app at a path the shared renders serve (``/branches/held``,
    put before the branch page): it reads the stamp, says it is in, and answers only
    when the test lets it go, with the stamp and how many times it has run."""

    PATH = "/branches/held"

    def __init__(self, app: FastAPI) -> None:
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()
        self.runs = 0
        app.router.add_api_route(self.PATH, self.route)
        app.router.routes.insert(0, app.router.routes.pop())

    def route(self, request: Request) -> dict[str, Any]:
        db = db_of(request)
        with db.read():
            stamp = db.stamp
            self.runs += 1
            run = self.runs
        self.entered.release()
        self.release.wait(30)
        return {"stamp": stamp, "run": run}


def settles(condition: Any) -> bool:
    """Whether ``condition()`` comes true within 10 s: requests getting where a test needs
    them (the test lets everything go and joins its threads before it asserts)."""
    deadline = time.monotonic() + 10
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def waiting_on(app: FastAPI, path: str) -> int:
    """How many requests wait for the render of ``path`` in progress."""
    flights = app.state.shared._flights
    return sum(len(flight.waiters) for key, flight in list(flights.items()) if key[0] == path)


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    path = tmp_path / "demo"
    build_demo(path).close()
    return path


def test_a_kept_page_is_served_until_a_write_then_drawn_again(fresh: Path) -> None:
    app = create_app(fresh)
    shared = app.state.shared
    with TestClient(app, base_url=LOCAL) as client:
        first = client.get("/")
        again = client.get("/")
        assert first.status_code == again.status_code == 200
        assert again.content == first.content
        assert (shared.counts.rendered, shared.counts.cached) == (1, 1)
        assert "written-meanwhile" not in first.text
        with rewinddb.open(fresh) as writer:  # another connection, as another process
            writer.branches.fork("research", "written-meanwhile")
        after = client.get("/")
        assert "written-meanwhile" in after.text
        assert shared.counts.rendered == 2
        # the JSON twins too: kept, then drawn again after a write
        twin = client.get("/.json").json()
        assert client.get("/.json").json() == twin and shared.counts.cached == 2
        with rewinddb.open(fresh) as writer:
            writer.at("written-meanwhile").kv.put("seen", 1)
        newer = client.get("/.json").json()
        assert newer["version"] == twin["version"] + 1 and newer["stamp"] != twin["stamp"]
        assert client.get("/api/overview").json()["stamp"] == newer["stamp"]


def test_a_kept_page_is_what_a_fresh_render_gives(fresh: Path) -> None:
    app = create_app(fresh, allow_writes=True)  # pages carry the CSRF token
    with TestClient(app, base_url=LOCAL) as client:
        for url, headers in [
            ("/", {}),
            ("/fragments/overview", {"HX-Request": "true"}),
            ("/compare?a=research&b=research-retry", {}),
            ("/branches/research", {}),
            ("/branches/research.json", {}),
        ]:
            drawn = client.get(url, headers=headers)
            kept = client.get(url, headers=headers)
            assert drawn.status_code == kept.status_code == 200, url
            assert kept.content == drawn.content, url
            assert kept.headers["content-type"] == drawn.headers["content-type"]
            assert kept.headers.get("vary") == drawn.headers.get("vary")
            assert (
                kept.headers["content-security-policy"] == drawn.headers["content-security-policy"]
            )
        assert app.state.shared.counts.cached == 5
        assert app.state.csrf_token in client.get("/branches/research").text  # kept, token in
        app.state.shared.clear()
        fresh_render = client.get("/")
        assert fresh_render.content == client.get("/").content


def test_gzip_and_identity_are_kept_apart(fresh: Path) -> None:
    app = create_app(fresh)
    with TestClient(app, base_url=LOCAL) as client:
        for _ in range(2):
            packed = client.get("/", headers={"Accept-Encoding": "gzip"})
            plain = client.get("/", headers={"Accept-Encoding": "identity"})
            assert packed.headers["content-encoding"] == "gzip"
            assert "content-encoding" not in plain.headers
            assert packed.content == plain.content  # httpx unpacked the first
        assert app.state.shared.counts.rendered == 2


def test_a_kept_page_still_checks_the_host(fresh: Path) -> None:
    app = create_app(fresh, allow_writes=True)
    with TestClient(app, base_url=LOCAL) as client:
        assert client.get("/").status_code == 200
        assert client.get("/").status_code == 200  # kept now
        rebound = client.get("/", headers={"Host": "evil.example:8000"})
        assert rebound.status_code == 421
        assert "research" not in rebound.text and app.state.csrf_token not in rebound.text


def test_the_overview_poll_says_204_while_nothing_changed(fresh: Path) -> None:
    app = create_app(fresh)
    hx = {"HX-Request": "true"}
    with TestClient(app, base_url=LOCAL) as client:
        stamp = client.get("/api/version").json()["stamp"]
        whole = client.get("/fragments/overview", headers=hx)
        assert client.get(f"/fragments/overview?since={stamp}", headers=hx).status_code == 204
        stale = client.get("/fragments/overview?since=1.1.0", headers=hx)
        assert stale.status_code == 200 and stale.content == whole.content
        assert client.get("/fragments/overview?since=" + "9" * 1025, headers=hx).status_code == 422
        with rewinddb.open(fresh) as writer:
            writer.at("research").kv.put("poll", 1)
        assert client.get(f"/fragments/overview?since={stamp}", headers=hx).status_code == 200


def test_identical_requests_waiting_for_a_reader_share_one_render(fresh: Path) -> None:
    app = create_app(fresh, read_connections=1)
    holder, page = Held(app), HeldPage(app)
    page.release.set()
    with TestClient(app, base_url=LOCAL) as client:
        hold = in_thread(lambda: client.get("/test-hold"))[0]  # the only reader is lent
        assert holder.entered.wait(10)
        asked = [in_thread(lambda: client.get(HeldPage.PATH)) for _ in range(4)]
        gathered = settles(lambda: waiting_on(app, HeldPage.PATH) == 3)
        holder.release.set()
        for thread in [hold, *(thread for thread, _ in asked)]:
            thread.join(10)
    assert gathered, "three requests did not wait on the first one's render"
    answers = [out[0].json() for _, out in asked]
    assert page.runs == 1 and all(answer == answers[0] for answer in answers)
    counts = app.state.shared.counts
    assert (counts.rendered, counts.shared) == (1, 3)


def test_a_request_after_a_write_does_not_take_an_older_render(fresh: Path) -> None:
    app = create_app(fresh, read_connections=2)
    page = HeldPage(app)
    with TestClient(app, base_url=LOCAL) as client:
        first = in_thread(lambda: client.get(HeldPage.PATH))
        assert page.entered.acquire(timeout=10)  # lent, reading, not finished
        with rewinddb.open(fresh) as writer:
            writer.at("research").kv.put("after-the-first", 1)
        second = in_thread(lambda: client.get(HeldPage.PATH))
        rendered_its_own = page.entered.acquire(timeout=10)
        page.release.set()
        first[0].join(10)
        second[0].join(10)
    assert rendered_its_own, "the request after the write waited for the older render"
    older, newer = first[1][0].json(), second[1][0].json()
    assert (older["run"], newer["run"]) == (1, 2)
    assert newer["stamp"] != older["stamp"]
    with rewinddb.open(fresh, readonly=True) as reader:
        assert newer["stamp"] == reader.stamp


def test_a_request_at_the_same_stamp_joins_a_render_in_progress(fresh: Path) -> None:
    app = create_app(fresh, read_connections=2)
    page = HeldPage(app)
    with TestClient(app, base_url=LOCAL) as client:
        first = in_thread(lambda: client.get(HeldPage.PATH))
        assert page.entered.acquire(timeout=10)
        second = in_thread(lambda: client.get(HeldPage.PATH))
        joined = settles(lambda: waiting_on(app, HeldPage.PATH) == 1)
        page.release.set()
        first[0].join(10)
        second[0].join(10)
    assert joined, "the second request did not wait on the render in progress"
    assert page.runs == 1
    assert first[1][0].json() == second[1][0].json()


def test_a_failed_render_leaves_each_waiting_request_its_own(fresh: Path) -> None:
    app = create_app(fresh, read_connections=1)
    holder = Held(app)
    with TestClient(app, base_url=LOCAL) as client:
        hold = in_thread(lambda: client.get("/test-hold"))[0]
        assert holder.entered.wait(10)
        asked = [in_thread(lambda: client.get("/branches/no-such-branch")) for _ in range(3)]
        gathered = settles(lambda: waiting_on(app, "/branches/no-such-branch") == 2)
        holder.release.set()
        for thread in [hold, *(thread for thread, _ in asked)]:
            thread.join(10)
    assert gathered, "two requests did not wait on the first one's render"
    assert [out[0].status_code for _, out in asked] == [404, 404, 404]
    counts = app.state.shared.counts
    assert (counts.rendered, counts.shared, counts.cached) == (1, 0, 0)


def test_the_stamp_connection_closes_with_the_readers(demo_path: Path) -> None:
    app = create_app(demo_path, read_connections=1)
    readers: Readers = app.state.readers
    with TestClient(app, base_url=LOCAL) as client:
        assert readers.stamp() == client.get("/api/version").json()["stamp"]
    assert readers.stamp() is None
    with TestClient(app, base_url=LOCAL):
        assert readers.stamp() is not None
