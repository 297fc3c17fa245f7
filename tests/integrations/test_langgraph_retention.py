"""Deleting and pruning LangGraph threads: what RewindSaver deletes is gone (from every
read, old versions of its index, every file of the database and every export) and stays
gone when late writes arrive; what it keeps answers exactly as before; other threads do
not notice. Real graphs throughout, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import _messages_delta_reducer, add_messages
from langgraph.types import Command, StateSnapshot, interrupt
from leaks import hits_in_export, hits_in_files, hits_in_rows
from typing_extensions import TypedDict

import rewinddb
from rewinddb import RewindError
from rewinddb.integrations.langgraph import RewindSaver

SECRET = "sk-live-4q9z-alices-own-secret-token"
LATE = "sk-late-8w2x-a-write-that-came-too-late"


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """Where the database goes: a directory, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return tmp_path / "agent"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def db_at(target: str | Path) -> Iterator[rewinddb.Database]:
    with rewinddb.open(target) as database:
        yield database


def config(thread_id: str, **more: Any) -> Any:
    return {"configurable": {"thread_id": thread_id, **more}}


# -- a graph that leaves a secret everywhere a thread keeps things ----------------------


class Secretive(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: dict[str, str]


def secretive_graph(checkpointer: Any) -> Any:
    """Two nodes run in parallel: ``remember`` writes a message and a 20-member dict
    (kept as a shared object, like a channel), ``ask`` interrupts; so the last
    checkpoint keeps their writes pending."""

    def remember(state: Secretive) -> dict[str, Any]:
        turn = len(state["messages"])
        notes = {f"note-{i}": f"{turn}/{i}: {state['messages'][-1].content}" for i in range(20)}
        return {"messages": [AIMessage(f"noted: {state['messages'][-1].content}")], "notes": notes}

    def ask(state: Secretive) -> dict[str, Any]:
        answer = interrupt("keep going?")
        return {"messages": [AIMessage(f"you said {answer}")]}

    builder = StateGraph(Secretive)
    builder.add_node("remember", remember)
    builder.add_node("ask", ask)
    builder.add_edge(START, "remember")
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=checkpointer)


def tell(graph: Any, thread_id: str, text: str, turns: int = 2) -> None:
    """``turns`` turns: each says ``text`` and answers the interrupt, and a last one
    is left waiting on it (its writes pending)."""
    for turn in range(turns):
        graph.invoke({"messages": [HumanMessage(f"{turn}: {text}")]}, config(thread_id))
        graph.invoke(Command(resume=f"yes {turn}"), config(thread_id))
    graph.invoke({"messages": [HumanMessage(f"last: {text}")]}, config(thread_id))


def history(saver: RewindSaver, thread_id: str) -> list[CheckpointTuple]:
    return list(saver.list(config(thread_id)))


def index_keys(db: rewinddb.Database, prefix: str) -> list[tuple[int, str]]:
    """(version, key) of every index key under ``prefix``, read as of every version."""
    view = db.at("lg-index")
    return [(v, key) for v in range(db.version + 1) for key in view.kv.keys(prefix, as_of=v)]


def stored_hits(target: str | Path, secret: str) -> list[str]:
    """Where the secret is stored: the files of the directory (SQLite, after a close),
    or the rows of the schema (PostgreSQL)."""
    if isinstance(target, Path):
        return hits_in_files(target, secret)
    return hits_in_rows(target, secret)


# -- delete_thread -----------------------------------------------------------------------


def test_a_deleted_thread_is_in_no_read_no_old_index_version_no_file_and_no_export(
    target: str | Path,
) -> None:
    with rewinddb.open(target) as db:
        saver = RewindSaver(db)
        graph = secretive_graph(saver)
        tell(graph, "alice", SECRET)
        tell(graph, "bob", "bob's own words")
        head = saver.get_tuple(config("alice"))
        assert head is not None and head.pending_writes  # the writes of the waiting turn
        assert any(isinstance(v, dict) and len(v) == 20 for _, _, v in head.pending_writes)
        assert list(db.at("lg/alice").kv.keys("write/"))  # a write kept as a shared object
        assert hits_in_export(db, SECRET)  # (the search finds what is there)
        bob = [(t.checkpoint, t.metadata, t.pending_writes) for t in history(saver, "bob")]
        assert any(key.startswith("cp/alice/") for _, key in index_keys(db, "cp/"))
    assert stored_hits(target, SECRET)

    with rewinddb.open(target) as db:
        saver = RewindSaver(db)
        saver.delete_thread("alice")
        assert saver.get_tuple(config("alice")) is None
        assert history(saver, "alice") == []
        assert not [b for b in db.branches.names() if b.startswith("lg/alice")]
        assert not [key for _, key in index_keys(db, "cp/") if key.startswith("cp/alice/")]
        assert index_keys(db, "ns/alice/") == index_keys(db, "own/alice/") == []
        assert [(t.checkpoint, t.metadata, t.pending_writes) for t in history(saver, "bob")] == bob
        assert secretive_graph(saver).get_state(config("bob")).values["notes"]
        assert db.verify().ok
        assert hits_in_export(db, SECRET) == []
    assert stored_hits(target, SECRET) == []


def test_late_writes_do_not_bring_a_deleted_thread_back(tmp_path: Path) -> None:
    path = tmp_path / "agent"
    with rewinddb.open(path) as db:
        saver = RewindSaver(db)
        graph = secretive_graph(saver)
        tell(graph, "alice", SECRET, turns=1)
        head = saver.get_tuple(config("alice"))
        assert head is not None
        saver.delete_thread("alice")
        version = db.version
        # What a run still going would save: its writes, then a checkpoint on the last.
        saver.put_writes(head.config, [("messages", [HumanMessage(LATE)])], "late-task")
        child = {**head.checkpoint, "id": "1f0ffff0-0000-6000-8000-000000000001"}
        saved = saver.put(head.config, child, {"source": "loop", "step": 9}, {})
        assert saved["configurable"]["checkpoint_id"] == child["id"]
        later = {**child, "id": "1f0ffff0-0000-6000-8000-000000000002"}
        saver.put(saved, later, {"source": "loop", "step": 10}, {})
        assert saver.get_tuple(config("alice")) is None
        assert saver.get_tuple(head.config) is None
        assert history(saver, "alice") == []
        assert not [b for b in db.branches.names() if b.startswith("lg/alice")]
        assert db.version == version  # nothing was written
        # The thread id can start again: a new thread, with nothing of the old one.
        secretive_graph(saver).invoke({"messages": [HumanMessage("hello again")]}, config("alice"))
        state = secretive_graph(saver).get_state(config("alice"))
        assert [m.content for m in state.values["messages"]] == [
            "hello again",
            "noted: hello again",
        ]
        assert db.verify().ok
    assert hits_in_files(path, SECRET) == [] and hits_in_files(path, LATE) == []


def test_a_copy_keeps_what_it_reads_until_it_is_deleted_too(tmp_path: Path) -> None:
    path = tmp_path / "agent"
    with rewinddb.open(path) as db:
        saver = RewindSaver(db)
        graph = secretive_graph(saver)
        tell(graph, "alice", SECRET)
        saver.copy_thread("alice", "carol")
        copied = [(t.checkpoint, t.metadata, t.pending_writes) for t in history(saver, "carol")]
        saver.delete_thread("alice")
        assert history(saver, "alice") == []
        assert [
            (t.checkpoint, t.metadata, t.pending_writes) for t in history(saver, "carol")
        ] == copied
        graph.invoke(Command(resume="yes"), config("carol"))  # the copy runs on
        assert db.verify().ok
        saver.delete_thread("carol")
        assert history(saver, "carol") == []
        assert index_keys(db, "ref/") == [] and index_keys(db, "held/") == []
        assert [b for b in db.branches.names() if b.startswith("lg/")] == []
        assert db.verify().ok
        assert hits_in_export(db, SECRET) == []
    assert hits_in_files(path, SECRET) == []


def test_time_travel_forks_and_subgraphs_go_with_their_thread(tmp_path: Path) -> None:
    path = tmp_path / "agent"
    with rewinddb.open(path) as db:
        saver = RewindSaver(db)
        inner = secretive_graph(None)
        builder = StateGraph(Secretive)
        builder.add_node("inner", inner)
        builder.add_edge(START, "inner")
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"messages": [HumanMessage(f"first: {SECRET}")]}, config("alice"))
        graph.invoke(Command(resume="yes"), config("alice"))
        past = list(graph.get_state_history(config("alice")))[-2]
        graph.update_state(past.config, {"messages": [HumanMessage(f"edited: {SECRET}")]})
        names = [b for b in db.branches.names() if b.startswith("lg/alice")]
        assert any("~" in name for name in names) and any("/" in name[3:] for name in names)
        saver.prune(["alice"])  # the newest is on the fork: the main line goes first
        assert len(history(saver, "alice")) == len(
            {t.config["configurable"]["checkpoint_ns"] for t in history(saver, "alice")}
        )
        saver.delete_thread("alice")
        assert [b for b in db.branches.names() if b.startswith("lg/")] == []
        assert db.verify().ok
        assert hits_in_export(db, SECRET) == []
    assert hits_in_files(path, SECRET) == []


def test_delete_thread_of_a_pinned_branch_is_refused_whole(db_at: rewinddb.Database) -> None:
    saver = RewindSaver(db_at)
    tell(secretive_graph(saver), "alice", SECRET, turns=1)
    before = history(saver, "alice")
    db_at.branches.pin("lg/alice")
    with pytest.raises(RewindError) as raised:
        saver.delete_thread("alice")
    assert raised.value.code == "invalid.branch.pinned"
    assert [t.checkpoint for t in history(saver, "alice")] == [t.checkpoint for t in before]
    db_at.branches.unpin("lg/alice")
    saver.delete_thread("alice")
    assert history(saver, "alice") == []


def test_unknown_threads_and_runs_are_no_ops(db_at: rewinddb.Database) -> None:
    saver = RewindSaver(db_at)
    tell(secretive_graph(saver), "alice", "hello", turns=1)
    version = db_at.version
    saver.delete_thread("nobody")
    saver.prune(["nobody"])
    saver.prune(["nobody"], strategy="keep_last", keep=3)
    saver.prune([])
    saver.delete_for_runs(["no-such-run"])
    saver.delete_for_runs([])
    assert db_at.version == version
    assert len(history(saver, "alice")) > 1


@pytest.mark.parametrize(
    ("thread_ids", "options", "said"),
    [
        (["alice"], {"strategy": "everything"}, "unknown strategy 'everything'"),
        (["alice"], {"strategy": "keep_last"}, "needs keep="),
        (["alice"], {"strategy": "keep_last", "keep": 0}, "at least 1"),
        (["alice"], {"strategy": "keep_last", "keep": True}, "at least 1"),
        (["alice"], {"keep": 3}, "keep= goes with strategy='keep_last'"),
        ("alice", {}, "not one string"),
    ],
)
def test_bad_prune_arguments_are_refused_before_anything_goes(
    saver: RewindSaver, thread_ids: Any, options: dict[str, Any], said: str
) -> None:
    tell(secretive_graph(saver), "alice", "hello", turns=1)
    before = [t.checkpoint["id"] for t in history(saver, "alice")]
    with pytest.raises(RewindError, match=said) as raised:
        saver.prune(thread_ids, **options)
    assert raised.value.code == "invalid.retention"
    assert isinstance(raised.value, ValueError)
    assert [t.checkpoint["id"] for t in history(saver, "alice")] == before


# -- prune -------------------------------------------------------------------------------


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: Annotated[list[str], operator.add]


def say(i: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(f"hi {i}", id=f"hi-{i}")]}


def chat_graph(checkpointer: Any, *, ask: bool = False) -> Any:
    """START -> left, right (in parallel) -> reply (which may interrupt to ask)."""

    def note(name: str) -> Any:
        return lambda state: {"notes": [name]}

    def reply(state: Chat) -> dict[str, Any]:
        n = len(state["messages"])
        answer = interrupt("approve?") if ask else "ok"
        return {"messages": [AIMessage(f"{answer} {n}", id=f"reply-{n}")]}

    builder = StateGraph(Chat)
    builder.add_node("left", note("left"))
    builder.add_node("right", note("right"))
    builder.add_node("reply", reply)
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge(["left", "right"], "reply")
    return builder.compile(checkpointer=checkpointer)


def parentless(snapshot: StateSnapshot) -> StateSnapshot:
    return snapshot._replace(
        parent_config=None,
        tasks=tuple(
            t._replace(state=parentless(t.state)) if isinstance(t.state, StateSnapshot) else t
            for t in snapshot.tasks
        ),
    )


def same_state(ours: StateSnapshot, theirs: StateSnapshot) -> None:
    """The same state as InMemorySaver's twin of the thread (ids and times differ)."""
    assert ours.values == theirs.values
    assert ours.next == theirs.next
    assert [(t.name, t.interrupts, t.result) for t in ours.tasks] == [
        (t.name, t.interrupts, t.result) for t in theirs.tasks
    ]
    assert ours.metadata["step"] == theirs.metadata["step"]


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_keep_latest_keeps_the_state_and_the_thread_runs_on_like_its_twin(
    db_at: rewinddb.Database, durability: Any
) -> None:
    saver, twin = RewindSaver(db_at), InMemorySaver()
    graph, reference = chat_graph(saver), chat_graph(twin)
    for i in range(3):
        graph.invoke(say(i), config("pruned"), durability=durability)
        graph.invoke(say(i), config("other"), durability=durability)
        reference.invoke(say(i), config("twin"), durability=durability)
    other = [(t.checkpoint, t.metadata) for t in history(saver, "other")]
    before = graph.get_state(config("pruned"))
    old = [t.config for t in history(saver, "pruned")][1:]

    saver.prune(["pruned"])

    assert [t.checkpoint["id"] for t in history(saver, "pruned")] == [
        before.config["configurable"]["checkpoint_id"]
    ]
    assert graph.get_state(config("pruned")) == parentless(before)
    same_state(graph.get_state(config("pruned")), reference.get_state(config("twin")))
    assert all(saver.get_tuple(gone) is None for gone in old)
    assert [(t.checkpoint, t.metadata) for t in history(saver, "other")] == other
    assert db_at.verify().ok
    graph.invoke(say(3), config("pruned"), durability=durability)
    reference.invoke(say(3), config("twin"), durability=durability)
    same_state(graph.get_state(config("pruned")), reference.get_state(config("twin")))
    per_turn = len(list(twin.list(config("twin")))) // 4
    assert len(history(saver, "pruned")) == 1 + per_turn


def test_keep_latest_keeps_a_pending_interrupt_resumable(db_at: rewinddb.Database) -> None:
    saver, twin = RewindSaver(db_at), InMemorySaver()
    graph, reference = chat_graph(saver, ask=True), chat_graph(twin, ask=True)
    for g, thread_id in ((graph, "pruned"), (reference, "twin")):
        for i in range(2):
            g.invoke(say(i), config(thread_id))
            g.invoke(Command(resume=f"yes {i}"), config(thread_id))
        g.invoke(say(2), config(thread_id))
    before = graph.get_state(config("pruned"))
    assert before.interrupts

    saver.prune(["pruned"])

    assert graph.get_state(config("pruned")) == parentless(before)
    graph.invoke(Command(resume="yes 2"), config("pruned"))
    reference.invoke(Command(resume="yes 2"), config("twin"))
    same_state(graph.get_state(config("pruned")), reference.get_state(config("twin")))


def test_keep_latest_keeps_an_interrupted_subgraph_and_drops_finished_calls(
    db_at: rewinddb.Database,
) -> None:
    saver = RewindSaver(db_at)
    sub = StateGraph(Chat)

    def reply(state: Chat) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AIMessage(f"{interrupt('approve?')} {n}", id=f"reply-{n}")]}

    sub.add_node("reply", reply)
    sub.add_edge(START, "reply")
    parent = StateGraph(Chat)
    parent.add_node("sub", sub.compile())
    parent.add_edge(START, "sub")
    graph = parent.compile(checkpointer=saver)
    twin = parent.compile(checkpointer=InMemorySaver())
    for g, thread_id in ((graph, "pruned"), (twin, "twin")):
        for i in range(2):
            g.invoke(say(i), config(thread_id))
            g.invoke(Command(resume=f"yes {i}"), config(thread_id))
        g.invoke(say(2), config(thread_id))
    before = graph.get_state(config("pruned"), subgraphs=True)
    interrupted = before.tasks[0].state.config["configurable"]["checkpoint_ns"]
    calls = {t.config["configurable"]["checkpoint_ns"] for t in history(saver, "pruned")}
    assert len(calls) == 4  # the root and three calls of the subgraph

    saver.prune(["pruned"])

    namespaces = sorted(t.config["configurable"]["checkpoint_ns"] for t in history(saver, "pruned"))
    assert namespaces == ["", interrupted]
    assert len([b for b in db_at.branches.names() if b.startswith("lg/pruned")]) == 2
    assert graph.get_state(config("pruned"), subgraphs=True) == parentless(before)
    graph.invoke(Command(resume="yes 2"), config("pruned"))
    twin.invoke(Command(resume="yes 2"), config("twin"))
    assert graph.get_state(config("pruned")).values == twin.get_state(config("twin")).values
    assert db_at.verify().ok


def test_keep_last_keeps_exactly_the_newest_and_their_as_of_answers(
    db_at: rewinddb.Database,
) -> None:
    saver = RewindSaver(db_at)
    graph = chat_graph(saver)
    graph.invoke(say(9), config("other"))
    # The graph's two parallel nodes write from LangGraph's threads: now and then a
    # dropped checkpoint's write lands after a kept one's (a late write), and prune
    # then writes the kept checkpoints anew, at new versions (``_rebuild``), where this
    # test checks the cut in place. Run again on a new thread until prune cuts in place.
    for attempt in range(20):
        name = f"t{attempt}"
        for i in range(6):
            graph.invoke(say(i), config(name))
        listed = history(saver, name)
        kept, gone = listed[:5], listed[5:]
        loads = {t.checkpoint["id"]: saver.get_tuple(t.config) for t in kept}
        entries = {
            t.checkpoint["id"]: db_at.at("lg-index").kv.get(
                f"cp/{name}//{t.checkpoint['id']}"  # the index record: where it is
            )
            for t in listed
        }
        view = db_at.at(f"lg/{name}")
        kept_versions = sorted(entries[t.checkpoint["id"]]["version"] for t in kept)
        cut = min(kept_versions)

        def answers_at(v: int, view: rewinddb.BranchView = view, cut: int = cut) -> Any:
            # the state, and the events from the cut on
            return view.snapshot(as_of=v), [
                item for item in view.events.list(as_of=v) if item.version >= cut
            ]

        answers = {v: answers_at(v) for v in kept_versions}

        saver.prune([name], strategy="keep_last", keep=5)
        if db_at.branches.kept_from(f"lg/{name}") == cut:
            break

    assert [t.checkpoint["id"] for t in history(saver, name)] == [t.checkpoint["id"] for t in kept]
    for t in kept[:-1]:
        assert saver.get_tuple(t.config) == loads[t.checkpoint["id"]]
    oldest = saver.get_tuple(kept[-1].config)
    assert oldest == loads[kept[-1].checkpoint["id"]]._replace(parent_config=None)
    assert all(saver.get_tuple(t.config) is None for t in gone)
    assert {v: answers_at(v) for v in kept_versions} == answers
    assert view.events.list()[0].event.sequence > 0  # the older ones went
    with pytest.raises(rewinddb.HistoryUnavailableError, match="keep_last', keep=5"):
        view.snapshot(as_of=cut - 1)
    # The index forgot them at every version too.
    for t in gone:
        key = f"cp/{name}//{t.checkpoint['id']}"
        assert all(
            db_at.at("lg-index").kv.get(key, as_of=v) is None for v in range(db_at.version + 1)
        )
    assert len(history(saver, "other")) == 4
    assert db_at.verify().ok
    graph.invoke(say(6), config(name))  # it runs on
    assert [m.content for m in graph.get_state(config(name)).values["messages"]][-2:] == [
        "hi 6",
        "ok 13",
    ]


def test_a_late_write_of_a_pruned_checkpoint_is_dropped(saver: RewindSaver) -> None:
    graph = chat_graph(saver)
    for i in range(3):
        graph.invoke(say(i), config("t"))
    old = history(saver, "t")[-1]
    saver.prune(["t"])
    version = saver.db.version
    saver.put_writes(old.config, [("notes", [LATE])], "late-task")
    assert saver.get_tuple(old.config) is None
    assert saver.db.version == version
    assert len(history(saver, "t")) == 1
    # Were the write kept for when its checkpoint arrives, it would join it now.
    saver.put(config("t"), old.checkpoint, old.metadata, {})
    again = saver.get_tuple(old.config)
    assert again is not None and again.pending_writes == []


def test_a_thread_with_a_delta_channel_is_refused_and_nothing_is_pruned(
    saver: RewindSaver,
) -> None:
    class Delta(TypedDict):
        messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]

    builder = StateGraph(Delta)
    builder.add_node("reply", lambda state: {"messages": [AIMessage("ok")]})
    builder.add_edge(START, "reply")
    delta = builder.compile(checkpointer=saver)
    graph = chat_graph(saver)
    for i in range(3):
        graph.invoke(say(i), config("ordinary"))
        delta.invoke(say(i), config("delta"))
    before = {t: [c.checkpoint["id"] for c in history(saver, t)] for t in ("ordinary", "delta")}
    with pytest.raises(RewindError, match=r"use a DeltaChannel .*: delta$") as raised:
        saver.prune(["ordinary", "delta"])
    assert raised.value.code == "invalid.retention"
    assert {t: [c.checkpoint["id"] for c in history(saver, t)] for t in before} == before
    saver.prune(["ordinary"])
    assert len(history(saver, "ordinary")) == 1


# -- delete_for_runs ---------------------------------------------------------------------


def run_config(thread_id: str, run_id: str) -> Any:
    return {**config(thread_id), "metadata": {"run_id": run_id}}


def test_delete_for_runs_removes_a_runs_checkpoints_and_cuts_the_history_they_held(
    db_at: rewinddb.Database,
) -> None:
    saver = RewindSaver(db_at)
    graph = chat_graph(saver)
    graph.invoke(say(0), run_config("t", "run-1"))  # (a run id is one invoke's)
    graph.invoke(say(1), run_config("t", "run-2"))
    first = history(saver, "t")
    assert {t.metadata.get("run_id") for t in first} == {"run-1", "run-2"}
    graph.invoke(say(2), run_config("t", "run-3"))
    kept = [t for t in history(saver, "t") if t.metadata.get("run_id") == "run-3"]
    loads = [saver.get_tuple(t.config) for t in kept]
    oldest = db_at.at("lg-index").kv.get(f"cp/t//{first[-1].checkpoint['id']}")["version"]

    saver.delete_for_runs(["run-1", "run-2"])

    assert [t.checkpoint["id"] for t in history(saver, "t")] == [t.checkpoint["id"] for t in kept]
    assert all(saver.get_tuple(t.config) is None for t in first)
    assert [saver.get_tuple(t.config) for t in kept[:-1]] == loads[:-1]
    assert saver.get_tuple(kept[-1].config) == loads[-1]._replace(parent_config=None)
    with pytest.raises(rewinddb.HistoryUnavailableError, match="delete_for_runs"):
        db_at.at("lg/t").snapshot(as_of=oldest)
    assert db_at.verify().ok
    graph.invoke(say(3), run_config("t", "run-4"))  # resumes from run-3's last state
    assert [m.content for m in graph.get_state(config("t")).values["messages"]] == [
        "hi 0",
        "ok 1",
        "hi 1",
        "ok 3",
        "hi 2",
        "ok 5",
        "hi 3",
        "ok 7",
    ]


def test_delete_for_runs_of_a_threads_only_run_erases_it(tmp_path: Path) -> None:
    path = tmp_path / "agent"
    with rewinddb.open(path) as db:
        saver = RewindSaver(db)
        graph = secretive_graph(saver)
        graph.invoke({"messages": [HumanMessage(SECRET)]}, run_config("alice", "run-a"))
        graph.invoke(Command(resume="yes"), run_config("alice", "run-a"))
        tell(graph, "bob", "bob's own words", turns=1)
        saver.delete_for_runs(["run-a"])
        assert history(saver, "alice") == []
        assert index_keys(db, "run/") == []  # bob's runs have no id
        assert len(history(saver, "bob")) > 1
        assert db.verify().ok
        assert hits_in_export(db, SECRET) == []
    assert hits_in_files(path, SECRET) == []


# -- async -------------------------------------------------------------------------------


def test_the_async_twins_delete_and_prune(saver: RewindSaver) -> None:
    graph = chat_graph(saver)

    async def main() -> tuple[int, int]:
        for i in range(3):
            await graph.ainvoke(say(i), config("a"))
            await graph.ainvoke(say(i), config("b"))
        await saver.aprune(["a"], strategy="keep_last", keep=2)
        await saver.adelete_thread("b")
        kept = [t async for t in saver.alist(config("a"))]
        gone = [t async for t in saver.alist(config("b"))]
        return len(kept), len(gone)

    assert asyncio.run(main()) == (2, 0)
