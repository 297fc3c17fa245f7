"""The entry reads diffs and merges make (``Engine.read_entries``): one statement of a fixed
text per lineage step, whatever the keys, that gives what a seek per key and step gives,
on random lineages and on keys that are hard to send as one JSON text (quotes,
backslashes, control characters, any Unicode without NUL, 1,024 characters, more key
text than SQLite's longest string)."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewinddb
from rewinddb._engine import UNKNOWN, Engine

#: Names no JSON text carries as they are.
HARD_KEYS = [
    'quote"d',
    "it's",
    "back\\slash",
    "\\u0041",
    "tab\tnew\nline\r",
    "\x01\x1f\x7f",
    "ä ö ü ß",
    "日本語のキー",
    "emoji 🎉🧪",
    "\U0010fffd",
    " leading and trailing ",
    "trailing ",
    "trailing",
    "[1, 2]",
    '{"k": "v"}',
    "null",
    "x" * 1024,
    "é" * 1024,
    "🎉" * 1024,
]

key_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=40,
).filter(lambda key: bool(key.strip()))


def reference_row(db: rewinddb.Database, branch: str, version: int, space: str, key: str) -> Any:
    """The newest entry of ``key`` visible at (branch, version), found the plain way: walk
    the parents in ``rewind_branches``, one seek per step, the first step that has a row
    wins (a branch's own rows are newer than what it inherits)."""
    conn = db._engine.conn
    step = conn.fetchone(
        "SELECT id, parent_id, forked_at FROM rewind_branches "
        "WHERE name = ? AND deleted_at IS NULL",
        (branch,),
    )
    cap = version
    while step is not None:
        branch_id, parent_id, forked_at = step
        row = conn.fetchone(
            "SELECT kind, body, refs, version, trigger, branch_id FROM rewind_entries "
            "WHERE branch_id = ? AND space = ? AND key = ? AND version <= ? "
            "ORDER BY version DESC LIMIT 1",
            (branch_id, space, key, cap),
        )
        if row is not None:
            return tuple(row)
        if parent_id is None:
            return None
        cap = min(cap, forked_at)
        step = conn.fetchone(
            "SELECT id, parent_id, forked_at FROM rewind_branches WHERE id = ?", (parent_id,)
        )
    return None


def batch_read(
    db: rewinddb.Database, branch: str, version: int, space: str, keys: list[str]
) -> dict[str, tuple[Any, ...]]:
    """``read_entries`` with nothing remembered: every key is sought in storage."""
    engine = db._engine
    engine.forget_cached()
    found = engine.read_entries(engine.branch(branch), version, space, keys)
    return {key: tuple(row) for key, row in found.items()}


def check_reads(db: rewinddb.Database, keys: list[str]) -> None:
    """At every branch and every version it sees, ``read_entries`` of ``keys`` (and
    some absent ones) is the reference's row of each key."""
    asked = [*keys, "never written", *(key + "\x01" for key in keys[:3])]
    for record in db.branches.list():
        for version in range(record.forked_at, db.version + 1):
            for space in ("kv", "json"):
                expected = {}
                for key in asked:
                    row = reference_row(db, record.name, version, space, key)
                    if row is not None:
                        expected[key] = row
                assert batch_read(db, record.name, version, space, asked) == expected, (
                    record.name,
                    version,
                    space,
                )


@contextmanager
def longest_string(db: rewinddb.Database, limit: int) -> Iterator[None]:
    """SQLite's longest string (and blob) lowered to ``limit`` bytes inside the block."""
    raw = db._engine.conn._raw  # type: ignore[attr-defined]
    saved = raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)
    try:
        yield
    finally:
        raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, saved)


operation = st.tuples(
    st.integers(0, 3),  # the branch written (of those that exist)
    st.sampled_from(["put", "put", "delete", "fork", "group"]),
    st.lists(st.integers(0, 7), min_size=1, max_size=4),  # indexes into the keys
    st.integers(-5, 5),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    keys=st.lists(key_text, min_size=8, max_size=8, unique=True),
    operations=st.lists(operation, min_size=1, max_size=12),
    lowered=st.booleans(),
    probed=st.sampled_from([32, 1]),
)
def test_batch_reads_are_the_seeks_of_each_key_on_random_lineages(
    keys: list[str], operations: list[tuple[int, str, list[int], int]], lowered: bool, probed: int
) -> None:
    """(``probed``: 1 asks every step of a longer lineage whether it holds any entry,
    as steps are asked before 32 keys or more are sought there.)"""
    directory = Path(tempfile.mkdtemp())
    saved = rewinddb._engine._PROBED
    rewinddb._engine._PROBED = probed
    try:
        with rewinddb.open(directory / "db") as db:
            branches = ["default"]
            for number, (which, what, indexes, value) in enumerate(operations):
                name = branches[which % len(branches)]
                view = db.at(name)
                chosen = [keys[i] for i in indexes]
                if what == "fork":
                    branches.append(f"b{number}")
                    db.branches.fork(name, f"b{number}")
                elif what == "delete":
                    for key in chosen:
                        view.kv.delete(key)
                elif what == "group":
                    with view.transaction():
                        view.kv.put_many({key: value for key in chosen})
                        view.json.set(chosen[0], "$", {"v": value})
                else:
                    view.kv.put_many({key: [value, key] for key in chosen})
            if lowered:  # each key fits; the array of several does not (a seek per key)
                with longest_string(db, 400):
                    check_reads(db, keys)
            else:
                check_reads(db, keys)
    finally:
        rewinddb._engine._PROBED = saved
        shutil.rmtree(directory, ignore_errors=True)


def hard_history(db: rewinddb.Database) -> None:
    """The hard keys written on default, changed on a fork ``run`` and its fork ``deep``,
    some deleted there."""
    db.kv.put_many({key: {"n": 0, "key": key} for key in HARD_KEYS})
    db.branches.fork("default", "run")
    db.at("run").kv.put_many({key: {"n": 1, "key": key} for key in HARD_KEYS[::2]})
    db.branches.fork("run", "deep")
    deep = db.at("deep")
    deep.kv.put_many({key: {"n": 2, "key": key} for key in HARD_KEYS[::3]})
    for key in HARD_KEYS[1::4]:
        deep.kv.delete(key)


def test_hard_keys_read_in_one_batch_as_each_alone(db: rewinddb.Database) -> None:
    hard_history(db)
    for branch in ("default", "run", "deep"):
        record = db._engine.branch(branch)
        for version in range(record.forked_at, db.version + 1):
            expected = {}
            for key in HARD_KEYS:
                row = reference_row(db, branch, version, "kv", key)
                if row is not None:
                    expected[key] = row
            assert batch_read(db, branch, version, "kv", HARD_KEYS) == expected


def test_hard_keys_diff_and_merge(db_target: str | Path) -> None:
    """After reopening (nothing remembered): the diff and merge of the hard keys."""
    with rewinddb.open(db_target) as db:
        hard_history(db)
    with rewinddb.open(db_target) as reopened:
        changes = reopened.diff("default", "deep")
        removed = set(HARD_KEYS[1::4])
        changed = {key for key in (*HARD_KEYS[::2], *HARD_KEYS[::3]) if key not in removed}
        assert {c.key for c in changes if c.kind == "removed"} == removed
        assert {c.key for c in changes if c.path == "$.n"} == changed
        receipt = reopened.branches.merge("deep", "default")
        assert set(receipt.keys_applied) == removed | changed
        state = reopened.at("default").kv
        for key in HARD_KEYS:
            expected = None if key in removed else reopened.at("deep").kv.get(key)
            assert state.get(key) == expected


def test_a_step_whose_keys_exceed_sqlites_longest_string_is_read_key_by_key(
    tmp_path: Path,
) -> None:
    """More key text than SQLite's longest string in one batch: read a seek per key,
    with the same answer (each key alone fits)."""
    with rewinddb.open(tmp_path / "db") as db:
        hard_history(db)
        expected = {
            branch: batch_read(db, branch, db.version, "kv", HARD_KEYS)
            for branch in ("default", "run", "deep")
        }
        with longest_string(db, 5_000):  # a key of 1,024 emoji: 4,096 bytes
            for branch, rows in expected.items():
                assert batch_read(db, branch, db.version, "kv", HARD_KEYS) == rows
            assert len(db.diff("default", "deep")) > 0


def test_the_seek_statement_is_one_text_whatever_the_keys(tmp_path: Path) -> None:
    """Diffs of 1, 37, 100 and 250 keys on one and two lineage steps seek with one
    statement text (compiled once, then taken from the statement cache), never one
    whose text depends on how many keys or steps there are."""
    with rewinddb.open(tmp_path / "db") as db:
        db.kv.put_many({f"k{i:04d}": i for i in range(1000)})
        sent: list[str] = []
        conn = db._engine.conn
        fetchall = conn.fetchall

        def recording(sql: str, params: Any = ()) -> list[Any]:
            sent.append(sql)
            return fetchall(sql, params)

        conn.fetchall = recording  # type: ignore[method-assign]
        try:
            for count in (1, 37, 100, 250):
                db.branches.fork("default", f"run{count}")
                db.at(f"run{count}").kv.put_many({f"k{i:04d}": -i - 1 for i in range(count)})
                db._engine.forget_cached()
                assert len(db.diff("default", f"run{count}")) == count
                db.branches.fork(f"run{count}", f"deep{count}")  # two steps
                db._engine.forget_cached()
                assert len(db.diff(f"deep{count}", "default")) == count
        finally:
            del conn.fetchall
        seeks = {sql for sql in sent if "rewind_entries" in sql and "version <=" in sql}
        assert seeks == {Engine._SEEK_KEYS}


def test_a_large_entry_written_or_read_is_not_remembered_and_drops_the_smaller_one(
    tmp_path: Path,
) -> None:
    """Entries over 256 KiB are not held in the connection's memory; writing one (by a
    batch write or a merge's copy) forgets what was held for the key, so no read
    answers with the smaller value it replaced."""
    large = {"text": "x" * 300_000}
    with rewinddb.open(tmp_path / "db") as db:
        engine = db._engine
        db.kv.put_many({"a": 1, "b": 2})
        default = engine.branch("default").id
        assert engine.memory.get("entry", (default, "kv", "a")) is not UNKNOWN
        db.kv.put_many({"a": large, "c": 3})
        assert engine.memory.get("entry", (default, "kv", "a")) is UNKNOWN
        assert engine.memory.get("entry", (default, "kv", "c")) is not UNKNOWN
        assert db.kv.get("a") == large
        db.kv.put_many({f"k{i:02d}": -1 for i in range(20)})
        db.branches.fork("default", "run")
        db.at("run").kv.put_many({f"k{i:02d}": large if i == 3 else i for i in range(20)})
        db.branches.fork("default", "target")
        target = engine.branch("target").id
        assert db.at("target").kv.get("k03") == -1  # remembered on target
        assert engine.memory.get("entry", (target, "kv", "k03")) is not UNKNOWN
        receipt = db.branches.merge("run", "target")
        assert len(receipt.applied) == 20
        assert engine.memory.get("entry", (target, "kv", "k03")) is UNKNOWN
        assert engine.memory.get("entry", (target, "kv", "k04")) is not UNKNOWN
        assert db.at("target").kv.get("k03") == large and db.at("target").kv.get("k04") == 4
