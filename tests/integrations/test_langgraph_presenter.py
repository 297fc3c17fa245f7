"""How the explorer tells a LangGraph thread's story (``LangGraphPresenter``): the ReAct
run of ``examples/langgraph_react.py`` read as a conversation and one step per
checkpoint, forks as edits and replays, bookkeeping hidden; and what is not the ReAct
shape (plain-text messages, no messages, another serde, damaged rows, bad ids)."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import subprocess
import sys
from html import escape, unescape
from pathlib import Path
from typing import Any

import pytest
from chat_graphs import State, Trail, chat_graph, thread
from fastapi.testclient import TestClient
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt
from react_run import EXAMPLE, ReactRun, example, record_react_run

import rewinddb
from rewinddb import presenters, rendering, story
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.integrations.langgraph._codec import dump_item
from rewinddb.integrations.langgraph.presenter import LangGraphPresenter
from rewinddb.integrations.langgraph.saver import KEPT_MEMBERS
from rewinddb.notebook import explore
from rewinddb.web import create_app
from rewinddb.web.urls import step_url

PRESENTER = LangGraphPresenter()
BOOKING = "Book the hotel in Lisbon for 3 nights."  # the turn that asks for approval


@pytest.fixture(scope="module")
def react(tmp_path_factory: pytest.TempPathFactory) -> ReactRun:
    return record_react_run(tmp_path_factory.mktemp("react") / "agent")


@pytest.fixture
def react_db(react: ReactRun) -> Any:
    with rewinddb.open(react.directory) as db:
        yield db


def _all_steps(db: rewinddb.Database, branch: str, limit: int = 7) -> list[presenters.Step]:
    """Every step of ``branch``, oldest first, read page by page."""
    pages, before = [], None
    while True:
        page = PRESENTER.steps(db, branch, before=before, limit=limit)
        pages.append(page.steps)
        if page.older is None:
            return [step for steps in reversed(pages) for step in steps]
        before = page.older


def _steps_forwards(db: rewinddb.Database, branch: str, limit: int = 5) -> list[presenters.Step]:
    """Every step of ``branch``, oldest first, read forwards page by page (``after``)."""
    steps: list[presenters.Step] = []
    after = 0
    while True:
        page = PRESENTER.steps(db, branch, after=after, limit=limit)
        steps += page.steps
        if page.newer is None:
            return steps
        assert page.newer == page.steps[-1].version
        after = page.newer


def _step_with_call(steps: list[presenters.Step], name: str) -> presenters.Step:
    return next(s for s in steps if any(c.name == name for m in s.messages for c in m.tool_calls))


# -- the ReAct run -------------------------------------------------------------------


def test_the_presenter_describes_the_saver_branches(react_db: rewinddb.Database) -> None:
    for branch in react_db.branches.list():
        presenter = presenters.presenter_for(branch)
        expected = "generic" if branch.name == "default" else "langgraph"
        assert presenter.name == expected, branch.name


def test_the_transcript_reads_as_the_conversation(
    react: ReactRun, react_db: rewinddb.Database
) -> None:
    transcript = PRESENTER.transcript(react_db, react.main_branch, limit=1000)
    assert transcript is not None and transcript.start == 0
    messages = transcript.messages
    assert transcript.total == len(messages)
    assert [m.role for m in messages[:3]] == ["system", "human", "ai"]
    assert messages[-1].role == "ai" and messages[-1].text == react.answer
    assert sum(m.role == "human" for m in messages) == len(example().TURNS)
    asked = next(i for i, m in enumerate(messages) if m.text == react.question)
    call_message = messages[asked + 1]
    assert call_message.role == "ai" and call_message.text == ""
    (call,) = call_message.tool_calls
    assert (call.name, call.arguments, call.id) == (react.tool, react.tool_args, react.tool_call_id)
    assert call.result == react.tool_result  # the card carries the tool's answer
    answer = messages[asked + 2]
    assert (answer.role, answer.tool_call_id, answer.text) == ("tool", call.id, react.tool_result)
    (interrupt,) = transcript.interrupts
    assert interrupt.text == react.interrupt_question
    assert interrupt.question["question"] == react.interrupt_question
    assert (interrupt.node, interrupt.resume, interrupt.resumed) == ("approve", react.resume, True)
    # Each message names the step that added it; the approval sits with the booking call.
    assert all(m.step is not None for m in messages)
    booking = next(m for m in messages if any(c.name == "book_hotel" for c in m.tool_calls))
    assert booking.step == interrupt.step
    asked = PRESENTER.step(react_db, react.main_branch, booking.step)
    assert asked.interrupts == ()  # the agent did not ask: the approve node did
    (shown,) = [s for s in _all_steps(react_db, react.main_branch) if s.interrupts]
    assert shown.label == "approve" and shown.interrupts == (interrupt,)


def test_the_transcript_pages_from_the_newest(react: ReactRun, react_db: rewinddb.Database) -> None:
    whole = PRESENTER.transcript(react_db, react.main_branch, limit=1000)
    newest = PRESENTER.transcript(react_db, react.main_branch, limit=4)
    assert whole is not None and newest is not None
    assert newest.total == whole.total and newest.start == whole.total - 4
    assert newest.messages == whole.messages[-4:]
    older = PRESENTER.transcript(react_db, react.main_branch, before=newest.start, limit=4)
    assert older is not None and older.start == newest.start - 4
    assert [m.text for m in older.messages] == [m.text for m in whole.messages[-8:-4]]
    # As of an older step: the conversation as it was then.
    asked = next(m for m in whole.messages if m.text == react.question)
    assert asked.step is not None
    then = PRESENTER.transcript(react_db, react.main_branch, as_of=asked.step)
    assert then is not None and then.messages[-1].text == react.question
    assert then.interrupts == ()


def test_steps_are_checkpoints_labelled_by_the_nodes_that_ran(
    react: ReactRun, react_db: rewinddb.Database
) -> None:
    steps = _all_steps(react_db, react.main_branch)
    history = react_db.at(react.main_branch).kv.history("checkpoint")
    assert [s.version for s in steps] == [entry.version for entry in history]
    assert [s.id for s in steps] == [entry.value["id"] for entry in history]
    assert [s.number for s in steps] == list(range(-1, len(steps) - 1))
    page = PRESENTER.steps(react_db, react.main_branch, limit=7)
    assert page.total == len(steps) and len(page.steps) == 7 and page.older == steps[-7].version
    for branch in (react.main_branch, react.fork_branch):  # forwards: the same steps
        assert _steps_forwards(react_db, branch) == _all_steps(react_db, branch)
    ahead = PRESENTER.steps(react_db, react.main_branch, after=steps[2].version, limit=3)
    assert ahead.steps == tuple(steps[3:6]) and ahead.older == steps[3].version
    assert ahead.total == page.total and ahead.newer == steps[5].version
    assert {s.label for s in steps} == {"input", "start", "agent", "tools", "approve"}
    first, started = steps[:2]  # the input, then __start__ puts it in the channels
    assert (first.source, first.label, first.nodes, first.messages) == ("input", "input", (), ())
    assert (started.source, started.label, started.nodes) == ("loop", "start", ("__start__",))
    assert [(m.role, m.text) for m in started.messages] == [
        ("system", example().SYSTEM),
        ("human", example().TURNS[0][0]),
    ]
    called = _step_with_call(steps, react.tool)
    assert (called.source, called.nodes, called.writes) == ("loop", ("agent",), ("messages",))
    answered = steps[steps.index(called) + 1]
    assert answered.nodes == ("tools",)
    assert [(m.role, m.text) for m in answered.messages] == [("tool", react.tool_result)]
    approved = steps[steps.index(_step_with_call(steps, "book_hotel")) + 1]
    assert (approved.label, approved.messages, approved.writes) == ("approve", (), ())
    assert not any(s.inherited for s in steps)
    assert PRESENTER.step(react_db, react.main_branch, called.version) == called
    assert PRESENTER.step_by_id(react_db, react.main_branch, str(called.id)) == called


def test_the_fork_is_an_edit_of_a_step_with_the_edited_call(
    react: ReactRun, react_db: rewinddb.Database
) -> None:
    fork = react_db.branches.get(react.fork_branch)
    summary = PRESENTER.summary(react_db, fork)
    edited_from = PRESENTER.step_by_id(react_db, react.main_branch, react.forked_from_checkpoint_id)
    assert summary.fork is not None
    assert summary.fork.kind == "edit" and summary.fork.parent == react.main_branch
    assert summary.fork.label == f"edit of step {edited_from.number} of {react.thread_id}"
    assert summary.fork.step == edited_from.version
    assert (summary.status, summary.outcome) == ("finished", react.fork_answer)
    edit = PRESENTER.step_by_id(react_db, react.fork_branch, react.edited_checkpoint_id)
    assert (edit.source, edit.label, edit.number) == ("update", "update", edited_from.number + 1)
    assert edit.branch == react.fork_branch and not edit.inherited
    ((call,),) = [m.tool_calls for m in edit.messages]
    assert (call.name, call.arguments) == (react.tool, react.edited_args)
    steps = _all_steps(react_db, react.fork_branch)
    mine = steps.index(edit)
    assert all(s.inherited and s.branch == react.main_branch for s in steps[:mine])
    assert steps[mine - 1] == dataclasses.replace(edited_from, inherited=True)
    assert [s.label for s in steps[mine:]] == ["update", "tools", "agent"]
    transcript = PRESENTER.transcript(react_db, react.fork_branch)
    assert transcript is not None
    edited = next(m for m in transcript.messages if m.tool_calls)
    assert edited.tool_calls[0].arguments == react.edited_args and edited.step == edit.version
    assert transcript.messages[-1].text == react.fork_answer
    # As of a step it inherited, the fork's conversation is its parent's.
    inherited = steps[mine - 2].version  # before the fork point: read on the parent
    assert PRESENTER.transcript(react_db, react.fork_branch, as_of=inherited) == (
        PRESENTER.transcript(react_db, react.main_branch, as_of=inherited)
    )


def test_the_fork_compares_from_the_step_that_differs(
    react: ReactRun, react_db: rewinddb.Database
) -> None:
    compared = story.compare_stories(react_db, (react.main_branch, None), (react.fork_branch, None))
    assert compared.first_b is not None and compared.first_b.id == react.edited_checkpoint_id
    assert compared.first_a is not None and compared.first_a.nodes == ("tools",)
    assert (compared.a.outcome, compared.b.outcome) == (react.answer, react.fork_answer)
    # At a past point, each side says how it stood then, not how it ended.
    early = compared.shared.version
    then = story.compare_stories(react_db, (react.main_branch, early), (react.fork_branch, None))
    assert then.a.outcome != react.answer and then.b.outcome == react.fork_answer
    asked = next(
        item.version
        for item in react_db.at(react.main_branch).events.list()
        if item.event.payload.get("channel") == "__interrupt__"
    )
    waiting = PRESENTER.summary(react_db, react_db.branches.get(react.main_branch), as_of=asked)
    assert (waiting.status, waiting.waiting_on) == ("interrupted", "approve")


def test_summaries_for_the_overview(react: ReactRun, react_db: rewinddb.Database) -> None:
    main = PRESENTER.summary(react_db, react_db.branches.get(react.main_branch))
    assert (main.kind, main.title, main.status) == ("thread", react.thread_id, "finished")
    assert (main.outcome, main.fork, main.internal) == (react.answer, None, False)
    index = PRESENTER.summary(react_db, react_db.branches.get("lg-index"))
    assert (index.kind, index.internal) == ("internal", True)
    shown = [a.branch.name for a in story.attempts(react_db)]
    assert shown == [react.main_branch, react.fork_branch]


def test_a_step_diff_shows_the_messages_and_hides_the_bookkeeping(
    react: ReactRun, react_db: rewinddb.Database
) -> None:
    called = _step_with_call(_all_steps(react_db, react.main_branch), react.tool)
    detail = story.step_detail(react_db, react.main_branch, called.version)
    assert detail.hidden_count >= 10
    ((row,),) = [detail.visible]
    change = row.change
    assert (row.label, change.key, change.kind) == ("messages", "channel/messages", "added")
    assert change.path.startswith("$.items[") and change.new["tool_calls"][0]["args"] == (
        react.tool_args
    )
    hidden = {(r.change.key, r.change.path) for r in detail.rows if r.hidden}
    assert ("checkpoint", "$.ts") in hidden and ("channel/messages", "$.version") in hidden
    # LangGraph's trigger channels are kept in the checkpoint record, and hidden with it.
    assert any(key == "checkpoint" and path.startswith("$.triggers") for key, path in hidden)
    # Its events are the writes that made it (saved in the background, so maybe after it).
    assert called.events and all(r.hidden for r in detail.rows if r.change.primitive == "events")
    log = react_db.at(react.main_branch).events
    assert {log.get(sequence).payload["task_path"] for sequence in called.events} == {
        "~__pregel_pull, agent"
    }
    assert detail.state.keys() == {"messages"}
    assert detail.state["messages"][-1]["tool_calls"][0]["args"] == react.tool_args
    # The edit's diff is the one argument it changed.
    edit = PRESENTER.step_by_id(react_db, react.fork_branch, react.edited_checkpoint_id)
    rows = story.step_detail(react_db, react.fork_branch, edit.version).visible
    assert [(r.change.path.rsplit(".", 1)[-1], r.change.old, r.change.new) for r in rows] == [
        ("city", react.tool_args["city"], react.edited_args["city"])
    ]


def test_messages_in_states_and_diffs_read_as_lines(
    react: ReactRun, react_db: rewinddb.Database
) -> None:
    called = _step_with_call(_all_steps(react_db, react.main_branch), react.tool)
    detail = story.step_detail(react_db, react.main_branch, called.version)
    (row,) = detail.visible
    line = presenters.value_text(row.change.new)
    assert line is not None and line.startswith("ai: calls " + react.tool)
    first = detail.state["messages"][0]
    assert presenters.value_text(first) is not None and presenters.value_text(first).startswith(
        "system: "
    )
    assert presenters.value_text({"content": "not a message"}) is None
    assert presenters.value_text("ai: text") is None
    html = rendering.changes_table([(row.change, row.label, False)])
    assert escape(line) in html and "<summary>JSON</summary>" in html
    tree = rendering.value_tree(detail.state["messages"], "messages", decode=False)
    assert escape(presenters.value_text(first) or "") in tree


def test_user_metadata_stays_visible(react_db: rewinddb.Database) -> None:
    def change(path: str) -> Any:
        return rewinddb.Change("kv", "checkpoint", path, "changed", 1, 2)

    assert not PRESENTER.hidden(change("$.metadata.user"))
    assert not PRESENTER.hidden(change("$.metadata['my key']"))
    for bookkeeping in ("$.metadata.step", "$.metadata.parents.x", "$.checkpoint", "$.id", "$"):
        assert PRESENTER.hidden(change(bookkeeping)), bookkeeping
    assert PRESENTER.key_label("kv", "checkpoint") == "checkpoint record"
    assert PRESENTER.key_label("kv", "channel/messages") == "messages"


def test_bad_ids_and_versions_are_clear_errors(
    react: ReactRun, react_db: rewinddb.Database
) -> None:
    with pytest.raises(rewinddb.RewindError) as caught:
        PRESENTER.step_by_id(react_db, react.main_branch, "1f0-not-a-checkpoint")
    assert caught.value.code == "not_found.checkpoint"
    with pytest.raises(rewinddb.RewindError) as caught:
        PRESENTER.step_by_id(react_db, react.main_branch, react.edited_checkpoint_id)
    assert caught.value.code == "not_found.checkpoint" and react.fork_branch in str(caught.value)
    with pytest.raises(rewinddb.RewindError) as caught:
        PRESENTER.step_by_id(react_db, react.main_branch, 42)  # type: ignore[arg-type]
    assert caught.value.code == "invalid.checkpoint"
    head = react_db.branches.get(react.main_branch).head
    for version in (head + 1000, 2):  # nothing there; a write's version, not a checkpoint's
        with pytest.raises(presenters.StepNotFound) as not_found:
            PRESENTER.step(react_db, react.main_branch, version)
        assert not_found.value.code == "not_found.step"
    for bad in (-1, "3", None, True):
        with pytest.raises(rewinddb.RewindError) as caught:
            PRESENTER.step(react_db, react.main_branch, bad)  # type: ignore[arg-type]
        assert caught.value.code == "invalid.version"
    with pytest.raises(rewinddb.RewindError) as caught:
        PRESENTER.steps(react_db, react.main_branch, limit=0)
    assert caught.value.code == "invalid.limit"
    with pytest.raises(rewinddb.BranchNotFound):
        PRESENTER.steps(react_db, "lg/nobody")
    with pytest.raises(rewinddb.BranchNotFound):
        PRESENTER.step_by_id(react_db, "lg/nobody", react.edited_checkpoint_id)


# -- other runs ------------------------------------------------------------------------


def test_an_interrupted_thread_waits_on_its_node(db: rewinddb.Database) -> None:
    saver = RewindSaver(db)
    graph = example().build(saver)
    graph.invoke({"messages": [HumanMessage(BOOKING)]}, thread("w"))
    summary = PRESENTER.summary(db, db.branches.get("lg/w"))
    assert (summary.status, summary.waiting_on) == ("interrupted", "approve")
    assert summary.outcome == 'calls book_hotel({"city":"Lisbon","nights":3})'
    head = PRESENTER.steps(db, "lg/w").steps[-1]
    ((interrupt,),) = [head.interrupts]
    assert (interrupt.resumed, interrupt.resume, interrupt.node) == (False, None, "approve")
    # An edit not run yet leaves its fork open.
    past = next(s for s in graph.get_state_history(thread("w")) if s.next == ("agent",))
    graph.update_state(past.config, {"messages": [HumanMessage("never mind", id="late")]})
    (fork,) = [b for b in db.branches.list() if b.name.startswith("lg/w~")]
    assert PRESENTER.summary(db, fork).status == "open"


def test_a_failed_run_says_why(db: rewinddb.Database) -> None:
    def search(state: Any) -> dict:
        raise ValueError("the flight API is down")

    builder = StateGraph(State)
    builder.add_node("search", search)
    builder.add_edge(START, "search")
    builder.add_edge("search", END)
    with pytest.raises(ValueError):
        builder.compile(checkpointer=RewindSaver(db)).invoke({"log": ["go"]}, thread("f"))
    summary = PRESENTER.summary(db, db.branches.get("lg/f"))
    assert (summary.status, summary.waiting_on) == ("failed", None)
    assert summary.outcome is not None and "the flight API is down" in summary.outcome


def test_a_replay_is_told_from_its_step(db: rewinddb.Database) -> None:
    graph = example().build(RewindSaver(db))
    graph.invoke({"messages": [HumanMessage("Which flights go to Lisbon?")]}, thread("r"))
    past = next(s for s in graph.get_state_history(thread("r")) if s.next == ("tools",))
    graph.invoke(None, past.config)
    (fork,) = [b for b in db.branches.list() if b.name.startswith("lg/r~")]
    summary = PRESENTER.summary(db, fork)
    assert summary.fork is not None and summary.fork.kind == "replay"
    assert summary.fork.label == f"replay from step {past.metadata['step']} of r"
    assert summary.status == "finished" and summary.outcome.startswith("Here is what I found")


def test_writes_saved_after_the_next_checkpoint_still_make_it(db: rewinddb.Database) -> None:
    """LangGraph saves a task's writes in the background: they may land after the
    checkpoint they made, after its own writes began, even after a fork of it."""
    saver = RewindSaver(db)
    asked = HumanMessage("hi", id="h")

    def checkpoint(order: int, *messages: Any) -> Any:
        values = {"messages": list(messages)} if messages else {}
        return {
            **empty_checkpoint(),
            "id": str(uuid6(clock_seq=order - 10)),
            "channel_values": values,
            "channel_versions": {"messages": len(messages)} if messages else {},
        }

    config = {"configurable": {"thread_id": "late", "checkpoint_ns": ""}}
    parent = saver.put(config, checkpoint(1), {"source": "input", "step": -1}, {})
    child = saver.put(parent, checkpoint(2, asked), {"source": "loop", "step": 0}, {"messages": 1})
    saver.put_writes(child, [("messages", ["go on"])], "t2", "~__pregel_pull, agent")
    later = checkpoint(3, asked, "go on")
    saver.put(child, later, {"source": "loop", "step": 1}, {"messages": 2})
    edit = checkpoint(4, asked, "edited")
    saver.put(child, edit, {"source": "update", "step": 1}, {"messages": 2})  # a fork of child
    saver.put_writes(parent, [("messages", [asked])], "t1", "~__pregel_pull, __start__")
    (fork,) = [b.name for b in db.branches.list() if b.name.startswith("lg/late~")]
    for branch in ("lg/late", fork):
        steps = PRESENTER.steps(db, branch).steps
        assert [(s.label, [m.text for m in s.messages]) for s in steps[:2]] == [
            ("input", []),
            ("start", ["hi"]),
        ]
    assert [s.label for s in PRESENTER.steps(db, fork).steps] == ["input", "start", "update"]
    transcript = PRESENTER.transcript(db, "lg/late")
    assert transcript is not None
    assert [m.text for m in transcript.messages] == ["hi", "go on"]
    assert transcript.messages[0].step == steps[1].version


def test_plain_text_messages_are_shown_as_they_are(tmp_path: Path) -> None:
    module = _load(EXAMPLE.with_name("langgraph_time_travel.py"))
    module.main(tmp_path / "agent")
    with rewinddb.open(tmp_path / "agent") as db:
        transcript = PRESENTER.transcript(db, "lg/demo")
        assert transcript is not None
        assert [(m.role, m.text) for m in transcript.messages[:2]] == [
            ("message", "plan the trip"),
            ("message", "agent: PLAN THE TRIP"),
        ]
        summary = PRESENTER.summary(db, db.branches.get("lg/demo"))
        assert (summary.status, summary.outcome) == ("finished", "agent: PAY")
        labels = [s.label for s in PRESENTER.steps(db, "lg/demo").steps]
        assert set(labels) == {"input", "start", "policy"}


def test_a_thread_without_messages_has_no_transcript(db: rewinddb.Database) -> None:
    chat_graph(RewindSaver(db)).invoke({"log": ["hi"]}, thread("c"))
    assert PRESENTER.transcript(db, "lg/c") is None
    steps = PRESENTER.steps(db, "lg/c").steps
    assert [s.label for s in steps] == ["input", "start", "agent"]
    assert PRESENTER.state(db, steps[-1]) == {"log": ["hi", "reply 1"]}
    assert PRESENTER.summary(db, db.branches.get("lg/c")).outcome is None


def test_another_serde_reads_as_undecodable(db: rewinddb.Database) -> None:
    """An encrypting serde's values are shown as stored: a pending write as one
    undecodable message, and the ``messages`` channel, which such a serde sees whole
    (its items and how many there are), as one undecodable message however many it
    holds. A list such a serde's values were stored item by item in (before lists went
    whole) still reads as one undecodable message per item."""
    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef")
    graph = example().build(RewindSaver(db, serde=serde))
    graph.invoke({"messages": [HumanMessage(BOOKING)]}, thread("x"))
    summary = PRESENTER.summary(db, db.branches.get("lg/x"))
    assert (summary.status, summary.waiting_on) == ("interrupted", "approve")
    steps = PRESENTER.steps(db, "lg/x").steps
    assert [s.label for s in steps] == ["input", "start", "agent"]
    assert [m.role for s in steps for m in s.messages] == ["undecodable"] * 2  # two writes
    assert steps[-1].interrupts[0].text == "undecodable"
    messages = graph.get_state(thread("x")).values["messages"]
    assert len(messages) == 2  # two messages in the state, stored as one value:
    transcript = PRESENTER.transcript(db, "lg/x")
    assert transcript is not None  # one message, undecodable
    assert [m.role for m in transcript.messages] == ["undecodable"] and transcript.total == 1
    assert transcript.messages[0].text.startswith("msgpack+aes:")
    shown = PRESENTER.state(db, steps[-1])["messages"]
    assert isinstance(shown, str) and shown.startswith("msgpack+aes:")
    view = db.at("lg/x")
    record = view.kv.get("checkpoint")  # sealed: bookkeeping, metadata, trigger values
    assert PRESENTER.display(record) == record and PRESENTER.encoded(record)
    assert list(record["triggers"]) == ["branch:to:approve"]  # what it waits on, by name
    story.step_detail(db, "lg/x", steps[-1].version)
    stored = view.kv.get("channel/messages")
    assert stored.keys() == {"version", "type", "value"} and stored["type"] == "value"
    old = {**stored, "type": "list", "items": [dump_item(serde, m) for m in messages]}
    del old["value"]
    view.kv.put("channel/messages", old)
    transcript = PRESENTER.transcript(db, "lg/x")
    assert transcript is not None
    assert [m.role for m in transcript.messages] == ["undecodable", "undecodable"]
    assert all(m.text.startswith("msgpack+aes:") for m in transcript.messages)


def test_damaged_rows_are_described_not_raised(db: rewinddb.Database) -> None:
    chat_graph(RewindSaver(db)).invoke({"log": ["hi"]}, thread("d"))
    view = db.at("lg/d")
    view.events.append("langgraph.write", "not a write")
    view.events.append("langgraph.write", {"checkpoint_id": 7, "channel": None})
    view.kv.put("channel/messages", {"type": "list", "items": ["msgpack:!!", 5, {"x": 1}]})
    view.kv.put("checkpoint", ["not", "a", "record"])
    branch = db.branches.get("lg/d")
    summary = PRESENTER.summary(db, branch)
    assert summary.title == "d"
    page = PRESENTER.steps(db, "lg/d")
    assert page.steps[-1].label == "undecodable" and page.steps[-1].id is None
    assert PRESENTER.step(db, "lg/d", page.steps[-1].version) == page.steps[-1]
    transcript = PRESENTER.transcript(db, "lg/d")
    assert transcript is not None
    assert [(m.role, m.text) for m in transcript.messages] == [
        ("undecodable", "msgpack:!!"),
        ("message", "5"),
        ("message", '{"x":1}'),
    ]
    assert PRESENTER.state(db, page.steps[-1])["messages"] == ["msgpack:!!", 5, {"x": 1}]
    story.step_detail(db, "lg/d", page.steps[-1].version)


def test_the_presenter_module_imports_without_langgraph() -> None:
    code = (
        "import sys, rewinddb.integrations.langgraph.presenter\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('langgraph', 'langchain_core')]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_example_says_how_to_open_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example().main(tmp_path / "agent")
    out = capsys.readouterr().out
    assert f"rewinddb serve {tmp_path / 'agent'}" in out and "lg/lisbon-trip~" in out


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"_example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its TypedDict's annotations are resolved by module
    spec.loader.exec_module(module)
    return module


def test_a_page_past_the_newest_step_still_counts_the_steps(
    react: ReactRun, react_db: rewinddb.Database
) -> None:
    steps = _all_steps(react_db, react.main_branch)
    total = PRESENTER.steps(react_db, react.main_branch).total
    past = PRESENTER.steps(react_db, react.main_branch, after=steps[-1].version)
    assert past.steps == () and past.newer is None and past.total == total


# -- answers given to a subgraph, and pending writes kept as channel values -------------------

#: A dict of at least ``KEPT_MEMBERS`` members: the saver keeps such a write's value as a
#: channel value, its event naming where (``value_at``) instead of holding it.
FORM = {f"field {n:02}": f"answer {n}" for n in range(KEPT_MEMBERS)}


def _reviewed_thread(db: rewinddb.Database, answer: Any, thread_id: str = "form") -> str:
    """A thread whose subgraph asks a question, resumed with ``answer``: the parent's
    checkpoint holds only the null task's ``__resume__`` write (the subgraph's node
    writes its own in the subgraph's namespace)."""

    def approve(state: Trail) -> dict:
        return {"trail": [f"approved by {interrupt('fill in the form')}"]}

    inner = StateGraph(Trail)
    inner.add_node("approve", approve)
    inner.add_edge(START, "approve")
    outer = StateGraph(Trail)
    outer.add_node("review", inner.compile())
    outer.add_edge(START, "review")
    graph = outer.compile(checkpointer=RewindSaver(db))
    graph.invoke({"trail": []}, thread(thread_id))
    graph.invoke(Command(resume=answer), thread(thread_id))
    return f"lg/{thread_id}"


def _answered(db: rewinddb.Database, branch: str) -> tuple[presenters.Step, presenters.Interrupt]:
    """The step that shows the thread's one interrupt, and the interrupt."""
    (asked,) = [s for s in PRESENTER.steps(db, branch).steps if s.interrupts]
    ((interrupt,),) = [asked.interrupts]
    assert (asked.label, interrupt.node, interrupt.text) == ("review", "review", "fill in the form")
    return asked, interrupt


def test_a_dict_answer_is_the_answer_itself(db: rewinddb.Database) -> None:
    """LangGraph reads ``Command(resume=dict)`` as answers by interrupt id only when every
    key is one (32 hex digits); any other dict is the answer itself."""
    _, interrupt = _answered(db, _reviewed_thread(db, {"approved": True}))
    assert (interrupt.resumed, interrupt.resume) == (True, {"approved": True})


def test_an_answer_the_saver_kept_as_a_channel_value_is_shown(db: rewinddb.Database) -> None:
    """A form of many fields: the null task's write is stored as a channel value, its
    event naming where (``value_at``); the step, the web page and the widget show it."""
    branch = _reviewed_thread(db, FORM)
    payloads = [item.event.payload for item in db.at(branch).events.list()]
    (kept,) = [p for p in payloads if "value_at" in p]
    assert (kept["channel"], kept["task_path"], "value" in kept) == ("__resume__", "", False)
    asked, interrupt = _answered(db, branch)
    assert (interrupt.resumed, interrupt.resume) == (True, FORM)
    assert PRESENTER.step(db, branch, asked.version).interrupts == (interrupt,)
    shown = '"field 00":"answer 0"'
    with TestClient(create_app(db.path), base_url="http://localhost") as client:
        page = client.get(step_url(branch, asked.version)).text
        card = page[page.index('class="approval') :]
        card = unescape(re.sub(r"<[^>]+>", " ", card[: card.index("</li>")]))
        assert "answered {" + shown in " ".join(card.split())
    explorer = explore(db, branch=branch)
    try:
        panel = explorer.step_panel.value
        card = panel[panel.index('data-kind="approval"') :]
        card = unescape(re.sub(r"<[^>]+>", " ", card[: card.index("</div></div>")]))
        assert "answered {" + shown in " ".join(card.split())
    finally:
        explorer.close()


#: A message as a dict of many fields: the saver keeps a write of it as a channel value.
REPLY = {"role": "ai", "content": "Here is the form", "id": "form-1"} | {
    f"meta_{n:02}": n for n in range(KEPT_MEMBERS)
}


def _kept_reply_thread(db: rewinddb.Database, thread_id: str) -> presenters.Step:
    """A thread whose node returns ``REPLY``; its step."""
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": REPLY})
    builder.add_edge(START, "agent")
    graph = builder.compile(checkpointer=RewindSaver(db))
    graph.invoke({"messages": [HumanMessage("the form?", id="asked")]}, thread(thread_id))
    payloads = [item.event.payload for item in db.at(f"lg/{thread_id}").events.list()]
    assert [p["channel"] for p in payloads if "value_at" in p] == ["messages"]
    agent = PRESENTER.steps(db, f"lg/{thread_id}").steps[-1]
    assert agent.label == "agent"
    return agent


def test_a_message_the_saver_kept_as_a_channel_value_is_read(db: rewinddb.Database) -> None:
    """A node that returns one message as a dict of many fields: its write is kept as a
    channel value, and its step still shows what it said."""
    agent = _kept_reply_thread(db, "kept")
    assert [(m.role, m.text, m.id) for m in agent.messages] == [
        ("ai", "Here is the form", "form-1")
    ]
    # One that cannot be read (nothing there, a damaged place) is undecodable, not raised.
    for at in (["write/nothing/0", agent.version], "not a place"):
        db.at("lg/kept").events.append(
            "langgraph.write",
            {"checkpoint_id": agent.id, "task_id": "t", "task_path": "~__pregel_pull, agent"}
            | {"idx": 0, "channel": "messages", "value_at": at},
        )
    summary = PRESENTER.summary(db, db.branches.get("lg/kept"))
    assert (summary.status, summary.outcome) == ("finished", "Here is the form")


@pytest.mark.parametrize(
    "named",
    [
        ["write/nothing/0", 1],
        "not a place",
        ["write/0/messages"],
        [5, 1],
        ["write/0/messages", True],
    ],
)
def test_the_saver_and_the_presenter_read_a_kept_write_alike(
    db: rewinddb.Database, named: Any
) -> None:
    """One reading of ``value_at`` (``_kept``): where it names a stored value, the saver
    gives back the write the step shows; where it names nothing, or is out of shape, the
    step shows it as undecodable, and the saver refuses the checkpoint as damaged
    (``corrupt.events``) in ``get_tuple`` and ``list`` alike."""
    agent = _kept_reply_thread(db, "alike")
    saver = RewindSaver(db)
    newest = saver.get_tuple(thread("alike"))
    assert newest is not None and newest.parent_config is not None
    ran = saver.get_tuple(newest.parent_config)  # the checkpoint the agent ran from
    assert ran is not None
    assert [value for _, channel, value in ran.pending_writes if channel == "messages"] == [REPLY]
    assert [(m.role, m.text) for m in agent.messages] == [("ai", REPLY["content"])]
    parent_id = newest.parent_config["configurable"]["checkpoint_id"]
    db.at("lg/alike").events.append(
        "langgraph.write",
        {"checkpoint_id": parent_id, "task_id": "t", "task_path": "~__pregel_pull, agent"}
        | {"idx": 1, "channel": "messages", "value_at": named},
    )
    again = PRESENTER.step(db, "lg/alike", agent.version)
    assert [m.role for m in again.messages] == ["ai", "undecodable"]
    for read in (
        lambda: saver.get_tuple(newest.parent_config),
        lambda: list(saver.list(thread("alike"))),
        lambda: list(RewindSaver(db).list(thread("alike"))),  # remembering nothing
    ):
        with pytest.raises(rewinddb.CorruptDatabaseError) as raised:
            read()
        assert raised.value.code == "corrupt.events" and repr(named) in str(raised.value)


def test_a_page_before_the_first_step_points_at_the_newer_ones(
    react: ReactRun, react_db: rewinddb.Database
) -> None:
    steps = _all_steps(react_db, react.main_branch)
    for before in (0, steps[0].version):
        page = PRESENTER.steps(react_db, react.main_branch, before=before, limit=3)
        assert page.steps == () and page.older is None and page.newer is not None
        ahead = PRESENTER.steps(react_db, react.main_branch, after=page.newer, limit=3)
        assert ahead.steps == tuple(steps[:3])
    past = PRESENTER.steps(react_db, react.main_branch, after=steps[-1].version, before=10**9)
    assert past.steps == () and past.newer is None
