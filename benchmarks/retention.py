"""Retention on a LangGraph database: the space deleting and pruning threads gives back,
and how long it makes other writers wait.

Run from the repository root (the langgraph extra and langgraph-checkpoint-sqlite
installed)::

    .venv/bin/python benchmarks/retention.py [--threads 1000] [--turns 8] [--keep 10]

It builds ``--threads`` threads with ``RewindSaver`` (a ``MessagesState`` graph with one
node; each turn is one ``invoke`` of a human message and an answer, about 500 bytes each,
and makes three checkpoints), then:

1. deletes every other thread (``saver.delete_thread``: purged, index records erased);
2. prunes the rest to their last ``--keep`` checkpoints
   (``saver.prune(threads, strategy="keep_last", keep=N)``);
3. runs ``db.gc()``.

It prints the bytes of the database (file + WAL, while open) before and after each step.
While each step runs, a second process with its own ``rewinddb.open`` writes to the same
database every 20 ms (a ``kv.put`` or an ``events.append`` on a branch of its own) and
records how long each write took: the longest and the 99th percentile are the write
stalls the step caused. The writer's branch is purged after each step, before the bytes
are measured. ``GcReport.longest_step`` is the longest any gc step held the write lock.

Since the saver's deletes and prunes already purge and give the space back, that gc has
little left to do. A third database of the same threads shows a gc with the work to do:
half the thread branches deleted without purging (``db.branches.delete``) and
``db.retain("lg/*", keep_last=20)`` on the rest, then ``db.gc()`` with the writer running.

Baseline, in the same run: LangGraph's ``SqliteSaver`` with the same threads, half of them
deleted with its ``delete_thread`` (it has no prune), before and after ``VACUUM``, with the
same kind of writer (an ``UPDATE`` of one row every 20 ms) during its deletes and during
the ``VACUUM``.

The script only measures and prints; it exits 0 whatever the verdicts.
"""

from __future__ import annotations

import argparse
import multiprocessing
import queue
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from _report import Report, Row, Target, describe_machine, ms, python_version, size
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver

TEXT = "lorem ipsum dolor sit amet " * 18  # ~490 characters

#: The writer process writes once per this many seconds, and waits this long at most
#: for the write lock.
PACE = 0.02
WAIT = 900.0


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def reply(state: Chat) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"{len(state['messages'])}: {TEXT}")]}


def chat_graph(checkpointer: Any) -> Any:
    builder = StateGraph(Chat)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=checkpointer)


def progress(text: str) -> None:
    """A line on stderr while the run goes (the figures go to stdout at the end)."""
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def thread_ids(count: int) -> list[str]:
    return [f"user-{n:05d}" for n in range(count)]


def build(graph: Any, threads: list[str], turns: int) -> float:
    """Seconds to run ``turns`` turns on each thread (thread after thread)."""
    started = time.perf_counter()
    for thread_id in threads:
        config = {"configurable": {"thread_id": thread_id}}
        for turn in range(turns):
            graph.invoke({"messages": [HumanMessage(content=f"{turn}: {TEXT}")]}, config)
    return time.perf_counter() - started


def file_bytes(database: Path) -> int:
    """Bytes of a SQLite database file and its WAL."""
    return sum(
        path.stat().st_size
        for path in (database, database.with_name(database.name + "-wal"))
        if path.exists()
    )


# -- the writer that waits ----------------------------------------------------------


def rewind_writer(target: str, branch: str, ready: Any, stop: Any, results: Any) -> None:
    """Write to ``branch`` of the database every ``PACE`` seconds until ``stop``; put the
    seconds each write took on ``results``."""
    with rewinddb.open(target, busy_timeout=WAIT) as db:
        if not db.branches.exists(branch):
            db.branches.fork("default", branch)
        view = db.at(branch)
        taken: list[float] = []
        ready.set()
        count = 0
        while not stop.is_set():
            started = time.perf_counter()
            if count % 2:
                view.kv.put("tick", count)
            else:
                view.events.append("tick", {"n": count})
            taken.append(time.perf_counter() - started)
            count += 1
            time.sleep(PACE)
        results.put(taken)


def sqlite_writer(target: str, table: str, ready: Any, stop: Any, results: Any) -> None:
    """The same against a plain SQLite file: one ``UPDATE`` of one row each time."""
    conn = sqlite3.connect(target, timeout=WAIT, isolation_level=None)
    conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (n INTEGER)")
    conn.execute(f"INSERT INTO {table} VALUES (0)")
    taken: list[float] = []
    ready.set()
    while not stop.is_set():
        started = time.perf_counter()
        conn.execute(f"UPDATE {table} SET n = n + 1")
        taken.append(time.perf_counter() - started)
        time.sleep(PACE)
    conn.close()
    results.put(taken)


@dataclass
class Stalls:
    writes: int
    longest: float
    p99: float


@contextmanager
def writing_meanwhile(
    writer: Callable[..., None], target: str, name: str
) -> Iterator[list[Stalls]]:
    """Run ``writer`` in another process for the duration of the block; the list it
    yields holds the stalls once the block ends."""
    context = multiprocessing.get_context("spawn")
    ready, stop, results = context.Event(), context.Event(), context.Queue()
    process = context.Process(target=writer, args=(target, name, ready, stop, results))
    process.start()
    if not ready.wait(120):
        process.kill()
        raise RuntimeError("the writer process did not start")
    found: list[Stalls] = []
    try:
        yield found
    finally:
        stop.set()
        taken: list[float] | None = None
        deadline = time.monotonic() + WAIT + 60
        while taken is None and time.monotonic() < deadline:
            try:
                taken = results.get(timeout=1)
            except queue.Empty:
                if not process.is_alive():
                    break
        process.join(60)
        if taken is None:
            raise RuntimeError(f"the writer process failed (exit code {process.exitcode})")
    cut = (
        statistics.quantiles(taken, n=100, method="inclusive")[98]
        if len(taken) > 1
        else max(taken, default=0.0)
    )
    found.append(Stalls(len(taken), max(taken, default=0.0), cut))


# -- the two runs -------------------------------------------------------------------


@dataclass
class Figures:
    threads: int
    checkpoints: int  # per thread, as built
    kept: int  # per pruned thread, after
    build: float
    before: int
    after_delete: int
    after_prune: int | None
    after_gc: int
    delete: float  # seconds for all the deletes
    prune: float | None
    gc: float
    stalls: dict[str, Stalls]
    gc_report: str = ""
    longest_step: float | None = None


def rewind_run(directory: Path, count: int, turns: int, keep: int) -> Figures:
    target = directory / "agent"
    threads = thread_ids(count)
    deleted, pruned = threads[::2], threads[1::2]
    stalls: dict[str, Stalls] = {}
    with rewinddb.open(target) as db:
        saver = RewindSaver(db)
        graph = chat_graph(saver)
        built = build(graph, threads, turns)
        progress(f"RewindSaver: built {count:,} threads in {built:.1f} s")
        checkpoints = len(list(saver.list({"configurable": {"thread_id": threads[0]}})))
        path = db.path / "rewind.sqlite3" if isinstance(db.path, Path) else Path()
        before = file_bytes(path)

        def purge_writer(name: str) -> None:
            db.branches.delete(name, purge=True)

        with writing_meanwhile(rewind_writer, str(target), "writer-delete") as found:
            started = time.perf_counter()
            for thread_id in deleted:
                saver.delete_thread(thread_id)
            deleting = time.perf_counter() - started
        stalls["delete"] = found[0]
        progress(f"RewindSaver: deleted {len(deleted):,} threads in {deleting:.1f} s")
        purge_writer("writer-delete")
        after_delete = file_bytes(path)

        with writing_meanwhile(rewind_writer, str(target), "writer-prune") as found:
            started = time.perf_counter()
            saver.prune(pruned, strategy="keep_last", keep=keep)
            pruning = time.perf_counter() - started
        stalls["prune"] = found[0]
        progress(f"RewindSaver: pruned {len(pruned):,} threads in {pruning:.1f} s")
        purge_writer("writer-prune")
        after_prune = file_bytes(path)
        kept = len(list(saver.list({"configurable": {"thread_id": pruned[0]}})))

        with writing_meanwhile(rewind_writer, str(target), "writer-gc") as found:
            started = time.perf_counter()
            report = db.gc()
            collecting = time.perf_counter() - started
        stalls["gc"] = found[0]
        purge_writer("writer-gc")
        after_gc = file_bytes(path)
        # (db.verify() passes here too, as the tests check; it is left out of the run:
        # on 1,000 threads it takes minutes.)
        if saver.get_tuple({"configurable": {"thread_id": deleted[0]}}) is not None:
            raise RuntimeError("a deleted thread still loads")
    return Figures(
        count,
        checkpoints,
        kept,
        built,
        before,
        after_delete,
        after_prune,
        after_gc,
        deleting,
        pruning,
        collecting,
        stalls,
        str(report),
        report.longest_step,
    )


@dataclass
class GcFigures:
    before: int
    after: int
    seconds: float
    stalls: Stalls
    report: str
    longest_step: float


def gc_run(directory: Path, count: int, turns: int, keep_versions: int) -> GcFigures:
    """A gc with the work still to do: the same threads, half of their branches deleted
    without purging (``db.branches.delete``) and a policy on the rest."""
    target = directory / "agent"
    threads = thread_ids(count)
    with rewinddb.open(target) as db:
        graph = chat_graph(RewindSaver(db))
        progress(f"gc run: built {count:,} threads in {build(graph, threads, turns):.1f} s")
        for thread_id in threads[::2]:
            db.branches.delete(f"lg/{thread_id}")
        db.retain("lg/*", keep_last=keep_versions)
        path = db.path / "rewind.sqlite3" if isinstance(db.path, Path) else Path()
        before = file_bytes(path)
        with writing_meanwhile(rewind_writer, str(target), "writer-gc") as found:
            started = time.perf_counter()
            report = db.gc()
            seconds = time.perf_counter() - started
        db.drop_retention("lg/*")
        db.branches.delete("writer-gc", purge=True)
        after = file_bytes(path)
    return GcFigures(before, after, seconds, found[0], str(report), report.longest_step)


def sqlite_run(directory: Path, count: int, turns: int) -> Figures:
    path = directory / "langgraph.sqlite"
    threads = thread_ids(count)
    deleted = threads[::2]
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        graph = chat_graph(saver)
        built = build(graph, threads, turns)
        progress(f"SqliteSaver: built {count:,} threads in {built:.1f} s")
        checkpoints = len(list(saver.list({"configurable": {"thread_id": threads[0]}})))
        before = file_bytes(path)
        stalls: dict[str, Stalls] = {}
        with writing_meanwhile(sqlite_writer, str(path), "writer_delete") as found:
            started = time.perf_counter()
            for thread_id in deleted:
                saver.delete_thread(thread_id)
            deleting = time.perf_counter() - started
        stalls["delete"] = found[0]
        conn.execute("DROP TABLE writer_delete")
        after_delete = file_bytes(path)
        with writing_meanwhile(sqlite_writer, str(path), "writer_vacuum") as found:
            started = time.perf_counter()
            conn.execute("VACUUM")
            vacuuming = time.perf_counter() - started
        stalls["gc"] = found[0]
        conn.execute("DROP TABLE writer_vacuum")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        after_vacuum = file_bytes(path)
    finally:
        conn.close()
    return Figures(
        count,
        checkpoints,
        checkpoints,
        built,
        before,
        after_delete,
        None,
        after_vacuum,
        deleting,
        None,
        vacuuming,
        stalls,
    )


# -- the report ---------------------------------------------------------------------


def render(ours: Figures, theirs: Figures, keep: int, working: GcFigures | None) -> str:
    report = Report()
    half = ours.threads // 2
    report.section(
        f"bytes on disk (file + WAL, open): {ours.threads:,} threads of "
        f"{ours.checkpoints} checkpoints (baseline: SqliteSaver, same threads)"
    )
    report.add(Row("before", size(ours.before), size(theirs.before), ours.before / theirs.before))
    report.add(
        Row(
            f"after delete_thread of {half:,} threads",
            size(ours.after_delete),
            size(theirs.after_delete),
            ours.after_delete / theirs.after_delete,
        )
    )
    assert ours.after_prune is not None
    report.add(
        Row(
            f"after prune of the other {ours.threads - half:,} to their last {keep} "
            f"(SqliteSaver: no prune)",
            size(ours.after_prune),
            size(theirs.after_delete),
            ours.after_prune / theirs.after_delete,
        )
    )
    report.add(
        Row(
            "after db.gc() (SqliteSaver: after VACUUM)",
            size(ours.after_gc),
            size(theirs.after_gc),
            ours.after_gc / theirs.after_gc,
        )
    )
    shrunk, their_shrunk = ours.after_gc / ours.before, theirs.after_gc / theirs.before
    report.add(
        Row(
            "after / before",
            f"{shrunk:.3f}",
            f"{their_shrunk:.3f}",
            shrunk / their_shrunk,
            Target("<", 1.0, "< 1 (it shrinks)"),
            checked=shrunk,
        )
    )
    report.section(f"write stalls: another process writing every {PACE * 1000:.0f} ms")
    found, their = ours.stalls["delete"], theirs.stalls["delete"]
    label = f"during delete_thread of {half:,} threads, one after another"
    report.add(
        Row(
            f"{label}: longest ({found.writes:,} writes; baseline {their.writes:,})",
            ms(found.longest),
            ms(their.longest),
            found.longest / their.longest if their.longest else None,
        )
    )
    report.add(
        Row(
            f"{label}: 99th percentile",
            ms(found.p99),
            ms(their.p99),
            found.p99 / their.p99 if their.p99 else None,
        )
    )
    found = ours.stalls["prune"]
    label = f"during prune of {ours.threads - half:,} threads (one call)"
    report.add(Row(f"{label}: longest ({found.writes:,} writes)", ms(found.longest)))
    report.add(Row(f"{label}: 99th percentile", ms(found.p99)))
    found, their = ours.stalls["gc"], theirs.stalls["gc"]
    report.add(
        Row(
            f"during db.gc(): longest ({found.writes:,} writes; baseline: during VACUUM, "
            f"{their.writes:,} writes)",
            ms(found.longest),
            ms(their.longest),
            found.longest / their.longest if their.longest else None,
            Target("<", 1.0, "< 1 s"),
            checked=found.longest,
        )
    )
    report.add(
        Row(
            "during db.gc(): 99th percentile",
            ms(found.p99),
            ms(their.p99),
            found.p99 / their.p99 if their.p99 else None,
        )
    )
    assert ours.longest_step is not None
    report.add(
        Row(
            "GcReport.longest_step",
            ms(ours.longest_step),
            target=Target("<", 1.0, "< 1 s"),
            checked=ours.longest_step,
        )
    )
    if working is not None:
        report.section(
            f"db.gc() with the work to do: {ours.threads:,} threads again, half their "
            "branches deleted without purge, retain('lg/*', keep_last=20) on the rest"
        )
        report.add(
            Row(
                f"bytes before -> after ({working.seconds:.1f} s)",
                f"{size(working.before)} -> {size(working.after)}",
            )
        )
        found = working.stalls
        report.add(
            Row(
                f"write stall during it: longest ({found.writes:,} writes)",
                ms(found.longest),
                target=Target("<", 1.0, "< 1 s"),
                checked=found.longest,
            )
        )
        report.add(Row("write stall during it: 99th percentile", ms(found.p99)))
        report.add(
            Row(
                "GcReport.longest_step",
                ms(working.longest_step),
                target=Target("<", 1.0, "< 1 s"),
                checked=working.longest_step,
            )
        )
        report.note(f"gc with the work to do: {working.report}")
    report.section("time")
    report.add(
        Row(
            f"build {ours.threads:,} threads",
            f"{ours.build:.1f} s",
            f"{theirs.build:.1f} s",
            ours.build / theirs.build,
        )
    )
    report.add(
        Row(
            "delete_thread, per thread",
            ms(ours.delete / half),
            ms(theirs.delete / half),
            ours.delete / theirs.delete,
        )
    )
    assert ours.prune is not None
    report.add(Row("prune(keep_last), per thread", ms(ours.prune / (ours.threads - half))))
    report.add(Row("db.gc() (baseline: VACUUM)", ms(ours.gc), ms(theirs.gc), ours.gc / theirs.gc))
    report.note(f"gc: {ours.gc_report}")
    report.note(
        f"each pruned thread keeps {ours.kept} of its {ours.checkpoints} checkpoints; "
        "the writer's branch is purged after each step, before its bytes are measured"
    )
    return report.render()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1000)
    parser.add_argument(
        "--turns", type=int, default=8, help="invokes per thread (3 checkpoints each)"
    )
    parser.add_argument("--keep", type=int, default=10, help="checkpoints a pruned thread keeps")
    parser.add_argument(
        "--skip-gc-run", action="store_true", help="leave out the gc with the work to do"
    )
    args = parser.parse_args(argv)
    print(
        describe_machine(
            [sys.argv[0], *argv],
            ("python", python_version()),
            ("sqlite", sqlite3.sqlite_version),
            ("rewinddb", rewinddb.__version__),
            machine=f", temp dir {tempfile.gettempdir()}",
        )
    )
    print()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        ours = rewind_run(Path(scratch), args.threads, args.turns, args.keep)
    with tempfile.TemporaryDirectory() as scratch:
        theirs = sqlite_run(Path(scratch), args.threads, args.turns)
    working = None
    if not args.skip_gc_run:
        with tempfile.TemporaryDirectory() as scratch:
            working = gc_run(Path(scratch), args.threads, args.turns, 20)
    print(render(ours, theirs, args.keep, working))
    print(f"\nmeasured in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
