"""Stories the LangGraph presenter told wrong, each checked against what LangGraph itself
reports (``get_state``, ``get_state_history``) on a real graph: messages given as
LangChain's message-likes (tuples, dicts, strings), the status of a graph that used
``Send``, failed tasks and their retries, the current line of a thread after time
travel, and approvals on forks and in subgraphs."""

from __future__ import annotations

from typing import Any

from chat_graphs import thread
from langchain_core.messages import BaseMessage
from langgraph.graph import START, MessagesState, StateGraph

import rewinddb
from rewinddb import story
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
