"""The threads a database of an earlier saver layout holds (``tests/integrations/data``):
the same graphs write the fixture and the test that reads it with today's saver."""

from __future__ import annotations

from chat_graphs import approval_graph, chat_graph, thread
from langgraph.types import Command

from rewinddb.integrations.langgraph import RewindSaver


def write_threads(saver: RewindSaver) -> None:
    """Thread ``chat``: three turns, then a turn forked from the first one's end (a
    time-travel branch that is now the newest); thread ``approve``: waiting for its
    human's answer (trigger channels pending)."""
    chat = chat_graph(saver)
    for _ in range(3):
        chat.invoke({"log": ["hi"]}, thread("chat"))
    first = [s for s in chat.get_state_history(thread("chat")) if s.metadata["step"] == 1][-1]
    chat.invoke({"log": ["again"]}, first.config)
    approval_graph(saver).invoke({"trail": []}, thread("approve"))


def history(saver: RewindSaver, thread_id: str) -> list[dict]:
    """What LangGraph shows of a thread, newest first, as JSON."""
    graph = chat_graph(saver) if thread_id == "chat" else approval_graph(saver)
    return [
        {
            "id": s.config["configurable"]["checkpoint_id"],
            "parent": s.parent_config["configurable"]["checkpoint_id"] if s.parent_config else None,
            "values": s.values,
            "next": list(s.next),
            "step": s.metadata["step"],
            "source": s.metadata["source"],
            "tasks": [[t.name, [str(i.value) for i in t.interrupts]] for t in s.tasks],
        }
        for s in graph.get_state_history(thread(thread_id))
    ]


__all__ = ["Command", "approval_graph", "history", "write_threads"]
