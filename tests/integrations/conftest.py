"""Shared fixtures for the integration tests: a fresh saver on a temporary database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver


@pytest.fixture
def db(tmp_path: Path) -> Iterator[rewinddb.Database]:
    with rewinddb.open(tmp_path / "agent") as database:
        yield database


@pytest.fixture
def saver(db: rewinddb.Database) -> RewindSaver:
    return RewindSaver(db)
