"""How the LangGraph presenter titles attempts and labels forks: a copy's subgraph
that ran on a fork names the copy's own fork (every attempt's title is its own, so
``rewinddb story DB TITLE`` finds it), a copied subgraph's label names its source as
the source's title reads, and new input from a past step is told apart from a replay.

The graph is the new-user trial's: agent -> research (a subgraph: a namespace of its
own) -> end, two turns, new input from the first turn's end (a fork that runs the
subgraph again), then ``copy_thread`` and a turn in the copy."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

import rewinddb
from rewinddb import story
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.story_text import attempt_branch
from tests.helpers.chat_graphs import thread


class _State(TypedDict):
    messages: Annotated[list[str], operator.add]


def _graph(saver: RewindSaver) -> Any:
    inner = StateGraph(_State)
    inner.add_node("inner", lambda state: {"messages": ["inner: " + state["messages"][-1]]})
    inner.add_edge(START, "inner").add_edge("inner", END)
    builder = StateGraph(_State)
    builder.add_node("agent", lambda state: {"messages": ["agent: " + state["messages"][-1]]})
    builder.add_node("research", inner.compile())
    builder.add_edge(START, "agent").add_edge("agent", "research").add_edge("research", END)
    return builder.compile(checkpointer=saver)


def _first_done(graph: Any, thread_id: str) -> Any:
    done = [s for s in graph.get_state_history(thread(thread_id)) if not s.next]
    return min(done, key=lambda s: len(s.values["messages"]))


@pytest.fixture(scope="module")
def copied_trip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("titles") / "agent"
    with rewinddb.open(path) as db:
        saver = RewindSaver(db)
        graph = _graph(saver)
        for text in ("lisbon", "porto"):
            graph.invoke({"messages": [text]}, thread("trip"))
        graph.invoke({"messages": ["faro"]}, _first_done(graph, "trip").config)
        saver.copy_thread("trip", "trip-copy")
        graph.invoke({"messages": ["braga"]}, thread("trip-copy"))
    return path


def _suffix(db: rewinddb.Database) -> str:
    (fork,) = [b.name for b in db.branches.list() if b.name.startswith("lg/trip~")]
    return fork.split("~")[1]


def _namespace(branch: str) -> str:
    return branch.split("/", 2)[2]


def test_every_attempt_is_titled_by_its_own_thread(copied_trip: Path) -> None:
    """The copy's subgraph that ran on the (copied) fork is titled under the copy's
    fork, not the source's: no two attempts share a title, and the CLI finds each."""
    with rewinddb.open(copied_trip, readonly=True) as db:
        suffix = _suffix(db)
        attempts = story.attempts(db)
        titles = [a.summary.title for a in attempts]
        assert len(titles) == len(set(titles)), titles
        for attempt in attempts:
            assert attempt_branch(db, attempt.summary.title) == attempt.branch.name
            parsed = attempt.branch.name.removeprefix("lg/").split("/", 1)[0]
            assert attempt.summary.title.split("~")[0].split(" / ")[0] == parsed.split("~")[0]
        on_fork = {
            a.branch.name: a.summary.title
            for a in attempts
            if a.summary.kind == "subgraph" and a.summary.title.startswith("trip~")
        }
        (source,) = on_fork  # the source's subgraph run on its fork
        copied = "lg/trip-copy/" + _namespace(source)
        told = {a.branch.name: a.summary for a in attempts}
        assert told[copied].title == f"trip-copy~{suffix} / {_namespace(source)}"
        assert story.branch_story(db, copied).summary.title == told[copied].title


def test_a_copied_subgraph_names_its_source_as_the_source_is_titled(copied_trip: Path) -> None:
    with rewinddb.open(copied_trip, readonly=True) as db:
        told = {a.branch.name: a.summary for a in story.attempts(db)}
        copies = {
            name: summary
            for name, summary in told.items()
            if name.startswith("lg/trip-copy/")
            and summary.fork is not None
            and summary.fork.label.startswith("copy of ")
        }
        assert len(copies) == 3  # the two turns' runs and the fork's
        for summary in copies.values():
            assert summary.fork is not None
            source = told[summary.fork.parent]
            assert summary.fork.label.startswith(f"copy of {source.title} at step ")
        assert any(s.fork and s.fork.label.startswith("copy of trip~") for s in copies.values())


def test_new_input_from_a_past_step_is_told_apart_from_a_replay(db: rewinddb.Database) -> None:
    """``invoke(input, past)`` is LangGraph's fork with new input (its first checkpoint's
    source is ``input``); ``invoke(None, past)`` replays. Both are of kind replay."""
    graph = _graph(RewindSaver(db))
    for text in ("lisbon", "porto"):
        graph.invoke({"messages": [text]}, thread("demo"))
    past = _first_done(graph, "demo")
    before = {b.name for b in db.branches.list()}
    graph.invoke({"messages": ["faro"]}, past.config)
    (new_input,) = {b.name for b in db.branches.list() if "~" in b.name} - before
    history = list(graph.get_state_history(thread("demo")))
    (again,) = [s for s in history if s.next == ("research",) and len(s.values["messages"]) == 2]
    graph.invoke(None, again.config)
    (replay,) = {b.name for b in db.branches.list() if "~" in b.name} - before - {new_input}
    told = {a.branch.name: a.summary.fork for a in story.attempts(db)}
    assert told[new_input] is not None and told[replay] is not None
    assert (told[new_input].kind, told[new_input].label) == (
        "replay",
        f"new input at step {past.metadata['step']} of demo",
    )
    step = again.metadata["step"]
    assert (told[replay].kind, told[replay].label) == ("replay", f"replay from step {step} of demo")
