"""The one rule for what a connection remembers between statements (``_memory``): kept
while no other connection commits, written through by this connection's writes, dropped
on rollback, and on PostgreSQL kept only inside a write transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import rewinddb
from rewinddb import _engine, _memory

from .conftest import statements


def reads_of_entries(seen: list[str]) -> list[str]:
    return [s for s in seen if "FROM rewind_entries" in s]


@pytest.fixture
def two(db_path: Path) -> Iterator[tuple[rewinddb.Database, rewinddb.Database]]:
    with rewinddb.open(db_path) as first, rewinddb.open(db_path) as second:
        yield first, second


def test_an_answer_is_kept_while_no_other_connection_commits(
    two: tuple[rewinddb.Database, rewinddb.Database],
) -> None:
    db, other = two
    db.kv.put("k", {"n": 1})
    other.kv.get("k")  # another connection reading changes nothing
    with statements(db) as seen:
        assert db.kv.get("k") == {"n": 1}
        assert db.kv.get("k", as_of=db.version) == {"n": 1}
        assert db.version == other.version
    assert not reads_of_entries(seen), seen
    other.kv.put("k", {"n": 2})
    with statements(db) as seen:
        assert db.kv.get("k") == {"n": 2}  # the other's commit dropped what was known
    assert reads_of_entries(seen)
    assert db.version == other.version


def test_writes_write_through_and_older_versions_are_read(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        first = db.kv.put("k", "one")
        with db.transaction():
            db.kv.put("k", "two")
            db.kv.put("k", "three")  # the same commit's entry, rewritten
            with statements(db) as seen:
                assert db.kv.get("k") == "three"
            assert not reads_of_entries(seen)
        with statements(db) as seen:
            assert db.kv.get("k") == "three"
            assert db.kv.get("missing") is None
            assert db.kv.get("missing") is None
        assert len(reads_of_entries(seen)) == 1  # the absent key, once
        with statements(db) as seen:
            assert db.kv.get("k", as_of=first) == "one"  # older than what is known: read
        assert reads_of_entries(seen)


def test_a_rollback_forgets_everything(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.kv.put("k", "kept")
        db.events.append("kept")
        db.json.set("doc", "$", [f"item {i} " + "x" * 300 for i in range(10)])
        assert len(db._engine.memory) > 0
        with pytest.raises(KeyError), db.atomic():
            db.kv.put("k", "lost")
            db.events.append("lost")
            db.json.set("doc", "$", ["other"] * 10)
            db.branches.fork("default", "lost")
            raise KeyError("undo")
        assert len(db._engine.memory) == 0
        assert db.kv.get("k") == "kept"
        assert [i.event.event_type for i in db.events.list()] == ["kept"]
        assert len(db.json.get("doc")) == 10
        assert not db.branches.exists("lost")
        db.events.append("next")  # builds on the committed log end
        assert [i.event.sequence for i in db.events.list()] == [0, 1]
        assert db.events.verify().ok


def test_a_savepoint_rolled_back_inside_a_transaction(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.kv.put("k", "before")
        with db.transaction():
            db.kv.put("k", "inside")
            with pytest.raises(KeyError), db.atomic():
                db.kv.put("k", "rolled back")
                raise KeyError("undo")
            assert db.kv.get("k") == "inside"
        assert db.kv.get("k") == "inside"


def test_an_answer_read_while_another_connection_commits_is_not_kept(
    two: tuple[rewinddb.Database, rewinddb.Database],
) -> None:
    """Outside a transaction a read and the check of the token are separate statements:
    when another connection commits between them, the answer (maybe older than that
    commit) is dropped, not kept under the new token."""
    db, other = two
    db.kv.put("k", "old")
    db._engine.memory.clear()
    raw = db._engine.conn._raw
    committed = []

    def commit_during_the_read(sql: str) -> None:
        if "FROM rewind_entries" in sql and not committed:
            committed.append(other.kv.put("k", "new"))

    raw.set_trace_callback(commit_during_the_read)
    try:
        first = db.kv.get("k")
    finally:
        raw.set_trace_callback(None)
    assert committed and first in ("old", "new")
    assert db.kv.get("k") == "new"


def test_the_memory_is_bounded(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_memory.Memory, "limit", 50)
    monkeypatch.setattr(_memory.Memory, "byte_limit", 20_000)
    with rewinddb.open(db_path) as db:
        for n in range(200):
            db.kv.put(f"k{n}", "v" * (n % 7) * 100)
            assert len(db._engine.memory) <= 50
            assert db._engine.memory._bytes <= 20_000
        assert [db.kv.get(f"k{n}") for n in range(200)] == ["v" * (n % 7) * 100 for n in range(200)]


def test_an_answer_replaced_is_counted_once(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        memory = db._engine.memory
        db.kv.put("k", "x" * 1000)
        counted = memory._bytes
        for _ in range(20):
            db.kv.put("k", "x" * 1000)
        assert memory._bytes == counted


def test_a_deleted_branch_is_forgotten_and_a_fork_is_seen(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.branches.fork("default", "b")
        db.at("b").kv.put("k", 1)
        db.branches.delete("b")
        with pytest.raises(rewinddb.BranchNotFound):
            db.at("b")
        db.branches.fork("default", "b")  # a new branch of the same name
        assert db.at("b").kv.get("k") is None


def test_on_postgresql_answers_are_kept_only_inside_a_write_transaction(
    postgres_url: str,
) -> None:
    with rewinddb.open(postgres_url) as db:
        db.kv.put("k", "v")
        memory = db._engine.memory
        assert len(memory) == 0
        with db.atomic():
            db.kv.put("k", "w")
            assert memory.get("clock") is not _memory.UNKNOWN  # known inside
            assert db.kv.get("k") == "w"
        assert memory.get("clock") is _memory.UNKNOWN
        assert db.kv.get("k") == "w"


def test_a_read_asks_for_the_change_token_once(db_path: Path) -> None:
    """Outside a transaction a read asks for the token at its start only: the rows it
    reads come after that, so nothing older than the token is kept."""
    with rewinddb.open(db_path) as db:
        for n in range(20):
            db.kv.put(f"k{n % 3}", n)
        with statements(db) as seen:
            assert db.kv.get("k1", as_of=5) == 4
            assert db.kv.get_many(["k0", "k2"], as_of=10) == {"k0": 9, "k2": 8}
        assert len([s for s in seen if s == "PRAGMA data_version"]) == 2, seen


def _commits(path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path / "rewind.sqlite3")
    try:
        return conn.execute("SELECT * FROM rewind_commits ORDER BY version").fetchall()
    finally:
        conn.close()


def test_a_commit_is_allocated_from_memory_exactly_as_the_statement_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remembered clock, newest commit time and chain heads give the rows
    ``NEXT_COMMIT`` would: the same writes, with the memory dropped before each
    allocation in one database and kept in the other, store the same commits (also
    when the machine's clock goes back, and across branches and a transaction)."""

    def history(path: Path, forget: bool) -> list[str]:
        times = iter([5_000, 9_000, 7_000, 7_000, 12_000, 11_000, 20_000, 20_000] * 4)
        monkeypatch.setattr(_engine, "now_micros", lambda: next(times))
        seen: list[str] = []
        with rewinddb.open(path) as db:
            commit = _engine.WriteContext.commit

            def allocate(context: _engine.WriteContext) -> int:
                if forget and context.version is None:
                    db._engine.memory.clear()
                return commit(context)

            monkeypatch.setattr(_engine.WriteContext, "commit", allocate)
            with statements(db) as seen:
                db.kv.put("a", 1)
                db.kv.put("a", 2)  # the clock goes back: the newest commit's time
                db.branches.fork("default", "run")
                db.at("run").kv.put("b", 1)
                db.kv.put("a", 3)
                with db.atomic():
                    db.at("run").events.append("e", {"n": 1})
                    db.kv.put("a", 4)
                db.at("run").json.set("doc", "$", {"x": 1})
            monkeypatch.setattr(_engine.WriteContext, "commit", commit)
            assert db.verify().ok
        return seen

    read = history(tmp_path / "read", forget=True)
    remembered = history(tmp_path / "remembered", forget=False)
    assert sum("INSERT INTO rewind_commits" in s and "SELECT" in s for s in read) == 7
    assert sum("INSERT INTO rewind_commits" in s and "VALUES" in s for s in remembered) >= 4
    assert _commits(tmp_path / "read") == _commits(tmp_path / "remembered")


def test_a_commit_a_savepoint_rolled_back_is_no_branchs_chain_head(db_path: Path) -> None:
    """A commit undone by a savepoint inside ``db.atomic()`` stays in the list of
    commits to seal (its row is gone): its hash must not become what the branch's next
    commit chains on, on the same branch or on a fork that takes its branch's id."""
    with rewinddb.open(db_path) as db:
        db.kv.put("a", 0)
        db.branches.fork("default", "b")
        db.at("b").kv.put("x", 0)
        with db.atomic():
            db.kv.put("a", 1)
            with pytest.raises(RuntimeError), db.atomic():
                db.at("b").kv.put("x", 1)  # rolled back
                raise RuntimeError
        db.kv.put("a", 2)  # the clock and the newest commit's time are remembered again
        db.at("b").kv.put("x", 2)
        with db.atomic():
            db.kv.put("a", 3)
            with pytest.raises(ValueError), db.atomic():
                db.branches.fork("default", "c")
                db.at("c").kv.put("y", 1)
                raise ValueError
            db.branches.fork("default", "d")  # the id the rolled-back fork had
        db.kv.put("a", 4)
        db.at("d").kv.put("y", 2)
        assert db.verify().ok
        assert db.at("b").kv.get("x") == 2 and db.at("d").kv.get("y") == 2
