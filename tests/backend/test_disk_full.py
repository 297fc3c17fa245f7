"""A full disk inside a transaction: a ``storage`` error, and nothing remembered of it.

SQLite rolls a transaction back by itself when the disk fills up; whatever the
connection remembered of that transaction's rows (branch records, log ends, shared
arrays by id) must go with it, or it later reads another writer's rows as its own. The
database lives on a small tmpfs (the tests run as root, as CI does)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import rewinddb


def _fill(disk: Path, leave: int) -> Path:
    """Fill ``disk`` up to ``leave`` bytes free with one file (removed to free it)."""
    filler = disk / "filler"
    stats = os.statvfs(disk)
    free = stats.f_bavail * stats.f_frsize
    filler.write_bytes(b"\0" * max(free - leave, 0))
    return filler


def _big_list(tag: str, n: int = 100) -> list[str]:
    return [f"{tag} item {i} " + "x" * 200 for i in range(n)]


def test_a_full_disk_inside_a_transaction_is_a_storage_error_and_forgotten(
    small_disk: Path,
) -> None:
    path = small_disk / "agent"
    with rewinddb.open(path) as db, rewinddb.open(path) as other:
        db.kv.put("short", [1, 2, 3])  # the connection has read and written before
        db.events.append("start", {})
        filler = _fill(small_disk, leave=256 * 1024)
        with pytest.raises(rewinddb.RewindError) as info, db.atomic():
            db.events.append("step", {"n": 1})
            # Shared arrays, more than SQLite's page cache holds: it spills them to
            # the disk mid-transaction, and fails there.
            for n in range(200):
                db.kv.put(f"big{n}", _big_list(f"mine {n}"))
        assert info.value.code == "storage"
        assert "full" in str(info.value)
        filler.unlink()
        # Another connection now writes where the failed transaction had written: the
        # same array ids, the same event sequence.
        other.kv.put("theirs", _big_list("theirs"))
        other.events.append("theirs", {"n": 2})
        assert db.kv.get("theirs") == _big_list("theirs")
        assert db.kv.get("big0") is None
        assert [item.event.event_type for item in db.events.list()] == ["start", "theirs"]
        # And this connection goes on writing, correctly.
        db.kv.put("after", _big_list("after", 10))
        db.events.append("after", {})
        assert other.kv.get("after") == _big_list("after", 10)
        assert [e.event.sequence for e in other.events.list()] == [0, 1, 2]
        assert db.events.verify().ok


def test_a_full_disk_in_an_inner_level_dooms_the_whole_transaction(small_disk: Path) -> None:
    path = small_disk / "agent"
    failed = None
    with rewinddb.open(path) as db:
        db.kv.put("kept", 1)
        filler = _fill(small_disk, leave=256 * 1024)
        with pytest.raises(rewinddb.RewindError) as info, db.atomic():
            db.kv.put("a", 2)
            try:
                with db.atomic():  # a savepoint, which SQLite's own rollback removed
                    for n in range(200):  # more than SQLite's page cache holds
                        db.kv.put(f"big{n}", _big_list(f"mine {n}"))
            except rewinddb.RewindError as inner:
                failed = inner.code
            db.kv.put("b", 3)  # the transaction is gone: refused, not written alone
        assert failed == "storage"
        assert info.value.code == "transaction.aborted"
        filler.unlink()
        assert db.kv.get("kept") == 1
        assert db.kv.get("a") is None and db.kv.get("b") is None
        db.kv.put("c", 4)
        assert db.kv.get("c") == 4


def test_a_full_disk_at_commit_is_a_storage_error_and_forgotten(small_disk: Path) -> None:
    path = small_disk / "agent"
    with rewinddb.open(path) as db, rewinddb.open(path) as other:
        filler = _fill(small_disk, leave=96 * 1024)
        with pytest.raises(rewinddb.RewindError) as info, db.atomic():
            for n in range(20):  # fits SQLite's page cache: written at COMMIT
                db.kv.put(f"big{n}", _big_list(f"mine {n}"))
        assert info.value.code == "storage" and "full" in str(info.value)
        filler.unlink()
        other.kv.put("theirs", _big_list("theirs"))
        assert db.kv.get("theirs") == _big_list("theirs")
        assert db.kv.keys() == ["theirs"]


@pytest.mark.parametrize("failure", [KeyboardInterrupt, ValueError])
def test_any_failure_inside_a_transaction_forgets_what_it_wrote(
    tmp_path: Path, failure: type[BaseException]
) -> None:
    path = tmp_path / "agent"
    with rewinddb.open(path) as db, rewinddb.open(path) as other:
        with pytest.raises(failure), db.atomic():
            db.kv.put("mine", _big_list("mine"))
            db.events.append("mine", {})
            raise failure()
        other.kv.put("theirs", _big_list("theirs"))  # the same array id, the same sequence
        other.events.append("theirs", {})
        assert db.kv.get("theirs") == _big_list("theirs")
        assert [item.event.event_type for item in db.events.list()] == ["theirs"]
