"""The ``langgraph-checkpoint-conformance`` suite against ``RewindSaver``."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.spec.test_copy_thread import ALL_COPY_THREAD_TESTS
from langgraph.checkpoint.conformance.spec.test_delete_for_runs import (
    ALL_DELETE_FOR_RUNS_TESTS,
)
from langgraph.checkpoint.conformance.spec.test_delete_thread import ALL_DELETE_THREAD_TESTS
from langgraph.checkpoint.conformance.spec.test_get_tuple import ALL_GET_TUPLE_TESTS
from langgraph.checkpoint.conformance.spec.test_list import ALL_LIST_TESTS
from langgraph.checkpoint.conformance.spec.test_prune import ALL_PRUNE_TESTS
from langgraph.checkpoint.conformance.spec.test_put import ALL_PUT_TESTS
from langgraph.checkpoint.conformance.spec.test_put_writes import ALL_PUT_WRITES_TESTS

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver

CAPABILITIES = {
    "put": ALL_PUT_TESTS,
    "put_writes": ALL_PUT_WRITES_TESTS,
    "get_tuple": ALL_GET_TUPLE_TESTS,
    "list": ALL_LIST_TESTS,
    "delete_thread": ALL_DELETE_THREAD_TESTS,
    "delete_for_runs": ALL_DELETE_FOR_RUNS_TESTS,
    "copy_thread": ALL_COPY_THREAD_TESTS,
    "prune": ALL_PRUNE_TESTS,
}


@checkpointer_test(name="RewindSaver")
async def rewind_saver() -> AsyncIterator[RewindSaver]:
    """A fresh saver on a fresh database in a temporary directory."""
    with tempfile.TemporaryDirectory() as tmp, RewindSaver.from_path(Path(tmp) / "db") as saver:
        yield saver


def test_every_capability_passes() -> None:
    report = asyncio.run(validate(rewind_saver)).to_dict()["results"]
    assert set(report) == set(CAPABILITIES)
    for name, result in report.items():
        assert result["detected"], f"{name} not detected"
        assert result["tests_skipped"] == 0, f"{name} skipped"
        assert result["tests_failed"] == 0, f"{name}: {result['failures']}"
        assert result["passed"] is True, name
        assert result["tests_passed"] == len(CAPABILITIES[name]), name


SPECS = [
    pytest.param(spec, id=f"{name}::{spec.__name__}")
    for name, specs in CAPABILITIES.items()
    for spec in specs
]


@pytest.mark.parametrize("spec", SPECS)
def test_spec(spec: Callable[[RewindSaver], Awaitable[None]], tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "db") as db:
        asyncio.run(spec(RewindSaver(db)))
