"""Stories the LangGraph presenter told wrong, each checked against what LangGraph itself
reports (``get_state``, ``get_state_history``) on a real graph: messages given as
LangChain's message-likes (tuples, dicts, strings), the status of a graph that used
``Send``, failed tasks and their retries, the current line of a thread after time
travel, and approvals on forks and in subgraphs."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from chat_graphs import approval_graph, thread
from langchain_core.messages import BaseMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, Send
from typing_extensions import TypedDict

import rewinddb
from rewinddb import presenters, story
from rewinddb.integrations.langgraph import RewindSaver

# -- what LangGraph reports -------------------------------------------------------------


def _said(message: BaseMessage) -> tuple[str, str]:
    return message.type, message.content if isinstance(message.content, str) else ""


def _added_by_langgraph(graph: Any, config: dict) -> dict[str, list[tuple[str, str]]]:
    """Checkpoint id -> the messages (role, text) its snapshot holds and its parent's did
    not (by id), as ``get_state_history`` reports them."""
    history = list(graph.get_state_history(config))
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in history}
    added = {}
    for snapshot in history:
        parent = snapshot.parent_config
        before = by_id.get(parent["configurable"]["checkpoint_id"]) if parent else None
        seen = {m.id for m in before.values.get("messages", [])} if before else set()
        now = snapshot.values.get("messages", [])
        added[snapshot.config["configurable"]["checkpoint_id"]] = [
            _said(m) for m in now if m.id not in seen
        ]
    return added


def _story_added(db: rewinddb.Database, branch: str) -> dict[str, list[tuple[str, str]]]:
    """Checkpoint id -> the messages (role, text) its step says it added."""
    steps = story.branch_story(db, branch).steps.steps
    return {s.id: [(m.role, m.text) for m in s.messages] for s in steps if s.id}


# -- 1. message-likes ----------------------------------------------------------------------


def test_message_likes_read_as_the_messages_langgraph_made(db: rewinddb.Database) -> None:
    """The README's example returns ``("ai", "...")`` tuples; LangChain takes dicts,
    strings and constructor envelopes too. Each step, the outcome and the transcript
    show them as the messages ``add_messages`` made of them (role and text)."""
    replies: dict[str, Any] = {
        "tuple": lambda text: [("ai", f"booked {text}")],
        "one-tuple": lambda text: ("assistant", f"booked {text}"),
        "dict": lambda text: [{"role": "assistant", "content": f"booked {text}"}],
        "envelope": lambda text: [
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "messages", "AIMessage"],
                "kwargs": {"content": f"booked {text}"},
            }
        ],
    }
    inputs: dict[str, Any] = {
        "tuple": [("user", "a hotel in Lisbon")],
        "one-tuple": ("human", "a hotel in Lisbon"),
        "dict": [{"role": "user", "content": "a hotel in Lisbon"}],
        "envelope": "a hotel in Lisbon",  # a bare string: a human message
    }
    for name, reply in replies.items():

        def agent(state: MessagesState, reply: Any = reply) -> dict:
            return {"messages": reply(state["messages"][-1].content)}

        builder = StateGraph(MessagesState).add_node("agent", agent).add_edge(START, "agent")
        graph = builder.compile(checkpointer=RewindSaver(db))
        graph.invoke({"messages": inputs[name]}, thread(name))
        state = graph.get_state(thread(name))
        expected = [_said(m) for m in state.values["messages"]]
        assert expected == [("human", "a hotel in Lisbon"), ("ai", "booked a hotel in Lisbon")]
        branch = f"lg/{name}"
        told = story.branch_story(db, branch)
        assert told.summary.outcome == state.values["messages"][-1].content, name
        assert _story_added(db, branch) == _added_by_langgraph(graph, thread(name)), name
        assert told.transcript is not None
        transcript = told.transcript.messages
        assert [(m.role, m.text) for m in transcript] == expected, name
        # Each message names the step that added it, as the step lists it.
        for shown in transcript:
            step = story.step_detail(db, branch, shown.step).step if shown.step else None
            assert step is not None and (shown.role, shown.text) in [
                (m.role, m.text) for m in step.messages
            ], name


# -- 4. the status agrees with LangGraph's ``next`` -------------------------------------


class Fan(TypedDict, total=False):
    items: Annotated[list[int], operator.add]
    total: int


def _fan_graph(saver: RewindSaver, *, then_sum: bool) -> Any:
    """START -> Send("work", i) for two items (-> "sum" once they are done)."""
    builder = StateGraph(Fan)
    builder.add_node("plan", lambda state: {})
    builder.add_node("work", lambda arg: {"items": [arg["i"] * 10]})
    builder.add_edge(START, "plan")
    builder.add_conditional_edges(
        "plan", lambda state: [Send("work", {"i": i}) for i in range(2)], ["work"]
    )
    if then_sum:
        builder.add_node("sum", lambda state: {"total": sum(state["items"])})
        builder.add_edge("work", "sum")
        builder.add_edge("sum", END)
    else:
        builder.add_edge("work", END)
    return builder.compile(checkpointer=saver)


def test_the_status_agrees_with_what_langgraph_runs_next(db: rewinddb.Database) -> None:
    """A graph that used ``Send`` leaves LangGraph's task channel behind, empty: its
    thread is finished (``next == ()``), not open; every checkpoint before is open as
    long as LangGraph has a task to run from it (``Send`` packets waiting included)."""
    for name, then_sum in (("fan", False), ("fan-sum", True)):
        graph = _fan_graph(RewindSaver(db), then_sum=then_sum)
        graph.invoke({"items": []}, thread(name))
        branch = f"lg/{name}"
        assert graph.get_state(thread(name)).next == ()
        record = db.branches.get(branch)
        assert story.branch_story(db, branch).summary.status == "finished", name
        versions = {s.id: s.version for s in story.branch_story(db, branch).steps.steps}
        history = list(graph.get_state_history(thread(name)))
        assert any("work" in s.next for s in history)  # the packets waited somewhere
        for snapshot in history:
            version = versions[snapshot.config["configurable"]["checkpoint_id"]]
            status = presenters.presenter_for(record).summary(db, record, as_of=version).status
            expected = "open" if snapshot.next else "finished"
            assert status == expected, (name, snapshot.metadata["step"], snapshot.next)
    # An approval: interrupted while LangGraph waits on its node, then finished.
    graph = approval_graph(RewindSaver(db))
    graph.invoke({"trail": []}, thread("ask"))
    assert graph.get_state(thread("ask")).next == ("approve",)
    summary = story.branch_story(db, "lg/ask").summary
    assert (summary.status, summary.waiting_on) == ("interrupted", "approve")
    graph.invoke(Command(resume="me"), thread("ask"))
    assert graph.get_state(thread("ask")).next == ()
    assert story.branch_story(db, "lg/ask").summary.status == "finished"
