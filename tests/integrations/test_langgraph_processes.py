"""RewindSaver's writes are atomic: a checkpoint, its index entry, its forks and early
writes commit together, so a failure mid-put leaves nothing, and several processes can
run graphs on one database at once (each opening the first saver, too)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from chat_graphs import chat_graph, thread

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
