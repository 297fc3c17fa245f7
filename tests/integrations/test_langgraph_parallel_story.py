"""Parallel tool calls run as ``Send`` tasks, told as LangGraph itself reports them
(``get_state(...).tasks``, ``get_state_history``): one task failing fails only its own
call (the other's result is in the checkpoint's pending writes), and the step the tasks
made, its writes and its errors are named after the node they ran, not ``send``."""

from __future__ import annotations

from typing import Any

import pytest
from chat_graphs import send_trip_graph, thread
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph

import rewinddb
from rewinddb import story
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.presenters import presenter_for

ERROR = "ValueError('weather service timeout')"


def _answers(task: Any) -> dict[str, str]:
    """The tool results (call id -> text) a task LangGraph reports wrote."""
    written = task.result.get("messages", []) if isinstance(task.result, dict) else []
    return {m.tool_call_id: m.content for m in written if isinstance(m, ToolMessage)}


def test_one_failed_parallel_tool_fails_only_its_own_call(db: rewinddb.Database) -> None:
    """LangGraph reports the weather task failed and the hotel task done (its result in
    the checkpoint's pending writes): the step and the transcript show the hotel call's
    result, and only the weather call failed, in an error named after its node."""
    # LangGraph stops a superstep at its first failure and shuts its executor down:
    # now and then the hotel task's done-callback comes after that and its result never
    # reaches the checkpointer ("cannot schedule new futures after shutdown" in its
    # log; InMemorySaver loses it as often). Run again, with a new graph (its weather
    # call fails once) on a new thread, until LangGraph reports the result; the story
    # is checked on that thread.
    for attempt in range(20):
        graph = send_trip_graph(RewindSaver(db), fails=1)
        name = f"failed-one-{attempt}"
        with pytest.raises(ValueError, match="weather service timeout"):
            graph.invoke({"messages": [("user", "Rome")]}, thread(name))
        state = graph.get_state(thread(name))
        answered: dict[str, str] = {}
        for task in state.tasks:
            if not task.error:
                answered.update(_answers(task))
        if answered:
            break
    failed = [
        (t.name, repr(t.error) if not isinstance(t.error, str) else t.error)
        for t in state.tasks
        if t.error
    ]
    assert failed == [("tool_worker", ERROR)]
    assert answered == {"call_hotels": "Hotel Avenida in Rome"}
    expected = {
        "call_hotels": "Hotel Avenida in Rome",
        "call_weather": f"failed: {ERROR}",
    }
    told = story.branch_story(db, f"lg/{name}")
    assert told.summary.status == "failed"
    checkpoint = state.config["configurable"]["checkpoint_id"]
    (asked,) = [s for s in told.steps.steps if s.id == checkpoint]
    calls = {c.id: c.result for m in asked.messages for c in m.tool_calls}
    assert calls == expected
    errors = [(m.name, m.text) for m in asked.messages if m.role == "error"]
    assert errors == failed
    assert told.transcript is not None
    cards = {c.id: c.result for m in told.transcript.messages for c in m.tool_calls}
    assert cards == expected


def test_the_step_send_tasks_made_is_named_after_their_node(db: rewinddb.Database) -> None:
    """After a retry, the step the two ``Send`` tasks made reads as LangGraph names
    them (``tool_worker``, once, as a node that ran twice), retried; what each wrote is
    "node tool_worker wrote channel ..."; the error kept at its checkpoint is named so."""
    graph = send_trip_graph(RewindSaver(db), fails=1)
    with pytest.raises(ValueError, match="weather service timeout"):
        graph.invoke({"messages": [("user", "Rome")]}, thread("retried"))
    graph.invoke(None, thread("retried"))
    history = {
        s.config["configurable"]["checkpoint_id"]: s
        for s in graph.get_state_history(thread("retried"))
    }
    (ran_from,) = [s for s in history.values() if s.next == ("tool_worker", "tool_worker")]
    names = {t.name for t in ran_from.tasks}
    assert names == {"tool_worker"}
    assert [t.name for t in ran_from.tasks if t.error] == ["tool_worker"]
    steps = story.branch_story(db, "lg/retried").steps.steps
    (made,) = [
        s
        for s in steps
        if (snap := history.get(s.id or "")) is not None
        and snap.parent_config is not None
        and snap.parent_config["configurable"]["checkpoint_id"]
        == ran_from.config["configurable"]["checkpoint_id"]
    ]
    assert made.nodes == ("tool_worker",)
    assert made.label == "tool_worker (retried)"
    presenter = presenter_for(db.branches.get("lg/retried"))
    wrote = {w.text for w in presenter.wrote(db, made)}
    assert wrote == {
        "node tool_worker wrote channel messages",
        "node tool_worker wrote channel results",
    }
    (asked,) = [s for s in steps if s.id == ran_from.config["configurable"]["checkpoint_id"]]
    errors = [(m.name, m.text) for m in asked.messages if m.role == "error"]
    assert errors == [("tool_worker", f"{ERROR} (it ran again)")]


def _summarized_graph(saver: RewindSaver) -> Any:
    """planner -> summarizer (a subgraph: one node that says how many messages it saw)."""

    def summarize(state: MessagesState) -> dict:
        return {"messages": [AIMessage(content=f"Summary of {len(state['messages'])}")]}

    inner = StateGraph(MessagesState).add_node("inner", summarize).add_edge(START, "inner")
    builder = StateGraph(MessagesState)
    builder.add_node("planner", lambda state: {"messages": [AIMessage(content="Plan: Lisbon")]})
    builder.add_node("summarizer", inner.compile())
    builder.add_edge(START, "planner").add_edge("planner", "summarizer")
    return builder.compile(checkpointer=saver)


def test_a_subgraph_run_on_a_fork_is_titled_by_that_attempt(db: rewinddb.Database) -> None:
    """Time travel (an edit of the planner's step) runs the subgraph again, on the fork:
    its root checkpoint (LangGraph's ``parents`` metadata of the subgraph's
    checkpoints) is the fork's, and the subgraph is titled under the fork's title; the
    first run's subgraph stays under the thread's."""
    saver = RewindSaver(db)
    graph = _summarized_graph(saver)
    graph.invoke({"messages": [("user", "Lisbon")]}, thread("trip"))
    (before,) = [s for s in graph.get_state_history(thread("trip")) if s.next == ("summarizer",)]
    edited = graph.update_state(before.config, {"messages": [AIMessage("Plan: Porto")]})
    graph.invoke(None, edited)
    told = {a.branch.name: a.summary for a in story.attempts(db)}
    (fork,) = [name for name in told if name.startswith("lg/trip~")]
    fork_ids = {s.id for s in story.branch_story(db, fork).steps.steps if not s.inherited}
    runs = {}
    for name, summary in told.items():
        if summary.kind != "subgraph":
            continue
        namespace = name.split("/", 2)[2]
        config = {"configurable": {"thread_id": "trip", "checkpoint_ns": namespace}}
        (root,) = {c.metadata["parents"][""] for c in saver.list(config)}
        runs[summary.title] = root in fork_ids
        assert summary.title.endswith(f" / {namespace}")
    assert sorted(runs.values()) == [False, True]
    for title, on_fork in runs.items():
        assert title.split(" / ")[0] == (told[fork].title if on_fork else "trip")
