"""Branches: O(1) forks, lineage reads, one clock across branches, deletion."""

from __future__ import annotations

from pathlib import Path

import pytest

import rewinddb


def test_fork_sees_source_state_and_isolates_writes(db: rewinddb.Database) -> None:
    db.kv.put("task", "reduce risk")
    db.json.set("portfolio", "$", {"stocks": 60, "bonds": 40})
    branch = db.branches.fork("default", "run-1")
    assert (branch.name, branch.parent, branch.forked_at) == ("run-1", "default", 2)
    work = db.at(branch="run-1")
    assert work.kv.get("task") == "reduce risk"
    work.json.set("portfolio", "$.stocks", 20)
    db.kv.put("task", "changed on default")
    assert db.json.get("portfolio", "$.stocks") == 60
    assert work.json.get("portfolio", "$.stocks") == 20
    assert work.kv.get("task") == "reduce risk"


def test_fork_copies_nothing(db: rewinddb.Database) -> None:
    with db.transaction():
        for i in range(200):
            db.kv.put(f"k{i}", i)
    rows_before = _rows(db)
    db.branches.fork("default", "copy")
    rows_after = _rows(db)
    assert rows_after["rewind_entries"] == rows_before["rewind_entries"]
    assert rows_after["rewind_branches"] == rows_before["rewind_branches"] + 1
    assert db.at("copy").kv.get("k199") == 199


def _rows(db: rewinddb.Database) -> dict[str, int]:
    conn = db._engine.conn  # the db's own connection: works on both backends
    return {
        table: conn.fetchone(f"SELECT count(*) FROM {table}")[0]
        for table in ("rewind_entries", "rewind_branches")
    }


def test_fork_at_a_past_version_and_fork_of_fork(db: rewinddb.Database) -> None:
    v1 = db.kv.put("x", 1)
    db.kv.put("x", 2)
    db.branches.fork("default", "past", at=v1)
    assert db.at("past").kv.get("x") == 1
    db.at("past").kv.put("y", "p")
    db.branches.fork("past", "grandchild")
    grand = db.at("grandchild")
    assert (grand.kv.get("x"), grand.kv.get("y")) == (1, "p")
    grand.kv.put("x", 3)
    assert (db.kv.get("x"), db.at("past").kv.get("x"), grand.kv.get("x")) == (2, 1, 3)


def test_reads_seek_only_the_steps_that_can_hold_a_visible_row(db: rewinddb.Database) -> None:
    """An ancestor's own rows are all newer than its fork point: a step capped at or below
    it is skipped, and what every branch reads is unchanged."""
    db.kv.put("x", "root")  # version 1 on default
    db.branches.fork("default", "empty", at=0)
    db.branches.fork("default", "late")  # at 1
    db.at("late").kv.put("y", "late")  # version 2
    db.branches.fork("late", "early", at=1)  # below late's own rows
    db.branches.fork("late", "deep")  # at 2
    engine = db._engine

    def steps(name: str) -> list[str]:
        record = engine.branch(name)
        return [engine.branch_by_id(i).name for i, _ in engine.row_lineage(record, db.version)]

    assert steps("default") == ["default"]
    assert steps("empty") == ["empty"]
    assert steps("late") == ["late", "default"]
    assert steps("early") == ["early", "default"]
    assert steps("deep") == ["late", "default"]  # nothing of its own yet
    assert db.at("empty").kv.items() == {}
    assert db.at("early").kv.items() == {"x": "root"}
    assert db.at("deep").kv.items() == {"x": "root", "y": "late"}
    db.at("deep").kv.put("z", "deep")
    assert steps("deep") == ["deep", "late", "default"]
    assert db.at("deep").kv.items() == {"x": "root", "y": "late", "z": "deep"}
    db.at("empty").events.append("first")
    assert db.at("empty").events.length() == 1 and db.events.length() == 0


def test_versions_are_one_clock_across_branches(db: rewinddb.Database) -> None:
    db.branches.fork("default", "a")
    db.branches.fork("default", "b")
    va = db.at("a").kv.put("k", "a")
    vb = db.at("b").kv.put("k", "b")
    vd = db.events.append("on default", {}).version
    assert va < vb < vd
    # An event version from default joined with a read on another branch is well defined.
    assert db.at("a").kv.get("k", as_of=vd) == "a"
    assert db.at("b").kv.get("k", as_of=va) is None


def test_reading_before_a_branch_existed_is_history_unavailable(db: rewinddb.Database) -> None:
    v1 = db.kv.put("x", 1)
    db.kv.put("x", 2)
    db.branches.fork("default", "late")
    with pytest.raises(rewinddb.HistoryUnavailableError) as info:
        db.at("late").kv.get("x", as_of=v1)
    assert info.value.code == "history_unavailable"
    assert "late" in str(info.value)


def test_events_continue_the_parents_log(db: rewinddb.Database) -> None:
    db.events.append("a", {})
    db.events.append("b", {})
    db.branches.fork("default", "child")
    db.events.append("c on default", {})
    child = db.at("child")
    event = child.events.append("c on child", {})
    assert event.sequence == 2
    assert [i.event.event_type for i in child.events.list()] == ["a", "b", "c on child"]
    assert [i.event.branch for i in child.events.list()] == ["default", "default", "child"]
    assert child.events.get(2).event_type == "c on child"
    assert db.events.get(2).event_type == "c on default"


def test_list_get_and_heads(db: rewinddb.Database) -> None:
    db.branches.fork("default", "run-1")
    v = db.at("run-1").kv.put("k", 1)
    branches = db.branches.list()
    assert [b.name for b in branches] == ["default", "run-1"]
    run = db.branches.get("run-1")
    assert (run.head, run.commits, run.parent) == (v, 1, "default")
    assert run.last_write is not None
    assert db.branches.get("default").head == 0
    assert "run-1" in db.branches and "nope" not in db.branches


def test_delete_branch_keeps_children_and_frees_the_name(db: rewinddb.Database) -> None:
    db.branches.fork("default", "parent")
    db.at("parent").kv.put("k", "from parent")
    db.branches.fork("parent", "child")
    db.branches.delete("parent")
    with pytest.raises(rewinddb.BranchNotFound) as info:
        db.at("parent")
    assert info.value.code == "not_found.engine.branch"
    assert "deleted" in str(info.value)
    assert db.at("child").kv.get("k") == "from parent"
    assert db.branches.get("child").parent == "parent"
    db.branches.fork("default", "parent")  # the name can be used again
    assert db.at("parent").kv.get("k") is None


def test_a_view_of_a_deleted_branch_fails_clearly(db: rewinddb.Database) -> None:
    db.branches.fork("default", "gone")
    view = db.at("gone")
    view.events.append("e", {})
    db.branches.delete("gone")
    with pytest.raises(rewinddb.BranchNotFound, match="gone"):
        view.events.list()
    with pytest.raises(rewinddb.BranchNotFound):
        view.kv.put("k", 1)


def test_forking_a_branch_with_uncommitted_writes_is_refused(db: rewinddb.Database) -> None:
    with db.transaction():
        db.kv.put("a", 1)
        with pytest.raises(rewinddb.RewindError) as info:
            db.branches.fork("default", "snap")
        assert info.value.code == "invalid.transaction"
        db.kv.put("a", 2)
    db.branches.fork("default", "snap")
    assert db.at("snap").kv.get("a") == 2


def test_a_rolled_back_fork_is_forgotten_by_every_handle(db_path) -> None:  # type: ignore[no-untyped-def]
    with rewinddb.open(db_path) as first, rewinddb.open(db_path) as second:
        first.kv.put("k", "v1")
        with pytest.raises(RuntimeError), first.transaction():
            first.branches.fork("default", "tmp")
            first.at("tmp").events.list()  # cached while it existed
            raise RuntimeError("abandon")
        second.kv.put("k", "v2")
        second.branches.fork("default", "real")  # may reuse the rolled-back row's id
        second.branches.fork("real", "child")
        assert first.at("child").kv.get("k") == second.at("child").kv.get("k") == "v2"


def test_fork_returns_what_get_answers(db: rewinddb.Database) -> None:
    """fork() builds the new branch's record itself; it must agree with get()."""
    for n in range(3):
        db.events.append("step", {"n": n})
    db.kv.put("k", 1)
    forks = [
        db.branches.fork("default", "at-head"),
        db.branches.fork("default", "at-event", at_event=1),
        db.branches.fork("default", "at-version", at=2),
        db.branches.fork("default", "at-zero", at=0),
    ]
    assert forks == [db.branches.get(branch.name) for branch in forks]
    db.at("at-event").events.append("retry")
    grandchild = db.branches.fork("at-event", "grandchild")
    assert grandchild == db.branches.get("grandchild")
    assert [b.events for b in [*forks, grandchild]] == [3, 2, 2, 0, 3]


@pytest.mark.parametrize("name", ["''", "X'6200'"])
def test_names_of_a_damaged_branch_row_say_so_as_list_does(db_path: Path, name: str) -> None:
    """``names()`` reads the names alone: a name another program made empty or bytes is
    ``corrupt.branches``, as ``list()`` says, not an answer."""
    import sqlite3

    with rewinddb.open(db_path) as db:
        db.branches.fork("default", "b")
        assert db.branches.names() == ["default", "b"]
    raw = sqlite3.connect(db_path / "rewind.sqlite3", isolation_level=None)
    raw.execute(f"UPDATE rewind_branches SET name = {name} WHERE name = 'b'")
    raw.close()
    with rewinddb.open(db_path) as db:
        for read in (db.branches.names, db.branches.list):
            with pytest.raises(rewinddb.CorruptDatabaseError) as raised:
                read()
            assert raised.value.code == "corrupt.branches"
