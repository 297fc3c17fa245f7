"""How the PostgreSQL backend sends statements (``_postgres``): through psycopg's cursors,
with psycopg's own prepared statements and pipeline mode. Values and errors come back as
a plain psycopg connection gives them; a statement run again is prepared; rows a caller
reads later are its own; the connection stays usable after whatever went wrong."""

from __future__ import annotations

import datetime
import decimal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

import rewinddb
from rewinddb import _postgres

psycopg = pytest.importorskip("psycopg")

INTEGERS = [0, -1, 2**15 - 1, 2**15, -(2**15) - 1, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63), 2**63]
TEXTS = ["", "plain", "ünïcödé ✓ 🦜", "quote ' and \\ and ? and $1 and %s and %%", "\n\t"]
BYTES = [b"", b"\x00", bytes(range(256))]
#: Enough runs of a statement for it to be prepared, then run prepared.
RUNS = _postgres.PREPARE_THRESHOLD + 2


@pytest.fixture
def conn(postgres_url: str) -> Iterator[Any]:
    with rewinddb.open(postgres_url) as db:
        yield db._engine.conn


@pytest.fixture
def plain(postgres_url: str) -> Iterator[Any]:
    """A plain psycopg connection to the same database: what the answers must match."""
    with rewinddb.open(postgres_url):  # the schema
        pass
    with psycopg.connect(postgres_url, autocommit=True) as raw:
        yield raw


def by_psycopg(plain: Any, sql: str, params: Sequence[Any]) -> Any:
    return plain.execute(sql.replace("%", "%%").replace("?", "%s"), params).fetchone()


def prepared(conn: Any) -> list[str]:
    """The statements prepared on ``conn``'s session."""
    rows = conn.fetchall("SELECT statement FROM pg_prepared_statements")
    return sorted(row[0] for row in rows)


@pytest.mark.parametrize("value", [*INTEGERS, *TEXTS, *BYTES, True, False, None])
def test_a_value_comes_back_as_psycopg_gives_it(conn: Any, plain: Any, value: Any) -> None:
    expected = by_psycopg(plain, "SELECT ?", (value,))
    for _ in range(RUNS):  # unprepared, then prepared
        row = conn.fetchone("SELECT ?", (value,))
        assert row == expected and type(row[0]) is type(expected[0])


def test_columns_of_every_type_come_back_as_psycopg_gives_them(conn: Any, plain: Any) -> None:
    sql = (
        "SELECT CAST(? AS BIGINT), CAST(? AS INTEGER), CAST(? AS BYTEA), CAST(? AS TEXT), "
        "CAST(? AS BOOLEAN), NULL, 1.5::float8, 2.25::numeric, "
        "'2026-11-29 12:00:00+00'::timestamptz, '{1,2}'::int[], '{\"a\": [1]}'::jsonb, "
        "'x'::varchar, 'y'::name, count(*) FROM rewind_meta"
    )
    params = (7, 8, b"\x01", "t", True)
    for _ in range(RUNS):
        row = conn.fetchone(sql, params)
        assert row == by_psycopg(plain, sql, params)
    assert row[:8] == (7, 8, b"\x01", "t", True, None, 1.5, decimal.Decimal("2.25"))
    assert row[8] == datetime.datetime(2026, 11, 29, 12, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize("value", [1.5, decimal.Decimal("1.25"), datetime.date(2026, 11, 29)])
def test_any_parameter_psycopg_adapts_is_taken(conn: Any, plain: Any, value: Any) -> None:
    sql = "SELECT ?, pg_typeof(?)::text"
    row = conn.fetchone(sql, (value, value))
    expected = by_psycopg(plain, sql, (value, value))
    assert row == expected and type(row[0]) is type(expected[0])


def test_a_statement_run_again_is_prepared_once_for_each_set_of_parameter_types(
    conn: Any,
) -> None:
    sql = "SELECT CAST(? AS BIGINT) + 41"
    assert conn.fetchone(sql, (1,)) == (42,)
    assert not [s for s in prepared(conn) if "+ 41" in s]  # once: not prepared
    for value in (1, 2**40, 3, 2**40 + 1):  # smallint, then bigint parameters
        for _ in range(RUNS):
            assert conn.fetchone(sql, (value,)) == (value + 41,)
    assert [s for s in prepared(conn) if "+ 41" in s] == ["SELECT CAST($1 AS BIGINT) + 41"] * 2


def test_only_statements_that_read_or_write_rows_are_prepared(conn: Any) -> None:
    for sql in ("SELECT count(*) FROM rewind_branches", "select 40 + 2", "SET work_mem = '8MB'"):
        for _ in range(RUNS):
            conn.fetchall(sql)
    statements = prepared(conn)
    assert "SELECT count(*) FROM rewind_branches" in statements
    assert "select 40 + 2" in statements
    assert not [s for s in statements if "work_mem" in s]


_ROUTINES = ("rewind_put_entry", "rewind_append_event", "rewind_read_entry")


def test_the_routines_run_prepared(postgres_url: str) -> None:
    with rewinddb.open(postgres_url) as db:
        for n in range(RUNS):
            db.kv.put("k", n)
            db.events.append("step", {"n": n})
            assert db.kv.get("k") == n
        statements = db._engine.conn.fetchall("SELECT statement FROM pg_prepared_statements")
    called = {name for (statement,) in statements for name in _ROUTINES if name in statement}
    assert called == set(_ROUTINES)


def test_no_row_is_none(conn: Any) -> None:
    assert conn.fetchone("SELECT 1 WHERE ? = 2", (1,)) is None
    assert conn.fetchone("DELETE FROM rewind_meta WHERE key = ?", ("nothing",)) is None
    assert conn.fetchall("DELETE FROM rewind_meta WHERE key = ?", ("nothing",)) == []
    assert conn.fetchone("SELECT ?", ("still usable",)) == ("still usable",)


@pytest.mark.parametrize(
    ("sql", "params", "message"),
    [
        ("SELECT 1 / ?", (0,), "division by zero"),
        ("SELECT * FROM rewind_missing WHERE x = ?", (1,), "rewind_missing"),
        ("SELECT CAST(? AS INTEGER)", ("not a number",), "invalid input syntax"),
        ("SELECT ?; SELECT 2", (1,), "multiple commands"),
        ("SELECT ?", ("a\x00b",), "NUL"),
    ],
)
def test_a_refused_statement_is_a_storage_error(
    conn: Any, sql: str, params: tuple[Any, ...], message: str
) -> None:
    for _ in range(RUNS):  # unprepared, then when it would be prepared
        with pytest.raises(rewinddb.RewindError) as info:
            conn.fetchone(sql, params)
        assert info.value.code == "storage" and message in info.value.message
    assert conn.fetchone("SELECT ?", (1,)) == (1,)  # the connection is still usable


def test_an_error_keeps_the_servers_detail_and_diagnostics(conn: Any) -> None:
    for _ in range(RUNS):
        with pytest.raises(rewinddb.RewindError) as info:
            conn.fetchone("INSERT INTO rewind_meta (key, value) VALUES (?, ?)", ("format", "x"))
        assert "DETAIL:  Key (key)=(format) already exists" in info.value.message
        cause = info.value.__cause__
        assert isinstance(cause, psycopg.errors.UniqueViolation)
        assert cause.diag.sqlstate == "23505" and cause.diag.constraint_name == "rewind_meta_pkey"


def test_inside_a_transaction_it_reads_the_transactions_own_rows(conn: Any) -> None:
    sql = "SELECT value FROM rewind_meta WHERE key = ?"
    with pytest.raises(KeyError), conn.write():
        conn.execute("INSERT INTO rewind_meta (key, value) VALUES (?, ?)", ("seen", "yes"))
        assert conn.fetchone(sql, ("seen",)) == ("yes",)
        raise KeyError("roll back")
    assert conn.fetchone(sql, ("seen",)) is None


def test_statements_prepared_before_a_rollback_still_run(conn: Any) -> None:
    # psycopg forgets (and deallocates) its prepared statements at a ROLLBACK it runs,
    # a savepoint's included: the next runs prepare them again.
    sql = "INSERT INTO rewind_meta (key, value) VALUES (?, ?)"
    for _ in range(RUNS):
        assert conn.fetchone("SELECT ? + 1", (1,)) == (2,)
    with pytest.raises(KeyError), conn.write():
        for batch in range(3):
            conn.executemany(sql, [(f"k{batch}-{n}", "v") for n in range(3)])
        with pytest.raises(KeyError), conn.write():  # a savepoint rolled back
            conn.execute(sql, ("inner", "v"))
            raise KeyError("inner")
        raise KeyError("roll back")
    for _ in range(RUNS):
        assert conn.fetchone("SELECT ? + 1", (1,)) == (2,)
    assert "SELECT $1 + 1" in prepared(conn)
    with conn.write():
        conn.executemany(sql, [("kept", "v")])
    assert conn.fetchone("SELECT count(*) FROM rewind_meta WHERE key LIKE ?", ("k%",)) == (1,)


def test_a_schema_change_prepares_statements_again(conn: Any) -> None:
    conn.execute("CREATE TABLE rewind_scratch (a bigint)")
    conn.execute("INSERT INTO rewind_scratch VALUES (?)", (1,))
    for _ in range(RUNS):
        assert conn.fetchall("SELECT * FROM rewind_scratch WHERE a = ?", (1,)) == [(1,)]
    conn.execute("ALTER TABLE rewind_scratch ADD COLUMN b text DEFAULT 'x'")
    assert conn.fetchall("SELECT * FROM rewind_scratch WHERE a = ?", (1,)) == [(1, "x")]


def test_every_row_of_a_statement_is_read(conn: Any) -> None:
    sql = "SELECT n, CAST(n AS TEXT), NULL FROM generate_series(1, ?) AS n"
    for count in (0, 1, 2500):
        for _ in range(RUNS):
            rows = conn.fetchall(sql, (count,))
            assert rows == [(n, str(n), None) for n in range(1, count + 1)]


def test_rows_read_later_are_the_statements_own(conn: Any) -> None:
    # Rows handed back unread stay those of their statement whatever runs meanwhile.
    first = conn.execute("SELECT n FROM generate_series(1, ?) AS n", (3,))
    second = conn.execute("SELECT n * 10 FROM generate_series(1, ?) AS n", (2,))
    assert conn.fetchone("SELECT ?", ("between",)) == ("between",)
    conn.execute("INSERT INTO rewind_meta (key, value) VALUES (?, ?)", ("later", "v"))
    inserted = conn.execute(
        "INSERT INTO rewind_meta (key, value) VALUES (?, ?) RETURNING key", ("returned", "v")
    )
    assert conn.fetchone("SELECT 1") == (1,)
    assert list(first) == [(1,), (2,), (3,)]
    assert list(second) == [(10,), (20,)]
    assert list(inserted) == [("returned",)]


def test_statements_without_parameters_may_be_several(conn: Any) -> None:
    # the simple protocol (BEGIN and the write lock in one round trip): the last one's rows
    assert conn.fetchall("SELECT 1; SELECT 2, 'two'") == [(2, "two")]
    assert conn.fetchall("SELECT 1; SET work_mem = '8MB'") == []
    with pytest.raises(rewinddb.RewindError) as info:
        conn.fetchall("SELECT 1; SELECT 1 / 0")
    assert info.value.code == "storage" and "division by zero" in info.value.message
    assert conn.fetchall("SELECT 'percent % kept'") == [("percent % kept",)]


def test_a_batch_is_refused_whole(conn: Any) -> None:
    sql = "INSERT INTO rewind_meta (key, value) VALUES (?, ?)"
    with pytest.raises(rewinddb.RewindError) as info, conn.write():
        conn.executemany(sql, [("b1", "v"), ("format", "duplicate"), ("b2", "v")])
    assert info.value.code == "storage" and "already exists" in info.value.message
    assert conn.fetchone("SELECT count(*) FROM rewind_meta WHERE key LIKE ?", ("b%",)) == (0,)
    with conn.write():
        conn.executemany(sql, [(f"b{n}", "v") for n in range(50)])
    assert conn.fetchone("SELECT count(*) FROM rewind_meta WHERE key LIKE ?", ("b%",)) == (50,)


def _pausing_rows(cursor: Any) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """A psycopg row factory that pauses before each row is made: a thread that read
    another's row, or lost its own, would do so in this pause."""

    def make_row(values: Sequence[Any]) -> tuple[Any, ...]:
        time.sleep(0.0005)
        return tuple(values)

    return make_row


def test_threads_sharing_one_connection_each_read_their_own_row(conn: Any) -> None:
    conn._cursor.row_factory = _pausing_rows
    failures: list[tuple[int, Any]] = []

    def worker(n: int) -> None:
        for _ in range(50):
            try:
                row = conn.fetchone("SELECT CAST(? AS BIGINT)", (n,))
            except Exception as error:  # another thread's statement took the cursor
                failures.append((n, error))
                return
            if row[0] != n:
                failures.append((n, row))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures[:3]


def test_a_ctrl_c_just_after_begin_leaves_no_transaction_open(postgres_url: str) -> None:
    with rewinddb.open(postgres_url) as db, rewinddb.open(postgres_url) as other:
        conn: Any = db._engine.conn
        run = conn._run

        def interrupted_begin(sql: str, params: Any) -> Any:
            rows = run(sql, params)
            if sql.startswith("BEGIN"):
                raise KeyboardInterrupt  # the moment the server answered BEGIN
            return rows

        conn._run = interrupted_begin
        try:
            with pytest.raises(KeyboardInterrupt), db.transaction():
                db.kv.put("never", 1)
            with pytest.raises(KeyboardInterrupt), db.read():
                pass
        finally:
            del conn._run
        assert conn._raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        db.kv.put("x", 1)  # a write of its own, committed: the other connection sees it
        assert other.kv.get("x") == 1 and other.kv.get("never") is None


def test_a_statement_interrupted_while_it_runs_is_cancelled(postgres_url: str) -> None:
    # psycopg cancels a statement in the server when Ctrl-C interrupts its wait: the
    # connection is usable at once, and the interrupted statement did not run on.
    import _thread

    with rewinddb.open(postgres_url) as db:
        conn: Any = db._engine.conn
        timer = threading.Timer(0.3, _thread.interrupt_main)
        timer.start()
        started = time.monotonic()
        try:
            with pytest.raises(KeyboardInterrupt):
                conn.fetchone("SELECT pg_sleep(?)", (30,))
        finally:
            timer.cancel()
        assert time.monotonic() - started < 10
        assert conn.fetchone("SELECT ?", ("usable",)) == ("usable",)
        db.kv.put("k", 1)
        assert db.kv.get("k") == 1
