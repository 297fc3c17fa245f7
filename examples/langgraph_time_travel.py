"""LangGraph time travel recorded as a rewinddb branch tree (no model, no API key).

A tiny chat graph with a stub policy runs three turns on one thread, then is rewound twice
from past checkpoints. Each rewind starts a new branch forked at the checkpoint it resumed
from; the script prints the thread's attempts and how each fork's messages differ from the
thread's, as the explorer tells them (``rewinddb.story``), then the thread's branch tree and
each fork's diff from its parent as the store holds it (``db.diff``: keys, JSON paths and
LangGraph's bookkeeping).

    .venv/bin/python examples/langgraph_time_travel.py [DIRECTORY]
"""

from __future__ import annotations

import json
import operator
import sys
import tempfile
from pathlib import Path
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from rewinddb import story
from rewinddb.integrations.langgraph import RewindSaver


class Chat(TypedDict):
    messages: Annotated[list[str], operator.add]


def policy(state: Chat) -> dict:
    """A stub agent: answers the last user message by echoing it in upper case."""
    return {"messages": [f"agent: {state['messages'][-1].upper()}"]}


def main(directory: Path) -> None:
    builder = StateGraph(Chat)
    builder.add_node("policy", policy)
    builder.add_edge(START, "policy")
    builder.add_edge("policy", END)
    with RewindSaver.from_path(directory) as saver:
        graph = builder.compile(checkpointer=saver)
        thread = {"configurable": {"thread_id": "demo"}}
        for text in ("plan the trip", "book a hotel", "pay"):
            graph.invoke({"messages": [text]}, thread)
        history = list(graph.get_state_history(thread))
        after_turn = {len(s.values.get("messages", [])): s for s in history if not s.next}
        graph.invoke({"messages": ["book a hostel"]}, after_turn[2].config)  # rewind 1
        graph.update_state(after_turn[4].config, {"messages": ["user: cancel"]})  # rewind 2

        db = saver.db
        print(f"database: {directory}")
        print("attempts of thread 'demo' (as `rewinddb story` and the explorer tell them):")
        attempts = [a for a in story.attempts(db) if a.branch.name.startswith("lg/demo")]
        for attempt in attempts:
            summary = attempt.summary
            origin = summary.fork.label if summary.fork else "the thread as first run"
            current = ", current" if summary.current == attempt.branch.name else ""
            print(
                f"  {summary.title:<16} {origin:<30} {summary.status}{current}: {summary.outcome}"
            )
        for attempt in attempts:
            fork = attempt.summary.fork
            if fork is not None:
                print(f"\n{attempt.summary.title} ({fork.label}), compared with demo as it ended:")
                compared = story.compare_stories(
                    db, (fork.parent, None), (attempt.branch.name, None)
                )
                for row in compared.rows:
                    if not row.hidden:  # LangGraph's bookkeeping (versions, ids, times) is hidden
                        old, new = json.dumps(row.old), json.dumps(row.new)
                        if row.kind == "added":
                            print(f"  + {row.path}: {new}")
                        elif row.kind == "removed":
                            print(f"  - {row.path}: {old}")
                        else:
                            print(f"  ~ {row.path}: {old} -> {new}")

        print("\nbranch tree of thread 'demo' (the store's view):")
        for branch in db.branches.list():
            if branch.name.startswith("lg/demo"):
                origin = f"forked from {branch.parent}@{branch.forked_at}"
                print(f"  {branch.name:<20} {origin:<28} head {branch.head}")
        for branch in db.branches.list():
            if branch.name.startswith("lg/demo~"):
                print(f"\nstore diff of {branch.name} from {branch.parent}, both at their newest:")
                # readable=True: serde encodings (msgpack) decoded; these values are plain
                # text, stored as themselves, so here it shows the same lines as without
                print(db.diff(branch.parent, branch.name, readable=True))
        print("\nnewest state:", graph.get_state(thread).values["messages"])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "agent")
