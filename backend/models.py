"""The plain records the public API returns (immutable dataclasses)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from ._values import jsonable


def from_micros(us: int) -> datetime:
    """A UTC datetime from microseconds since the epoch (how timestamps are stored)."""
    return datetime.fromtimestamp(us / 1_000_000, tz=timezone.utc)


def to_micros(when: datetime) -> int:
    return round(when.timestamp() * 1_000_000)


@dataclass(frozen=True)
class Branch:
    """A branch: where it came from and how far it has got."""

    name: str
    parent: str | None
    forked_at: int
    created_at: datetime
    head: int
    """The version of the branch's last commit (``forked_at`` if it has none)."""
    commits: int
    last_write: datetime | None
    events: int = 0
    """How many events its log holds (inherited ones included)."""
    kept_from: int | None = None
    """The oldest version reads of it may ask for, where retention (``db.retain``,
    ``db.gc``) removed its older history; None while its whole history is kept."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["created_at"] = self.created_at.isoformat()
        data["last_write"] = self.last_write.isoformat() if self.last_write else None
        return data


@dataclass(frozen=True)
class Commit:
    """One version on the DB-wide clock."""

    version: int
    branch: str
    timestamp: datetime
    trigger: str | None = None
    message: str | None = None
    merged_from: str | None = None
    merged_version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["timestamp"] = self.timestamp.isoformat()
        return data


@dataclass(frozen=True)
class Event:
    """An entry of a branch's append-only log."""

    sequence: int
    event_type: str
    payload: Any
    version: int
    timestamp: datetime
    hash: str
    branch: str
    origin: tuple[str, int] | None = None
    """For an event a merge carried here: (branch, sequence) of the event it copies."""
    erased_at: int | None = None
    """The version at which its payload was erased (``db.erase_events``): ``payload`` is
    then None, and the event keeps its place and its hash in the chain."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["timestamp"] = self.timestamp.isoformat()
        data["origin"] = list(self.origin) if self.origin else None
        return data


@dataclass(frozen=True)
class EventItem:
    """An event together with the version it was appended at: read state ``as_of`` it."""

    event: Event

    @property
    def version(self) -> int:
        return self.event.version


@dataclass(frozen=True)
class HistoryEntry:
    """One written version of a key or document (``deleted`` for a deletion, ``erased_at``
    for a value erased since)."""

    key: str
    version: int
    timestamp: datetime
    value: Any
    trigger: str | None
    deleted: bool
    branch: str
    erased_at: int | None = None
    """The version at which this value was erased (``db.erase_key``): it reads as absent."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["timestamp"] = self.timestamp.isoformat()
        data["value"] = jsonable(self.value)
        return data


@dataclass(frozen=True)
class Point:
    """A point in history: a branch at a version."""

    branch: str
    version: int

    def __str__(self) -> str:
        return f"{self.branch}@{self.version}"


ChangeKind = Literal["added", "removed", "changed"]


@dataclass(frozen=True)
class Change:
    """One difference (``rewinddb.diff``): ``old`` is None when added, ``new`` is None
    when removed."""

    primitive: str
    key: str
    path: str
    kind: ChangeKind
    old: Any = None
    new: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "primitive": self.primitive,
            "key": self.key,
            "path": self.path,
            "kind": self.kind,
            "old": jsonable(self.old),
            "new": jsonable(self.new),
        }


def change_counts(changes: Iterable[Change]) -> dict[str, int]:
    """How many of ``changes`` are of each kind: ``{"added": .., "removed": .., "changed": ..}``."""
    counts = {"added": 0, "removed": 0, "changed": 0}
    for change in changes:
        counts[change.kind] += 1
    return counts


@dataclass(frozen=True)
class ErasureReceipt:
    """What an erasure removed (counts of rows, ``entries`` also those whose value was
    erased in place; ``version`` is the clock when it ran)."""

    version: int
    branches: int = 0
    entries: int = 0
    events: int = 0
    commits: int = 0
    list_items: int = 0

    def __str__(self) -> str:
        parts = counted(
            [
                (self.branches, "branch", "branches"),
                (self.entries, "entry", "entries"),
                (self.events, "event", "events"),
                (self.commits, "commit", "commits"),
                (self.list_items, "list item", "list items"),
            ],
            skip_zero=True,
        )
        return "removed " + (", ".join(parts) if parts else "nothing")


def counted(counts: list[tuple[int, str, str]], *, skip_zero: bool = False) -> list[str]:
    """``1 entry``, ``3 entries``: each (count, singular, plural) as words."""
    return [
        f"{count:,} {one if count == 1 else many}"
        for count, one, many in counts
        if count or not skip_zero
    ]
