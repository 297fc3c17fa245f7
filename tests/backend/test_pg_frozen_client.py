"""A PostgreSQL client that vanishes holding the write lock holds it for a bounded time.

A real writer process opens a write transaction and is frozen with SIGSTOP: other
writers get ``busy`` while ``idle_in_transaction_timeout`` has not passed, and get the
lock once it has (the server ends the frozen session). Woken with SIGCONT, the frozen
writer's call fails with ``connection_lost``, nothing of its transaction is in the
database, and its next call reconnects. Also: the session settings and libpq keepalives
are in effect, bad values are refused, and ``busy_timeout=0`` does not wait for ever.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import rewinddb

#: The bound the frozen writer is opened with: short, so that the test stays quick.
BOUND = 2.0


def _frozen_writer(url: str, wake_into: str, report: Any, go: Any) -> None:
    """Commit one write, then hold the write lock in a transaction until ``go`` (the
    test freezes the process meanwhile); report what each step saw."""
    with rewinddb.open(url, idle_in_transaction_timeout=BOUND) as db:
        db.kv.put("acked", 1)
        report.put(("acked", db.version))
        try:
            with db.atomic():
                db.kv.put("unacked", 1)
                db.events.append("half", {"n": 1})
                report.put(("holding", time.monotonic()))
                go.wait()  # frozen here (SIGSTOP), far longer than BOUND
                if wake_into == "write":
                    db.kv.put("unacked", 2)
                # else: it wakes into the COMMIT at the block's end
        except rewinddb.RewindError as error:
            report.put(("failed", error.code, error.message))
        else:
            report.put(("committed", db.version))
        db.kv.put("after", 1)  # the next call reconnects
        report.put(("after", db.kv.get("after")))


def _state(pid: int) -> str:
    """The process's state letter (``T``: stopped)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]


@pytest.mark.slow
@pytest.mark.parametrize("wake_into", ["write", "commit"])
def test_a_frozen_writer_holds_the_lock_only_until_the_bound(
    postgres_url: str, wake_into: str
) -> None:
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    report, go = context.Queue(), context.Event()
    with rewinddb.open(postgres_url) as db:
        db.kv.put("start", 1)
    hurried = rewinddb.open(postgres_url, busy_timeout=0.3)
    patient = rewinddb.open(postgres_url, busy_timeout=BOUND + 5)
    writer = context.Process(target=_frozen_writer, args=(postgres_url, wake_into, report, go))
    writer.start()
    try:
        assert writer.pid is not None
        kind, acked_version = report.get(timeout=60)
        assert kind == "acked"
        kind, held_since = report.get(timeout=60)
        assert kind == "holding"
        os.kill(writer.pid, signal.SIGSTOP)
        while _state(writer.pid) != "T":
            time.sleep(0.01)

        # Within the bound the frozen writer still holds the lock: a writer gets busy.
        with pytest.raises(rewinddb.DatabaseBusyError):
            hurried.kv.put("other", 1)
        # Once the bound passes, the server ends the frozen session: the lock is free.
        patient.kv.put("other", 2)
        got_it = time.monotonic() - held_since
        assert BOUND - 1 < got_it < BOUND + 5, got_it
        assert _state(writer.pid) == "T"  # still frozen: the server freed the lock
        hurried.kv.put("other", 3)  # no wait now

        os.kill(writer.pid, signal.SIGCONT)
        go.set()
        kind, code, message = report.get(timeout=60)
        assert (kind, code) == ("failed", "connection_lost"), message
        assert "nothing of the transaction" in message and "idle_in_transaction_timeout" in message
        assert "read before retrying" not in message  # certain: it was not committed
        assert report.get(timeout=60) == ("after", 1)  # its next call reconnected
        writer.join(timeout=60)
        assert writer.exitcode == 0
    finally:
        if writer.is_alive():
            os.kill(writer.pid, signal.SIGCONT)  # type: ignore[arg-type]
            writer.kill()
            writer.join(timeout=10)
        hurried.close()
        patient.close()

    with rewinddb.open(postgres_url) as db:  # only the acknowledged writes are there
        assert db.kv.items() == {"start": 1, "acked": 1, "other": 3, "after": 1}
        assert db.events.length() == 0
        assert db.version == acked_version + 3  # other (twice), after: nothing half-written
        versions = sorted(c.version for c in db.commits())
        assert versions[-4:] == list(range(acked_version, acked_version + 4))
        for version in range(acked_version, db.version + 1):
            assert db.kv.get("unacked", as_of=version) is None
            assert db.events.length(as_of=version) == 0


def _show(db: rewinddb.Database, name: str) -> str:
    row = db._engine.conn.fetchone(f"SHOW {name}")
    return str(row[0])


def _client_parameter(db: rewinddb.Database, name: str) -> str | None:
    conn: Any = db._engine.conn  # a PostgresConnection
    for option in conn._raw.pgconn.info:
        if option.keyword == name.encode():
            return None if option.val is None else bytes(option.val).decode()
    raise AssertionError(name)


def test_our_sessions_have_the_bound_and_keepalives(postgres: Any) -> None:
    url = postgres.new_schema()
    with rewinddb.open(url) as db:  # the defaults
        assert _show(db, "idle_in_transaction_session_timeout") == "30s"
        assert _show(db, "lock_timeout") == "1min"
        assert _show(db, "tcp_keepalives_idle") == "15"  # the server's side (TCP here)
        assert _show(db, "tcp_keepalives_interval") == "5"
        assert _show(db, "tcp_keepalives_count") == "3"
        assert _show(db, "tcp_user_timeout") == "30000"  # ms
        assert _client_parameter(db, "keepalives") == "1"  # libpq's side
        assert _client_parameter(db, "keepalives_idle") == "15"
        assert _client_parameter(db, "keepalives_interval") == "5"
        assert _client_parameter(db, "keepalives_count") == "3"
        assert _client_parameter(db, "tcp_user_timeout") == "30000"
        # A reconnected session has them too.
        conn: Any = db._engine.conn
        conn._raw.close()
        db.kv.put("a", 1)
        assert _show(db, "idle_in_transaction_session_timeout") == "30s"
        assert _show(db, "tcp_keepalives_idle") == "15"
    with rewinddb.open(url, idle_in_transaction_timeout=0) as db:  # none
        assert _show(db, "idle_in_transaction_session_timeout") == "0"
    with rewinddb.open(url, idle_in_transaction_timeout=0.0001, busy_timeout=0) as db:
        assert _show(db, "idle_in_transaction_session_timeout") == "1ms"  # never 0: none
        assert _show(db, "lock_timeout") == "1ms"  # 0 would wait for ever
    with rewinddb.open(url, idle_in_transaction_timeout=90) as db:
        assert _show(db, "idle_in_transaction_session_timeout") == "90s"
    given = f"{url}&keepalives_idle=7&tcp_user_timeout=4000"  # the URL's values win
    with rewinddb.open(given) as db:
        assert _client_parameter(db, "keepalives_idle") == "7"
        assert _client_parameter(db, "tcp_user_timeout") == "4000"
        assert _client_parameter(db, "keepalives_count") == "3"


@pytest.mark.parametrize("bad", ["30", -1, True, None, float("nan"), float("inf"), 10**6])
def test_a_bad_idle_in_transaction_timeout_is_refused(db_target: str | Path, bad: Any) -> None:
    with pytest.raises(rewinddb.RewindError) as info:
        rewinddb.open(db_target, idle_in_transaction_timeout=bad)
    assert info.value.code == "invalid.option"
    assert "idle_in_transaction_timeout" in info.value.message
    if isinstance(db_target, Path):
        assert not db_target.exists()  # refused before anything was created
    with rewinddb.open(db_target, idle_in_transaction_timeout=5) as db:  # a good one
        db.kv.put("a", 1)
        assert db.kv.get("a") == 1


def test_busy_timeout_zero_does_not_wait_for_ever(postgres_url: str) -> None:
    """PostgreSQL's ``lock_timeout = 0`` means no bound: busy_timeout=0 must not be it."""
    holder = rewinddb.open(postgres_url)
    waiter = rewinddb.open(postgres_url, busy_timeout=0)
    outcome: list[object] = []

    def write() -> None:
        try:
            waiter.kv.put("x", 1)
            outcome.append("written")
        except rewinddb.RewindError as error:
            outcome.append(error.code)

    try:
        with holder.transaction():
            holder.kv.put("held", 1)
            thread = threading.Thread(target=write)
            thread.start()
            thread.join(timeout=10)
            assert outcome == ["busy"]
        waiter.kv.put("x", 2)
        assert waiter.kv.get("x") == 2
    finally:
        holder.close()
        waiter.close()
