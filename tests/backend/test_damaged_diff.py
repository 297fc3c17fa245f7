"""Diffs and merges over entry rows another program edited out of shape: a ``kind`` that
is none of rewinddb's (9, -1, 1.5, text, bytes, NULL), a ``space`` that is none of its
spaces, a key rewinddb never writes (NUL in it, empty, not text), a ``version`` that is
not an integer. Each must fail with ``corrupt.entries`` (a merge writing nothing), never
answer as if the row were an ordinary change, or leave it out of one read while another
shows it.

The database is written, closed, edited through a connection of its own (SQLite or
PostgreSQL; what PostgreSQL's column types refuse is SQLite's alone), then reopened, so
nothing remembered answers for the edited row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rewinddb
from rewinddb.errors import CorruptDatabaseError

from .conftest import BACKENDS

FORK = 8  # the version ``b`` is forked at (``_build``)
B_K1 = "b's k1"

#: Where an edit lands: the rows of ``_build`` it names.
ROWS = {
    "b's k1": "key = 'k1' AND branch_id = (SELECT id FROM rewind_branches WHERE name = 'b')",
    "default's k1": "key = 'k1' AND version = 2",
    "b's doc": "key = 'doc' AND branch_id = (SELECT id FROM rewind_branches WHERE name = 'b')",
    "b's deletion": (
        "key = 'k4' AND branch_id = (SELECT id FROM rewind_branches WHERE name = 'b')"
    ),
    "b's bytes": "key = 'raw' AND branch_id = (SELECT id FROM rewind_branches WHERE name = 'b')",
}


def _build(target: str | Path) -> None:
    """default: k0..k4, raw bytes, a JSON doc, a state key; b (forked at ``FORK``)
    changes k1, k2, the doc and the bytes and deletes k4; default then changes k3."""
    with rewinddb.open(target) as db:
        for n in range(5):
            db.kv.put(f"k{n}", {"n": n})  # versions 1-5 (k1: version 2)
        db.kv.put("raw", b"\x00\x01")
        db.json.set("doc", "$", {"a": 1, "b": [1, 2]})
        db.state.set("phase", "plan", "start")
        assert db.version == FORK
        db.branches.fork("default", "b")
        b = db.at("b")
        b.kv.put("k1", {"n": 100})
        b.kv.put("k2", {"n": 200})
        b.kv.put("raw", b"\x02")
        b.kv.delete("k4")
        b.json.set("doc", "$.a", 2)
        db.kv.put("k3", {"n": 300})


def _edit(target: str | Path, statement: str, *, relax: bool = False, rows: int = 1) -> None:
    """Run ``statement`` (it must change so many ``rows``) on the database, as another
    program would; ``relax`` first drops NOT NULL from rewind_entries (SQLite), as a
    program that rewrote the schema would."""
    if relax:
        assert isinstance(target, Path)
        raw = sqlite3.connect(target / "rewind.sqlite3", isolation_level=None)
        raw.execute("PRAGMA writable_schema = ON")
        raw.execute(
            "UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') "
            "WHERE name = 'rewind_entries'"
        )
        raw.close()
    with rewinddb.open(target) as db:
        changed = len(db._engine.conn.fetchall(f"{statement} RETURNING 1"))
    assert changed == rows, (statement, changed)


def _on_backends(values: list[str], sqlite_only: Callable[[str], bool]) -> list[Any]:
    """(value, backend) cases: each value on both backends, those PostgreSQL's column
    types refuse (``sqlite_only``) on SQLite alone (``db_target`` parametrized directly)."""
    return [
        pytest.param(value, backend, id=f"{value}-{backend}")
        for value in values
        for backend in BACKENDS
        if backend == "sqlite" or not sqlite_only(value)
    ]


#: The public calls that read the changed keys' entries at both points.
DIFFS: dict[str, Callable[[rewinddb.Database], Any]] = {
    "diff(default, b)": lambda db: db.diff("default", "b"),
    "diff(b, default)": lambda db: db.diff("b", "default"),
    "diff(readable)": lambda db: db.diff("default", "b", readable=True),
    "diff(events=False)": lambda db: db.diff("default", "b", events=False),
    "b.diff(fork)": lambda db: db.at("b").diff(FORK),
    "diff(b at fork, b)": lambda db: db.diff("b", "b", as_of_a=FORK),
}


def _counts(db: rewinddb.Database) -> tuple[Any, ...]:
    conn = db._engine.conn
    return (
        db.version,
        conn.fetchone("SELECT count(*) FROM rewind_commits")[0],
        conn.fetchone("SELECT count(*) FROM rewind_entries")[0],
    )


def _check_refused(target: str | Path, *, merges: bool = True) -> list[str]:
    """Every diff (and the merge of b into default) fails with ``corrupt.entries`` and
    the merge writes nothing; returns the messages."""
    messages = []
    with rewinddb.open(target) as db:
        for label, call in DIFFS.items():
            with pytest.raises(CorruptDatabaseError) as raised:
                call(db)
            assert raised.value.code == "corrupt.entries", label
            assert "rewind_entries" in str(raised.value), label
            messages.append(str(raised.value))
        if merges:
            for strategy in ("fail", "source", "target"):
                before = _counts(db)
                with pytest.raises(CorruptDatabaseError) as raised:
                    db.branches.merge("b", "default", strategy=strategy)  # type: ignore[arg-type]
                assert raised.value.code == "corrupt.entries", strategy
                assert _counts(db) == before  # nothing written
                messages.append(str(raised.value))
    return messages


# -- 1. a kind that is none of rewinddb's -----------------------------------------------


@pytest.mark.parametrize("where", list(ROWS))
@pytest.mark.parametrize(
    ("kind", "db_target"),
    _on_backends(["9", "-1", "4", "1.5", "'x'", "x'00'", "NULL"], lambda k: k not in "9 -1 4"),
    indirect=["db_target"],
)
def test_an_unknown_kind_fails_diffs_and_merges(
    db_target: str | Path, where: str, kind: str
) -> None:
    """An entry of kind 9 (or text, bytes, NULL...) was decoded as JSON and reported as
    an ordinary change (a deletion of kind 9 as a change to ``None``)."""
    _build(db_target)
    _edit(
        db_target,
        f"UPDATE rewind_entries SET kind = {kind} WHERE {ROWS[where]}",
        relax=kind == "NULL",
    )
    messages = _check_refused(db_target)
    assert all("rewind_entries.kind" in message for message in messages), messages


@pytest.mark.parametrize("where", ["b's k1", "b's deletion"])
def test_an_unknown_kind_fails_the_reads_of_its_key(db_path: Path, where: str) -> None:
    """The reads of one key's value (``kv.get``, ``kv.items``, its history, a snapshot)
    decode the edited entry too: each must say the file is damaged, as the diff does."""
    _build(db_path)
    _edit(db_path, f"UPDATE rewind_entries SET kind = 9 WHERE {ROWS[where]}")
    key = "k1" if where == B_K1 else "k4"
    with rewinddb.open(db_path) as db:
        b = db.at("b")
        for call in (
            lambda: b.kv.get(key),
            b.kv.items,
            lambda: b.kv.history(key),
            b.snapshot,
        ):
            with pytest.raises(CorruptDatabaseError) as raised:
                call()
            assert raised.value.code == "corrupt.entries"


def test_a_sound_database_answers_the_same_calls(db_target: str | Path) -> None:
    """The calls ``_check_refused`` makes answer on the database before it is edited."""
    _build(db_target)
    with rewinddb.open(db_target) as db:
        changes = {(c.primitive, c.key, c.path, c.kind) for c in db.diff("default", "b")}
        assert changes == {
            ("json", "doc", "$.a", "changed"),
            ("kv", "k1", "$.n", "changed"),
            ("kv", "k2", "$.n", "changed"),
            ("kv", "k3", "$.n", "changed"),
            ("kv", "k4", "$", "removed"),
            ("kv", "raw", "$", "changed"),
        }
        for call in DIFFS.values():
            assert call(db)
        receipt = db.branches.merge("b", "default")
        assert receipt.keys_applied == ["doc", "k1", "k2", "k4", "raw"]
        assert db.kv.get("k1") == {"n": 100} and db.kv.get("k4") is None


def test_the_same_unknown_kind_at_both_points_still_fails(db_target: str | Path) -> None:
    """Both points' entries of a key are edited alike (the same stored form): the diff
    says the file is damaged rather than skip forms it cannot read as equal."""
    _build(db_target)
    with rewinddb.open(db_target) as db:
        db.at("b").kv.put("k0", {"n": 0, "again": True})
        db.kv.put("k0", {"n": 0, "again": True})  # the same stored form on both
    _edit(db_target, "UPDATE rewind_entries SET kind = 9 WHERE key = 'k0' AND version > 8", rows=2)
    with rewinddb.open(db_target) as db:
        with pytest.raises(CorruptDatabaseError) as raised:
            db.diff("default", "b")
        assert raised.value.code == "corrupt.entries"


# -- 2. a space or a key rewinddb never writes -------------------------------------------


NAMES = {
    "space='zz'": ("space = 'zz'", False),
    "space=''": ("space = ''", False),
    "space='KV'": ("space = 'KV'", False),
    "space=bytes": ("space = x'6b76'", True),
    "space=42": ("space = 42", True),  # (stored as the text '42': a column's affinity)
    "key=''": ("key = ''", False),
    "key with NUL": ("key = key || char(0) || 'x'", True),
    "key=NUL alone": ("key = char(0)", True),
    "key=bytes": ("key = x'6b31'", True),
}


@pytest.mark.parametrize("where", ["b's k1", "b's doc", "default's k1"])
@pytest.mark.parametrize(
    ("name", "db_target"),
    _on_backends(list(NAMES), lambda name: NAMES[name][1]),
    indirect=["db_target"],
)
def test_an_entry_named_out_of_shape_fails_diffs_and_merges(
    db_target: str | Path, name: str, where: str
) -> None:
    """An entry of space 'zz' was reported as an ordinary change; one whose key holds a
    NUL was silently left out (its key read back cut short), while ``kv.items`` lists it."""
    assignment, _ = NAMES[name]
    _build(db_target)
    if where == "default's k1":  # written before the fork: b's diff from its fork sees none
        with rewinddb.open(db_target) as db:
            db.kv.put("k1", {"n": 7})  # default writes it again after the fork: in range
        _edit(
            db_target,
            f"UPDATE rewind_entries SET {assignment} WHERE key = 'k1' AND version = "
            "(SELECT max(version) FROM rewind_entries WHERE key = 'k1' AND branch_id = 1)",
        )
        with rewinddb.open(db_target) as db:
            for call in (
                lambda: db.diff("default", "b"),
                lambda: db.diff("b", "default", readable=True),
                lambda: db.branches.merge("default", "b"),
            ):
                before = _counts(db)
                with pytest.raises(CorruptDatabaseError) as raised:
                    call()
                assert raised.value.code == "corrupt.entries"
                assert _counts(db) == before
        return
    _edit(db_target, f"UPDATE rewind_entries SET {assignment} WHERE {ROWS[where]}")
    messages = _check_refused(db_target)
    column = "rewind_entries." + name.split("=")[0].split()[0]
    assert all(column in message for message in messages), messages


@pytest.mark.parametrize("assignment", ["space = 'zz'", "key = key || char(0)", "key = ''"])
def test_names_out_of_shape_fail_also_when_the_keys_are_read_row_by_row(
    db_path: Path, assignment: str
) -> None:
    """A lineage step whose keys, as one JSON text, are longer than SQLite's longest
    string (lowered here) is listed a row per key (as on PostgreSQL): an edited name
    fails there too."""
    keys = {f"{i:04d}" + "\x01" * 1020: i for i in range(40)}  # \u0001: 6 bytes each
    with rewinddb.open(db_path) as db:
        db.branches.fork("default", "b")
        db.at("b").kv.put_many(keys)
    _edit(db_path, f"UPDATE rewind_entries SET {assignment} WHERE key = '{min(keys)}'")
    with rewinddb.open(db_path) as db:
        db._engine.conn._raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 200_000)
        for call in (lambda: db.diff("default", "b"), lambda: db.branches.merge("b", "default")):
            with pytest.raises(CorruptDatabaseError) as raised:
                call()
            assert raised.value.code == "corrupt.entries"
        assert db.version == 1  # (the merge wrote nothing)


def test_a_space_a_merge_never_reads_leaves_it_alone(db_target: str | Path) -> None:
    """The target's own edited row (space 'zz') is no key the source moved: merging the
    source in reads none of it and merges what it moved; a diff, which reads it, fails."""
    _build(db_target)
    _edit(
        db_target,
        "UPDATE rewind_entries SET space = 'zz' WHERE key = 'k3' AND version > 8",
    )
    with rewinddb.open(db_target) as db:
        receipt = db.branches.merge("b", "default")
        assert receipt.keys_applied == ["doc", "k1", "k2", "k4", "raw"]
        with pytest.raises(CorruptDatabaseError):
            db.diff("default", "b")


def test_keys_that_look_like_damage_in_json_are_not(db_target: str | Path) -> None:
    """The cheap look at a range's keys as one JSON text (``\\u0000``, ``""``) also meets
    sound keys (a backslash then ``u0000``, a key ending in a quote): those diff and
    merge as any other."""
    keys = ["\\u0000", 'ends with "', '""', 'a"', "\\", "x\\u0000y"]
    with rewinddb.open(db_target) as db:
        db.branches.fork("default", "b")
        db.at("b").kv.put_many({key: n for n, key in enumerate(keys)})
        db.at("b").json.set('q"', "$", {"k": 1})
    with rewinddb.open(db_target) as db:
        changes = db.diff("default", "b")
        assert [(c.primitive, c.key) for c in changes] == [("json", 'q"')] + [
            ("kv", key) for key in sorted(keys)
        ]
        receipt = db.branches.merge("b", "default")
        assert receipt.keys_applied == sorted([*keys, 'q"'])
        assert db.kv.items() == {key: n for n, key in enumerate(keys)}


# -- 3. a version that is not an integer --------------------------------------------------


@pytest.mark.parametrize("version", ["'v'", "x'07'"])
def test_a_version_that_is_not_a_number_is_left_out_by_every_read_and_verify_says_so(
    db_path: Path, version: str
) -> None:
    """SQLite orders text and bytes above every integer, so ``version <= ?`` never holds
    for such a row: b's edited entry of k1 is invisible to every read of any version
    (b reads k1 as its parent wrote it), to its history, the diff and the merge alike:
    no read shows it while another leaves it out. ``db.verify()`` says the row is
    damaged. (``export_jsonl`` copies rows, not reads: it writes this one out with its
    text version, which ``import_jsonl`` then refuses.)"""
    _build(db_path)
    _edit(db_path, f"UPDATE rewind_entries SET version = {version} WHERE {ROWS[B_K1]}")
    with rewinddb.open(db_path) as db:
        b = db.at("b")
        inherited = {"n": 1}
        assert b.kv.get("k1") == inherited
        assert all(b.kv.get("k1", as_of=v) == inherited for v in range(FORK, db.version + 1))
        assert [(h.version, h.value) for h in b.kv.history("k1")] == [(2, inherited)]
        assert [v.entry.version for v in b.key_history("kv", "k1")] == [2]
        assert b.kv.items()["k1"] == inherited
        assert b.snapshot()["kv"]["k1"] == inherited
        assert b.blame()["kv"]["k1"].version == 2
        for diff in (db.diff("default", "b"), b.diff(FORK), db.diff("b", "default")):
            assert "k1" not in {change.key for change in diff}
            assert {change.key for change in diff} >= {"k2", "doc"}
        with pytest.raises(CorruptDatabaseError) as raised:
            db.verify()
        assert raised.value.code == "corrupt.entries"
        assert "rewind_entries.version" in str(raised.value)
        receipt = db.branches.merge("b", "default")
        assert "k1" not in receipt.keys_applied and "k2" in receipt.keys_applied
        assert db.kv.get("k1") == inherited


# -- what ``diagnose`` looks for ------------------------------------------------------------


@pytest.mark.parametrize(
    ("assignment", "db_target"),
    _on_backends(["key = ''", "key = key || char(0) || 'x'"], lambda a: "char(0)" in a),
    indirect=["db_target"],
)
def test_diagnose_names_an_entry_key_rewinddb_never_writes(
    db_target: str | Path, assignment: str
) -> None:
    """When a call fails on such a row, the guard's look over the rows finds it (and a
    sound file's failure goes on as it was)."""
    from rewinddb._damage import diagnose

    _build(db_target)
    failure = ValueError("a failure")
    with rewinddb.open(db_target) as db:
        assert diagnose(db._engine, failure) is failure
    _edit(db_target, f"UPDATE rewind_entries SET {assignment} WHERE {ROWS[B_K1]}")
    with rewinddb.open(db_target) as db:
        found = diagnose(db._engine, failure)
    assert isinstance(found, CorruptDatabaseError) and found.code == "corrupt.entries"
    assert "key" in str(found)
