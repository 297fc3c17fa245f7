"""A subgraph that ran on a fork comes from that fork, and a step whose parent a cut
removed is named by the node that ran.

A subgraph's branch is a root branch of its own: run on a time-travel fork of its
thread, its story says it came from that attempt (the fork's branch, its fork point and
the fork's checkpoint the subgraph ran from). After retention (``db.retain`` then
``db.gc()``, or ``RewindSaver.prune``) cut a thread's history, a step whose parent
checkpoint (and that checkpoint's pending writes) is gone is named from its own record:
the nodes whose versions seen are the step before's."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

import rewinddb
from rewinddb import story
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.presenters import Fork
from rewinddb.web import create_app
from rewinddb.web.urls import branch_url, step_url
from tests.helpers.chat_graphs import send_trip_graph, thread


def _trip(saver: RewindSaver) -> Any:
    """planner -> summarizer (a subgraph: its own namespace's checkpoints) -> finalize."""

    def summarize(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"summary of {len(state['messages'])}")]}

    inner = StateGraph(MessagesState).add_node("summarize_inner", summarize)
    inner.add_edge(START, "summarize_inner")
    builder = StateGraph(MessagesState)
    builder.add_node(
        "planner", lambda state: {"messages": [AIMessage(f"plan: {state['messages'][-1].text}")]}
    )
    builder.add_node("summarizer", inner.compile())
    builder.add_node("finalize", lambda state: {"messages": [AIMessage("booked")]})
    builder.add_edge(START, "planner").add_edge("planner", "summarizer")
    builder.add_edge("summarizer", "finalize")
    return builder.compile(checkpointer=saver)


@pytest.fixture(scope="module")
def forked_trip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two turns of the trip, then time travel: the second turn's input edited and run
    again from there (a fork, which enters the subgraph again)."""
    path = tmp_path_factory.mktemp("forked") / "agent"
    with rewinddb.open(path) as db:
        graph = _trip(RewindSaver(db))
        for turn in ("Lisbon", "Porto"):
            graph.invoke({"messages": [HumanMessage(turn)]}, thread("trip"))
        history = list(graph.get_state_history(thread("trip")))
        target = next(h for h in history if h.next == ("planner",))
        forked = graph.update_state(target.config, {"messages": [HumanMessage("Faro")]})
        graph.invoke(None, forked)
    return path


def _copy(source: Path, tmp_path: Path) -> Path:
    path = tmp_path / "agent"
    shutil.copytree(source, path)
    return path


def _subgraphs(db: rewinddb.Database) -> dict[str, story.Attempt]:
    return {a.branch.name: a for a in story.attempts(db) if a.summary.kind == "subgraph"}


def _root(saver: RewindSaver, branch: str) -> str:
    """The root checkpoint (of the thread's namespace) a subgraph branch's run began at."""
    config = {"configurable": {"thread_id": "trip", "checkpoint_ns": branch.split("/", 2)[2]}}
    (root,) = {c.metadata["parents"][""] for c in saver.list(config)}
    return str(root)


# -- 1. a subgraph run on a fork comes from that fork -----------------------------------


def test_a_subgraph_that_ran_on_a_fork_comes_from_that_fork(
    forked_trip: Path, tmp_path: Path
) -> None:
    with rewinddb.open(_copy(forked_trip, tmp_path)) as db:
        saver = RewindSaver(db)
        (fork,) = [b.name for b in db.branches.list() if b.name.startswith("lg/trip~")]
        forked_at = db.branches.get(fork).forked_at
        steps = story.branch_story(db, fork).steps.steps
        fork_steps = {s.id: s for s in steps if not s.inherited}
        fork_title = story.branch_story(db, fork).summary
        subgraphs = _subgraphs(db)
        assert len(subgraphs) == 3  # the two turns' runs, and the fork's
        on_fork = {name: _root(saver, name) in fork_steps for name in subgraphs}
        assert sorted(on_fork.values()) == [False, False, True]
        for name, attempt in subgraphs.items():
            told = story.branch_story(db, name).summary.fork
            assert attempt.summary.fork == told
            if not on_fork[name]:
                assert told is None, (name, told)  # (the thread's main line: no fork)
                continue
            root = fork_steps[_root(saver, name)]
            assert not root.inherited
            assert fork_title.fork is not None
            assert told == Fork(
                fork,
                forked_at,
                "fork",
                f"ran in {fork_title.title} at step {root.number} ({fork_title.fork.label})",
                step=root.version,
            )
            # The explorer's branch page links the fork's step the subgraph ran from.
            with TestClient(create_app(db.path), base_url="http://localhost") as client:
                page = client.get(branch_url(name)).text
            assert f'href="{step_url(fork, root.version)}"' in page
            assert "ran in trip~" in page


def test_a_subgraph_on_a_fork_inherits_nothing_its_mark_says_so(
    forked_trip: Path, tmp_path: Path
) -> None:
    """The fork point's mark on a subgraph's page (web and notebook) says what is
    below it, its own, and not that what is above was inherited: a subgraph's branch
    inherits nothing. A thread's fork, which inherits the steps before it, says both."""
    from rewinddb.notebook import _html

    with rewinddb.open(_copy(forked_trip, tmp_path)) as db:
        (fork,) = [b.name for b in db.branches.list() if b.name.startswith("lg/trip~")]
        (on_fork,) = [n for n, a in _subgraphs(db).items() if a.summary.fork is not None]
        told = story.branch_story(db, on_fork)
        assert told.summary.fork is not None
        marks = [i for i in story.step_items(told.steps, told.summary.fork, newest=True)]
        assert [i.after_inherited for i in marks if i.kind == "fork"] == [False]
        chat = story.chat(told.transcript, told.summary.fork) if told.transcript else []
        assert all(not i.after_inherited for i in chat if i.kind == "fork")
        thread_told = story.branch_story(db, fork)
        thread_marks = story.step_items(thread_told.steps, thread_told.summary.fork, newest=True)
        assert [i.after_inherited for i in thread_marks if i.kind == "fork"] == [True]
        with TestClient(create_app(db.path), base_url="http://localhost") as client:
            sub_page = client.get(branch_url(on_fork)).text
            fork_page = client.get(branch_url(fork)).text
        assert "fork point" in sub_page and "below, this branch" in sub_page
        assert "inherited from" not in sub_page
        assert "above, inherited from" in fork_page
        mark = _html.fork_mark(told.summary.fork, after_inherited=False)
        assert "inherited" not in mark and "below, this branch" in mark


def test_a_subgraph_fork_whose_root_checkpoint_was_cut_names_no_step(
    forked_trip: Path, tmp_path: Path
) -> None:
    """Retention may cut the fork's checkpoint the subgraph ran from: the subgraph still
    comes from the fork, with no step to open."""
    with rewinddb.open(_copy(forked_trip, tmp_path)) as db:
        db.retain("lg/*", keep_last=1)
        db.gc()
        forks = [a.summary.fork for a in _subgraphs(db).values()]
        (told,) = [fork for fork in forks if fork is not None]
        assert told.parent.startswith("lg/trip~") and told.step is None
        assert told.label.startswith("ran in trip~") and " at step " not in told.label


# -- 2. a step whose parent a cut removed is named by the node that ran -------------------


def _nodes_by_id(db: rewinddb.Database) -> dict[str | None, tuple[str, ...]]:
    """The nodes each ``loop`` step of each branch is told to have run, by checkpoint id
    (a checkpoint's id is unique: an inherited step is told as where it was written)."""
    found = {}
    for attempt in story.attempts(db):
        for step in story.branch_story(db, attempt.branch.name).steps.steps:
            if step.source == "loop":
                found[step.id] = step.nodes
    return found


def _after_cut(db: rewinddb.Database) -> list[tuple[str, story.Step]]:
    """The ``loop`` steps whose parent checkpoint the story no longer lists before them."""
    cut = []
    for attempt in story.attempts(db):
        steps = story.branch_story(db, attempt.branch.name).steps.steps
        for index, step in enumerate(steps):
            before = steps[index - 1] if index else None
            # (a step listed below its branch's cut is the state kept there: read there)
            at = max(step.version, db.branches.kept_from(step.branch) or 0)
            record = db.at(step.branch).kv.history("checkpoint", as_of=at, limit=1)
            parent = record[-1].value.get("parent") if record else None
            if step.source == "loop" and (before is None or before.id != parent):
                cut.append((attempt.branch.name, step))
    return cut


@pytest.mark.parametrize("keep", [1, 2, 3])
def test_a_step_whose_parent_retention_cut_is_named_by_its_node(
    forked_trip: Path, tmp_path: Path, keep: int
) -> None:
    with rewinddb.open(_copy(forked_trip, tmp_path)) as db:
        whole = _nodes_by_id(db)
        db.retain("lg/*", keep_last=keep)
        db.gc()
        cut = _after_cut(db)
        assert cut  # (each branch's first kept step at least)
        for name, step in cut:
            ran = whole[step.id]
            assert ran and step.nodes == ran, (name, step)
            assert step.label == ", ".join("start" if n == "__start__" else n for n in ran)
            detail = story.step_detail(db, name, step.version)
            assert detail.step.nodes == ran


def test_a_pruned_thread_rewritten_anew_names_its_kept_step(
    forked_trip: Path, tmp_path: Path
) -> None:
    """``prune`` writes the kept checkpoint anew (a kept checkpoint lies on the fork):
    its parent is no checkpoint of the branch, and it is named by the node that ran."""
    with rewinddb.open(_copy(forked_trip, tmp_path)) as db:
        whole = _nodes_by_id(db)
        RewindSaver(db).prune(["trip"], strategy="keep_latest")
        (step,) = story.branch_story(db, "lg/trip").steps.steps
        assert step.nodes == whole[step.id] == ("finalize",)
        assert step.label == "finalize"


def test_a_send_step_after_a_cut_names_no_node_it_did_not_run(db: rewinddb.Database) -> None:
    """``Send`` tasks see no channel versions: a step they alone made, its parent cut,
    names no node rather than the wrong one."""
    graph = send_trip_graph(RewindSaver(db), fails=0)
    graph.invoke({"messages": [HumanMessage("Rome")]}, thread("rome"))
    whole = _nodes_by_id(db)
    assert ("tool_worker",) in whole.values()
    for keep in (3, 2, 1):  # (each cut more)
        db.retain("lg/*", keep_last=keep)
        db.gc()
        for _, step in _after_cut(db):
            assert step.nodes in (whole[step.id], ()), step
