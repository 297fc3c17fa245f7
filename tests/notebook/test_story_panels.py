"""The widget's story panels on any presenter's records: a test presenter that tells a
conversation of hostile text, pages it, hides bookkeeping, or fails to decode."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

import rewinddb
from rewinddb import presenters
from rewinddb.notebook import explore
from rewinddb.presenters import (
    Interrupt,
    Message,
    Presenter,
    Step,
    StepPage,
    Summary,
    ToolCall,
    Transcript,
)

from .conftest import text

HOSTILE = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>"
#: Messages of the long conversation (``chat/long``).
LONG = 120


def conversation() -> list[Message]:
    """A human asks, the AI calls a tool, the tool answers, the AI answers: all hostile."""
    call = ToolCall(HOSTILE, {"query": HOSTILE}, id="call-1", result=f"result {HOSTILE}")
    return [
        Message("system", f"system {HOSTILE}"),
        Message("human", f"question {HOSTILE}", name=HOSTILE, step=2),
        Message("ai", "", tool_calls=(call,), step=2),
        Message("tool", f"result {HOSTILE}", tool_call_id="call-1", step=3),
        Message("ai", f"answer {HOSTILE}", step=4),
    ]


class Chat(Presenter):
    """Tells ``chat/...`` branches as conversations; ``chat/broken`` cannot be decoded."""

    name = "test-chat"

    def claims(self, branch: rewinddb.Branch) -> bool:
        return branch.name.startswith("chat/")

    def _check(self, branch: str) -> None:
        if branch == "chat/broken":
            raise rewinddb.InvalidInputError(
                "its channels cannot be decoded (a custom serde?)", code="invalid.encoding"
            )

    def summary(self, db: rewinddb.Database, branch: rewinddb.Branch) -> Summary:
        base = super().summary(db, branch)
        return replace(
            base,
            kind="thread",
            title=f"thread {HOSTILE}",
            status="interrupted",
            outcome=f"outcome {HOSTILE}",
            waiting_on=HOSTILE,
        )

    def transcript(
        self,
        db: rewinddb.Database,
        branch: str,
        *,
        as_of: int | None = None,
        before: int | None = None,
        limit: int = presenters.STEPS_PAGE,
    ) -> Transcript | None:
        self._check(branch)
        if branch == "chat/long":
            every = [Message("human" if n % 2 else "ai", f"message {n}") for n in range(LONG)]
            end = LONG if before is None else before
            start = max(end - limit, 0)
            return Transcript(tuple(every[start:end]), start, LONG)
        asked = Interrupt({"question": HOSTILE}, node=HOSTILE, resume=HOSTILE, resumed=True, step=3)
        return Transcript(tuple(conversation()), 0, 5, (asked,))

    def _tell(self, step: Step) -> Step:
        return replace(
            step,
            label=f"label {HOSTILE}",
            source=HOSTILE,
            nodes=(HOSTILE,),
            id=HOSTILE,
            messages=tuple(conversation()[1:3]),
        )

    def steps(
        self,
        db: rewinddb.Database,
        branch: str,
        *,
        before: int | None = None,
        limit: int = presenters.STEPS_PAGE,
    ) -> StepPage:
        self._check(branch)
        page = super().steps(db, branch, before=before, limit=limit)
        return replace(page, steps=tuple(self._tell(step) for step in page.steps))

    def step(self, db: rewinddb.Database, branch: str, version: int) -> Step:
        return self._tell(super().step(db, branch, version))

    def hidden(self, change: Any) -> bool:
        return bool(change.key.startswith("seen"))

    def key_label(self, primitive: str, key: str) -> str:
        return f"named {key}"


@pytest.fixture
def chats(db: rewinddb.Database) -> Iterator[rewinddb.Database]:
    """A database whose ``chat/`` branches the test presenter tells."""
    chat = presenters.register(Chat())
    try:
        for name in ("chat/t", "chat/long", "chat/broken"):
            db.branches.fork("default", name)
            view = db.at(name)
            view.kv.put("answer", HOSTILE)
            with view.transaction():
                view.kv.put("answer", f"{HOSTILE} 2")
                view.kv.put("seen", 1)
                view.kv.put("seen_at", "now")
        yield db
    finally:
        presenters.unregister(chat)


def test_a_conversation_is_shown_as_text(chats: rewinddb.Database) -> None:
    explorer = explore(chats, branch="chat/t")
    assert explorer.tabs.selected_index == 0  # a conversation: it comes first
    chat = explorer.transcript_panel.value
    page = text(chat)
    assert f"question {HOSTILE}" in page and f"answer {HOSTILE}" in page
    assert f"system system {HOSTILE}" in page
    card = f'tool call {HOSTILE} call-1 {{"query":"{HOSTILE.replace(chr(34), chr(92) + chr(34))}"}}'
    assert card in page and f"result result {HOSTILE}" in page
    assert page.count(f"result {HOSTILE}") == 1  # the tool message is on its call's card
    assert f"approval · asked by {HOSTILE} {HOSTILE} answered {HOSTILE}" in page
    # The approval sits after the step that asked (3) and before the answer (step 4).
    assert page.index("approval") < page.index(f"answer {HOSTILE}")
    summary = text(explorer.summary_panel.value)
    assert f"thread {HOSTILE} thread interrupted, waiting on {HOSTILE}" in summary
    assert f"outcome: outcome {HOSTILE}" in summary
    for html in (chat, explorer.summary_panel.value, explorer.step_panel.value):
        assert "<script" not in html and "<img" not in html
    explorer.close()


def test_bookkeeping_is_hidden_until_asked_for(chats: rewinddb.Database) -> None:
    explorer = explore(chats, branch="chat/t")
    step = text(explorer.step_panel.value)
    assert f"step 1: label {HOSTILE}" in step and f"source {HOSTILE}; ran {HOSTILE}" in step
    assert f"added human · {HOSTILE} question {HOSTILE}" in step  # the messages it added
    assert "changed since step 0: 3 rows (2 bookkeeping rows hidden)" in step
    assert "named answer" in step and "named seen" not in step
    assert (explorer.show_hidden.description, explorer.show_hidden.disabled) == (
        "show 2 hidden",
        False,
    )
    explorer.show_hidden.value = True
    step = text(explorer.step_panel.value)
    assert "named seen" in step and "named seen_at" in step
    assert "(2 bookkeeping rows shown greyed)" in step
    assert explorer.show_hidden.description == "hide 2 hidden"
    assert "opacity" in explorer.step_panel.value
    explorer.show_raw.value = True
    raw = explorer.raw_panel.value
    assert '"seen": 1' in text(raw) and "<script" not in raw
    explorer.close()


def test_a_long_conversation_pages(chats: rewinddb.Database) -> None:
    explorer = explore(chats, branch="chat/long")
    page = text(explorer.transcript_panel.value)
    assert page.startswith("messages 71-120 of 120") and "message 119" in page
    assert "message 69" not in page
    assert explorer.newer_messages.disabled and not explorer.older_messages.disabled
    explorer.page_transcript(-1)
    page = text(explorer.transcript_panel.value)
    assert page.startswith("messages 21-70 of 120") and "message 20" in page
    explorer.page_transcript(-1)
    assert text(explorer.transcript_panel.value).startswith("messages 1-20 of 120")
    assert explorer.older_messages.disabled
    explorer.page_transcript(1)
    assert text(explorer.transcript_panel.value).startswith("messages 21-70 of 120")
    explorer.page_transcript(1)
    assert text(explorer.transcript_panel.value).startswith("messages 71-120 of 120")
    explorer.close()


def test_a_branch_that_cannot_be_decoded_is_a_message(chats: rewinddb.Database) -> None:
    explorer = explore(chats, branch="chat/broken")
    summary = text(explorer.summary_panel.value)
    assert "cannot tell this branch's story" in summary and "invalid.encoding" in summary
    assert explorer.steps.options == () and explorer.transcript_panel.value == ""
    explorer.branch.value = "chat/t"  # the others still open
    assert "question" in text(explorer.transcript_panel.value)
    explorer.close()
