"""``rewinddb story`` on a LangGraph database: threads by their thread ids, the
conversation with its tool calls and approvals, and forks by what they are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

import rewinddb
from rewinddb import story, story_text
from rewinddb.cli import main
from rewinddb.integrations.langgraph import RewindSaver


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def agent(state: State) -> dict[str, Any]:
    last = state["messages"][-1]
    if isinstance(last, HumanMessage):
        call = {"name": "get_weather", "args": {"city": str(last.content)}, "id": "call-1"}
        return {"messages": [AIMessage("Checking.", tool_calls=[call])]}
    return {"messages": [AIMessage(f"It is {last.content}.")]}


def tools(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "Call the weather service?"})
    result = "sunny" if answer == "yes" else "unknown"
    return {"messages": [ToolMessage(result, tool_call_id="call-1")]}


def route(state: State) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def _weather() -> StateGraph:
    """agent -> tools (asks before it calls the weather service) -> agent."""
    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route)
    builder.add_edge("tools", "agent")
    return builder


def record(path: Path) -> None:
    with RewindSaver.from_path(path) as saver:
        graph = _weather().compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "weather/ü"}}
        graph.invoke({"messages": [HumanMessage("Lisbon")]}, config)
        graph.invoke(Command(resume="yes"), config)
        first = list(graph.get_state_history(config))[-2]  # before the agent's first step
        graph.update_state(first.config, {"messages": [HumanMessage("Porto")]})


def test_story_tells_a_thread_by_its_thread_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent"
    record(path)
    assert main(["story", str(path)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0] == "weather/ü  (thread, finished)"
    assert "lg-index" not in "\n".join(listed)  # the saver's bookkeeping is internal
    fork = next(line for line in listed if line.startswith("weather/ü~"))
    assert "(thread, " in fork
    assert main(["story", str(path), "weather/ü"]) == 0
    told = capsys.readouterr().out.splitlines()
    assert told[0] == "thread weather/ü - finished"
    # The thread goes on in the fork: both name it by its title, not its branch.
    title = fork.split()[0]
    assert f"  now on   {title}" in listed
    assert f"  now on   {title} (its thread continues there)" in told
    conversation = told[told.index("conversation (4 messages)") + 1 :]
    assert conversation[:4] == [
        "  human  Lisbon",
        "  ai     Checking.",
        '  ai     calls get_weather({"city":"Lisbon"}) -> sunny',
        "  ? tools asks: Call the weather service? -> answered yes",
    ]
    assert "  ai     It is sunny." in conversation
    assert any(line.split()[1:2] == ["agent"] for line in told if line.startswith("    "))


def test_story_json_of_a_thread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "agent"
    record(path)
    assert main(["story", str(path), "weather/ü", "--json"]) == 0
    told = json.loads(capsys.readouterr().out)
    assert told["summary"]["title"] == "weather/ü"
    assert [m["role"] for m in told["transcript"]["messages"]] == ["human", "ai", "tool", "ai"]


@pytest.mark.parametrize("thread_id", ["", "t" * 2000, "中" * 60])
def test_story_takes_any_thread_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], thread_id: str
) -> None:
    """A thread id that no branch name can be (empty, longer than a key, escaped past
    the limit) still names its thread, by its title."""
    builder = StateGraph(State)
    builder.add_node("agent", lambda state: {"messages": [AIMessage("hello")]})
    builder.add_edge(START, "agent")
    with RewindSaver.from_path(tmp_path / "agent") as saver:
        config: Any = {"configurable": {"thread_id": thread_id}}
        builder.compile(checkpointer=saver).invoke({"messages": [HumanMessage("hi")]}, config)
    assert main(["story", str(tmp_path / "agent"), thread_id]) == 0
    told = capsys.readouterr().out.splitlines()
    assert told[0] == f"thread {thread_id} - finished"
    assert "  ai     hello" in told


def test_log_show_and_diff_take_a_thread_by_its_thread_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``log``, ``show`` and ``diff`` name a thread as ``story`` does; ``log`` on a
    LangGraph database without ``--branch`` says ``default`` has no events."""
    path = tmp_path / "agent"
    record(path)
    assert main(["log", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "branch 'default' has no events" in err
    assert main(["log", str(path), "--branch", "weather/ü", "--limit", "1"]) == 0
    assert capsys.readouterr().out.startswith("seq 0 ")
    assert main(["show", str(path), "--branch", "weather/ü"]) == 0
    assert capsys.readouterr().out.startswith("branch lg/weather%2F%C3%BC at version ")
    assert main(["story", str(path)]) == 0
    listed = capsys.readouterr().out.splitlines()
    fork = next(line for line in listed if line.startswith("weather/ü~")).split()[0]
    assert main(["diff", str(path), "weather/ü", fork]) == 0
    told = capsys.readouterr().out.splitlines()
    # Each side is named by the step its state is of; the messages, as read, go as a
    # unified diff's lines do: what went, then what came in its place.
    assert told[0] == "--- weather/ü (step 3, version 15)"
    assert told[1].startswith(f"+++ {fork} (step 1, version ")
    assert told[2:6] == [
        "- messages[1]: ai: Checking.",
        "- messages[2]: tool: sunny",
        "- messages[3]: ai: It is sunny.",
        "+ messages[1]: human: Porto",
    ]
    assert "more stored changes not shown" in told[-1]
    assert not any("channel/" in line or "$." in line for line in told)
    assert main(["diff", str(path), "weather/ü", fork, "--stored"]) == 0
    assert "kv 'channel/messages'" in capsys.readouterr().out  # the store's own diff
    assert main(["log", str(path), "--branch", "nope"]) == 1
    assert "branch 'nope' does not exist" in capsys.readouterr().err


def test_diff_of_a_thread_with_its_own_past_lists_each_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against a version before its first message, a thread's diff lists each message
    as it reads (the channel appeared), never the channel's stored list."""
    path = tmp_path / "agent"
    record(path)
    assert main(["diff", str(path), "weather/ü", "weather/ü", "--as-of-a", "3"]) == 0
    told = capsys.readouterr().out.splitlines()
    assert told[2:6] == [
        "+ messages[0]: human: Lisbon",
        "+ messages[1]: ai: Checking.",
        "+ messages[2]: tool: sunny",
        "+ messages[3]: ai: It is sunny.",
    ]
    assert told[6].startswith("4 changes: 4 added, 0 removed, 0 changed (")
    assert not any("__class__" in line for line in told)


def _record_replay(path: Path) -> None:
    """Thread ``t``: Lisbon, the weather call refused ("no"); then a replay of the step
    that asked, answered "yes" (a fork, ``t~...``)."""
    with RewindSaver.from_path(path) as saver:
        graph = _weather().compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t"}}
        graph.invoke({"messages": [HumanMessage("Lisbon")]}, config)
        graph.invoke(Command(resume="no"), config)
        asked = next(s for s in graph.get_state_history(config) if s.next == ("tools",))
        graph.invoke(None, asked.config)  # the replay asks again
        graph.invoke(Command(resume="yes"), config)


def test_a_diffs_count_of_what_it_does_not_show_is_every_stored_change_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rewinddb diff`` counts what it leaves out as stored changes (``--stored`` shows
    them), not as bookkeeping: some are the stored changes inside a message a row tells
    (its ``.content``, its ``.id``)."""
    path = tmp_path / "agent"
    _record_replay(path)
    with rewinddb.open(path, readonly=True) as db:
        (fork,) = [b.name for b in db.branches.list() if b.name.startswith("lg/t~")]
        diff = db.diff("lg/t", fork, readable=True)
        rows = story.diff_rows(db, story.presenter_of(db, fork), diff)
    hidden = [r for r in rows if r.hidden]
    assert [r.change.path for r in hidden if r.change.path.startswith("$.items[")]
    assert main(["diff", str(path), "t", fork]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.endswith(f"({len(hidden)} more stored changes not shown: --stored shows them)")
    assert "bookkeeping" not in last


def test_what_a_replay_did_itself_is_told_below_its_fork_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A replay of a step that waited on an approval, answered "no" on the thread and
    "yes" on the replay: the replay's answer and its tool's result are told below the
    fork point (its own), and the call it inherited says its result came after the
    fork point, not the replay's result as if it had come before."""
    path = tmp_path / "agent"
    _record_replay(path)
    assert main(["story", str(path)]) == 0
    fork = next(
        line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("t~")
    )
    assert main(["story", str(path), fork]) == 0
    out = capsys.readouterr().out
    told = out[out.index("conversation") : out.index("steps (")].splitlines()
    mark = next(i for i, line in enumerate(told) if line.startswith("  ---- "))
    above, below = told[1:mark], told[mark + 1 :]
    assert (
        '  .ai     calls get_weather({"city":"Lisbon"}) -> its result came after the fork point'
        in above
    )
    assert not any("sunny" in line or "answered yes" in line for line in above)
    assert [line for line in below if line.strip()] == [
        "  ? tools asks: Call the weather service? -> answered yes",
        "  tool   sunny",
        "  ai     It is sunny.",
    ]
    with rewinddb.open(path, readonly=True) as db:
        branch = story_text.attempt_branch(db, fork)
        told_story = story.branch_story(db, branch)
        assert told_story.transcript is not None
        items = story.chat(told_story.transcript, told_story.summary.fork)
    kinds = [i.kind for i in items]
    at = kinds.index("fork")
    assert kinds[at + 1 :] == ["interrupt", "message", "message"]
    assert items[at].after_inherited
    (call_item,) = [i for i in items[:at] if i.message is not None and i.message.tool_calls]
    assert call_item.pending == story.AFTER_FORK
    assert call_item.message is not None and call_item.message.tool_calls[0].result is None


def test_a_threads_forks_are_listed_after_it_not_after_threads_begun_later(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent"
    with RewindSaver.from_path(path) as saver:
        graph = _weather().compile(checkpointer=saver)
        first: Any = {"configurable": {"thread_id": "first"}}
        graph.invoke({"messages": [HumanMessage("Lisbon")]}, first)
        later: Any = {"configurable": {"thread_id": "later"}}
        graph.invoke({"messages": [HumanMessage("Oslo")]}, later)
        start = list(graph.get_state_history(first))[-2]
        edited = graph.update_state(start.config, {"messages": [HumanMessage("Porto")]})
        graph.invoke(None, edited)  # a fork of "first", begun after "later"
    with rewinddb.open(path) as db:
        listed = [attempt.summary.title for attempt in story.attempts(db)]
        assert listed[0] == "first"
        assert listed[1].startswith("first~") and listed[2] == "later"
        everything = [a.branch.name for a in story.attempts(db, include_internal=True)]
        assert everything.index("lg/first") < everything.index(f"lg/{listed[1]}")
        assert everything.index(f"lg/{listed[1]}") < everything.index("lg/later")
    assert main(["story", str(path)]) == 0
    titles = [line.split("  ")[0] for line in capsys.readouterr().out.splitlines()]
    assert [t for t in titles if t] == listed
