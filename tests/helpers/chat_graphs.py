"""The small LangGraph graph the integration tests run: one node appending to a log."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any

from langgraph.graph import END, START, StateGraph
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


def thread(thread_id: str) -> dict:
    """The config that names a thread."""
    return {"configurable": {"thread_id": thread_id}}
