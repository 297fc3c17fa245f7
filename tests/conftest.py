"""Fixtures shared by every suite: a real rewinddb database in a temp directory, and a
real PostgreSQL server (started once per test session) for the PostgreSQL backend."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import rewinddb
from rewinddb import RewindError
from rewinddb.testing import PostgresServer


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "agent"


@pytest.fixture
def db(db_path: Path) -> Iterator[rewinddb.Database]:
    with rewinddb.open(db_path) as database:
        yield database


# -- PostgreSQL ----------------------------------------------------------------------

#: The throwaway server runs without durability: tests never crash it, and it is faster.
FAST = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (Debian's binaries), or the server
    ``REWINDDB_TEST_POSTGRES_URL`` names; each test makes its own schema."""
    try:
        server = PostgresServer(url=os.environ.get("REWINDDB_TEST_POSTGRES_URL"), settings=FAST)
    except RewindError as error:
        if error.code != "missing.postgresql":
            raise
        pytest.fail(
            f"{error.message}. Run .ci/run, which installs Debian's postgresql package, "
            "or set REWINDDB_TEST_POSTGRES_URL"
        )
    with server:
        yield server


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> str:
    """A URL for a new, empty rewinddb database on the session's PostgreSQL server."""
    return postgres.new_schema()
