"""Store-level retention on a LangGraph thread's branches (``db.retain('lg/*', ...)`` and
``db.gc()``, as docs/retention.md recommends): LangGraph's own API then lists exactly the
checkpoints whose state can still be read, each as an unretained copy of the database
reads it, and the thread goes on. Real graphs (a subgraph and a time-travel fork), on
SQLite (the copy is a copy of the database directory)."""

from __future__ import annotations

import asyncio
import operator
import shutil
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, StateSnapshot, interrupt
from typing_extensions import TypedDict

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver

THREAD = "lisbon-trip"


class Trip(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    results: Annotated[list[str], operator.add]
    approved: str


def _summarize(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(f"summary of {len(state['messages'])} messages")]}


def trip_graph(checkpointer: Any) -> Any:
    """planner -> a subgraph (its own namespace's checkpoints) -> approval (interrupt)
    -> finalize."""
    sub = StateGraph(MessagesState)
    sub.add_node("summarize_inner", _summarize)
    sub.add_edge(START, "summarize_inner")

    def planner(state: Trip) -> dict[str, Any]:
        return {"messages": [AIMessage(f"plan: {state['messages'][-1].content}")], "results": ["p"]}

    def approval(state: Trip) -> dict[str, Any]:
        return {"approved": interrupt("book it?")}

    def finalize(state: Trip) -> dict[str, Any]:
        return {"messages": [AIMessage(f"booked: {state['approved']}")], "results": ["f"]}

    builder = StateGraph(Trip)
    builder.add_node("planner", planner)
    builder.add_node("summarizer", sub.compile())
    builder.add_node("approval", approval)
    builder.add_node("finalize", finalize)
    builder.add_edge(START, "planner")
    builder.add_edge("planner", "summarizer")
    builder.add_edge("summarizer", "approval")
    builder.add_edge("approval", "finalize")
    return builder.compile(checkpointer=checkpointer)


def config(**more: Any) -> Any:
    return {"configurable": {"thread_id": THREAD, **more}}


def run_thread(path: Path) -> None:
    """Two turns, each interrupted then resumed, then time travel: the state before the
    second turn's planner edited and run from there (a fork), interrupted again."""
    with rewinddb.open(path) as db:
        graph = trip_graph(RewindSaver(db))
        for turn in ("Lisbon", "Porto"):
            graph.invoke({"messages": [HumanMessage(turn)]}, config())
            graph.invoke(Command(resume="yes"), config())
        history = list(graph.get_state_history(config()))
        target = next(h for h in history if h.next == ("planner",))
        forked = graph.update_state(target.config, {"messages": [HumanMessage("Faro")]})
        graph.invoke(None, forked)


def shown(snapshot: StateSnapshot) -> tuple[Any, ...]:
    """What a state snapshot tells of its checkpoint (pending writes aside)."""
    return (snapshot.values, snapshot.next, snapshot.metadata, snapshot.config)


def told(values: dict[str, Any]) -> dict[str, Any]:
    """State values with messages as their texts (a new run gives new message ids)."""
    return {**values, "messages": [m.content for m in values["messages"]]}


def _lg_branches(db: rewinddb.Database) -> list[str]:
    names = (str(getattr(branch, "name", branch)) for branch in db.branches.list())
    return [name for name in names if name.startswith("lg/")]


def logged_after(db: rewinddb.Database) -> dict[str, tuple[str, int | None]]:
    """checkpoint id -> its branch and the sequence of the first event logged after it
    there (None: none was), in an unretained database (the saver's index names both)."""
    index = RewindSaver(db).index
    found = {}
    for key in index.keys("cp/"):
        entry = index.get(key)
        start = entry["events"]
        first = db.at(entry["branch"]).events.list(after=start - 1 if start else None, limit=1)
        found[key.rpartition("/")[2]] = (entry["branch"], start if first else None)
    return found


def surviving_ids(db: rewinddb.Database, logged: dict[str, tuple[str, int | None]]) -> set[str]:
    """The checkpoints whose record is still in their branch's history and whose first
    event logged after them (``logged``, as the unretained copy holds it) is kept: those
    retention left readable exactly (a cut that removed an event after a checkpoint may
    have removed its pending writes: it reads as pruned)."""
    found = set()
    for name in _lg_branches(db):
        found |= {e.value["id"] for e in db.at(name).kv.history("checkpoint", limit=10_000)}
    return {i for i in found if _kept_event(db, *logged[i])}


def _kept_event(db: rewinddb.Database, branch: str, sequence: int | None) -> bool:
    if sequence is None:
        return True
    try:
        db.at(branch).events.get(sequence)
    except rewinddb.RewindError:
        return False
    return True


@pytest.fixture(scope="module")
def thread_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The thread's database, run once for the module (each test copies it)."""
    path = tmp_path_factory.mktemp("thread") / "agent"
    run_thread(path)
    return path


@pytest.fixture
def retained(tmp_path: Path, thread_run: Path, request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """A copy of the thread's database after ``retain('lg/*', keep_last=N)`` and
    ``gc()``, and an unretained copy of it."""
    path, whole = tmp_path / "agent", tmp_path / "whole"
    shutil.copytree(thread_run, path)
    shutil.copytree(thread_run, whole)
    with rewinddb.open(path) as db:
        db.retain("lg/*", keep_last=request.param)
        db.gc()
    return path, whole


KEEP = [1, 2, 3, 5, 8]


@pytest.mark.parametrize("retained", KEEP, indirect=True)
def test_history_lists_exactly_the_readable_checkpoints_as_before(
    retained: tuple[Path, Path],
) -> None:
    path, whole = retained
    with rewinddb.open(whole) as db:
        graph = trip_graph(RewindSaver(db))
        before = {
            s.config["configurable"]["checkpoint_id"]: s for s in graph.get_state_history(config())
        }
        before_state = graph.get_state(config())
        saver = RewindSaver(db)
        all_before = {t.checkpoint["id"]: t for t in saver.list(None)}
        logged = logged_after(db)
    with rewinddb.open(path) as db:
        saver = RewindSaver(db)
        graph = trip_graph(saver)
        readable = surviving_ids(db, logged)
        assert readable < all_before.keys()  # retention removed some, kept some
        after = {
            s.config["configurable"]["checkpoint_id"]: s for s in graph.get_state_history(config())
        }
        assert after.keys() == readable & before.keys()
        for checkpoint_id, snapshot in after.items():
            assert shown(snapshot) == shown(before[checkpoint_id])
        # Every namespace (the subgraph's too), through list and get_tuple.
        listed = {t.checkpoint["id"]: t for t in saver.list(None)}
        assert listed.keys() == readable & all_before.keys()
        for checkpoint_id, tuple_ in all_before.items():
            got = saver.get_tuple(tuple_.config)
            if checkpoint_id not in readable:
                assert got is None
                continue
            assert got is not None
            assert got.checkpoint == tuple_.checkpoint
            assert got.metadata == tuple_.metadata
            assert listed[checkpoint_id].checkpoint == tuple_.checkpoint
            # A listed checkpoint names its parent while that reads, else none (as
            # ``prune`` leaves one whose parent went); get_tuple names no other parent.
            parent = listed[checkpoint_id].parent_config
            if parent is not None:
                assert parent == tuple_.parent_config
                assert parent["configurable"]["checkpoint_id"] in readable
            elif tuple_.parent_config is not None:
                assert tuple_.parent_config["configurable"]["checkpoint_id"] not in readable
            assert got.parent_config == parent
        assert shown(graph.get_state(config())) == shown(before_state)
        history = asyncio.run(_ahistory(graph))
        assert [shown(s) for s in history] == [shown(after[i]) for i in sorted(after, reverse=True)]


async def _ahistory(graph: Any) -> list[StateSnapshot]:
    return [s async for s in graph.aget_state_history(config())]


@pytest.mark.parametrize("retained", KEEP, indirect=True)
def test_the_thread_goes_on_after_retention(retained: tuple[Path, Path]) -> None:
    path, whole = retained
    with rewinddb.open(whole) as db:
        graph = trip_graph(RewindSaver(db))
        graph.invoke(Command(resume="no"), config())
        expected = told(graph.get_state(config()).values)
    with rewinddb.open(path) as db:
        graph = trip_graph(RewindSaver(db))
        graph.invoke(Command(resume="no"), config())
        assert told(graph.get_state(config()).values) == expected
        graph.invoke({"messages": [HumanMessage("Braga")]}, config())
        assert graph.get_state(config()).next == ("approval",)
        # Time travel from the oldest checkpoint still readable (at its branch's cut).
        oldest = list(graph.get_state_history(config()))[-1]
        forked = graph.update_state(oldest.config, {"results": ["edited"]})
        assert told(graph.get_state(forked).values) == told(
            {**oldest.values, "results": [*oldest.values["results"], "edited"]}
        )
        graph.invoke(None, forked)
        asyncio.run(graph.ainvoke({"messages": [HumanMessage("Evora")]}, config()))
        state = graph.get_state(config())
        assert state.next == ("approval",)
        assert state.values["messages"][-3].content == "Evora"
        assert told(asyncio.run(graph.aget_state(config())).values) == told(state.values)


@pytest.mark.parametrize("retained", [1, 2, 3], indirect=True)
@pytest.mark.parametrize("strategy", ["keep_latest", "keep_last"])
def test_saver_prune_after_store_retention(retained: tuple[Path, Path], strategy: str) -> None:
    """``prune`` counts only what still reads: each namespace keeps its newest readable
    checkpoints, each as the unretained copy reads it."""
    path, whole = retained
    with rewinddb.open(whole) as db:
        all_before = {t.checkpoint["id"]: t for t in RewindSaver(db).list(None)}
    with rewinddb.open(path) as db:
        saver = RewindSaver(db)
        readable = [t.checkpoint["id"] for t in saver.list(config(checkpoint_ns=""))]
        keep = None if strategy == "keep_latest" else 2
        saver.prune([THREAD], strategy=strategy, keep=keep)
        root = [t.checkpoint["id"] for t in saver.list(config(checkpoint_ns=""))]
        assert root == readable[: keep or 1]
        for found in saver.list(None):
            assert found.checkpoint == all_before[found.checkpoint["id"]].checkpoint
        graph = trip_graph(saver)
        graph.invoke(Command(resume="no"), config())
        assert graph.get_state(config()).values["approved"] == "no"


def _parents(tuples: Any) -> list[tuple[str, str | None]]:
    """Each checkpoint's id with its parent's (None: it names none)."""
    return [
        (t.checkpoint["id"], t.parent_config and t.parent_config["configurable"]["checkpoint_id"])
        for t in tuples
    ]


@pytest.mark.parametrize("retained", KEEP, indirect=True)
def test_a_checkpoint_names_the_same_parent_however_it_is_read(
    retained: tuple[Path, Path],
) -> None:
    """The full list, its pages, a list cut by ``limit`` and ``get_tuple`` agree on each
    checkpoint's parent, and a parent named reads (a fork's first checkpoint whose fork
    point retention removed names none)."""
    path, _ = retained
    with rewinddb.open(path) as db:
        saver = RewindSaver(db)
        full = _parents(saver.list(config()))
        paged: list[tuple[str, str | None]] = []
        before = None
        while page := list(saver.list(config(), before=before, limit=2)):
            paged += _parents(page)
            before = page[-1].config
        assert paged == full
        for count in range(1, len(full) + 1):
            assert _parents(saver.list(config(), limit=count))[-1] == full[count - 1]
        everywhere = list(saver.list(None))
        for tuple_ in everywhere:
            got = saver.get_tuple(tuple_.config)
            assert got is not None
            assert got.parent_config == tuple_.parent_config
            if tuple_.parent_config is not None:
                assert saver.get_tuple(tuple_.parent_config) is not None
        graph = trip_graph(saver)
        history = {
            s.config["configurable"]["checkpoint_id"]: s for s in graph.get_state_history(config())
        }
        for count in range(1, len(history) + 1):
            for snapshot in graph.get_state_history(config(), limit=count):
                checkpoint_id = snapshot.config["configurable"]["checkpoint_id"]
                assert snapshot.parent_config == history[checkpoint_id].parent_config


class Parallel(TypedDict):
    log: Annotated[list[str], operator.add]


def parallel_graph(checkpointer: Any, calls: list[str]) -> Any:
    """``a`` and ``b`` from START in one step; ``b`` interrupts: the step's checkpoint
    holds ``a``'s write and ``b``'s interrupt as two write commits."""

    def a(state: Parallel) -> dict[str, Any]:
        calls.append("a")
        return {"log": ["a"]}

    def b(state: Parallel) -> dict[str, Any]:
        calls.append("b")
        return {"log": [f"b:{interrupt('ok?')}"]}

    builder = StateGraph(Parallel)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    return builder.compile(checkpointer=checkpointer)


@pytest.mark.parametrize("keep", [1, 2, 3])
def test_a_checkpoint_that_lost_pending_writes_reads_as_pruned(tmp_path: Path, keep: int) -> None:
    """A checkpoint read at its branch's cut whose first pending writes the cut removed
    is not read without them (resuming would run again a node that finished): it reads
    as pruned; one that kept them all reads as the unretained copy reads it."""
    path, whole = tmp_path / "agent", tmp_path / "whole"
    calls: list[str] = []
    with rewinddb.open(path) as db:
        parallel_graph(RewindSaver(db), calls).invoke({"log": []}, config())
    shutil.copytree(path, whole)
    with rewinddb.open(whole) as db:
        before = {t.checkpoint["id"]: t for t in RewindSaver(db).list(None)}
    with rewinddb.open(path) as db:
        db.retain("lg/*", keep_last=keep)
        db.gc()
        saver = RewindSaver(db)
        listed = list(saver.list(None))
        for tuple_ in listed:
            expected = before[tuple_.checkpoint["id"]]
            assert tuple_.pending_writes == expected.pending_writes
            got = saver.get_tuple(tuple_.config)
            assert got is not None and got.pending_writes == expected.pending_writes
        newest = saver.get_tuple(config())
        head = max(before)
        if newest is None or newest.checkpoint["id"] != head:
            assert head not in {t.checkpoint["id"] for t in listed}
            assert saver.get_tuple(before[head].config) is None
            continue_from = None
        else:
            continue_from = newest
        graph = parallel_graph(saver, calls)
        state = graph.get_state(config())
        if continue_from is not None:
            assert state.next == ("b",)
            calls.clear()
            assert graph.invoke(Command(resume="yes"), config())["log"] == ["a", "b:yes"]
            assert calls == ["b"]
