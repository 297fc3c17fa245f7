"""The explorer after an erasure: erased events and values read as "[erased]", and what
was erased appears nowhere, in the HTML or in the JSON twins."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

import rewinddb
from rewinddb.web import create_app

SECRET = "the-user's-secret-4411"


@pytest.fixture(scope="module")
def erased(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    path = tmp_path_factory.mktemp("erased") / "db"
    with rewinddb.open(path) as db:
        db.branches.fork("default", "run")
        run = db.at("run")
        run.events.append("tool.call", {"tool": "lookup"})
        run.events.append("tool.result", {"text": SECRET})
        run.kv.put("profile", {"token": SECRET})
        run.kv.put("profile", {"token": SECRET, "n": 2})
        run.events.append("done", {"ok": True})
        run.events.erase(1)
        db.erase_key("kv", "profile")
    with TestClient(create_app(path), base_url="http://localhost") as client:
        yield client


@pytest.mark.parametrize(
    "url",
    [
        "/",
        "/branches/run",
        "/branches/run/events/1",
        "/branches/run/events/1.json",
        "/branches/run/events/2",
        "/branches/run/keys/profile?space=kv",
        "/branches/run/keys/profile.json?space=kv",
        "/branches/run/steps",
    ],
)
def test_nothing_erased_is_shown(erased: TestClient, url: str) -> None:
    response = erased.get(url)
    assert response.status_code in (200, 404), url
    assert SECRET not in response.text


def test_an_erased_event_says_so(erased: TestClient) -> None:
    page = erased.get("/branches/run/events/1").text
    assert "[erased at version" in page and "keeps its place and its hash" in page
    assert "[erased]" in erased.get("/branches/run").text
    assert erased.get("/branches/run/events/1.json").json()["event"]["erased_at"] is not None


def test_an_erased_value_says_so_in_its_history(erased: TestClient) -> None:
    page = erased.get("/branches/run/keys/profile?space=kv").text
    assert page.count("[erased at version") == 2
    assert "lazy-value" not in page  # no value to load
