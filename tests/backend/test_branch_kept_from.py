"""``Branch.kept_from`` and ``db.branches.kept_from``: where retention cut a branch's
history, told the same way by ``get``, ``list`` and the cheap question, and agreeing with
what reads as of each version do."""

from __future__ import annotations

import pytest

import rewinddb


def _cut(db: rewinddb.Database) -> None:
    """``lg/a`` keeps its newest 3 versions after gc; ``side`` (forked) is not cut."""
    db.branches.fork("default", "lg/a")
    agent = db.at("lg/a")
    for i in range(8):
        agent.kv.put("k", i)
    db.branches.fork("lg/a", "side")
    db.at("side").kv.put("s", 1)
    for i in range(8, 12):
        agent.kv.put("k", i)
    db.retain("lg/*", keep_last=3)
    db.gc()


def test_whole_history_has_no_cut(db: rewinddb.Database) -> None:
    db.kv.put("k", 1)
    assert db.branches.kept_from("default") is None
    assert db.branches.get("default").kept_from is None
    assert [b.kept_from for b in db.branches.list()] == [None]
    assert db.branches.fork("default", "f").kept_from is None


def test_a_cut_branch_says_where_its_history_starts(db: rewinddb.Database) -> None:
    _cut(db)
    kept = db.branches.kept_from("lg/a")
    assert kept is not None
    assert db.branches.get("lg/a").kept_from == kept
    assert {b.name: b.kept_from for b in db.branches.list()} == {
        "default": None,
        "lg/a": kept,
        "side": None,
    }
    assert db.branches.get("lg/a").to_dict()["kept_from"] == kept
    agent = db.at("lg/a")
    assert agent.kv.get("k", as_of=kept) is not None  # the first version it keeps reads
    with pytest.raises(rewinddb.HistoryUnavailableError) as caught:
        agent.kv.get("k", as_of=kept - 1)
    assert caught.value.details["kept_from"] == kept
    assert db.at("side").kv.get("s") == 1


def test_bad_names(db: rewinddb.Database) -> None:
    with pytest.raises(rewinddb.InvalidInputError) as caught:
        db.branches.kept_from(7)  # type: ignore[arg-type]
    assert caught.value.code == "invalid.branch"
    with pytest.raises(rewinddb.NotFoundError):
        db.branches.kept_from("nowhere")
