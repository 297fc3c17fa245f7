"""``as_of`` a datetime names the newest version committed by then: checked against the
commits' own times, with ties, gaps in the versions (a purged branch's commits go) and
times before the first commit and after the last."""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

import rewinddb
from rewinddb import _engine

#: A day ago, in microseconds: the fake clock's start (``as_of`` may not be in the future).
_START = int((datetime.now(timezone.utc) - timedelta(days=1)).timestamp() * 1_000_000)


def _at(micros: int) -> datetime:
    return datetime.fromtimestamp(0, timezone.utc) + timedelta(microseconds=micros)


def _write(db: rewinddb.Database, steps: list[tuple[int, bool]]) -> list[tuple[int, int]]:
    """Write ``k`` = its step's index on default (or a write on ``side`` when the step says
    so) at the fake times ``steps`` give; then purge ``side``. Returns (time, value) of
    default's writes."""
    db.branches.fork("default", "side")
    clock = [_START]
    written: list[tuple[int, int]] = []
    with mock.patch.object(_engine, "now_micros", lambda: clock[0]):
        for index, (delta, on_side) in enumerate(steps):
            clock[0] += delta
            if on_side:
                db.at("side").kv.put("s", index)
            else:
                db.kv.put("k", index)
                written.append((clock[0], index))
    db.branches.delete("side", purge=True)  # its commits leave gaps in the versions
    return written


def _expected(written: list[tuple[int, int]], when: int) -> int | None:
    values = [value for ts, value in written if ts <= when]
    return values[-1] if values else None


def _check(db: rewinddb.Database, written: list[tuple[int, int]], every: int = 1) -> None:
    probes = written[::every] + written[-3:]
    times = {ts + shift for ts, _ in probes for shift in (-1, 0, 1)} | {_START - 5}
    for when in sorted(times):
        assert db.kv.get("k", as_of=_at(when)) == _expected(written, when), when


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=40),
    st.sampled_from([1, 2, 5, 256]),
)
def test_as_of_datetime_matches_commit_times(steps: list[tuple[int, bool]], recent: int) -> None:
    """``recent``: how many newest commits are walked before the rest is bisected."""
    with (
        tempfile.TemporaryDirectory() as folder,
        mock.patch.object(_engine, "_RECENT_COMMITS", recent),
    ):
        db = rewinddb.open(Path(folder))
        try:
            written = _write(db, steps)
            _check(db, written)
        finally:
            db.close()


def test_as_of_datetime_on_many_commits(db: rewinddb.Database) -> None:
    """Hundreds of commits, many at one time, a purged branch's between them."""
    steps = [((i * 7) % 3, i % 5 == 2) for i in range(400)]
    written = _write(db, steps)
    _check(db, written, every=17)  # (the newest 256 commits walked, the rest bisected)
    with mock.patch.object(_engine, "_RECENT_COMMITS", 3):
        _check(db, written, every=13)
    assert db.kv.get("k", as_of=datetime.now(timezone.utc)) == written[-1][1]


def test_as_of_datetime_before_any_commit(db: rewinddb.Database) -> None:
    assert db.kv.get("k", as_of=_at(_START)) is None  # no commit yet: version 0
    written = _write(db, [(1, False)])
    assert db.kv.get("k", as_of=_at(written[0][0] - 1)) is None
    assert db.kv.get("k", as_of=_at(written[0][0])) == 0
