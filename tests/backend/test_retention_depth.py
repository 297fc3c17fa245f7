"""Retention and gc over fork trees of any depth: a prune never changes what a live branch
reads, however deep it sits below the pruned one (a fork of a fork taken at an event the
middle branch inherited reads the top one below the middle one's fork point), and gc
erases every deleted branch's rows that no live branch reads, whatever its deleted
parent wrote."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewinddb
from rewinddb.errors import RewindError

#: A read that retention removed (the branch's own history below its horizon).
GONE = "history_unavailable"


def _read(db: rewinddb.Database, branch: str, version: int) -> Any:
    view = db.at(branch)
    try:
        snapshot = view.snapshot(as_of=version)
        events = view.events.list(as_of=version)
    except rewinddb.HistoryUnavailableError:
        return GONE
    return snapshot, [(i.event.sequence, i.event.version, i.event.payload) for i in events]


def _reads(
    db: rewinddb.Database, known: dict[str, dict[int, Any]] | None = None
) -> dict[str, dict[int, Any]]:
    """Every live branch's answer at every version it could ever read; those in ``known``
    (what the last cut's check read, when only writes and forks came since: neither
    changes a read at a version already written) are taken from there."""
    known = known or {}
    return {
        branch.name: {
            v: known[branch.name][v]
            if v in known.get(branch.name, {})
            else _read(db, branch.name, v)
            for v in range(branch.forked_at, db.version + 1)
        }
        for branch in db.branches.list()
    }


def _kept_from(db: rewinddb.Database, branch: str) -> int | None:
    record = db._engine.branch(branch)
    kept = db._engine.horizon(record.id)
    return None if kept is None else kept.kept_from


def _assert_reads_kept(
    db: rewinddb.Database, before: dict[str, dict[int, Any]]
) -> dict[str, dict[int, Any]]:
    """Each branch still live answers as before at every version it can still read; only
    its own history below its horizon is gone (reads there say so, and its log lists its
    own events from the horizon on). Returns what each live branch reads now."""
    live = {branch.name: branch.forked_at for branch in db.branches.list()}
    after: dict[str, dict[int, Any]] = {}
    for name, answers in before.items():
        if name not in live:
            continue
        kept_from = _kept_from(db, name)
        for version, answer in answers.items():
            now = after.setdefault(name, {})[version] = _read(db, name, version)
            where = (name, version, kept_from)
            if kept_from is not None and version < kept_from:
                assert now == GONE, where
                continue
            assert (now == GONE) == (answer == GONE), where
            if answer == GONE:
                continue
            assert now[0] == answer[0], where  # kv, json and state, exactly
            if now[1] != answer[1]:  # the branch's own events before its horizon went
                assert kept_from is not None, where
                removed = [e for e in answer[1] if live[name] < e[1] < kept_from]
                assert now[1] == [e for e in answer[1] if e not in removed], where
    return after


def _newest_read(db: rewinddb.Database) -> dict[int, int]:
    """Branch id -> the newest version of it some live branch reads (its own rows newer
    than that are read by nothing: a deleted branch is not read)."""
    engine, reads = db._engine, dict[int, int]()
    for branch in db.branches.list():
        record = engine.branch(branch.name)
        for branch_id, cap in engine.row_lineage(record, max(engine.clock(), record.forked_at)):
            reads[branch_id] = max(reads.get(branch_id, cap), cap)
    return reads


def _unread_rows(db: rewinddb.Database) -> list[tuple[str, int, int]]:
    """(table, branch id, version) of the rows of deleted (or vanished) branches that no
    live branch reads, and of deleted branches not purged."""
    conn, reads = db._engine.conn, _newest_read(db)
    live = {
        int(row[0])
        for row in conn.fetchall("SELECT id FROM rewind_branches WHERE deleted_at IS NULL")
    }
    found = []
    for table in ("rewind_entries", "rewind_events", "rewind_commits"):
        for branch_id, version in conn.fetchall(f"SELECT branch_id, version FROM {table}"):
            if branch_id not in live and version > reads.get(branch_id, -1):
                found.append((table, int(branch_id), int(version)))
    for branch_id, name in conn.fetchall(
        "SELECT id, name FROM rewind_branches WHERE deleted_at IS NOT NULL"
    ):
        if name != f"~purged/{branch_id}":
            found.append(("rewind_branches", int(branch_id), -1))
    return found


# -- the two cases the review found ------------------------------------------------------


def _grandchild_at_an_inherited_event(db: rewinddb.Database) -> int:
    """a: k=1, an event, k=2, k=3, other=1; p forked from a at its head; s forked from p
    at the event (which p inherited): s reads a as of the event, below p's fork point."""
    db.kv.put("seed", 0)
    db.branches.fork("default", "a")
    a = db.at("a")
    a.kv.put("k", 1)
    a.json.set("doc", "$", {"n": 1})
    event = a.events.append("e", {"n": 0})
    a.kv.put("k", 2)
    a.json.set("doc", "$.n", 2)
    a.kv.put("k", 3)
    a.kv.put("other", 1)
    db.branches.fork("a", "p")
    db.branches.fork("p", "s", at_event=event.sequence)
    return int(event.version)


def test_a_prune_keeps_what_a_fork_of_a_fork_at_an_inherited_event_reads(
    db: rewinddb.Database,
) -> None:
    at = _grandchild_at_an_inherited_event(db)
    assert db.branches.get("s").forked_at == at < db.branches.get("p").forked_at
    before = _reads(db)
    assert db.at("s").kv.get("k") == 1 and db.at("s").json.get("doc") == {"n": 1}
    report = db.prune("a", before=db.branches.get("p").forked_at)
    assert report.horizons["a"] == at  # lowered to what s reads of a
    _assert_reads_kept(db, before)
    assert db.at("s").kv.get("k") == 1 and db.at("s").json.get("doc") == {"n": 1}
    assert db.at("s").events.length() == 1 and db.at("s").events.verify().ok
    assert db.verify().ok


def test_a_policy_keeps_what_a_fork_of_a_fork_reads(db: rewinddb.Database) -> None:
    _grandchild_at_an_inherited_event(db)
    db.at("p").kv.put("k", "p's own")
    before = _reads(db)
    db.retain("a", keep_last=1)
    dry = db.gc(dry_run=True)
    report = db.gc()
    assert dry.horizons == report.horizons  # a dry run reports the cut a run makes
    assert report.horizons["a"] == db.branches.get("s").forked_at
    _assert_reads_kept(db, before)
    assert db.at("s").kv.get("k") == 1
    assert db.verify().ok


def test_gc_purges_a_deleted_child_of_a_purged_parent_that_wrote_nothing(
    db: rewinddb.Database,
) -> None:
    db.kv.put("seed", 0)
    db.branches.fork("default", "p")  # p never writes
    db.branches.fork("p", "c")
    db.at("c").kv.put("secret", "value")
    db.at("c").events.append("secret", {"secret": 1})
    db.branches.fork("c", "g")  # a deleted grandchild too
    db.at("g").kv.put("secret", "value 2")
    db.branches.delete("p", purge=True)  # c is live: p's row stays, renamed
    db.branches.delete("g")
    db.branches.delete("c")
    dry = db.gc(dry_run=True)
    report = db.gc()
    assert (dry.branches, dry.entries, dry.events, dry.bytes) == (
        report.branches,
        report.entries,
        report.events,
        report.bytes,
    )
    assert report.branches == 3 and report.entries == 2 and report.events == 1
    conn = db._engine.conn
    assert conn.fetchall("SELECT key FROM rewind_entries WHERE key = 'secret'") == []
    assert conn.fetchall("SELECT sequence FROM rewind_events WHERE branch_id <> 1") == []
    assert [row[0] for row in conn.fetchall("SELECT name FROM rewind_branches")] == ["default"]
    assert _unread_rows(db) == []
    assert db.verify().ok


def test_gc_leaves_what_live_forks_read_and_does_not_purge_it_again(
    db: rewinddb.Database,
) -> None:
    db.branches.fork("default", "p")
    db.at("p").kv.put("x", 1)
    db.branches.fork("p", "c")
    db.at("p").kv.put("x", "secret")
    db.branches.delete("p")
    report = db.gc()
    assert (report.branches, report.entries, report.bytes) == (1, 1, len(b'"secret"'))
    assert db.at("c").kv.get("x") == 1 and _unread_rows(db) == []
    again = db.gc()  # what p keeps, c reads: nothing to do
    assert (again.branches, again.versions, again.entries, again.bytes) == (0, 0, 0, 0)
    db.branches.delete("c")  # now nothing reads p: both go
    last = db.gc()
    assert last.branches == 2 and last.entries == 1
    assert db.branches.names() == ["default"] and _unread_rows(db) == []


# -- random fork trees -------------------------------------------------------------------

#: Writes, forks and cuts, in about these proportions.
_GROW = ["write", "write", "fork", "fork_event", "fork_event"]
_WRITES = ["k0", "k1", "doc", "event"]
_CUTS = ["prune", "prune_before", "delete", "delete", "purge", "purge", "policy_gc", "gc"]


def _run(db: rewinddb.Database, data: st.DataObject, grow: int, steps: int) -> None:
    """A random tree (``grow`` writes and forks, at versions and at events, inherited ones
    mostly), then ``steps`` more of them mixed with cuts (prunes, deletes, purges, policies
    and gc): after each cut every live branch answers as before, and after each gc no
    unread row of a deleted branch is left."""
    db.kv.put("k0", "default's")
    db.branches.fork("default", "b")  # the top of the tree (default is never pruned)
    names = ["b"]
    known: dict[str, dict[int, Any]] = {}  # the reads the last cut's check saw

    def pick(label: str) -> str:
        # the newest branch half the time: deep trees, forks of forks
        if data.draw(st.booleans(), label=f"{label} is the newest"):
            return names[-1]
        return names[data.draw(st.integers(0, len(names) - 1), label=label)]

    _write(db, data, "b", 0)  # the top of the tree: events and keys written over, or none
    for step in range(grow + steps + 1):
        if step == grow + steps:
            op = "gc"  # and a last one
        else:
            op = data.draw(st.sampled_from(_GROW if step < grow else _GROW + _CUTS), label="op")
        name = pick("branch") if names else "default"
        if op == "write":
            _write(db, data, name, 1)
        elif op in ("fork", "fork_event"):
            if _fork(db, data, op, name, f"b{step}"):
                names.append(f"b{step}")
        else:
            before = _reads(db, known)
            runs = _cut(db, data, op, names)
            names = [n for n in names if n in db.branches]
            known = _assert_reads_kept(db, before)
            if runs is not None:
                assert _unread_rows(db) == []
                dry, report, deleted = runs
                if not deleted:  # (purges first: a deleted fork holds a cut in a dry run only)
                    assert (dry.versions, dry.entries, dry.events, dry.horizons) == (
                        report.versions,
                        report.entries,
                        report.events,
                        report.horizons,
                    )
    assert db.verify().ok


def _write(db: rewinddb.Database, data: st.DataObject, name: str, least: int) -> None:
    """A few versions on ``name``: keys, a document, events."""
    view = db.at(name)
    for what in data.draw(st.lists(st.sampled_from(_WRITES), min_size=least, max_size=5)):
        if what == "doc":
            at = db.version
            view.json.set("doc", "$", {"at": at, "list": list(range(at % 4))})
        elif what == "event":
            view.events.append("e", {"at": db.version})
        else:
            view.kv.put(what, db.version)


def _fork(db: rewinddb.Database, data: st.DataObject, op: str, name: str, new: str) -> bool:
    info = db.branches.get(name)
    try:
        if op == "fork":  # at its head half the time
            low = data.draw(st.sampled_from([info.forked_at, db.version]), label="at head")
            db.branches.fork(name, new, at=data.draw(st.integers(low, db.version), label="at"))
            return True
        if not info.events:
            return False
        log = db.at(name).events.list()
        inherited = len([i for i in log if i.event.version <= info.forked_at])
        if inherited and data.draw(st.integers(0, 3), label="inherited event") > 0:
            at = data.draw(st.integers(0, inherited - 1), label="at_event")
        else:
            at = data.draw(st.integers(0, info.events - 1), label="at_event")
        db.branches.fork(name, new, at_event=at)
        return True
    except RewindError as error:  # below a horizon, or an event a prune removed: refused
        assert error.code in (GONE, "not_found.event"), error
        return False


def _cut(
    db: rewinddb.Database, data: st.DataObject, op: str, names: list[str]
) -> tuple[rewinddb.GcReport, rewinddb.GcReport, int] | None:
    """A step that removes data; for a gc, its dry run's report, its report and how many
    deleted branches there were before it."""
    if op == "gc" or op == "policy_gc":
        if op == "policy_gc":
            db.retain("b*", keep_last=data.draw(st.integers(1, 4), label="keep_last"))
        deleted = db._engine.conn.fetchone(
            "SELECT count(*) FROM rewind_branches WHERE deleted_at IS NOT NULL"
        )[0]
        return db.gc(dry_run=True), db.gc(), int(deleted)
    if not names:
        return None
    # the oldest branch half the time: the top of the tree, which the others read
    oldest = data.draw(st.booleans(), label="target is the oldest")
    name = names[0 if oldest else data.draw(st.integers(0, len(names) - 1), label="target")]
    if op == "prune":
        db.prune(name, keep_last=data.draw(st.integers(1, 4), label="keep_last"))
    elif op == "prune_before":
        low = data.draw(st.sampled_from([0, max(db.version - 3, 0)]), label="recent")
        db.prune(name, before=data.draw(st.integers(low, db.version), label="before"))
    else:
        db.branches.delete(name, purge=op == "purge")
    return None


Fresh = Callable[[], "str | Path"]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def fresh(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Fresh:
    """A new, empty database target for each hypothesis example."""
    if request.param == "sqlite":
        return lambda: tmp_path_factory.mktemp("tree") / "agent"
    server = request.getfixturevalue("postgres")
    return lambda: server.new_schema()


@settings(
    max_examples=12,  # (on PostgreSQL each example is several seconds: a schema, many cuts)
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_fork_trees_read_the_same_after_every_cut_and_gc(
    fresh: Fresh, data: st.DataObject
) -> None:
    with rewinddb.open(fresh()) as db:
        _run(
            db,
            data,
            data.draw(st.integers(4, 16), label="grow"),
            data.draw(st.integers(4, 12), label="steps"),
        )


@pytest.mark.slow
@settings(
    max_examples=30,  # (each a long story: about 3 s; CI's whole run has 20 minutes)
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_fork_trees_at_length(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    with rewinddb.open(tmp_path_factory.mktemp("tree") / "agent") as db:
        _run(
            db,
            data,
            data.draw(st.integers(10, 30), label="grow"),
            data.draw(st.integers(10, 30), label="steps"),
        )
