"""Where retention cut a branch's history (``rewind_horizons``), as the readers need it.

A branch's horizon says: reads ``as_of`` a version before ``kept_from`` are unavailable
(``history_unavailable``, naming the policy that removed them); its hash chain of commits
starts at ``previous_hash`` and its own event log at ``first_event`` (whose predecessor's
hash is ``event_hash``); the entries it kept below ``kept_from`` (the state as of it) are
covered by ``rows_hash``. Retention writes horizons (``retention``); the engine, the event
log and ``verify`` read them through :func:`horizon`, remembered in the ``horizon`` slot.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from . import _commit_hash
from ._memory import UNKNOWN, Memory

if TYPE_CHECKING:
    from ._statements import Statements

_COLUMNS = "kept_from, policy, pruned_at, previous_hash, rows_hash, first_event, event_hash"


class Horizon(NamedTuple):
    """One branch's horizon (see the module's docstring)."""

    kept_from: int
    policy: str
    pruned_at: int
    previous_hash: str | None
    rows_hash: str | None
    first_event: int | None
    event_hash: str | None


def horizon(memory: Memory, conn: Statements, branch_id: int) -> Horizon | None:
    """The horizon of branch ``branch_id``, or None when its history is whole (kept in
    ``memory``'s ``horizon`` slot)."""
    known = memory.get("horizon", branch_id)
    if known is not UNKNOWN:
        return known  # type: ignore[no-any-return]
    row = conn.fetchone(f"SELECT {_COLUMNS} FROM rewind_horizons WHERE branch_id = ?", (branch_id,))
    found = None if row is None else Horizon(*row)
    memory.put("horizon", branch_id, found)
    return found


def all_horizons(conn: Statements) -> dict[int, Horizon]:
    """Every branch's horizon, by branch id."""
    return {
        row[0]: Horizon(*row[1:])
        for row in conn.fetchall(f"SELECT branch_id, {_COLUMNS} FROM rewind_horizons")
    }


def rows_hash(rows: Iterable[tuple[Any, ...]]) -> str:
    """What a horizon keeps of the entries below it: sha256 over each row's version and
    digest (rows are ``version, space, key, kind, body, refs, trigger``), in order."""
    parts = sorted(
        str(row[0]).encode() + b":" + _commit_hash.stored_entry_digest(*row[1:]) for row in rows
    )
    return hashlib.sha256(b"\n".join(parts)).hexdigest()


#: The kept entries of a branch below its horizon (``rows_hash``'s rows).
BASE_ROWS = (
    "SELECT version, space, key, kind, body, refs, trigger FROM rewind_entries "
    "WHERE branch_id = ? AND version < ?"
)


def log_start(found: Horizon | None, previous: str, expected: int) -> tuple[str, int]:
    """Where a walk of a branch's own events starts: after its pruned events, if any."""
    if found is None or found.first_event is None:
        return previous, expected
    return found.event_hash or "", found.first_event


def bump_generation(conn: Any) -> None:
    """Count one more rewrite of history (an erasure, a purge, a prune), so that
    ``db.stamp`` changes although the clock does not."""
    row = conn.fetchone("SELECT value FROM rewind_meta WHERE key = 'generation'")
    current = int(row[0]) if row is not None and str(row[0]).isdigit() else 0
    conn.execute("DELETE FROM rewind_meta WHERE key = 'generation'")
    conn.execute(
        "INSERT INTO rewind_meta (key, value) VALUES ('generation', ?)", (str(current + 1),)
    )


def hold_clock(conn: Statements, clock: int) -> None:
    """Keep the clock at ``clock`` although the newest commits may be removed (a purge):
    versions never come round again (``_clock``'s floor)."""
    row = conn.fetchone("SELECT value FROM rewind_meta WHERE key = 'clock_floor'")
    floor = int(row[0]) if row is not None and str(row[0]).isdigit() else 0
    if clock > floor:
        conn.execute("DELETE FROM rewind_meta WHERE key = 'clock_floor'")
        conn.execute(
            "INSERT INTO rewind_meta (key, value) VALUES ('clock_floor', ?)", (str(clock),)
        )
