"""A pruned thread keeps its story and its name.

A prune (or a retention policy on the threads' branches, then gc) leaves a thread's
history kept from a version above its fork point: every front end still tells every
thread. When prune writes a thread's kept checkpoints anew (a copy reads its old branch,
or a kept checkpoint lies on a time-travel fork), they stand on a new
``lg/<thread>~<id>`` branch that is now the thread's main line: the explorer, the
notebook and the command line call it by the thread's id, not by a fork's name."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from fastapi.testclient import TestClient
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

import rewinddb
from rewinddb import story
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.web import create_app
from rewinddb.web.urls import step_url


class Items(TypedDict):
    items: Annotated[list[str], operator.add]


def _graph(saver: RewindSaver) -> Any:
    def step(state: Items) -> dict[str, Any]:
        return {"items": [f"item-{len(state['items'])}"]}

    builder = StateGraph(Items)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    return builder.compile(checkpointer=saver)


def _titles(db: rewinddb.Database) -> dict[str, str]:
    return {attempt.branch.name: attempt.summary.title for attempt in story.attempts(db)}


def test_a_pruned_thread_a_copy_reads_keeps_its_name(
    db: rewinddb.Database, saver: RewindSaver, tmp_path: Any
) -> None:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "trip"}}
    for turn in range(4):
        graph.invoke({"items": [f"in-{turn}"]}, config)
    saver.copy_thread("trip", "trip-copy")
    saver.prune(["trip"], strategy="keep_latest")
    titles = _titles(db)
    rebuilt = [name for name in titles if name.startswith("lg/trip~")]
    assert rebuilt, titles  # (written anew: the copy reads the old branch)
    assert titles[rebuilt[0]] == "trip"
    assert titles["lg/trip-copy"] == "trip-copy"
    assert sorted(titles.values()) == ["trip", "trip-copy"]
    assert graph.get_state(config).values["items"][-1] == "item-7"
    with TestClient(create_app(db.path), base_url="http://localhost") as client:
        page = client.get("/").text
    assert f'title="branch {rebuilt[0]}">trip</a>' in page  # (the name is its tooltip)
    assert ">trip~" not in page and ">lg/trip~" not in page


def test_a_time_travel_fork_is_still_called_a_fork(
    db: rewinddb.Database, saver: RewindSaver
) -> None:
    graph = _graph(saver)
    config = {"configurable": {"thread_id": "plan"}}
    for turn in range(3):
        graph.invoke({"items": [f"in-{turn}"]}, config)
    old = list(graph.get_state_history(config))[2].config
    graph.invoke({"items": ["again"]}, old)
    titles = _titles(db)
    forks = [title for name, title in titles.items() if name.startswith("lg/plan~")]
    assert forks and all(title.startswith("plan~") for title in forks), titles


def _notes(saver: RewindSaver) -> Any:
    class Note(TypedDict):
        note: str

    def noter(state: Note) -> dict[str, Any]:
        return {"note": state["note"] + "!"}

    builder = StateGraph(Note)
    builder.add_node("noter", noter)
    builder.add_edge(START, "noter")
    return builder.compile(checkpointer=saver)


def _story_everywhere(db: rewinddb.Database) -> None:
    """Every front end's first reads answer: the attempts, each one's story, the
    explorer's overview and each thread's page."""
    titles = _titles(db)
    assert {"bob", "carol"} <= set(titles.values()), titles
    urls = ["/", "/.json", "/api/overview", "/branches/lg~2Fbob", "/branches/lg~2Fcarol"]
    for name in titles:
        steps = story.branch_story(db, name).steps.steps
        # (a step kept as the state at a retention cut, below it, is not opened here:
        # its reads as of its own version are history_unavailable, a known gap)
        kept = db._engine.horizon(db._engine.branch(name).id)
        cut = 0 if kept is None else kept.kept_from
        urls += [step_url(name, step.version) for step in steps if step.version >= cut]
    with TestClient(create_app(db.path), base_url="http://localhost") as client:
        for url in urls:
            assert client.get(url).status_code == 200, url


def test_the_story_is_told_after_a_prune_in_place(
    db: rewinddb.Database, saver: RewindSaver
) -> None:
    """A prune that cuts a thread's own branch (no fork, no copy) leaves the branch's
    history kept from a version above its fork point: the story still reads every
    thread (it asked what the pruned branch saw at its fork point, and failed for all)."""
    graph = _notes(saver)
    for thread in ("bob", "carol"):
        for note in ("a", "b", "c"):
            graph.invoke({"note": note}, {"configurable": {"thread_id": thread}})
    saver.prune(["bob"])
    assert graph.get_state({"configurable": {"thread_id": "bob"}}).values == {"note": "c!"}
    _story_everywhere(db)


def test_the_story_is_told_after_retention_and_gc(
    db: rewinddb.Database, saver: RewindSaver
) -> None:
    graph = _notes(saver)
    for thread in ("bob", "carol"):
        for note in ("a", "b", "c", "d"):
            graph.invoke({"note": note}, {"configurable": {"thread_id": thread}})
    db.retain("lg/*", keep_last=2)
    db.gc()
    _story_everywhere(db)


def test_a_step_after_a_retention_cut_says_where_its_diff_starts(
    db: rewinddb.Database, saver: RewindSaver
) -> None:
    graph = _notes(saver)
    for note in ("a", "b", "c", "d"):
        graph.invoke({"note": note}, {"configurable": {"thread_id": "bob"}})
    db.retain("lg/*", keep_last=2)
    db.gc()
    cut = db._engine.horizon(db._engine.branch("lg/bob").id)
    assert cut is not None
    newest = story.branch_story(db, "lg/bob").steps.steps[-1]
    detail = story.step_detail(db, "lg/bob", newest.version)
    assert detail.kept_from == cut.kept_from
    assert any(row.label == "note" for row in detail.rows), detail.rows
    with TestClient(create_app(db.path), base_url="http://localhost") as client:
        page = client.get(step_url("lg/bob", newest.version)).text
    assert f"What changed since version {cut.kept_from}" in page
    assert "removed by retention" in page
