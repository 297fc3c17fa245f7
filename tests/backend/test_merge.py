"""Three-way merges with honest receipts."""

from __future__ import annotations

import pytest

import rewinddb


@pytest.fixture
def forked(db: rewinddb.Database) -> rewinddb.Database:
    db.kv.put("task", "t")
    db.kv.put("shared", "base")
    db.json.set("doc", "$", {"a": 1, "b": 1, "nested": {"x": 1, "y": 1}})
    db.branches.fork("default", "run")
    return db


def test_merge_applies_source_changes_as_one_commit_with_two_parents(
    forked: rewinddb.Database,
) -> None:
    db = forked
    run = db.at("run")
    run.kv.put("score", "90")
    head = run.json.set("doc", "$.a", 2)
    before = db.version
    receipt = db.branches.merge("run", "default")
    assert receipt.version == before + 1 == db.version
    assert db.kv.get("score") == "90" and db.json.get("doc", "$.a") == 2
    assert receipt.keys_applied == ["doc", "score"]
    assert [(c.primitive, c.key, c.path) for c in receipt.applied] == [
        ("json", "doc", "$.a"),
        ("kv", "score", "$"),
    ]
    assert receipt.conflicts == [] and receipt.complete
    commit = db.commits()[0]
    assert (commit.branch, commit.merged_from, commit.merged_version) == ("default", "run", head)
    assert receipt.base == ("default", 3)


def test_json_documents_merge_per_path(forked: rewinddb.Database) -> None:
    db = forked
    db.at("run").json.set("doc", "$.nested.x", 2)
    db.json.set("doc", "$.nested.y", 3)
    db.json.set("doc", "$.b", 5)
    receipt = db.branches.merge("run", "default")
    assert db.json.get("doc") == {"a": 1, "b": 5, "nested": {"x": 2, "y": 3}}
    assert [c.path for c in receipt.applied] == ["$.nested.x"]


def test_conflicts_fail_atomically_listing_every_conflict(
    forked: rewinddb.Database, refused
) -> None:  # type: ignore[no-untyped-def]
    db = forked
    run = db.at("run")
    run.kv.put("shared", "source")
    run.json.set("doc", "$.nested.x", "source")
    run.kv.put("only-source", 1)
    db.kv.put("shared", "target")
    db.json.set("doc", "$.nested.x", "target")
    with refused(db, rewinddb.MergeConflictError, "conflict.merge") as info:
        db.branches.merge("run", "default")
    conflicts = info.value.conflicts
    assert [(c.primitive, c.key, c.path) for c in conflicts] == [
        ("json", "doc", "$.nested.x"),
        ("kv", "shared", "$"),
    ]
    assert conflicts[1].base == "base" and conflicts[1].source == "source"
    assert db.kv.get("only-source") is None


def test_strategies_resolve_conflicts_and_say_so(forked: rewinddb.Database) -> None:
    db = forked
    db.branches.fork("default", "run2")
    db.at("run").kv.put("shared", "source")
    db.at("run2").kv.put("shared", "source2")
    db.kv.put("shared", "target")
    receipt = db.branches.merge("run", "default", strategy="target")
    assert db.kv.get("shared") == "target"
    assert receipt.conflicts[0].resolution == "target"
    assert not receipt.complete  # the source's change was dropped: never "success"
    receipt = db.branches.merge("run2", "default", strategy="source")
    assert db.kv.get("shared") == "source2"
    assert receipt.conflicts[0].resolution == "source"
    assert receipt.complete


def test_events_are_not_carried_unless_asked_and_the_receipt_says_so(
    forked: rewinddb.Database,
) -> None:
    db = forked
    run = db.at("run")
    run.events.append("tool.call", {"n": 1})
    run.events.append("run.end", {"n": 2})
    receipt = db.branches.merge("run", "default")
    assert (receipt.events_carried, receipt.events_not_carried) == (0, 2)
    assert not receipt.complete
    assert "2 NOT carried" in str(receipt)
    assert len(db.events) == 0

    db.branches.fork("default", "run2")
    db.events.append("on default", {})
    db.at("run2").events.append("x", {"from": "run2"})
    receipt = db.branches.merge("run2", "default", events="append")
    assert (receipt.events_carried, receipt.events_not_carried) == (1, 0)
    assert [i.event.event_type for i in db.events.list()] == ["on default", "x"]
    assert db.events.get(1).payload == {"from": "run2"}


def test_second_merge_uses_the_last_merge_as_base(forked: rewinddb.Database) -> None:
    db = forked
    run = db.at("run")
    run.kv.put("shared", "first")
    db.branches.merge("run", "default")
    db.kv.put("other", "target moves on")
    run.kv.put("shared", "second")
    receipt = db.branches.merge("run", "default")
    assert receipt.conflicts == []
    assert db.kv.get("shared") == "second"
    assert db.branches.merge("run", "default").up_to_date


def test_merge_target_into_source_then_back(forked: rewinddb.Database) -> None:
    db = forked
    db.kv.put("from-default", 1)
    receipt = db.branches.merge("default", "run")
    assert db.at("run").kv.get("from-default") == 1
    assert receipt.base == ("default", 3)
    db.at("run").kv.put("from-run", 2)
    receipt = db.branches.merge("run", "default")
    assert receipt.conflicts == [] and receipt.keys_applied == ["from-run"]


def test_deletions_merge(forked: rewinddb.Database) -> None:
    db = forked
    db.at("run").kv.delete("task")
    db.at("run").json.delete("doc", "$.nested")
    db.branches.merge("run", "default")
    assert db.kv.get("task") is None
    assert db.json.get("doc") == {"a": 1, "b": 1}


def test_merge_bad_input(forked: rewinddb.Database, refused) -> None:  # type: ignore[no-untyped-def]
    db = forked
    db.at("run").kv.put("k", 1)
    with refused(db, rewinddb.RewindError, "invalid.strategy"):
        db.branches.merge("run", "default", strategy="ours")
    with refused(db, rewinddb.RewindError, "invalid.events"):
        db.branches.merge("run", "default", events="all")
    with refused(db, rewinddb.RewindError, "invalid.merge"):
        db.branches.merge("run", "run")
    with refused(db, rewinddb.BranchNotFound, "not_found.engine.branch"):
        db.branches.merge("nope", "default")
    with refused(db, rewinddb.BranchNotFound, "not_found.engine.branch"):
        db.branches.merge("run", "nope")


def test_a_merge_inside_a_transaction_records_its_second_parent(
    forked: rewinddb.Database,
) -> None:
    db = forked
    db.at("run").kv.put("a", 1)
    with db.transaction():
        db.kv.put("before", 1)
        db.branches.merge("run", "default")
    assert db.commits()[0].merged_from == "run"
    db.kv.delete("a")
    assert db.branches.merge("run", "default").up_to_date  # "a" does not come back
    assert db.kv.get("a") is None


def test_the_merge_base_sees_merges_made_by_an_ancestor_of_the_source(
    db: rewinddb.Database,
) -> None:
    db.branches.fork("default", "p")
    db.at("p").kv.put("k", 1)
    db.at("p").events.append("from p", {})
    db.branches.merge("p", "default", events="append")
    db.kv.delete("k")
    db.branches.fork("p", "s")  # s changed nothing since p was merged
    receipt = db.branches.merge("s", "default", events="append")
    assert db.kv.get("k") is None
    assert receipt.up_to_date
    assert [i.event.event_type for i in db.events.list()] == ["from p"]


def test_the_merge_base_follows_merges_of_a_third_branch(db: rewinddb.Database) -> None:
    db.branches.fork("default", "x")
    db.branches.fork("default", "s")
    db.at("x").kv.put("k", 1)
    db.branches.merge("x", "default")
    db.branches.merge("x", "s")
    db.kv.delete("k")  # the target deliberately drops what it merged
    receipt = db.branches.merge("s", "default")
    assert db.kv.get("k") is None
    assert receipt.up_to_date


def test_the_merge_base_follows_a_merged_branchs_ancestors(db: rewinddb.Database) -> None:
    db.branches.fork("default", "p")
    db.at("p").kv.put("k", "from p")
    db.branches.fork("p", "x")
    db.branches.fork("p", "s")
    db.branches.fork("default", "t")
    db.branches.merge("x", "t")
    db.at("t").kv.delete("k")
    receipt = db.branches.merge("s", "t")
    assert db.at("t").kv.get("k") is None and receipt.up_to_date


def test_one_transaction_merges_from_one_branch(forked: rewinddb.Database) -> None:
    db = forked
    db.branches.fork("default", "run2")
    db.at("run").kv.put("a", 1)
    db.at("run2").kv.put("b", 2)
    with pytest.raises(rewinddb.RewindError) as info, db.transaction():
        db.branches.merge("run", "default")
        db.branches.merge("run2", "default")
    assert info.value.code == "invalid.transaction"
    assert db.kv.get("a") is None and db.kv.get("b") is None


def test_events_a_skip_merge_left_behind_can_be_carried_later(
    forked: rewinddb.Database,
) -> None:
    db = forked
    run = db.at("run")
    run.events.append("first", {})
    first = db.branches.merge("run", "default")
    assert first.events_not_carried == 1
    again = db.branches.merge("run", "default")
    assert again.up_to_date and again.events_not_carried == 1 and not again.complete
    assert "still NOT carried" in str(again)
    run.kv.put("more", 1)
    later = db.branches.merge("run", "default", events="append")
    assert (later.events_carried, later.events_not_carried) == (1, 0) and later.complete
    assert [i.event.event_type for i in db.events.list()] == ["first"]


def test_a_merge_whose_base_retention_removed_is_refused(db: rewinddb.Database) -> None:
    """The base is history ``prune`` cut: read there it would be an older value, and the
    merge would drop the source's change back to it (silently) or see a conflict."""
    db.kv.put("k", 0)
    db.branches.fork("default", "b1")
    db.at("b1").kv.put("k", 1)
    db.branches.merge("b1", "default")  # the next merge's base: b1 at that version
    db.at("b1").kv.put("k", 0)  # b1 sets k back
    db.at("b1").kv.put("other", 1)
    db.prune("b1", before=db.version)
    before = db.version
    with pytest.raises(rewinddb.HistoryUnavailableError) as raised:
        db.branches.merge("b1", "default")
    assert raised.value.code == "history_unavailable" and "retention" in str(raised.value)
    assert db.version == before and db.kv.get("k") == 1


def test_a_merge_whose_base_is_on_a_deleted_branch_is_refused(db: rewinddb.Database) -> None:
    db.kv.put("k", 0)
    db.branches.fork("default", "x")
    db.branches.fork("default", "s")
    db.at("x").kv.put("k", 1)
    db.branches.merge("x", "default")
    db.branches.merge("x", "s")  # both now hold x: the base of s and default is on x
    db.branches.delete("x", purge=True)
    db.at("s").kv.put("k", 2)
    before = db.version
    with pytest.raises(rewinddb.HistoryUnavailableError) as raised:
        db.branches.merge("s", "default")
    assert "purged branch" in str(raised.value)
    assert db.version == before and db.kv.get("k") == 1


def test_a_merge_whose_base_a_live_side_still_reads_on_a_deleted_branch_goes_ahead(
    db: rewinddb.Database,
) -> None:
    """A deleted branch keeps the rows its live forks read (purge removes only the
    rest): a base there is whole, so the merge is made (hypothesis's stateful model
    found it refused)."""
    db.kv.put("k", 0)
    db.branches.fork("default", "b1")
    db.at("b1").kv.put("k", 1)
    db.at("b1").kv.put("j", 1)
    db.branches.fork("b1", "b2")  # b2 reads b1 up to here: the base of default and b2
    db.branches.merge("b1", "default")
    db.branches.delete("b1", purge=True)
    db.kv.put("j", 2)
    db.at("b2").kv.put("k", 3)
    receipt = db.branches.merge("default", "b2")
    assert [(change.key, change.new) for change in receipt.applied] == [("j", 2)]
    assert db.at("b2").kv.get("k") == 3 and db.at("b2").kv.get("j") == 2
    assert db.verify().ok
