"""The small LangGraph graphs the integration tests run: one node appending to a log, a
draft that waits for a human's approval, and a trip planner whose tool calls run as
parallel ``Send`` tasks, one of which fails."""

from __future__ import annotations

import operator
import threading
from dataclasses import dataclass
from typing import Annotated, Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Send, interrupt
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


class Trip(TypedDict):
    messages: Annotated[list, add_messages]
    results: Annotated[list, operator.add]


def send_trip_graph(saver: RewindSaver, fails: int = 1) -> Any:
    """planner (two tool calls) -> one ``Send("tool_worker", call)`` per call; the
    weather call raises its first ``fails`` times, the hotel call always answers."""
    failing = {"weather": fails}

    def planner(state: Trip) -> dict:
        calls = [
            {"name": "search_hotels", "args": {"city": "Rome"}, "id": "call_hotels"},
            {"name": "weather", "args": {"city": "Rome"}, "id": "call_weather"},
        ]
        return {"messages": [AIMessage(content="Planning trip: Rome", tool_calls=calls)]}

    def fan_out(state: Trip) -> list[Send]:
        return [Send("tool_worker", {"call": c}) for c in state["messages"][-1].tool_calls]

    def tool_worker(arg: dict) -> dict:
        call = arg["call"]
        if call["name"] == "weather" and failing["weather"] > 0:
            failing["weather"] -= 1
            raise ValueError("weather service timeout")
        out = {"search_hotels": "Hotel Avenida in Rome", "weather": "sunny in Rome"}[call["name"]]
        answer = ToolMessage(content=out, tool_call_id=call["id"], name=call["name"])
        return {"messages": [answer], "results": [out]}

    builder = StateGraph(Trip).add_node("planner", planner).add_node("tool_worker", tool_worker)
    builder.add_edge(START, "planner").add_conditional_edges("planner", fan_out, ["tool_worker"])
    return builder.compile(checkpointer=saver)


def send_errors_graph(saver: RewindSaver) -> Any:
    """planner (three tool calls) -> one ``Send("tool_worker", call)`` per call, in one
    superstep: the hotel call answers, the weather and flight calls each raise their own
    error (``ValueError('weather service timeout')``, ``RuntimeError('no flights to
    Rome')``). The three workers wait for each other before answering: LangGraph
    cancels the tasks not yet started when one fails, which would record a
    ``CancelledError`` for a call instead of its own error."""
    started = threading.Barrier(3, timeout=30)
    errors = {
        "weather": ValueError("weather service timeout"),
        "flights": RuntimeError("no flights to Rome"),
    }

    def planner(state: Trip) -> dict:
        calls = [
            {"name": name, "args": {"city": "Rome"}, "id": f"call_{name}"}
            for name in ("hotels", "weather", "flights")
        ]
        return {"messages": [AIMessage(content="Planning trip: Rome", tool_calls=calls)]}

    def fan_out(state: Trip) -> list[Send]:
        return [Send("tool_worker", {"call": c}) for c in state["messages"][-1].tool_calls]

    def tool_worker(arg: dict) -> dict:
        call = arg["call"]
        started.wait()
        if call["name"] in errors:
            raise errors[call["name"]]
        answer = ToolMessage(content="Hotel Avenida", tool_call_id=call["id"], name=call["name"])
        return {"messages": [answer], "results": ["Hotel Avenida"]}

    builder = StateGraph(Trip).add_node("planner", planner).add_node("tool_worker", tool_worker)
    builder.add_edge(START, "planner").add_conditional_edges("planner", fan_out, ["tool_worker"])
    return builder.compile(checkpointer=saver)
