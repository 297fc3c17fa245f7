"""PostgreSQL's write routines (``_pg_routines``): a write that is a transaction of its own
is one statement, and it writes exactly what the statement-by-statement path writes (the
rest of the backend suite runs every such write through them on PostgreSQL)."""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import rewinddb
from rewinddb import _clock, _commit_hash, _engine, _pg_routines, _schema
from rewinddb._values import dumps
from rewinddb.events import event_hash
from rewinddb.testing import PostgresServer

HOSTILE_TYPES = [
    "tool.call",
    'quote " and \\ backslash',
    "tabs\tnewlines\nreturns\r\x01\x1f\x7f",
    "ünïcödé ✓ 🦜 \u2028\u2029",
    "</script><script>alert(1)</script>",
]


@contextmanager
def statements(db: rewinddb.Database) -> Iterator[list[str]]:
    """The statements ``db`` sends inside the block (its connection's two hooks: every
    statement passes one of them)."""
    conn = db._engine.conn
    sent: list[str] = []

    def counting(run: Any) -> Any:
        def counted(sql: str, params: Any) -> Any:
            sent.append(sql)
            return run(sql, params)

        return counted

    conn._run = counting(conn._run)  # type: ignore[method-assign]
    conn._run_one = counting(conn._run_one)  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        del conn._run, conn._run_one


@pytest.fixture
def pg(postgres_url: str) -> Iterator[rewinddb.Database]:
    with rewinddb.open(postgres_url) as db:
        yield db


def test_a_single_write_is_one_statement(pg: rewinddb.Database) -> None:
    with statements(pg) as sent:
        pg.kv.put("k", {"a": 1}, trigger="t", message="m")
        pg.state.set("s", b"\x00bytes", trigger="because")
        pg.json.set("doc", "$", {"nested": [1, 2]})
        pg.events.append("step", {"n": 1})
        pg.events.append("step", {"n": 2}, expected_index=1)
    assert len(sent) == 5 and all("rewind_" in sql and "SELECT" in sql for sql in sent)
    assert pg.kv.get("k") == {"a": 1} and pg.state.get("s") == b"\x00bytes"
    assert pg.json.get("doc", "$.nested[1]") == 2
    commits = pg.commits()[::-1]  # oldest first
    assert [c.version for c in commits] == [1, 2, 3, 4, 5]
    assert (commits[0].trigger, commits[0].message) == ("t", "m")
    assert [t.trigger for t in pg.state.history("s")] == ["because"]
    assert all(a.timestamp <= b.timestamp for a, b in itertools.pairwise(commits))


def test_writes_inside_a_transaction_take_the_ordinary_path(pg: rewinddb.Database) -> None:
    with statements(pg) as sent, pg.transaction(message="both"):
        pg.kv.put("a", 1)
        pg.events.append("step", {"n": 1})
    assert not any("rewind_put_entry" in sql or "rewind_append_event" in sql for sql in sent)
    assert pg.version == 1 and pg.kv.get("a") == 1 and pg.events.length() == 1


def test_a_shared_array_takes_the_ordinary_path(pg: rewinddb.Database) -> None:
    messages = [{"role": "user", "text": "x" * 200, "n": n} for n in range(20)]
    pg.kv.put("messages", messages)
    with statements(pg) as sent:
        pg.kv.put("messages", [*messages, {"role": "ai", "text": "y" * 200, "n": 20}])
    assert not any("rewind_put_entry" in sql for sql in sent)
    refs = pg._engine.conn.fetchone(
        "SELECT refs FROM rewind_entries WHERE key = 'messages' ORDER BY version DESC LIMIT 1"
    )
    assert refs[0] is not None  # stored as what was appended
    assert len(pg.kv.get("messages")) == 21


@pytest.mark.parametrize("event_type", HOSTILE_TYPES)
def test_the_server_hashes_events_as_python_does(pg: rewinddb.Database, event_type: str) -> None:
    payloads = [None, {"text": 'ünï "q" \\ \n'}, [1, 2.5, True], "x" * 5000]
    pg.branches.fork("default", "child")
    events = [pg.events.append(event_type, payload) for payload in payloads]
    child = pg.at("child")  # forked before: continues the parent's log from the fork point
    events += [child.events.append(event_type, payload) for payload in payloads]
    previous = ""
    for event in events[:4]:
        assert event.hash == event_hash(
            previous, event.sequence, event_type, event.version, dumps(event.payload)
        )
        previous = event.hash
    assert [e.sequence for e in events] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert pg.events.verify().ok and child.events.verify().ok
    stored = [item.event for item in pg.events.list()]
    assert stored == events[:4]  # what append returned is what a read returns


def test_an_append_continues_an_inherited_log(pg: rewinddb.Database) -> None:
    for n in range(3):
        pg.events.append("step", {"n": n})
    pg.branches.fork("default", "child", at_event=1)
    pg.events.append("step", {"n": 3})  # the parent goes on; the child does not see it
    event = pg.at("child").events.append("retry", {"n": 2}, expected_index=2)
    assert event.sequence == 2
    assert pg.at("child").events.verify().ok


def test_an_append_continues_a_log_inherited_through_two_forks(pg: rewinddb.Database) -> None:
    for n in range(3):
        pg.events.append("step", {"n": n})
    pg.branches.fork("default", "child", at_event=1)
    pg.branches.fork("child", "grandchild")
    pg.events.append("step", {"n": 3})  # after both forks: neither sees it
    pg.at("child").events.append("step", {"n": "child"})  # after the grandchild's fork
    grandchild = pg.at("grandchild")
    event = grandchild.events.append("retry", {"n": 2}, expected_index=2)
    assert event.sequence == 2 and grandchild.events.verify().ok
    assert [item.event.payload for item in grandchild.events.list()] == [
        {"n": 0},
        {"n": 1},
        {"n": 2},
    ]


def test_a_conflicting_append_writes_nothing(pg: rewinddb.Database) -> None:
    pg.events.append("step")
    with pytest.raises(rewinddb.AppendConflictError) as info:
        pg.events.append("step", expected_index=0)
    assert (info.value.code, info.value.details["expected"], info.value.details["actual"]) == (
        "conflict.append",
        0,
        1,
    )
    assert pg.version == 1 and pg.events.length() == 1


def test_missing_and_deleted_branches_are_named(pg: rewinddb.Database) -> None:
    pg.branches.fork("default", "gone")
    pg.branches.delete("gone")
    for name, words in (("gone", "was deleted"), ("never", "does not exist")):
        for write in (
            lambda view: view.kv.put("k", 1),
            lambda view: view.events.append("step"),
            lambda view: view.state.set("k", 1),
        ):
            with pytest.raises(rewinddb.BranchNotFound, match=words):
                write(pg.at(name))
    assert pg.version == 0  # the fork and the delete write no version


def test_bad_input_is_refused_before_the_server(pg: rewinddb.Database) -> None:
    with statements(pg) as sent:
        for write, code in (
            (lambda: pg.kv.put("k", 1, trigger=3), "invalid.trigger"),  # type: ignore[arg-type]
            (lambda: pg.kv.put("k", float("nan")), "invalid.value"),
            (lambda: pg.kv.put("k", 1, message="a\x00b"), "invalid.message"),
            (lambda: pg.at("").kv.put("k", 1), "invalid.branch"),
            (lambda: pg.events.append("step", expected_index=-1), "invalid.expected_index"),
        ):
            with pytest.raises(rewinddb.RewindError) as info:
                write()
            assert info.value.code == code
    assert not sent and pg.version == 0


def test_read_only_and_read_blocks_refuse_writes(pg: rewinddb.Database, postgres_url: str) -> None:
    with rewinddb.open(postgres_url, readonly=True) as readonly:
        with pytest.raises(rewinddb.ReadOnlyError):
            readonly.kv.put("k", 1)
        with pytest.raises(rewinddb.ReadOnlyError):
            readonly.events.append("step")
    with pg.read(), pytest.raises(rewinddb.RewindError) as info:
        pg.kv.put("k", 1)
    assert info.value.code == "invalid.transaction"
    assert pg.version == 0


def _routines(db: rewinddb.Database) -> set[str]:
    rows = db._engine.conn.fetchall(
        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = current_schema() AND p.proname LIKE 'rewind%'"
    )
    return {name for (name,) in rows}


def test_an_older_database_gets_its_routines(postgres_url: str) -> None:
    with rewinddb.open(postgres_url) as db:
        db.kv.put("k", 1)
        names = _routines(db)
        assert names == {"rewind_put_entry", "rewind_append_event", "rewind_read_entry"}
        with db._engine.conn.write():  # back to schema 2: no routines
            for name in names:
                db._engine.conn.execute(f"DROP FUNCTION {name}")
            db._engine.conn.execute(
                "UPDATE rewind_meta SET value = '2' WHERE key = 'schema_version'"
            )
    with pytest.raises(rewinddb.RewindError) as info:
        rewinddb.open(postgres_url, readonly=True)
    assert info.value.code == "schema.outdated"
    with rewinddb.open(postgres_url) as db:
        assert db._engine.conn.schema_migrated == (2, _schema.SCHEMA_VERSION)
        assert _routines(db) == names
        assert db.kv.put("k", 2) == 2 and db.kv.get("k", as_of=1) == 1


def test_a_read_of_one_key_is_one_statement(pg: rewinddb.Database, postgres_url: str) -> None:
    pg.kv.put("k", {"v": 1})
    pg.kv.put("b", b"\x00\xff")
    pg.kv.put("gone", 1)
    pg.kv.delete("gone")
    pg.json.set("doc", "$", {"a": {"b": [1, 2]}})
    pg.branches.fork("default", "child")
    pg.at("child").kv.put("k", {"v": 2})
    pg.branches.fork("child", "grandchild")
    child, grandchild = pg.at("child"), pg.at("grandchild")
    with statements(pg) as sent:
        assert pg.kv.get("k") == {"v": 1} and pg.kv.get("k", as_of=1) == {"v": 1}
        assert pg.kv.get("b") == b"\x00\xff"
        assert pg.kv.get("gone", "default") == "default"
        assert pg.kv.get("never") is None
        assert pg.json.get("doc", "$.a.b[1]") == 2
        assert grandchild.kv.get("k") == {"v": 2}  # inherited through two forks
        assert grandchild.kv.get("b") == b"\x00\xff"
        assert child.kv.get("k", as_of=5) == {"v": 1}  # before the child's write
    assert len(sent) == 9 and all("rewind_read_entry" in sql for sql in sent)
    with pg.read():  # inside a snapshot it reads the snapshot
        assert pg.kv.get("k") == {"v": 1}
        with rewinddb.open(postgres_url) as other:
            other.kv.put("k", "changed")
        assert pg.kv.get("k") == {"v": 1}
    assert pg.kv.get("k") == "changed"


def test_reads_the_server_cannot_answer_say_what_is_wrong(pg: rewinddb.Database) -> None:
    pg.kv.put("k", 1)
    pg.branches.fork("default", "child")
    pg.branches.fork("default", "gone")
    pg.branches.delete("gone")
    for read, error in (
        (lambda: pg.kv.get("k", as_of=99), "invalid.as_of"),
        (lambda: pg.kv.get("k", as_of=True), "invalid.as_of"),
        (lambda: pg.kv.get("k", as_of=-1), "invalid.as_of"),
        (lambda: pg.kv.get("k", as_of=2**70), "invalid.as_of"),
        (lambda: pg.at("child").kv.get("k", as_of=0), "history_unavailable"),
        (lambda: pg.at("gone").kv.get("k"), "not_found.engine.branch"),
        (lambda: pg.kv.get(""), "invalid.key"),
    ):
        with pytest.raises(rewinddb.RewindError) as info:
            read()
        assert info.value.code == error
    when = pg.commits()[0].timestamp  # a datetime takes the ordinary path
    assert pg.kv.get("k", as_of=when) == 1


def test_routines_see_the_newest_commits_whatever_the_server_default(
    postgres: PostgresServer,
) -> None:
    """A routine waits for the write lock inside its one statement; under a server default
    of REPEATABLE READ its snapshot would predate the commit it waited for."""
    url = postgres.new_schema()
    repeatable = postgres.url_for(
        postgres.schemas[-1], "default_transaction_isolation=repeatable\\ read"
    )
    with rewinddb.open(url) as holder, rewinddb.open(repeatable) as waiter:
        setting = waiter._engine.conn.fetchone("SHOW default_transaction_isolation")[0]
        assert setting == "read committed"  # rewinddb's own, over the URL's
        holder.kv.put("k", 0)
        results: list[Any] = []
        with holder.transaction():
            holder.kv.put("k", 1)  # holds the write lock
            writers = [
                threading.Thread(target=lambda: results.append(waiter.kv.put("k", 2))),
            ]
            for writer in writers:
                writer.start()
            time.sleep(0.3)  # the waiter's routine is now waiting for the lock
        for writer in writers:
            writer.join(timeout=30)
        assert results == [3] and waiter.kv.get("k") == 2
        event = waiter.events.append("step")
        assert event.version == 4 and waiter.events.verify().ok


@pytest.mark.parametrize("state", ["empty", "history", "floor above", "floor below", "future"])
def test_the_routines_allocate_as_next_commit_does(postgres: PostgresServer, state: str) -> None:
    # The same write in two databases in the same state: one call of the write routine
    # (its clock, _pg_routines.CLOCK) and the statement-by-statement path (NEXT_COMMIT).
    future = 4_000_000_000_000_000  # microseconds: in the 2090s
    written = []
    for path in ("routine", "python"):
        with rewinddb.open(postgres.new_schema()) as db:
            conn = db._engine.conn
            if state != "empty":
                for n in range(3):
                    db.kv.put("k", n)
            if state.startswith("floor"):
                floor = 100 if state == "floor above" else 1
                conn.execute(
                    "INSERT INTO rewind_meta (key, value) VALUES ('clock_floor', ?)", (str(floor),)
                )
            if state == "future":
                conn.execute("UPDATE rewind_commits SET ts = ? WHERE version = 3", (future,))
            if path == "routine":
                version = db.kv.put("k", "new")
                event = db.events.append("e", {"n": 1})
            else:
                with db.transaction():
                    version = db.kv.put("k", "new")
                with db.transaction():
                    event = db.events.append("e", {"n": 1})
            ts = conn.fetchone("SELECT ts FROM rewind_commits WHERE version = ?", (version,))[0]
            written.append((version, event.version, event.hash, ts == future))
    assert written[0] == written[1]
    expected = {"empty": 1, "history": 4, "floor above": 101, "floor below": 4, "future": 4}
    assert written[0][0] == expected[state]
    assert written[0][3] == (state == "future")  # a timestamp in the future is kept


# -- the rules both paths follow: one definition each, and what ties both to it ----------


def _sources(db: rewinddb.Database) -> dict[str, str]:
    """Each routine's body as the server holds it."""
    rows = db._engine.conn.fetchall(
        "SELECT p.proname, p.prosrc FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = current_schema() AND p.proname LIKE 'rewind%'"
    )
    return dict(rows)


def test_both_paths_allocate_by_the_one_clock(pg: rewinddb.Database) -> None:
    # The Python path's statement is made of _clock's text, and so is every routine as
    # installed (its behaviour in every state of the clock: the test below).
    assert _engine.NEXT_COMMIT == _clock.NEXT_COMMIT, "_engine must take NEXT_COMMIT from _clock"
    assert _engine.CLOCK == _clock.CLOCK, "_engine must read the clock by _clock.CLOCK"
    assert _clock.SOURCES in _clock.NEXT_COMMIT and _clock.NOW in _clock.NEXT_COMMIT
    assert _clock.READ_SOURCES in _clock.CLOCK and _clock.NOW in _clock.CLOCK
    sources = _sources(pg)
    assert set(sources) == {"rewind_put_entry", "rewind_append_event", "rewind_read_entry"}
    for name, source in sources.items():
        assert _clock.SOURCES in source and _clock.NOW in source, name
    for name in ("rewind_put_entry", "rewind_append_event"):
        assert _pg_routines.NEXT in sources[name]
        assert _clock.next_ts("p_now") in sources[name]
        assert _clock.previous_hash("branch.id") in sources[name]


HOSTILE_TEXTS = [None, "", *HOSTILE_TYPES, "nul? no: \x01\x02", "🦜" * 300]
HOSTILE_BYTES = [b"", b"\x00", bytes(range(256)), b"\x1e\x1e", "ünï".encode() * 1000]


def test_the_servers_event_hash_is_events_event_hash(pg: rewinddb.Database) -> None:
    conn = pg._engine.conn
    expression = _pg_routines.sql_event_hash(
        "CAST(? AS TEXT)",
        "CAST(? AS BIGINT)",
        "CAST(? AS BYTEA)",
        "CAST(? AS BIGINT)",
        "CAST(? AS BYTEA)",
    )
    cases = itertools.product(
        [None, "", "ab" * 32],  # the previous hash (none: the log's first event)
        [0, 7, 2**62],  # sequence
        HOSTILE_TYPES,  # event type
        [1, 2**62 + 5],  # version
        HOSTILE_BYTES,  # payload
    )
    checked = 0
    for previous, sequence, event_type, version, payload in cases:
        params = (previous, sequence, dumps(event_type), version, payload)
        (digest,) = conn.fetchone(f"SELECT {expression}", params)
        assert digest == event_hash(previous or "", sequence, event_type, version, payload)
        checked += 1
    assert checked == 3 * 3 * len(HOSTILE_TYPES) * 2 * len(HOSTILE_BYTES)


def test_the_servers_commit_hash_is_commit_hash(pg: rewinddb.Database) -> None:
    conn = pg._engine.conn
    fields = (
        "FROM (SELECT CAST(? AS BIGINT) AS version_, CAST(? AS BIGINT) AS branch_id_, "
        "CAST(? AS BIGINT) AS ts_, CAST(? AS BIGINT) AS o_sequence, CAST(? AS TEXT) AS o_hash"
        ") routine"
    )
    of_entry = _commit_hash.sql_commit_hash(
        "CAST(? AS TEXT)", "CAST(? AS BYTEA)", "CAST(? AS BYTEA)", digest=True
    )
    of_event = _commit_hash.sql_commit_hash(
        "CAST(? AS TEXT)", "CAST(? AS BYTEA)", _commit_hash.SQL_EVENT_PART, digest=False
    )
    for previous, trigger, message, body in itertools.product(
        [None, "cd" * 32], HOSTILE_TEXTS, HOSTILE_TEXTS[:3], HOSTILE_BYTES
    ):
        version, branch_id, ts, sequence, digest = 2**40 + 3, 17, 1_700_000_000_000_000, 5, "ef"
        commit = (version, branch_id, ts, trigger, message, None, None)
        texts = _commit_hash.texts_part(trigger, message)
        part = _commit_hash.entry_part("kv", trigger or "k", 1, body, None, trigger)
        row = conn.fetchone(
            f"SELECT {of_entry} {fields}",
            (previous, texts, part, version, branch_id, ts, sequence, digest),
        )
        digest_of_part = _commit_hash.entry_digest(part)
        assert row[0] == _commit_hash.commit_hash(previous, commit, [digest_of_part], [])
        row = conn.fetchone(
            f"SELECT {of_event} {fields}",
            (previous, texts, version, branch_id, ts, sequence, digest),
        )
        event = _commit_hash.event_part(sequence, digest, ts, None, None)
        assert row[0] == _commit_hash.commit_hash(previous, commit, [], [event])


def test_what_the_routines_write_verifies(pg: rewinddb.Database) -> None:
    """``db.verify()`` recomputes every commit's and event's hash in Python."""
    for n, text in enumerate(t for t in HOSTILE_TEXTS if t):
        pg.kv.put(f"k{n}", {"text": text}, trigger=text, message=text)
        pg.state.set(f"s{n}", text.encode() + b"\x00", trigger=text)
        pg.events.append(text, {"text": text}, trigger=text, message=text)
    assert pg.verify().ok


def _grow(db: rewinddb.Database, seed: int) -> list[str]:
    """A random history: forks (at versions and at events), deletes of branches and of
    keys, writes and appends, each a commit of its own (on PostgreSQL: the routines).
    Every choice depends only on the seed and on what both backends must agree on."""
    rng = random.Random(seed)
    live = ["default"]
    for step in range(70):
        name = rng.choice(live)
        view = db.at(name)
        roll = rng.random()
        if roll < 0.15 and len(live) < 8:
            child = f"b{step}"
            length = view.events.length()
            if length and rng.random() < 0.5:
                db.branches.fork(name, child, at_event=rng.randrange(length))
            else:
                info = db.branches.get(name)
                db.branches.fork(name, child, at=rng.randint(info.forked_at, db.version))
            live.append(child)
        elif roll < 0.2 and len(live) > 3:
            gone = rng.choice(live[1:])
            db.branches.delete(gone)
            live.remove(gone)
        elif roll < 0.45:
            expected = view.events.length() if rng.random() < 0.3 else None
            view.events.append("step", {"step": step}, expected_index=expected)
        elif roll < 0.55:
            view.kv.delete(f"k{rng.randrange(4)}")
        else:
            view.kv.put(f"k{rng.randrange(4)}", {"step": step})
    return live


@pytest.mark.parametrize("seed", range(4))
def test_reads_and_appends_walk_the_lineage_as_the_engine_does(
    postgres_url: str, tmp_path: Path, seed: int
) -> None:
    # The same history on SQLite (every read and append by Python's lineage walk) and on
    # PostgreSQL (each by one call of a routine): every key at every version of every
    # branch, and every event log, must read alike.
    with rewinddb.open(tmp_path / "python") as python, rewinddb.open(postgres_url) as server:
        live = _grow(python, seed)
        assert _grow(server, seed) == live
        assert server.version == python.version
        for name in live:
            a, b = python.at(name), server.at(name)
            forked = python.branches.get(name).forked_at
            for version in [None, *range(forked, python.version + 1)]:
                for key in ("k0", "k1", "k2", "k3"):
                    assert b.kv.get(key, as_of=version) == a.kv.get(key, as_of=version), (
                        name,
                        key,
                        version,
                    )
            events = [(i.event.sequence, i.event.version, i.event.hash) for i in a.events.list()]
            assert [(i.event.sequence, i.event.version, i.event.hash) for i in b.events.list()] == (
                events
            )
            b.events.append("last", {"of": name})  # on a log ending anywhere in its lineage
            a.events.append("last", {"of": name})
            assert b.events.list()[-1].event.hash == a.events.list()[-1].event.hash
        assert server.verify().ok
