"""RewindSaver on the PostgreSQL backend: the same URL, the same branch tree."""

from __future__ import annotations

import operator
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def test_a_graph_with_time_travel_on_postgresql(postgres_url: str) -> None:
    with RewindSaver.from_path(postgres_url) as saver:
        builder = StateGraph(State)
        builder.add_node("agent", lambda state: {"log": [f"reply {len(state['log'])}"]})
        builder.add_edge(START, "agent")
        builder.add_edge("agent", END)
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "pg"}}
        for word in ("a", "b"):
            graph.invoke({"log": [word]}, config)
        past = next(
            s for s in graph.get_state_history(config) if s.values.get("log") == ["a", "reply 1"]
        )
        graph.invoke({"log": ["x"]}, past.config)
        assert graph.get_state(config).values["log"] == ["a", "reply 1", "x", "reply 3"]
    with rewinddb.open(postgres_url, readonly=True) as db:
        names = [b.name for b in db.branches.list() if b.name.startswith("lg/pg")]
        assert "lg/pg" in names and any(name.startswith("lg/pg~") for name in names)
