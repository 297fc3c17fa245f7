"""A pruned thread keeps its story and its name.

A prune (or a retention policy on the threads' branches, then gc) leaves a thread's
history kept from a version above its fork point: every front end still tells every
thread. When prune writes a thread's kept checkpoints anew (a copy reads its old branch,
or a kept checkpoint lies on a time-travel fork), they stand on a new
``lg/<thread>~<id>`` branch that is now the thread's main line: the explorer, the
notebook and the command line call it by the thread's id, not by a fork's name."""

from __future__ import annotations

import operator
import shutil
from pathlib import Path
from typing import Annotated, Any

import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

import rewinddb
from rewinddb import story
from rewinddb.cli import main
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.web import create_app
from rewinddb.web.urls import branch_url, step_url


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


def _story_everywhere(db: rewinddb.Database, threads: tuple[str, ...] = ("bob", "carol")) -> None:
    """Every front end answers: the attempts, each one's story and each of its steps,
    the explorer's overview, each thread's page and each step's page (a step kept as
    the state at a retention cut, listed below it, too), and ``rewinddb story``."""
    titles = _titles(db)
    assert set(threads) <= set(titles.values()), titles
    urls = ["/", "/.json", "/api/overview"]
    for name in titles:
        steps = story.branch_story(db, name).steps.steps
        for step in steps:
            story.step_detail(db, name, step.version)
        urls += [branch_url(name)] + [step_url(name, step.version) for step in steps]
    with TestClient(create_app(db.path), base_url="http://localhost") as client:
        for url in urls:
            assert client.get(url).status_code == 200, url
    for title in titles.values():
        assert main(["story", str(db.path), title]) == 0, title


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


class Trip(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _trip(saver: RewindSaver) -> Any:
    """planner -> a subgraph (its own namespace's checkpoints; it hands back its whole
    list of messages, most of them the thread's already) -> finalize."""

    def summarize(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"summary of {len(state['messages'])}")]}

    sub = StateGraph(MessagesState)
    sub.add_node("summarize_inner", summarize)
    sub.add_edge(START, "summarize_inner")

    def planner(state: Trip) -> dict[str, Any]:
        return {"messages": [AIMessage(f"plan: {state['messages'][-1].content}")]}

    def finalize(state: Trip) -> dict[str, Any]:
        return {"messages": [AIMessage("booked")]}

    builder = StateGraph(Trip)
    builder.add_node("planner", planner)
    builder.add_node("summarizer", sub.compile())
    builder.add_node("finalize", finalize)
    builder.add_edge(START, "planner")
    builder.add_edge("planner", "summarizer")
    builder.add_edge("summarizer", "finalize")
    return builder.compile(checkpointer=saver)


@pytest.fixture(scope="module")
def forked_trip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two turns of a thread with a subgraph, then time travel: the state before the
    second turn's planner edited and run from there (a fork)."""
    path = tmp_path_factory.mktemp("forked") / "agent"
    with rewinddb.open(path) as db:
        graph = _trip(RewindSaver(db))
        config: Any = {"configurable": {"thread_id": "trip"}}
        for turn in ("Lisbon", "Porto"):
            graph.invoke({"messages": [HumanMessage(turn)]}, config)
        history = list(graph.get_state_history(config))
        target = next(h for h in history if h.next == ("planner",))
        forked = graph.update_state(target.config, {"messages": [HumanMessage("Faro")]})
        graph.invoke(None, forked)
    return path


@pytest.mark.parametrize("keep", range(1, 9))
def test_a_forked_thread_is_told_after_retention_and_gc(
    forked_trip: Path, tmp_path: Path, keep: int
) -> None:
    """A time-travel fork's steps read the messages its parent checkpoint held (below
    the fork's cut: read there, else none known), and each subgraph branch's first
    step, kept as the state at the cut, opens as read at the cut."""
    path = tmp_path / "agent"
    shutil.copytree(forked_trip, path)
    with rewinddb.open(path) as db:
        whole = _told_messages(db)
        db.retain("lg/*", keep_last=keep)
        db.gc()
        titles = _titles(db)
        assert any(title.startswith("trip~") for title in titles.values()), titles
        _story_everywhere(db, ("trip",))
        # A step whose parent retention removed tells nothing that step did not do (it
        # told what ran from the older checkpoint kept before it).
        for place, messages in _told_messages(db).items():
            assert set(messages) <= set(whole.get(place, ())), (place, messages)


def _told_messages(db: rewinddb.Database) -> dict[tuple[str, int], tuple[str, ...]]:
    """The texts of the messages each step of each branch tells it added."""
    return {
        (name, step.version): tuple(m.text for m in step.messages)
        for name in _titles(db)
        for step in story.branch_story(db, name).steps.steps
    }
