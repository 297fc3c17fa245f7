"""The commits a branch's state is made of, and what each one wrote.

A branch sees its own commits and its ancestors' up to each fork point; these are the
steps a front end lists for a branch. They are found through the indexes the rows
already have (every commit writes an entry or an event, or is a merge), so a page costs
what it shows, not a scan of every commit in the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._engine import SPACES, BranchRecord, Engine, check_count
from .errors import CorruptDatabaseError
from .events import EVENT_COLUMNS, event_from_row
from .models import Commit, Event, from_micros

#: The versions ``branch_id`` wrote in (low, high].
_OWN_VERSIONS = (
    "SELECT version FROM rewind_entries WHERE branch_id = ? AND version > ? AND version <= ? "
    "UNION SELECT version FROM rewind_events WHERE branch_id = ? AND version > ? "
    "AND version <= ? UNION SELECT version FROM rewind_commits WHERE branch_id = ? "
    "AND merge_branch_id IS NOT NULL AND version > ? AND version <= ?"
)
#: The newest ``n`` of them: each source walks its (branch_id, version) index backwards
#: and stops after ``n`` distinct versions, so a page costs what it shows.
_NEWEST_VERSIONS = (
    "SELECT version FROM ("
    "SELECT * FROM (SELECT DISTINCT version FROM rewind_entries WHERE branch_id = ? "
    "AND version > ? AND version <= ? ORDER BY version DESC LIMIT ?) a "
    "UNION SELECT * FROM (SELECT version FROM rewind_events WHERE branch_id = ? "
    "AND version > ? AND version <= ? GROUP BY version ORDER BY version DESC LIMIT ?) b "
    "UNION SELECT * FROM (SELECT version FROM rewind_commits WHERE branch_id = ? "
    "AND merge_branch_id IS NOT NULL AND version > ? AND version <= ? "
    "ORDER BY version DESC LIMIT ?) c"
    ") own ORDER BY version DESC LIMIT ?"
)
#: The oldest ``n`` of them, each source walking its index forwards (a page after a cursor).
_OLDEST_VERSIONS = _NEWEST_VERSIONS.replace("DESC", "ASC")


@dataclass(frozen=True)
class Written:
    """What one commit wrote on its branch: the ``(space, key)`` pairs (sorted) and the
    events it appended (in order)."""

    version: int
    keys: tuple[tuple[str, str], ...]
    events: tuple[Event, ...]


def _steps(engine: Engine, record: BranchRecord, before: int | None) -> list[tuple[int, int, int]]:
    """``(branch id, low, high)``: the version ranges of each lineage step this branch
    sees, below ``before``; a pruned branch's from its horizon on (the entries retention
    kept below the cut are state, not commits: they have no commit row)."""
    top = engine.clock() if before is None else min(before - 1, engine.clock())
    steps = []
    for branch_id, cap in engine.row_lineage(record, top):
        low = engine.branch_by_id(branch_id).forked_at
        cut = engine.horizon(branch_id)
        if cut is not None:
            low = max(low, cut.kept_from - 1)
        steps.append((branch_id, low, cap))
    return steps


def lineage_commits(
    engine: Engine,
    record: BranchRecord,
    *,
    before: int | None = None,
    after: int | None = None,
    limit: int | None = None,
) -> list[Commit]:
    """The commits ``record`` sees, newest first, older than version ``before`` and newer
    than ``after``; ``limit`` keeps the newest that many, or the oldest with ``after``
    (a page read forwards from a cursor)."""
    if before is not None:
        check_count(before, "before")
    if after is not None:
        check_count(after, "after")
    if limit is not None:
        check_count(limit, "limit")
    steps = _steps(engine, record, before)
    if after is not None:
        steps = [(branch_id, max(low, after), high) for branch_id, low, high in steps]
        steps = [step for step in reversed(steps) if step[1] < step[2]]  # oldest first
    versions: list[int] = []
    for branch_id, low, high in steps:
        if limit is None:
            sql = f"SELECT version FROM ({_OWN_VERSIONS}) own ORDER BY version DESC"
            params: list[Any] = [branch_id, low, high] * 3
        else:
            wanted = limit - len(versions)
            paged = _OLDEST_VERSIONS if after is not None else _NEWEST_VERSIONS
            sql, params = paged, [branch_id, low, high, wanted] * 3 + [wanted]
        versions += [row[0] for row in engine.conn.fetchall(sql, params)]
        if limit is not None and len(versions) >= limit:
            break
    return _commit_rows(engine, versions)


def lineage_commit_count(engine: Engine, record: BranchRecord, *, before: int | None = None) -> int:
    """How many commits ``record`` sees older than version ``before``."""
    if before is not None:
        check_count(before, "before")
    total = 0
    for branch_id, low, high in _steps(engine, record, before):
        row = engine.conn.fetchone(
            f"SELECT count(*) FROM ({_OWN_VERSIONS}) own", [branch_id, low, high] * 3
        )
        total += int(row[0]) if row else 0
    return total


def _commit_rows(engine: Engine, versions: list[int]) -> list[Commit]:
    if not versions:
        return []
    marks = ", ".join("?" * len(versions))
    rows = engine.conn.fetchall(
        "SELECT version, branch_id, ts, trigger, message, merge_branch_id, merge_version "
        f"FROM rewind_commits WHERE version IN ({marks}) ORDER BY version DESC",
        versions,
    )
    return [commit_from_row(engine, row) for row in rows]


def commit_from_row(engine: Engine, row: tuple[Any, ...]) -> Commit:
    version, branch_id, ts, trigger, message, merge_id, merge_version = row
    return Commit(
        version=version,
        branch=engine.branch_by_id(branch_id).name,
        timestamp=from_micros(ts),
        trigger=trigger,
        message=message,
        merged_from=engine.branch_by_id(merge_id).name if merge_id else None,
        merged_version=merge_version,
    )


def written_at(engine: Engine, record: BranchRecord, version: int) -> Written:
    """What ``record``'s history holds at ``version``: what it wrote there, or what the
    ancestor it inherited that version from did (read through the lineage, so a deleted
    ancestor's rows still say what they were); nothing where another branch wrote."""
    check_count(version, "version")
    owner = next(
        (
            branch_id
            for branch_id, _ in engine.row_lineage(record, version)
            if engine.branch_by_id(branch_id).forked_at < version
        ),
        None,
    )
    if owner is None:
        return Written(version, (), ())
    record = engine.branch_by_id(owner)
    keys = engine.conn.fetchall(
        "SELECT space, key FROM rewind_entries WHERE branch_id = ? AND version = ? "
        "ORDER BY space, key",
        (record.id, version),
    )
    events = engine.conn.fetchall(
        # A range, not ``version = ?``: SQLite (3.40) would walk the branch's primary key
        # for the equality, and seeks the (branch, version, sequence) index for this.
        f"SELECT {EVENT_COLUMNS} FROM rewind_events WHERE branch_id = ? AND version > ? "
        "AND version <= ? ORDER BY version, sequence",
        (record.id, version - 1, version),
    )
    for space, key in keys:
        if space not in SPACES or type(key) is not str:
            raise CorruptDatabaseError(
                f"an entry of version {version} in rewind_entries names space {space!r} "
                f"and key {key!r}: the row was edited by another program",
                code="corrupt.entries",
            )
    return Written(
        version,
        tuple((space, key) for space, key in keys),
        tuple(event_from_row(engine, row) for row in events),
    )
