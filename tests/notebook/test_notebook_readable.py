"""A LangGraph thread in the notebook reads in the agent's words, as on the web explorer:
a diff's and a view's HTML show values decoded (no serde ``msgpack:`` text) and channels
by name (not the stored wrapper: ``items``, ``plain``, ``version``); the widget's step
rows and ``show_diff`` are named by channel, at paths in the value's own shape, with the
bookkeeping folded away; a step's count is of the messages it added (a failed task is
told apart, not counted as one)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from chat_graphs import send_trip_graph, thread

import rewinddb
from rewinddb import story
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.notebook import explore, show_diff

from .conftest import text

THREAD = "trip"
BRANCH = f"lg/{THREAD}"
#: What a serde encoding looks like as stored text (``msgpack:`` and base64).
ENCODED = re.compile(r"msgpack:|[A-Za-z0-9+/]{40,}")


@pytest.fixture(scope="module")
def trip(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """A thread whose tool call failed once and ran again; LangGraph's own count of the
    messages at each checkpoint (``get_state_history``), by step."""
    path = tmp_path_factory.mktemp("trip") / "agent"
    with RewindSaver.from_path(path) as saver:
        graph = send_trip_graph(saver)
        with pytest.raises(ValueError, match="weather service timeout"):
            graph.invoke({"messages": [("user", "Rome")]}, thread(THREAD))
        graph.invoke(None, thread(THREAD))
        counts = {
            s.metadata["step"]: len(s.values.get("messages", []))
            for s in graph.get_state_history(thread(THREAD))
        }
    return path, counts


def _started(db: rewinddb.Database) -> int:
    """The version of the thread's first checkpoint that holds a message (the input)."""
    return next(s.version for s in story.branch_story(db, BRANCH).steps.steps if s.messages)


def _shown(page: str) -> str:
    """The text of a diff before its folded bookkeeping rows (``show N hidden``)."""
    told = text(page)
    return re.split(r"show \d+ hidden", told)[0]


def test_a_diffs_html_shows_channels_decoded(trip: tuple[Path, dict[str, int]]) -> None:
    path, _ = trip
    with rewinddb.open(path, readonly=True) as db:
        head = db.at(BRANCH).info().head
        whole = db.diff(BRANCH, BRANCH, as_of_a=1, as_of_b=head)._repr_html_()
        grew = db.diff(BRANCH, BRANCH, as_of_a=_started(db), as_of_b=head)._repr_html_()
        view = db.at(BRANCH)._repr_html_()
    for page in (whole, grew):
        shown = _shown(page)
        assert "Planning trip: Rome" in shown, shown  # (a long list is cut)
        assert not ENCODED.search(text(page)), text(page)
        assert "channel/" not in shown and "$.version" not in shown and "$.plain" not in shown
        assert " messages " in shown  # the channel's name
        assert re.search(r"\(and \d+ hidden\)", shown)  # the bookkeeping, folded
    # A channel's first write reads as its value, not the stored wrapper.
    assert '"items"' not in _shown(whole) and "+ messages messages " in _shown(whole)
    assert "~ messages $.items[3] tool: Hotel Avenida in Rome" not in _shown(grew)
    assert "tool: Hotel Avenida in Rome" in _shown(grew)
    state = text(view)
    assert "messages: [4 items]" in state and "human: Rome" in state
    assert not ENCODED.search(state), state
    assert not re.search(r'\b(items|plain|version): |type: "list"', state), state


def test_show_diff_reads_as_the_web_compare_page(trip: tuple[Path, dict[str, int]]) -> None:
    path, _ = trip
    with rewinddb.open(path, readonly=True) as db:
        head = db.at(BRANCH).info().head
        shown_diff = show_diff(db, BRANCH, BRANCH, as_of_a=_started(db), as_of_b=head).value
    shown = _shown(shown_diff)
    assert "+ messages messages[1] ai: Planning trip: Rome" in shown, shown
    assert "+ messages messages[2] tool: Hotel Avenida in Rome" in shown
    assert "$." not in shown and "channel/" not in shown and "kv " not in shown
    assert not ENCODED.search(text(shown_diff))
    assert re.search(r"\(and \d+ hidden\)", shown)
    # The thread by its thread id, as ``rewinddb story`` and ``rewinddb diff`` name it.
    with rewinddb.open(path, readonly=True) as db:
        by_title = show_diff(db, THREAD, THREAD, as_of_a=_started(db), as_of_b=head).value
        assert "nope" in show_diff(db, THREAD, "nope").value
    assert by_title == shown_diff


def test_a_steps_rows_are_named_by_channel(trip: tuple[Path, dict[str, int]]) -> None:
    path, _ = trip
    explorer = explore(path, branch=BRANCH)
    planner = next(v for label, v in explorer.steps.options if ". planner" in label)
    explorer.steps.value = planner
    step = text(explorer.step_panel.value)
    assert "+ messages messages[1] ai: Planning trip: Rome" in step, step
    assert "kv messages" not in step and "channel/" not in step
    explorer.compare_a.value = f"{BRANCH}@{_started(explorer.db)}"
    explorer.compare_b.value = BRANCH
    explorer.compare()
    compared = _shown(explorer.compare_panel.value.split("state of each")[0])
    assert "+ messages messages[2] tool: Hotel Avenida in Rome" in compared
    assert "$." not in compared.split("state diff")[1]
    explorer.close()


def test_a_step_counts_the_messages_it_added(trip: tuple[Path, dict[str, int]]) -> None:
    """LangGraph's history: the planner's checkpoint holds one message more than the
    input's; its failed task is said apart."""
    path, counts = trip
    explorer = explore(path, branch=BRANCH)
    labels = [label for label, _ in explorer.steps.options]
    planner = next(label for label in labels if ". planner" in label)
    number = int(planner.split(".")[0])
    assert counts[number] - counts[number - 1] == 1
    assert planner == f"{number}. planner [loop] +1 message (1 task failed)", labels
    explorer.close()
