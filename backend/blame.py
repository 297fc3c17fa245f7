"""``view.blame()``: for every key that exists at a point, the write that set its value.

The web explorer shows it beside each key ("last changed by event #12"). A write made in
the same version as an event (one transaction, or ``state.set`` with a trigger next to an
append) is attributed to that event; a write with no event in its version is attributed
to its commit alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ._engine import NO_VALUE, SPACES, BranchRecord, Engine
from .events import EVENT_COLUMNS, event_from_row
from .models import Event, from_micros


@dataclass(frozen=True)
class LastWrite:
    """The write that gave ``key`` (in ``space``) its value at the point asked about."""

    space: str
    key: str
    version: int
    branch: str
    """The branch the write was made on (an ancestor's, for inherited values)."""
    timestamp: datetime
    trigger: str | None
    event: Event | None
    """The last event appended in the same version, if any."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "space": self.space,
            "key": self.key,
            "version": self.version,
            "branch": self.branch,
            "timestamp": self.timestamp.isoformat(),
            "trigger": self.trigger,
            "event": None if self.event is None else self.event.to_dict(),
        }


def last_writes(
    engine: Engine, record: BranchRecord, version: int, limit: int | None = None
) -> dict[str, dict[str, LastWrite]]:
    """space -> key -> LastWrite for every key that exists at (record, version); with
    ``limit``, for the first ``limit`` keys of each space only."""
    newest: dict[tuple[str, str], tuple[int, int, int, str | None]] = {}
    if limit is not None:
        for space in SPACES:
            keys = list(engine.first_entries(record, version, space, limit))
            for key, row in engine.read_entries(record, version, space, keys).items():
                newest[(space, key)] = (row.kind, row.version, row.branch_id, row.trigger)
    else:
        for branch_id, cap in engine.row_lineage(record, version):
            for space in SPACES:
                for key, kind, entry_version, trigger in engine.newest_rows(
                    branch_id, cap, space, "e.kind, e.version, e.trigger"
                ):
                    newest.setdefault((space, key), (kind, entry_version, branch_id, trigger))
    live = {slot: row for slot, row in newest.items() if row[0] not in NO_VALUE}
    events = _events_at(engine, {(row[2], row[1]) for row in live.values()})
    stamps = _timestamps(engine, {row[1] for row in live.values()})
    found: dict[str, dict[str, LastWrite]] = {space: {} for space in SPACES}
    for (space, key), (_kind, entry_version, branch_id, trigger) in sorted(live.items()):
        found.setdefault(space, {})[key] = LastWrite(
            space=space,
            key=key,
            version=entry_version,
            branch=engine.branch_by_id(branch_id).name,
            timestamp=from_micros(_written_at(engine, stamps, entry_version, branch_id)),
            trigger=trigger,
            event=events.get((branch_id, entry_version)),
        )
    return found


def _events_at(engine: Engine, points: set[tuple[int, int]]) -> dict[tuple[int, int], Event]:
    """The last event appended at each (branch id, version), where there is one."""
    found: dict[tuple[int, int], Event] = {}
    by_branch: dict[int, list[int]] = {}
    for branch_id, version in points:
        by_branch.setdefault(branch_id, []).append(version)
    for branch_id, versions in by_branch.items():
        for start in range(0, len(versions), 500):
            chunk = versions[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for row in engine.conn.fetchall(
                f"SELECT {EVENT_COLUMNS} FROM rewind_events WHERE branch_id = ? "
                f"AND version IN ({marks}) ORDER BY version, sequence",
                (branch_id, *chunk),
            ):
                found[(branch_id, row[4])] = event_from_row(engine, row)
    return found


def _written_at(engine: Engine, stamps: dict[int, int], version: int, branch_id: int) -> int:
    """The time of the commit of ``version``; for an entry retention kept below its
    branch's cut, whose commit went, the cut's (as ``key_history`` tells it)."""
    found = stamps.get(version)
    if found is not None:
        return found
    cut = engine.horizon(branch_id)
    return 0 if cut is None else cut.pruned_at


def _timestamps(engine: Engine, versions: set[int]) -> dict[int, int]:
    ordered = sorted(versions)
    stamps: dict[int, int] = {}
    for start in range(0, len(ordered), 500):
        chunk = ordered[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        stamps.update(
            engine.conn.fetchall(
                f"SELECT version, ts FROM rewind_commits WHERE version IN ({marks})", chunk
            )
        )
    return stamps
