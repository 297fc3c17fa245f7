"""The notebook widget, driven in plain Python (no kernel): traits in, panels out."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import rewinddb
from rewinddb import rendering
from rewinddb.notebook import explore, show_diff

from .conftest import click

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
    assert explorer.branch.options == ("default", "run-1", "run-2", "run-3")
    assert "4 branches, version 18" in explorer.title.value
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
    assert not (tmp_path / "missing").exists()
    explorer = explore(tutorial, branch="no-such-branch")
    assert "does not exist" in explorer.message.value
    assert explorer.branch.value == "default"
    with rewinddb.open(tmp_path / "empty") as db:
        explorer = explore(db)
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
    explorer.slider.value = explorer.slider.max
    panels = explorer.event_panel.value + explorer.diff_panel.value + explorer.state_panel.value
    assert "reply 1" in explorer.event_panel.value and "reply 1" in explorer.diff_panel.value
    assert "msgpack" not in panels
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in explorer.state_panel.value
    assert "<script>" not in panels
    explorer.close()
