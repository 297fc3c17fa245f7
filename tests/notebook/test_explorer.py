"""The notebook widget, driven in plain Python (no kernel): traits in, panels out."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from react_run import ReactRun

import rewinddb
from rewinddb import rendering
from rewinddb.notebook import explore, show_diff
from rewinddb.notebook.explorer import EVENTS_TAB

from .conftest import click, text

HOSTILE = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>"


def test_scrubbing_through_a_branch(tutorial: Path) -> None:
    explorer = explore(tutorial, branch="run-2")
    assert (explorer.branch.value, explorer.slider.max, explorer.slider.value) == ("run-2", 2, 2)
    with rewinddb.open(tutorial, readonly=True) as db:
        run = db.at("run-2")
        events = [item.event for item in run.events.list()]
        for index in (0, 1, 2):
            explorer.slider.value = index
            event = events[index]
            assert explorer.state_panel.value.endswith(
                rendering.state_html(run.snapshot(as_of=event.version))
            )
            assert rendering.event_html(event) == explorer.event_panel.value
        explorer.slider.value = 2
        expected = db.diff("run-2", "run-2", as_of_a=events[1].version, as_of_b=events[2].version)
        assert explorer.diff_panel.value.endswith(rendering.diff_html(expected))
        assert "<b>stocks</b>: <code>50</code>" in explorer.state_panel.value
        explorer.slider.value = 0
        assert "<b>stocks</b>: <code>60</code>" in explorer.state_panel.value
    explorer.step(1)
    assert explorer.slider.value == 1
    explorer.step(-5)
    assert explorer.slider.value == 0
    explorer.close()


def test_switching_branches_and_the_graph(tutorial: Path) -> None:
    explorer = explore(tutorial)
    assert explorer.event_panel.value == ""  # filled when the events tab opens
    explorer.tabs.selected_index = EVENTS_TAB
    assert "has no events yet" in explorer.event_panel.value  # default's log is empty
    assert explorer.branch.options == ("default", "run-1", "run-2", "run-3")
    assert "4 branches, version 18" in explorer.title.value
    assert "internal" not in explorer.title.value  # default has writes: it is listed
    dots = explorer.graph.data[-1]
    assert len(dots.x) == 3 + 3 * 5  # default: two writes, a merge; each run: 3 events, 2 writes
    explorer.branch.value = "run-3"
    assert "<b>score</b>: <code>45</code>" in explorer.event_panel.value
    explorer.close()


def test_clicking_a_dot_selects_its_event(tutorial: Path) -> None:
    explorer = explore(tutorial)
    dots = explorer.graph.data[-1]
    target = next(
        i for i, data in enumerate(dots.customdata) if data[0] == "run-1" and data[1] == 1
    )
    click(explorer.graph, len(explorer.graph.data) - 1, target)
    assert explorer.branch.value == "run-1"
    assert explorer.slider.value == 1
    assert "<b>#1</b>" in explorer.event_panel.value
    merge = next(i for i, data in enumerate(dots.customdata) if data[0] == "default")
    click(explorer.graph, len(explorer.graph.data) - 1, merge)
    assert explorer.branch.value == "default"
    explorer.close()


def test_compare_two_points(tutorial: Path) -> None:
    explorer = explore(tutorial)
    explorer.compare_a.value = "run-1"
    explorer.compare_b.value = "run-2@12"
    explorer.compare()
    page = explorer.compare_panel.value
    assert "run-2@12" in page and "run-1@" in page
    assert "&quot;90&quot; &rarr; &quot;80&quot;" in page
    explorer.compare_b.value = "run-2@1"
    explorer.compare()
    assert "history_unavailable" in explorer.compare_panel.value
    explorer.compare_b.value = "nope@3"
    explorer.compare()
    assert "not_found.engine.branch" in explorer.compare_panel.value
    explorer.compare_b.value = "run-2@x"
    explorer.compare()
    assert "branch@version" in explorer.compare_panel.value
    explorer.close()


def test_bad_input_is_a_message_not_a_traceback(tmp_path: Path, tutorial: Path) -> None:
    (tmp_path / "not-a-db").mkdir()
    (tmp_path / "not-a-db" / "notes.txt").write_text("hello")
    for path in (tmp_path / "not-a-db", tmp_path / "missing"):
        explorer = explore(path)
        assert "cannot open" in explorer.message.value
        assert explorer.children == (explorer.title, explorer.message)  # no empty chart
    assert not (tmp_path / "missing").exists()
    explorer = explore(tutorial, branch="no-such-branch")
    assert "does not exist" in explorer.message.value
    assert explorer.branch.value == "default"
    with rewinddb.open(tmp_path / "empty") as db:
        explorer = explore(db)
        explorer.tabs.selected_index = EVENTS_TAB
        assert "no events yet" in explorer.event_panel.value
        assert explorer.slider.disabled


def test_agent_state_is_escaped(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.branches.fork("default", HOSTILE)
        view = db.at(HOSTILE)
        view.kv.put(HOSTILE, HOSTILE)
        view.events.append(HOSTILE, {HOSTILE: [HOSTILE]})
        explorer = explore(db, branch=HOSTILE)
        explorer.compare_a.value = "default"
        explorer.compare_b.value = HOSTILE
        explorer.compare()
        for html in (
            explorer.event_panel.value,
            explorer.state_panel.value,
            explorer.diff_panel.value,
            explorer.compare_panel.value,
            explorer.title.value,
        ):
            assert "<script" not in html and "<img" not in html
        hover = explorer.graph.data[-1].hovertext
        assert all("<script" not in text for text in hover)


def test_live_follows_events_another_process_appends(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.events.append("start", {})
        explorer = explore(db_path, live=True, poll_interval=0.1)
        explorer.tabs.selected_index = EVENTS_TAB
        assert explorer.slider.max == 0

        agent = (
            "import sys, rewinddb\n"
            "with rewinddb.open(sys.argv[1]) as db:\n"
            "    for n in range(3):\n"
            "        db.events.append('step', {'n': n})\n"
        )
        subprocess.run([sys.executable, "-c", agent, str(db_path)], check=True, timeout=60)
        deadline = time.monotonic() + 5
        while explorer.slider.max < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert explorer.slider.max == 3 and explorer.slider.value == 3  # it follows the end
        assert "step" in explorer.event_panel.value
        explorer.close()


def test_show_diff(tutorial: Path) -> None:
    with rewinddb.open(tutorial, readonly=True) as db:
        widget = show_diff(db, "run-1", "run-3")
        assert "&quot;90&quot; &rarr; &quot;45&quot;" in widget.value
        assert "not_found" in show_diff(db, "run-1", "nope").value


@pytest.mark.parametrize("events", [0, 1])
def test_a_branch_with_few_events(db_path: Path, events: int) -> None:
    with rewinddb.open(db_path) as db:
        for n in range(events):
            db.events.append("only", {"n": n})
        explorer = explore(db)
        explorer.tabs.selected_index = EVENTS_TAB
        assert explorer.slider.max == 0
        assert explorer.state_panel.value


def test_a_langgraph_thread_reads_as_text(tmp_path: Path) -> None:
    """The saver stores values as its serde encodes them; the widget shows them decoded."""
    from chat_graphs import chat_graph, thread

    from rewinddb.integrations.langgraph import RewindSaver

    path = tmp_path / "agent"
    with RewindSaver.from_path(path) as saver:
        chat_graph(saver).invoke({"log": [HOSTILE]}, thread("t"))
    explorer = explore(path, branch="lg/t")
    explorer.tabs.selected_index = EVENTS_TAB
    explorer.slider.value = explorer.slider.max
    panels = explorer.event_panel.value + explorer.diff_panel.value + explorer.state_panel.value
    assert "reply 1" in explorer.event_panel.value and "reply 1" in explorer.diff_panel.value
    assert "msgpack" not in panels
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in explorer.state_panel.value
    assert "<script>" not in panels
    explorer.close()


def test_a_plain_branchs_steps_are_its_commits(tutorial: Path) -> None:
    explorer = explore(tutorial, branch="run-2")
    assert explorer.tabs.selected_index == 1  # no conversation: the steps tab
    assert "holds no conversation" in text(explorer.transcript_panel.value)
    summary = text(explorer.summary_panel.value)
    assert "run-2 attempt finished" in summary and "fork of default at version 7" in summary
    assert 'outcome: {"score":80}' in summary
    labels = [label for label, _ in explorer.steps.options]
    assert labels == [
        "0. wrote task (on default)",
        "1. wrote portfolio (on default)",
        "◆ fork of default at version 7: 2. tool.call",  # the fork point
        "3. tool.call",
        "4. wrote portfolio",
        "5. wrote score",
        "6. run.end",
    ]
    assert explorer.steps_info.value == "7 steps"
    assert "step 6: run.end" in text(explorer.step_panel.value)  # the newest, opened
    with rewinddb.open(tutorial, readonly=True) as db:
        portfolio = next(v for label, v in explorer.steps.options if label == "4. wrote portfolio")
        explorer.steps.value = portfolio
        assert explorer.step_slider.value == 4
        step = text(explorer.step_panel.value)
        assert "step 4: wrote portfolio" in step and "changed since step 3: 2 rows" in step
        assert "~ json portfolio $.bonds 40 → 50" in step
        state = text(explorer.step_state_panel.value)
        assert "state as of step 4" in state and 'kv:task: "reduce the portfolio\'s risk"' in state
        assert "kv:score" not in state  # written by the step after
        assert db.at("run-2").snapshot(as_of=portfolio)["json"]["portfolio"]["stocks"] == 50
    assert explorer.show_hidden.disabled and explorer.show_hidden.description == "show 0 hidden"
    assert explorer.raw_panel.value == ""
    explorer.show_raw.value = True
    assert '"stocks": 50' in text(explorer.raw_panel.value)
    explorer.step_slider.value = 0
    first = text(explorer.step_panel.value)
    assert "inherited: written on default before this branch forked" in first
    assert "changed since the branch's start" in first
    explorer.close()


def test_clicking_a_dot_opens_its_step(tutorial: Path) -> None:
    explorer = explore(tutorial)
    dots = explorer.graph.data[-1]
    target = next(i for i, data in enumerate(dots.customdata) if tuple(data[:2]) == ("run-3", 2))
    click(explorer.graph, len(explorer.graph.data) - 1, target)
    assert explorer.branch.value == "run-3"
    assert "run.end" in text(explorer.step_panel.value)
    assert explorer.steps.value == dots.customdata[target][2]
    explorer.close()


def test_long_histories_page_their_steps(db: rewinddb.Database) -> None:
    for n in range(120):
        db.kv.put("n", n)
    explorer = explore(db)
    versions = [version for _, version in explorer.steps.options]
    assert versions == list(range(71, 121)) and explorer.steps_info.value == (
        "50 of 120 steps (the newest)"
    )
    assert explorer.newer_steps.disabled and not explorer.older_steps.disabled
    explorer.page_steps(-1)
    assert [v for _, v in explorer.steps.options] == list(range(21, 71))
    assert explorer.steps.value == 70 and "step 69" in text(explorer.step_panel.value)
    explorer.page_steps(-1)
    assert [v for _, v in explorer.steps.options] == list(range(1, 21))
    assert explorer.older_steps.disabled
    explorer.page_steps(1)
    explorer.page_steps(1)
    assert [v for _, v in explorer.steps.options] == list(range(71, 121))
    explorer.select_step(5)  # on another page: that page opens
    assert explorer.steps.value == 5 and explorer.steps.options[0][1] == 1
    assert "~ kv n $ 3 → 4" in text(explorer.step_panel.value)
    explorer.close()


def test_an_empty_default_is_hidden_unless_asked_for(db: rewinddb.Database) -> None:
    db.branches.fork("default", "run")
    db.at("run").events.append("run.end", {"answer": "done"})
    explorer = explore(db)
    assert explorer.branch.options == ("run",) and explorer.branch.value == "run"
    assert "(1 internal hidden)" in explorer.title.value
    assert list(explorer.graph.layout.yaxis.ticktext) == ["run"]
    assert "outcome: done" in text(explorer.summary_panel.value)
    explorer.all_branches.value = True
    assert explorer.branch.options == ("default", "run") and explorer.branch.value == "run"
    assert list(explorer.graph.layout.yaxis.ticktext) == ["default", "run"]
    assert explore(db, all_branches=True).branch.options == ("default", "run")
    asked = explore(db, branch="default")  # asked for by name: shown
    assert asked.branch.value == "default" and "default" in asked.branch.options
    assert "internal" in text(asked.summary_panel.value)


def test_compare_leads_with_where_attempts_part(tutorial: Path) -> None:
    explorer = explore(tutorial)
    explorer.compare_a.value = "run-1"
    explorer.compare_b.value = "run-3"
    explorer.compare()
    page = text(explorer.compare_panel.value)
    assert page.startswith("They share history up to default at version 2")
    assert "Event logs: 1 event in common; the first that differs is tool.call #1" in page
    assert 'outcome: {"score":90}' in page and 'outcome: {"score":45}' in page
    assert page.index("outcome") < page.index("state diff")
    explorer.close()


def test_panels_share_the_width_and_wrap(tutorial: Path) -> None:
    """The event and diff columns split the row and stack when narrow; cells wrap."""
    explorer = explore(tutorial, branch="run-1")
    for panel in (explorer.event_panel, explorer.diff_panel):
        assert (panel.layout.flex, panel.layout.min_width) == ("1 1 22em", "0")
    with rewinddb.open(tutorial, readonly=True) as db:
        db_diff = db.diff("run-1", "run-3")
    table = rendering.diff_html(db_diff)
    assert "overflow-wrap:anywhere" in table and "max-width:16em" in table
    assert "overflow-wrap:anywhere" in explorer.step_panel.value
    explorer.close()


# -- a LangGraph ReAct run (examples/langgraph_react.py) ---------------------------------


def test_a_react_thread_reads_as_a_conversation(react: ReactRun) -> None:
    explorer = explore(react.directory, branch=react.main_branch)
    assert explorer.tabs.selected_index == 0  # a conversation: it comes first
    chat = text(explorer.transcript_panel.value)
    assert f"human {react.question}" in chat and f"ai {react.answer}" in chat
    arguments = json.dumps(react.tool_args, separators=(",", ":"))
    card = f"tool call {react.tool} {react.tool_call_id} {arguments} result {react.tool_result}"
    assert card in chat
    assert chat.count(react.tool_result) == 2  # on the card and in the AI's answer only
    approval = f"approval · asked by approve {react.interrupt_question}"
    assert approval in chat and f"answered {react.resume}" in chat
    assert chat.index(react.question) < chat.index(approval) < chat.index(react.answer)
    summary = text(explorer.summary_panel.value)
    assert "thread finished" in summary and f"outcome: {react.answer}" in summary
    assert "msgpack" not in explorer.transcript_panel.value + explorer.step_panel.value
    explorer.close()


def test_internal_branches_are_hidden_unless_asked_for(react: ReactRun) -> None:
    explorer = explore(react.directory)
    assert explorer.branch.options == (react.main_branch, react.fork_branch)
    # The lanes are named as the overview names them: by the thread, a fork by the step
    # it edits (rewinddb.plotting.story_labels).
    lanes = list(explorer.graph.layout.yaxis.ticktext)
    assert len(lanes) == 2 and not any(lane.startswith("lg/") for lane in lanes)
    assert "edit of step" in lanes[1]
    assert "(2 internal hidden)" in explorer.title.value
    explorer.all_branches.value = True
    assert set(explorer.branch.options) == {
        "default",
        "lg-index",
        react.main_branch,
        react.fork_branch,
    }
    assert explorer.tabs.selected_index == 0  # the thread's conversation
    explorer.branch.value = "default"  # no conversation: its steps
    assert explorer.tabs.selected_index == 1 and "internal" in explorer.summary_panel.value
    explorer.close()


def test_a_checkpoint_opens_with_its_state_and_diff(react: ReactRun) -> None:
    explorer = explore(react.directory, branch=react.main_branch)
    labels = [label for label, _ in explorer.steps.options]
    assert labels[0] == "-1. input [input]" and "1. agent [loop] +1 message" in labels
    tools = next(v for label, v in explorer.steps.options if label.startswith("5. tools"))
    explorer.steps.value = tools
    step = text(explorer.step_panel.value)
    assert "step 5: tools" in step and "source loop; ran tools" in step
    assert f"added tool · {react.tool} answers {react.tool_call_id} {react.tool_result}" in step
    assert "bookkeeping rows hidden" in step and "channel_versions" not in step
    state = text(explorer.step_state_panel.value)
    assert "state as of step 5" in state and react.question in state and "msgpack" not in state
    hidden = int(explorer.show_hidden.description.split()[1])
    assert hidden > 5 and not explorer.show_hidden.disabled
    explorer.show_hidden.value = True
    assert "channel_versions" in text(explorer.step_panel.value)
    assert explorer.show_hidden.description == f"hide {hidden} hidden"
    explorer.show_raw.value = True
    assert "msgpack" in explorer.raw_panel.value  # as stored
    explorer.close()


def test_the_fork_shows_its_edited_call_and_compares_with_its_thread(react: ReactRun) -> None:
    explorer = explore(react.directory, branch=react.fork_branch)
    summary = text(explorer.summary_panel.value)
    assert "edit of step" in summary and f"outcome: {react.fork_answer}" in summary
    chat = text(explorer.transcript_panel.value)
    edited = json.dumps(react.edited_args, separators=(",", ":"))
    assert f"tool call {react.tool} {react.tool_call_id} {edited}" in chat
    assert react.fork_answer in chat and "(before the fork)" in chat
    assert "◆ fork point: edit of step" in chat
    labels = [label for label, _ in explorer.steps.options]
    edit = next(i for i, label in enumerate(labels) if label.startswith("◆ edit of step"))
    assert "[update]" in labels[edit] and f"(on {react.main_branch})" in labels[edit - 1]
    explorer.step_slider.value = edit
    step = text(explorer.step_panel.value)
    assert react.edited_checkpoint_id in step and "source update" in step
    assert edited in step  # the edit's diff: the call's new arguments
    explorer.compare_a.value = react.main_branch
    explorer.compare_b.value = react.fork_branch
    explorer.compare()
    page = text(explorer.compare_panel.value)
    assert page.startswith(f"They share history up to {react.main_branch} at version")
    assert f"outcome: {react.answer}" in page and f"outcome: {react.fork_answer}" in page
    assert "first own step: 5. update" in page
    explorer.close()


def test_bad_threads_are_messages(react: ReactRun, tmp_path: Path) -> None:
    explorer = explore(react.directory, branch="lg/no-such-thread")
    assert "does not exist" in explorer.message.value
    assert explorer.branch.value == react.main_branch
    copy = tmp_path / "agent"
    shutil.copytree(react.directory, copy)
    with rewinddb.open(copy) as db:  # channels and a checkpoint no serde wrote
        thread = db.at(react.main_branch)
        thread.kv.put("channel/messages", {"items": ["msgpack:////", "pickle:AAAA", 12, HOSTILE]})
        thread.kv.put("checkpoint", {"checkpoint": ["custom", HOSTILE]})
    explorer = explore(copy, branch=react.main_branch)
    panels = (
        explorer.summary_panel.value
        + explorer.transcript_panel.value
        + explorer.step_panel.value
        + explorer.step_state_panel.value
    )
    assert "<script" not in panels and "&lt;script&gt;" in panels
    explorer.close()
