"""Opening, closing, reopening: the directory is the database."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import rewinddb


def _build(path: Path) -> dict[str, object]:
    with rewinddb.open(path) as db:
        db.kv.put("task", "t")
        db.json.set("doc", "$", {"messages": [{"text": "m" * 300, "n": i} for i in range(20)]})
        db.branches.fork("default", "run")
        run = db.at("run")
        run.events.append("tool.call", {"n": 1})
        run.json.set("doc", "$.messages[20]", {"text": "new", "n": 20})
        db.branches.merge("run", "default")
        return _answers(db)


def _answers(db: rewinddb.Database) -> dict[str, object]:
    return {
        "branches": [b.to_dict() for b in db.branches.list()],
        "at": {
            (b.name, v): db.at(b.name).snapshot(as_of=v)
            for b in db.branches.list()
            for v in range(b.forked_at, db.version + 1)
        },
        "events": [i.event for i in db.at("run").events.list()],
        "diff": db.diff("default", "run", as_of_a=2).to_dict(),
        "history": db.json.history("doc"),
    }


def test_reopening_gives_the_same_answers(db_path: Path) -> None:
    before = _build(db_path)
    with rewinddb.open(db_path) as db:
        assert _answers(db) == before


def test_copying_the_directory_copies_everything(db_path: Path, tmp_path: Path) -> None:
    before = _build(db_path)
    shutil.copytree(db_path, tmp_path / "copy")
    with rewinddb.open(tmp_path / "copy") as db:
        assert _answers(db) == before


def test_the_directory_holds_one_sqlite_file_in_wal_mode(db_path: Path) -> None:
    _build(db_path)
    assert (db_path / "rewind.sqlite3").is_file()
    with sqlite3.connect(db_path / "rewind.sqlite3") as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_open_creates_missing_directories(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "a" / "b" / "agent") as db:
        assert db.branches.names() == ["default"]


def test_open_with_create_false(tmp_path: Path) -> None:
    with pytest.raises(rewinddb.NotFoundError) as info:
        rewinddb.open(tmp_path / "nothing", create=False)
    assert info.value.code == "not_found.database"
    assert not (tmp_path / "nothing").exists()


def test_a_directory_that_is_not_a_database(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "notes.txt").write_text("hello")
    with pytest.raises(rewinddb.NotADatabaseError) as info:
        rewinddb.open(tmp_path / "project")
    assert info.value.code == "invalid.database"
    assert sorted(p.name for p in (tmp_path / "project").iterdir()) == ["notes.txt"]


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(rewinddb.NotADatabaseError):
        rewinddb.open(tmp_path / "file")
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "rewind.sqlite3").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(rewinddb.NotADatabaseError):
        rewinddb.open(tmp_path / "garbage")
    (tmp_path / "other").mkdir()
    with sqlite3.connect(tmp_path / "other" / "rewind.sqlite3") as raw:
        raw.execute("CREATE TABLE someone_elses (x)")
    with pytest.raises(rewinddb.NotADatabaseError, match="not a rewinddb database"):
        rewinddb.open(tmp_path / "other")


def test_closed_database(db_path: Path) -> None:
    db = rewinddb.open(db_path)
    view = db.at("default")
    db.close()
    db.close()  # closing twice is fine
    assert db.closed
    for call in (
        lambda: db.kv.put("k", 1),
        lambda: db.kv.get("k"),
        lambda: view.events.list(),
        lambda: db.branches.list(),
        lambda: db.branches.fork("default", "x"),
        lambda: db.version,
    ):
        with pytest.raises(rewinddb.DatabaseClosedError) as info:
            call()
        assert info.value.code == "closed"


def test_readonly_refuses_every_write(db_path: Path) -> None:
    _build(db_path)
    with rewinddb.open(db_path, readonly=True) as db:
        assert db.kv.get("task") == "t"
        for call in (
            lambda: db.kv.put("k", 1),
            lambda: db.branches.fork("default", "x"),
            lambda: db.branches.merge("run", "default"),
            lambda: db.events.append("e", {}),
        ):
            with pytest.raises(rewinddb.ReadOnlyError) as info:
                call()
            assert info.value.code == "readonly"


def test_bad_open_arguments(tmp_path: Path) -> None:
    with pytest.raises(rewinddb.RewindError) as info:
        rewinddb.open(tmp_path / "x", durability="sometimes")
    assert info.value.code == "invalid.option"
    with pytest.raises(rewinddb.RewindError) as info:
        rewinddb.open(42)  # type: ignore[arg-type]
    assert info.value.code == "invalid.path"
    with pytest.raises(rewinddb.RewindError) as info:
        rewinddb.open("mysql://localhost/agents")
    assert info.value.code == "unsupported.backend"
    with pytest.raises(rewinddb.RewindError) as info:  # nothing listens on port 1
        rewinddb.open("postgresql://rewind@127.0.0.1:1/agents", busy_timeout=1)
    assert info.value.code == "connection_lost"
    assert "cannot connect" in str(info.value)


def test_durability_full(db_path: Path) -> None:
    with rewinddb.open(db_path, durability="full") as db:
        db.kv.put("k", 1)
    with rewinddb.open(db_path) as db:
        assert db.kv.get("k") == 1


def test_a_writer_that_waits_too_long_gets_a_clear_busy_error(db_path: Path) -> None:
    with rewinddb.open(db_path) as db, rewinddb.open(db_path, busy_timeout=0.2) as other:
        with db.transaction():
            db.kv.put("held", 1)
            with pytest.raises(rewinddb.DatabaseBusyError) as info:
                other.kv.put("k", 1)
            assert info.value.code == "busy"
        assert other.kv.put("k", 1) == 2  # the lock is free again


@pytest.mark.parametrize(
    "options", [{"busy_timeout": "x"}, {"busy_timeout": -1}, {"durability": "paranoid"}]
)
def test_bad_options_create_nothing(tmp_path: Path, options: dict[str, object]) -> None:
    with pytest.raises(rewinddb.RewindError) as info:
        rewinddb.open(tmp_path / "new", **options)  # type: ignore[arg-type]
    assert info.value.code == "invalid.option"
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("name", ["nul\x00name", "lone\ud800surrogate", "x" * 2000])
def test_paths_that_cannot_name_a_directory(tmp_path: Path, name: str) -> None:
    with pytest.raises(rewinddb.RewindError) as info:
        rewinddb.open(tmp_path / name)
    assert info.value.code == "invalid.path"


def test_bad_durability_types(tmp_path: Path) -> None:
    with pytest.raises(rewinddb.RewindError) as info:
        rewinddb.open(tmp_path / "x", durability=[])  # type: ignore[arg-type]
    assert info.value.code == "invalid.option"
