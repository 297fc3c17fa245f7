"""The event-log protocol (seed 004): expected_index, fork at an event, log diffs,
hash-chain verification."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import rewinddb


def test_expected_index(db: rewinddb.Database, refused) -> None:  # type: ignore[no-untyped-def]
    assert db.events.append("init", {}, expected_index=0).sequence == 0
    assert db.events.append("step", {}, expected_index=1).sequence == 1
    with refused(db, rewinddb.AppendConflictError, "conflict.append") as info:
        db.events.append("stale", {}, expected_index=1)
    assert info.value.details == {"expected": 1, "actual": 2}
    db.branches.fork("default", "child")
    assert db.at("child").events.append("x", {}, expected_index=2).sequence == 2


RACER = """
import sys, rewinddb
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
landed = refused = 0
with rewinddb.open(path) as db:
    log = db.events
    while landed < count:
        index = log.length()
        try:
            log.append("append", {"writer": name, "n": landed}, expected_index=index)
            landed += 1
        except rewinddb.AppendConflictError:
            refused += 1
print(landed, refused)
"""


def test_two_processes_racing_on_expected_index(db_path: Path) -> None:
    """Every append lands exactly once or is refused: none lost or duplicated, dense."""
    rewinddb.open(db_path).close()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(db_path), name, "150"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    results = []
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        results.append(tuple(map(int, out.split())))
    assert [landed for landed, _ in results] == [150, 150]
    with rewinddb.open(db_path) as db:
        events = [item.event for item in db.events.list()]
        assert [e.sequence for e in events] == list(range(300))
        for name in ("a", "b"):
            assert [e.payload["n"] for e in events if e.payload["writer"] == name] == list(
                range(150)
            )
        assert db.events.verify().ok


def test_fork_at_event(db: rewinddb.Database) -> None:
    db.events.append("tool.call", {"n": 0})
    db.kv.put("seen", 0)
    db.events.append("tool.call", {"n": 1})
    db.kv.put("seen", 1)
    db.events.append("run.end", {})
    branch = db.branches.fork("default", "retry", at_event=1)
    retry = db.at("retry")
    assert [i.event.sequence for i in retry.events.list()] == [0, 1]
    assert retry.kv.get("seen") == 0  # the state right after event 1
    assert retry.events.append("tool.call", {"n": "retried"}).sequence == 2
    assert branch.forked_at == db.events.get(1).version


def test_fork_at_event_bad_input(db: rewinddb.Database, refused) -> None:  # type: ignore[no-untyped-def]
    db.events.append("e", {})
    with refused(db, rewinddb.EventNotFound, "not_found.event"):
        db.branches.fork("default", "x", at_event=5)
    with refused(db, rewinddb.InvalidInputError, "invalid.fork"):
        db.branches.fork("default", "x", at=1, at_event=0)
    with refused(db, rewinddb.InvalidInputError, "invalid.sequence"):
        db.branches.fork("default", "x", at_event="0")  # type: ignore[arg-type]
    # Events carried by a merge share one version: forking between them is refused.
    db.branches.fork("default", "src")
    db.at("src").events.append("a", {})
    db.at("src").events.append("b", {})
    db.branches.merge("src", "default", events="append")
    with refused(db, rewinddb.InvalidInputError, "invalid.fork"):
        db.branches.fork("default", "between", at_event=1)
    db.branches.fork("default", "after", at_event=2)


def test_diff_event_logs(db: rewinddb.Database) -> None:
    for n in range(3):
        db.events.append("step", {"n": n})
    db.branches.fork("default", "a", at_event=1)
    a = db.at("a")
    a.events.append("step", {"n": "a2"})
    a.events.append("step", {"n": "a3"})
    result = rewinddb.diff_event_logs(db, a)
    assert result.common_prefix == 2
    assert [e.payload["n"] for e in result.only_a] == [2]
    assert [e.payload["n"] for e in result.only_b] == ["a2", "a3"]
    assert rewinddb.diff_event_logs(a.events, a.events.list()).identical
    items = db.events.list()
    assert rewinddb.diff_event_logs(items[:1], [i.event for i in items]).only_b == [
        i.event for i in items[1:]
    ]
    with pytest.raises(rewinddb.InvalidInputError) as info:
        rewinddb.diff_event_logs(db, "not a log")
    assert info.value.code == "invalid.event_log"


def test_verify_finds_an_edited_payload(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        for n in range(10):
            db.events.append("step", {"n": n})
        db.branches.fork("default", "child")
        db.at("child").events.append("step", {"n": 10})
        report = db.at("child").events.verify()
        assert (report.ok, report.checked, report.first_bad) == (True, 11, None)
    with sqlite3.connect(db_path / "rewind.sqlite3") as raw:
        raw.execute("UPDATE rewind_events SET payload = ? WHERE sequence = 4", (b'{"n":400}',))
    with rewinddb.open(db_path) as db:
        report = db.at("child").events.verify()
        assert (report.ok, report.first_bad, report.reason) == (False, 4, "hash mismatch")
        assert not report
        assert db.events.verify(as_of=db.events.get(3).version).ok  # before the edit


def test_verify_finds_a_removed_event(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        for n in range(5):
            db.events.append("step", {"n": n})
    with sqlite3.connect(db_path / "rewind.sqlite3") as raw:
        raw.execute("DELETE FROM rewind_events WHERE sequence = 2")
    with rewinddb.open(db_path) as db:
        report = db.events.verify()
        assert (report.ok, report.first_bad, report.reason) == (False, 2, "sequence gap")


def test_fork_at_an_inherited_event(db: rewinddb.Database) -> None:
    db.events.append("plan", {})
    db.kv.put("seen", "after plan")
    db.events.append("act", {})
    db.kv.put("seen", "after act")
    db.branches.fork("default", "run")
    db.at("run").events.append("run.step", {})
    retry = db.branches.fork("run", "retry", at_event=0)  # event 0 came from default
    assert (retry.parent, retry.forked_at) == ("run", db.events.get(0).version)
    view = db.at("retry")
    assert [i.event.event_type for i in view.events.list()] == ["plan"]
    assert view.kv.get("seen") is None
    db.kv.put("seen", "default moved on")  # not visible to retry
    assert view.kv.get("seen") is None
    view.kv.put("mine", 1)
    assert view.events.append("retry.step", {}).sequence == 1


def test_appends_build_on_the_log_end_this_connection_wrote(db_path: Path) -> None:
    """The log's end is read once: after that, this connection knows it (within one
    commit, and across commits while no other connection writes)."""
    with rewinddb.open(db_path) as db:
        statements: list[str] = []
        db._engine.conn._raw.set_trace_callback(statements.append)
        db.events.append("before")
        with db.transaction():
            for n in range(3):
                db.events.append("step", {"n": n})
            with pytest.raises(KeyError), db.atomic():  # rolled back: so is the log's end
                db.events.append("lost")
                raise KeyError("undo")
            db.events.append("after")
        db.events.append("later")
        ends = [s for s in statements if s.startswith("SELECT sequence, hash")]
        # Only the first append reads it: the rollback forgot what was known, and the
        # next append ("after") built on its commit's own log head, then wrote it through.
        assert len(ends) == 1, ends
        with rewinddb.open(db_path) as other:
            other.events.append("elsewhere")
        statements.clear()
        db.events.append("last")
        db._engine.conn._raw.set_trace_callback(None)
        assert len([s for s in statements if s.startswith("SELECT sequence, hash")]) == 1
        types = ["before", "step", "step", "step", "after", "later", "elsewhere", "last"]
        assert [e.event.event_type for e in db.events.list()] == types
        assert [e.event.sequence for e in db.events.list()] == list(range(len(types)))
        assert db.events.verify().ok


def test_a_list_after_the_known_end_of_the_log_reads_nothing_and_stays_true(
    db_path: Path,
) -> None:
    """``events.list(after=n)`` when this connection knows its log ends at ``n``: no read,
    and another connection's append is seen at once (the memory's rule)."""
    with rewinddb.open(db_path) as db:
        for n in range(3):
            db.events.append("step", {"n": n})
        statements: list[str] = []
        db._engine.conn._raw.set_trace_callback(statements.append)
        assert db.events.list(after=2) == []
        assert not [s for s in statements if "FROM rewind_events" in s]
        with rewinddb.open(db_path) as other:
            other.events.append("elsewhere")
        assert [e.event.event_type for e in db.events.list(after=2)] == ["elsewhere"]
        with db.transaction():
            db.events.append("inside")
            assert [e.event.event_type for e in db.events.list(after=3)] == ["inside"]
        db.branches.fork("default", "child")
        assert db.at("child").events.list(after=4) == []
        assert [e.event.sequence for e in db.at("child").events.list(after=3)] == [4]
        db._engine.conn._raw.set_trace_callback(None)
        assert db.events.list(after=2, as_of=1) == []  # at an older version: still true


def test_a_list_after_a_sequence_on_both_backends(db: rewinddb.Database) -> None:
    db.events.append("a")
    db.events.append("b")
    assert [e.event.event_type for e in db.events.list(after=0)] == ["b"]
    assert db.events.list(after=1) == [] and db.events.list(after=7) == []
    db.events.append("c")
    assert [e.event.event_type for e in db.events.list(after=1)] == ["c"]
