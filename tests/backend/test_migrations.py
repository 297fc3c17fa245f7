"""Versioned migrations: an older schema is upgraded on open (or by ``rewinddb migrate``),
in one transaction, never when opened read-only, and a newer schema is refused."""

from __future__ import annotations

import io
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rewinddb
from rewinddb import _migrations, _schema


def _index_exists(db: rewinddb.Database, name: str) -> bool:
    conn = db._engine.conn
    if conn.dialect == "sqlite":
        sql = "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?"
    else:
        sql = (
            "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?"
        )
    return bool(conn.fetchone(sql, (name,))[0])


def test_an_older_schema_is_migrated_on_open(
    db_target: str | Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rewinddb.open(db_target) as db:
        db.kv.put("k", 1)
    old = _schema.SCHEMA_VERSION
    name = "ix_test_commits_by_branch"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_schema, "SCHEMA_VERSION", old + 1)
        patch.setitem(
            _migrations.MIGRATIONS,
            old + 1,
            lambda conn: conn.execute(
                f"CREATE INDEX {name} ON rewind_commits (branch_id, version)"
            ),
        )
        with pytest.raises(rewinddb.RewindError) as info:
            rewinddb.open(db_target, readonly=True)
        assert info.value.code == "schema.outdated" and "rewinddb migrate" in str(info.value)
        with rewinddb.open(db_target) as db:
            assert db._engine.conn.schema_migrated == (old, old + 1)
            assert _index_exists(db, name)
            assert db.kv.get("k") == 1
        with rewinddb.open(db_target, readonly=True) as db:  # now up to date
            assert db._engine.conn.schema_migrated == (old + 1, old + 1)


def test_a_read_only_open_reads_a_schema_behind_only_on_what_writers_use(
    db_target: str | Path,
) -> None:
    def stored(version: int) -> None:
        with rewinddb.open(db_target) as db:
            db._engine.conn.execute(
                "UPDATE rewind_meta SET value = ? WHERE key = 'schema_version'", (str(version),)
            )

    with rewinddb.open(db_target) as db:
        db.kv.put("k", 1)
        db.events.append("e", {"n": 1})
        dialect = db._engine.conn.dialect
    behind = 1 if dialect == "sqlite" else 4  # PostgreSQL's schema 5: cheaper write routines
    stored(behind)
    with rewinddb.open(db_target, readonly=True) as db:
        assert db._engine.conn.schema_migrated == (behind, behind)  # read as it is
        assert db.kv.get("k") == 1 and db.events.length() == 1
    with rewinddb.open(db_target) as db:  # a writable open brings it up to date
        assert db._engine.conn.schema_migrated == (behind, _schema.SCHEMA_VERSION)
    if dialect == "postgresql":  # schema 4 added the read routine: readers need it
        stored(3)
        with pytest.raises(rewinddb.RewindError) as info:
            rewinddb.open(db_target, readonly=True)
        assert info.value.code == "schema.outdated"


def test_a_failed_migration_leaves_the_old_schema(db_target: str | Path) -> None:
    rewinddb.open(db_target).close()
    old = _schema.SCHEMA_VERSION

    def broken(conn: object) -> None:
        conn.execute("CREATE INDEX ix_half ON rewind_commits (branch_id)")  # type: ignore[attr-defined]
        raise RuntimeError("the migration failed halfway")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_schema, "SCHEMA_VERSION", old + 1)
        patch.setitem(_migrations.MIGRATIONS, old + 1, broken)
        with pytest.raises(RuntimeError):
            rewinddb.open(db_target)
    with rewinddb.open(db_target) as db:
        assert db._engine.conn.schema_migrated == (old, old)
        assert not _index_exists(db, "ix_half")


def test_a_newer_schema_is_refused(db_target: str | Path) -> None:
    with rewinddb.open(db_target) as db:
        db._engine.conn.execute(
            "UPDATE rewind_meta SET value = ? WHERE key = 'schema_version'",
            (str(_schema.SCHEMA_VERSION + 5),),
        )
    with pytest.raises(rewinddb.NotADatabaseError, match="newer rewinddb"):
        rewinddb.open(db_target)


def test_migrate_command(db_path: Path) -> None:
    rewinddb.open(db_path).close()
    result = subprocess.run(
        [sys.executable, "-m", "rewinddb", "migrate", str(db_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert f"schema {_schema.SCHEMA_VERSION}, up to date" in result.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "rewinddb", "migrate", str(db_path.parent / "nothing")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 1 and "no rewinddb database" in missing.stderr


def _make_schema_1(db: rewinddb.Database) -> None:
    """Turn a new database back into what schema 1 made (32-bit columns on PostgreSQL)."""
    conn = db._engine.conn
    if conn.dialect == "postgresql":
        for table, columns in _migrations._INT64_COLUMNS.items():
            changes = ", ".join(f"ALTER COLUMN {column} TYPE INTEGER" for column in columns)
            conn.execute(f"ALTER TABLE {table} {changes}")
    conn.execute("UPDATE rewind_meta SET value = '1' WHERE key = 'schema_version'")


def test_schema_1_is_migrated_to_64_bit_versions(db_target: str | Path) -> None:
    with rewinddb.open(db_target) as db:
        db.kv.put("k", 1)
        db.events.append("e", {"n": 1})
        exported = io.BytesIO()
        db.export_jsonl(exported)
        _make_schema_1(db)
    with rewinddb.open(db_target) as db:
        assert db._engine.conn.schema_migrated == (1, _schema.SCHEMA_VERSION)
        assert db.kv.get("k") == 1 and db.events.length() == 1
        # A clock past 2**31 (an imported history's floor) works on both backends now.
        db._engine.conn.execute(
            "INSERT INTO rewind_meta (key, value) VALUES ('clock_floor', ?)", (str(2**40),)
        )
        version = db.kv.put("k", 2)
        assert version == 2**40 + 1 and db.kv.get("k", as_of=version) == 2
        assert db.events.append("e", {"n": 2}).version == 2**40 + 2


def _make_schema_8_commits(path: Path) -> None:
    """Give a new SQLite database schema 8's commits table back: its version a BIGINT key
    with an index of its own, not the rowid."""
    conn = sqlite3.connect(path / "rewind.sqlite3", isolation_level=None)
    try:
        (sql,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'rewind_commits'"
        ).fetchone()
        old = sql.replace("version INTEGER NOT NULL", "version BIGINT NOT NULL")
        assert old != sql
        conn.execute("BEGIN")
        conn.execute(old.replace("rewind_commits", "rewind_commits_old", 1))
        conn.execute("INSERT INTO rewind_commits_old SELECT * FROM rewind_commits")
        conn.execute("DROP TABLE rewind_commits")
        conn.execute("ALTER TABLE rewind_commits_old RENAME TO rewind_commits")
        conn.execute(
            "CREATE INDEX ix_rewind_commits_merges ON rewind_commits (branch_id, version) "
            "WHERE merge_branch_id IS NOT NULL"
        )
        conn.execute("UPDATE rewind_meta SET value = '8' WHERE key = 'schema_version'")
        conn.execute("COMMIT")
    finally:
        conn.close()


def _commit_key(path: Path) -> tuple[list[Any], list[Any]]:
    """(the commits table's indexes, its rows) as raw SQLite sees them."""
    conn = sqlite3.connect(path / "rewind.sqlite3")
    try:
        indexes = sorted(row[1] for row in conn.execute("PRAGMA index_list('rewind_commits')"))
        rows = conn.execute("SELECT * FROM rewind_commits ORDER BY version").fetchall()
        return indexes, rows
    finally:
        conn.close()


def test_schema_9_makes_the_commits_version_sqlites_rowid(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.kv.put("k", 1)
        db.branches.fork("default", "run")
        with db.at("run").transaction(trigger="step"):
            db.at("run").events.append("e", {"n": 1})
            db.at("run").json.set("doc", "$", {"a": [1, 2]})
        db.branches.merge("run", "default")
    indexes, rows = _commit_key(db_path)
    assert indexes == ["ix_rewind_commits_merges"]  # a new file: the version is the rowid
    _make_schema_8_commits(db_path)
    assert _commit_key(db_path) == (
        ["ix_rewind_commits_merges", "sqlite_autoindex_rewind_commits_1"],
        rows,
    )
    with rewinddb.open(db_path, readonly=True) as db:  # read as it is
        assert db._engine.conn.schema_migrated == (8, 8) and db.kv.get("k") == 1
    with rewinddb.open(db_path) as db:
        assert db._engine.conn.schema_migrated == (8, _schema.SCHEMA_VERSION)
        assert db.verify().ok
        assert db.json.get("doc") == {"a": [1, 2]} and db.at("run").events.length() == 1
        db.kv.put("k", 2)
        assert db.kv.get("k", as_of=rows[-1][0]) == 1
    indexes, after = _commit_key(db_path)
    assert indexes == ["ix_rewind_commits_merges"] and after[: len(rows)] == rows


def _make_schema_9_events(path: Path) -> None:
    """Give a new SQLite database schema 9's events table back: WITHOUT ROWID, its key the
    table."""
    conn = sqlite3.connect(path / "rewind.sqlite3", isolation_level=None)
    try:
        (sql,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'rewind_events'"
        ).fetchone()
        assert "WITHOUT ROWID" not in sql.upper()
        indexes = [
            row[0]
            for row in conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'rewind_events' "
                "AND sql IS NOT NULL"
            )
        ]
        conn.execute("BEGIN")
        conn.execute(sql.replace("rewind_events", "rewind_events_old", 1) + " WITHOUT ROWID")
        conn.execute("INSERT INTO rewind_events_old SELECT * FROM rewind_events")
        conn.execute("DROP TABLE rewind_events")
        conn.execute("ALTER TABLE rewind_events_old RENAME TO rewind_events")
        for index in indexes:
            conn.execute(index)
        conn.execute("UPDATE rewind_meta SET value = '9' WHERE key = 'schema_version'")
        conn.execute("COMMIT")
    finally:
        conn.close()


def _event_layout(path: Path) -> tuple[bool, list[Any], list[Any]]:
    """(whether the events table is WITHOUT ROWID, its indexes, its rows) as raw SQLite
    sees them."""
    conn = sqlite3.connect(path / "rewind.sqlite3")
    try:
        (sql,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'rewind_events'"
        ).fetchone()
        indexes = sorted(row[1] for row in conn.execute("PRAGMA index_list('rewind_events')"))
        rows = conn.execute("SELECT * FROM rewind_events ORDER BY branch_id, sequence").fetchall()
        return "WITHOUT ROWID" in sql.upper(), indexes, rows
    finally:
        conn.close()


def test_schema_10_gives_sqlites_events_table_a_rowid(db_path: Path) -> None:
    big = {"result": "x" * 3000}  # a payload that took an overflow page of its own
    with rewinddb.open(db_path) as db:
        db.events.append("tool", big)
        db.branches.fork("default", "run")
        db.at("run").events.append("step", {"n": 1})
        db.branches.merge("run", "default", events="append")  # carried: its origin indexed
        db.events.append("tool", {"n": 2})
    without_rowid, indexes, rows = _event_layout(db_path)
    assert not without_rowid and len(rows) == 4 and rows[1][7] == 2  # (the carried one)
    assert indexes == [
        "ix_rewind_events_origin",
        "ix_rewind_events_version",
        "sqlite_autoindex_rewind_events_1",
    ]
    _make_schema_9_events(db_path)
    assert _event_layout(db_path) == (True, indexes, rows)
    with rewinddb.open(db_path, readonly=True) as db:  # read as it is
        assert db._engine.conn.schema_migrated == (9, 9)
        assert db.events.list()[0].event.payload == big
    with rewinddb.open(db_path) as db:
        assert db._engine.conn.schema_migrated == (9, _schema.SCHEMA_VERSION)
        assert db.verify().ok and db.events.verify()
        assert db.events.length() == 3 and db.at("run").events.length() == 2
        db.events.append("tool", {"n": 3}, expected_index=3)
        assert db.events.verify() and db.verify().ok
    without_rowid, indexes, after = _event_layout(db_path)
    assert not without_rowid and set(rows) < set(after) and len(after) == 5
    assert indexes == [
        "ix_rewind_events_origin",
        "ix_rewind_events_version",
        "sqlite_autoindex_rewind_events_1",
    ]


def test_schema_10_on_an_events_table_with_a_null_says_the_file_is_damaged(db_path: Path) -> None:
    """Another program dropped a NOT NULL and left a NULL: the rebuilt table refuses the
    row, and the open says the file is damaged (it said ``storage``), changing nothing."""
    with rewinddb.open(db_path) as db:
        db.events.append("tool", {"n": 1})
        db.events.append("tool", {"n": 2})
    _make_schema_9_events(db_path)
    conn = sqlite3.connect(db_path / "rewind.sqlite3", isolation_level=None)
    try:
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "UPDATE sqlite_master SET sql = replace(sql, 'hash VARCHAR NOT NULL', "
            "'hash VARCHAR') WHERE name = 'rewind_events'"
        )
        conn.execute("PRAGMA writable_schema = OFF")
    finally:
        conn.close()
    conn = sqlite3.connect(db_path / "rewind.sqlite3", isolation_level=None)
    try:
        conn.execute("UPDATE rewind_events SET hash = NULL WHERE sequence = 1")
    finally:
        conn.close()
    with pytest.raises(rewinddb.CorruptDatabaseError) as raised:
        rewinddb.open(db_path)
    assert raised.value.code == "corrupt.events"
    without_rowid, _, rows = _event_layout(db_path)
    assert without_rowid and len(rows) == 2  # as it was: schema 9
