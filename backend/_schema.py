"""The tables, defined once with SQLModel; the same schema serves SQLite and PostgreSQL.

Nothing here is copied when a branch forks: a branch is one row, and every read resolves
through the branch's lineage (its own rows, then its parent's up to the fork point, ...).

Tables whose rows are found by their key are declared WITHOUT ROWID on SQLite, so the
primary key is the table (one b-tree fewer to write per commit); other backends ignore it.
The events table is the exception: its payloads (a LangGraph pending write, a tool's
result) are often 1-4 KB, and a WITHOUT ROWID record over about 1 KB spills onto an
overflow page of its own, mostly empty; a rowid table keeps a record of up to about 4 KB
in its page, at the price of its key's index.

- ``commits``: one row per version on the DB-wide clock. A merge commit names its second
  parent in ``merge_branch_id``/``merge_version``.
- ``entries``: one row per written value of a kv key or JSON document (a tombstone for a
  deletion). Large JSON arrays are not stored inline: they live in ``seq_items`` and the
  entry refers to (sequence, length), so a list that only grew costs only what was appended.
- ``events``: the append-only logs, hash chained; an event a merge carried to another
  branch names the event it copies (``origin_*``), so it is never carried twice.
- ``horizons``: where retention cut a branch's history (``retention``): reads before
  ``kept_from`` are unavailable, and what the hash chains need to start there.

Erasure (``erasure``) keeps a row's place and its digest, never its value: an erased
entry has kind 3 and the sha256 of its part (``_commit_hash.entry_part``) as its body;
an erased event keeps its chained hash and an erased-payload marker.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, LargeBinary, text
from sqlmodel import Field, SQLModel

SCHEMA_VERSION = 10
"""1: the first schema. 2: versions, sequences and ids are 64-bit on PostgreSQL too
(SQLite's INTEGER always was). 3: PostgreSQL's write routines, 4: its read routine,
5: cheaper routines (``_pg_routines``), 6: each commit's hash (``_commit_hash``), 7:
shared objects, 8: each branch's own hash chain over digests of its rows, so rows can
be erased and history pruned (``rewind_horizons``), 9: on SQLite a commit's version is
the commits table's rowid, 10: on SQLite the events table has a rowid (payloads of a
few KB stay in their page); see ``_migrations``."""


_WITHOUT_ROWID = {"sqlite_with_rowid": False}


def _int64(**kwargs: object) -> Column:
    """A 64-bit integer column (versions, sequences, ids: BIGINT on PostgreSQL)."""
    return Column(BigInteger, **kwargs)  # type: ignore[arg-type]


def _int64_id() -> Column:
    """An auto-numbered 64-bit id: BIGSERIAL on PostgreSQL; on SQLite INTEGER PRIMARY
    KEY, so it stays the rowid."""
    return Column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)


class Meta(SQLModel, table=True):
    """Format marker and schema version of the database."""

    __tablename__ = "rewind_meta"
    __table_args__ = (_WITHOUT_ROWID,)

    key: str = Field(primary_key=True)
    value: str


class BranchRow(SQLModel, table=True):
    """A branch: a name, its parent and the version it was forked at."""

    __tablename__ = "rewind_branches"
    __table_args__ = (
        Index(
            "ux_rewind_branches_live_name",
            "name",
            unique=True,
            sqlite_where=text("deleted_at IS NULL"),
            postgresql_where=text("deleted_at IS NULL"),
        ),
    )

    id: int | None = Field(default=None, sa_column=_int64_id())
    name: str
    parent_id: int | None = Field(default=None, sa_column=_int64(nullable=True))
    forked_at: int = Field(sa_column=_int64(nullable=False))
    created_at: int = Field(sa_column=Column(BigInteger, nullable=False))
    deleted_at: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))


class CommitRow(SQLModel, table=True):
    """One version on the DB-wide clock: who wrote it, when and why."""

    __tablename__ = "rewind_commits"
    __table_args__ = (
        Index(
            "ix_rewind_commits_merges",
            "branch_id",
            "version",
            sqlite_where=text("merge_branch_id IS NOT NULL"),
            postgresql_where=text("merge_branch_id IS NOT NULL"),
        ),
    )

    #: On SQLite INTEGER PRIMARY KEY, so the version is the rowid: a commit writes one
    #: b-tree, not the table and an index of its key (schema 9).
    version: int = Field(
        sa_column=Column(
            BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=False
        )
    )
    branch_id: int = Field(sa_column=_int64(nullable=False))
    ts: int = Field(sa_column=Column(BigInteger, nullable=False))
    trigger: str | None = None
    message: str | None = None
    merge_branch_id: int | None = Field(default=None, sa_column=_int64(nullable=True))
    merge_version: int | None = Field(default=None, sa_column=_int64(nullable=True))
    #: sha256 over the hash of the branch's commit before it and digests of what this one
    #: wrote (``_commit_hash``).
    hash: str | None = None


class EntryRow(SQLModel, table=True):
    """A value of a key (kv) or a document (json) as written at one version."""

    __tablename__ = "rewind_entries"
    __table_args__ = (Index("ix_rewind_entries_version", "branch_id", "version"), _WITHOUT_ROWID)

    branch_id: int = Field(sa_column=_int64(primary_key=True, autoincrement=False))
    space: str = Field(primary_key=True)
    key: str = Field(primary_key=True)
    version: int = Field(sa_column=_int64(primary_key=True, autoincrement=False))
    kind: int  # 0 JSON, 1 bytes, 2 deleted, 3 erased (body: the digest of its part)
    body: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    refs: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    trigger: str | None = None


class SeqRow(SQLModel, table=True):
    """A shared array: items of ``base_id`` below ``base_len``, then its own items."""

    __tablename__ = "rewind_seqs"

    id: int | None = Field(default=None, sa_column=_int64_id())
    base_id: int | None = Field(default=None, sa_column=_int64(nullable=True))
    base_len: int = Field(default=0, sa_column=_int64(nullable=False))


class SeqItemRow(SQLModel, table=True):
    """One array item, with the hash of the array's prefix up to and including it."""

    __tablename__ = "rewind_seq_items"
    __table_args__ = (_WITHOUT_ROWID,)

    seq_id: int = Field(sa_column=_int64(primary_key=True, autoincrement=False))
    idx: int = Field(sa_column=_int64(primary_key=True, autoincrement=False))
    item: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    prefix_hash: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class EventRow(SQLModel, table=True):
    """One event of a branch's log; ``hash`` chains it to the previous event."""

    __tablename__ = "rewind_events"
    __table_args__ = (
        Index("ix_rewind_events_version", "branch_id", "version", "sequence"),
        Index(
            "ix_rewind_events_origin",
            "origin_branch_id",
            "origin_sequence",
            sqlite_where=text("origin_branch_id IS NOT NULL"),
            postgresql_where=text("origin_branch_id IS NOT NULL"),
        ),
    )

    branch_id: int = Field(sa_column=_int64(primary_key=True, autoincrement=False))
    sequence: int = Field(sa_column=_int64(primary_key=True, autoincrement=False))
    version: int = Field(sa_column=_int64(nullable=False))
    event_type: str
    payload: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    ts: int = Field(sa_column=Column(BigInteger, nullable=False))
    hash: str
    #: For an event a merge carried here: the event it is a copy of (its first home).
    origin_branch_id: int | None = Field(default=None, sa_column=_int64(nullable=True))
    origin_sequence: int | None = Field(default=None, sa_column=_int64(nullable=True))


class HorizonRow(SQLModel, table=True):
    """Where retention cut a branch's history: what it removed and how the hash chains
    start after it (``retention``)."""

    __tablename__ = "rewind_horizons"
    __table_args__ = (_WITHOUT_ROWID,)

    branch_id: int = Field(sa_column=_int64(primary_key=True, autoincrement=False))
    #: The oldest version still readable (``as_of`` before it: ``history_unavailable``).
    kept_from: int = Field(sa_column=_int64(nullable=False))
    #: The retention that cut it there, in words.
    policy: str
    pruned_at: int = Field(sa_column=Column(BigInteger, nullable=False))
    #: The hash of the branch's newest removed commit, which its next kept one chains on.
    previous_hash: str | None = None
    #: sha256 over the kept rows below ``kept_from`` (the state as of it), for ``verify``.
    rows_hash: str | None = None
    #: The branch's first kept event of its own and the hash of the one before it (None
    #: when none of its own events was removed).
    first_event: int | None = Field(default=None, sa_column=_int64(nullable=True))
    event_hash: str | None = None


#: The tables of a rewinddb database, in creation order (never all of SQLModel's global
#: metadata, which also holds any tables the application defines).
TABLES = [
    SQLModel.metadata.tables[name]
    for name in (
        "rewind_meta",
        "rewind_branches",
        "rewind_commits",
        "rewind_entries",
        "rewind_seqs",
        "rewind_seq_items",
        "rewind_events",
        "rewind_horizons",
    )
]
