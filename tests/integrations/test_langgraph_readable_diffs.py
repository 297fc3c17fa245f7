"""A LangGraph thread's diffs in LangGraph's words, not the store's: a channel's change
reads in the value's own shape (``notes["k1"]``, ``tags[1]``, ``messages[1].content``),
decoded, as LangGraph's own ``get_state_history`` holds it; a first write is the value,
not the saver's stored wrapper; what the nodes wrote reads "node n wrote channel notes";
each row keeps the stored change behind it, and nothing of the stored diff is lost."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from chat_graphs import thread
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph, add_messages
from typing_extensions import TypedDict

import rewinddb
from rewinddb import presenters, story
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.notebook import _html

#: What the saver's codec stores around a channel value (never what a row shows).
_WRAPPER = ("pairs", "items", "plain", "version")


def _merge(old: dict | None, new: dict) -> dict:
    return {**(old or {}), **new}


def _replace(old: Any, new: Any) -> Any:
    return new


class Notes(TypedDict, total=False):
    notes: Annotated[dict, _merge]
    count: Annotated[int, operator.add]
    tags: Annotated[list, operator.add]


def _notes_graph(saver: RewindSaver) -> Any:
    def note(state: Notes) -> dict:
        return {"notes": {f"k{len(state.get('notes') or {})}": "v"}, "count": 1, "tags": ["t"]}

    return StateGraph(Notes).add_node("n", note).add_edge(START, "n").compile(checkpointer=saver)


def _node_steps(db: rewinddb.Database, branch: str, node: str) -> list[presenters.Step]:
    return [s for s in story.branch_story(db, branch).steps.steps if s.label == node]


def _rows(detail: story.StepDetail) -> list[tuple[str, str, str, Any, Any]]:
    return [(r.label, r.path, r.kind, r.old, r.new) for r in detail.visible]


def _langgraph_values(graph: Any, config: dict) -> dict[str, dict[str, Any]]:
    """Checkpoint id -> the state values LangGraph's history reports there."""
    return {
        s.config["configurable"]["checkpoint_id"]: s.values for s in graph.get_state_history(config)
    }


def test_a_channel_change_reads_in_the_values_own_shape(db: rewinddb.Database) -> None:
    """The trial's graph: a dict channel, a counter and a list, run twice. The first
    write of each is its value (1), or the members and items it holds, each at its key
    or index (notes["k0"], tags[0]); the second the member or item it added, as
    LangGraph's history holds them; the stored change behind each row is kept ($,
    then $.pairs[1], $.value, $.items[1])."""
    graph = _notes_graph(RewindSaver(db))
    for _ in range(2):
        graph.invoke({}, thread("p"))
    values = _langgraph_values(graph, thread("p"))
    first, second = _node_steps(db, "lg/p", "n")
    told = story.step_detail(db, "lg/p", first.version)
    assert _rows(told) == [
        ("count", "count", "added", None, values[first.id]["count"]),
        ("notes", 'notes["k0"]', "added", None, values[first.id]["notes"]["k0"]),
        ("tags", "tags[0]", "added", None, values[first.id]["tags"][0]),
    ]
    assert _rows(told) == [
        ("count", "count", "added", None, 1),
        ("notes", 'notes["k0"]', "added", None, "v"),
        ("tags", "tags[0]", "added", None, "t"),
    ]
    # The stored change behind each is the wrapper's first write, kept as it was.
    assert [(r.change.key, r.change.path) for r in told.visible] == [
        ("channel/count", "$"),
        ("channel/notes", "$"),
        ("channel/tags", "$"),
    ]
    assert told.visible[1].change.new["type"] == "dict"
    told = story.step_detail(db, "lg/p", second.version)
    now = values[second.id]
    assert _rows(told) == [
        ("count", "count", "changed", 1, now["count"]),
        ("notes", 'notes["k1"]', "added", None, now["notes"]["k1"]),
        ("tags", "tags[1]", "added", None, now["tags"][1]),
    ]
    assert [r.change.path for r in told.visible] == ["$.value", "$.pairs[1]", "$.items[1]"]
    for row in told.visible:
        assert not (isinstance(row.new, dict) and set(_WRAPPER) & row.new.keys()), row
    # The stored form's own changes (each channel's version) stay, hidden, as they were.
    hidden = {(r.change.key, r.path) for r in told.rows if r.hidden}
    assert {("channel/notes", "$.version"), ("channel/tags", "$.version")} <= hidden


def test_messages_and_an_edit_read_as_langgraph_holds_them(db: rewinddb.Database) -> None:
    """A message a node added is ``messages[1]``, read as "ai: ..."; an edit of its text
    by ``update_state`` is the one field it changed, ``messages[1].content``."""

    class Chat(TypedDict):
        messages: Annotated[list, add_messages]

    builder = StateGraph(Chat).add_node("bot", lambda s: {"messages": [AIMessage("hi <b>")]})
    graph = builder.add_edge(START, "bot").compile(checkpointer=RewindSaver(db))
    graph.invoke({"messages": [("user", "hello")]}, thread("c"))
    said = graph.get_state(thread("c")).values["messages"][1]
    graph.update_state(thread("c"), {"messages": [AIMessage("edited", id=said.id)]})
    (bot,) = _node_steps(db, "lg/c", "bot")
    ((label, path, kind, old, new),) = _rows(story.step_detail(db, "lg/c", bot.version))
    assert (label, path, kind, old) == ("messages", "messages[1]", "added", None)
    assert presenters.value_text(new) == "ai: hi <b>"
    assert new["content"] == said.content and new["id"] == said.id
    (edit,) = [s for s in story.branch_story(db, "lg/c").steps.steps if s.source == "update"]
    detail = story.step_detail(db, "lg/c", edit.version)
    assert _rows(detail) == [("messages", "messages[1].content", "changed", "hi <b>", "edited")]
    assert detail.visible[0].change.path == "$.items[1].content"
    assert graph.get_state(thread("c")).values["messages"][1].content == "edited"


def test_a_member_gone_from_a_dict_is_one_row(db: rewinddb.Database) -> None:
    """A reducer that replaces the dict drops "a" and adds "c": the stored pairs all
    moved, yet the rows are what changed in the dict (no row says "b" changed). Every
    stored change is still there: behind a row, or hidden as a row of its own."""

    class State(TypedDict, total=False):
        notes: Annotated[dict, _replace]

    builder = StateGraph(State).add_node("n", lambda s: {"notes": {"b": 2, "c": 3}})
    graph = builder.add_edge(START, "n").compile(checkpointer=RewindSaver(db))
    graph.invoke({"notes": {"a": 1, "b": 2}}, thread("d"))
    assert graph.get_state(thread("d")).values["notes"] == {"b": 2, "c": 3}
    (ran,) = _node_steps(db, "lg/d", "n")
    detail = story.step_detail(db, "lg/d", ran.version)
    assert _rows(detail) == [
        ("notes", 'notes["c"]', "added", None, 3),
        ("notes", 'notes["a"]', "removed", 1, None),
    ]
    previous = detail.previous
    assert previous is not None
    stored = db.diff(
        previous.branch, "lg/d", as_of_a=previous.version, as_of_b=ran.version, readable=True
    )
    told = {(r.change.key, r.change.path) for r in detail.rows}
    assert {(c.key, c.path) for c in stored.changes} <= told
    notes = {r.change.path for r in detail.rows if r.hidden and r.label == "notes"}
    assert {"$.pairs[0][0]", "$.pairs[1][1]", "$.version"} <= notes


def test_what_the_nodes_wrote_reads_in_the_agents_words(db: rewinddb.Database) -> None:
    """A step's pending writes: "node n wrote channel notes" with the value it wrote
    (the input's: "the input wrote channel ..."), each naming its raw event; LangGraph's
    routing writes are left to the raw events."""
    graph = _notes_graph(RewindSaver(db))
    graph.invoke({"tags": ["first"]}, thread("w"))
    graph.invoke({}, thread("w"))
    _, second = _node_steps(db, "lg/w", "n")
    detail = story.step_detail(db, "lg/w", second.version)
    assert [(w.text, w.value) for w in detail.wrote] == [
        ("node n wrote channel notes", {"k1": "v"}),
        ("node n wrote channel count", 1),
        ("node n wrote channel tags", ["t"]),
    ]
    log = db.at("lg/w").events
    for wrote in detail.wrote:
        payload = log.get(wrote.sequence).payload
        assert (wrote.branch, payload["channel"]) == ("lg/w", wrote.channel)
        assert payload["task_path"].endswith(", n") and wrote.node == "n"
    start = next(s for s in story.branch_story(db, "lg/w").steps.steps if s.label == "start")
    assert [(w.text, w.value) for w in story.step_detail(db, "lg/w", start.version).wrote] == [
        ("the input wrote channel tags", ["first"])
    ]
    # Steps no task made, and LangGraph's own channels, tell no writes.
    inputs = [s for s in story.branch_story(db, "lg/w").steps.steps if s.source == "input"]
    assert inputs and all(not story.step_detail(db, "lg/w", s.version).wrote for s in inputs)
    assert all(not w.channel.startswith(("branch:", "__")) for w in detail.wrote)


def test_a_comparison_and_the_widget_tell_the_same_rows(db: rewinddb.Database) -> None:
    """Two points of the thread compared, and the step in the notebook widget: the same
    rows, in the value's own shape."""
    graph = _notes_graph(RewindSaver(db))
    for _ in range(3):
        graph.invoke({}, thread("q"))
    first, _, third = _node_steps(db, "lg/q", "n")
    told = story.compare_stories(db, ("lg/q", first.version), ("lg/q", third.version))
    shown = [(r.path, r.kind, r.old, r.new) for r in told.rows if not r.hidden]
    assert shown == [
        ("count", "changed", 1, 3),
        ('notes["k1"]', "added", None, "v"),
        ('notes["k2"]', "added", None, "v"),
        ("tags[1]", "added", None, "t"),
        ("tags[2]", "added", None, "t"),
    ]
    html = _html.detail_html(story.step_detail(db, "lg/q", third.version), show_hidden=False)
    assert "notes[&quot;k2&quot;]" in html and "tags[2]" in html and "$.pairs" not in html
    assert "node n wrote channel notes" in html


def test_a_channels_history_reads_by_step(db: rewinddb.Database) -> None:
    """A channel's key history as its presenter tells it: "channel notes of thread h",
    each version with the step that wrote it and its rows in the value's own shape."""
    graph = _notes_graph(RewindSaver(db))
    for _ in range(2):
        graph.invoke({}, thread("h"))
    versions = db.at("lg/h").key_history("kv", "channel/notes", readable=True)
    told = story.key_story(db, "lg/h", "kv", "channel/notes", versions)
    assert told is not None and told.title == "channel notes of thread h"
    steps = _node_steps(db, "lg/h", "n")
    assert [(v.step and v.step.version, v.step and v.step.label) for v in told.versions] == [
        (s.version, "n") for s in steps
    ]
    assert [[(r.path, r.new) for r in v.rows if not r.hidden] for v in told.versions] == [
        [("notes", {"k0": "v"})],  # a channel's version: its first one is its value
        [('notes["k1"]', "v")],
    ]
    # A plain branch's key is told as stored (None), its rows as they are.
    db.kv.put("plain", {"a": 1})
    plain = db.at("default").key_history("kv", "plain")
    assert story.key_story(db, "default", "kv", "plain", plain) is None


def test_a_plain_branchs_rows_are_the_stored_changes(db: rewinddb.Database) -> None:
    """The generic presenter's rows are the store's changes as they are."""
    db.kv.put("doc", {"items": [1]})
    version = db.kv.put("doc", {"items": [1, 2]})
    detail = story.step_detail(db, "default", version)
    assert [(r.label, r.path, r.kind, r.old, r.new) for r in detail.rows] == [
        ("doc", "$.items[1]", "added", None, 2)
    ]
    assert detail.rows[0] == presenters.DiffRow.of(detail.rows[0].change, "doc", False)
    assert detail.wrote == ()


# -- a copied thread, once its source is deleted -----------------------------------------


def _echo_graph(saver: RewindSaver) -> Any:
    def bot(state: MessagesState) -> dict:
        return {"messages": [AIMessage("echo " + state["messages"][-1].content)]}

    return (
        StateGraph(MessagesState)
        .add_node("bot", bot)
        .add_edge(START, "bot")
        .compile(checkpointer=saver)
    )


def _attempts(db: rewinddb.Database, **kwargs: Any) -> dict[str, presenters.Summary]:
    return {a.branch.name: a.summary for a in story.attempts(db, **kwargs)}


def test_a_deleted_thread_is_no_attempt_and_its_copys_forks_are_copies(
    db: rewinddb.Database, tmp_path: Any, capsys: Any
) -> None:
    """The trial: thread t with a replay and an edit, copied to t2, then deleted. To
    LangGraph there is no thread t; the saver keeps t's branches while t2 reads them
    (``held/``), and the explorer lists them no more (internal, on ``all``). t2's
    branches are copies of t's: "copy of t~... at step N", not replays."""
    saver = RewindSaver(db)
    graph = _echo_graph(saver)
    for text in ("one", "two", "three"):
        graph.invoke({"messages": [("user", text)]}, thread("t"))
    history = list(graph.get_state_history(thread("t")))
    graph.invoke({"messages": [("user", "fork")]}, history[4].config)
    graph.update_state(history[7].config, {"messages": [("user", "edit")]})
    before = _attempts(db)
    forks = sorted(name for name in before if name.startswith("lg/t~"))
    assert len(forks) == 2
    saver.copy_thread("t", "t2")
    saver.delete_thread("t")
    assert list(graph.get_state_history(thread("t"))) == []
    copied = list(graph.get_state_history(thread("t2")))
    assert copied
    shown = _attempts(db)
    assert sorted(shown) == sorted(["lg/t2", *(f"lg/t2~{f.split('~')[1]}" for f in forks)])
    assert {s.title for s in shown.values()} == {"t2", *(f"t2~{f.split('~')[1]}" for f in forks)}
    every = _attempts(db, include_internal=True)
    for name in ("lg/t", *forks):
        assert every[name].internal and every[name].current is None, name
    assert shown["lg/t2"].fork is not None
    assert shown["lg/t2"].fork.label == f"copy of t at step {history[0].metadata['step']}"
    for fork in forks:
        suffix = fork.split("~")[1]
        told = shown[f"lg/t2~{suffix}"].fork
        assert told is not None and told.kind == "fork"
        assert told.label.startswith(f"copy of t~{suffix} at step "), told.label
        assert told.parent == fork
    # The copy continues where LangGraph's get_state("t2") does: on the edit's copy.
    newest = graph.get_state(thread("t2")).values["messages"][-1].content
    current = shown["lg/t2"].current
    assert current is not None and shown[current].fork is not None
    assert shown[current].fork.parent == next(f for f in forks if before[f].fork.kind == "edit")
    transcript = story.branch_story(db, current).transcript
    assert transcript is not None and transcript.messages[-1].text == newest == "edit"
    assert shown["lg/t2"].outcome == "echo three"
    # `rewinddb story` lists the same attempts.
    db.close()
    from rewinddb.cli import main

    assert main(["story", str(db.path)]) == 0
    out = capsys.readouterr().out
    assert "t2  (thread" in out and "\nt  (thread" not in out and not out.startswith("t  (")
    assert "replay from" not in out and f"copy of t~{forks[0].split('~')[1]} at step" in out


def test_time_travel_in_a_copy_is_told_from_the_copy(db: rewinddb.Database) -> None:
    """In the copy t2, new input on a checkpoint it read from t and an edit of another:
    a replay and an edit of t2's steps (their branches fork from t's, where the
    checkpoints are), not copies of t; the copy itself is one."""
    saver = RewindSaver(db)
    graph = _echo_graph(saver)
    for text in ("one", "two"):
        graph.invoke({"messages": [("user", text)]}, thread("t"))
    saver.copy_thread("t", "t2")
    history = list(graph.get_state_history(thread("t2")))
    graph.invoke({"messages": [("user", "fork in t2")]}, history[3].config)
    graph.update_state(history[5].config, {"messages": [("user", "edit in t2")]})
    shown = _attempts(db)
    forks = {s.fork.kind: s.fork for s in shown.values() if s.title.startswith("t2~") and s.fork}
    assert set(forks) == {"replay", "edit"}
    assert forks["replay"].label == f"new input at step {history[3].metadata['step']} of t2"
    assert forks["edit"].label == f"edit of step {history[5].metadata['step']} of t2"
    assert forks["replay"].parent == forks["edit"].parent == "lg/t2"
    assert shown["lg/t2"].fork is not None and shown["lg/t2"].fork.label.startswith("copy of t ")
