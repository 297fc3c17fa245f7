"""Several read connections: each request reads from a database of its own, so one slow
reader does not hold up the others. (Fifty clients against a real server while an agent
writes: benchmarks/web.py; a smaller run of that is in test_serve.py.)"""

from __future__ import annotations

import asyncio
import threading
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
from rewinddb.web.readers import READERS_ENV, Readers

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
    assert create_app(demo_path).state.readers.size == 4


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
