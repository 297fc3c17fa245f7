"""Stories the LangGraph presenter told wrong, each checked against what LangGraph itself
reports (``get_state``, ``get_state_history``) on a real graph: messages given as
LangChain's message-likes (tuples, dicts, strings), the status of a graph that used
``Send``, failed tasks and their retries, the current line of a thread after time
travel, and approvals on forks and in subgraphs."""

from __future__ import annotations

import operator
import re
import uuid
from html import unescape
from typing import Annotated, Any

import pytest
from chat_graphs import approval_graph, thread
from fastapi.testclient import TestClient
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, Durability, Send, interrupt
from typing_extensions import TypedDict

import rewinddb
from rewinddb import presenters, story
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.web import create_app
from rewinddb.web.urls import branch_url, step_url

# -- what LangGraph reports -------------------------------------------------------------


def _said(message: BaseMessage) -> tuple[str, str]:
    return message.type, message.content if isinstance(message.content, str) else ""


def _added_by_langgraph(graph: Any, config: dict) -> dict[str, list[tuple[str, str]]]:
    """Checkpoint id -> the messages (role, text) its snapshot holds and its parent's did
    not (by id), as ``get_state_history`` reports them."""
    history = list(graph.get_state_history(config))
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in history}
    added = {}
    for snapshot in history:
        parent = snapshot.parent_config
        before = by_id.get(parent["configurable"]["checkpoint_id"]) if parent else None
        seen = {m.id for m in before.values.get("messages", [])} if before else set()
        now = snapshot.values.get("messages", [])
        added[snapshot.config["configurable"]["checkpoint_id"]] = [
            _said(m) for m in now if m.id not in seen
        ]
    return added


def _story_added(db: rewinddb.Database, branch: str) -> dict[str, list[tuple[str, str]]]:
    """Checkpoint id -> the messages (role, text) its step says it added."""
    steps = story.branch_story(db, branch).steps.steps
    return {s.id: [(m.role, m.text) for m in s.messages] for s in steps if s.id}


# -- 1. message-likes ----------------------------------------------------------------------


def test_message_likes_read_as_the_messages_langgraph_made(db: rewinddb.Database) -> None:
    """The README's example returns ``("ai", "...")`` tuples; LangChain takes dicts,
    strings and constructor envelopes too. Each step, the outcome and the transcript
    show them as the messages ``add_messages`` made of them (role and text)."""
    replies: dict[str, Any] = {
        "tuple": lambda text: [("ai", f"booked {text}")],
        "one-tuple": lambda text: ("assistant", f"booked {text}"),
        "dict": lambda text: [{"role": "assistant", "content": f"booked {text}"}],
        "envelope": lambda text: [
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "messages", "AIMessage"],
                "kwargs": {"content": f"booked {text}"},
            }
        ],
    }
    inputs: dict[str, Any] = {
        "tuple": [("user", "a hotel in Lisbon")],
        "one-tuple": ("human", "a hotel in Lisbon"),
        "dict": [{"role": "user", "content": "a hotel in Lisbon"}],
        "envelope": "a hotel in Lisbon",  # a bare string: a human message
    }
    for name, reply in replies.items():

        def agent(state: MessagesState, reply: Any = reply) -> dict:
            return {"messages": reply(state["messages"][-1].content)}

        builder = StateGraph(MessagesState).add_node("agent", agent).add_edge(START, "agent")
        graph = builder.compile(checkpointer=RewindSaver(db))
        graph.invoke({"messages": inputs[name]}, thread(name))
        state = graph.get_state(thread(name))
        expected = [_said(m) for m in state.values["messages"]]
        assert expected == [("human", "a hotel in Lisbon"), ("ai", "booked a hotel in Lisbon")]
        branch = f"lg/{name}"
        told = story.branch_story(db, branch)
        assert told.summary.outcome == state.values["messages"][-1].content, name
        assert _story_added(db, branch) == _added_by_langgraph(graph, thread(name)), name
        assert told.transcript is not None
        transcript = told.transcript.messages
        assert [(m.role, m.text) for m in transcript] == expected, name
        # Each message names the step that added it, as the step lists it.
        for shown in transcript:
            step = story.step_detail(db, branch, shown.step).step if shown.step else None
            assert step is not None and (shown.role, shown.text) in [
                (m.role, m.text) for m in step.messages
            ], name


# -- 4. the status agrees with LangGraph's ``next`` -------------------------------------


class Fan(TypedDict, total=False):
    items: Annotated[list[int], operator.add]
    total: int


def _fan_graph(saver: RewindSaver, *, then_sum: bool) -> Any:
    """START -> Send("work", i) for two items (-> "sum" once they are done)."""
    builder = StateGraph(Fan)
    builder.add_node("plan", lambda state: {})
    builder.add_node("work", lambda arg: {"items": [arg["i"] * 10]})
    builder.add_edge(START, "plan")
    builder.add_conditional_edges(
        "plan", lambda state: [Send("work", {"i": i}) for i in range(2)], ["work"]
    )
    if then_sum:
        builder.add_node("sum", lambda state: {"total": sum(state["items"])})
        builder.add_edge("work", "sum")
        builder.add_edge("sum", END)
    else:
        builder.add_edge("work", END)
    return builder.compile(checkpointer=saver)


def test_the_status_agrees_with_what_langgraph_runs_next(db: rewinddb.Database) -> None:
    """A graph that used ``Send`` leaves LangGraph's task channel behind, empty: its
    thread is finished (``next == ()``), not open; every checkpoint before is open as
    long as LangGraph has a task to run from it (``Send`` packets waiting included)."""
    for name, then_sum in (("fan", False), ("fan-sum", True)):
        graph = _fan_graph(RewindSaver(db), then_sum=then_sum)
        graph.invoke({"items": []}, thread(name))
        branch = f"lg/{name}"
        assert graph.get_state(thread(name)).next == ()
        record = db.branches.get(branch)
        assert story.branch_story(db, branch).summary.status == "finished", name
        versions = {s.id: s.version for s in story.branch_story(db, branch).steps.steps}
        history = list(graph.get_state_history(thread(name)))
        assert any("work" in s.next for s in history)  # the packets waited somewhere
        for snapshot in history:
            version = versions[snapshot.config["configurable"]["checkpoint_id"]]
            status = presenters.presenter_for(record).summary(db, record, as_of=version).status
            expected = "open" if snapshot.next else "finished"
            assert status == expected, (name, snapshot.metadata["step"], snapshot.next)
    # An approval: interrupted while LangGraph waits on its node, then finished.
    graph = approval_graph(RewindSaver(db))
    graph.invoke({"trail": []}, thread("ask"))
    assert graph.get_state(thread("ask")).next == ("approve",)
    summary = story.branch_story(db, "lg/ask").summary
    assert (summary.status, summary.waiting_on) == ("interrupted", "approve")
    graph.invoke(Command(resume="me"), thread("ask"))
    assert graph.get_state(thread("ask")).next == ()
    assert story.branch_story(db, "lg/ask").summary.status == "finished"


# -- 3. failed tasks and their retries -------------------------------------------------


def _converter(saver: RewindSaver, fails: int) -> Any:
    """agent (a fake chat model: a ``convert`` call, then an answer) -> tools (its first
    ``fails`` calls raise, as ``ToolNode`` re-raises a tool's error) -> agent."""
    ran: list[str] = []

    @tool
    def convert(to: str) -> str:
        """Convert 100 EUR to a currency."""
        ran.append(to)
        if len(ran) <= fails:
            raise ValueError(f"unsupported currency {to}")
        return f"100 EUR is 108 {to}"

    model = FakeMessagesListChatModel(
        responses=[
            AIMessage("", tool_calls=[{"name": "convert", "args": {"to": "USD"}, "id": "c1"}]),
            AIMessage("It is 108 USD."),
            AIMessage("Fine."),
        ]
    )

    def agent(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(MessagesState).add_node("agent", agent)
    builder.add_node("tools", ToolNode([convert]))
    builder.add_edge(START, "agent").add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


def _failed_tasks(graph: Any, config: dict) -> dict[str, list[tuple[str, str, bool]]]:
    """Checkpoint id -> (node, error, whether it has a result) of each task LangGraph
    reports failed there."""
    return {
        s.config["configurable"]["checkpoint_id"]: [
            (t.name, t.error if isinstance(t.error, str) else repr(t.error), bool(t.result))
            for t in s.tasks
            if t.error
        ]
        for s in graph.get_state_history(config)
        if any(t.error for t in s.tasks)
    }


def _page_text(client: TestClient, url: str) -> str:
    page = client.get(url)
    assert page.status_code == 200, url
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", page.text)).split())


def test_a_failed_task_stays_in_the_story_and_its_retry_shows(db: rewinddb.Database) -> None:
    """A tool that raised: the step it ran from says so (as LangGraph's history does,
    where that checkpoint's task has the error), after new input as after a retry. The
    call it never answered reads failed, not "no result yet"; a retry's step says it
    ran again and the call gets the retry's result."""
    error = "ValueError('unsupported currency USD')"
    for name, move_on in (("new-input", {"messages": [("user", "never mind")]}), ("retry", None)):
        graph = _converter(RewindSaver(db), fails=1)
        with pytest.raises(ValueError, match="unsupported currency"):
            graph.invoke({"messages": [("user", "convert 100 EUR")]}, thread(name))
        branch = f"lg/{name}"
        assert story.branch_story(db, branch).summary.status == "failed"
        graph.invoke(move_on, thread(name))
        failed = _failed_tasks(graph, thread(name))
        ((checkpoint, tasks),) = failed.items()  # LangGraph keeps the failure
        assert [(node, text) for node, text, _ in tasks] == [("tools", error)]
        retried = tasks[0][2]
        assert retried == (move_on is None)
        steps = story.branch_story(db, branch).steps.steps
        (asked,) = [s for s in steps if s.id == checkpoint]
        errors = [(m.name, m.text) for m in asked.messages if m.role == "error"]
        assert errors == [("tools", f"{error} (it ran again)" if retried else error)]
        (call,) = [c for m in asked.messages for c in m.tool_calls]
        after = next(s for s in steps if s.version > asked.version)
        transcript = story.branch_story(db, branch).transcript
        assert transcript is not None
        (card,) = [c for m in transcript.messages for c in m.tool_calls]
        if retried:
            assert after.label == "tools (retried)"
            answer = graph.get_state(thread(name)).values["messages"][2]
            assert (answer.type, answer.tool_call_id) == ("tool", "c1")
            assert call.result is None  # a later step answers it
            assert card.result == answer.content
        else:
            assert after.label == "input"
            assert call.result == card.result == f"failed: {error}"
        # The pages show it.
        with TestClient(create_app(db.path), base_url="http://localhost") as client:
            page = _page_text(client, step_url(branch, asked.version))
            assert error in page
            assert ("its result comes in a later step" in page) == retried
            thread_page = _page_text(client, branch_url(branch))
            assert ("no result yet" in thread_page) is False
            assert (f"result failed: {error}" in thread_page) == (not retried)


# -- 2. which line of a thread is current ----------------------------------------------


def test_the_line_langgraph_continues_on_is_the_current_thread(db: rewinddb.Database) -> None:
    """After time travel (new input from an old checkpoint) LangGraph's ``get_state``
    continues on the fork: of the thread's attempts, that one is the current one,
    with the outcome LangGraph reports; once the old line goes on, it is current again."""

    def echo(state: MessagesState) -> dict:
        return {"messages": [AIMessage("echo " + state["messages"][-1].content)]}

    builder = StateGraph(MessagesState).add_node("bot", echo).add_edge(START, "bot")
    graph = builder.compile(checkpointer=RewindSaver(db))
    for text in ("Lisbon", "Porto"):
        graph.invoke({"messages": [("user", text)]}, thread("trip"))
    first = [s for s in graph.get_state_history(thread("trip")) if s.metadata["step"] == 1][-1]
    graph.invoke({"messages": [("user", "Madrid instead")]}, first.config)

    def current() -> list[story.Attempt]:
        attempts = story.attempts(db)
        found = [a for a in attempts if a.summary.current == a.branch.name]
        assert all(a.summary.current == found[0].branch.name for a in attempts)
        assert all(a.summary.kind == "thread" for a in attempts)
        return found

    state = graph.get_state(thread("trip"))
    assert state.values["messages"][-1].content == "echo Madrid instead"
    (fork,) = [b.name for b in db.branches.list() if b.name.startswith("lg/trip~")]
    (now,) = current()
    assert now.branch.name == fork and now.summary.outcome == "echo Madrid instead"
    newest = story.branch_story(db, fork).steps.steps[-1]
    assert newest.id == state.config["configurable"]["checkpoint_id"]
    main = story.branch_story(db, "lg/trip").summary
    assert (main.kind, main.outcome) == ("thread", "echo Porto")  # the old line, as it ended
    assert main.current == fork
    with TestClient(create_app(db.path), base_url="http://localhost") as client:
        assert "current the attempt this thread continues on now" in _page_text(
            client, branch_url(fork)
        )
        old_page = _page_text(client, branch_url("lg/trip"))
        assert f"This thread continues on {fork[3:]} now" in old_page
        overview = _page_text(client, "/")
        assert f"{fork[3:]} thread current" in overview
        assert f"trip thread continues on {fork[3:]}" in overview
    # The old line goes on (from its own head): LangGraph continues there now.
    old = next(
        s
        for s in graph.get_state_history(thread("trip"))
        if s.values["messages"][-1].content == "echo Porto"
    )
    graph.invoke({"messages": [("user", "and Faro")]}, old.config)
    state = graph.get_state(thread("trip"))
    assert state.values["messages"][-1].content == "echo and Faro"
    (now,) = current()
    assert now.branch.name == "lg/trip" and now.summary.outcome == "echo and Faro"


# -- 5. approvals on forks and in subgraphs ------------------------------------------------


def _asking_graph(saver: RewindSaver, *, ids: str = "reducer") -> Any:
    """START -> ask (interrupts with a question, then says the answer) -> END. Its
    answer gets its id from ``add_messages`` (``ids="reducer"``), or a fresh one from
    the node itself (``ids="node"``): a task that runs again makes a new id either way."""

    def ask(state: MessagesState) -> dict:
        answer = interrupt({"question": "Send it?"})
        mid = str(uuid.uuid4()) if ids == "node" else None
        return {"messages": [AIMessage(f"answer was {answer}", id=mid)]}

    builder = StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask")
    return builder.compile(checkpointer=saver)


def _cards(transcript: presenters.Transcript) -> list[tuple[Any, Any, bool]]:
    return [(i.text, i.resume, i.resumed) for i in transcript.interrupts]


@pytest.mark.parametrize("ids", ["reducer", "node"])
@pytest.mark.parametrize("durability", ["async", "sync"])
def test_a_fork_at_an_approval_tells_the_approval_once(
    db: rewinddb.Database, durability: Durability, ids: str
) -> None:
    """Forks made at the checkpoint that asked: ``Command(resume=...)`` there (LangGraph
    reuses the answer it has: the fork's step was made by it) shows the approval in the
    fork's conversation as in its steps; ``invoke(None, ...)`` there copies the
    checkpoint and asks again: one approval, waiting, as ``get_state`` reports.

    The fork's ``ask`` ran again and made its answer anew (a new id), while the saver
    keeps the write ``ask`` made there first: it holds the first run's id, or none when
    LangGraph saved it (in the background) before ``add_messages`` set one. The story is
    the same whichever it holds and however the saves were timed: ``ids="node"`` makes
    the first case certain, ``durability`` moves the saves."""
    graph = _asking_graph(RewindSaver(db), ids=ids)
    for name, again in (("resumed", Command(resume="no")), ("copied", None)):
        graph.invoke({"messages": [("user", "go")]}, thread(name), durability=durability)
        graph.invoke(Command(resume="yes"), thread(name), durability=durability)
        asked = next(s for s in graph.get_state_history(thread(name)) if s.next == ("ask",))
        ((question,),) = [t.interrupts for t in asked.tasks]
        graph.invoke(again, asked.config, durability=durability)
        state = graph.get_state(thread(name))
        (fork,) = [b.name for b in db.branches.list() if b.name.startswith(f"lg/{name}~")]
        told = story.branch_story(db, fork)
        assert told.transcript is not None
        in_steps = [(i.text, i.resume, i.resumed) for s in told.steps.steps for i in s.interrupts]
        if again is not None:  # LangGraph answered with what it had: "yes"
            assert state.values["messages"][-1].content == "answer was yes"
            assert not state.next and not state.interrupts
            assert in_steps == _cards(told.transcript) == [("Send it?", "yes", True)]
            items = story.chat(told.transcript, told.summary.fork)
            kinds = [i.kind if i.message is None else i.message.role for i in items]
            assert kinds == ["human", "interrupt", "fork", "ai"]
            # The answer is the fork's own step's, the one that lists it (LangGraph's
            # history: the fork's checkpoint whose parent asked).
            (answer,) = [m for m in told.transcript.messages if m.role == "ai"]
            (made,) = [s for s in told.steps.steps if s.branch == fork and s.messages]
            assert made.id == state.config["configurable"]["checkpoint_id"]
            assert answer.step == made.version
            assert [m.text for m in made.messages] == [answer.text]
        else:
            assert state.next == ("ask",)
            assert [i.value for i in state.interrupts] == [question.value]
            assert in_steps == _cards(told.transcript) == [("Send it?", None, False)]
            assert (told.summary.status, told.summary.waiting_on) == ("interrupted", "ask")
        assert question.value == {"question": "Send it?"}


def test_an_approval_in_a_subgraph_follows_the_message_that_led_to_it(
    db: rewinddb.Database,
) -> None:
    """A subgraph returns its whole state: its step adds only what LangGraph's history
    says it added (not the human message again), and the conversation reads the human
    message, then the approval, then the answer."""

    def ask(state: MessagesState) -> dict:
        answer = interrupt({"question": "Which scope?"})
        return {"messages": [AIMessage(f"researched with scope {answer}")]}

    sub = StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask").compile()
    builder = StateGraph(MessagesState).add_node("research", sub).add_edge(START, "research")
    graph = builder.compile(checkpointer=RewindSaver(db))
    graph.invoke({"messages": [("user", "research tiles")]}, thread("r"))
    graph.invoke(Command(resume="deep"), thread("r"))
    assert _story_added(db, "lg/r") == _added_by_langgraph(graph, thread("r"))
    told = story.branch_story(db, "lg/r")
    assert told.transcript is not None
    items = story.chat(told.transcript, told.summary.fork)
    shown = [
        (i.kind, i.message.text if i.message else i.interrupt.text if i.interrupt else None)
        for i in items
    ]
    assert shown == [
        ("message", "research tiles"),
        ("interrupt", "Which scope?"),
        ("message", "researched with scope deep"),
    ]
    (research,) = [s for s in told.steps.steps if s.label == "research"]
    assert [m.text for m in research.messages] == ["researched with scope deep"]
    assert [(i.text, i.resume) for i in research.interrupts] == [("Which scope?", "deep")]


# -- 6. copies of copies -------------------------------------------------------------------


def _counting_graph(saver: RewindSaver) -> Any:
    def bot(state: MessagesState) -> dict:
        return {"messages": [AIMessage(f"answer {len(state['messages'])}")]}

    return (
        StateGraph(MessagesState)
        .add_node("bot", bot)
        .add_edge(START, "bot")
        .compile(checkpointer=saver)
    )


def _forks_of(db: rewinddb.Database, prefix: str) -> dict[str, presenters.Fork | None]:
    return {
        a.branch.name: a.summary.fork
        for a in story.attempts(db, include_internal=True)
        if a.branch.name.startswith(prefix)
    }


def _time_travel(graph: Any, thread_id: str, step: int) -> tuple[str, dict]:
    """New input from ``thread_id``'s checkpoint of ``step``; (the checkpoint id it
    continued from, LangGraph's state of the thread now)."""
    past = [s for s in graph.get_state_history(thread(thread_id)) if s.metadata["step"] == step]
    start = past[-1].config
    graph.invoke({"messages": [("user", "again")]}, start)
    return start["configurable"]["checkpoint_id"], graph.get_state(thread(thread_id))


def _line(graph: Any, thread_id: str) -> list[str]:
    """The checkpoint ids of the thread's current line, newest first (parent links)."""
    by_id = {
        s.config["configurable"]["checkpoint_id"]: s
        for s in graph.get_state_history(thread(thread_id))
    }
    line, at = [], graph.get_state(thread(thread_id))
    while at is not None:
        line.append(at.config["configurable"]["checkpoint_id"])
        parent = at.parent_config
        at = by_id.get(parent["configurable"]["checkpoint_id"]) if parent else None
    return line


def test_time_travel_in_a_copy_of_a_copy_is_told_of_that_copy(db: rewinddb.Database) -> None:
    """``copy_thread(t, t2)`` then ``copy_thread(t2, t3)`` (both kept): new input from an
    early checkpoint of t3 is a replay from that step of t3 (the step on t3's line), as
    in a copy of t itself, not of t, another thread LangGraph still has."""
    saver = RewindSaver(db)
    graph = _counting_graph(saver)
    for text in ("one", "two", "three"):
        graph.invoke({"messages": [("user", text)]}, thread("t"))
    saver.copy_thread("t", "t2")
    saver.copy_thread("t2", "t3")
    started, state = _time_travel(graph, "t3", 1)
    assert started in _line(graph, "t3")  # LangGraph continues from it, on t3
    assert [m.content for m in state.values["messages"]][-2:] == ["again", "answer 3"]
    forks = _forks_of(db, "lg/t3")
    (branch,) = [name for name in forks if name.startswith("lg/t3~")]
    fork = forks[branch]
    assert fork is not None
    assert (fork.kind, fork.label, fork.parent) == ("replay", "new input at step 1 of t3", "lg/t3")
    assert story.step_detail(db, "lg/t3", fork.step).step.id == started  # where it went on
    told = forks["lg/t3"]
    assert told is not None and told.label.startswith("copy of t2 at step ")


def test_a_copy_of_a_deleted_copy_says_what_it_copies(db: rewinddb.Database) -> None:
    """t (with one fork) copied to t2, t deleted; t2 copied to t3, t2 deleted: LangGraph
    has only t3. Its branches (their parents purged with t2) are copies of t's, as a
    copy of a deleted t is told ("copy of t at step N"), and time travel in t3 is an edit
    or a replay of t3's step, not of t's (which only the explorer's ?all=1 shows)."""
    saver = RewindSaver(db)
    graph = _counting_graph(saver)
    for text in ("one", "two", "three"):
        graph.invoke({"messages": [("user", text)]}, thread("t"))
    _time_travel(graph, "t", 4)
    saver.copy_thread("t", "t2")
    saver.delete_thread("t")
    saver.copy_thread("t2", "t3")
    saver.delete_thread("t2")
    assert {s.config["configurable"]["thread_id"] for s in saver.list(None)} == {"t3"}
    copied_at = graph.get_state(thread("t3")).metadata["step"]
    history = list(graph.get_state_history(thread("t3")))
    edited = next(s for s in reversed(history) if s.metadata["step"] == 0)
    graph.update_state(edited.config, {"messages": [("user", "edited")]})
    replayed, _ = _time_travel(graph, "t3", 1)
    shown = {a.branch.name for a in story.attempts(db)}
    forks = _forks_of(db, "lg/t3")
    copy = forks["lg/t3"]
    assert copy is not None and copy.label == f"copy of t at step {copied_at}"
    (copied_fork,) = [b for b in forks if b.startswith("lg/t3~") and forks[b].kind == "fork"]
    assert forks[copied_fork].label.startswith(f"copy of t~{copied_fork.split('~')[1]} at step ")
    told = {f.kind: f for name, f in forks.items() if name != copied_fork and f is not None}
    assert (told["edit"].label, told["edit"].parent) == ("edit of step 0 of t3", "lg/t3")
    assert (told["replay"].label, told["replay"].parent) == ("new input at step 1 of t3", "lg/t3")
    assert {told["edit"].parent, told["replay"].parent} <= shown
    assert story.step_detail(db, "lg/t3", told["replay"].step).step.id == replayed


# -- 7. long thread ids ----------------------------------------------------------------------


@pytest.mark.parametrize("length", [507, 600])
def test_a_long_thread_id_is_titled_by_itself_and_its_current_line_marked(
    db: rewinddb.Database, length: int
) -> None:
    """A thread id too long to stand in names as itself (600 characters: its branches
    are named by its digest) is titled by the id the saver's index keeps; one that fits,
    the longest (507), has forks whose own/ keys hold their names' digests. Either way,
    after time travel every attempt names the one LangGraph's get_state continues on."""
    thread_id = "q" * length
    saver = RewindSaver(db)
    graph = _counting_graph(saver)
    for text in ("one", "two"):
        graph.invoke({"messages": [("user", text)]}, thread(thread_id))
    _time_travel(graph, thread_id, 1)
    newest = graph.get_state(thread(thread_id)).config["configurable"]["checkpoint_id"]
    attempts = story.attempts(db)
    assert len(attempts) == 2
    (main,) = [a for a in attempts if "~" not in a.branch.name]
    (fork,) = [a for a in attempts if "~" in a.branch.name]
    assert story.branch_story(db, fork.branch.name).steps.steps[-1].id == newest
    assert [a.summary.current for a in attempts] == [fork.branch.name] * 2
    assert main.summary.title == thread_id
    assert fork.summary.title == f"{thread_id}~{fork.branch.name.split('~')[1]}"
    assert fork.summary.fork is not None
    assert fork.summary.fork.label == f"new input at step 1 of {thread_id}"
