"""RewindSaver against LangGraph's own savers on three kinds of graph state, in one run.

Run from the repository root (the langgraph extra and langgraph-checkpoint-sqlite
installed)::

    .venv/bin/python benchmarks/langgraph_savers.py [--turns 100 1000] [--repeats 3]
        [--workloads messages strings notes] [--threads 300] [--thread-turns 3]
        [--serde stock|encrypted]

Each turn is one ``invoke`` that adds about 500 bytes of state:

- ``messages``: LangChain messages under ``add_messages`` (a human message in, an AI
  answer out);
- ``strings``: a ``list[str]`` channel under ``operator.add`` (one string per turn);
- ``notes``: a dict channel the node rewrites whole each turn (one more note each time).

For each saver, workload and N it reports seconds per turn (medians of the first and of
the last 50 turns, to show whether it stays flat), the time to list the whole history
(``get_state_history``), and bytes on disk (database, WAL and shm files, the same way for
every saver) while the saver is still open and after it closed. Each figure is the median
over ``--repeats`` runs, the savers taking turns within each repeat. Targets, against
SqliteSaver in the same run: per turn at most 0.8x, history at most 1.0x, bytes on disk
(open and closed) at most 0.15x at 100 turns and 0.05x at 1,000.

Then, as most applications hold them, many short threads (``--threads``, default 300, of
``--thread-turns`` turns each, default 3: one conversation per thread) in one database:
time per turn and bytes on disk against SqliteSaver, for information (no target: it
shows the fixed cost of each thread and checkpoint, which a long thread hides).

``--serde encrypted`` gives every saver (SqliteSaver and InMemorySaver included) the same
``EncryptedSerializer.from_pycryptodome_aes(key=...)`` (AES with a fixed test key), to
show what encryption costs each; the default, ``stock``, gives each its own stock
serializer. The targets are the same either way.

Each run starts with a full garbage collection, and so does each history listing: the
process's first full collection walks every object its imports made (about 150,000,
tens of milliseconds), and without one it lands on whichever saver happens to allocate
enough first.
"""

from __future__ import annotations

import argparse
import gc
import operator
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

from rewinddb.integrations.langgraph import RewindSaver

TEXT = "lorem ipsum dolor sit amet " * 18  # ~490 characters

#: The AES key of ``--serde encrypted`` (a benchmark's, not a secret).
KEY = b"rewinddb-bench-k"


def stock_serde() -> SerializerProtocol | None:
    return None  # each saver's own default


def encrypted_serde() -> SerializerProtocol | None:
    return EncryptedSerializer.from_pycryptodome_aes(key=KEY)


#: ``--serde``: what each saver is given (a new one per saver).
SERDES: dict[str, Callable[[], SerializerProtocol | None]] = {
    "stock": stock_serde,
    "encrypted": encrypted_serde,
}


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class Strings(TypedDict):
    items: Annotated[list[str], operator.add]


class Notes(TypedDict):
    turn: int
    notes: dict[str, str]


def reply(state: Chat) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"{len(state['messages'])}: {TEXT}")]}


def add(state: Strings) -> dict[str, Any]:
    return {"items": [f"{len(state['items'])}: {TEXT}"]}


def write(state: Notes) -> dict[str, Any]:
    notes = dict(state.get("notes") or {})
    notes[f"note-{state['turn']}"] = f"{state['turn']}: {TEXT}"
    return {"notes": notes}


def one_node_graph(schema: type, node: Callable[[Any], dict[str, Any]]) -> Callable[[Any], Any]:
    """A graph of ``schema`` that runs ``node`` once per invoke, built on a checkpointer."""

    def build(checkpointer: Any) -> Any:
        builder = StateGraph(schema)
        builder.add_node(node.__name__, node)
        builder.add_edge(START, node.__name__)
        return builder.compile(checkpointer=checkpointer)

    return build


class Workload:
    """A graph and the input of each turn."""

    def __init__(self, build: Callable[[Any], Any], turn_input: Callable[[int], dict]) -> None:
        self.build, self.turn_input = build, turn_input


WORKLOADS = {
    "messages": Workload(
        one_node_graph(Chat, reply),
        lambda turn: {"messages": [HumanMessage(content=f"{turn}: {TEXT}")]},
    ),
    "strings": Workload(one_node_graph(Strings, add), lambda turn: {"items": []}),
    "notes": Workload(one_node_graph(Notes, write), lambda turn: {"turn": turn}),
}


@contextmanager
def sqlite_saver(directory: Path, serde: SerializerProtocol | None) -> Iterator[Any]:
    conn = sqlite3.connect(directory / "langgraph.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn, serde=serde)
    finally:
        conn.close()


@contextmanager
def rewind_saver(directory: Path, serde: SerializerProtocol | None) -> Iterator[Any]:
    with RewindSaver.from_path(directory / "agent", serde=serde) as saver:
        yield saver


@contextmanager
def memory_saver(directory: Path, serde: SerializerProtocol | None) -> Iterator[Any]:
    yield InMemorySaver(serde=serde)


SAVERS = {"SqliteSaver": sqlite_saver, "InMemorySaver": memory_saver, "RewindSaver": rewind_saver}


def disk_bytes(directory: Path) -> int:
    """Bytes of every file under ``directory`` (database, WAL and shm alike)."""
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def run(name: str, workload: Workload, turns: int, serde: str = "stock") -> dict[str, float]:
    gc.collect()
    with tempfile.TemporaryDirectory() as scratch:
        with SAVERS[name](Path(scratch), SERDES[serde]()) as saver:
            graph = workload.build(saver)
            config = {"configurable": {"thread_id": "chat"}}
            per_turn = []
            for turn in range(turns):
                started = time.perf_counter()
                graph.invoke(workload.turn_input(turn), config)
                per_turn.append(time.perf_counter() - started)
            gc.collect()
            started = time.perf_counter()
            # Each snapshot is dropped once seen: a 1,000-turn chat's whole history held
            # at once is gigabytes, whichever saver read it.
            listed = sum(1 for _ in graph.get_state_history(config))
            listing = time.perf_counter() - started
            assert listed >= turns, (name, listed)
            open_bytes = disk_bytes(Path(scratch))
        window = min(50, turns)
        return {
            "first": statistics.median(per_turn[:window]),
            "last": statistics.median(per_turn[-window:]),
            "list": listing,
            "open": open_bytes,
            "closed": disk_bytes(Path(scratch)),
        }


def run_threads(
    name: str, workload: Workload, threads: int, turns: int, serde: str = "stock"
) -> dict[str, float]:
    """``threads`` conversations of ``turns`` turns each, one after another, in one
    database: the median time per turn and the bytes on disk, open and closed."""
    gc.collect()
    with tempfile.TemporaryDirectory() as scratch:
        with SAVERS[name](Path(scratch), SERDES[serde]()) as saver:
            graph = workload.build(saver)
            per_turn = []
            for thread in range(threads):
                config = {"configurable": {"thread_id": f"conversation-{thread}"}}
                for turn in range(turns):
                    started = time.perf_counter()
                    graph.invoke(workload.turn_input(turn), config)
                    per_turn.append(time.perf_counter() - started)
            open_bytes = disk_bytes(Path(scratch))
        return {
            "turn": statistics.median(per_turn),
            "open": open_bytes,
            "closed": disk_bytes(Path(scratch)),
        }


def report_threads(args: argparse.Namespace) -> None:
    """The many-short-threads figures, each saver's median over ``--repeats`` runs."""
    names = ["SqliteSaver", "RewindSaver"]
    print(
        f"\n{args.threads:,} threads of {args.thread_turns} turns in one database "
        f"(medians of {args.repeats} runs, serde {args.serde}; information, no target)"
    )
    print(
        f"{'workload':9} {'saver':14} {'ms/turn':>8} {'bytes open':>12} {'bytes closed':>13}"
        f"  {'vs SqliteSaver: per turn, open, closed':>40}"
    )
    for workload in args.workloads:
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
        for repeat in range(args.repeats):
            for name in names if repeat % 2 == 0 else reversed(names):
                runs[name].append(
                    run_threads(
                        name, WORKLOADS[workload], args.threads, args.thread_turns, args.serde
                    )
                )
        medians = {
            name: {
                figure: statistics.median(r[figure] for r in runs[name]) for figure in runs[name][0]
            }
            for name in names
        }
        theirs = medians["SqliteSaver"]
        for name in names:
            ours = medians[name]
            ratios = ""
            if name != "SqliteSaver":
                ratios = (
                    f"{ours['turn'] / theirs['turn']:>14.2f} {ours['open'] / theirs['open']:>7.2f} "
                    f"{ours['closed'] / theirs['closed']:>7.2f}"
                )
            print(
                f"{workload:9} {name:14} {ours['turn'] * 1000:>8.2f} {ours['open']:>12,.0f} "
                f"{ours['closed']:>13,.0f}  {ratios:>40}"
            )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeats", type=int, default=3, help="runs per saver and N")
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument(
        "--threads", type=int, default=300, help="short threads in one database (0: none)"
    )
    parser.add_argument("--thread-turns", type=int, default=3, help="turns of each short thread")
    parser.add_argument(
        "--serde",
        choices=list(SERDES),
        default="stock",
        help="what every saver is given: its stock serializer, or one EncryptedSerializer (AES)",
    )
    args = parser.parse_args(argv)
    print(f"serde: {args.serde}")
    print(
        f"{'workload':9} {'saver':14} {'N':>5} {'ms/turn first':>14} {'ms/turn last':>13} "
        f"{'history ms':>11} {'bytes open':>12} {'bytes closed':>13}"
        f"   (medians of {args.repeats} runs)"
    )
    results: dict[tuple[str, str, int], dict[str, float]] = {}
    for workload in args.workloads:
        for turns in args.turns:
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in SAVERS}
            for repeat in range(args.repeats):
                names = list(SAVERS)
                for name in names if repeat % 2 == 0 else reversed(names):
                    runs[name].append(run(name, WORKLOADS[workload], turns, args.serde))
            for name in SAVERS:
                result = results[(workload, name, turns)] = {
                    figure: statistics.median(r[figure] for r in runs[name])
                    for figure in runs[name][0]
                }
                print(
                    f"{workload:9} {name:14} {turns:>5} {result['first'] * 1000:>14.2f} "
                    f"{result['last'] * 1000:>13.2f} {result['list'] * 1000:>11.1f} "
                    f"{result['open']:>12,.0f} {result['closed']:>13,.0f}"
                )
    print()
    failed = 0
    for workload in args.workloads:
        for turns in args.turns:
            ours = results[(workload, "RewindSaver", turns)]
            theirs = results[(workload, "SqliteSaver", turns)]
            disk_limit = 0.05 if turns >= 1000 else 0.15
            checks = [
                ("per turn (last 50)", ours["last"] / theirs["last"], 0.8),
                ("history listing", ours["list"] / theirs["list"], 1.0),
                ("bytes on disk, open", ours["open"] / theirs["open"], disk_limit),
                ("bytes on disk, closed", ours["closed"] / theirs["closed"], disk_limit),
            ]
            for label, ratio, limit in checks:
                verdict = "PASS" if ratio <= limit else "FAIL"
                failed += verdict == "FAIL"
                print(
                    f"{workload:9} N={turns:<5} {label:22} vs SqliteSaver {ratio:7.3f}"
                    f"  <= {limit}: {verdict}"
                )
    print(f"\n{failed} of the targets missed" if failed else "\nevery target met")
    if args.threads > 0:
        report_threads(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
