"""Listing a history reads each batch of checkpoints together (``kv.history`` of each key,
the write events once); what it returns is exactly what loading each checkpoint alone
returns, and what LangGraph's own saver returns, past batch edges, forks, copies, limits
and prunes."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver

TEXT = "lorem ipsum dolor sit amet " * 20
TURNS = 30  # 90 checkpoints: more than one batch of 64


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class Strings(TypedDict):
    items: Annotated[list[str], operator.add]


class Notes(TypedDict):
    turn: int
    notes: dict[str, str]


def _reply(state: Chat) -> dict[str, Any]:
    n = len(state["messages"])
    return {"messages": [AIMessage(content=f"{n}: {TEXT}", id=f"a{n}")]}


def _add(state: Strings) -> dict[str, Any]:
    return {"items": [f"{len(state['items'])}: {TEXT}"]}


def _write(state: Notes) -> dict[str, Any]:
    notes = dict(state.get("notes") or {})  # 16 notes and more: kept as a channel value
    notes[f"note-{state['turn']}"] = f"{state['turn']}: {TEXT}"
    return {"notes": notes}


GRAPHS: dict[str, tuple[type, Any, Any]] = {
    "messages": (
        Chat,
        _reply,
        lambda turn: {"messages": [HumanMessage(content=f"{turn}: {TEXT}", id=f"h{turn}")]},
    ),
    "strings": (Strings, _add, lambda turn: {"items": []}),
    "notes": (Notes, _write, lambda turn: {"turn": turn}),
}


def _graph(kind: str, saver: Any) -> tuple[Any, Any]:
    schema, node, turn_input = GRAPHS[kind]
    builder = StateGraph(schema)
    builder.add_node(node.__name__, node)
    builder.add_edge(START, node.__name__)
    return builder.compile(checkpointer=saver), turn_input


def _snapshots(graph: Any, config: Any, **options: Any) -> list[Any]:
    return [
        (
            s.values,
            s.next,
            s.metadata.get("source"),
            s.metadata.get("step"),
            [(task.name, task.error) for task in s.tasks],
        )
        for s in graph.get_state_history(config, **options)
    ]


def _alone(saver: RewindSaver, listed: list[Any]) -> list[Any]:
    """Each listed checkpoint loaded on its own (no batch read)."""
    return [saver.get_tuple(t.config) for t in listed]


def test_each_workloads_history_is_langgraphs(saver: RewindSaver) -> None:
    for kind in GRAPHS:
        graph, turn_input = _graph(kind, saver)
        reference, _ = _graph(kind, InMemorySaver())
        config: Any = {"configurable": {"thread_id": kind}}
        for turn in range(TURNS):
            graph.invoke(turn_input(turn), config)
            reference.invoke(turn_input(turn), config)
        ours = _snapshots(graph, config)
        assert len(ours) == 3 * TURNS
        assert ours == _snapshots(reference, config)
        for options in ({"limit": 5}, {"limit": 70}, {"filter": {"source": "input"}}):
            assert _snapshots(graph, config, **options) == _snapshots(reference, config, **options)
        listed = list(saver.list(config))
        assert listed == _alone(saver, listed)
        before = {
            "configurable": {"checkpoint_id": listed[40].config["configurable"]["checkpoint_id"]}
        }
        assert list(saver.list(config, before=before)) == listed[41:]
        assert list(saver.list(config, before=before, limit=3)) == listed[41:44]


def test_history_across_forks_and_copies(saver: RewindSaver) -> None:
    graph, turn_input = _graph("notes", saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    for turn in range(25):
        graph.invoke(turn_input(turn), config)
    past = list(graph.get_state_history(config))[30]
    for turn in range(25, 30):  # time travel: a fork of its own branch
        graph.invoke(turn_input(turn), past.config)
    forked = graph.update_state(past.config, {"notes": {"edited": TEXT}})
    graph.invoke(None, forked)
    saver.copy_thread("t", "copy")
    graph.invoke(turn_input(99), {"configurable": {"thread_id": "copy"}})
    for thread in ("t", "copy"):
        listed = list(saver.list({"configurable": {"thread_id": thread}}))
        assert listed == _alone(saver, listed)
    everything = list(saver.list(None))  # both threads: copies read the same versions
    assert everything == _alone(saver, everything)
    assert len(everything) == len(list(saver.list({"configurable": {"thread_id": "t"}}))) + len(
        list(saver.list({"configurable": {"thread_id": "copy"}}))
    )


def test_history_after_a_prune(saver: RewindSaver) -> None:
    graph, turn_input = _graph("strings", saver)
    config: Any = {"configurable": {"thread_id": "p"}}
    for turn in range(40):
        graph.invoke(turn_input(turn), config)
    saver.prune(["p"], strategy="keep_last", keep=70)
    listed = list(saver.list(config))
    assert len(listed) == 70
    assert listed == _alone(saver, listed)
    assert listed[0].checkpoint["channel_values"]["items"][-1].startswith("39: ")


def test_a_lists_versions_read_oldest_first_are_each_exact(db: rewinddb.Database) -> None:
    """A shared array read longer than before reads only the items past the longest
    read; on a fork that grew the list differently, its own items (another array)."""
    main = db.at("default")
    versions = [main.kv.put("items", [f"{i}: {TEXT}" for i in range(n)]) for n in range(2, 40)]
    fork_at = versions[20]
    db.branches.fork("default", "other", at=fork_at)
    other = db.at("other")
    grown = [f"{i}: {TEXT}" for i in range(22)] + [f"other {i}" for i in range(30)]
    other_versions = [other.kv.put("items", grown[:n]) for n in range(23, 52)]
    for view, written in ((main, versions), (other, other_versions)):
        entries = view.kv.history("items")  # oldest first
        by_version = {entry.version: entry.value for entry in entries}
        for version in written:
            assert by_version[version] == view.kv.get("items", as_of=version)
        newest_first = [view.kv.get("items", as_of=v) for v in reversed(written)]
        assert newest_first[::-1] == [by_version[v] for v in written]
        by_version[written[0]].append("changed by the reader")
        assert view.kv.get("items", as_of=written[0]) != by_version[written[0]]


def test_a_keys_values_at_many_versions_from_its_newest_entries(db: rewinddb.Database) -> None:
    from rewinddb.integrations.langgraph.saver import _UNREAD, _Newest

    main = db.at("default")
    versions = [main.kv.put("k", {"n": i}) for i in range(6)]
    main.kv.delete("k")
    db.branches.fork("default", "f", at=versions[3])
    fork = db.at("f")
    written = [fork.kv.put("k", {"fork": i}) for i in range(4)]
    fork.kv.delete("k")
    wanted = [versions[3], *written, db.branches.get("f").head]
    for expected in (1, 2, len(wanted)):  # too few entries at first: it reads on
        newest = _Newest(fork.kv, "k", wanted, expected)
        assert [newest.at(v) for v in wanted] == [fork.kv.get("k", as_of=v) for v in wanted]
    newest = _Newest(main.kv, "k", [versions[0], versions[2]], 1)
    assert [newest.at(v) for v in (versions[0], versions[2])] == [{"n": 0}, {"n": 2}]
    assert newest.at(versions[0] - 1) is _UNREAD  # not asked for, not known
    newest = _Newest(main.kv, "k", [versions[0], versions[2]], 10)  # fewer entries came
    assert newest.at(versions[0] - 1) is None  # so none is older
    # A version the branch cannot be read at: left to the ordinary read, which raises.
    before_fork = _Newest(fork.kv, "k", [versions[1]], 1)
    assert before_fork.at(versions[1]) is _UNREAD
