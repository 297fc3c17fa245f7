"""kv, json and events on a branch: writes are versions, reads take as_of."""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewinddb


def test_every_write_is_the_next_version(db: rewinddb.Database) -> None:
    assert db.version == 0
    assert db.kv.put("a", 1) == 1
    assert db.json.set("doc", "$", {"x": 1}) == 2
    event = db.events.append("tick", {"n": 1})
    assert event.version == 3
    assert db.kv.delete("a") == 4
    assert db.kv.delete("a") is None  # nothing to delete: no version
    assert db.version == 4


def test_kv_put_get_as_of_and_history(db: rewinddb.Database) -> None:
    v1 = db.kv.put("task", "draft", trigger="init")
    v2 = db.kv.put("task", {"title": "final", "tags": ["a", "b"]}, message="second try")
    v3 = db.kv.delete("task", trigger="cleanup")
    assert db.kv.get("task") is None
    assert db.kv.get("task", "gone") == "gone"
    assert db.kv.get("task", as_of=v1) == "draft"
    assert db.kv.get("task", as_of=v2) == {"tags": ["a", "b"], "title": "final"}
    history = db.kv.history("task")
    assert [(h.version, h.value, h.trigger, h.deleted) for h in history] == [
        (v1, "draft", "init", False),
        (v2, {"tags": ["a", "b"], "title": "final"}, None, False),
        (v3, None, "cleanup", True),
    ]
    assert history[0].timestamp <= history[1].timestamp <= history[2].timestamp
    assert history[0].timestamp.tzinfo is not None
    assert db.commits()[1].message == "second try"


def test_kv_keys_prefix_and_as_of(db: rewinddb.Database) -> None:
    db.kv.put("user:1", "ann")
    v = db.kv.put("user:2", "bob")
    db.kv.put("task", "x")
    db.kv.delete("user:1")
    assert db.kv.keys() == ["task", "user:2"]
    assert db.kv.keys(prefix="user:") == ["user:2"]
    assert db.kv.keys(as_of=v) == ["user:1", "user:2"]
    assert "task" in db.kv and "user:1" not in db.kv


def test_kv_bytes_and_falsy_values(db: rewinddb.Database) -> None:
    db.kv.put("blob", b"\x00\x01binary")
    db.kv.put("zero", 0)
    db.kv.put("none", None)
    db.kv.put("empty", "")
    assert db.kv.get("blob") == b"\x00\x01binary"
    assert db.kv.get("zero") == 0
    assert db.kv.get("none", "default") is None  # a stored None is not "missing"
    assert db.kv.get("empty") == ""
    assert db.kv.keys() == ["blob", "empty", "none", "zero"]


def test_as_of_datetime(db: rewinddb.Database) -> None:
    db.kv.put("k", "old")
    moment = datetime.now(timezone.utc)
    db.kv.put("k", "new")
    assert db.kv.get("k", as_of=moment) == "old"
    assert db.kv.get("k", as_of=datetime.now(timezone.utc)) == "new"
    assert db.kv.get("k", as_of=moment - timedelta(days=1)) is None  # version 0: empty


def test_json_paths(db: rewinddb.Database) -> None:
    db.json.set("portfolio", "$", {"stocks": 60, "bonds": 40})
    v = db.json.set("portfolio", "$.stocks", 20)
    db.json.set("portfolio", "$.meta.owner.name", "ann")  # creates the missing objects
    db.json.set("portfolio", "$['key with space']", [1, 2, 3])
    db.json.set("portfolio", "$['key with space'][1]", 20)
    db.json.set("portfolio", "$['key with space'][3]", 4)  # index == length appends
    assert db.json.get("portfolio") == {
        "bonds": 40,
        "stocks": 20,
        "meta": {"owner": {"name": "ann"}},
        "key with space": [1, 20, 3, 4],
    }
    assert db.json.get("portfolio", "$.meta.owner") == {"name": "ann"}
    assert db.json.get("portfolio", "$['key with space'][0]") == 1
    assert db.json.get("portfolio", '$["key with space"][1]') == 20
    assert db.json.get("portfolio", "$.stocks", as_of=v) == 20
    assert db.json.get("portfolio", "$.stocks", as_of=v - 1) == 60
    assert db.json.get("portfolio", "$.nope") is None
    assert db.json.get("portfolio", "$.nope", default=0) == 0
    assert db.json.get("missing") is None


def test_json_documents_read_back_with_sorted_keys(db: rewinddb.Database) -> None:
    db.json.set("p", "$", {"stocks": 20, "bonds": 80})
    assert list(db.json.get("p")) == ["bonds", "stocks"]
    assert str(db.json.get("p")) == "{'bonds': 80, 'stocks': 20}"


def test_delete_knows_what_another_connection_did_to_the_key(
    db: rewinddb.Database, db_target: str | Path
) -> None:
    """``kv.delete`` says None when there was nothing to delete; what this connection
    wrote last is not trusted once another connection wrote the key."""
    db.kv.put("a", 1)
    with rewinddb.open(db_target) as other:
        assert other.kv.delete("a") == 2
    assert db.kv.delete("a") is None and db.version == 2
    with rewinddb.open(db_target) as other:
        other.kv.put("a", 3)
    assert db.kv.delete("a") == 4 and db.kv.get("a") is None
    assert db.kv.delete("a") is None and db.kv.delete("never") is None
    assert [h.version for h in db.kv.history("a")] == [1, 2, 3, 4]


def test_json_delete_path_and_document(db: rewinddb.Database) -> None:
    db.json.set("d", "$", {"a": {"b": 1, "c": 2}, "list": [1, 2, 3]})
    assert db.json.delete("d", "$.a.b") is not None
    assert db.json.delete("d", "$.list[0]") is not None
    assert db.json.get("d") == {"a": {"c": 2}, "list": [2, 3]}
    assert db.json.delete("d", "$.a.nothing") is None
    v = db.json.delete("d")
    assert v is not None and db.json.get("d") is None
    assert db.json.keys() == []
    assert [h.deleted for h in db.json.history("d")] == [False, False, False, True]


def test_events_append_list_get_len(db: rewinddb.Database) -> None:
    first = db.events.append("tool.call", {"tool": "read"})
    db.kv.put("between", 1)
    second = db.events.append("tool.result", {"ok": True})
    third = db.events.append("tool.call", None)
    assert [first.sequence, second.sequence, third.sequence] == [0, 1, 2]
    assert len(db.events) == db.events.length() == 3
    items = db.events.list()
    assert [item.event.sequence for item in items] == [0, 1, 2]
    assert [item.version for item in items] == [first.version, second.version, third.version]
    assert [i.event.sequence for i in db.events.list(event_type="tool.call")] == [0, 2]
    assert [i.event.sequence for i in db.events.list(after=0, limit=1)] == [1]
    assert [i.event.sequence for i in db.events.list(as_of=second.version)] == [0, 1]
    assert db.events.length(as_of=first.version) == 1
    assert db.events.get(1).payload == {"ok": True}
    assert db.events.get(1).timestamp.tzinfo is not None
    with pytest.raises(rewinddb.EventNotFound):
        db.events.get(3)
    with pytest.raises(rewinddb.EventNotFound):
        db.events.get(2, as_of=second.version)


def test_event_hashes_chain(db: rewinddb.Database) -> None:
    a = db.events.append("a", {"n": 1})
    b = db.events.append("b", {"n": 2})
    assert len(a.hash) == 64 and a.hash != b.hash
    assert db.events.get(1).hash == b.hash


def test_transaction_groups_writes_into_one_version(db: rewinddb.Database) -> None:
    with db.transaction(trigger="batch", message="three at once"):
        db.kv.put("a", 1)
        db.kv.put("a", 2)  # the last write of a key in a version wins
        db.json.set("doc", "$.x", 1)
        db.events.append("note", {"n": 1})
    assert db.version == 1
    assert db.kv.get("a") == 2
    commit = db.commits()[0]
    assert (commit.version, commit.trigger, commit.message) == (1, "batch", "three at once")
    assert db.kv.history("a")[0].trigger == "batch"


def test_transaction_rolls_back_on_error(db: rewinddb.Database) -> None:
    db.kv.put("a", 1)
    with pytest.raises(RuntimeError), db.transaction():
        db.kv.put("a", 2)
        db.events.append("e", {})
        raise RuntimeError("agent crashed")
    assert db.kv.get("a") == 1 and db.version == 1 and len(db.events) == 0


def test_refused_write_inside_transaction_leaves_the_rest(db: rewinddb.Database) -> None:
    with db.transaction():
        db.kv.put("a", 1)
        with pytest.raises(rewinddb.InvalidValueError):
            db.kv.put("b", {1, 2})
        db.kv.put("c", 3)
    assert db.kv.keys() == ["a", "c"] and db.version == 1


def test_nested_transactions_join_the_outer_one(db: rewinddb.Database) -> None:
    work = db.at("default")
    with db.transaction():
        db.kv.put("a", 1)
        with work.transaction():
            work.kv.put("b", 2)
    assert db.version == 1


def test_transaction_on_one_branch_refuses_writes_to_another(db: rewinddb.Database) -> None:
    db.branches.fork("default", "other")
    with pytest.raises(rewinddb.RewindError) as info, db.transaction():
        db.kv.put("a", 1)
        db.at("other").kv.put("b", 2)
    assert info.value.code == "invalid.transaction"
    assert db.version == 0


def test_empty_transaction_writes_nothing(db: rewinddb.Database) -> None:
    with db.transaction():
        pass
    assert db.version == 0 and db.commits() == []


def test_atomic_commits_writes_on_several_branches_together(
    db: rewinddb.Database, db_target: str | Path
) -> None:
    db.kv.put("before", 1)
    with db.atomic():
        child = db.branches.fork("default", "child")
        db.at("child").kv.put("a", 1)
        with db.transaction(message="two at once"):
            db.kv.put("b", 2)
            db.events.append("step")
        with rewinddb.open(db_target) as other:  # another connection sees none of it yet
            assert other.version == 1 and not other.branches.exists("child")
    assert child.forked_at == 1 and db.version == 3  # each write kept its own version
    assert db.at("child").kv.get("a") == 1 and db.kv.get("b") == 2
    assert [c.branch for c in db.commits()] == ["default", "child", "default"]


def test_atomic_rolls_everything_back_on_error(db: rewinddb.Database) -> None:
    db.kv.put("a", 1)
    with pytest.raises(RuntimeError), db.atomic():
        db.branches.fork("default", "child")
        db.at("child").kv.put("a", 2)
        db.kv.put("a", 3)
        db.events.append("step")
        raise RuntimeError("the process died here")
    assert db.version == 1 and db.kv.get("a") == 1 and len(db.events) == 0
    assert not db.branches.exists("child")
    db.kv.put("a", 4)  # the clock goes on from where it was
    assert db.version == 2


def test_atomic_rolled_back_inside_a_transaction_undoes_only_itself(
    db: rewinddb.Database,
) -> None:
    with db.transaction(message="tx"):
        with pytest.raises(KeyError), db.atomic():
            db.kv.put("a", 1)  # the transaction's first write: its version is allocated
            raise KeyError("undo the block")
        db.kv.put("b", 1)
        with pytest.raises(KeyError), db.atomic():
            db.kv.put("b", 2)  # a key the transaction had already written
            db.kv.put("c", 2)
            raise KeyError("undo the block")
        assert db.kv.put("d", 3) == 1
    assert db.version == 1 and [c.message for c in db.commits()] == ["tx"]
    assert db.kv.items() == {"b": 1, "d": 3}
    assert db.kv.put("e", 4) == 2 and db.kv.items() == {"b": 1, "d": 3, "e": 4}


def test_nested_levels_share_a_savepoint_and_still_undo_only_themselves(
    db: rewinddb.Database,
) -> None:
    """A level that starts before any statement ran since the newest savepoint rolls
    back to that one; what each level undoes stays exactly its own."""
    with db.atomic():
        db.kv.put("kept", 1)
        with pytest.raises(KeyError), db.atomic(), db.atomic():  # both share one savepoint
            db.kv.put("lost", 1)
            raise KeyError("undo both blocks")
        with db.atomic():  # shares the savepoint the rollback left fresh
            db.kv.put("second", 2)
            with pytest.raises(KeyError), db.atomic():  # statements ran: a savepoint of its own
                db.kv.put("lost", 2)
                raise KeyError("undo the inner block only")
        with pytest.raises(KeyError), db.atomic():
            with db.atomic():
                db.kv.put("lost", 3)  # the inner block commits into the outer one ...
            raise KeyError("... which then rolls back")
    assert db.kv.items() == {"kept": 1, "second": 2}
    # A transaction that rolled back with a shared savepoint left nothing stale behind.
    with pytest.raises(KeyError), db.atomic():
        with pytest.raises(KeyError), db.atomic():
            db.kv.put("lost", 4)
            raise KeyError("inner")
        raise KeyError("outer")
    with db.atomic(), db.transaction():
        db.kv.put("after", 5)
        with pytest.raises(rewinddb.InvalidValueError):
            db.kv.put("bad", float("nan"))
    assert db.kv.items() == {"kept": 1, "second": 2, "after": 5}


def test_a_write_in_a_transaction_in_atomic_costs_one_savepoint(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.kv.put("warm", 0)  # the branch is known: its lookup runs no statement
        statements: list[str] = []
        db._engine.conn._raw.set_trace_callback(statements.append)
        with db.atomic(), db.transaction():
            db.kv.put_many({"a": 1, "b": 2})
        db._engine.conn._raw.set_trace_callback(None)
        assert sum(s.startswith("SAVEPOINT") for s in statements) == 1, statements
        assert db.kv.items() == {"a": 1, "b": 2, "warm": 0}


def test_atomic_without_savepoints_sets_none_and_commits_like_atomic(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.kv.put("warm", 0)
        statements: list[str] = []
        db._engine.conn._raw.set_trace_callback(statements.append)
        with db.atomic(savepoints=False):
            with db.transaction():
                db.kv.put_many({"a": 1, "b": 2})
                db.kv.delete("warm")
            db.at("default").kv.put("c", 3)
            with db.atomic():  # an inner block takes the outermost block's choice
                db.events.append("step")
        db._engine.conn._raw.set_trace_callback(None)
        assert not [s for s in statements if "SAVEPOINT" in s], statements
        assert db.kv.items() == {"a": 1, "b": 2, "c": 3} and len(db.events) == 1
        assert db.version == 4


def test_the_clock_in_a_write_transaction_is_the_version_it_allocated(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.kv.put("warm", 0)
        statements: list[str] = []
        db._engine.conn._raw.set_trace_callback(statements.append)
        with db.atomic():
            assert db.kv.put("a", 1) == 2
            assert db.version == 2 and db.kv.get("a") == 1
            with pytest.raises(KeyError), db.atomic():
                db.kv.put("b", 2)
                assert db.version == 3
                raise KeyError("undo the version too")
            assert db.version == 2  # the rolled-back version is not the clock
            assert db.kv.put("c", 3) == 3 and db.version == 3
        db._engine.conn._raw.set_trace_callback(None)
        clock_reads = [s for s in statements if s.startswith("SELECT clock.v")]
        assert len(clock_reads) == 1, clock_reads  # only after the rollback
        assert db.version == 3 and db.kv.items() == {"warm": 0, "a": 1, "c": 3}


def test_atomic_without_savepoints_rolls_back_whole_even_when_caught(
    db: rewinddb.Database,
) -> None:
    db.kv.put("before", 1)
    with pytest.raises(rewinddb.RewindError) as info, db.atomic(savepoints=False):
        db.kv.put("a", 1)
        with pytest.raises(rewinddb.InvalidValueError), db.transaction():
            db.kv.put("b", 2)
            db.kv.put("bad", float("nan"))
        # The failed block could not be undone alone: nothing else may be written.
        with pytest.raises(rewinddb.RewindError) as again:
            db.kv.put("c", 3)
        assert again.value.code == "transaction.aborted"
    assert info.value.code == "transaction.aborted"
    assert db.kv.items() == {"before": 1} and db.version == 1
    # An exception that leaves the block rolls it back like any atomic block; then the
    # database writes normally again.
    with pytest.raises(KeyError), db.atomic(savepoints=False):
        db.kv.put("a", 1)
        with db.transaction():
            db.kv.put("b", 2)
            raise KeyError("gone")
    assert db.kv.items() == {"before": 1}
    with db.atomic(savepoints=False):
        db.kv.put("after", 2)
    assert db.kv.items() == {"before": 1, "after": 2} and db.version == 2


def test_atomic_savepoints_flag_is_checked(db: rewinddb.Database) -> None:
    with pytest.raises(rewinddb.RewindError) as info, db.atomic(savepoints="no"):  # type: ignore[arg-type]
        db.kv.put("a", 1)
    assert info.value.code == "invalid.savepoints"
    assert db.kv.items() == {}


def test_change_mark_changes_with_any_write_and_only_then(
    db: rewinddb.Database, db_target: str | Path
) -> None:
    first = db.change_mark()
    if db._engine.conn.dialect != "sqlite":  # PostgreSQL cannot tell cheaply
        assert first is None
        return
    assert first is not None and db.change_mark() == first
    with db.read():
        db.kv.get("a")
        assert db.change_mark() == first
    db.kv.put("a", 1)
    after_own = db.change_mark()
    assert after_own != first and db.change_mark() == after_own
    with db.atomic():
        db.kv.put("b", 1)
        inside = db.change_mark()  # after the last write: the mark once it commits
    assert db.change_mark() == inside != after_own
    with rewinddb.open(db_target) as other:
        other.kv.put("c", 1)
    assert db.change_mark() != inside
    before_rollback = db.change_mark()
    with pytest.raises(KeyError), db.atomic():
        db.kv.put("d", 1)
        raise KeyError("rolled back")
    assert db.change_mark() != before_rollback  # a rollback moves the mark too
    db.close()
    with pytest.raises(rewinddb.DatabaseClosedError):
        db.change_mark()


def test_atomic_is_refused_where_writes_are(db: rewinddb.Database, db_target: str | Path) -> None:
    with pytest.raises(rewinddb.RewindError) as info, db.read(), db.atomic():
        pass
    assert info.value.code == "invalid.transaction"
    with (
        rewinddb.open(db_target, readonly=True) as readonly,
        pytest.raises(rewinddb.ReadOnlyError),
        readonly.atomic(),
    ):
        pass


def test_big_values_round_trip(db: rewinddb.Database) -> None:
    doc = {"messages": [{"role": "user", "text": "x" * 300, "n": i} for i in range(50)]}
    v1 = db.json.set("chat", "$", doc)
    doc["messages"].append({"role": "assistant", "text": "y" * 300, "n": 50})
    v2 = db.json.set("chat", "$", doc)
    db.json.set("chat", "$.messages[0].text", "edited")
    assert len(db.json.get("chat", as_of=v1)["messages"]) == 50
    assert db.json.get("chat", as_of=v2) == doc
    assert db.json.get("chat", "$.messages[0].text") == "edited"
    assert db.json.get("chat", "$.messages[50].n") == 50


def test_a_write_rolled_back_inside_a_transaction_leaves_the_rest_whole(
    db: rewinddb.Database,
) -> None:
    db.kv.put("x", 0)
    with db.transaction():
        with pytest.raises(RuntimeError), db.transaction():
            db.kv.put("a", 1)
            raise RuntimeError("inner step failed")
        assert db.kv.put("a", 2) == 2
        db.kv.put("b", 3)
    assert (db.version, db.kv.get("a"), db.kv.get("b")) == (2, 2, 3)
    db.branches.fork("default", "other")
    db.at("other").kv.put("c", 4)
    assert db.kv.keys() == ["a", "b", "x"]


def test_each_write_in_a_transaction_keeps_its_own_trigger(db: rewinddb.Database) -> None:
    with db.transaction():
        db.state.set("a", 1, "tests_passed")
        db.state.set("b", 2, "review_done")
        db.kv.put("c", 3)
    assert [(t.key, t.trigger) for t in db.state.history()] == [
        ("a", "tests_passed"),
        ("b", "review_done"),
    ]
    assert db.kv.history("c")[0].trigger == "tests_passed"  # the commit's trigger
    assert db.commits()[0].trigger == "tests_passed"


def test_events_after_a_sequence_on_a_fork_and_in_the_past(db: rewinddb.Database) -> None:
    for n in range(5):
        db.events.append("step", {"n": n})
    db.branches.fork("default", "run")
    run = db.at("run")
    middle = run.events.append("step", {"n": 5}).version
    run.events.append("other", {"n": 6})
    run.events.append("step", {"n": 7})
    db.events.append("step", {"n": 99})  # on default after the fork: not seen by run

    def seqs(**options: object) -> list[int]:
        return [item.event.sequence for item in run.events.list(**options)]  # type: ignore[arg-type]

    assert seqs(after=2) == [3, 4, 5, 6, 7]
    assert seqs(after=4) == [5, 6, 7]
    assert seqs(after=2, limit=3) == [3, 4, 5]
    assert seqs(after=3, event_type="step") == [4, 5, 7]
    assert seqs(after=3, as_of=middle) == [4, 5]
    assert [i.event.payload["n"] for i in run.events.list(after=4)] == [5, 6, 7]


def test_kv_put_many_is_one_version(db: rewinddb.Database) -> None:
    db.kv.put("old", "x")
    long_list = [{"turn": i, "text": "lorem ipsum " * 8} for i in range(40)]  # shared array
    version = db.kv.put_many(
        {"b": {"n": 1}, "a": b"\x00raw", "list": long_list, "old": None}, trigger="batch"
    )
    assert version == db.version == 2
    assert db.kv.items() == {"a": b"\x00raw", "b": {"n": 1}, "list": long_list, "old": None}
    assert db.kv.get("old", as_of=1) == "x"
    assert {h.trigger for key in ("a", "b", "list", "old") for h in db.kv.history(key)[-1:]} == {
        "batch"
    }
    grown = db.kv.put_many({"list": [*long_list, {"turn": 40}]})
    assert db.kv.get("list") == [*long_list, {"turn": 40}]
    assert db.kv.get("list", as_of=version) == long_list
    assert grown == 3


def test_kv_put_many_inside_a_transaction_rewrites_keys_it_wrote(db: rewinddb.Database) -> None:
    with db.transaction(message="one step"):
        db.kv.put("a", 1)
        db.kv.put_many({"a": 2, "b": 3})
        db.kv.put_many({"b": 4, "c": 5})
    assert db.version == 1 and db.commits()[0].message == "one step"
    assert db.kv.items() == {"a": 2, "b": 4, "c": 5}
    assert [h.value for h in db.kv.history("b")] == [4]


def test_kv_put_many_bad_input(db: rewinddb.Database, refused) -> None:  # type: ignore[no-untyped-def]
    db.kv.put("k", 1)
    with refused(db, rewinddb.InvalidValueError, "invalid.value"):
        db.kv.put_many({"ok": 1, "bad": {1, 2}})
    with refused(db, rewinddb.InvalidInputError, "invalid.key"):
        db.kv.put_many({"": 1})
    with refused(db, rewinddb.InvalidInputError, "invalid.kv"):
        db.kv.put_many([("a", 1)])  # type: ignore[arg-type]
    with refused(db, rewinddb.InvalidInputError, "invalid.kv"):
        db.kv.put_many({})
    with refused(db, rewinddb.InvalidInputError, "invalid.trigger"):
        db.kv.put_many({"a": 1}, trigger=7)  # type: ignore[arg-type]
    with refused(db, rewinddb.BranchNotFound, "not_found.engine.branch"):
        db.at("nowhere").kv.put_many({"a": 1})
    with db.transaction():  # a refused put_many inside a transaction leaves the rest
        db.kv.put("kept", 1)
        with pytest.raises(rewinddb.InvalidValueError):
            db.kv.put_many({"lost": 1, "bad": float("nan")})
    assert db.kv.items() == {"k": 1, "kept": 1}


def test_kv_get_many_reads_what_get_reads(db: rewinddb.Database) -> None:
    """``get_many`` answers each key as ``get`` does, at any version and through forks,
    in one statement for every key the connection does not already know."""
    first = db.kv.put_many({"a": 1, "b": [f"item {i} " + "x" * 300 for i in range(10)]})
    db.kv.delete("a")
    db.kv.put("c", {"n": 3})
    db.branches.fork("default", "child")
    child = db.at("child")
    child.kv.put("d", "own")
    keys = ["a", "b", "c", "d", "missing"]
    for view, as_of in ((db, None), (db, first), (child, None)):
        expected = {k: v for k in keys if (v := view.kv.get(k, as_of=as_of)) is not None}
        assert view.kv.get_many(keys, as_of=as_of) == expected
        assert view.kv.get_many(iter(keys), as_of=as_of) == expected
    assert db.kv.get_many([]) == {}
    many = {f"k{i}": i for i in range(450)}  # more seeks than one statement holds
    db.kv.put_many(many)
    db._engine.memory.clear()
    assert db.kv.get_many(list(many)) == many


@pytest.mark.parametrize("keys", ["a", b"a", 7, None, {"a": 1}, ["a", 3], ["a", ""]])
def test_kv_get_many_refuses_what_is_not_a_list_of_keys(
    db: rewinddb.Database, refused: Any, keys: object
) -> None:
    with refused(db, rewinddb.InvalidInputError, "invalid.key"):
        db.kv.get_many(keys)  # type: ignore[arg-type]


_KEY_TEXT = st.text(
    alphabet=st.sampled_from(["a", "b", "/", "~", "\x7f", "é", "\ud7ff", "\ue000", "\U0010ffff"]),
    min_size=1,
    max_size=4,
)


def test_kv_keys_by_a_prefix_ending_in_the_last_code_point(db_path: Path) -> None:
    """U+10FFFF sorts last: the keys past such a prefix still start with it."""
    top = "\U0010ffff"
    with rewinddb.open(db_path) as db:
        db.kv.put_many(
            {key: 1 for key in (top, top * 2, top * 2 + "a", "a" + top, "a" + top + "b", "b")}
        )
        assert db.kv.keys(top) == [top, top * 2, top * 2 + "a"]
        assert db.kv.keys(top * 2) == [top * 2, top * 2 + "a"]
        assert db.kv.keys("a" + top) == ["a" + top, "a" + top + "b"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(keys=st.sets(_KEY_TEXT, max_size=12), prefix=_KEY_TEXT)
def test_kv_keys_by_prefix_are_the_keys_that_start_with_it(
    db_path: Path, keys: set[str], prefix: str
) -> None:
    with tempfile.TemporaryDirectory(dir=db_path.parent) as where, rewinddb.open(where) as db:
        if keys:
            db.kv.put_many({key: 1 for key in keys})
        db.branches.fork("default", "child")
        db.at("child").kv.put(prefix + "own", 2)
        assert db.kv.keys(prefix) == sorted(k for k in keys if k.startswith(prefix))
        assert db.at("child").kv.keys(prefix) == sorted(
            {k for k in keys if k.startswith(prefix)} | {prefix + "own"}
        )
