"""An import that fills the disk says so: the engine's storage error (code ``storage``,
"the disk is full"), never a format error blaming a line of a good file; the database is
as it was before, and ``rewinddb import`` prints the message, without a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import rewinddb
from rewinddb.cli import main


@pytest.fixture
def big_export(tmp_path: Path) -> Path:
    """An export of about 8 MB: more than the small disk holds."""
    with rewinddb.open(tmp_path / "big") as db:
        for i in range(400):
            db.kv.put(f"key-{i}", "x" * 20_000)
        db.events.append("done", {"keys": 400})
        path = tmp_path / "big.jsonl"
        with open(path, "wb") as out:
            db.export_jsonl(out)
    assert path.stat().st_size > 4 * 2**20
    return path


def _state(path: Path) -> tuple[object, ...]:
    with rewinddb.open(path) as db:
        return (
            db.version,
            [b.name for b in db.branches.list()],
            db.kv.items(),
            db.at("kept").kv.keys(),
            len(db.events),
            db.commits(),
        )


def _target(disk: Path) -> tuple[Path, tuple[object, ...]]:
    """A database on the small disk with no history yet (a branch, nothing committed)."""
    target = disk / "db"
    with rewinddb.open(target) as db:
        db.branches.fork("default", "kept")
    return target, _state(target)


def test_a_full_disk_during_import_is_a_storage_error(small_disk: Path, big_export: Path) -> None:
    target, before = _target(small_disk)
    with rewinddb.open(target) as db:
        with open(big_export, "rb") as source, pytest.raises(rewinddb.RewindError) as info:
            db.import_jsonl(source)
        assert not isinstance(info.value, rewinddb.ImportFormatError), info.value
        assert info.value.code == "storage", info.value
        assert "disk is full" in info.value.message
        # Nothing half-written, in this connection or on disk.
        assert db.version == 0 and db.kv.keys() == [] and len(db.events) == 0
        assert db.branches.names() == ["default", "kept"]
    assert _state(target) == before


def test_cli_import_on_a_full_disk_says_the_disk_is_full(
    small_disk: Path, big_export: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target, before = _target(small_disk)
    assert main(["import", str(target), str(big_export)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rewinddb: error: [storage] ") and "disk is full" in err, err
    assert "Traceback" not in err and "line " not in err and len(err.splitlines()) == 1, err
    assert _state(target) == before
    # A new database the import was to create is not left behind.
    assert main(["import", str(small_disk / "new"), str(big_export)]) == 1
    assert "disk is full" in capsys.readouterr().err
    assert not (small_disk / "new").exists()
    # The disk is usable again: the same import elsewhere works.
    os.sync()
    with rewinddb.open(big_export.parent / "copy") as copy:
        with open(big_export, "rb") as source:
            copy.import_jsonl(source)
        assert len(copy.kv.keys()) == 400
