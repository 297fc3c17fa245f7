"""Real LangGraph graphs on ``RewindSaver``: runs, interrupts, subgraphs, time travel."""

from __future__ import annotations

import asyncio

import pytest
from chat_graphs import State, chat_graph, thread
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver


def test_invoke_stream_and_ainvoke_share_one_thread(
    saver: RewindSaver, db: rewinddb.Database
) -> None:
    graph = chat_graph(saver)
    graph.invoke({"log": ["hi"]}, thread("t1"))
    list(graph.stream({"log": ["again"]}, thread("t1")))
    asyncio.run(graph.ainvoke({"log": ["more"]}, thread("t1")))
    assert graph.get_state(thread("t1")).values["log"] == [
        "hi",
        "reply 1",
        "again",
        "reply 3",
        "more",
        "reply 5",
    ]
    assert "lg/t1" in db.branches
    assert [b.name for b in db.branches.list() if b.name.startswith("lg/t1")] == ["lg/t1"]
    history = list(graph.get_state_history(thread("t1")))
    assert len(history) == 9  # input + loop checkpoint... three checkpoints per turn


def test_interrupt_and_resume(saver: RewindSaver) -> None:
    def ask(state: State) -> dict:
        answer = interrupt("approve?")
        return {"log": [f"human said {answer}"]}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=saver)
    result = graph.invoke({"log": ["start"]}, thread("hitl"))
    assert "__interrupt__" in result
    assert graph.get_state(thread("hitl")).next == ("ask",)
    final = graph.invoke(Command(resume="yes"), thread("hitl"))
    assert final["log"] == ["start", "human said yes"]


def test_subgraph_checkpoints_have_their_namespace(
    saver: RewindSaver, db: rewinddb.Database
) -> None:
    def inner_step(state: State) -> dict:
        answer = interrupt("inner?")
        return {"log": [f"inner {answer}"]}

    inner = StateGraph(State)
    inner.add_node("inner_step", inner_step)
    inner.add_edge(START, "inner_step")
    inner.add_edge("inner_step", END)
    builder = StateGraph(State)
    builder.add_node("sub", inner.compile())
    builder.add_edge(START, "sub")
    builder.add_edge("sub", END)
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"log": ["go"]}, thread("nested"))
    state = graph.get_state(thread("nested"), subgraphs=True)
    assert state.tasks[0].state is not None
    names = [b.name for b in db.branches.list() if b.name.startswith("lg/nested/")]
    assert names and names[0].startswith("lg/nested/sub:")
    final = graph.invoke(Command(resume="ok"), thread("nested"))
    assert final["log"][-1] == "inner ok"


def test_time_travel_makes_a_branch_tree(saver: RewindSaver, db: rewinddb.Database) -> None:
    graph = chat_graph(saver)
    for word in ("a", "b", "c"):
        graph.invoke({"log": [word]}, thread("tt"))
    history = list(graph.get_state_history(thread("tt")))
    past = next(s for s in history if s.values.get("log") == ["a", "reply 1"])
    # Re-run from a past checkpoint: the new checkpoints go on a fork.
    graph.invoke({"log": ["x"]}, past.config)
    # update_state on a past checkpoint: another fork.
    graph.update_state(past.config, {"log": ["edited"]})
    branches = {b.name: b for b in db.branches.list() if b.name.startswith("lg/tt")}
    forks = [b for name, b in branches.items() if name != "lg/tt"]
    assert len(forks) == 2
    assert all(b.parent == "lg/tt" and b.name.startswith("lg/tt~") for b in forks)
    newest = graph.get_state(thread("tt"))
    assert newest.values["log"] == ["a", "reply 1", "edited"]
    diff = db.diff("lg/tt", forks[0].name)
    assert any(change.key == "channel/log" for change in diff)
    # The main line is untouched.
    main = graph.get_state(
        {"configurable": {"thread_id": "tt", **history[0].config["configurable"]}}
    )
    assert main.values["log"][-1] == "reply 5"


def test_bad_configs_say_what_is_missing(saver: RewindSaver) -> None:
    with pytest.raises(ValueError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(ValueError, match="configurable"):
        saver.get_tuple({})  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="checkpoint_id"):
        saver.put_writes({"configurable": {"thread_id": "t"}}, [("a", 1)], "task")
    with pytest.raises(ValueError, match="strategy"):
        saver.prune(["t"], strategy="everything")
    graph = chat_graph(saver)
    with pytest.raises(ValueError, match="thread_id"):
        graph.invoke({"log": ["hi"]}, {"configurable": {}})


def test_message_list_shares_storage(saver: RewindSaver, db: rewinddb.Database) -> None:
    graph = chat_graph(saver)
    for _ in range(3):
        graph.invoke({"log": ["x" * 600]}, thread("big"))
    stored = db.at("lg/big").kv.get("channel/log")
    assert stored["type"] == "list" and len(stored["items"]) == 6
