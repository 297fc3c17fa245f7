"""Versioned schema migrations: how a database written by an older rewinddb is brought
up to this one's schema (``_schema.SCHEMA_VERSION``).

A new database is created at the current schema directly (from the SQLModel tables). An
older one is upgraded on ``open()`` (or by ``rewinddb migrate PATH_OR_URL``) by running,
in order and in one write transaction, each migration above its stored version; the
stored ``schema_version`` moves with them, so a failed migration leaves the old schema
whole. A database opened read-only is never changed: it asks for ``rewinddb migrate``,
unless what it lacks only writers use (``_WRITERS_ONLY``).

To change the schema: change ``_schema``, bump ``SCHEMA_VERSION`` to N, and register
``MIGRATIONS[N]``, a function that turns schema N-1 into N with portable SQL (it runs on
SQLite and PostgreSQL alike; ``conn.dialect`` tells them apart where they must differ).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from . import _commit_hash, _schema
from .errors import CorruptDatabaseError, NotADatabaseError, RewindError

if TYPE_CHECKING:
    from ._statements import Migrating

Migration = Callable[["Migrating"], None]

#: 64-bit columns of schema 2 (on PostgreSQL schema 1 made them 32-bit INTEGER).
_INT64_COLUMNS = {
    "rewind_branches": ("id", "parent_id", "forked_at"),
    "rewind_commits": ("version", "branch_id", "merge_branch_id", "merge_version"),
    "rewind_entries": ("branch_id", "version"),
    "rewind_seqs": ("id", "base_id", "base_len"),
    "rewind_seq_items": ("seq_id", "idx"),
    "rewind_events": ("branch_id", "sequence", "version", "origin_branch_id", "origin_sequence"),
}


def _to_schema_2(conn: Migrating) -> None:
    """Versions, sequences and ids become BIGINT on PostgreSQL, so a clock (or an imported
    one) past 2**31 keeps working. SQLite's INTEGER is 64-bit already: nothing to do."""
    if conn.dialect != "postgresql":
        return
    for table, columns in _INT64_COLUMNS.items():
        changes = ", ".join(f"ALTER COLUMN {column} TYPE BIGINT" for column in columns)
        conn.execute(f"ALTER TABLE {table} {changes}")
    for table in ("rewind_branches", "rewind_seqs"):
        conn.execute(f"ALTER SEQUENCE {table}_id_seq AS BIGINT")


def _install_routines(conn: Migrating) -> None:
    """PostgreSQL gets its routines as this rewinddb defines them (``_pg_routines``;
    schema 3: the write routines, 4: the read routine, 5: write routines that read in one
    statement what they need); SQLite has none."""
    conn.install_routines()


def _has_column(conn: Migrating, table: str, column: str) -> bool:
    if conn.dialect == "sqlite":
        sql = "SELECT 1 FROM pragma_table_info(?) WHERE name = ?"
    else:
        sql = (
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = ? AND column_name = ?"
        )
    return conn.fetchone(sql, (table, column)) is not None


def _to_schema_6(conn: Migrating) -> None:
    """Each commit gets its hash (``_commit_hash``): the column (schema 8 computes the
    hashes, as it defines them)."""
    if not _has_column(conn, "rewind_commits", "hash"):
        conn.execute("ALTER TABLE rewind_commits ADD COLUMN hash VARCHAR")


def _to_schema_7(conn: Migrating) -> None:
    """A stored value may hold shared objects (``_arrays``: an object of many members
    stored as its pairs, ``{}`` in the skeleton). Older values read as they are: nothing
    to change; the version keeps an older rewinddb from misreading newer values.
    PostgreSQL's routines are installed as this rewinddb defines them (their clock and
    hash now come from one text with the Python path's)."""
    conn.install_routines()


def _to_schema_8(conn: Migrating) -> None:
    """Each branch gets a hash chain of its own, over digests of its rows, so erasure and
    retention can remove rows (``_commit_hash``): the horizons table, every commit's hash
    computed again, and PostgreSQL's routines that chain as the Python path does."""
    conn.create_missing()
    _commit_hash.reseal(conn)
    conn.install_routines()


def _to_schema_9(conn: Migrating) -> None:
    """On SQLite a commit's version becomes the table's rowid (INTEGER PRIMARY KEY), so a
    commit writes one b-tree instead of the table and its key's index: the table is
    rebuilt. PostgreSQL keeps its table as it is."""
    if conn.dialect != "sqlite":
        return
    column = conn.fetchone(
        "SELECT type FROM pragma_table_info('rewind_commits') WHERE name = 'version'"
    )
    if column is not None and str(column[0]).upper() == "INTEGER":
        return
    conn.execute("ALTER TABLE rewind_commits RENAME TO rewind_commits_8")
    conn.execute("DROP INDEX IF EXISTS ix_rewind_commits_merges")  # its name is taken again
    conn.create_missing()
    columns = "version, branch_id, ts, trigger, message, merge_branch_id, merge_version, hash"
    conn.execute(
        f"INSERT INTO rewind_commits ({columns}) SELECT {columns} FROM rewind_commits_8 "
        "ORDER BY version"
    )
    conn.execute("DROP TABLE rewind_commits_8")


def _to_schema_10(conn: Migrating) -> None:
    """On SQLite the events table becomes a rowid table with an index of its key, so an
    event's payload of up to about 4 KB stays in its page (a WITHOUT ROWID record over
    about 1 KB takes an overflow page of its own): the table is rebuilt, its rows in
    their order. PostgreSQL keeps its table as it is."""
    if conn.dialect != "sqlite":
        return
    row = conn.fetchone(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'rewind_events'"
    )
    if row is None or "WITHOUT ROWID" not in str(row[0]).upper():
        return
    required = ("branch_id", "sequence", "version", "event_type", "payload", "ts", "hash")
    null = conn.fetchone(
        "SELECT 1 FROM rewind_events WHERE "
        + " OR ".join(f"{column} IS NULL" for column in required)
        + " LIMIT 1"
    )
    if null is not None:  # (another program dropped a NOT NULL: the new table refuses it)
        raise CorruptDatabaseError(
            f"{conn.location} is damaged: rewind_events holds a NULL where the schema has "
            "none; restore the file from a copy, or export what still reads into a new "
            "database",
            code="corrupt.events",
            table="rewind_events",
        )
    conn.execute("ALTER TABLE rewind_events RENAME TO rewind_events_9")
    for index in ("ix_rewind_events_version", "ix_rewind_events_origin"):
        conn.execute(f"DROP INDEX IF EXISTS {index}")  # their names are taken again
    conn.create_missing()
    columns = (
        "branch_id, sequence, version, event_type, payload, ts, hash, origin_branch_id, "
        "origin_sequence"
    )
    conn.execute(
        f"INSERT INTO rewind_events ({columns}) SELECT {columns} FROM rewind_events_9 "
        "ORDER BY branch_id, sequence"
    )
    conn.execute("DROP TABLE rewind_events_9")


#: schema version N -> the migration from N-1 to N. Schema 1 is the first released one.
MIGRATIONS: dict[int, Migration] = {
    2: _to_schema_2,
    3: _install_routines,
    4: _install_routines,
    5: _install_routines,
    6: _to_schema_6,
    7: _to_schema_7,
    8: _to_schema_8,
    9: _to_schema_9,
    10: _to_schema_10,
}


#: Migrations that change nothing readers use: a database opened read-only may be behind
#: by these and is read as it is. On SQLite schemas 2 to 5 change nothing at all; schema 5
#: only made PostgreSQL's routines cheaper (the previous read routine reads the same);
#: schema 6's hashes are read only by ``verify()``, which asks for the migration; schema 7
#: only lets newer values be written; schema 8's hashes are read only by ``verify()``, and
#: a database without its horizons table has had no history pruned (``Engine.horizon``);
#: schemas 9 and 10 only change how SQLite stores the commits' key and the events
#: (PostgreSQL: nothing).
_WRITERS_ONLY = {"sqlite": {2, 3, 4, 5, 6, 7, 8, 9, 10}, "postgresql": {5, 6, 7, 8, 9, 10}}


def stored_version(conn: Migrating) -> int:
    row = conn.fetchone("SELECT value FROM rewind_meta WHERE key = 'schema_version'")
    if row is None:
        raise NotADatabaseError(f"{conn.location} has no schema version: not a rewinddb database")
    value = row[0]
    if not isinstance(value, str) or not value.isdigit() or int(value) < 1:
        raise CorruptDatabaseError(
            f"{conn.location} is damaged: its schema version in rewind_meta is {value!r}, "
            "not a number rewinddb ever wrote",
            code="corrupt.meta",
        )
    return int(value)


def check_version(conn: Migrating) -> int:
    """The stored schema version; refuses one newer than this rewinddb knows."""
    version = stored_version(conn)
    if version > _schema.SCHEMA_VERSION:
        raise NotADatabaseError(
            f"{conn.location} was written by a newer rewinddb (schema {version}; this one "
            f"knows {_schema.SCHEMA_VERSION}); upgrade rewinddb to open it"
        )
    return version


def migrate(conn: Migrating) -> tuple[int, int]:
    """Bring the database up to the current schema; returns (from, to) versions."""
    before = check_version(conn)
    if before == _schema.SCHEMA_VERSION:
        return before, before
    if conn.readonly:
        pending = set(range(before + 1, _schema.SCHEMA_VERSION + 1))
        if pending <= _WRITERS_ONLY.get(conn.dialect, set()):
            return before, before  # read as it is; the next writable open migrates it
        raise RewindError(
            f"{conn.location} has schema {before}; this rewinddb needs "
            f"{_schema.SCHEMA_VERSION}: run `rewinddb migrate {conn.location}` (or open it "
            "writable once)",
            code="schema.outdated",
        )
    with conn.write():  # one migrator at a time; the others find it done
        current = check_version(conn)
        for target in range(current + 1, _schema.SCHEMA_VERSION + 1):
            step = MIGRATIONS.get(target)
            if step is None:  # pragma: no cover - a release that forgot its migration
                raise RewindError(
                    f"no migration from schema {target - 1} to {target}", code="schema.outdated"
                )
            step(conn)
            conn.execute(
                "UPDATE rewind_meta SET value = ? WHERE key = 'schema_version'", (str(target),)
            )
    return before, _schema.SCHEMA_VERSION
