"""The small LangGraph graphs the integration tests run: one node appending to a log, and
a draft that waits for a human's approval."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

from rewinddb.integrations.langgraph import RewindSaver


class State(TypedDict):
    log: Annotated[list[str], operator.add]


@dataclass
class Note:
    """A value of the user's own type: a strict serde rebuilds it only when allowed."""

    text: str


def chat_graph(saver: RewindSaver) -> Any:
    """START -> agent -> END; the agent appends ``reply <length of the log>``."""
    builder = StateGraph(State)
    builder.add_node("agent", lambda state: {"log": [f"reply {len(state['log'])}"]})
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder.compile(checkpointer=saver)


class Trail(TypedDict):
    trail: Annotated[list[str], operator.add]


def approval_graph(saver: RewindSaver) -> Any:
    """START -> draft -> approve (interrupts for a human) -> send -> END."""

    def approve(state: Trail) -> dict:
        return {"trail": [f"approved by {interrupt('send it?')}"]}

    builder = StateGraph(Trail)
    builder.add_node("draft", lambda state: {"trail": ["draft"]})
    builder.add_node("approve", approve)
    builder.add_node("send", lambda state: {"trail": ["sent"]})
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "approve")
    builder.add_edge("approve", "send")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=saver)


def thread(thread_id: str) -> dict:
    """The config that names a thread."""
    return {"configurable": {"thread_id": thread_id}}
