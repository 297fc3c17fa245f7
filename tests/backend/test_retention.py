"""Retention: pruned history answers exactly as before at every kept version, says which
retention removed the rest, verifies, and gives the space back."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewinddb
from rewinddb.errors import InvalidInputError

from .conftest import Refused


def _read(db: rewinddb.Database, branch: str, version: int) -> Any:
    view = db.at(branch)
    return (
        view.snapshot(as_of=version),
        [(i.event.sequence, i.event.payload) for i in view.events.list(as_of=version)],
    )


def _history(db: rewinddb.Database, branch: str) -> dict[int, Any]:
    start = db.branches.get(branch).forked_at
    return {v: _read(db, branch, v) for v in range(start, db.version + 1)}


def _as_kept(answer: Any, inherited: int, first_own: int) -> Any:
    """What a read at a kept version answers after a cut: the same state, and the events
    inherited and appended from the cut on (the log keeps its sequence numbers): those
    before ``inherited`` are the parent's, the branch's own start at ``first_own``."""
    snapshot, events = answer
    return snapshot, [
        (sequence, payload)
        for sequence, payload in events
        if sequence < inherited or sequence >= first_own
    ]


def _first_kept(db: rewinddb.Database, branch: str) -> int:
    """The first event a branch that inherited none still lists (or its length)."""
    kept = db.at(branch).events.list(limit=1)
    return kept[0].event.sequence if kept else db.at(branch).events.length()


def _inherited(db: rewinddb.Database, branch: str) -> int:
    """How many events ``branch`` inherited at its fork point."""
    info = db.branches.get(branch)
    if info.parent is None:
        return 0
    return db.at(info.parent).events.length(as_of=info.forked_at)


def _chat(n: int) -> list[dict[str, str]]:
    return [{"role": "ai" if i % 2 else "human", "text": f"turn {i} " + "w" * 50} for i in range(n)]


def _agent(db: rewinddb.Database, branch: str, turns: int) -> None:
    """A thread's worth of writes: a growing chat (a shared array), a counter, events."""
    db.branches.fork("default", branch)
    view = db.at(branch)
    for turn in range(turns):
        view.kv.put("messages", _chat(turn + 1))
        view.kv.put("turn", turn)
        view.events.append("step", {"turn": turn})


def test_kept_versions_answer_as_before_and_pruned_ones_say_why(db: rewinddb.Database) -> None:
    _agent(db, "lg/a", 20)
    before = _history(db, "lg/a")
    head = db.version
    report = db.prune("lg/a", keep_last=10)
    cut = report.horizons["lg/a"]
    # three versions a turn: the last 10 are the newest three turns and a third of one
    assert cut == head - 9 and report.versions == 50 and report.entries == 32
    assert report.events == 16  # the events of turns 0-15 were appended before the cut
    assert report.list_items == 0  # every version of the chat shares one array
    first = _first_kept(db, "lg/a")
    for version, answer in before.items():
        if version >= cut:
            assert _read(db, "lg/a", version) == _as_kept(answer, 0, first), version
        else:
            with pytest.raises(rewinddb.HistoryUnavailableError) as info:
                _read(db, "lg/a", version)
            assert info.value.code == "history_unavailable"
            assert "prune(keep_last=10)" in str(info.value) and str(cut) in str(info.value)
    assert db.at("lg/a").kv.get("messages") == _chat(20)
    assert db.at("lg/a").events.length() == 20 and db.at("lg/a").events.verify().ok
    assert [i.event.sequence for i in db.at("lg/a").events.list()] == [16, 17, 18, 19]
    assert db.verify().ok
    db.at("lg/a").kv.put("turn", 99)  # the chain goes on from the cut
    assert db.verify().ok and db.version == head + 1


def test_a_fork_keeps_what_it_reads(db: rewinddb.Database) -> None:
    _agent(db, "lg/a", 10)
    db.branches.fork("lg/a", "lg/a-fork", at=db.version - 12)
    db.at("lg/a-fork").kv.put("turn", "forked")
    fork_before = _history(db, "lg/a-fork")
    report = db.prune("lg/a", keep_last=2)
    assert report.horizons["lg/a"] == db.branches.get("lg/a-fork").forked_at
    assert _history(db, "lg/a-fork") == fork_before
    assert db.verify().ok


def test_gc_applies_policies_purges_deleted_branches_and_shrinks_the_file(
    db_path: Path,
) -> None:
    with rewinddb.open(db_path) as db:
        for n in range(6):
            _agent(db, f"lg/t{n}", 15)
        db.branches.fork("default", "notes")
        db.at("notes").kv.put("n", 1)
        db.branches.pin("lg/t5")
        for n in (0, 1, 2):
            db.branches.delete(f"lg/t{n}")
        db.retain("lg/*", keep_last=5)
        assert [str(p) for p in db.retention()] == ["retain('lg/*', keep_last=5)"]
        pinned_before = _history(db, "lg/t5")
        kept_before = {v: a for v, a in _history(db, "lg/t3").items()}
        unchanged = (db.version, db.stamp, db.at("lg/t3").events.length())
        dry = db.gc(dry_run=True)
        assert (db.version, db.stamp, db.at("lg/t3").events.length()) == unchanged
        assert _history(db, "lg/t3") == kept_before  # the dry run changed nothing
        report = db.gc()
        assert (dry.versions, dry.branches, dry.entries, dry.events, dry.list_items) == (
            report.versions,
            report.branches,
            report.entries,
            report.events,
            report.list_items,
        )
        assert report.branches == 3 and set(report.horizons) == {"lg/t3", "lg/t4"}
        assert "would free" in str(dry) and "freed" in str(report)
        assert report.file_bytes_before and report.file_bytes_after
        assert report.file_bytes_after < report.file_bytes_before / 2
        assert _history(db, "lg/t5") == pinned_before  # pinned: whole
        cut, first = report.horizons["lg/t3"], _first_kept(db, "lg/t3")
        for version, answer in kept_before.items():
            if version >= cut:
                assert _read(db, "lg/t3", version) == _as_kept(answer, 0, first)
        assert db.at("notes").kv.get("n") == 1
        assert db.verify().ok
        again = db.gc()
        assert (again.versions, again.branches, again.entries) == (0, 0, 0)
        assert db.drop_retention("lg/*") and db.retention() == []


def test_max_age_keeps_the_young_versions(db: rewinddb.Database) -> None:
    _agent(db, "lg/old", 3)
    report = db.prune("lg/old", max_age=timedelta(days=1))
    assert report.versions == 0  # everything is younger than a day
    report = db.prune("lg/old", max_age=timedelta(microseconds=1))
    assert report.horizons["lg/old"] == db.version  # all but the newest version are old
    assert db.at("lg/old").kv.get("messages") == _chat(3) and db.verify().ok


def test_prune_before_a_version_or_a_time(db: rewinddb.Database) -> None:
    _agent(db, "lg/a", 6)
    middle = db.version - 6
    db.prune("lg/a", before=middle, reason="the user asked")
    with pytest.raises(rewinddb.HistoryUnavailableError, match="the user asked"):
        db.at("lg/a").kv.get("turn", as_of=middle - 1)
    assert db.at("lg/a").kv.get("turn", as_of=middle) is not None
    db.prune("lg/a", before=datetime.now(timezone.utc))
    assert db.verify().ok


def test_bad_retention_input_is_refused(db: rewinddb.Database, refused: Refused) -> None:
    _agent(db, "lg/a", 3)
    future = datetime.now(timezone.utc) + timedelta(days=1)
    bad_policies: list[dict[str, Any]] = [
        {"pattern": "*", "keep_last": 3},
        {"pattern": "def*", "keep_last": 3},
        {"pattern": "", "keep_last": 3},
        {"pattern": "lg/*"},
        {"pattern": "lg/*", "keep_last": 0},
        {"pattern": "lg/*", "keep_last": -2},
        {"pattern": "lg/*", "keep_last": True},
        {"pattern": "lg/*", "keep_last": "3"},
        {"pattern": "lg/*", "max_age": timedelta(days=-1)},
        {"pattern": "lg/*", "max_age": timedelta(0)},
        {"pattern": "lg/*", "max_age": 30},
        {"pattern": "lg/*", "keep_last": 3, "keep_pinned": "no"},
    ]
    for terms in bad_policies:
        pattern = terms.pop("pattern")
        with refused(db, InvalidInputError, "invalid.retention"):
            db.retain(pattern, **terms)
    assert db.retention() == []
    for terms in (
        {"before": db.version + 5},
        {"before": future},
        {"before": datetime(2020, 1, 1)},  # naive
        {"before": -1},
        {"before": "3"},
        {},
        {"before": 3, "keep_last": 2},
        {"keep_last": 0},
        {"max_age": timedelta(days=-3)},
    ):
        with refused(db, InvalidInputError, "invalid.retention"):
            db.prune("lg/a", **terms)
    with refused(db, InvalidInputError, "invalid.retention"):
        db.prune("default", keep_last=1)
    with refused(db, rewinddb.BranchNotFound):
        db.prune("nobody", keep_last=1)
    db.branches.pin("lg/a")
    with refused(db, InvalidInputError, "invalid.branch.pinned"):
        db.prune("lg/a", keep_last=1)
    with refused(db, InvalidInputError, "invalid.retention"):
        db.gc(dry_run="yes")  # type: ignore[arg-type]


def test_gc_on_a_read_only_open_is_refused(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        _agent(db, "lg/a", 3)
        db.retain("lg/*", keep_last=1)
    with rewinddb.open(db_path, readonly=True) as db:
        with pytest.raises(rewinddb.ReadOnlyError) as info:
            db.gc()
        assert info.value.code == "readonly"
        assert db.at("lg/a").kv.get("turn", as_of=1) is None or True
        assert len(db.at("lg/a").events.list()) == 3  # nothing removed


def test_a_reader_sees_the_cut_at_once(db_target: str | Path) -> None:
    with rewinddb.open(db_target) as writer, rewinddb.open(db_target) as reader:
        _agent(writer, "lg/a", 5)
        assert reader.at("lg/a").kv.get("turn", as_of=3) is not None
        writer.prune("lg/a", keep_last=1)
        with pytest.raises(rewinddb.HistoryUnavailableError):
            reader.at("lg/a").kv.get("turn", as_of=3)
        assert reader.at("lg/a").kv.get("messages") == _chat(5)


# -- a model: random histories, random cuts ---------------------------------------------

_OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "grow", "delete", "event", "fork"]),
        st.integers(0, 2),  # branch
        st.integers(0, 3),  # key
    ),
    min_size=5,
    max_size=40,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_OPS, keep=st.integers(1, 6), target=st.integers(0, 2))
def test_random_cuts_keep_every_answer_at_kept_versions(
    tmp_path_factory: pytest.TempPathFactory,
    ops: list[tuple[str, int, int]],
    keep: int,
    target: int,
) -> None:
    path = tmp_path_factory.mktemp("model")
    with rewinddb.open(path) as db:
        names = ["b0"]
        db.branches.fork("default", "b0")
        for op, branch, key in ops:
            name = names[branch % len(names)]
            view = db.at(name)
            if op == "put":
                view.kv.put(f"k{key}", {"v": db.version, "pad": "p" * 30})
            elif op == "grow":
                old = view.kv.get("list") or []
                view.kv.put("list", [*old, {"item": len(old), "pad": "q" * 60}])
            elif op == "delete" and f"k{key}" in view.kv:
                view.kv.delete(f"k{key}")
            elif op == "event":
                view.events.append("e", {"at": db.version})
            elif op == "fork" and len(names) < 3:
                names.append(f"b{len(names)}")
                db.branches.fork(name, names[-1])
        everything = {name: _history(db, name) for name in names}
        pruned = names[target % len(names)]
        report = db.prune(pruned, keep_last=keep)
        cut = report.horizons.get(pruned, 0)
        for name, answers in everything.items():
            # The pruned branch's own events before the cut are gone from its log (a
            # branch with forks keeps its events: they read them); those it inherited stay.
            inherited = _inherited(db, pruned)
            for version, answer in answers.items():
                if name == pruned and version < cut:
                    with pytest.raises(rewinddb.HistoryUnavailableError):
                        _read(db, name, version)
                elif name == pruned:
                    kept = _as_kept(answer, inherited, inherited + report.events)
                    assert _read(db, name, version) == kept, (name, version)
                else:
                    assert _read(db, name, version) == answer, (name, version)
        assert db.verify().ok


def test_postgresql_reuses_the_space_gc_frees(postgres_url: str) -> None:
    def table_bytes(db: rewinddb.Database) -> int:
        row = db._engine.conn.fetchone(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        )
        return int(row[0])

    with rewinddb.open(postgres_url) as db:
        for n in range(8):
            _agent(db, f"lg/t{n}", 12)
        full = table_bytes(db)
        for n in range(8):
            db.branches.delete(f"lg/t{n}")
        report = db.gc()
        assert report.branches == 8 and report.file_bytes_before is None
        assert db.verify().ok
        for n in range(8, 16):  # as much again: it fits in the space gc freed
            _agent(db, f"lg/t{n}", 12)
        assert table_bytes(db) <= full * 1.25


def test_a_fork_at_an_event_below_the_cut_is_refused(db: rewinddb.Database) -> None:
    _agent(db, "lg/a", 6)
    db.branches.fork("lg/a", "lg/a-late")  # a fork: lg/a keeps its events
    db.prune("lg/a", keep_last=1)
    cut = db.branches.get("lg/a-late").forked_at
    assert db.at("lg/a").events.get(1).version < cut
    with pytest.raises(rewinddb.HistoryUnavailableError):
        db.branches.fork("lg/a", "too-early", at_event=1)
    assert "too-early" not in db.branches


def test_gc_runs_while_agents_write(db_target: str | Path) -> None:
    """Writers on other connections keep writing (to branches gc cuts, too) while it runs:
    no write fails, every acknowledged one is there after, and the history verifies."""
    import threading

    with rewinddb.open(db_target) as db:
        for n in range(4):
            _agent(db, f"lg/t{n}", 30)
        db.branches.delete("lg/t3")
        db.retain("lg/*", keep_last=4)
    acknowledged: dict[str, list[int]] = {"lg/t0": [], "lg/t1": []}
    failures: list[BaseException] = []
    stop = threading.Event()

    def write(branch: str) -> None:
        try:
            with rewinddb.open(db_target) as mine:
                view = mine.at(branch)
                n = 0
                while not stop.is_set() or n < 20:
                    view.kv.put("turn", 1000 + n)
                    view.events.append("step", {"turn": 1000 + n})
                    acknowledged[branch].append(1000 + n)
                    n += 1
        except BaseException as error:  # reported below
            failures.append(error)

    writers = [threading.Thread(target=write, args=(b,)) for b in acknowledged]
    for thread in writers:
        thread.start()
    with rewinddb.open(db_target) as db:
        report = db.gc()
        stop.set()
        for thread in writers:
            thread.join()
        assert failures == []
        assert report.branches == 1 and report.versions > 0
        for branch, written in acknowledged.items():
            view = db.at(branch)
            assert view.kv.get("turn") == written[-1]
            # Retention may have cut some of them (they are old by its terms): what is
            # kept is the newest of them, in order, with none missing.
            logged = [i.event.payload["turn"] for i in view.events.list()]
            mine = [turn for turn in logged if turn >= 1000]
            assert mine and mine == written[len(written) - len(mine) :]
            assert len(logged) == len(mine) or mine == written  # none lost after the cut
        assert db.verify().ok


def test_a_pruned_fork_keeps_what_it_inherited_and_its_own_events_from_the_cut(
    db: rewinddb.Database,
) -> None:
    """A fork that appended events, pruned: its own events before the cut go; the events
    it inherited stay (they are its parent's, whose history is whole), with their
    sequence numbers, and new events continue the log."""
    db.branches.fork("default", "b0")
    db.at("b0").kv.put("k", 1)
    db.at("b0").events.append("e", {"n": 0})  # sequence 0, inherited by b1
    db.branches.fork("b0", "b1")
    db.at("b1").events.append("e", {"n": 1})  # sequence 1, b1's own
    db.at("b1").kv.put("k", 2)
    report = db.prune("b1", keep_last=1)
    assert report.events == 1
    b1 = db.at("b1")
    assert [e.event.sequence for e in b1.events.list()] == [0] and b1.events.length() == 2
    assert b1.events.get(0).payload == {"n": 0}
    with pytest.raises(rewinddb.EventNotFound):
        b1.events.get(1)
    b1.events.append("e", {"n": 2})
    assert [e.event.sequence for e in b1.events.list()] == [0, 2]
    assert [e.event.sequence for e in b1.events.list(after=0)] == [2]
    assert b1.events.verify().ok and db.verify().ok
