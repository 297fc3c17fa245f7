"""A branch whose state holds more keys than a page shows: a step's page and an event's
page show the first ``STATE_KEYS`` keys of each space and say so, the rest of the state
is not read, and what is shown is exactly how the whole state begins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import rewinddb
from rewinddb.presenters import STATE_KEYS
from rewinddb.web import create_app
from rewinddb.web.urls import event_url, step_url

#: Keys on default: several pages' worth.
KEYS = 3 * STATE_KEYS + 17


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """default holds KEYS keys; a fork ``run`` changes one and appends an event with it."""
    path = tmp_path_factory.mktemp("big") / "db"
    db = rewinddb.open(path)
    db.kv.put_many({f"k{i:04d}": {"i": i, "text": "<b>x</b>"} for i in range(KEYS)})
    db.state.set_many({f"s{i:04d}": i for i in range(5)})
    db.branches.fork("default", "run")
    run = db.at("run")
    with run.transaction():
        run.kv.put("k0003", {"changed": True})
        run.events.append("tool_result", {"ok": True})
    version = db.version
    db.close()
    return path, version


@pytest.fixture(scope="module")
def client(big: tuple[Path, int]) -> Any:
    with TestClient(create_app(big[0]), base_url="http://localhost") as test_client:
        yield test_client


def _first_keys(path: Path, version: int) -> list[str]:
    db = rewinddb.open(path, readonly=True)
    try:
        return list(db.at("run").kv.items(as_of=version))[:STATE_KEYS]
    finally:
        db.close()


def test_a_step_shows_a_page_of_a_big_state(client: TestClient, big: tuple[Path, int]) -> None:
    path, version = big
    detail = client.get(step_url("run", version, ".json")).json()
    assert detail["partial"] == ["kv"]  # (the state space, of 5 keys, is whole)
    assert list(detail["stored"]["kv"]) == _first_keys(path, version)
    assert detail["stored"]["kv"]["k0003"] == {"changed": True}
    assert len(detail["stored"]["state"]) == 5  # (a small space is whole)
    assert len([name for name in detail["state"] if name.startswith("kv:")]) == STATE_KEYS
    page = client.get(step_url("run", version))
    assert page.status_code == 200
    assert f"the first {STATE_KEYS} keys of each space" in page.text
    assert f"the first {STATE_KEYS} keys" in page.text
    assert "(5 keys)" in page.text and "(the first 5 keys)" not in page.text
    assert f"k{STATE_KEYS:04d}" not in page.text  # (the first key past the page)
    assert "<b>x</b>" not in page.text  # (values escaped, as everywhere)


def test_an_event_shows_a_page_of_a_big_state(client: TestClient, big: tuple[Path, int]) -> None:
    path, version = big
    detail = client.get(event_url("run", 0, ".json")).json()
    assert detail["state_partial"] == ["kv"]
    kv = detail["state"]["kv"]
    assert [row["key"] for row in kv] == _first_keys(path, version)
    changed = next(row for row in kv if row["key"] == "k0003")
    assert changed["last_write"]["event"]["event_type"] == "tool_result"
    assert kv[0]["last_write"]["branch"] == "default"
    page = client.get(event_url("run", 0))
    assert page.status_code == 200
    assert f"the first {STATE_KEYS} keys" in page.text


def test_a_small_state_is_shown_whole(tmp_path: Path) -> None:
    db = rewinddb.open(tmp_path / "small")
    version = db.kv.put_many({f"k{i}": i for i in range(STATE_KEYS)})  # (exactly a page)
    db.close()
    with TestClient(create_app(tmp_path / "small"), base_url="http://localhost") as small:
        detail = small.get(step_url("default", version, ".json")).json()
        page = small.get(step_url("default", version)).text
    assert detail["partial"] == []
    assert len(detail["stored"]["kv"]) == STATE_KEYS
    assert "the first" not in page
