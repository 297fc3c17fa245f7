"""PostgreSQL's ``fetchone`` sent with libpq's blocking call (``_pg_direct``): the same
values, types and errors as psycopg's cursor gives, which is what it stands in for."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from typing import Any

import pytest

import rewinddb
from rewinddb import _pg_direct

psycopg = pytest.importorskip("psycopg")

INTEGERS = [0, -1, 2**15 - 1, 2**15, -(2**15) - 1, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63), 2**63]
TEXTS = ["", "plain", "ünïcödé ✓ 🦜", "quote ' and \\ and ? and $1 and %s", "\n\t"]
BYTES = [b"", b"\x00", bytes(range(256))]


@pytest.fixture
def conn(postgres_url: str) -> Iterator[Any]:
    with rewinddb.open(postgres_url) as db:
        yield db._engine.conn


def by_psycopg(conn: Any, sql: str, params: tuple[Any, ...]) -> Any:
    """The row psycopg's own cursor answers for the same statement."""
    return conn._raw.execute(conn._translate(sql), params).fetchone()


@pytest.mark.parametrize("value", [*INTEGERS, *TEXTS, *BYTES, True, False, None])
def test_a_value_comes_back_as_psycopg_gives_it(conn: Any, value: Any) -> None:
    expected = by_psycopg(conn, "SELECT ?", (value,))
    for _ in range(_pg_direct.PREPARE_AT + 1):  # unnamed, then prepared
        row = conn.fetchone("SELECT ?", (value,))
        assert row == expected and type(row[0]) is type(expected[0])


def test_a_parameter_has_the_type_psycopg_gives_it(conn: Any) -> None:
    sql = "SELECT pg_typeof(?)::text"
    types = [conn.fetchone(sql, (n,))[0] for n in INTEGERS]
    assert types == ["smallint"] * 3 + ["integer"] * 2 + ["bigint"] * 4 + ["numeric"]
    assert types == [by_psycopg(conn, sql, (n,))[0] for n in INTEGERS]
    assert [conn.fetchone(sql, (v,))[0] for v in (True, b"x")] == ["boolean", "bytea"]
    # text and NULL are sent untyped, for the server to infer, as psycopg sends them
    assert conn.fetchone("SELECT pg_typeof(CAST(? AS TEXT) || ?)::text", ("a", "b")) == ("text",)
    for value in ("a", None):
        with pytest.raises(rewinddb.RewindError, match="could not determine data type"):
            conn.fetchone(sql, (value,))
        with pytest.raises(psycopg.errors.IndeterminateDatatype):
            by_psycopg(conn, sql, (value,))


def test_columns_of_every_type_are_read_by_psycopgs_loaders(conn: Any) -> None:
    sql = (
        "SELECT CAST(? AS BIGINT), CAST(? AS INTEGER), CAST(? AS BYTEA), CAST(? AS TEXT), "
        "CAST(? AS BOOLEAN), NULL, 1.5::float8, 2.25::numeric, "
        "'2026-11-29 12:00:00+00'::timestamptz, '{1,2}'::int[], '{\"a\": [1]}'::jsonb, "
        "'x'::varchar, 'y'::name, count(*) FROM rewind_meta"
    )
    params = (7, 8, b"\x01", "t", True)
    row = conn.fetchone(sql, params)
    assert row == by_psycopg(conn, sql, params)
    assert row[:8] == (7, 8, b"\x01", "t", True, None, 1.5, decimal.Decimal("2.25"))
    assert row[8] == datetime.datetime(2026, 11, 29, 12, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize(
    "value", [1.5, decimal.Decimal("1.25"), datetime.date(2026, 11, 29), bytearray(b"ab")]
)
def test_other_parameters_go_through_psycopg(conn: Any, value: Any) -> None:
    sql = "SELECT ?, pg_typeof(?)::text"
    assert conn._direct.encode((value,)) is None
    row = conn.fetchone(sql, (value, value))
    expected = by_psycopg(conn, sql, (value, value))
    assert row == expected and type(row[0]) is type(expected[0])


def prepared(conn: Any) -> list[str]:
    rows = conn._raw.execute(
        "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'rewind%'"
    )
    return sorted(row[0] for row in rows)


def test_a_statement_run_again_is_prepared_once_for_each_set_of_parameter_types(
    conn: Any,
) -> None:
    sql = "SELECT CAST(? AS BIGINT) + 1"
    for value in (1, 2**40, 3, 2**40 + 1):  # smallint, then bigint parameters
        for _ in range(_pg_direct.PREPARE_AT + 1):
            assert conn.fetchone(sql, (value,)) == (value + 1,)
    assert [sql for sql in prepared(conn) if "BIGINT" in sql] == [
        "SELECT CAST($1 AS BIGINT) + 1"
    ] * 2


def test_at_most_so_many_statements_are_prepared(
    conn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pg_direct, "MOST_PREPARED", len(conn._direct._prepared) + 2)
    for n in range(4):
        for _ in range(_pg_direct.PREPARE_AT + 1):
            assert conn.fetchone(f"SELECT ? + {n}", (1,)) == (1 + n,)
    assert [sql for sql in prepared(conn) if "$1 +" in sql] == ["SELECT $1 + 0", "SELECT $1 + 1"]


def test_no_row_is_none(conn: Any) -> None:
    assert conn.fetchone("SELECT 1 WHERE ? = 2", (1,)) is None
    assert conn.fetchone("DELETE FROM rewind_meta WHERE key = ?", ("nothing",)) is None
    assert conn.fetchone("SELECT ?", ("still usable",)) == ("still usable",)


@pytest.mark.parametrize(
    ("sql", "params", "message"),
    [
        ("SELECT 1 / ?", (0,), "division by zero"),
        ("SELECT * FROM rewind_missing WHERE x = ?", (1,), "rewind_missing"),
        ("SELECT ?, ?", (1,), "bind message supplies 1 parameters"),
        ("SELECT CAST(? AS INTEGER)", ("not a number",), "invalid input syntax"),
        ("SELECT ?; SELECT 2", (1,), "multiple commands"),
    ],
)
def test_a_refused_statement_is_a_storage_error(
    conn: Any, sql: str, params: tuple[Any, ...], message: str
) -> None:
    for _ in range(_pg_direct.PREPARE_AT + 1):  # unnamed, then when preparing
        with pytest.raises(rewinddb.RewindError) as info:
            conn.fetchone(sql, params)
        assert info.value.code == "storage" and message in info.value.message
    assert conn.fetchone("SELECT ?", (1,)) == (1,)  # the connection is still usable


def test_inside_a_transaction_it_reads_the_transactions_own_rows(conn: Any) -> None:
    sql = "SELECT value FROM rewind_meta WHERE key = ?"
    with pytest.raises(KeyError), conn.write():
        conn.execute("INSERT INTO rewind_meta (key, value) VALUES (?, ?)", ("direct", "seen"))
        assert conn.fetchone(sql, ("direct",)) == ("seen",)
        raise KeyError("roll back")
    assert conn.fetchone(sql, ("direct",)) is None


def test_prepared_statements_outlive_a_rollback(conn: Any) -> None:
    # psycopg prepares what it runs often (here: executemany) and would DEALLOCATE ALL,
    # the statements prepared here included, after a ROLLBACK it saw: transaction control
    # goes past it.
    sql = "INSERT INTO rewind_meta (key, value) VALUES (?, ?)"
    for _ in range(_pg_direct.PREPARE_AT + 1):
        assert conn.fetchone("SELECT ? + 1", (1,)) == (2,)
    with pytest.raises(KeyError), conn.write():
        for batch in range(10):
            conn.executemany(sql, [(f"k{batch}-{n}", "v") for n in range(3)])
        raise KeyError("roll back")
    assert conn.fetchone("SELECT ? + 1", (1,)) == (2,)
    with conn.write():
        conn.executemany(sql, [("kept", "v")])
    assert conn.fetchone("SELECT count(*) FROM rewind_meta WHERE key LIKE ?", ("k%",)) == (1,)


def test_every_row_of_a_statement_is_read(conn: Any) -> None:
    sql = "SELECT n, CAST(n AS TEXT), NULL FROM generate_series(1, ?) AS n"
    for count in (0, 1, 2500):
        for _ in range(_pg_direct.PREPARE_AT + 1):
            rows = conn.fetchall(sql, (count,))
            assert rows == [(n, str(n), None) for n in range(1, count + 1)]
    assert conn.fetchall("DELETE FROM rewind_meta WHERE key = ?", ("nothing",)) == []


def test_statements_without_parameters_may_be_several(conn: Any) -> None:
    # the simple protocol (BEGIN and the write lock in one round trip): the last one's rows
    assert conn.fetchall("SELECT 1; SELECT 2, 'two'") == [(2, "two")]
    assert conn.fetchall("SET LOCAL work_mem = '8MB'") == []
    with pytest.raises(rewinddb.RewindError) as info:
        conn.fetchall("SELECT 1; SELECT 1 / 0")
    assert info.value.code == "storage" and "division by zero" in info.value.message


def test_a_statement_without_parameters_is_prepared_if_it_reads_or_writes_rows(
    conn: Any,
) -> None:
    for sql in ("SELECT count(*) FROM rewind_branches", "select 41 + 1", "SET work_mem = '8MB'"):
        for _ in range(_pg_direct.PREPARE_AT + 1):
            conn.fetchall(sql)
    assert [
        sql for sql in prepared(conn) if "count(*) FROM rewind_branches" in sql or "41" in sql
    ] == [
        "SELECT count(*) FROM rewind_branches",
        "select 41 + 1",
    ]
    assert not [sql for sql in prepared(conn) if "work_mem" in sql]


def test_rows_with_parameters_only_psycopg_adapts(conn: Any) -> None:
    sql = "SELECT ? * n FROM generate_series(1, 3) AS n"
    assert conn.fetchall(sql, (1.5,)) == [(1.5,), (3.0,), (4.5,)]


def test_an_error_keeps_the_servers_detail_and_diagnostics(conn: Any) -> None:
    for _ in range(_pg_direct.PREPARE_AT + 1):
        with pytest.raises(rewinddb.RewindError) as info:
            conn.fetchone("INSERT INTO rewind_meta (key, value) VALUES (?, ?)", ("format", "x"))
        assert "DETAIL:  Key (key)=(format) already exists" in info.value.message
        cause = info.value.__cause__
        assert isinstance(cause, psycopg.errors.UniqueViolation)
        assert cause.diag.sqlstate == "23505" and cause.diag.constraint_name == "rewind_meta_pkey"


def test_a_nul_in_text_is_refused_as_psycopg_refuses_it(conn: Any) -> None:
    with pytest.raises(rewinddb.RewindError, match="NUL") as info:
        conn.fetchone("SELECT ?", ("a\x00b",))
    assert info.value.code == "storage"
    assert conn.fetchone("SELECT ?", ("a",)) == ("a",)


def test_a_schema_change_prepares_statements_again(conn: Any) -> None:
    conn.execute("CREATE TABLE rewind_scratch (a bigint)")
    conn.execute("INSERT INTO rewind_scratch VALUES (?)", (1,))
    for _ in range(_pg_direct.PREPARE_AT + 1):
        assert conn.fetchall("SELECT * FROM rewind_scratch WHERE a = ?", (1,)) == [(1,)]
    conn.execute("ALTER TABLE rewind_scratch ADD COLUMN b text DEFAULT 'x'")
    assert conn.fetchall("SELECT * FROM rewind_scratch WHERE a = ?", (1,)) == [(1, "x")]


class _Interrupting:
    """A libpq connection whose next ``prepare`` is interrupted the moment it returns, as
    a Ctrl-C is seen when libpq's blocking call gives Python the hand back."""

    def __init__(self, pgconn: Any) -> None:
        self._pgconn = pgconn
        self.interrupted = False

    def prepare(self, *args: Any) -> Any:
        result = self._pgconn.prepare(*args)
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pgconn, name)


def test_a_prepare_interrupted_after_the_server_made_it_leaves_the_connection_usable(
    conn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = conn._raw
    real = raw.pgconn
    interrupting = _Interrupting(real)
    execute = _pg_direct.DirectStatements._execute

    def execute_interrupting(direct: Any, sql: str, params: Any) -> Any:
        raw.pgconn = interrupting  # only while the statement is sent
        try:
            return execute(direct, sql, params)
        finally:
            raw.pgconn = real

    monkeypatch.setattr(_pg_direct.DirectStatements, "_execute", execute_interrupting)
    with pytest.raises(KeyboardInterrupt):
        for _ in range(_pg_direct.PREPARE_AT):
            conn.fetchone("SELECT ? + 2", (1,))
    assert interrupting.interrupted
    for n in (2, 3, 4):  # the statement again, then new ones: their names are free
        for _ in range(_pg_direct.PREPARE_AT + 1):
            assert conn.fetchone(f"SELECT ? + {n}", (1,)) == (1 + n,)


def test_a_ctrl_c_just_after_begin_leaves_no_transaction_open(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _pg_direct.DirectStatements.script

    def interrupted_begin(direct: Any, sql: str) -> Any:
        rows = script(direct, sql)
        if sql.startswith("BEGIN"):
            raise KeyboardInterrupt
        return rows

    with rewinddb.open(postgres_url) as db, rewinddb.open(postgres_url) as other:
        with monkeypatch.context() as patch:
            patch.setattr(_pg_direct.DirectStatements, "script", interrupted_begin)
            with pytest.raises(KeyboardInterrupt), db.transaction():
                db.kv.put("never", 1)
            with pytest.raises(KeyboardInterrupt), db.read():
                pass
        raw = db._engine.conn._raw
        assert raw.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        db.kv.put("x", 1)  # a write of its own, committed: the other connection sees it
        assert other.kv.get("x") == 1 and other.kv.get("never") is None
