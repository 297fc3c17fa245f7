"""``db.verify()`` and ``rewinddb verify``: the whole history checked, every branch's
first bad point reported, on a database tampered with by hand (plain SQL, as someone
editing the file would)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rewinddb
from rewinddb import _commit_hash, _schema

LONG = [f"item {i} " + "x" * 80 for i in range(60)]


def _history(db: rewinddb.Database) -> dict[str, int]:
    """Every kind of write: kv, json, state, events, a shared list that grows, a
    transaction, an atomic block over two branches, a fork of a fork, a merge, a delete.
    Returns versions worth naming."""
    db.kv.put("a", 1)
    db.json.set("doc", "$", {"x": [1, 2]})
    db.json.set("doc", "$.x[0]", 5)
    db.events.append("start", {"n": 1})
    db.state.set("phase", "plan")
    db.branches.fork("default", "run")
    run = db.at("run")
    list_version = run.kv.put("list", LONG[:50])
    grown = run.kv.put("list", LONG)
    with run.transaction(trigger="step"):
        run.kv.put("b", 2)
        run.events.append("tool", {"ok": True})
        run.kv.put("b", 3)
    with db.atomic():
        db.kv.put("c", 1)
        run.kv.put("d", 2)
    db.branches.fork("run", "deeper")
    db.at("deeper").events.append("deep", {})
    run.kv.delete("d")
    db.branches.merge("run", "default", events="append")
    return {"list": list_version, "grown": grown, "end": db.version}


def _sql(db: rewinddb.Database, statement: str, params: tuple[Any, ...] = ()) -> None:
    """Edit the stored rows behind rewinddb's back (as a person with the file could)."""
    db._engine.conn.execute(statement, params)


def test_a_database_written_through_the_api_verifies(db: rewinddb.Database) -> None:
    _history(db)
    report = db.verify()
    assert report.ok, str(report)
    assert [check.branch for check in report.branches] == ["deeper", "default", "run"]
    assert all(check.ok and check.first_bad is None for check in report.branches)
    assert report.checked["commits"] == db.version
    assert report.checked["list items"] > 0 and report.checked["events"] > 0
    assert str(report).startswith("ok: ")


def test_single_writes_hash_alike_on_both_backends(db: rewinddb.Database) -> None:
    """Puts and appends that are transactions of their own are one server routine on
    PostgreSQL, which hashes in SQL: the Python rule must give the same hashes."""
    for i in range(3):
        db.kv.put(f"k{i}", {"i": i}, trigger="t" if i else None, message="m" if i == 2 else None)
        db.events.append("e", {"i": i})
    db.state.set("s", "on")
    report = db.verify()
    assert report.ok, str(report)
    stored = [r.stored for r in _commit_hash.recompute(db._engine.conn, chain_on_stored=True)]
    assert all(stored) and len(set(stored)) == len(stored) == db.version


Tamper = Callable[[rewinddb.Database, dict[str, int]], None]

#: name -> (how the rows are edited, the branch whose first bad point it is, its version
#: or None to take it from the history, a word the problem says)
TAMPERING: dict[str, tuple[Tamper, str, str | None, str]] = {
    "entry body": (
        lambda db, v: _sql(db, "UPDATE rewind_entries SET body = ? WHERE key = 'a'", (b"2",)),
        "default",
        "1",
        "hash does not match",
    ),
    "entry deleted": (
        lambda db, v: _sql(db, "DELETE FROM rewind_entries WHERE key = 'c'"),
        "default",
        None,
        "hash does not match",
    ),
    "state entry": (
        lambda db, v: _sql(
            db, "UPDATE rewind_entries SET body = ? WHERE space = 'state'", (b'"x"',)
        ),
        "default",
        "5",
        "hash does not match",
    ),
    "commit deleted": (
        lambda db, v: _sql(db, "DELETE FROM rewind_commits WHERE version = 2"),
        "default",
        "2",
        "commit that does not exist",
    ),
    "commit message": (
        lambda db, v: _sql(db, "UPDATE rewind_commits SET message = 'x' WHERE version = 1"),
        "default",
        "1",
        "hash does not match",
    ),
    "event payload": (
        lambda db, v: _sql(
            db, "UPDATE rewind_events SET payload = ? WHERE event_type = 'start'", (b'{"n":2}',)
        ),
        "default",
        "4",
        "event 0",
    ),
    "event payload as text": (
        lambda db, v: _sql(
            db, "UPDATE rewind_events SET payload = '{}' WHERE event_type = 'start'"
        ),
        "default",
        "4",
        "event 0",
    ),
    "list item": (
        lambda db, v: _sql(
            db, "UPDATE rewind_seq_items SET item = ? WHERE idx = 55", (b'"changed"',)
        ),
        "run",
        "grown",
        "list item that changed",
    ),
    "dangling parent": (
        lambda db, v: _sql(db, "UPDATE rewind_branches SET parent_id = 999 WHERE name = 'run'"),
        "run",
        None,
        "does not exist",
    ),
    "parent cycle": (
        lambda db, v: _sql(
            db,
            "UPDATE rewind_branches SET parent_id = "
            "(SELECT id FROM rewind_branches WHERE name = 'deeper') WHERE name = 'run'",
        ),
        "run",
        None,
        "loops back",
    ),
}


@pytest.mark.parametrize("damage", sorted(TAMPERING))
def test_tampering_shows_at_the_first_bad_point_of_each_branch(
    db: rewinddb.Database, damage: str
) -> None:
    versions = _history(db)
    tamper, branch, version, says = TAMPERING[damage]
    tamper(db, versions)
    report = db.verify()
    assert not report.ok
    checks = {check.branch: check for check in report.branches}
    bad = checks[branch].first_bad
    assert bad is not None, str(report)
    assert says in bad.what, str(report)
    if version is not None:
        expected = versions.get(version) or int(version)
        assert bad.version == expected, str(report)
    if damage == "list item":  # before the list grew, and on default before the merge
        assert checks["default"].first_bad is not None
        assert checks["default"].first_bad.version == versions["end"]
    if damage in ("entry body", "commit message"):  # inherited by every fork
        assert all(not check.ok for check in report.branches)


def test_verify_never_changes_anything(db: rewinddb.Database) -> None:
    _history(db)
    _sql(db, "UPDATE rewind_entries SET body = ? WHERE key = 'a'", (b"2",))
    before = db._engine.conn.fetchall("SELECT version, hash FROM rewind_commits ORDER BY version")
    assert not db.verify().ok
    after = db._engine.conn.fetchall("SELECT version, hash FROM rewind_commits ORDER BY version")
    assert before == after


def test_a_database_from_before_commit_hashes_is_hashed_by_its_migration(
    db_target: str | Path,
) -> None:
    with rewinddb.open(db_target) as db:
        _history(db)
        conn = db._engine.conn
        conn.execute("ALTER TABLE rewind_commits DROP COLUMN hash")
        conn.execute("UPDATE rewind_meta SET value = '5' WHERE key = 'schema_version'")
    if isinstance(db_target, Path):  # SQLite: readers may read schema 5 as it is
        with rewinddb.open(db_target, readonly=True) as old:
            assert old.kv.get("a") == 1
            with pytest.raises(rewinddb.RewindError) as info:
                old.verify()
            assert info.value.code == "schema.outdated"
    with rewinddb.open(db_target) as db:
        assert db._engine.conn.schema_migrated == (5, _schema.SCHEMA_VERSION)
        assert db.verify().ok
        db.kv.put("after", 1)  # new commits chain on the migrated ones
        assert db.verify().ok


def test_an_import_is_hashed(db: rewinddb.Database, tmp_path: Path) -> None:
    import io

    _history(db)
    dump = io.BytesIO()
    db.export_jsonl(dump)
    with rewinddb.open(tmp_path / "copy") as copy:
        copy.import_jsonl(io.BytesIO(dump.getvalue()))
        report = copy.verify()
        assert report.ok, str(report)
        assert report.checked["commits"] == db.version


def test_a_rolled_back_write_leaves_the_chain_whole(db: rewinddb.Database) -> None:
    db.kv.put("a", 1)
    with pytest.raises(ValueError), db.atomic():
        db.kv.put("b", 2)
        raise ValueError
    with db.atomic():
        db.kv.put("c", 3)
        with pytest.raises(ValueError), db.atomic():
            db.kv.put("d", 4)  # this inner commit is rolled back alone
            raise ValueError
        db.kv.put("e", 5)
    run = db.at("default")
    with pytest.raises(ValueError), run.transaction():
        run.kv.put("f", 6)
        raise ValueError
    db.kv.put("g", 7)
    assert db.verify().ok, str(db.verify())


def test_the_verify_command(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        _history(db)

    def verify() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rewinddb", "verify", str(db_path)],
            capture_output=True,
            text=True,
            timeout=60,
        )

    good = verify()
    assert good.returncode == 0, good.stderr
    assert good.stdout.startswith("ok: ")
    with rewinddb.open(db_path) as db:
        _sql(db, "UPDATE rewind_entries SET body = ? WHERE key = 'a'", (b"2",))
    bad = verify()
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "NOT OK" in bad.stdout and "first bad point" in bad.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "rewinddb", "verify", str(db_path.parent / "nothing")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
