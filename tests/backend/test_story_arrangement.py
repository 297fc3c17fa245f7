"""How ``rewinddb.story`` arranges the presenters' records: where the fork point and the
approval cards fall in a page of conversation or steps, which tool messages a call's
card already shows, and the words of a status or a question."""

from __future__ import annotations

from datetime import datetime, timezone

from rewinddb.presenters import (
    Fork,
    Interrupt,
    Message,
    Step,
    StepPage,
    Summary,
    ToolCall,
    Transcript,
)
from rewinddb.story import chat, question_text, role_of, status_text, step_items

FORK = Fork("lg/t", 10, "edit", "edit of step 3 of t", step=10)
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def kinds(items: list) -> list[str]:
    return [
        item.kind if item.kind != "message" else f"{item.message.role}:{item.message.text}"
        for item in items
    ]


def test_the_fork_point_falls_between_inherited_and_own_messages() -> None:
    messages = (
        Message("human", "q", step=4),
        Message("ai", "a", step=8),
        Message("ai", "b", step=12),
    )
    items = chat(Transcript(messages, 0, 3), FORK)
    assert kinds(items) == ["human:q", "ai:a", "fork", "ai:b"]
    assert [item.inherited for item in items if item.kind == "message"] == [True, True, False]
    # A page of only own messages after an earlier page: the mark is on that page.
    assert "fork" not in kinds(chat(Transcript(messages[2:], 2, 3), FORK))
    # Only inherited messages, the newest page: nothing of its own said yet.
    assert kinds(chat(Transcript(messages[:2], 0, 2), FORK))[-1] == "fork"
    # Without a fork, or without steps to tell the sides apart, no mark.
    assert "fork" not in kinds(chat(Transcript(messages, 0, 3), None))
    unknown = tuple(Message(m.role, m.text) for m in messages)
    assert "fork" not in kinds(chat(Transcript(unknown, 0, 3), FORK))


def test_an_approval_card_comes_before_what_followed_it() -> None:
    messages = (
        Message("human", "book it", step=2),
        Message("ai", "", step=3, tool_calls=(ToolCall("book", {"n": 3}, "c1", "booked"),)),
        Message("tool", "booked", step=6, tool_call_id="c1"),
        Message("ai", "done", step=7),
    )
    asked = Interrupt({"question": "Book?"}, "approve", "yes", True, step=4, text="Book?")
    items = chat(Transcript(messages, 0, 4, (asked,)), None)
    # The tool message is the card's result, so it is not shown again.
    assert kinds(items) == ["human:book it", "ai:", "interrupt", "ai:done"]
    # On a page of later messages the card is not repeated; on the newest it stays.
    assert "interrupt" not in kinds(chat(Transcript(messages[3:], 3, 4, (asked,)), None))
    waiting = Interrupt("Go on?", "approve", step=9)
    assert kinds(chat(Transcript(messages, 0, 4, (waiting,)), None))[-1] == "interrupt"


def test_a_tool_message_without_its_call_on_the_page_is_shown() -> None:
    items = chat(Transcript((Message("tool", "42", step=5, tool_call_id="c9"),), 3, 4), None)
    assert kinds(items) == ["tool:42"]


def step(version: int, inherited: bool) -> Step:
    return Step(version, "lg/t" if inherited else "lg/t~1", version, "agent", NOW, inherited)


def test_the_fork_point_falls_between_inherited_and_own_steps() -> None:
    page = StepPage((step(4, True), step(8, True), step(12, False)), None, 3)
    assert [i.kind for i in step_items(page, FORK, newest=True)] == [
        "step",
        "step",
        "fork",
        "step",
    ]
    inherited = StepPage((step(4, True),), None, 1)
    assert [i.kind for i in step_items(inherited, FORK, newest=True)] == ["step", "fork"]
    assert [i.kind for i in step_items(inherited, FORK, newest=False)] == ["step"]
    own = StepPage((step(12, False),), None, 1)  # forked before any step
    assert [i.kind for i in step_items(own, FORK, newest=True)] == ["fork", "step"]
    later = StepPage((step(12, False),), 11, 5)  # an older page holds the boundary
    assert [i.kind for i in step_items(later, FORK, newest=True)] == ["step"]


def test_words_for_status_roles_and_questions() -> None:
    waiting = Summary("lg/t", "langgraph", "thread", "t", "interrupted", waiting_on="approve")
    assert status_text(waiting) == "interrupted, waiting on approve"
    assert status_text(Summary("b", "generic", "attempt", "b", "finished")) == "finished"
    assert [role_of(Message(r, "")) for r in ("user", "assistant", "tool", "x")] == [
        "human",
        "ai",
        "tool",
        "other",
    ]
    card = Interrupt({"question": "Book it?", "args": {"n": 3}}, text="Book it?")
    assert question_text(card) == ("Book it?", {"args": {"n": 3}})
    assert question_text(Interrupt("Sure?")) == ("Sure?", None)
    assert question_text(Interrupt({"prompt": "Go?"}, text="Go?")) == ("Go?", None)
    assert question_text(Interrupt([1, 2])) == ("[1,2]", None)
