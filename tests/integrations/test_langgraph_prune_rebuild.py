"""``prune`` of a thread it must write anew (a time-travel fork, a copy): the kept
checkpoints read as an unpruned copy of the thread reads them (pending writes in every
namespace included), each stays in its own namespace's branches, and the work the
rewrite does grows with the checkpoints kept, not with their square."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver, _names


def config(thread_id: str, checkpoint_ns: str = "", checkpoint_id: str | None = None) -> Any:
    configurable = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


# -- a forked thread with pending writes in several namespaces ----------------------------


class Noted(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: dict[str, str]


def inner_graph() -> Any:
    """``remember`` (a 20-member dict: a pending write kept as a ``write/`` key) beside
    ``ask`` (an interrupt): the subgraph's checkpoint keeps writes pending."""

    def remember(state: Noted) -> dict[str, Any]:
        said = str(state["messages"][-1].content)
        return {"notes": {f"note-{i}": f"{i}: {said}" for i in range(20)}}

    def ask(state: Noted) -> dict[str, Any]:
        return {"messages": [AIMessage(f"you said {interrupt('go on?')}")]}

    builder = StateGraph(Noted)
    builder.add_node("remember", remember)
    builder.add_node("ask", ask)
    builder.add_edge(START, "remember")
    builder.add_edge(START, "ask")
    return builder.compile()


def outer_graph(checkpointer: Any) -> Any:
    """The subgraph beside a root node ``log``: while the subgraph waits, the root
    checkpoint keeps ``log``'s write and the interrupt pending."""

    def log(state: Noted) -> dict[str, Any]:
        return {"messages": [AIMessage(f"logged {state['messages'][-1].content}")]}

    builder = StateGraph(Noted)
    builder.add_node("inner", inner_graph())
    builder.add_node("log", log)
    builder.add_edge(START, "inner")
    builder.add_edge(START, "log")
    return builder.compile(checkpointer=checkpointer)


def as_read(found: CheckpointTuple) -> tuple[Any, ...]:
    """A checkpoint tuple without its thread id (a copy's is its own)."""
    parent = found.parent_config
    return (
        found.config["configurable"]["checkpoint_ns"],
        found.config["configurable"]["checkpoint_id"],
        found.checkpoint,
        found.metadata,
        found.pending_writes,
        parent and parent["configurable"]["checkpoint_id"],
    )


def listed(saver: RewindSaver, thread_id: str) -> dict[tuple[str, str], CheckpointTuple]:
    """Every checkpoint of the thread (all namespaces) as ``list`` reads it."""
    return {
        (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"]): t
        for t in saver.list({"configurable": {"thread_id": thread_id}})
    }


def test_a_forked_thread_pruned_reads_as_its_unpruned_copy(saver: RewindSaver) -> None:
    graph = outer_graph(saver)
    for turn in range(3):
        graph.invoke({"messages": [HumanMessage(f"turn {turn}")]}, config("t"))
        graph.invoke(Command(resume=f"yes {turn}"), config("t"))
    waiting = [s for s in graph.get_state_history(config("t")) if s.next][-1]
    graph.invoke(Command(resume="fork"), waiting.config)  # time travel: a fork
    graph.invoke({"messages": [HumanMessage("after the fork")]}, config("t"))  # waits
    saver.copy_thread("t", "twin")
    before = listed(saver, "t")
    assert len({ns for ns, _ in before}) >= 3  # the root and two subgraph calls at least
    assert len([b for b in saver.db.branches.names() if b.startswith("lg/t")]) > 2

    saver.prune(["t"], strategy="keep_last", keep=4)

    after = listed(saver, "t")
    assert after and set(after) < set(before)
    pending = {ns for (ns, _), t in after.items() if t.pending_writes}
    assert "" in pending and len(pending) >= 2  # pending writes in the root and a subgraph
    for (ns, checkpoint_id), now in after.items():
        twin = saver.get_tuple(config("twin", ns, checkpoint_id))
        assert twin is not None
        expected = as_read(twin)
        if expected[-1] is not None and (ns, expected[-1]) not in after:
            expected = (*expected[:-1], None)  # its parent went
        assert as_read(now) == expected
        got = saver.get_tuple(config("t", ns, checkpoint_id))
        assert got is not None and as_read(got) == as_read(now)
    assert saver.db.verify().ok
    graph.invoke(Command(resume="done"), config("t"))  # the waiting turn goes on
    assert graph.get_state(config("t")).next == ()


# -- checkpoints written directly: the same ids in two namespaces, and scale -------------


def put(saver: RewindSaver, ns: str, checkpoint_id: str, parent: str | None, value: int) -> None:
    """A checkpoint of thread ``t`` holding channel ``x``, with one pending write."""
    checkpoint = empty_checkpoint()
    version = f"{value:016}"
    checkpoint["id"] = checkpoint_id
    checkpoint["channel_values"] = {"x": value}
    checkpoint["channel_versions"] = {"x": version}
    metadata: Any = {"step": value, "source": "loop"}
    saver.put(config("t", ns, parent), checkpoint, metadata, {"x": version})
    saver.put_writes(config("t", ns, checkpoint_id), [("x", -value)], f"task-{value}")


def numbered(number: int) -> str:
    return f"1f0{number:033d}"


def forked_line(saver: RewindSaver, count: int, namespaces: tuple[str, ...] = ("",)) -> None:
    """In each namespace: a line of ``count`` checkpoints, then a fork from its first
    with ``count`` more (the newest); the same ids in every namespace."""
    for ns in namespaces:
        first = parent = numbered(0)
        put(saver, ns, first, None, 1)
        for number in range(1, count):
            put(saver, ns, numbered(number), parent, number + 1)
            parent = numbered(number)
        parent = first
        for number in range(count, 2 * count):
            put(saver, ns, numbered(number), parent, number + 1)
            parent = numbered(number)


def test_the_same_ids_in_two_namespaces_stay_each_on_its_own_branches(
    saver: RewindSaver,
) -> None:
    forked_line(saver, 3, ("", "sub"))
    before = listed(saver, "t")

    saver.prune(["t"], strategy="keep_last", keep=3)

    after = listed(saver, "t")
    assert sorted(after) == sorted(key for key in before if key[1] >= numbered(3))
    for (ns, found_id), now in after.items():
        was = before[(ns, found_id)]
        if found_id == numbered(3):
            was = was._replace(parent_config=None)
        assert now == was
        entry = saver.index.get(_names.checkpoint_key("t", ns, found_id))
        parsed = _names.parse_branch(entry["branch"])
        assert parsed is not None and _names.same_namespace(parsed[:2], "t", ns), entry


@contextmanager
def sql_work(db: rewinddb.Database) -> Iterator[dict[str, int]]:
    """What SQLite does inside the block: the statements it runs and (about) the
    virtual machine steps they take, in hundreds: rows read count there."""
    raw = cast(Any, db._engine.conn)._raw
    work = {"statements": 0, "steps": 0}

    def statement(_: str) -> None:
        work["statements"] += 1

    def step() -> int:
        work["steps"] += 1
        return 0

    raw.set_trace_callback(statement)
    raw.set_progress_handler(step, 100)
    try:
        yield work
    finally:
        raw.set_trace_callback(None)
        raw.set_progress_handler(None, 0)


def prune_work(tmp_path: Any, count: int) -> dict[str, int]:
    """The SQL work of pruning a forked thread down to the fork's ``count`` checkpoints."""
    with RewindSaver.from_path(tmp_path / f"agent-{count}") as saver:
        forked_line(saver, count)
        with sql_work(saver.db) as work:
            saver.prune(["t"], strategy="keep_last", keep=count)
        assert len(listed(saver, "t")) == count
    return work


def test_the_rewrite_reads_each_branch_once_not_once_a_checkpoint(tmp_path: Any) -> None:
    # (Linear: 2.0 both. Reading a branch's events from each checkpoint on: 2.8 steps.)
    small, large = prune_work(tmp_path, 100), prune_work(tmp_path, 200)
    assert large["statements"] <= 2.4 * small["statements"], (small, large)
    assert large["steps"] <= 2.4 * small["steps"], (small, large)
