"""Fixtures shared by every suite: a real rewinddb database in a temp directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import rewinddb


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "agent"


@pytest.fixture
def db(db_path: Path) -> Iterator[rewinddb.Database]:
    with rewinddb.open(db_path) as database:
        yield database
