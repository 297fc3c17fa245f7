"""A page of a big state: ``items(limit=)``, ``keys(limit=)``, ``snapshot(limit=)`` and
``blame(limit=)`` give the first keys in key order, exactly what the whole read begins
with, at any version of any branch of a fork tree (deletions on a fork hide what its
ancestors hold), and read only about that many keys."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewinddb

from .conftest import statements

#: One step of a random history: (op, branch index, key numbers, value).
_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "delete", "fork", "json", "state"]),
        st.integers(0, 4),
        st.lists(st.integers(0, 30), min_size=1, max_size=4),
        st.integers(0, 5),
    ),
    min_size=1,
    max_size=40,
)


def _play(db: rewinddb.Database, steps: list[tuple[str, int, list[int], int]]) -> list[str]:
    names = ["default"]
    for op, at, numbers, value in steps:
        branch = names[at % len(names)]
        view = db.at(branch)
        keys = [f"k{n:02d}" for n in numbers]
        if op == "fork":
            names.append(f"b{len(names)}")
            db.branches.fork(branch, names[-1])
        elif op == "delete":
            for key in keys:
                view.kv.delete(key)
        elif op == "json":
            view.json.set(keys[0], "$", {"v": value})
        elif op == "state":
            view.state.set_many({key: value for key in keys})
        else:
            view.kv.put_many({key: [value, key] for key in keys})
    return names


def _first(found: dict[str, Any], limit: int) -> dict[str, Any]:
    return dict(list(found.items())[:limit])


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=_STEPS, limit=st.integers(0, 12))
def test_a_page_is_how_the_whole_read_begins(tmp_path_factory: Any, steps: Any, limit: int) -> None:
    db = rewinddb.open(tmp_path_factory.mktemp("first"))
    try:
        names = _play(db, steps)
        for name in names:
            view = db.at(name)
            start = view.info().forked_at
            for version in range(start, db.version + 1):
                whole = view.snapshot(as_of=version)
                page = view.snapshot(as_of=version, limit=limit)
                for space in ("kv", "json", "state"):
                    expected = _first(whole[space], limit)
                    assert page[space] == expected and list(page[space]) == list(expected)
                assert view.kv.keys(as_of=version, limit=limit) == list(_first(whole["kv"], limit))
                blamed = view.blame(as_of=version, limit=limit)
                everyone = view.blame(as_of=version)
                for space in ("kv", "json", "state"):
                    assert blamed[space] == _first(everyone[space], limit)
    finally:
        db.close()


def test_both_backends_page_alike(db: rewinddb.Database) -> None:
    db.kv.put_many({f"k{i:03d}": i for i in range(30)})
    db.branches.fork("default", "run")
    run = db.at("run")
    run.kv.delete("k000")
    run.kv.put("k001", "changed")
    run.kv.put("a-first", 0)
    assert run.kv.items(limit=3) == {"a-first": 0, "k001": "changed", "k002": 2}
    assert run.kv.keys(limit=2) == ["a-first", "k001"]
    assert db.kv.items(limit=0) == {}
    assert list(run.snapshot(limit=2)["kv"]) == ["a-first", "k001"]


def test_a_key_past_where_an_ancestor_was_read_waits_its_turn(db: rewinddb.Database) -> None:
    """The fork's own keys run far ahead of its parent's page (it deleted one the parent
    holds, and wrote one the parent never reaches): the parent's next keys come first."""
    db.kv.put_many({f"k{i:03d}": i for i in range(10)})
    db.branches.fork("default", "run")
    run = db.at("run")
    run.kv.delete("k001")
    run.kv.put("z", "last")
    assert run.kv.items(limit=2) == {"k000": 0, "k002": 2}
    assert run.kv.keys(limit=11) == [*(f"k{i:03d}" for i in range(10) if i != 1), "z"][:11]


def test_a_page_of_a_big_state_reads_about_a_page(tmp_path: Any) -> None:
    db = rewinddb.open(tmp_path)
    try:
        db.kv.put_many({f"k{i:05d}": i for i in range(20_000)})
        db.branches.fork("default", "run")
        db.at("run").kv.put_many({f"k{i:05d}": -i for i in range(0, 20_000, 1000)})
        reads = []
        raw = db._engine.conn._raw  # type: ignore[attr-defined]
        raw.set_progress_handler(lambda: reads.append(1), 1000)
        try:
            page = db.at("run").kv.items(limit=50)
        finally:
            raw.set_progress_handler(None, 0)
        assert list(page) == [f"k{i:05d}" for i in range(50)]
        assert page["k00000"] == 0 and page["k00001"] == 1
        with statements(db) as seen:
            db.at("run").kv.items(limit=50)
        whole_steps = []
        raw.set_progress_handler(lambda: whole_steps.append(1), 1000)
        try:
            db.at("run").kv.items()
        finally:
            raw.set_progress_handler(None, 0)
        # (SQLite's work, in steps of 1,000 instructions: a page is a sliver of the whole)
        assert len(reads) * 50 < len(whole_steps), (len(reads), len(whole_steps))
        assert len(seen) < 10, seen
    finally:
        db.close()


@pytest.mark.parametrize("limit", [-1, 1.5, "3", True, 2**63])
def test_a_bad_limit_is_refused(db: rewinddb.Database, refused: Any, limit: Any) -> None:
    db.kv.put("k", 1)
    for call in (
        lambda: db.kv.items(limit=limit),
        lambda: db.kv.keys(limit=limit),
        lambda: db.json.items(limit=limit),
        lambda: db.state.items(limit=limit),
        lambda: db.at("default").snapshot(limit=limit),
        lambda: db.at("default").blame(limit=limit),
    ):
        with refused(db, rewinddb.InvalidInputError, "invalid.limit"):
            call()
