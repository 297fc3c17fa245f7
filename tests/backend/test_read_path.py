"""One read (``kv.get``, ``json.get``, ``state.get``) start to end (``Engine.read_key``):
it answers from the connection's memory when it can, and a stale answer is impossible
whatever changed the truth since the memory was filled (another connection's commit,
delete, purge, prune or erasure; a rollback of this connection's own writes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewinddb
from rewinddb.errors import RewindError

from .conftest import statements


@pytest.fixture
def two(db_path: Path) -> Iterator[tuple[rewinddb.Database, rewinddb.Database]]:
    with rewinddb.open(db_path) as first, rewinddb.open(db_path) as second:
        yield first, second


def warm(db: rewinddb.Database, branch: str, key: str, *versions: int) -> None:
    """Read ``key`` now and at ``versions`` so the memory holds what they need."""
    view = db.at(branch)
    view.kv.get(key)
    for version in versions:
        view.kv.get(key, as_of=version)


def outcome(call: Any) -> Any:
    try:
        return ("value", call())
    except RewindError as error:
        return ("error", error.code)


def test_a_remembered_read_runs_one_statement(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        old = db.kv.put("k", {"n": 1})
        db.kv.put("k", {"n": 2})
        warm(db, "default", "k", old)
        with statements(db) as seen:
            assert db.kv.get("k") == {"n": 2}
            assert db.kv.get("k", as_of=old + 1) == {"n": 2}  # the newest answers it too
        assert seen == ["PRAGMA data_version"] * 2
        with statements(db) as seen:
            assert db.kv.get("k", as_of=old) == {"n": 1}  # older: one seek, with the token
        assert ran(seen) == ["seek with the token"], seen


def ran(seen: list[str]) -> list[str]:
    """The statements run, by what they are (not the pragma's own, traced as ``--``)."""
    kinds = []
    for sql in seen:
        if sql.startswith("--"):
            continue
        if "pragma_data_version" in sql and "FROM rewind_entries" in sql:
            kinds.append("seek with the token")
        elif sql == "PRAGMA data_version":
            kinds.append("token")
        elif "FROM rewind_branches b LEFT JOIN rewind_entries" in sql:
            kinds.append("branch and entry")
        elif "FROM rewind_branches WHERE id = " in sql:
            kinds.append("a parent")
        elif "FROM rewind_entries" in sql:
            kinds.append("seek")
        else:
            kinds.append(sql)
    return kinds


def test_an_older_value_is_read_with_the_token_in_one_statement(
    two: tuple[rewinddb.Database, rewinddb.Database],
) -> None:
    """What the memory holds (the branch, the clock, the horizon) is used with the token
    its statement reads: when another connection committed since, nothing of it is
    trusted, and the read is made again the usual way."""
    db, other = two
    old = db.kv.put("k", "old")
    db.kv.put("k", "new")
    db.kv.put("later", 1)
    warm(db, "default", "k", old)  # (the horizon is known from the first read as_of on)
    with statements(db) as seen:
        assert db.kv.get("k", as_of=old) == "old"
        assert db.kv.get("later", "absent", as_of=old) == "absent"
    assert ran(seen) == ["seek with the token"] * 2
    other.kv.put("k", "newest")
    with statements(db) as seen:
        assert db.kv.get("k", as_of=old) == "old"
    assert ran(seen)[:2] == ["seek with the token", "token"], seen
    assert ran(seen)[2:] and set(ran(seen)[2:]) != {"seek with the token"}
    with statements(db) as seen:
        assert db.kv.get("k", as_of=old + 1) == "new"
    assert ran(seen) == ["seek with the token"]
    assert db.kv.get("k") == "newest"


def test_an_older_value_read_inside_a_transaction_asks_no_token(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        old = db.kv.put("k", "old")
        db.kv.put("k", "new")
        warm(db, "default", "k", old)
        with db.transaction():
            db.kv.put("k", "inside")
            with statements(db) as seen:
                assert db.kv.get("k", as_of=old) == "old"
                assert db.kv.get("k") == "inside"
            assert ran(seen) == ["seek"]
        with db.read(), statements(db) as seen:
            assert db.kv.get("k", as_of=old) == "old"
            assert db.kv.get("k", as_of=old + 1) == "new"
        assert ran(seen) == ["token", "seek", "seek"]


def test_another_connections_commit_is_seen_by_both_kinds_of_read(
    two: tuple[rewinddb.Database, rewinddb.Database],
) -> None:
    db, other = two
    first = db.kv.put("k", "one")
    warm(db, "default", "k", first)
    second = other.kv.put("k", "two")
    assert db.kv.get("k") == "two"
    assert db.kv.get("k", as_of=second) == "two"  # past the clock it remembered
    assert db.kv.get("k", as_of=first) == "one"
    other.kv.delete("k")
    assert db.kv.get("k", "gone") == "gone"
    assert "k" not in db.kv


def test_a_branch_another_connection_deleted_reads_as_deleted(
    two: tuple[rewinddb.Database, rewinddb.Database],
) -> None:
    db, other = two
    db.branches.fork("default", "b")
    view = db.at("b")
    version = view.kv.put("k", 1)
    warm(db, "b", "k", version)
    other.branches.delete("b")
    assert outcome(lambda: view.kv.get("k")) == ("error", "not_found.engine.branch")
    assert outcome(lambda: view.kv.get("k", as_of=version)) == (
        "error",
        "not_found.engine.branch",
    )


def test_a_branch_purged_and_made_again_under_its_name_reads_the_new_one(
    two: tuple[rewinddb.Database, rewinddb.Database],
) -> None:
    db, other = two
    db.branches.fork("default", "b")
    view = db.at("b")
    version = view.kv.put("k", "old branch")
    warm(db, "b", "k", version)
    old_id = db._engine.branch("b").id
    other.branches.delete("b", purge=True)
    other.branches.fork("default", "b")
    assert other._engine.branch("b").id == old_id  # the id came round again
    assert view.kv.get("k") is None
    assert view.kv.get("k", as_of=version) is None
    other.at("b").kv.put("k", "new branch")
    assert view.kv.get("k") == "new branch"
    assert view.kv.get("k", as_of=version) is None


def test_history_another_connection_pruned_is_unavailable(
    two: tuple[rewinddb.Database, rewinddb.Database],
) -> None:
    db, other = two
    db.branches.fork("default", "run")  # (the default branch is never pruned)
    run = db.at("run")
    versions = [run.kv.put("k", n) for n in range(5)]
    warm(db, "run", "k", *versions)
    other.prune("run", before=versions[3])
    assert outcome(lambda: run.kv.get("k", as_of=versions[1])) == (
        "error",
        "history_unavailable",
    )
    assert run.kv.get("k", as_of=versions[3]) == 3
    assert run.kv.get("k") == 4


def test_history_this_connection_pruned_is_unavailable(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.branches.fork("default", "run")
        run = db.at("run")
        versions = [run.kv.put("k", n) for n in range(5)]
        warm(db, "run", "k", *versions)
        db.prune("run", before=versions[3])
        assert outcome(lambda: run.kv.get("k", as_of=versions[1])) == (
            "error",
            "history_unavailable",
        )
        assert run.kv.get("k", as_of=versions[4]) == 4


@pytest.mark.parametrize("by_other", [False, True])
def test_an_erased_key_reads_as_absent_at_every_version(
    two: tuple[rewinddb.Database, rewinddb.Database], by_other: bool
) -> None:
    db, other = two
    versions = [db.kv.put("k", n) for n in range(3)]
    db.kv.put("kept", "yes")
    warm(db, "default", "k", *versions)
    (other if by_other else db).erase_key("kv", "k")
    assert db.kv.get("k") is None
    assert [db.kv.get("k", as_of=v) for v in versions] == [None, None, None]
    assert db.kv.get("kept") == "yes"


def test_a_rolled_back_transaction_leaves_no_answer_behind(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        kept = db.kv.put("k", "kept")
        warm(db, "default", "k", kept)
        with pytest.raises(KeyError), db.transaction():
            db.kv.put("k", "lost")
            db.kv.put("new", "lost")
            assert db.kv.get("k") == "lost"
            raise KeyError("undo")
        assert db.kv.get("k") == "kept"
        assert db.kv.get("new") is None
        assert db.kv.get("k", as_of=kept) == "kept"
        assert outcome(lambda: db.kv.get("k", as_of=kept + 1)) == ("error", "invalid.as_of")


def test_a_savepoint_rolled_back_leaves_no_answer_behind(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.kv.put("k", "before")
        with db.transaction():
            inside = db.kv.put("k", "inside")
            with pytest.raises(KeyError), db.atomic():
                db.kv.put("k", "rolled back")
                db.kv.put("other", "rolled back")
                assert db.kv.get("k") == "rolled back"
                raise KeyError("undo")
            assert db.kv.get("k") == "inside"
            assert db.kv.get("k", as_of=inside) == "inside"
            assert db.kv.get("other") is None
        assert db.kv.get("k") == "inside"
        assert db.kv.get("other") is None


def test_reads_on_forks_see_their_lineage(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        root = db.kv.put("k", "root")
        db.kv.put("only on default", 1)
        db.branches.fork("default", "a")
        fork_a = db.version
        db.kv.put("k", "default, after the fork")
        db.at("a").kv.put("mine", "a")
        db.branches.fork("a", "b")
        fork_b = db.version
        b = db.at("b")
        for _ in range(2):  # the second time from the memory
            assert b.kv.get("k") == "root"
            assert b.kv.get("only on default") == 1
            assert b.kv.get("mine") == "a"
            assert b.kv.get("k", as_of=fork_b) == "root"  # at its fork point: its parents
            assert b.kv.get("mine", as_of=fork_b) == "a"
            assert outcome(lambda: b.kv.get("k", as_of=root)) == ("error", "history_unavailable")
            assert db.at("a").kv.get("k", as_of=fork_a) == "root"
        b.kv.put("k", "b")
        assert b.kv.get("k") == "b"
        assert b.kv.get("k", as_of=fork_b) == "root"


BAD_READS = [
    (lambda db: db.kv.get(""), "invalid.key"),
    (lambda db: db.kv.get(7), "invalid.key"),
    (lambda db: db.kv.get("k\x00"), "invalid.key"),
    (lambda db: db.kv.get("k", as_of=-1), "invalid.as_of"),
    (lambda db: db.kv.get("k", as_of=True), "invalid.as_of"),
    (lambda db: db.kv.get("k", as_of=1.0), "invalid.as_of"),
    (lambda db: db.kv.get("k", as_of="1"), "invalid.as_of"),
    (lambda db: db.kv.get("k", as_of=10**6), "invalid.as_of"),
    (lambda db: db.kv.get("k", as_of=2**70), "invalid.as_of"),
    (lambda db: db.kv.get([], as_of=1), "invalid.key"),
    (lambda db: db._engine.read_key(["b"], "kv", "k", None), "invalid.branch"),
    (lambda db: db._engine.read_key("nope", "kv", "k", 1), "not_found.engine.branch"),
]


@pytest.mark.parametrize(("read", "code"), BAD_READS)
def test_bad_reads_fail_the_same_with_a_warm_memory_or_a_cold_one(
    db_path: Path, read: Any, code: str
) -> None:
    with rewinddb.open(db_path) as db:
        db.kv.put("k", 1)
        db.kv.get("k")
        db.kv.get("k", as_of=1)
        assert outcome(lambda: read(db)) == ("error", code)
        db._engine.memory.clear()
        assert outcome(lambda: read(db)) == ("error", code)


def test_every_read_agrees_with_a_fresh_connection(db_path: Path) -> None:
    """Reads through a memory kept across many writes (this connection's and another's)
    give what a connection that remembers nothing reads."""
    with rewinddb.open(db_path) as db, rewinddb.open(db_path) as other:
        versions = []
        for n in range(30):
            writer = other if n % 4 == 3 else db
            if n % 7 == 6:
                writer.kv.delete(f"k{n % 5}")
                versions.append(writer.version)
            else:
                versions.append(writer.kv.put(f"k{n % 5}", {"n": n}))
            for key in (f"k{i}" for i in range(6)):
                db.kv.get(key)
                db.kv.get(key, as_of=versions[len(versions) // 2])
        with rewinddb.open(db_path) as fresh:
            for key in (f"k{i}" for i in range(6)):
                for version in [None, *versions]:
                    assert db.kv.get(key, as_of=version) == fresh.kv.get(key, as_of=version)


def test_a_read_of_a_value_with_shared_arrays_asks_for_the_token_once(db_path: Path) -> None:
    with rewinddb.open(db_path) as db, rewinddb.open(db_path) as other:
        items = [{"n": n, "text": "item " * 20} for n in range(200)]
        first = db.kv.put("list", items)
        db.kv.put("list", [*items, {"n": 200}])
        assert db._engine.memory.get("entry", (1, "kv", "list")).refs is not None
        for _ in range(2):  # remembered, then after another connection's commit
            with statements(db) as seen:
                assert db.kv.get("list") == [*items, {"n": 200}]
                assert db.kv.get("list", as_of=first) == items
            assert seen.count("PRAGMA data_version") == 2, seen
            other.kv.put("elsewhere", 1)


def test_a_read_of_now_on_a_branch_the_memory_forgot_reads_it_with_the_entry(
    two: tuple[rewinddb.Database, rewinddb.Database],
) -> None:
    """After another connection's commit the memory knows no branch: a read of now finds
    the branch and its own newest entry of the key in one statement (and the ancestors'
    when it has none), and remembers both."""
    db, other = two
    db.kv.put("k", "on default")
    db.branches.fork("default", "b")
    b = db.at("b")
    b.kv.put("mine", "on b")
    for key, value, reads in (
        ("mine", "on b", ["token", "branch and entry"]),
        ("k", "on default", ["token", "branch and entry", "a parent", "seek"]),
        ("nothing", None, ["token", "branch and entry", "a parent", "seek"]),
    ):
        other.kv.put("elsewhere", key)
        with statements(db) as seen:
            assert b.kv.get(key) == value
            assert b.kv.get(key) == value  # remembered: the token only
        assert ran(seen) == [*reads, "token"], seen
    other.branches.delete("b")
    assert outcome(lambda: b.kv.get("mine")) == ("error", "not_found.engine.branch")
    assert db.kv.get("k") == "on default"
