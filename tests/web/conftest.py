"""Web fixtures: the demo database and FastAPI TestClients on it (read-only, and with
writes allowed), the ReAct run (a LangGraph thread and its time-travel fork) and a way
to record a scripted conversation of one's own."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from react_run import ReactRun, record_react_run

from rewinddb.demo import build_demo
from rewinddb.web import create_app


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("web") / "demo"
    build_demo(path).close()
    return path


@pytest.fixture(scope="module")
def client(demo_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(demo_path), base_url="http://localhost") as test_client:
        yield test_client


@pytest.fixture
def writable(tmp_path: Path) -> Iterator[TestClient]:
    path = tmp_path / "demo"
    build_demo(path).close()
    with TestClient(
        create_app(path, allow_writes=True), base_url="http://localhost"
    ) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def react(tmp_path_factory: pytest.TempPathFactory) -> ReactRun:
    """The ReAct run (examples/langgraph_react.py) recorded once per module."""
    return record_react_run(tmp_path_factory.mktemp("react") / "agent")


@pytest.fixture(scope="module")
def react_client(react: ReactRun) -> Iterator[TestClient]:
    with TestClient(create_app(react.directory), base_url="http://localhost") as test_client:
        yield test_client


@pytest.fixture
def record_chat() -> Callable[..., str]:
    """``record_chat(path, turns, thread_id="chat")``: see ``_record_chat``."""
    return _record_chat


def _record_chat(path: Path, turns: Sequence[Sequence[Any]], thread_id: str = "chat") -> str:
    """A LangGraph thread recorded with RewindSaver: each turn's input messages, then the
    scripted AI reply ``agent`` gives (the turn's last item: an ``AIMessage``). Returns
    the thread's branch name."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    from rewinddb.integrations.langgraph import RewindSaver

    replies: list[AIMessage] = []

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [replies.pop(0)]}

    config = {"configurable": {"thread_id": thread_id}}
    with RewindSaver.from_path(path) as saver:
        builder = StateGraph(MessagesState)
        builder.add_node("agent", agent)
        builder.add_edge(START, "agent")
        graph = builder.compile(checkpointer=saver)
        for *said, reply in turns:
            replies.append(reply)
            graph.invoke({"messages": list(said)}, config)
        # The saver escapes what a thread id may not hold in a branch name.
        (name,) = (b.name for b in saver.db.branches.list() if b.name.startswith("lg/"))
    return name
