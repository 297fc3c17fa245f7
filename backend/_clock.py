"""The version clock's rule, written once for every statement that reads or advances it.

The clock stands at the newest commit's version, or at the clock floor of a database
imported from part of another one (``rewind_meta``'s ``clock_floor``), whichever is
higher (0 in a new database). The next commit takes the version after it, at the
caller's time or at the newest commit's time if that is later: timestamps never go
backwards on the clock, even when the machine's clock does.

``NEXT_COMMIT`` (the Python path's statement on both backends) and ``CLOCK`` (the clock's
reading) are made of it; PostgreSQL's routines (``_pg_routines``) join ``SOURCES`` and use
``NOW``, ``next_version``, ``next_ts`` and ``previous_hash``, so both paths allocate by
this one text (``tests/backend/test_pg_routines.py`` ties them). ``next_commit`` is the
rule in Python, for an allocation from what the connection remembers (``INSERT_COMMIT``;
``tests/backend/test_memory.py`` ties it to ``NEXT_COMMIT``).
"""

from __future__ import annotations


def _sources(columns: str) -> str:
    """The joins that find the newest commit (its ``columns``) and the clock floor."""
    return (
        f"LEFT JOIN (SELECT {columns} FROM rewind_commits ORDER BY version DESC LIMIT 1) "
        "newest ON 1 = 1 LEFT JOIN rewind_meta clock_floor ON clock_floor.key = 'clock_floor'"
    )


#: The clock's sources, joined to the table a statement reads (or to ``START``): the
#: newest commit ``newest`` and the clock floor ``clock_floor``, one seek each (either may
#: be missing). Portable SQL: SQLite runs it too.
SOURCES = _sources("version, ts")
#: One row to join ``SOURCES`` to, in a statement that reads no other table.
START = "(SELECT 1 AS one) start"
#: Where the clock stands, in a statement that joins ``SOURCES``: the newest version, or
#: the clock floor if that is higher (0 in a new database).
NOW = (
    "CASE WHEN coalesce(CAST(clock_floor.value AS BIGINT), 0) > coalesce(newest.version, 0) "
    "THEN coalesce(CAST(clock_floor.value AS BIGINT), 0) ELSE coalesce(newest.version, 0) END"
)


def previous_hash(branch_id: str) -> str:
    """The hash a new commit of branch ``branch_id`` (an expression, used three times)
    chains on: the branch's newest commit's (NULL for its first; ``_commit_hash``).

    Every commit writes an entry or an event of its branch, or is a merge, so the newest
    is found through the indexes those rows have already (three seeks), rather than an
    index of commits by branch that every commit would have to write."""
    return (
        "(SELECT hash FROM rewind_commits WHERE version = (SELECT max(newest) FROM ("
        f"SELECT max(version) AS newest FROM rewind_entries WHERE branch_id = {branch_id} "
        f"UNION ALL SELECT max(version) FROM rewind_events WHERE branch_id = {branch_id} "
        f"UNION ALL SELECT max(version) FROM rewind_commits WHERE branch_id = {branch_id} "
        "AND merge_branch_id IS NOT NULL) own))"
    )


#: The clock as a derived table ``clock (v)``, for a statement that only reads it (its
#: sources without the hash, which a database read before its migration to schema 6
#: lacks).
READ_SOURCES = _sources("version, ts")
CLOCK = f"(SELECT {NOW} AS v FROM {START} {READ_SOURCES}) clock"


def next_version() -> str:
    """The next commit's version, in a statement that joins ``SOURCES``."""
    return f"{NOW} + 1"


def next_ts(now: str) -> str:
    """The next commit's timestamp, in a statement that joins ``SOURCES``, given the
    caller's time ``now`` (an expression, or a ``?`` placeholder: it then takes the time
    twice): the newest commit's, if that is later."""
    return f"CASE WHEN newest.ts > {now} THEN newest.ts ELSE {now} END"


#: Allocate and record the next version in one statement (one round trip under the write
#: lock). Parameters: branch id, now, now, trigger, message, merge branch id, merge
#: version, and the branch id three times more. Until the commit is sealed
#: (``Engine.seal``) its ``hash`` holds the hash of its branch's commit before it, which
#: the seal chains on.
NEXT_COMMIT = (
    "INSERT INTO rewind_commits (version, branch_id, ts, trigger, message, "
    "merge_branch_id, merge_version, hash) "
    f"SELECT {next_version()}, ?, {next_ts('?')}, ?, ?, ?, ?, {previous_hash('?')} "
    f"FROM {START} {SOURCES} RETURNING version, ts, hash"
)


def next_commit(clock: int, newest_ts: int, now: int) -> tuple[int, int]:
    """The next commit's (version, timestamp), as ``NEXT_COMMIT`` allocates them, from
    the clock (floor included), the newest commit's time and the caller's time."""
    return clock + 1, newest_ts if newest_ts > now else now


#: Record a commit whose version, time and previous hash are known already (``next_commit``
#: and the connection's memory); the same row ``NEXT_COMMIT`` makes. Parameters: version,
#: branch id, ts, trigger, message, merge branch id, merge version, previous hash.
INSERT_COMMIT = (
    "INSERT INTO rewind_commits (version, branch_id, ts, trigger, message, "
    "merge_branch_id, merge_version, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
