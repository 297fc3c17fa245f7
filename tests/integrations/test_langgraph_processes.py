"""RewindSaver's writes are atomic: a checkpoint, its index entry, its forks and early
writes commit together, so a failure mid-put leaves nothing, and several processes can
run graphs on one database at once (each opening the first saver, too)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from chat_graphs import chat_graph, thread
from langgraph.checkpoint.base import empty_checkpoint

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver

PROCESSES = 4
TURNS = 8


def test_a_put_that_fails_midway_leaves_nothing(
    saver: RewindSaver, db: rewinddb.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = chat_graph(saver)
    graph.invoke({"log": ["hi"]}, thread("t"), durability="sync")
    before = graph.get_state(thread("t"))
    clock, branches = db.version, [b.name for b in db.branches.list()]

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the process died between the checkpoint and its index entry")

    monkeypatch.setattr(saver.index, "write", crash)
    with pytest.raises(RuntimeError):
        graph.invoke({"log": ["again"]}, thread("t"), durability="sync")
    monkeypatch.undo()
    assert db.version == clock  # no orphan checkpoint version on the thread's branch
    assert [b.name for b in db.branches.list()] == branches
    assert graph.get_state(thread("t")).values == before.values
    graph.invoke({"log": ["again"]}, thread("t"), durability="sync")  # and it goes on
    assert graph.get_state(thread("t")).values["log"][-2:] == ["again", "reply 3"]


def _run_thread(path: str, number: int, start: Any) -> None:
    start.wait()
    with RewindSaver.from_path(path) as saver:  # every process may create the index
        graph = chat_graph(saver)
        for turn in range(TURNS):
            graph.invoke({"log": [f"p{number} turn {turn}"]}, thread(f"p{number}"))
        # time travel from this process's own past: a fork, under the others' writes
        past = list(graph.get_state_history(thread(f"p{number}")))[-3]
        graph.invoke({"log": [f"p{number} retry"]}, past.config)


@pytest.mark.slow
def test_processes_run_graphs_on_one_database(tmp_path: Path) -> None:
    path = str(tmp_path / "agents")
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    workers = [
        context.Process(target=_run_thread, args=(path, number, start))
        for number in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(timeout=240)
        assert worker.exitcode == 0
    with RewindSaver.from_path(path) as saver:
        graph = chat_graph(saver)
        for number in range(PROCESSES):
            config = thread(f"p{number}")
            log = graph.get_state(config).values["log"]
            assert log[0] == f"p{number} turn 0" and log[-2] == f"p{number} retry"
            history = list(graph.get_state_history(config))
            assert len(history) == 3 * (TURNS + 1)  # every checkpoint indexed and loadable
            names = [b.name for b in saver.db.branches.list()]
            assert sum(name.startswith(f"lg/p{number}") for name in names) == 2  # + the fork
        entries = saver.index.keys("cp/")
        assert len(entries) == PROCESSES * 3 * (TURNS + 1)
        for key in entries:  # no index entry points at a version that is not there
            entry = saver.index.get(key)
            assert entry["version"] <= saver.db.version


@pytest.mark.parametrize("other_connection", [True, False], ids=["other-connection", "same-db"])
def test_a_saver_sees_what_another_wrote_since_its_own_last_write(
    tmp_path: Path, other_connection: bool
) -> None:
    """The connection answers a put's reads from what it wrote itself only while nothing
    else wrote: here a second saver (on another connection, or on the same database
    object) continues the thread in between, and the first must continue from the
    second's checkpoint, not fork from its own."""
    with rewinddb.open(tmp_path / "agents") as db:
        first = RewindSaver(db)
        other_db = rewinddb.open(tmp_path / "agents") if other_connection else db
        try:
            second = RewindSaver(other_db)
            first_graph, second_graph = chat_graph(first), chat_graph(second)
            first_graph.invoke({"log": ["a"]}, thread("t"), durability="sync")
            second_graph.invoke({"log": ["b"]}, thread("t"), durability="sync")
            first_graph.invoke({"log": ["c"]}, thread("t"), durability="sync")
            second_graph.invoke({"log": ["d"]}, thread("t"), durability="sync")
            log = first_graph.get_state(thread("t")).values["log"]
            assert log == ["a", "reply 1", "b", "reply 3", "c", "reply 5", "d", "reply 7"]
            assert second_graph.get_state(thread("t")).values["log"] == log
            assert [b.name for b in db.branches.list() if b.name.startswith("lg/")] == ["lg/t"]
            history = list(first_graph.get_state_history(thread("t")))
            assert len(history) == 4 * 3
            # Writes of the thread's own: each checkpoint's pending writes stay its own.
            for snapshot in history:
                loaded = first.get_tuple(snapshot.config)
                assert loaded is not None
                assert [w[1] for w in loaded.pending_writes] == [
                    w[1] for w in second.get_tuple(snapshot.config).pending_writes
                ]
        finally:
            if other_connection:
                other_db.close()


def test_a_failed_put_leaves_the_saver_no_false_memory(
    saver: RewindSaver, db: rewinddb.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A put that fails after writing (rolled back) must not leave the saver believing
    what it wrote: the next put continues from the last committed checkpoint."""
    graph = chat_graph(saver)
    graph.invoke({"log": ["hi"]}, thread("t"), durability="sync")

    real = saver.index.write
    calls = 0

    def fail_on_second(*args: object, **kwargs: object) -> None:
        nonlocal calls
        calls += 1
        real(*args, **kwargs)  # written (and remembered as staged) ...
        if calls == 2:
            raise RuntimeError("... then the write fails")

    monkeypatch.setattr(saver.index, "write", fail_on_second)
    with pytest.raises(RuntimeError):
        graph.invoke({"log": ["again"]}, thread("t"), durability="sync")
    monkeypatch.undo()
    graph.invoke({"log": ["once more"]}, thread("t"), durability="sync")
    log = graph.get_state(thread("t")).values["log"]
    assert log[:2] == ["hi", "reply 1"] and log[-2:] == ["once more", f"reply {len(log) - 1}"]
    assert [b.name for b in db.branches.list() if b.name.startswith("lg/")] == ["lg/t"]
    for snapshot in graph.get_state_history(thread("t")):
        assert saver.get_tuple(snapshot.config) is not None


def _put(saver: RewindSaver, config: dict, step: int, checkpoint_id: str) -> dict:
    checkpoint = empty_checkpoint()
    checkpoint["id"] = checkpoint_id
    checkpoint["channel_values"] = {"x": step}
    checkpoint["channel_versions"] = {"x": step}
    return saver.put(config, checkpoint, {"source": "loop", "step": step}, {"x": step})  # type: ignore[arg-type,return-value]


def test_a_put_inside_the_applications_rolled_back_transaction(
    saver: RewindSaver, db: rewinddb.Database
) -> None:
    """A saver write inside the application's own ``db.atomic()`` is part of it: when
    that block rolls back, the saver must not remember the checkpoint it wrote."""
    t = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    first = _put(saver, t, 1, "00000001")
    new = {"configurable": {"thread_id": "new", "checkpoint_ns": ""}}
    for parent, checkpoint_id in ((first, "00000002"), (new, "00000010")):
        with pytest.raises(RuntimeError), db.atomic():
            _put(saver, parent, 2, checkpoint_id)
            raise RuntimeError("the application fails after the checkpoint")
    latest = saver.get_tuple(t)
    assert latest is not None and latest.config["configurable"]["checkpoint_id"] == "00000001"
    assert saver.get_tuple(new) is None
    _put(saver, first, 3, "00000003")
    _put(saver, new, 1, "00000011")
    with RewindSaver.from_path(db.path) as fresh:  # what another saver reads agrees
        assert [c.config["configurable"]["checkpoint_id"] for c in fresh.list(t)] == [
            "00000003",
            "00000001",
        ]
        fresh_new = fresh.get_tuple(new)
        assert fresh_new is not None
        assert fresh_new.config["configurable"]["checkpoint_id"] == "00000011"
        names = [b.name for b in db.branches.list() if b.name.startswith("lg/")]
        assert sorted(names) == ["lg/new", "lg/t"]  # none left from the rolled-back writes
        _put(fresh, fresh_new.config, 5, "00000020")  # the records point at live branches


def test_loading_the_checkpoint_just_written_from_memory(tmp_path: Path) -> None:
    """``get_tuple`` of the checkpoint the saver just wrote reads none of the branch's
    keys (it knows them) and gives what a saver reading the database gives, pending
    writes included; once another connection writes the thread, it reads again."""
    with rewinddb.open(tmp_path / "agents") as db, rewinddb.open(tmp_path / "agents") as other:
        saver, fresh = RewindSaver(db), RewindSaver(other)
        graph = chat_graph(saver)
        graph.invoke({"log": ["a"]}, thread("t"), durability="sync")
        head = saver.get_tuple(thread("t"))
        assert head is not None
        saver.put_writes(head.config, [("log", ["pending"])], "task-1")  # type: ignore[arg-type]
        statements: list[str] = []
        db._engine.conn._raw.set_trace_callback(statements.append)
        mine = saver.get_tuple(thread("t"))
        db._engine.conn._raw.set_trace_callback(None)
        assert not [s for s in statements if "FROM rewind_entries" in s], statements
        theirs = fresh.get_tuple(thread("t"))
        assert mine is not None and theirs is not None
        assert mine.checkpoint == theirs.checkpoint and mine.metadata == theirs.metadata
        assert mine.pending_writes == theirs.pending_writes == [("task-1", "log", ["pending"])]
        chat_graph(fresh).invoke({"log": ["b"]}, thread("t"), durability="sync")
        again = saver.get_tuple(thread("t"))
        assert again is not None and again.checkpoint["channel_values"]["log"][-2:] == [
            "b",
            "reply 3",
        ]
