"""The version clock's rule, written once for every statement that reads or advances it.

The clock stands at the newest commit's version, or at the clock floor of a database
imported from part of another one (``rewind_meta``'s ``clock_floor``), whichever is
higher (0 in a new database). The next commit takes the version after it, at the
caller's time or at the newest commit's time if that is later: timestamps never go
backwards on the clock, even when the machine's clock does.

``NEXT_COMMIT`` is the Python path's statement (both backends); PostgreSQL's routines
(``_pg_routines``) join ``CLOCK`` and use ``next_version`` and ``next_ts`` in theirs, so
both paths allocate by this one text (``tests/backend/test_pg_routines.py`` ties them).
"""

from __future__ import annotations

#: The clock as it stands, a derived table ``clock (v, t, h)``: the newest version (or
#: the clock floor if higher; 0 in a new database), the newest commit's timestamp (0 in a
#: new database) and its hash (NULL there), found by one seek of the newest commit and
#: one of the floor. Portable SQL: SQLite runs it too.
CLOCK = (
    "(SELECT CASE WHEN coalesce(CAST(clock_floor.value AS BIGINT), 0) "
    "> coalesce(newest.version, 0) THEN coalesce(CAST(clock_floor.value AS BIGINT), 0) "
    "ELSE coalesce(newest.version, 0) END AS v, "
    "CASE WHEN newest.ts > 0 THEN newest.ts ELSE 0 END AS t, newest.hash AS h "
    "FROM (SELECT 1 AS one) start "
    "LEFT JOIN (SELECT version, ts, hash FROM rewind_commits ORDER BY version DESC LIMIT 1) "
    "newest ON 1 = 1 "
    "LEFT JOIN rewind_meta clock_floor ON clock_floor.key = 'clock_floor') clock"
)
#: The hash of the newest commit (NULL in a new database), which the next one chains on,
#: in a statement that joins ``CLOCK``.
PREVIOUS_HASH = "clock.h"


def next_version() -> str:
    """The next commit's version, in a statement that joins ``CLOCK``."""
    return "clock.v + 1"


def next_ts(now: str) -> str:
    """The next commit's timestamp, given the caller's time ``now`` (an expression, or a
    ``?`` placeholder: it then takes the time twice)."""
    return f"CASE WHEN clock.t > {now} THEN clock.t ELSE {now} END"


#: Allocate and record the next version in one statement (one round trip under the write
#: lock). Parameters: branch id, now, now, trigger, message, merge branch id, merge
#: version. Until the commit is sealed (``Engine.seal``) its ``hash`` holds the hash of
#: the commit before it, which the seal chains on.
NEXT_COMMIT = (
    "INSERT INTO rewind_commits (version, branch_id, ts, trigger, message, "
    "merge_branch_id, merge_version, hash) "
    f"SELECT {next_version()}, ?, {next_ts('?')}, ?, ?, ?, ?, {PREVIOUS_HASH} "
    f"FROM {CLOCK} RETURNING version, ts, hash"
)
