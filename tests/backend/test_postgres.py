"""What only the PostgreSQL backend has to prove: many writers on many connections (8
processes) lose and duplicate nothing and every ``as_of`` read agrees with the final
history; a server restart mid-write leaves no partial version and a clear error, and the
next call reconnects."""

from __future__ import annotations

import multiprocessing
import random
from typing import Any

import pytest

import rewinddb

WRITERS = 8
STEPS = 25


def _writer(url: str, number: int, seen: Any) -> None:
    """Append and write on its own branch and on the shared one; record what it read."""
    rng = random.Random(number)
    reads = []
    with rewinddb.open(url) as db:
        own = db.at(f"w{number}")
        shared = db.at("shared")
        for step in range(STEPS):
            with own.transaction(trigger=f"step {step}"):
                own.events.append("tool.call", {"writer": number, "step": step})
                own.kv.put("step", step)
                own.json.set("doc", f"$.s{step}", {"by": number})
            while True:  # the optimistic protocol on a log everyone appends to
                length = shared.events.length()
                try:
                    shared.events.append(
                        "shared.call", {"writer": number, "step": step}, expected_index=length
                    )
                    break
                except rewinddb.AppendConflictError:
                    continue
            shared.kv.put(f"last-of-w{number}", step)
            if rng.random() < 0.5:
                name = rng.choice([f"w{number}", "shared"])
                with db.read():
                    view = db.at(name)
                    snapshot = view.snapshot()
                    reads.append((name, snapshot, view.events.length()))
    seen.put(reads)


@pytest.mark.slow
def test_eight_writers_on_many_connections(postgres_url: str) -> None:
    with rewinddb.open(postgres_url) as db:
        db.kv.put("start", True)
        for number in range(WRITERS):
            db.branches.fork("default", f"w{number}")
        db.branches.fork("default", "shared")
    context = multiprocessing.get_context("spawn")
    seen = context.Queue()
    workers = [
        context.Process(target=_writer, args=(postgres_url, number, seen))
        for number in range(WRITERS)
    ]
    for worker in workers:
        worker.start()
    reads = [seen.get(timeout=300) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    with rewinddb.open(postgres_url) as db:
        shared = db.at("shared")
        events = [item.event for item in shared.events.list()]
        assert [e.sequence for e in events] == list(range(WRITERS * STEPS))  # dense
        assert sorted((e.payload["writer"], e.payload["step"]) for e in events) == sorted(
            (w, s) for w in range(WRITERS) for s in range(STEPS)
        )  # nothing lost, nothing twice
        assert shared.events.verify().ok
        versions = [c.version for c in db.commits()]
        assert len(versions) == len(set(versions))
        for number in range(WRITERS):
            own = db.at(f"w{number}")
            assert own.kv.get("step") == STEPS - 1
            assert own.events.length() == STEPS and own.events.verify().ok
            assert shared.kv.get(f"last-of-w{number}") == STEPS - 1
            steps = [i.event.payload["step"] for i in own.events.list()]
            assert steps == list(range(STEPS))  # one writer's versions are in its order
        # Every read made during the run is what the final history says about that point.
        checked = 0
        for worker_reads in reads:
            for name, snapshot, length in worker_reads:
                view = db.at(name)
                assert view.snapshot(as_of=snapshot["version"]) == snapshot
                assert view.events.length(as_of=snapshot["version"]) == length
                checked += 1
        assert checked > WRITERS


@pytest.fixture
def restartable(postgres: Any) -> Any:
    if postgres.given:
        pytest.skip("the server is not ours to restart (REWINDDB_TEST_POSTGRES_URL)")
    return postgres


def test_a_server_restart_mid_write_leaves_nothing_and_the_next_call_reconnects(
    restartable: Any,
) -> None:
    url = restartable.new_schema()
    with rewinddb.open(url) as db:
        db.kv.put("kept", 1)
        before = db.version
        with pytest.raises(rewinddb.RewindError) as info, db.transaction():
            db.kv.put("lost", 1)
            db.events.append("half", {"n": 1})
            restartable.restart()
            db.kv.put("lost", 2)
        assert info.value.code == "connection_lost"
        assert "nothing" in str(info.value)
        assert db.version == before  # the next call reconnected; no partial version
        assert db.kv.get("lost") is None and db.events.length() == 0
        assert db.kv.get("kept") == 1
        restartable.restart()  # between calls: the call after a loss fails cleanly...
        with pytest.raises(rewinddb.RewindError) as again:
            db.kv.put("after", 1)
        assert again.value.code == "connection_lost"
        assert "read before retrying" in str(again.value)  # one statement: it may have run
        db.kv.put("after", 2)  # ...and the next one reconnects
        assert db.kv.get("after") == 2
        assert db.version == before + 1


def test_versions_are_committed_in_order(postgres_url: str) -> None:
    """A writer holds the clock until it commits: another connection's write waits, so a
    reader that sees version v also sees every version below it."""
    import threading

    first = rewinddb.open(postgres_url)
    second = rewinddb.open(postgres_url)
    try:
        first.branches.fork("default", "other")
        order: list[str] = []
        with first.transaction():
            first.kv.put("a", 1)
            thread = threading.Thread(
                target=lambda: (second.at("other").kv.put("b", 1), order.append("second"))
            )
            thread.start()
            thread.join(timeout=0.5)
            assert thread.is_alive()  # waiting for the clock
            order.append("first")
        thread.join(timeout=30)
        assert order == ["first", "second"]
        assert first.kv.get("a", as_of=second.version - 1) == 1
    finally:
        first.close()
        second.close()


def test_a_busy_clock_times_out_with_a_clear_error(postgres_url: str) -> None:
    holder = rewinddb.open(postgres_url)
    waiter = rewinddb.open(postgres_url, busy_timeout=0.2)
    try:
        with holder.transaction():
            holder.kv.put("held", 1)
            with pytest.raises(rewinddb.DatabaseBusyError):
                waiter.kv.put("x", 1)
        waiter.kv.put("x", 2)  # usable again afterwards
        assert waiter.kv.get("x") == 2
    finally:
        holder.close()
        waiter.close()


def test_urls_are_shown_without_passwords(postgres: Any) -> None:
    from rewinddb._postgres import redact

    assert redact("postgresql://me:s3cret@db.example/agents") == (
        "postgresql://me:***@db.example/agents"
    )
    with pytest.raises(rewinddb.RewindError) as info:
        rewinddb.open("postgresql://me:s3cret@127.0.0.1:1/agents", busy_timeout=1)
    assert "s3cret" not in str(info.value)


def _open_at_once(url: str, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        with rewinddb.open(url) as db:
            db.kv.put(f"k{id(db)}", 1)
        results.put("ok")
    except Exception as error:  # reported to the test, which fails with it
        results.put(repr(error))


@pytest.mark.slow
def test_several_processes_creating_one_database_at_once(postgres_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(6), context.Queue()
    workers = [
        context.Process(target=_open_at_once, args=(postgres_url, barrier, results))
        for _ in range(6)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    assert outcomes == ["ok"] * 6
    with rewinddb.open(postgres_url) as db:
        assert len(db.kv.keys()) == 6 and db.branches.names() == ["default"]


def test_writes_inside_a_read_block_are_refused_on_both_backends(db: rewinddb.Database) -> None:
    db.kv.put("a", 1)
    with db.read(), pytest.raises(rewinddb.RewindError) as info:
        db.kv.put("a", 2)
    assert info.value.code == "invalid.transaction"
    assert db.kv.get("a") == 1
    db.kv.put("a", 3)  # and afterwards writes work
    assert db.kv.get("a") == 3


def test_a_refused_statement_is_a_storage_error_never_a_driver_error(postgres_url: str) -> None:
    """Single statements and batches (``executemany``: ``kv.put_many``, ``set_many``)."""
    with rewinddb.open(postgres_url) as db:
        conn = db._engine.conn
        for run in (
            lambda: conn.execute("INSERT INTO rewind_missing VALUES (?)", (1,)),
            lambda: conn.executemany("INSERT INTO rewind_missing VALUES (?)", [(1,), (2,)]),
        ):
            with pytest.raises(rewinddb.RewindError) as info:
                run()
            assert info.value.code == "storage" and "rewind_missing" in info.value.message
        db.kv.put_many({"a": 1, "b": 2})  # the connection is still usable
        assert db.kv.items() == {"a": 1, "b": 2}


def test_a_closed_database_is_never_reconnected(postgres_url: str) -> None:
    db = rewinddb.open(postgres_url)
    conn = db._engine.conn
    db.close()  # as another thread may, between a call's checks and its statement
    with pytest.raises(rewinddb.RewindError) as info:
        conn._usable()
    assert info.value.code == "closed" and conn._raw.closed
