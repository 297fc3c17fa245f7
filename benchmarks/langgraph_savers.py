"""RewindSaver against LangGraph's own savers on a chat-like graph, in one run.

Run from the repository root (the langgraph extra and langgraph-checkpoint-sqlite
installed)::

    .venv/bin/python benchmarks/langgraph_savers.py [--turns 100 1000] [--repeats 3]

The graph appends one ~500-byte message to a ``messages`` list channel per turn, one
``invoke`` per turn. For each saver and each N it reports seconds per turn (median over
the first and the last 50 turns, to show whether it stays flat), the time to list the
whole history (``get_state_history``), and bytes on disk after the run. Each figure is the
median over ``--repeats`` runs, the savers taking turns within each repeat (so a noisy
moment of the machine does not fall on one saver only). Targets (issue 6): per turn at
most 0.8x SqliteSaver's, history listing at most SqliteSaver's, disk after 1,000 turns at
most 0.05x SqliteSaver's (shorter runs print the disk ratio for information).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

from rewinddb.integrations.langgraph import RewindSaver

TEXT = "lorem ipsum dolor sit amet " * 18  # ~490 characters


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def reply(state: Chat) -> dict[str, Any]:
    """A stub policy: one ~500-byte answer per turn, no model."""
    return {"messages": [AIMessage(content=f"{len(state['messages'])}: {TEXT}")]}


def build(checkpointer: Any) -> Any:
    builder = StateGraph(Chat)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=checkpointer)


@contextmanager
def sqlite_saver(directory: Path) -> Iterator[Any]:
    conn = sqlite3.connect(directory / "langgraph.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


@contextmanager
def rewind_saver(directory: Path) -> Iterator[Any]:
    with RewindSaver.from_path(directory / "agent") as saver:
        yield saver


@contextmanager
def memory_saver(directory: Path) -> Iterator[Any]:
    yield InMemorySaver()


SAVERS = {"SqliteSaver": sqlite_saver, "InMemorySaver": memory_saver, "RewindSaver": rewind_saver}


def disk_bytes(directory: Path) -> int:
    """Bytes of every file the saver left, measured after it closed (WAL checkpointed)."""
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def run(name: str, turns: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        with SAVERS[name](Path(scratch)) as saver:
            graph = build(saver)
            config = {"configurable": {"thread_id": "chat"}}
            per_turn = []
            for turn in range(turns):
                started = time.perf_counter()
                graph.invoke({"messages": [HumanMessage(content=f"{turn}: {TEXT}")]}, config)
                per_turn.append(time.perf_counter() - started)
            started = time.perf_counter()
            history = list(graph.get_state_history(config))
            listing = time.perf_counter() - started
            assert len(history) >= turns, (name, len(history))
        window = min(50, turns)
        return {
            "first": statistics.median(per_turn[:window]),
            "last": statistics.median(per_turn[-window:]),
            "list": listing,
            "disk": disk_bytes(Path(scratch)),
        }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeats", type=int, default=3, help="runs per saver and N")
    args = parser.parse_args(argv)
    print(
        f"{'saver':14} {'N':>5} {'ms/turn first':>14} {'ms/turn last':>13} "
        f"{'history ms':>11} {'disk':>12}   (medians of {args.repeats} runs)"
    )
    results: dict[tuple[str, int], dict[str, float]] = {}
    for turns in args.turns:
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in SAVERS}
        for repeat in range(args.repeats):
            names = list(SAVERS)
            for name in names if repeat % 2 == 0 else reversed(names):
                runs[name].append(run(name, turns))
        for name in SAVERS:
            result = results[(name, turns)] = {
                figure: statistics.median(r[figure] for r in runs[name]) for figure in runs[name][0]
            }
            print(
                f"{name:14} {turns:>5} {result['first'] * 1000:>14.2f} "
                f"{result['last'] * 1000:>13.2f} {result['list'] * 1000:>11.1f} "
                f"{result['disk']:>12,}"
            )
    print()
    for turns in args.turns:
        ours, theirs = results[("RewindSaver", turns)], results[("SqliteSaver", turns)]
        checks = [
            ("per turn (last 50) vs SqliteSaver", ours["last"] / theirs["last"], 0.8),
            ("history listing vs SqliteSaver", ours["list"] / theirs["list"], 1.0),
            ("bytes on disk vs SqliteSaver", ours["disk"] / theirs["disk"], 0.05),
        ]
        for label, ratio, limit in checks:
            verdict = "PASS" if ratio <= limit else "FAIL"
            if label.startswith("bytes") and turns < 1000:
                verdict = "info (the target is for 1,000 turns)"
            print(f"N={turns:<5} {label:36} {ratio:7.3f}  <= {limit}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
