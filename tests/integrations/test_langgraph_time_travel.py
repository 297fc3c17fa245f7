"""Time travel as LangGraph itself does it: replays that enter a subgraph, ``__copy__``
forks, and ``list(before=...)`` with only a checkpoint id (the saver-level cases behind
LangGraph's own suite, which ``tests/langgraph_suite`` runs in full)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from chat_graphs import Trail, approval_graph, chat_graph, thread
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver


def _graph_with_subgraph(saver: RewindSaver, ran: list[str]) -> Any:
    """START -> prepare -> research (a subgraph: search -> read) -> answer -> END.

    The subgraph returns its whole state, so the parent's reducer adds what the
    subgraph started from once more (LangGraph's behaviour, on every saver)."""

    def step(name: str) -> Any:
        def run(state: Trail) -> dict:
            ran.append(name)
            return {"trail": [name]}

        return run

    research = StateGraph(Trail)
    research.add_node("search", step("search"))
    research.add_node("read", step("read"))
    research.add_edge(START, "search")
    research.add_edge("search", "read")
    research.add_edge("read", END)
    builder = StateGraph(Trail)
    builder.add_node("prepare", step("prepare"))
    builder.add_node("research", research.compile())
    builder.add_node("answer", step("answer"))
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "research")
    builder.add_edge("research", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=saver)


def test_replay_from_before_a_subgraph_runs_it_again(saver: RewindSaver) -> None:
    ran: list[str] = []
    graph = _graph_with_subgraph(saver, ran)
    first = graph.invoke({"trail": []}, thread("t"))
    assert first["trail"] == ["prepare", "prepare", "search", "read", "answer"]
    before = next(s for s in graph.get_state_history(thread("t")) if s.next == ("research",))
    ran.clear()
    replayed = graph.invoke(None, before.config)
    assert ran == ["search", "read", "answer"]
    assert replayed == first


def test_fork_from_before_a_subgraph_runs_it_on_the_edited_state(
    saver: RewindSaver, db: rewinddb.Database
) -> None:
    ran: list[str] = []
    graph = _graph_with_subgraph(saver, ran)
    graph.invoke({"trail": []}, thread("t"))
    before = next(s for s in graph.get_state_history(thread("t")) if s.next == ("research",))
    edited = graph.update_state(before.config, {"trail": ["hint"]})
    ran.clear()
    forked = graph.invoke(None, edited)
    assert ran == ["search", "read", "answer"]
    assert forked["trail"] == ["prepare", "hint", "prepare", "hint", "search", "read", "answer"]
    assert any(branch.name.startswith("lg/t~") for branch in db.branches.list())


def test_copy_fork_keeps_the_values_and_asks_again(
    saver: RewindSaver, db: rewinddb.Database
) -> None:
    graph = approval_graph(saver)
    graph.invoke({"trail": []}, thread("t"))
    graph.invoke(Command(resume="ann"), thread("t"))
    done = graph.get_state(thread("t"))
    before = next(s for s in graph.get_state_history(thread("t")) if s.next == ("approve",))
    copy = graph.update_state(before.config, None, as_node="__copy__")
    state = graph.get_state(copy)
    assert state.values == before.values == {"trail": ["draft"]}
    assert state.next == ("approve",)
    assert state.metadata["source"] == "fork"
    asked = graph.invoke(None, copy)
    assert asked["__interrupt__"][0].value == "send it?"
    final = graph.invoke(Command(resume="bob"), copy)
    assert final == {"trail": ["draft", "approved by bob", "sent"]}
    # The original thread line is untouched, and the copy is a branch of the tree.
    assert graph.get_state(done.config).values == {"trail": ["draft", "approved by ann", "sent"]}
    assert any(b.name.startswith("lg/t~") and b.parent == "lg/t" for b in db.branches.list())


def test_copy_of_a_threads_first_checkpoint_keeps_its_start_task(saver: RewindSaver) -> None:
    graph = chat_graph(saver)
    graph.invoke({"log": ["hi"]}, thread("t"))
    first = list(graph.get_state_history(thread("t")))[-1]
    assert first.next == ("__start__",) and first.parent_config is None
    copy = graph.update_state(first.config, None, as_node="__copy__")
    state = graph.get_state(copy)
    assert state.next == ("__start__",)
    assert [task.name for task in state.tasks] == ["__start__"]
    assert graph.invoke(None, copy)["log"] == ["hi", "reply 1"]


def test_copy_put_with_no_new_versions_stores_the_values(saver: RewindSaver) -> None:
    """At the saver level: a checkpoint put under its original's parent with
    ``new_versions={}`` (what ``__copy__`` does) reads back with its values."""
    graph = chat_graph(saver)
    graph.invoke({"log": ["hi"]}, thread("t"))
    newest = saver.get_tuple(thread("t"))
    assert newest is not None and newest.parent_config is not None
    copy = {**newest.checkpoint, "id": "1f0000ff-0000-6000-8000-000000000000"}
    stored = saver.put(newest.parent_config, copy, {"source": "fork", "step": 9}, {})
    loaded = saver.get_tuple(stored)
    assert loaded is not None
    assert loaded.checkpoint["channel_values"] == newest.checkpoint["channel_values"]
    assert loaded.parent_config == newest.parent_config


def test_list_before_needs_only_a_checkpoint_id(saver: RewindSaver) -> None:
    graph = chat_graph(saver)
    graph.invoke({"log": ["hi"]}, thread("t"))
    graph.invoke({"log": ["hi"]}, thread("other"))
    ids = [t.config["configurable"]["checkpoint_id"] for t in saver.list(thread("t"))]
    before = {"configurable": {"checkpoint_id": ids[0]}}
    found = list(saver.list(thread("t"), before=before, limit=1))
    assert [t.config["configurable"]["checkpoint_id"] for t in found] == [ids[1]]
    assert [t.config["configurable"]["thread_id"] for t in found] == ["t"]

    async def alist() -> list[str]:
        return [
            t.config["configurable"]["checkpoint_id"]
            async for t in saver.alist(thread("t"), before=before)
        ]

    assert asyncio.run(alist()) == ids[1:]
    # A before config without an id filters nothing, as LangGraph's savers do.
    assert len(list(saver.list(thread("t"), before={"configurable": {}}))) == len(ids)


def test_list_before_that_is_not_a_config_is_refused(saver: RewindSaver) -> None:
    with pytest.raises(ValueError, match=r"before=.*checkpoint_id"):
        list(saver.list(thread("t"), before="1f0"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"before=.*checkpoint_id"):
        list(saver.list(thread("t"), before={"checkpoint_id": "1f0"}))  # type: ignore[typeddict-unknown-key]


def test_a_copied_thread_forks_from_the_checkpoint_it_was_copied_at(saver: RewindSaver) -> None:
    """The copy's head checkpoint is read on the source's branch: a fork from it starts
    there, not on the copy's own branch (which begins after that version). As on
    LangGraph's own savers, the answer recorded at that checkpoint is the one it keeps."""
    graph = approval_graph(saver)
    graph.invoke({"trail": []}, thread("t"))  # waits for its answer
    saver.copy_thread("t", "u")
    waiting = graph.get_state(thread("u"))
    done = {"trail": ["draft", "approved by ann", "sent"]}
    assert graph.invoke(Command(resume="ann"), thread("u")) == done
    assert graph.invoke(Command(resume="bob"), waiting.config) == done
    saver.delete_thread("t")
    assert graph.invoke(Command(resume="cy"), waiting.config) == done
    assert graph.get_state(thread("u")).values == done
    assert graph.get_state(thread("t")).values == {}
