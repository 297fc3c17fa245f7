"""Backend fixtures: every test that takes ``db`` (or ``db_target``) runs on both
backends, SQLite and PostgreSQL; ``refused`` checks that bad input raises and writes
nothing."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, cast

import pytest

import rewinddb

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def db_target(request: pytest.FixtureRequest, db_path: Path) -> str | Path:
    """Where a new database goes: a directory, or a PostgreSQL URL (a fresh schema)."""
    if request.param == "sqlite":
        return db_path
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def db(db_target: str | Path) -> Iterator[rewinddb.Database]:
    with rewinddb.open(db_target) as database:
        yield database


def everything(db: rewinddb.Database) -> dict[str, Any]:
    """All state of every branch, every event and the clock: what must not change."""
    branches = db.branches.list()
    return {
        "version": db.version,
        "branches": branches,
        "state": {
            b.name: (db.at(b.name).snapshot(), [i.event for i in db.at(b.name).events.list()])
            for b in branches
        },
        "commits": db.commits(),
    }


Refused = Callable[..., AbstractContextManager[pytest.ExceptionInfo[Any]]]


@pytest.fixture
def refused() -> Refused:
    """``with refused(db, Error, "code"):`` the block raises and leaves ``db`` unchanged."""

    @contextmanager
    def check(
        db: rewinddb.Database, error: type[Exception], code: str | None = None
    ) -> Iterator[pytest.ExceptionInfo[Any]]:
        before = everything(db)
        with pytest.raises(error) as info:
            yield info
        assert isinstance(info.value, rewinddb.RewindError), info.value
        if code is not None:
            assert info.value.code == code, info.value
        assert everything(db) == before

    return check


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs of its own, to fill up (mounting needs root, as CI and these
    machines have: without it the test fails rather than pass unchecked)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"cannot mount a small tmpfs to fill: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


# -- what a call reads (SQLite) ------------------------------------------------------


@contextmanager
def statements(db: rewinddb.Database) -> Iterator[list[str]]:
    """The SQL statements a SQLite database runs inside the block."""
    seen: list[str] = []
    raw = cast(Any, db._engine.conn)._raw  # SQLite's connection
    raw.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        raw.set_trace_callback(None)


@contextmanager
def entry_reads(db: rewinddb.Database) -> Iterator[list[tuple[int, str, list[str]]]]:
    """Each ``Engine.read_entries`` call made inside the block: (version, space, keys)."""
    engine = db._engine
    calls: list[tuple[int, str, list[str]]] = []
    read_entries = engine.read_entries

    def recording(record: Any, version: int, space: str, keys: list[str]) -> Any:
        calls.append((version, space, list(keys)))
        return read_entries(record, version, space, keys)

    engine.read_entries = recording  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        del engine.read_entries
