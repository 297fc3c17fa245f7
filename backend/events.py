"""``view.events``: a branch's append-only event log, hash chained.

Sequences are dense per branch and continue the parent's log: a branch forked when
its parent had 5 events appends sequence 5 next. Each event carries the version it was
appended at, so ``as_of=item.version`` reads the state the agent saw at that moment.
"""

from __future__ import annotations

import builtins
import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from . import _commit_hash
from ._damage import guarded
from ._engine import (
    UNKNOWN,
    AsOf,
    BranchRecord,
    Engine,
    WriteContext,
    check_count,
    check_name,
    check_text,
)
from ._horizons import bump_generation, log_start
from ._values import dumps, loads, same, validate
from .errors import AppendConflictError, CorruptDatabaseError, EventNotFound, InvalidInputError
from .models import ErasureReceipt, Event, EventItem, from_micros

EVENT_COLUMNS = (
    "branch_id, sequence, event_type, payload, version, ts, hash, origin_branch_id, origin_sequence"
)


def event_hash(previous: str, sequence: int, event_type: str, version: int, payload: bytes) -> str:
    """sha256 over the previous hash and a canonical encoding of this event."""
    digest = hashlib.sha256(previous.encode())
    digest.update(b"\x1e")
    digest.update(dumps([sequence, event_type, version]))
    digest.update(b"\x1e")
    digest.update(payload)
    return digest.hexdigest()


#: How an erased event's payload starts (no JSON text starts with a NUL byte); the
#: version that erased it follows, in ASCII digits.
ERASED_PAYLOAD = b"\x00erased@"


def erased_payload(version: int) -> bytes:
    """The payload an event erased at ``version`` keeps."""
    return ERASED_PAYLOAD + str(version).encode()


def erased_at(payload: Any) -> int | None:
    """The version that erased a stored payload, or None if it was not erased."""
    if isinstance(payload, memoryview):
        payload = bytes(payload)
    if isinstance(payload, bytes) and payload.startswith(ERASED_PAYLOAD):
        digits = payload[len(ERASED_PAYLOAD) :]
        return int(digits) if digits.isdigit() else 0
    return None


def chain_break(previous: str, expected: int, row: tuple[Any, ...]) -> str | None:
    """Why the stored event ``row`` (sequence, type, version, payload, hash) does not
    continue a log whose last hash is ``previous`` and next sequence ``expected``: "sequence
    gap" or "hash mismatch" (an edited row, a payload stored as text...); None if it does.
    An erased event's hash is taken as stored: the events after it chain on it, so they
    still prove that nothing else changed."""
    sequence, event_type, version, payload, digest = row
    if sequence != expected:
        return "sequence gap"
    if not isinstance(payload, (bytes, memoryview)) or not isinstance(event_type, str):
        return "hash mismatch"
    if erased_at(payload) is not None:
        return None if isinstance(digest, str) else "hash mismatch"
    if event_hash(previous, sequence, event_type, version, bytes(payload)) != digest:
        return "hash mismatch"
    return None


def _like(text: str) -> str:
    """A LIKE pattern (``\\`` escapes) matching ``text`` anywhere."""
    return "%" + re.sub(r"([%_\\])", r"\\\1", text) + "%"


def event_from_row(engine: Engine, row: tuple[Any, ...]) -> Event:
    branch_id, sequence, event_type, payload, version, ts, digest, origin_id, origin_seq = row
    if (
        type(sequence) is not int
        or type(event_type) is not str
        or type(version) is not int
        or type(digest) is not str
    ):
        raise CorruptDatabaseError(
            f"event {sequence!r} of branch id {branch_id!r} in rewind_events is damaged: "
            f"type {event_type!r}, version {version!r}, hash {digest!r}",
            code="corrupt.events",
        )
    erased = erased_at(payload)
    return Event(
        sequence=sequence,
        event_type=event_type,
        payload=None if erased is not None else loads(bytes(payload)),
        version=version,
        timestamp=from_micros(ts),
        hash=digest,
        branch=engine.branch_by_id(branch_id).name,
        origin=None if origin_id is None else (engine.branch_by_id(origin_id).name, origin_seq),
        erased_at=erased,
    )


def identity(row_branch_id: int, sequence: int, origin: tuple[int, int] | None) -> tuple[int, int]:
    """What makes an event itself: its first home, also for the copies merges made."""
    return origin if origin is not None else (row_branch_id, sequence)


def events_between(engine: Engine, branch_id: int, low: int, high: int) -> list[Event]:
    """Events appended on ``branch_id`` at versions in (low, high], in order."""
    rows = engine.conn.fetchall(
        f"SELECT {EVENT_COLUMNS} FROM rewind_events "
        "WHERE branch_id = ? AND version > ? AND version <= ? ORDER BY version, sequence",
        (branch_id, low, high),
    )
    return [event_from_row(engine, row) for row in rows]


def last_event(engine: Engine, record: BranchRecord, version: int) -> tuple[int, str] | None:
    """(sequence, hash) of the newest event visible at (record, version). The newest now
    is remembered (``log_end``: sequence, hash and version, or None for an empty log):
    it answers every version from its own on."""
    known = engine.memory.get("log_end", record.id)
    if known is not UNKNOWN and (known is None or known[2] <= version):
        return None if known is None else (known[0], known[1])
    newest = version >= engine.clock()
    found = None
    for branch_id, cap in engine.row_lineage(record, version):
        row = engine.conn.fetchone(
            "SELECT sequence, hash, version FROM rewind_events "
            "WHERE branch_id = ? AND version <= ? ORDER BY version DESC, sequence DESC LIMIT 1",
            (branch_id, cap),
        )
        if row is not None:
            found = (int(row[0]), str(row[1]), int(row[2]))
            break
        kept = engine.horizon(branch_id)
        if kept is not None and kept.first_event is not None and cap >= kept.kept_from:
            # Retention removed this branch's older events: its log ends with the last.
            found = (kept.first_event - 1, kept.event_hash or "", kept.kept_from - 1)
            break
    if newest:
        engine.memory.put("log_end", record.id, found)
    return None if found is None else (found[0], found[1])


def _ends_by(engine: Engine, record: BranchRecord, version: int, sequence: int) -> bool:
    """Whether the memory knows that the log visible at (record, version) has no event
    after ``sequence`` (False when it does not know: the caller reads)."""
    known = engine.memory.get("log_end", record.id)
    if known is UNKNOWN or (known is not None and known[2] > version):
        return False
    return known is None or known[0] <= sequence


def append_event(
    engine: Engine,
    write: WriteContext,
    event_type: str,
    payload_bytes: bytes,
    origin: tuple[int, int] | None = None,
) -> tuple[int, str]:
    """Insert one event at the end of the log of ``write``'s branch, in its commit;
    returns (sequence, hash). After the commit's first append the log's end is known.

    ``origin``: (branch id, sequence) of the event this one copies (merges carry events).
    """
    record, commit_version = write.branch, write.reserve()
    ts = write.ts
    last = write.log_head or last_event(engine, record, commit_version)
    sequence = last[0] + 1 if last else 0
    digest = event_hash(
        last[1] if last else "", sequence, event_type, commit_version, payload_bytes
    )
    part = _commit_hash.event_part(sequence, digest, ts, *(origin or (None, None)))
    write.event_parts.append(part)  # before the row is recorded: its final hash
    write.commit()
    engine.conn.execute(
        f"INSERT INTO rewind_events ({EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            record.id,
            sequence,
            event_type,
            payload_bytes,
            commit_version,
            ts,
            digest,
            *(origin or (None, None)),
        ),
    )
    write.log_head = (sequence, digest)
    engine.memory.put("log_end", record.id, (sequence, digest, commit_version))
    return sequence, digest


@dataclass(frozen=True)
class Verification:
    """The result of ``events.verify()``."""

    ok: bool
    checked: int
    first_bad: int | None
    """The first sequence that does not match (None when ``ok``)."""
    reason: str | None

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class EventLogDiff:
    """Where two event logs diverge: the shared prefix and what each has after it."""

    common_prefix: int
    only_a: list[Event]
    only_b: list[Event]

    @property
    def identical(self) -> bool:
        return not self.only_a and not self.only_b


def diff_event_logs(a: Any, b: Any, *, by: Literal["content", "hash"] = "content") -> EventLogDiff:
    """Compare two logs (branch views, ``events`` objects, or lists of events/items).

    By default events are compared by what they say, their type and payload, so two
    attempts that began the same way share their first events even when they were
    appended at different versions. ``by="hash"`` compares the chained hashes instead:
    equal prefixes are then exactly equal histories (same versions and order too).
    """
    if by not in ("content", "hash"):
        raise InvalidInputError(
            f"by must be 'content' or 'hash', not {by!r}", code="invalid.event_log"
        )
    events_a, events_b = _as_events(a), _as_events(b)
    common = 0
    for left, right in zip(events_a, events_b, strict=False):
        if by == "hash":
            if left.hash != right.hash:
                break
        elif left.event_type != right.event_type or not same(left.payload, right.payload):
            break
        common += 1
    return EventLogDiff(common, events_a[common:], events_b[common:])


def _as_events(log: Any) -> builtins.list[Event]:
    log = getattr(log, "events", log)
    if isinstance(log, Events):
        log = log.list()
    if not isinstance(log, (builtins.list, tuple)):
        raise InvalidInputError(
            "diff_event_logs compares branch views, view.events, or lists of events",
            code="invalid.event_log",
        )
    events = []
    for item in log:
        event = getattr(item, "event", item)
        if not isinstance(event, Event):
            raise InvalidInputError(f"not an event: {item!r}", code="invalid.event_log")
        events.append(event)
    return events


@guarded
class Events:
    """The event log of one branch (including its ancestors' events up to the fork)."""

    def __init__(self, engine: Engine, branch: str) -> None:
        self._engine = engine
        self._branch = branch

    def append(
        self,
        event_type: str,
        payload: Any = None,
        *,
        expected_index: int | None = None,
        trigger: str | None = None,
        message: str | None = None,
    ) -> Event:
        """Append an event (one version). With ``expected_index=n`` the log must have
        exactly n events, else ``AppendConflictError`` and nothing is written."""
        check_name(event_type, "event_type")
        validate(payload, allow_bytes=False)
        if expected_index is not None:
            check_count(expected_index, "expected_index")
        payload_bytes = dumps(payload)
        engine = self._engine
        with engine.conn.lock:
            appended = self._append_in_server(
                event_type, payload_bytes, expected_index, trigger, message
            )
            if appended is not None:
                return appended
            with engine.writing(self._branch, trigger, message) as write:
                if expected_index is not None:
                    last = last_event(engine, write.branch, engine.clock())
                    self._check_length(last[0] + 1 if last else 0, expected_index)
                sequence, digest = append_event(engine, write, event_type, payload_bytes)
                version = write.commit()
        return Event(
            sequence=sequence,
            event_type=event_type,
            payload=loads(payload_bytes),
            version=version,
            timestamp=from_micros(write.ts),
            hash=digest,
            branch=write.branch.name,
        )

    def _append_in_server(
        self,
        event_type: str,
        payload_bytes: bytes,
        expected_index: int | None,
        trigger: str | None,
        message: str | None,
    ) -> Event | None:
        """The append as one call of ``rewind_append_event`` (PostgreSQL, outside any
        transaction); None where the ordinary path must write it (or say what is wrong)."""
        engine = self._engine
        if not engine.standalone_write():
            return None
        status, version, ts, sequence, digest = engine.write_in_server(
            "rewind_append_event",
            self._branch,
            (event_type, dumps(event_type), payload_bytes, expected_index),
            trigger,
            message,
        )
        if status == 1:
            return None  # no such branch: the ordinary path says which way
        if status == 2:
            assert expected_index is not None
            self._check_length(int(sequence), expected_index)
        return Event(
            sequence=int(sequence),
            event_type=event_type,
            payload=loads(payload_bytes),
            version=int(version),
            timestamp=from_micros(int(ts)),
            hash=str(digest),
            branch=self._branch,
        )

    def _check_length(self, length: int, expected_index: int) -> None:
        if length != expected_index:
            raise AppendConflictError(
                f"expected the log of {self._branch!r} to have {expected_index} "
                f"events, it has {length}; read it again and retry",
                expected=expected_index,
                actual=length,
            )

    def list(
        self,
        *,
        as_of: AsOf = None,
        event_type: str | None = None,
        after: int | None = None,
        limit: int | None = None,
        search: str | None = None,
    ) -> builtins.list[EventItem]:
        """Events in sequence order, as the log was at ``as_of`` (default: now).

        ``after`` skips sequences up to and including it; ``event_type`` filters;
        ``search`` keeps events whose type contains it, or whose payload does: in a
        string (quotes and backslashes included) or in its compact JSON text
        (``"ok":true``).
        ASCII letters match either case.
        """
        if event_type is not None:
            check_name(event_type, "event_type")
        if search is not None:
            check_text(search, "search")
        for name, number in (("after", after), ("limit", limit)):
            if number is not None:
                check_count(number, name)
        engine = self._engine
        with engine.conn.lock:
            record = engine.branch(self._branch)
            version = engine.resolve_as_of(record, as_of)
            items: builtins.list[EventItem] = []
            if after is not None and _ends_by(engine, record, version, after):
                return items  # nothing after it: the remembered end of the log says so
            for branch_id, cap in reversed(engine.row_lineage(record, version)):
                if limit is not None and len(items) >= limit:
                    break
                sql = (
                    f"SELECT {EVENT_COLUMNS} FROM rewind_events WHERE branch_id = ? "
                    "AND version <= ?"
                )
                params: builtins.list[Any] = [branch_id, cap]
                if after is not None:
                    sql += " AND sequence > ?"
                    params.append(after)
                if event_type is not None:
                    sql += " AND event_type = ?"
                    params.append(event_type)
                if search:
                    conn = engine.conn
                    # The payload is JSON: text inside its strings is stored escaped.
                    plain = _like(search)
                    patterns = dict.fromkeys([plain, _like(dumps(search)[1:-1].decode())])
                    sql += f" AND ({conn.contains_text('event_type')}"
                    for _ in patterns:
                        sql += f" OR {conn.contains_text('payload', binary=True)}"
                    sql += ")"
                    params += [plain, *patterns]
                # Within a branch, sequence order is version order: this walks an index.
                # From ``after`` on, the primary key seeks straight to it (the version
                # index would read every event up to ``cap`` to find the later ones).
                sql += " ORDER BY sequence" if after is not None else " ORDER BY version, sequence"
                if limit is not None:
                    sql += " LIMIT ?"
                    params.append(limit - len(items))
                items.extend(
                    EventItem(event_from_row(engine, row))
                    for row in engine.conn.fetchall(sql, params)
                )
            return items

    def types(self, *, as_of: AsOf = None) -> builtins.list[str]:
        """The distinct event types in the log at ``as_of`` (default: now), sorted."""
        engine = self._engine
        with engine.conn.lock:
            record = engine.branch(self._branch)
            version = engine.resolve_as_of(record, as_of)
            found: set[str] = set()
            for branch_id, cap in engine.row_lineage(record, version):
                found.update(
                    row[0]
                    for row in engine.conn.fetchall(
                        "SELECT DISTINCT event_type FROM rewind_events "
                        "WHERE branch_id = ? AND version <= ?",
                        (branch_id, cap),
                    )
                )
            return sorted(found)

    def get(self, sequence: int, *, as_of: AsOf = None) -> Event:
        """The event with this sequence number; ``EventNotFound`` if there is none."""
        check_count(sequence, "sequence")
        engine = self._engine
        with engine.conn.lock:
            record = engine.branch(self._branch)
            version = engine.resolve_as_of(record, as_of)
            for branch_id, cap in engine.row_lineage(record, version):
                row = engine.conn.fetchone(
                    f"SELECT {EVENT_COLUMNS} FROM rewind_events "
                    "WHERE branch_id = ? AND sequence = ? AND version <= ?",
                    (branch_id, sequence, cap),
                )
                if row is not None:
                    return event_from_row(engine, row)
        raise EventNotFound(
            f"branch {self._branch!r} has no event {sequence} (at version {version})",
            branch=self._branch,
            sequence=sequence,
        )

    def length(self, *, as_of: AsOf = None) -> int:
        """How many events the log has at ``as_of`` (default: now)."""
        engine = self._engine
        with engine.conn.lock:
            record = engine.branch(self._branch)
            last = last_event(engine, record, engine.resolve_as_of(record, as_of))
            return last[0] + 1 if last else 0

    def verify(self, *, as_of: AsOf = None) -> Verification:
        """Recompute the hash chain of the whole log (ancestors' events included; where
        retention removed the oldest events, from the first one kept, on the hash of the
        one before it).

        Reports how many events were checked and the first sequence whose stored hash, or
        whose place in the sequence, does not match: an edited payload, type or version,
        or a removed or reordered event. (Removing the newest events leaves a shorter valid
        chain: compare ``length()`` with a count you keep, or an export, to catch that.)
        """
        engine = self._engine
        with engine.conn.lock:
            record = engine.branch(self._branch)
            version = engine.resolve_as_of(record, as_of)
            previous, expected, checked = "", 0, 0
            for branch_id, cap in reversed(engine.row_lineage(record, version)):
                previous, expected = log_start(engine.horizon(branch_id), previous, expected)
                cursor = engine.conn.execute(
                    "SELECT sequence, event_type, version, payload, hash FROM rewind_events "
                    "WHERE branch_id = ? AND version <= ? ORDER BY version, sequence",
                    (branch_id, cap),
                )
                for row in cursor:
                    checked += 1
                    reason = chain_break(previous, expected, row)
                    if reason is not None:
                        first_bad = expected if reason == "sequence gap" else row[0]
                        return Verification(False, checked, first_bad, reason)
                    previous, expected = row[4], expected + 1
            return Verification(True, checked, None, None)

    def erase(self, *sequences: int) -> ErasureReceipt:
        """Erase the payloads of these events (inherited ones where they live, and every
        copy a merge carried elsewhere): each keeps its place, type and hash, reads with
        ``payload`` None and ``erased_at`` set, and the log still verifies, since the
        events after it chain on its hash."""
        return _erase_events(self._engine, self._branch, sequences)

    def __len__(self) -> int:
        return self.length()

    def __iter__(self) -> Iterator[EventItem]:
        return iter(self.list())


def _erase_events(engine: Engine, branch: str, sequences: Iterable[int]) -> ErasureReceipt:
    """Erase the payloads of these events of ``branch``'s log (inherited ones where they
    live, and every copy a merge carried elsewhere)."""
    if isinstance(sequences, int):
        sequences = [sequences]
    wanted = sorted({check_count(sequence, "sequence") for sequence in sequences})
    conn = engine.conn
    with conn.write():
        version = engine.clock()
        log = Events(engine, branch)
        owners = []
        for sequence in wanted:
            log.get(sequence)  # not_found.event for one the log does not have
            owners.append((_owner_id(engine, branch, sequence), sequence))
        marker = erased_payload(version)
        erased = 0
        for owner_id, sequence in owners:
            row = conn.fetchone(
                "SELECT payload, origin_branch_id, origin_sequence FROM rewind_events "
                "WHERE branch_id = ? AND sequence = ?",
                (owner_id, sequence),
            )
            origin = (row[1], row[2]) if row and row[1] is not None else (owner_id, sequence)
            for target in _copies(engine, *origin):
                current = conn.fetchone(
                    "SELECT payload FROM rewind_events WHERE branch_id = ? AND sequence = ?",
                    target,
                )
                if current is None or erased_at(current[0]) is not None:
                    continue
                conn.execute(
                    "UPDATE rewind_events SET payload = ? WHERE branch_id = ? AND sequence = ?",
                    (marker, *target),
                )
                erased += 1
        if erased:
            bump_generation(conn)
            conn.request_reclaim()
        engine.memory.clear()
        return ErasureReceipt(version, events=erased)


def _owner_id(engine: Engine, branch: str, sequence: int) -> int:
    """The branch of ``branch``'s lineage whose own row is event ``sequence``."""
    record = engine.branch(branch)
    for branch_id, cap in engine.row_lineage(record, engine.clock()):
        if engine.conn.fetchone(
            "SELECT 1 FROM rewind_events WHERE branch_id = ? AND sequence = ? AND version <= ?",
            (branch_id, sequence, cap),
        ):
            return branch_id
    return record.id  # pragma: no cover - events.get found it


def _copies(engine: Engine, branch_id: int, sequence: int) -> list[tuple[int, int]]:
    """The event's first home and every copy a merge made of it."""
    found = [(branch_id, sequence)]
    found += [
        (int(row[0]), int(row[1]))
        for row in engine.conn.fetchall(
            "SELECT branch_id, sequence FROM rewind_events "
            "WHERE origin_branch_id = ? AND origin_sequence = ?",
            (branch_id, sequence),
        )
    ]
    return found
