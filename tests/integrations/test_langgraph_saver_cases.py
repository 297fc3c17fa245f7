"""RewindSaver cases a new user's trial found, each with real LangGraph graphs: a prune
leaves nothing of what it pruned readable anywhere (a time-travel fork, a copy, pending
writes kept as keys), what the saver stores is what LangGraph gave it when it called,
``get_tuple`` answers with the caller's config, and thread ids as LangGraph's own
savers take them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, StateSnapshot, interrupt
from leaks import encodings, hits_in_files
from typing_extensions import TypedDict

import rewinddb
from rewinddb import story
from rewinddb.integrations.langgraph import RewindSaver

#: Words each turn of a test says, no two with a stretch in common (``found`` looks for
#: their base64 too, which a common prefix would share).
WORDS = ("kumquat4711", "marzipan0923", "tangerine5588", "zeppelin2046")


@pytest.fixture(params=["sqlite", "postgresql"])
def both(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RewindSaver]:
    """A saver on SQLite, and on a fresh PostgreSQL schema."""
    target: Any = tmp_path / "agent"
    if request.param == "postgresql":
        target = request.getfixturevalue("postgres_url")
    with RewindSaver.from_path(target) as saver:
        yield saver


def config(thread_id: Any, **more: Any) -> Any:
    return {"configurable": {"thread_id": thread_id, **more}}


# -- prune leaves nothing of what it pruned ----------------------------------------------


def echo_graph(checkpointer: Any) -> Any:
    def bot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("echo " + str(state["messages"][-1].content))]}

    return (
        StateGraph(MessagesState)
        .add_node("bot", bot)
        .add_edge(START, "bot")
        .compile(checkpointer=checkpointer)
    )


class Noted(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: dict[str, str]


def noted_graph(checkpointer: Any) -> Any:
    """``remember`` (a 20-member dict: a pending write kept as a ``write/`` key) and
    ``ask`` (an interrupt) run in parallel, so each turn's first checkpoint keeps writes
    pending until the resume."""

    def remember(state: Noted) -> dict[str, Any]:
        said = str(state["messages"][-1].content)
        notes = {f"note-{i}": f"{i}: {said[::-1]}" for i in range(20)}  # not in a message
        return {"messages": [AIMessage(f"noted: {said}")], "notes": notes}

    def ask(state: Noted) -> dict[str, Any]:
        return {"messages": [AIMessage(f"you said {interrupt('go on?')}")]}

    builder = StateGraph(Noted)
    builder.add_node("remember", remember)
    builder.add_node("ask", ask)
    builder.add_edge(START, "remember")
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=checkpointer)


def tuples(saver: Any, thread_id: str) -> dict[str, CheckpointTuple]:
    """Every checkpoint of the thread (all namespaces) as LangGraph reads it, by id."""
    return {t.checkpoint["id"]: t for t in saver.list(config(thread_id))}


def readable(db: rewinddb.Database, branches: Iterable[str] | None = None) -> str:
    """All that a reader of the database can see: every live branch's state and events
    as of every version (what cannot be read there is skipped)."""
    seen = []
    for name in db.branches.names() if branches is None else branches:
        view = db.at(name)
        for version in range(db.version + 1):
            try:
                state = view.snapshot(as_of=version)
                events = view.events.list(as_of=version)
            except rewinddb.RewindError:
                continue
            seen.append(repr(state))
            seen.append(repr([(item.event.event_type, item.event.payload) for item in events]))
    return "\n".join(seen)


def found(text: str, secret: str) -> bool:
    """Whether ``secret`` is in ``text`` as itself or base64 (the serde's msgpack)."""
    return any(needle.decode() in text for needle in encodings(secret))


def left_of_the_pruned(
    db: rewinddb.Database, after: dict[str, CheckpointTuple], secrets: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Of ``secrets``: those no kept checkpoint holds (only pruned ones did), and those
    of them still readable in the database."""
    kept = repr(after)
    gone = [secret for secret in secrets if not found(kept, secret)]
    everything = readable(db)
    return gone, [secret for secret in gone if found(everything, secret)]


def pruned_cleanly(
    db: rewinddb.Database, before: dict[str, CheckpointTuple], after: dict[str, CheckpointTuple]
) -> set[str]:
    """Check that each kept checkpoint reads as before (no parent when its parent went)
    and that no pruned checkpoint's id is readable on a thread branch; returns the ids of
    those that went."""
    gone = set(before) - set(after)
    assert gone and after
    for checkpoint_id, now in after.items():
        was = before[checkpoint_id]
        parent = was.parent_config
        if parent is not None and parent["configurable"]["checkpoint_id"] in gone:
            was = was._replace(parent_config=None)
        assert now == was
    threads = readable(db, [name for name in db.branches.names() if name.startswith("lg/")])
    assert [checkpoint_id for checkpoint_id in gone if checkpoint_id in threads] == []
    assert db.verify().ok
    return gone


def test_keep_latest_with_the_newest_on_a_fork_leaves_nothing_of_the_old_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "agent"
    with RewindSaver.from_path(path) as saver:
        graph, twin = echo_graph(saver), echo_graph(InMemorySaver())
        for g in (graph, twin):
            for text in ["one", "PRUNED-two-4f1c9e", "PRUNED-three-8a2d7b"]:
                g.invoke({"messages": [HumanMessage(text, id=text)]}, config("t"))
            after_one = [s for s in g.get_state_history(config("t")) if s.metadata["step"] == 1]
            g.invoke({"messages": [HumanMessage("fork", id="fork")]}, after_one[-1].config)
        before = tuples(saver, "t")
        newest = graph.get_state(config("t"))

        saver.prune(["t"])

        after = tuples(saver, "t")
        assert list(after) == [newest.config["configurable"]["checkpoint_id"]]
        pruned_cleanly(saver.db, before, after)
        everything = readable(saver.db)
        assert not found(everything, "PRUNED-two-4f1c9e")
        assert not found(everything, "PRUNED-three-8a2d7b")
        assert [m.content for m in graph.get_state(config("t")).values["messages"]] == [
            "one",
            "echo one",
            "fork",
            "echo fork",
        ]
        graph.invoke({"messages": [HumanMessage("on", id="on")]}, config("t"))
        twin.invoke({"messages": [HumanMessage("on", id="on")]}, config("t"))
        ours, theirs = graph.get_state(config("t")), twin.get_state(config("t"))
        assert ours.next == theirs.next
        assert [m.content for m in ours.values["messages"]] == [
            m.content for m in theirs.values["messages"]
        ]
        saver.db.gc()
    assert hits_in_files(path, "PRUNED-two-4f1c9e") == []
    assert hits_in_files(path, "PRUNED-three-8a2d7b") == []


@pytest.mark.parametrize("keep", [2, 3, 5])
def test_keep_last_across_a_fork_keeps_exactly_the_newest(both: RewindSaver, keep: int) -> None:
    saver = both
    graph = noted_graph(saver)
    for turn in range(3):
        graph.invoke({"messages": [HumanMessage(f"turn {turn} {WORDS[turn]}")]}, config("t"))
        graph.invoke(Command(resume=f"yes {turn}"), config("t"))
    past = [s for s in graph.get_state_history(config("t")) if s.next == ("remember", "ask")][-1]
    graph.invoke(Command(resume="fork"), past.config)  # a fork of the first turn
    graph.invoke({"messages": [HumanMessage("after the fork")]}, config("t"))  # waits
    before = tuples(saver, "t")
    newest = sorted(before, reverse=True)[:keep]

    saver.prune(["t"], strategy="keep_last", keep=keep)

    after = tuples(saver, "t")
    assert sorted(after, reverse=True) == newest
    pruned_cleanly(saver.db, before, after)
    gone, left = left_of_the_pruned(saver.db, after, [w[::-1] for w in WORDS[:3]])
    assert left == []
    assert (WORDS[1][::-1] in gone) is (keep < 5)  # (its turn's notes are kept with 5)
    graph.invoke(Command(resume="done"), config("t"))  # the waiting turn goes on
    assert graph.get_state(config("t")).next == ()


def test_pending_writes_kept_as_keys_go_with_their_checkpoint(saver: RewindSaver) -> None:
    graph = noted_graph(saver)
    for turn in range(3):
        graph.invoke({"messages": [HumanMessage(f"turn {turn} {WORDS[turn]}")]}, config("t"))
        if turn < 2:
            graph.invoke(Command(resume=f"yes {turn}"), config("t"))
    before = tuples(saver, "t")
    assert saver.get_tuple(config("t")).pending_writes  # the last turn waits

    saver.prune(["t"])

    after = tuples(saver, "t")
    assert len(after) == 1
    pruned_cleanly(saver.db, before, after)
    assert left_of_the_pruned(saver.db, after, [WORDS[0][::-1]]) == ([WORDS[0][::-1]], [])
    graph.invoke(Command(resume="yes 2"), config("t"))
    assert "you said yes 2" in [m.content for m in graph.get_state(config("t")).values["messages"]]


def test_prune_of_a_copy_leaves_the_source_whole_and_keeps_nothing_it_dropped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "agent"
    with RewindSaver.from_path(path) as saver:
        graph = noted_graph(saver)
        for turn in range(2):
            graph.invoke({"messages": [HumanMessage(f"turn {turn} {WORDS[turn]}")]}, config("src"))
            graph.invoke(Command(resume=f"yes {turn}"), config("src"))
        saver.copy_thread("src", "copy")
        graph.invoke({"messages": [HumanMessage("copy's own turn")]}, config("copy"))
        source = tuples(saver, "src")
        before = tuples(saver, "copy")

        saver.prune(["copy"])

        assert tuples(saver, "src") == source
        after = tuples(saver, "copy")
        assert len(after) == 1
        for checkpoint_id, now in after.items():
            assert now == before[checkpoint_id]._replace(parent_config=None)
        saver.delete_thread("src")  # the copy read its branches: now nothing does
        assert left_of_the_pruned(saver.db, after, [WORDS[0][::-1]]) == ([WORDS[0][::-1]], [])
        assert saver.db.verify().ok
        assert tuples(saver, "copy") == after
        graph.invoke(Command(resume="copied"), config("copy"))
        assert graph.get_state(config("copy")).next == ()
        saver.db.gc()
    assert hits_in_files(path, WORDS[0][::-1]) == []  # (the copy's messages hold the words)


def test_keep_latest_after_an_edit_of_a_past_step_in_a_subgraph_thread(
    saver: RewindSaver,
) -> None:
    inner = noted_graph(None)
    graph = (
        StateGraph(Noted)
        .add_node("inner", inner)
        .add_edge(START, "inner")
        .compile(checkpointer=saver)
    )
    graph.invoke({"messages": [HumanMessage(f"first {WORDS[0]}")]}, config("t"))
    graph.invoke(Command(resume="yes"), config("t"))
    graph.invoke({"messages": [HumanMessage(f"second {WORDS[1]}")]}, config("t"))
    graph.invoke(Command(resume="yes"), config("t"))
    past = list(graph.get_state_history(config("t")))[-2]
    graph.update_state(past.config, {"messages": [HumanMessage("edited")]})
    before = tuples(saver, "t")

    saver.prune(["t"])

    after = tuples(saver, "t")
    pruned_cleanly(saver.db, before, after)
    assert not found(readable(saver.db), WORDS[1])


# -- what put and put_writes store is what LangGraph gave them ----------------------------


class _ChangedMeanwhile:
    """The saver's lock, which first does ``change`` each time a write takes it: what a
    graph running on does to the objects it gave the saver while the saver waits for the
    lock (``durability="async"`` saves in the background; ``add_messages`` gives
    messages ids in place)."""

    def __init__(self, lock: Any, change: Any) -> None:
        self.lock, self.change = lock, change

    def __enter__(self) -> Any:
        self.change()
        return self.lock.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self.lock.__exit__(*exc)


def test_put_and_put_writes_store_the_objects_as_they_were_when_called(
    saver: RewindSaver,
) -> None:
    given = HumanMessage("as the user said it")
    made: list[AIMessage] = []

    def reply(state: MessagesState) -> dict[str, Any]:
        made.append(AIMessage("as the node said it"))
        return {"messages": made[-1:]}

    def change() -> None:
        for message in [given, *made]:
            message.content, message.id = "changed later", "set later"

    saver.lock = _ChangedMeanwhile(saver.lock, change)
    graph = StateGraph(MessagesState).add_node("reply", reply).add_edge(START, "reply")
    graph.compile(checkpointer=saver).invoke({"messages": [given]}, config("t"), durability="sync")
    history = list(saver.list(config("t")))
    first, ran = history[-1], history[-2]  # the input, and the step the node ran from
    assert first.metadata["source"] == "input"
    [stored] = first.checkpoint["channel_values"]["__start__"]["messages"]
    assert (stored.content, stored.id) == ("as the user said it", None)
    [(_, channel, written)] = ran.pending_writes
    assert channel == "messages"
    # (LangGraph itself gave the reply its id before it called put_writes.)
    assert [(m.content, m.id != "set later") for m in written] == [("as the node said it", True)]


def test_writes_saved_before_their_checkpoint_are_stored_as_they_were_when_called(
    saver: RewindSaver,
) -> None:
    twin = InMemorySaver()
    graph = noted_graph(twin)
    graph.invoke({"messages": [HumanMessage("hello")]}, config("t"))  # waits, writes pending
    waiting = twin.get_tuple(config("t"))
    assert waiting is not None and waiting.pending_writes
    parent = twin.get_tuple(waiting.parent_config) if waiting.parent_config else None
    assert parent is not None
    saver.put(parent.parent_config or config("t"), parent.checkpoint, parent.metadata, {})
    values = {
        c: v
        for c, v in waiting.checkpoint["channel_values"].items()
        if c in waiting.checkpoint["channel_versions"]
    }
    new_versions = dict(waiting.checkpoint["channel_versions"])
    tasks: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in waiting.pending_writes:
        tasks.setdefault(task_id, []).append((channel, value))
    for task_id, writes in tasks.items():  # (async: a task's writes may come first)
        saver.put_writes(waiting.config, writes, task_id)
    expected = [(t, c, repr(v)) for t, c, v in waiting.pending_writes]
    for _, _, value in waiting.pending_writes:  # the graph goes on with them
        if isinstance(value, dict):
            value["note-0"] = "changed later"
        elif isinstance(value, list) and value and isinstance(value[0], AIMessage):
            value[0].content = "changed later"
    saver.put(
        parent.config,
        {**waiting.checkpoint, "channel_values": values},
        waiting.metadata,
        new_versions,
    )
    stored = saver.get_tuple(waiting.config)
    assert stored is not None
    assert sorted((t, c, repr(v)) for t, c, v in stored.pending_writes) == sorted(expected)


# -- get_tuple answers with the caller's config -------------------------------------------


def test_get_tuple_of_a_checkpoint_id_answers_with_the_callers_config(tmp_path: Path) -> None:
    with (
        sqlite3.connect(tmp_path / "langgraph.sqlite", check_same_thread=False) as conn,
        RewindSaver.from_path(tmp_path / "agent") as ours,
    ):
        answers = []
        for saver in (InMemorySaver(), SqliteSaver(conn), ours):
            graph = echo_graph(saver)
            graph.invoke({"messages": [HumanMessage("hello")]}, config("t"))
            head = saver.get_tuple(config("t"))
            past = list(saver.list(config("t")))[-1]
            for named in (head, past):
                asked = {
                    "configurable": {
                        **named.config["configurable"],
                        "checkpoint_map": {"": named.checkpoint["id"]},
                        "user_key": 1,
                    },
                    "tags": ["mine"],
                }
                found = saver.get_tuple(asked)
                assert found is not None and found.checkpoint["id"] == named.checkpoint["id"]
                answers.append((type(saver).__name__, found.config is asked, found.config == asked))
            newest = saver.get_tuple(config("t", user_key=1))  # no id: the newest's own
            assert newest is not None
            answers.append((type(saver).__name__, "newest", sorted(newest.config["configurable"])))
        memory, sqlite, rewind = (answers[i : i + 3] for i in range(0, 9, 3))
        assert [a[1:] for a in rewind] == [a[1:] for a in memory] == [a[1:] for a in sqlite]
        assert rewind[0][1:] == (True, True)


# -- thread ids as LangGraph's own savers take them -----------------------------------------


def subgraph_graph(checkpointer: Any) -> Any:
    """START -> outer -> sub (a subgraph: inner), so checkpoints of a namespace come too."""
    inner = StateGraph(MessagesState).add_node(
        "inner", lambda state: {"messages": [AIMessage("from the subgraph")]}
    )
    builder = StateGraph(MessagesState)
    builder.add_node("outer", lambda state: {"messages": [AIMessage("outer")]})
    builder.add_node("sub", inner.add_edge(START, "inner").compile())
    builder.add_edge(START, "outer").add_edge("outer", "sub")
    return builder.compile(checkpointer=checkpointer)


def shown(graph: Any, cfg: Any) -> list[tuple[Any, ...]]:
    """What LangGraph shows of a thread: each checkpoint's step, next, messages and
    namespace (with the subgraph's states)."""
    return [
        (
            s.metadata["step"],
            s.next,
            [m.content for m in s.values.get("messages", [])],
            s.config["configurable"]["checkpoint_ns"],
            [
                [m.content for m in t.state.values.get("messages", [])]
                for t in s.tasks
                if isinstance(t.state, StateSnapshot)
            ],
        )
        for s in graph.get_state_history(cfg)
    ]


def runs_alike(saver: RewindSaver, thread_id: str, copy_to: str = "copied") -> None:
    """A graph with a subgraph, run on ``thread_id`` with ``saver`` and with
    InMemorySaver, then again from its first turn (a time-travel fork): LangGraph shows
    the same thread, at the root and in the subgraph, ``list(None)`` names it, the
    explorer tells each of its branches, and it can be copied, pruned and deleted."""
    twin = subgraph_graph(InMemorySaver())
    graph = subgraph_graph(saver)
    for g in (graph, twin):
        for text in ("one", "two"):
            g.invoke({"messages": [HumanMessage(text, id=text)]}, config(thread_id))
        first = [s for s in g.get_state_history(config(thread_id)) if s.metadata["step"] == 2]
        g.invoke({"messages": [HumanMessage("fork", id="fork")]}, first[-1].config)
    assert shown(graph, config(thread_id)) == shown(twin, config(thread_id))
    sub = [t for t in saver.list(None) if t.config["configurable"]["checkpoint_ns"]]
    assert sub and {t.config["configurable"]["thread_id"] for t in sub} == {thread_id}
    assert thread_id in {t.config["configurable"]["thread_id"] for t in saver.list(None)}
    branches = [b for b in saver.db.branches.names() if b.startswith("lg/")]
    assert any("~" in b for b in branches) and all(len(b) <= 1024 for b in branches)
    told = {b: story.branch_story(saver.db, b).summary for b in branches}
    assert {t.status for t in told.values()} == {"finished"}
    assert {t.kind.partition(",")[0] for t in told.values()} == {"thread", "subgraph"}
    saver.copy_thread(thread_id, copy_to)
    copied = shown(graph, config(copy_to))
    assert copied == shown(twin, config(thread_id))
    saver.prune([thread_id])
    assert len(list(saver.list(config(thread_id)))) == 1
    graph.invoke({"messages": [HumanMessage("three", id="three")]}, config(thread_id))
    twin.invoke({"messages": [HumanMessage("three", id="three")]}, config(thread_id))
    assert shown(graph, config(thread_id))[0] == shown(twin, config(thread_id))[0]
    saver.delete_thread(thread_id)
    assert list(saver.list(config(thread_id))) == []
    assert thread_id not in {t.config["configurable"]["thread_id"] for t in saver.list(None)}
    assert shown(graph, config(copy_to)) == copied  # the copy did not notice
    assert saver.db.verify().ok


def test_the_empty_thread_id_is_a_thread_as_in_inmemorysaver(saver: RewindSaver) -> None:
    runs_alike(saver, "")
    assert [b for b in saver.db.branches.names() if b.startswith("lg/copied")]


@pytest.mark.parametrize(
    "thread_id",
    [
        "x" * 2_000,
        "中" * 1_200,
        "a / b ~ c % d # e" * 100,
        "x" * 500,  # the earlier layout took it at the root, not in a subgraph
        "中" * 42,
    ],
    ids=["ascii-2000", "cjk-1200", "separators-1700", "ascii-500", "cjk-42"],
)
def test_long_thread_ids_run_as_in_inmemorysaver_subgraphs_too(
    both: RewindSaver, thread_id: str
) -> None:
    runs_alike(both, thread_id, copy_to=thread_id[::-1] + "copy")


def test_a_long_namespace_under_a_long_thread_id(saver: RewindSaver) -> None:
    """Subgraphs three deep with long node names: namespaces of about 1,000 characters."""
    name = "n" * 300

    def deeper(graph: Any) -> Any:
        builder = StateGraph(MessagesState).add_node(name, graph)
        return builder.add_edge(START, name)

    inner = StateGraph(MessagesState).add_node(
        "inner", lambda state: {"messages": [AIMessage("deep")]}
    )
    inner = inner.add_edge(START, "inner").compile()
    graph = deeper(deeper(inner).compile()).compile(checkpointer=saver)
    twin = deeper(deeper(inner).compile()).compile(checkpointer=InMemorySaver())
    thread_id = "t" * 400
    for g in (graph, twin):
        g.invoke({"messages": [HumanMessage("hi", id="hi")]}, config(thread_id))
    assert shown(graph, config(thread_id)) == shown(twin, config(thread_id))
    spaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(config(thread_id))}
    assert max(len(ns) for ns in spaces) > 600 and "" in spaces
    assert saver.db.verify().ok


def test_a_thread_id_too_long_is_refused_before_the_run_starts(saver: RewindSaver) -> None:
    graph = subgraph_graph(saver)
    version = saver.db.version
    with pytest.raises(rewinddb.RewindError, match="thread ids of up to 65,536") as raised:
        graph.invoke({"messages": [HumanMessage("hi")]}, config("x" * 70_000))
    assert raised.value.code == "invalid.config"
    assert isinstance(raised.value, ValueError)
    assert saver.db.version == version  # nothing written
    with pytest.raises(rewinddb.RewindError, match="not valid Unicode"):
        graph.invoke({"messages": [HumanMessage("hi")]}, config("bad \ud800 id"))
    assert saver.db.version == version


def _earlier_escape(text: str) -> str:
    """The earlier layout's escaping of a name part (layout 2, before long ids)."""
    return quote(text, safe=":|-_.@ ").replace("~", "%7E")


@pytest.mark.parametrize(
    "thread_id",
    ["t", "a b/c~d%e:f|g", "中" * 42, "x" * 500],
    ids=["short", "separators", "cjk-42", "ascii-500"],
)
def test_thread_ids_the_earlier_layout_took_are_named_as_it_named_them(
    saver: RewindSaver, thread_id: str
) -> None:
    """A database written before keeps working: every name and key it could hold (1,024
    characters at most) is the one it holds; only a key it could not hold (a subgraph's
    branch beside a long thread id) names the branch by a digest, and holds its name."""
    graph = subgraph_graph(saver)
    graph.invoke({"messages": [HumanMessage("hi")]}, config(thread_id))
    before = [s for s in graph.get_state_history(config(thread_id)) if s.metadata["step"] == 1]
    graph.invoke({"messages": [HumanMessage("fork")]}, before[-1].config)
    part = _earlier_escape(thread_id)
    branches = [b for b in saver.db.branches.names() if b.startswith("lg/")]
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)}
    assert len(branches) == len(namespaces) + 1  # and a fork
    named = {"lg/" + part + (f"/{_earlier_escape(ns)}" if ns else "") for ns in namespaces}
    assert {b.partition("~")[0] for b in branches} == named
    index = saver.db.at("lg-index").kv
    expected = {f"ns/{part}/{_earlier_escape(ns)}" for ns in namespaces}
    expected |= {
        k
        for k in index.keys("cp/")
        if k.rpartition("/")[0] in {f"cp/{part}/{_earlier_escape(ns)}" for ns in namespaces}
    }
    digested = []
    for branch in branches:
        earlier = f"own/{part}/{_earlier_escape(branch)}"
        if len(earlier) <= 1024:
            expected.add(earlier)
        else:
            digested.append(branch)
    assert len(index.keys("cp/")) == len(list(saver.list(None)))
    assert set(index.keys()) - expected == {
        key for key in index.keys("own/") if index.get(key) in digested
    }
    assert (len(digested) > 0) is (len(thread_id) > 40)


@pytest.mark.parametrize("source", ["plain-id", "a/b", "中" * 40])
def test_a_copy_keeps_namespaces_that_stand_as_their_digest(
    db: rewinddb.Database, source: str
) -> None:
    """A thread whose id is escaped in names ('a/b', CJK text), with subgraphs whose
    namespace is too long to stand as itself: its copy lists the same namespaces and
    LangGraph resumes it as the source (copy_thread looked the namespaces' records up by
    the escaped thread part and named the copy's by their digests)."""
    name = "n" * 300

    def ask(state: MessagesState) -> dict:
        return {"messages": [AIMessage(f"deep got {interrupt('go?')}")]}

    inner = StateGraph(MessagesState).add_node("inner", ask).add_edge(START, "inner").compile()
    middle = StateGraph(MessagesState).add_node(name, inner).add_edge(START, name).compile()
    builder = StateGraph(MessagesState).add_node(name, middle).add_edge(START, name)
    saver = RewindSaver(db)
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"messages": [HumanMessage("hi", id="hi")]}, config(source))
    saver.copy_thread(source, "copy")

    def namespaces(thread_id: str) -> list[str]:
        found = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(config(thread_id))}
        return sorted(found, key=len)

    assert namespaces("copy") == namespaces(source)
    assert len(namespaces(source)) == 3 and not any(ns.startswith("#") for ns in namespaces(source))
    for thread_id in (source, "copy"):
        done = graph.invoke(Command(resume="yes"), config(thread_id))
        assert [m.content for m in done["messages"]] == ["hi", "deep got yes"]
