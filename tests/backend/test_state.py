"""view.state: keyed state with triggers, transitions, replay and snapshots (seed 002)."""

from __future__ import annotations

import pytest

import rewinddb


def test_get_set_with_trigger_and_as_of(db: rewinddb.Database) -> None:
    assert db.state.get("phase") is None
    v1 = db.state.set("phase", "start", "init")
    v2 = db.state.set("phase", "review", "tests_passed")
    assert db.state.get("phase") == "review"
    assert db.state.get("phase", as_of=v1) == "start"
    assert db.state.get("missing", "fallback") == "fallback"
    assert db.commits()[0].trigger == "tests_passed" and db.commits()[0].version == v2


def test_set_many_is_one_version(db: rewinddb.Database) -> None:
    version = db.state.set_many(
        {"phase": "complete", "completedAt": 1733000000, "result": {"success": True}},
        "implementation_done",
    )
    assert db.version == version == 1
    assert db.state.get_all() == {
        "completedAt": 1733000000,
        "phase": "complete",
        "result": {"success": True},
    }
    assert {t.trigger for t in db.state.history()} == {"implementation_done"}


def test_reset_clears_everything_in_one_version(db: rewinddb.Database) -> None:
    db.state.set_many({"a": 1, "b": 2})
    version = db.state.reset("new run")
    assert db.state.get_all() == {} and db.version == version == 2
    assert db.state.get_all(as_of=1) == {"a": 1, "b": 2}
    assert db.state.reset() is None  # nothing to clear: no version


def test_history_transitions(db: rewinddb.Database) -> None:
    db.state.set("phase", "start", "init")
    db.state.set("attempts", 1)
    db.state.set("phase", "review", "tests_passed")
    db.state.reset("cleanup")
    phase = db.state.history("phase")
    assert [(t.previous_value, t.value, t.trigger, t.deleted) for t in phase] == [
        (None, "start", "init", False),
        ("start", "review", "tests_passed", False),
        ("review", None, "cleanup", True),
    ]
    assert phase[0].id == f"{phase[0].version}:phase"
    everything = db.state.history()
    assert [t.key for t in everything] == ["phase", "attempts", "phase", "attempts", "phase"]
    assert [t.key for t in db.state.history(limit=2)] == ["attempts", "phase"]
    assert db.state.history("phase", 1)[0].trigger == "cleanup"
    assert db.state.history(limit=0) == []
    assert phase[1].to_dict()["value"] == "review"


def test_replay_to_writes_a_new_version_and_loses_nothing(db: rewinddb.Database) -> None:
    db.state.set("phase", "start", "init")
    db.state.set_many({"phase": "review", "reviewer": "claude"}, "implementation_done")
    first = db.state.history("phase")[0]
    version = db.state.replay_to(first.id, "rollback")
    assert version == 3
    assert db.state.get_all() == {"phase": "start"}
    assert db.state.get_all(as_of=2) == {"phase": "review", "reviewer": "claude"}
    assert [t.trigger for t in db.state.history("phase")] == [
        "init",
        "implementation_done",
        "rollback",
    ]


def test_checkpoint_and_rollback_pattern(db: rewinddb.Database) -> None:
    """Seed 002's pattern: snapshot, try something risky, restore on failure."""
    db.state.set_many({"status": "ready", "attempts": 3})
    checkpoint = db.state.snapshot()

    def risky_operation() -> None:
        db.state.set("status", "half-done")
        db.state.set("scratch", [1, 2, 3])
        raise RuntimeError("tool failed")

    try:
        risky_operation()
        db.state.set("status", "success")
    except RuntimeError:
        db.state.restore(checkpoint, "error_rollback")
    assert db.state.get_all() == {"attempts": 3, "status": "ready"}
    assert db.state.history("status")[-1].trigger == "error_rollback"
    assert db.state.history("scratch")[-1].deleted


def test_track_causality_with_triggers(db: rewinddb.Database) -> None:
    """Seed 002's pattern: the trigger says why each change happened."""
    for output in ("FAIL: 2 tests", "PASS"):
        if "PASS" in output:
            db.state.set("phase", "complete", "tests_passed")
        else:
            db.state.set("phase", "retry", "tests_failed")
    assert [(t.value, t.trigger) for t in db.state.history("phase")] == [
        ("retry", "tests_failed"),
        ("complete", "tests_passed"),
    ]


def test_state_is_per_branch(db: rewinddb.Database) -> None:
    db.state.set("phase", "start")
    db.branches.fork("default", "attempt")
    db.at("attempt").state.set("phase", "done")
    assert db.state.get("phase") == "start"
    assert db.at("attempt").state.get("phase") == "done"
    assert [t.value for t in db.at("attempt").state.history("phase")] == ["start", "done"]
    receipt = db.branches.merge("attempt", "default")
    assert db.state.get("phase") == "done" and receipt.keys_applied == ["phase"]


def test_state_bad_input(db: rewinddb.Database, refused) -> None:  # type: ignore[no-untyped-def]
    db.state.set("phase", "start")
    with refused(db, rewinddb.InvalidValueError, "invalid.value"):
        db.state.set("phase", float("nan"))
    with refused(db, rewinddb.InvalidValueError, "invalid.value"):
        db.state.set_many({"ok": 1, "bad": {1, 2}})
    with refused(db, rewinddb.InvalidInputError, "invalid.key"):
        db.state.set_many({"": 1})
    with refused(db, rewinddb.InvalidInputError, "invalid.state"):
        db.state.set_many([("a", 1)])  # type: ignore[arg-type]
    with refused(db, rewinddb.InvalidInputError, "invalid.state"):
        db.state.set_many({})
    with refused(db, rewinddb.InvalidInputError, "invalid.trigger"):
        db.state.set("phase", "x", 7)  # type: ignore[arg-type]
    with refused(db, rewinddb.InvalidInputError, "invalid.transition"):
        db.state.replay_to("not-an-id")
    with refused(db, rewinddb.NotFoundError, "not_found.transition"):
        db.state.replay_to("999:phase")
    with refused(db, rewinddb.InvalidInputError, "invalid.snapshot"):
        db.state.restore(["phase"])  # type: ignore[arg-type]
    with refused(db, rewinddb.InvalidInputError, "invalid.limit"):
        db.state.history(limit=-1)


def test_view_snapshot_and_restore(db: rewinddb.Database) -> None:
    db.kv.put("task", "t")
    db.json.set("doc", "$", {"a": 1})
    db.state.set("phase", "start")
    db.events.append("e", {})
    snap = db.snapshot()
    assert snap == {
        "version": 4,
        "kv": {"task": "t"},
        "json": {"doc": {"a": 1}},
        "state": {"phase": "start"},
    }
    db.kv.put("task", "changed")
    db.kv.put("extra", 1)
    db.json.delete("doc")
    db.state.set("phase", "end")
    version = db.restore(snap, trigger="rollback")
    assert db.version == version == 9
    assert db.snapshot() == {**snap, "version": 9}
    assert len(db.events) == 1  # the log is history, not state: restore leaves it
    assert db.restore(snap) is None
    assert db.snapshot(as_of=8)["kv"] == {"extra": 1, "task": "changed"}


def test_view_restore_bad_input(db: rewinddb.Database, refused) -> None:  # type: ignore[no-untyped-def]
    db.kv.put("k", 1)
    snap = db.snapshot()
    with refused(db, rewinddb.InvalidInputError, "invalid.snapshot"):
        db.restore({"kv": {}})
    with refused(db, rewinddb.InvalidValueError, "invalid.value"):
        db.restore({**snap, "json": {"doc": b"bytes are not JSON"}})
    with refused(db, rewinddb.InvalidInputError, "invalid.key"):
        db.restore({**snap, "kv": {"": 1}})


@pytest.mark.parametrize("space", ["kv", "json", "state"])
def test_snapshot_of_another_branch_restores_here(db: rewinddb.Database, space: str) -> None:
    db.branches.fork("default", "other")
    other = db.at("other")
    {
        "kv": lambda: other.kv.put("k", 1),
        "json": lambda: other.json.set("k", "$", 1),
        "state": lambda: other.state.set("k", 1),
    }[space]()
    db.restore(other.snapshot())
    assert db.snapshot()[space] == {"k": 1}


def test_replay_to_an_inherited_transition(db: rewinddb.Database) -> None:
    db.state.set("phase", "start", "init")
    db.state.set("phase", "plan")
    db.branches.fork("default", "run")
    run = db.at("run")
    run.state.set("phase", "act")
    first = run.state.history("phase")[0]
    assert first.version == 1  # inherited from default
    run.state.replay_to(first.id, "back to the start")
    assert run.state.get_all() == {"phase": "start"}
    assert db.state.get("phase") == "plan"
