"""Failed tasks told one by one: a functional-API ``@task`` that fails is told once, by
the call that raised (not as ``send``, nor again as its entrypoint's error), and parallel
``Send`` tasks that fail with different errors in one superstep each fail their own tool
call with their own error, as LangGraph reports them (``get_state(...).tasks``)."""

from __future__ import annotations

from typing import Any

import pytest
from chat_graphs import send_errors_graph, thread
from langgraph.func import entrypoint, task

import rewinddb
from rewinddb import story
from rewinddb.integrations.langgraph import RewindSaver

WEATHER = "ValueError('weather service timeout')"
FLIGHTS = "RuntimeError('no flights to Rome')"


def _trip(saver: RewindSaver) -> Any:
    """An entrypoint that calls two tasks: the hotel one answers, the weather one raises."""

    @task
    def lookup_hotel(city: str) -> str:
        return f"Hotel in {city}"

    @task
    def lookup_weather(city: str) -> str:
        raise ValueError("weather service timeout")

    @entrypoint(checkpointer=saver)
    def trip(city: str) -> dict:
        hotel = lookup_hotel(city)
        weather = lookup_weather(city)
        return {"hotel": hotel.result(), "weather": weather.result()}

    return trip


def _text(error: Any) -> str:
    """A task's error as LangGraph reports it (read back from a checkpoint: its text)."""
    return error if isinstance(error, str) else repr(error)


def _errors(told: Any) -> list[tuple[str | None, str]]:
    return [(m.name, m.text) for s in told.steps.steps for m in s.messages if m.role == "error"]


def test_a_failed_task_is_told_once_by_its_call(db: rewinddb.Database) -> None:
    """LangGraph reports the entrypoint's task failed with the weather task's error; the
    story tells that failure once, named by the call that raised it (the entrypoint's
    second: LangGraph gives a checkpointer no task function's name), never ``send``."""
    trip = _trip(RewindSaver(db))
    with pytest.raises(ValueError, match="weather service timeout"):
        trip.invoke("Rome", thread("fn"))
    tasks = trip.get_state(thread("fn")).tasks
    assert [(t.name, _text(t.error)) for t in tasks] == [("trip", WEATHER)]
    told = story.branch_story(db, "lg/fn")
    assert told.summary.status == "failed"
    assert _errors(told) == [("task 2 of trip", WEATHER)]


def test_parallel_tasks_each_fail_with_their_own_error(db: rewinddb.Database) -> None:
    """Two ``Send`` tool workers fail in one superstep, each with its own error: each
    failed call has its task's error (on its step and in the transcript), and each
    task's error message is its own."""
    graph = send_errors_graph(RewindSaver(db))
    # LangGraph saves the errors of tasks that fail together only as far as it gets
    # before it stops the superstep: now and then the second error is lost. Run again,
    # on a new thread, until LangGraph reports both (the story is then checked on it).
    for attempt in range(20):
        name = f"errors-{attempt}"
        with pytest.raises((ValueError, RuntimeError)):
            graph.invoke({"messages": [("user", "Rome")]}, thread(name))
        state = graph.get_state(thread(name))
        reported = sorted(_text(t.error) for t in state.tasks if t.error)
        if reported == sorted([WEATHER, FLIGHTS]):
            break
    assert reported == sorted([WEATHER, FLIGHTS])
    expected = {
        "call_hotels": "Hotel Avenida",
        "call_weather": f"failed: {WEATHER}",
        "call_flights": f"failed: {FLIGHTS}",
    }
    told = story.branch_story(db, f"lg/{name}")
    checkpoint = state.config["configurable"]["checkpoint_id"]
    (asked,) = [s for s in told.steps.steps if s.id == checkpoint]
    assert {c.id: c.result for m in asked.messages for c in m.tool_calls} == expected
    errors = sorted((m.name, m.text) for m in asked.messages if m.role == "error")
    assert errors == sorted([("tool_worker", WEATHER), ("tool_worker", FLIGHTS)])
    assert told.transcript is not None
    cards = {c.id: c.result for m in told.transcript.messages for c in m.tool_calls}
    assert cards == expected
