"""Export a database's history as JSON Lines, and import it into another database.

The file holds everything needed to rebuild the same history: branches (with their fork
points), the shared arrays, commits, every written value and every event, with their
original version numbers, so every ``as_of`` read gives the same answer and every event
hash is the same. Records, one JSON object a line, in this order::

    {"type": "header", "format": "rewinddb-export", "format_version": 2, "clock",
     "merge_sources": "kept", ...}
    {"type": "branch", "id", "name", "parent", "forked_at", "created_at", "deleted_at",
     "left_out"}                                          (left_out: only on stand-ins)
    {"type": "horizon", "branch", "kept_from", "policy", "pruned_at", "previous_hash",
     "rows_hash", "first_event", "event_hash"}          where retention cut a branch
    {"type": "array", "id", "base", "base_len"}          shared array storage
    {"type": "items", "array", "start", "items": [...]}
    {"type": "commit", "version", "branch", "ts", "trigger", "message", "merge_branch", ...}
    {"type": "entry", "branch", "space", "key", "version", "kind", "trigger", "value", ...}
    {"type": "event", "branch", "sequence", "version", "event_type", "ts", "hash", "origin",
     "payload"}
    {"type": "end", "counts": {...}}

Erased and pruned history (``erasure``, ``retention``) travels as it is stored, never
what was removed: an erased entry has kind ``"erased"``, its ``digest`` (the hex sha256
its commit's hash covers) and ``erased_at`` (the version that erased it), no value; an
erased event has ``erased_at`` and a null payload, and keeps its hash. A horizon says
where retention cut a branch's history: the entries it kept below ``kept_from`` have no
commit of their own, its commits' hash chain starts at ``previous_hash`` and its own
event log at ``first_event`` (chained on ``event_hash``). Format 1 (without these) still
imports.

An export of some branches holds them with their ancestors, and the copy acts as the
original would with every other branch deleted and purged (``_left_out``): a left-out
branch the exported history still names (as a merge source, or through the lineage of
one) is in the file as a purged branch would be, a deleted branch record marked
``"left_out"`` with its parent and fork point and none of its rows but its merge commits
that exported histories walk through (as links: no trigger, message or rows), so merge
bases come out as the original's and a base that falls on it is refused. An event carried
from a left-out branch the file does not hold gets a placeholder where it imports. Every
commit writes an entry or an event of its branch, or is a merge; import refuses a commit
that is neither, but for the merges older exports (no ``merge_sources`` in the header)
wrote with their source left out, which get a placeholder each (``repair_merges``), as
the export does for such commits a database imported by an older rewinddb holds.

Both directions stream: export reads with cursors and writes line by line; import reads
line by line inside one transaction, so a bad file (broken hash chain, unknown record,
existing branch, truncated) fails with a clear error and writes nothing.

Import applies the API's own rules to every field, with the API's own checks, so whatever
imports can be read and shown: values pass ``_values.validate`` (JSON, 64-bit integers,
at most ``MAX_DEPTH`` levels, counted in the whole value, also through shared arrays);
names pass ``check_name`` and texts ``check_text``; timestamps are never in the future,
commits' never go back, and an event's is its commit's; erased rows and horizons are as
``erasure`` and ``retention`` write them. A failure of the storage (disk full, I/O error)
is not the file's fault: it goes on as the engine reports it.
"""

from __future__ import annotations

import base64
import bisect
import heapq
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from . import _commit_hash
from ._engine import (
    DEFAULT_BRANCH,
    KIND_BYTES,
    KIND_DELETED,
    KIND_ERASED,
    KIND_JSON,
    Engine,
    check_name,
    check_text,
    now_micros,
)
from ._horizons import BASE_ROWS, rows_hash
from ._schema import SCHEMA_VERSION
from ._values import dumps, height, validate
from .documents import Documents
from .erasure import purged_name
from .errors import BranchExistsError, ImportFormatError, InvalidValueError, RewindError
from .events import erased_at, erased_payload, event_hash
from .kv import KV
from .models import from_micros
from .progress import Progress
from .state import State

FORMAT = "rewinddb-export"
FORMAT_VERSION = 2
#: The header's ``merge_sources`` when every merge commit in the file names its source (a
#: branch the export leaves out is in it as a placeholder). Older exports dropped those
#: merges' sources (``merge_branch`` null).
MERGE_SOURCES_KEPT = "kept"
#: The formats import reads: 1 had no horizons and no erased rows.
_READS = (1, 2)
_ITEMS_PER_LINE = 256
_KINDS = {KIND_JSON: "json", KIND_BYTES: "bytes", KIND_DELETED: "deleted", KIND_ERASED: "erased"}
_SECTIONS = ("branch", "horizon", "array", "items", "commit", "entry", "event")
_HORIZON_FIELDS = (
    "kept_from",
    "policy",
    "pruned_at",
    "previous_hash",
    "rows_hash",
    "first_event",
    "event_hash",
)
_HEX64 = re.compile("[0-9a-f]{64}")
#: The names older rewinddbs gave placeholders (``_placeholder_name``).
_OLDER_PLACEHOLDER = re.compile(r"\(not exported: (branch|merged at version) [0-9]+\)")
#: Each space and whether it stores raw bytes (as its API's writes allow).
_SPACES = {space.space: space.allows_bytes for space in (KV, Documents, State)}


@dataclass
class TransferCounts:
    """How many records of each type were exported or imported."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_SECTIONS, 0))
    #: The live branches.
    branches: list[str] = field(default_factory=list)
    #: Of the branch records, the placeholders (``"left_out"``) of branches a partial
    #: export left out that its history still names.
    stand_ins: int = 0

    def __str__(self) -> str:
        # Branch records: the live ones (what ``branches.list()`` shows), the deleted,
        # then the stand-ins of branches a partial export left out.
        counts = {"branch": len(self.branches), "deleted": self.counts["branch"]}
        counts["deleted"] -= counts["branch"] + self.stand_ins
        counts["stand_in"] = self.stand_ins
        counts.update((kind, n) for kind, n in self.counts.items() if kind != "branch")
        names = {
            "branch": "branches",
            "deleted": "deleted branches",
            "stand_in": "stand-ins of left-out branches",
            "horizon": "horizons",
            "array": "arrays",
            "items": "array chunks",
            "commit": "commits",
            "entry": "values",
            "event": "events",
        }
        return ", ".join(f"{n:,} {names[kind]}" for kind, n in counts.items() if n)


def _line(record: dict[str, Any], raw_field: str | None = None, raw: bytes = b"") -> bytes:
    """One JSON line; ``raw`` (already canonical JSON) is spliced in as ``raw_field``."""
    data = orjson.dumps(record)
    if raw_field is not None:
        data = data[:-1] + b',"' + raw_field.encode() + b'":' + raw + b"}"
    return data + b"\n"


# -- export -------------------------------------------------------------------


def export_jsonl(
    engine: Engine,
    out: IO[bytes],
    *,
    branches: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> TransferCounts:
    """Write the history of ``branches`` (default: all, deleted ones included) to ``out``."""
    if branches is not None and (
        isinstance(branches, (str, bytes)) or not isinstance(branches, Sequence)
    ):
        raise RewindError(
            f"branches is a list of branch names, not {branches!r}", code="invalid.branches"
        )
    if branches is not None and not branches:
        raise RewindError(
            "branches=[] names no branch to export: name at least one (the export holds "
            "them with their ancestors), or leave branches out to export everything",
            code="invalid.branches",
        )
    try:
        out.write(b"")
    except (TypeError, AttributeError):
        raise RewindError(
            "export writes bytes: open the file in binary mode ('wb') or use sys.stdout.buffer",
            code="invalid.output",
        ) from None
    conn = engine.conn
    with conn.lock, conn.snapshot():
        ids = _exported_branch_ids(engine, branches)
        marks = ",".join("?" * len(ids))
        params = tuple(sorted(ids))
        result = TransferCounts()
        exported_at = now_micros()
        dropped = _dropped_merges(engine, marks, params)
        left_out = (
            _left_out(engine, ids, marks, params, exported_at)
            if branches is not None
            else _LeftOut()
        )
        result.stand_ins = len(left_out.records) + len(dropped)
        if progress is not None:
            progress.total = sum(
                conn.fetchone(f"SELECT count(*) FROM {table} WHERE branch_id IN ({marks})", params)[
                    0
                ]
                for table in ("rewind_commits", "rewind_entries", "rewind_events")
            ) + len(left_out.links)

        def emit(kind: str, line: bytes) -> None:
            out.write(line)
            result.counts[kind] += 1
            if progress is not None and kind in ("commit", "entry", "event"):
                progress.advance()

        out.write(
            _line(
                {
                    "type": "header",
                    "format": FORMAT,
                    "format_version": FORMAT_VERSION,
                    "schema": SCHEMA_VERSION,
                    "clock": engine.clock(),
                    "merge_sources": MERGE_SOURCES_KEPT,
                    "exported_at": from_micros(exported_at).isoformat(),
                }
            )
        )
        for row in conn.fetchall(
            "SELECT id, name, parent_id, forked_at, created_at, deleted_at FROM "
            f"rewind_branches WHERE id IN ({marks}) ORDER BY id",
            params,
        ):
            branch_id, name, parent, forked_at, created_at, deleted_at = row
            emit(
                "branch",
                _line(
                    {
                        "type": "branch",
                        "id": branch_id,
                        "name": name,
                        "parent": parent,
                        "forked_at": forked_at,
                        "created_at": created_at,
                        "deleted_at": deleted_at,
                    }
                ),
            )
            if deleted_at is None:
                result.branches.append(name)
        for stand_in in left_out.records:
            emit("branch", _line(stand_in))
        for placeholder, ts in dropped.values():
            emit("branch", _line(_placeholder_record(placeholder, None, 0, ts, ts)))
        if engine.conn.schema_migrated[1] >= 8:  # older schemas had no retention
            for row in conn.fetchall(
                f"SELECT branch_id, {', '.join(_HORIZON_FIELDS)} FROM rewind_horizons "
                f"WHERE branch_id IN ({marks}) ORDER BY branch_id",
                params,
            ):
                emit(
                    "horizon",
                    _line(
                        {
                            "type": "horizon",
                            "branch": row[0],
                            **dict(zip(_HORIZON_FIELDS, row[1:], strict=True)),
                        }
                    ),
                )
        for seq, base, base_len, length in _exported_arrays(engine, marks, params):
            emit("array", _line({"type": "array", "id": seq, "base": base, "base_len": base_len}))
            for start, items in _item_chunks(engine, seq, length):
                emit(
                    "items",
                    b'{"type":"items","array":%d,"start":%d,"items":[%s]}\n'
                    % (seq, start, b",".join(items)),
                )
        commits = conn.execute(
            "SELECT version, branch_id, ts, trigger, message, merge_branch_id, merge_version "
            f"FROM rewind_commits WHERE branch_id IN ({marks}) ORDER BY version",
            params,
        )
        for row in heapq.merge(commits, left_out.links, key=lambda commit: int(commit[0])):
            version, branch_id, ts, trigger, message, merge_branch, merge_version = row
            if version in dropped:  # a merge an older import left without its source
                merge_branch, merge_version = dropped[version][0], version - 1
            emit(
                "commit",
                _line(
                    {
                        "type": "commit",
                        "version": version,
                        "branch": branch_id,
                        "ts": ts,
                        "trigger": trigger,
                        "message": message,
                        "merge_branch": merge_branch,
                        "merge_version": merge_version,
                    }
                ),
            )
        for row in conn.execute(
            "SELECT branch_id, space, key, version, kind, body, refs, trigger FROM "
            f"rewind_entries WHERE branch_id IN ({marks}) ORDER BY version, branch_id, space, "
            "key",
            params,
        ):
            branch_id, space, key, version, kind, body, refs, trigger = row
            record = {
                "type": "entry",
                "branch": branch_id,
                "space": space,
                "key": key,
                "version": version,
                "kind": _KINDS[kind],
                "trigger": trigger,
            }
            if refs is not None:
                record["arrays"] = orjson.loads(bytes(refs))
            if kind == KIND_JSON:
                emit("entry", _line(record, "value", bytes(body)))
            elif kind == KIND_ERASED:
                # Only what the commit's hash covers: never the value, nor its trigger.
                record["trigger"] = None
                record["digest"] = bytes(body).hex()
                record["erased_at"] = _commit_hash.erased_version(trigger)
                emit("entry", _line(record))
            else:
                if kind == KIND_BYTES:
                    record["value"] = base64.b64encode(bytes(body)).decode()
                emit("entry", _line(record))
        for row in conn.execute(
            "SELECT branch_id, sequence, version, event_type, ts, hash, origin_branch_id, "
            f"origin_sequence, payload FROM rewind_events WHERE branch_id IN ({marks}) "
            "ORDER BY version, branch_id, sequence",
            params,
        ):
            branch_id, sequence, version, event_type, ts, digest, origin, origin_seq, payload = row
            event = {
                "type": "event",
                "branch": branch_id,
                "sequence": sequence,
                "version": version,
                "event_type": event_type,
                "ts": ts,
                "hash": digest,
                "origin": None if origin is None else [origin, origin_seq],
            }
            erased = erased_at(payload)
            if erased is not None:  # the marker is not JSON: the payload is gone
                emit("event", _line({**event, "erased_at": erased, "payload": None}))
            else:
                emit("event", _line(event, "payload", bytes(payload)))
        out.write(_line({"type": "end", "counts": result.counts}))
    if progress is not None:
        progress.close()
    return result


def _exported_branch_ids(engine: Engine, names: Sequence[str] | None) -> set[int]:
    if names is None:
        return {row[0] for row in engine.conn.fetchall("SELECT id FROM rewind_branches")}
    ids: set[int] = set()
    for name in names:
        record = engine.branch(name)
        ids.update(branch_id for branch_id, _ in engine.lineage(record, 0))
    return ids


@dataclass
class _LeftOut:
    """What a partial export holds of the branches it leaves out (``_left_out``)."""

    #: Their branch records, each after its parent's.
    records: list[dict[str, Any]] = field(default_factory=list)
    #: Their merge commits the exported histories hold through merges, as links: rows
    #: (version, branch, ts, trigger, message, merge branch, merge version), by version.
    links: list[tuple[Any, ...]] = field(default_factory=list)


def _left_out(
    engine: Engine, ids: set[int], marks: str, params: tuple[int, ...], exported_at: int
) -> _LeftOut:
    """The branches an export leaves out that the exported histories still hold through
    merges, as the original would keep them if it purged every branch the export leaves
    out (``erasure.purge_deleted``): each as a purged branch, none of its rows, and its
    merge commits that a walk from an exported branch reaches as links (version, time,
    merge parent; no trigger, message or rows).

    ``merge.contained_history`` finds what a point holds by following its lineage and, at
    each step, the merge commits there. Walked from every exported branch, it reaches a
    left-out branch only through a merge (an exported branch's ancestors are exported),
    and from there the branch's lineage and its own merges, up to the newest version a
    walk holds of it. Without those merge commits a branch that merged a left-out one
    would seem to hold less than it does, and a merge base found through it would be
    older than the original's: the merge would go ahead on it and could put back values
    one side had replaced. With them the copy's walks hold what the original's do, and a
    base that falls on a left-out branch is refused there (it is purged:
    ``merge._check_base``), as in the original after that purge.

    Each keeps its parent and fork point (its parent is exported or left out and held
    too), so the copy walks its lineage as the original does; where retention cut an
    exported parent's history after the fork point (a rewinddb that did not keep what
    deleted forks read), it forks from the nearest step below whose history is kept
    there. Each is made when the branch was, and deleted when it was or, if it is live,
    at ``exported_at``."""
    conn = engine.conn
    held: dict[int, int] = {}  # left-out branch id -> the newest version a walk holds
    found = _LeftOut()
    pending = [
        (int(branch_id), int(version))
        for branch_id, version in conn.fetchall(
            "SELECT merge_branch_id, max(merge_version) FROM rewind_commits "
            f"WHERE branch_id IN ({marks}) AND merge_branch_id IS NOT NULL "
            "GROUP BY merge_branch_id",
            params,
        )
        if int(branch_id) not in ids
    ]
    while pending:
        branch_id, version = pending.pop()
        for step, cap in engine.lineage(engine.branch_by_id(branch_id), version):
            walked = held.get(step, -1)
            if step in ids or walked >= cap:
                break  # exported, or walked this far already: so is the lineage below
            held[step] = cap
            for row in conn.fetchall(  # (the merges index)
                "SELECT version, ts, merge_branch_id, merge_version FROM rewind_commits "
                "WHERE branch_id = ? AND merge_branch_id IS NOT NULL AND version > ? "
                "AND version <= ?",
                (step, walked, cap),
            ):
                link_version, ts, merged, merged_version = (int(value) for value in row)
                found.links.append((link_version, step, ts, None, None, merged, merged_version))
                if merged not in ids:
                    pending.append((merged, merged_version))
    found.links.sort()
    clock = engine.clock()
    placed: set[int] = set()
    for branch_id in sorted(held, key=lambda held_id: _depth(engine, held_id)):
        record = engine.branch_by_id(branch_id)
        parent, forked_at = None, 0
        for step, cap in engine.lineage(record, clock)[1:]:
            if step in placed or (step in ids and _keeps(engine, step, cap)):
                parent, forked_at = step, cap
                break
        # Made when the branch was; deleted when it was, or, for the copy, by this export.
        deleted_at = exported_at if record.deleted_at is None else record.deleted_at
        found.records.append(
            _placeholder_record(branch_id, parent, forked_at, record.created_at, deleted_at)
        )
        placed.add(branch_id)
    return found


def _keeps(engine: Engine, branch_id: int, version: int) -> bool:
    """Whether a fork of the branch at ``version`` reads only what retention kept of it:
    none of its rows (at or below its fork point), or its history from its horizon on
    (``_Importer.apply_horizon`` checks forks so)."""
    kept = engine.horizon(branch_id)
    return (
        kept is None
        or kept.kept_from <= version
        or version <= engine.branch_by_id(branch_id).forked_at
    )


def _depth(engine: Engine, branch_id: int) -> int:
    """How many ancestors the branch has (a parent's is smaller than its children's)."""
    return len(engine.lineage(engine.branch_by_id(branch_id), 0))


def _dropped_merges(
    engine: Engine, marks: str, params: tuple[int, ...]
) -> dict[int, tuple[int, int]]:
    """The exported commits that write no entry and no event and are not merges, each
    with a new branch id for a placeholder source and its time: a database that an
    older rewinddb imported from a partial export holds one for each merge whose source
    that export dropped (``merge_branch`` null). The store finds a branch's newest commit
    through those rows (``_clock.previous_hash``), so such a commit breaks the branch's
    hash chain at its next write, and an import refuses it (it says the file was edited).
    The export writes each as the importer repairs an older file: a merge of a
    placeholder of its own, merged at the version before it (``_Importer.repair_merges``).
    (A range of one version: SQLite seeks the (branch, version) indexes for it.)"""
    conn = engine.conn
    rows = conn.fetchall(
        "SELECT c.version, c.ts FROM rewind_commits c "
        f"WHERE c.branch_id IN ({marks}) AND c.merge_branch_id IS NULL AND NOT EXISTS ("
        "SELECT 1 FROM rewind_entries e WHERE e.branch_id = c.branch_id "
        "AND e.version >= c.version AND e.version <= c.version) AND NOT EXISTS ("
        "SELECT 1 FROM rewind_events v WHERE v.branch_id = c.branch_id "
        "AND v.version = c.version) ORDER BY c.version",
        params,
    )
    if not rows:
        return {}
    free = int(conn.fetchone("SELECT max(id) FROM rewind_branches")[0]) + 1
    return {int(version): (free + n, int(ts)) for n, (version, ts) in enumerate(rows)}


def _placeholder_record(
    branch_id: int, parent: int | None, forked_at: int, created_at: int, deleted_at: int
) -> dict[str, Any]:
    """The branch record of a placeholder: a deleted branch with none of its history,
    named by the rule of placeholders (``_placeholder_name``)."""
    return {
        "type": "branch",
        "id": branch_id,
        "name": _placeholder_name(branch_id),
        "parent": parent,
        "forked_at": forked_at,
        "created_at": created_at,
        "deleted_at": deleted_at,
        "left_out": True,
    }


def _placeholder_name(branch_id: int) -> str:
    """What a placeholder is called: the name of a purged branch (``erasure.purged``),
    since that is what it is, a branch whose history is not in this database. A merge
    whose base is on it is then refused where its rows would be read there
    (``merge._check_base``), as after a purge, instead of reading its parent's state
    (its fork point's) as the left-out branch's. (Older rewinddbs named placeholders
    ``(not exported: branch N)`` and ``(not exported: merged at version V)``: an import
    renames those, ``_OLDER_PLACEHOLDER``.) The name holds the branch's id, so it changes
    where an import gives the branch another id."""
    return purged_name(branch_id)


def _exported_arrays(
    engine: Engine, marks: str, params: tuple[int, ...]
) -> list[tuple[int, int | None, int, int]]:
    """(array, base, base length, length needed) of the shared arrays the exported entries
    use, with their bases, oldest first. Only the items exported entries can see are
    needed: another branch's later items in a shared array stay out of the file."""
    needed: dict[int, int] = {}
    for (refs,) in engine.conn.execute(
        f"SELECT refs FROM rewind_entries WHERE refs IS NOT NULL AND branch_id IN ({marks})",
        params,
    ):
        for _, seq, length in orjson.loads(bytes(refs)):
            needed[seq] = max(needed.get(seq, 0), length)
    bases: dict[int, tuple[int | None, int]] = {}
    pending = set(needed)
    while pending:  # newest first: an array is always newer than its base
        seq = max(pending)
        pending.remove(seq)
        base, base_len = engine.conn.fetchone(
            "SELECT base_id, base_len FROM rewind_seqs WHERE id = ?", (seq,)
        )
        bases[seq] = (base, base_len)
        if base is not None:
            needed[base] = max(needed.get(base, 0), min(base_len, needed[seq]))
            pending.add(base)
    return [(seq, *bases[seq], needed[seq]) for seq in sorted(needed)]


def _item_chunks(engine: Engine, seq: int, end: int) -> Iterator[tuple[int, list[bytes]]]:
    """The array's own items below ``end``, a line's worth at a time."""
    chunk: list[bytes] = []
    start = None
    for idx, item in engine.conn.execute(
        "SELECT idx, item FROM rewind_seq_items WHERE seq_id = ? AND idx < ? ORDER BY idx",
        (seq, end),
    ):
        if start is None:
            start = idx
        chunk.append(bytes(item))
        if len(chunk) == _ITEMS_PER_LINE:
            yield start, chunk
            chunk, start = [], None
    if chunk and start is not None:
        yield start, chunk


# -- import -------------------------------------------------------------------


@dataclass
class _Horizon:
    """A horizon as the file gives it, and the entries it keeps below ``kept_from``
    (``_horizons.rows_hash``'s rows, with the file's array ids)."""

    kept_from: int
    rows_hash: str
    first_event: int | None
    event_hash: str | None
    line: int = 0
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    keys: set[tuple[str, str]] = field(default_factory=set)


class _Importer:
    """Applies one export file's records, checking every field as it goes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.clock = 0
        self.branches: dict[int, int] = {}
        self.fork_points: dict[int, int] = {}  # (new) branch id -> its fork point
        self.arrays: dict[int, int] = {}
        self.lengths: dict[int, int] = {}  # (new) array id -> items stored so far
        self.placeholders: dict[int, int] = {}  # origin branches the file leaves out
        self.commits: dict[int, int] = {}  # version -> (new) branch id
        self.stamps: dict[int, int] = {}  # version -> its commit's timestamp
        self.last_commit = (0, 0)  # (version, timestamp) of the file's latest commit so far
        self.live_names: set[str] = set()
        # (new) array id -> [(index, height, item)]: where the deepest item so far changes
        self.deepest: dict[int, list[tuple[int, int, Any]]] = {}
        self.entry_version = 0  # entries come in version order; the slots of this version:
        self.entry_slots: set[tuple[int, str, str]] = set()
        self.now = now_micros()  # no timestamp of the file may be later
        self.result = TransferCounts()
        self.line_number = 0
        self.section = 0
        self.names: dict[int, str] = {}  # (new) branch id -> its name
        self.parents: dict[int, int | None] = {}  # (new) branch id -> its parent's
        self.root = 0  # the (new) id of the default branch, whose history is never cut
        self.horizons: dict[int, _Horizon] = {}  # (new) branch id -> where it was cut
        # (new) branch id -> (sequence, hash, version) of its own last event imported so far
        self.log_ends: dict[int, tuple[int, str, int]] = {}
        self.deleted: set[int] = set()  # (new) ids of deleted branches
        self.commit_order: list[int] = []  # the versions of the file's commits, in order
        # (new) branch id, version -> the time of an event whose commit retention removed
        self.removed_stamps: dict[tuple[int, int], int] = {}
        # version -> line of each commit that is not a merge and has written no row yet
        self.rowless: dict[int, int] = {}
        self.merge_sources_kept = False  # (the header says so: this rewinddb's exports)
        # (new) ids of the stand-ins of left-out branches: their commits are links only
        self.left_out: set[int] = set()

    def fail(self, why: str, line: int | None = None) -> ImportFormatError:
        line = self.line_number if line is None else line
        return ImportFormatError(f"line {line}: {why}", line=line)

    # -- field checks ------------------------------------------------------------

    def digest(self, record: dict[str, Any], name: str, *, optional: bool = False) -> Any:
        """A sha256 as the API stores it: 64 lowercase hex digits."""
        value = record.get(name)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not _HEX64.fullmatch(value):
            raise self.fail(f"{name!r} must be a sha256 in 64 lowercase hex digits, not {value!r}")
        return value

    def erased_at(self, record: dict[str, Any], low: int) -> int:
        """The version that erased a row: an erasure is made at the clock's version, so
        one from ``low`` (the row's own, for an entry) to the file's clock."""
        at = self.integer(record, "erased_at")
        if not low <= at <= self.clock:
            raise self.fail(
                f"'erased_at' {at} is not a version from {low} to the file's clock ({self.clock})"
            )
        return int(at)

    def integer(
        self, record: dict[str, Any], name: str, *, optional: bool = False, limit: int = 2**62
    ) -> Any:
        value = record.get(name)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < limit:
            raise self.fail(f"{name!r} must be an integer from 0 to {limit - 1}, not {value!r}")
        return value

    def timestamp(self, record: dict[str, Any], name: str, *, optional: bool = False) -> Any:
        """Microseconds since the epoch, as the API records them: its clock's time when
        it wrote, so never after now (every read turns such a time back into a datetime,
        and ``as_of`` accepts it)."""
        value = self.integer(record, name, optional=optional, limit=2**63)
        if value is not None and value > self.now:
            raise self.fail(
                f"{name!r} {value} is in the future (this machine's clock says "
                f"{self.now}, {from_micros(self.now).isoformat()}); rewinddb never records a "
                "later time"
            )
        return value

    def value(self, value: Any, what: str, *, allow_bytes: bool = False, depth: int = 0) -> None:
        """``value`` must be what the API's writes accept (``_values.validate``)."""
        try:
            validate(value, allow_bytes=allow_bytes, depth=depth)
        except InvalidValueError as error:
            raise self.fail(f"{what}: {error.message}") from None

    def text(self, record: dict[str, Any], name: str, what: str) -> str:
        try:
            return check_name(record.get(name), what)
        except RewindError as error:
            raise self.fail(f"{name!r}: {error.message}") from None

    def optional_text(self, record: dict[str, Any], name: str) -> str | None:
        try:
            return check_text(record.get(name), name)
        except RewindError as error:
            raise self.fail(f"{name!r}: {error.message}") from None

    def branch_id(self, old: Any) -> int:
        if isinstance(old, bool) or old not in self.branches:
            raise self.fail(f"refers to branch id {old!r}, which the file has not defined")
        return self.branches[old]

    def version_of(self, record: dict[str, Any], branch_id: int) -> int:
        """The record's version: one of the file's commits, made on the record's branch."""
        version = self.integer(record, "version")
        if self.commits.get(version) != branch_id:
            raise self.fail(f"version {version} is not a commit of this record's branch")
        return int(version)

    def insert_placeholder(
        self, old_id: int, parent: int | None, forked_at: int, created_at: int, deleted_at: int
    ) -> int:
        """Insert a placeholder's branch row (a deleted branch with none of its history)
        under the file's id where it is free (0: a new id), named by the rule of
        placeholders for its id here (``_placeholder_name``); returns its id."""
        new_id = self.insert_keeping_id(
            "rewind_branches",
            old_id if 0 < old_id < 2**62 else 0,
            "name, parent_id, forked_at, created_at, deleted_at",
            (_placeholder_name(old_id), parent, forked_at, created_at, deleted_at),
        )
        if new_id != old_id:
            self.engine.conn.execute(
                "UPDATE rewind_branches SET name = ? WHERE id = ?",
                (_placeholder_name(new_id), new_id),
            )
        return new_id

    def insert_keeping_id(
        self, table: str, old_id: int, columns: str, params: tuple[Any, ...]
    ) -> int:
        """Insert a branch or array row under the file's id when this database has no
        row of that id (a new database: every id), else under a new one. Commit hashes
        cover branch and array ids, so kept ids keep the original's hashes."""
        conn = self.engine.conn
        marks = ", ".join("?" * len(params))
        if old_id < 1 or conn.fetchone(f"SELECT 1 FROM {table} WHERE id = ?", (old_id,)):
            return conn.insert_id(f"INSERT INTO {table} ({columns}) VALUES ({marks})", params)
        conn.execute(f"INSERT INTO {table} (id, {columns}) VALUES (?, {marks})", (old_id, *params))
        if conn.dialect == "postgresql":  # its id sequence must not hand this id out again
            conn.fetchone(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT max(id) FROM {table}))"
            )
        return old_id

    # -- records -----------------------------------------------------------------

    def header(self, record: dict[str, Any]) -> None:
        if record.get("type") != "header" or record.get("format") != FORMAT:
            raise self.fail("not a rewinddb export (no header record)")
        if record.get("format_version") not in _READS:
            raise self.fail(
                f"export format {record.get('format_version')!r} is not supported "
                f"(this rewinddb reads {' and '.join(map(str, _READS))})"
            )
        self.clock = self.integer(record, "clock")
        if "merge_sources" in record:  # (absent: an older export, ``repair_merges``)
            if record["merge_sources"] != MERGE_SOURCES_KEPT:
                raise self.fail(
                    f"'merge_sources' must be {MERGE_SOURCES_KEPT!r} (every merge names its "
                    f"source) or absent (an older export), not {record['merge_sources']!r}"
                )
            self.merge_sources_kept = True

    def apply(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind not in _SECTIONS:
            raise self.fail(f"unknown record type {kind!r}")
        order = _SECTIONS.index(kind)
        if order < self.section and not (kind == "array" and _SECTIONS[self.section] == "items"):
            raise self.fail(f"a {kind!r} record after the {_SECTIONS[self.section]!r} records")
        self.section = max(self.section, order)
        try:
            getattr(self, f"apply_{kind}")(record)
        except (KeyError, TypeError, ValueError) as error:
            if isinstance(error, RewindError):
                raise
            raise self.fail(f"malformed {kind!r} record ({error!r})") from None
        except Exception as error:
            if _broke_a_constraint(error):
                raise self.fail(f"{kind!r} record cannot be stored ({error})") from None
            # The storage failed (disk full, I/O error): the file is not to blame, and
            # the error goes on as it came (the transaction's end rolls everything back).
            raise
        self.result.counts[kind] += 1

    def apply_branch(self, r: dict[str, Any]) -> None:
        conn = self.engine.conn
        old_id = self.integer(r, "id")
        name = self.text(r, "name", "branch")
        parent = r.get("parent")
        forked_at, created_at = self.integer(r, "forked_at"), self.timestamp(r, "created_at")
        deleted_at = self.timestamp(r, "deleted_at", optional=True)
        if old_id in self.branches or old_id in self.placeholders:
            raise self.fail(f"branch id {old_id} is defined twice")
        if forked_at > self.clock:
            raise self.fail(f"branch {name!r} is forked at {forked_at}, after the file's clock")
        if deleted_at is None:
            if name in self.live_names:
                raise self.fail(f"branch {name!r} is defined twice (a name has one live branch)")
            self.live_names.add(name)
        if name == DEFAULT_BRANCH and (parent is not None or deleted_at is not None):
            raise self.fail(f"{DEFAULT_BRANCH!r} is the root branch: no parent, never deleted")
        left_out = r.get("left_out", False)
        if not isinstance(left_out, bool):
            raise self.fail(f"'left_out' must be true or false, not {left_out!r}")
        if left_out and deleted_at is None:
            raise self.fail(
                f"branch {name!r} stands in for a branch the export left out ('left_out'), "
                "so it is deleted, but it has no 'deleted_at'"
            )
        # A placeholder (as older rewinddbs named them, too) is named for its id here.
        renamed = deleted_at is not None and (
            left_out or _OLDER_PLACEHOLDER.fullmatch(name) is not None
        )
        self.result.stand_ins += renamed
        if parent is None and deleted_at is not None:
            # A placeholder an earlier partial import made for an event's first branch or
            # a merge whose source an older export dropped, or one a partial export made
            # for a left-out branch it cannot fork from an exported one: deleted, with no
            # history; events and merges name it.
            if renamed:
                self.placeholders[old_id] = self.insert_placeholder(
                    old_id, None, forked_at, created_at, deleted_at
                )
                return
            self.placeholders[old_id] = self.insert_keeping_id(
                "rewind_branches",
                old_id,
                "name, parent_id, forked_at, created_at, deleted_at",
                (name, None, forked_at, created_at, deleted_at),
            )
            return
        if name == DEFAULT_BRANCH and parent is None:
            if forked_at != 0:
                raise self.fail(f"the root branch is forked at 0, not {forked_at}")
            # The target has no history, so its default branch becomes the file's.
            default = self.engine.branch(DEFAULT_BRANCH)
            self.branches[old_id] = default.id
            self.fork_points[default.id] = default.forked_at
            self.names[default.id], self.parents[default.id] = name, None
            self.root = default.id
            conn.execute(
                "UPDATE rewind_branches SET created_at = ? WHERE id = ?",
                (created_at, self.branches[old_id]),
            )
            self.engine.forget_cached()
            self.result.branches.append(name)
            return
        if parent is None:
            raise self.fail(f"branch {name!r} has no parent (only 'default' is a root)")
        if deleted_at is None and self.engine.live_branch_id(name) is not None:
            raise BranchExistsError(
                f"line {self.line_number}: branch {name!r} already exists in this database; "
                "nothing was imported",
                branch=name,
            )
        self.branches[old_id] = self.insert_keeping_id(
            "rewind_branches",
            old_id,
            "name, parent_id, forked_at, created_at, deleted_at",
            (name, self.branch_id(parent), forked_at, created_at, deleted_at),
        )
        new_id = self.branches[old_id]
        if left_out:
            self.left_out.add(new_id)
        if renamed and name != _placeholder_name(new_id):
            name = _placeholder_name(new_id)
            conn.execute("UPDATE rewind_branches SET name = ? WHERE id = ?", (name, new_id))
        self.fork_points[new_id] = forked_at
        if deleted_at is not None:
            self.deleted.add(new_id)
        self.names[new_id], self.parents[new_id] = name, self.branch_id(parent)
        self.engine.forget_cached()
        if deleted_at is None:
            self.result.branches.append(name)

    def apply_horizon(self, r: dict[str, Any]) -> None:
        """Where retention cut a branch's history, as ``retention.cut_history`` records it:
        after its fork point, at or before every fork of it, never on the default branch."""
        branch_id = self.branch_id(r.get("branch"))
        name = self.names[branch_id]
        if branch_id in self.horizons:
            raise self.fail(f"branch {name!r} has two horizons")
        if branch_id == self.root:
            raise self.fail(f"the {DEFAULT_BRANCH!r} branch's history is never pruned")
        kept_from = self.integer(r, "kept_from")
        if not self.fork_points[branch_id] < kept_from <= self.clock:
            raise self.fail(
                f"'kept_from' {kept_from} is not a version of branch {name!r} (after its fork "
                f"point {self.fork_points[branch_id]}, at most the file's clock {self.clock})"
            )
        own_from = self.fork_points[branch_id]
        for child, parent in self.parents.items():
            # (a fork at or below the branch's own fork point reads none of its rows:
            # ``Engine.row_lineage``, and retention cuts past it)
            if parent == branch_id and own_from < self.fork_points[child] < kept_from:
                raise self.fail(
                    f"'kept_from' {kept_from} is after version {self.fork_points[child]}, "
                    f"where branch {self.names[child]!r} forks from {name!r} (retention keeps "
                    "what forks read)"
                )
        policy = r.get("policy")
        if not isinstance(policy, str) or not policy.strip() or "\x00" in policy:
            raise self.fail(
                f"'policy' must say which retention cut the history (text), not {policy!r}"
            )
        try:
            policy.encode()
        except UnicodeEncodeError:
            raise self.fail("'policy' is not valid Unicode text") from None
        first_event = self.integer(r, "first_event", optional=True)
        event_hash = self.digest(r, "event_hash", optional=True)
        if (first_event is None) != (event_hash is None) or first_event == 0:
            raise self.fail(
                "'first_event' (its first kept event, at least 1) and 'event_hash' (the hash "
                "of the one before it) go together"
            )
        found = _Horizon(kept_from, self.digest(r, "rows_hash"), first_event, event_hash)
        found.line = self.line_number
        self.engine.conn.execute(
            "INSERT INTO rewind_horizons (branch_id, kept_from, policy, pruned_at, "
            "previous_hash, rows_hash, first_event, event_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                branch_id,
                kept_from,
                policy,
                self.timestamp(r, "pruned_at"),
                self.digest(r, "previous_hash", optional=True),
                found.rows_hash,
                first_event,
                event_hash,
            ),
        )
        self.horizons[branch_id] = found
        self.engine.forget_cached()

    def apply_array(self, r: dict[str, Any]) -> None:
        old_id, base = self.integer(r, "id"), r.get("base")
        if old_id in self.arrays:
            raise self.fail(f"array {old_id} is defined twice")
        if isinstance(base, bool) or (base is not None and base not in self.arrays):
            raise self.fail(f"array {old_id} builds on array {base!r}, not defined before it")
        base_len = self.integer(r, "base_len")
        if base is None and base_len:
            raise self.fail(f"array {old_id} has no base, so its base_len is 0")
        if base is not None and base_len > self.lengths[self.arrays[base]]:
            raise self.fail(f"array {old_id} builds on more items than array {base} has")
        new_id = self.insert_keeping_id(
            "rewind_seqs",
            old_id,
            "base_id, base_len",
            (self._array(base) if base is not None else None, base_len),
        )
        self.arrays[old_id], self.lengths[new_id] = new_id, base_len
        inherited = [] if base is None else self.deepest[self.arrays[base]]
        self.deepest[new_id] = [point for point in inherited if point[0] < base_len]

    def apply_items(self, r: dict[str, Any]) -> None:
        items = r.get("items")
        if not isinstance(items, list):
            raise self.fail("'items' must be a list")
        array, start = self._array(r.get("array")), self.integer(r, "start")
        if start != self.lengths[array]:
            raise self.fail(f"items start at {start}, but the array has {self.lengths[array]}")
        deepest = self.deepest[array]
        for index, item in enumerate(items, start):
            self.value(item, f"item {index} of array {r.get('array')}")
            level = height(item) if isinstance(item, (dict, list)) else 0
            if not deepest or level > deepest[-1][1]:
                deepest.append((index, level, item))
        self.engine.arrays.append_items(array, start, [dumps(i) for i in items])
        self.lengths[array] += len(items)

    def _ref(self, value: Any, ref: Any) -> list[Any]:
        """An entry's reference to array items: a path to a null placeholder in the value
        (through objects), an array of the file, and no more items than it holds."""
        if not isinstance(ref, list) or len(ref) != 3 or not isinstance(ref[0], list):
            raise self.fail(f"an array reference is [path, array, length], not {ref!r}")
        path, old, _ = ref
        node = value
        for member in path:
            if not isinstance(member, str) or not isinstance(node, dict) or member not in node:
                raise self.fail(f"array path {path!r} does not lead into the value")
            node = node[member]
        if node is not None and node != {}:  # an array's place, or a shared object's
            raise self.fail(f"array path {path!r} does not end at a placeholder")
        array = self._array(old)
        length = self.integer({"length": ref[2]}, "length")
        if length > self.lengths[array]:
            raise self.fail(f"refers to {length} items of array {old}, which has fewer")
        # The items sit one level below the array, which sits at the path's depth: the
        # value's deepest item must fit there, as the API checks the whole value.
        below = [item for index, _, item in self.deepest[array] if index < length]
        if below:
            self.value(below[-1], f"an item of array {old} at {path!r}", depth=len(path) + 1)
        return [path, array, length]

    def _array(self, old: Any) -> int:
        if isinstance(old, bool) or old not in self.arrays:
            raise self.fail(f"refers to array {old!r}, which the file has not defined")
        return self.arrays[old]

    def apply_commit(self, r: dict[str, Any]) -> None:
        version, branch_id = self.integer(r, "version"), self.branch_id(r.get("branch"))
        last = self.last_commit
        if not last[0] < version <= self.clock:
            raise self.fail(
                f"commit {version} is repeated, out of version order or outside the file's clock"
            )
        if version <= self.fork_points[branch_id]:
            # Reads skip a branch's history at or below its fork point (Engine.row_lineage).
            raise self.fail(f"commit {version} is not after its branch's fork point")
        ts = self.timestamp(r, "ts")
        if ts < last[1]:
            # The API's clock never goes back (each commit is at least as late as the last).
            raise self.fail(f"commit {version} is timed before the commit before it")
        kept = self.horizons.get(branch_id)
        if kept is not None and version < kept.kept_from:
            raise self.fail(
                f"commit {version} is before its branch's horizon (its history is kept from "
                f"version {kept.kept_from}): retention removed it"
            )
        merge = r.get("merge_branch")
        merge_version = self.integer(r, "merge_version", optional=True)
        if (merge is None) != (merge_version is None) or (merge_version or 0) >= version:
            raise self.fail("a merge commit needs both merge_branch and a merge_version before it")
        merge_id = None
        if merge is not None:
            # (a placeholder, too: a database made by an import of an older partial export
            # holds one for each merge whose source that export dropped: ``repair_merges``)
            known = not isinstance(merge, bool) and merge in self.placeholders
            merge_id = self.placeholders[merge] if known else self.branch_id(merge)
        if merge_id == branch_id:
            raise self.fail(f"commit {version} merges its branch into itself")
        if merge_id is None and branch_id in self.left_out:
            raise self.fail(
                f"commit {version} is not a merge, but its branch stands in for one the "
                "export left out, which keeps only its merges (as links)"
            )
        self.engine.conn.execute(
            "INSERT INTO rewind_commits (version, branch_id, ts, trigger, message, "
            "merge_branch_id, merge_version) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                version,
                branch_id,
                ts,
                self.optional_text(r, "trigger"),
                self.optional_text(r, "message"),
                merge_id,
                merge_version,
            ),
        )
        self.commits[version], self.stamps[version] = branch_id, ts
        if merge_id is None:
            self.rowless[version] = self.line_number
        self.commit_order.append(version)
        self.last_commit = (version, ts)

    def apply_entry(self, r: dict[str, Any]) -> None:
        kind = {name: code for code, name in _KINDS.items()}.get(r.get("kind"))  # type: ignore[arg-type]
        if kind is None:
            raise self.fail(f"unknown entry kind {r.get('kind')!r}")
        space = r.get("space")
        if not isinstance(space, str) or space not in _SPACES:
            raise self.fail(f"unknown space {space!r}")
        branch_id = self.branch_id(r.get("branch"))
        key = self.text(r, "key", "key")
        version, below = self.row_version(r, branch_id)
        kept = self.horizons.get(branch_id)
        if kept is not None and below:
            if (space, key) in kept.keys:
                raise self.fail(
                    f"key {key!r} ({space}) has two entries below its branch's horizon "
                    "(retention keeps only the newest)"
                )
            kept.keys.add((space, key))
        if version < self.entry_version:
            raise self.fail(f"an entry of version {version} after entries of a later version")
        if version > self.entry_version:
            self.entry_version, self.entry_slots = version, set()
        if (branch_id, space, key) in self.entry_slots:
            raise self.fail(f"key {key!r} ({space}) is written twice in version {version}")
        self.entry_slots.add((branch_id, space, key))
        body: bytes | None = None
        refs: bytes | None = None
        trigger = self.optional_text(r, "trigger")
        if kind != KIND_JSON and r.get("arrays"):
            raise self.fail(f"a {r['kind']} entry has no arrays")
        if kind != KIND_ERASED and (r.get("digest") is not None or r.get("erased_at") is not None):
            raise self.fail(f"a {r['kind']} entry has no digest and no erased_at (erased ones do)")
        if kind == KIND_JSON:
            self.value(r["value"], "value")
            body = dumps(r["value"])
            arrays = r.get("arrays")
            if arrays:
                if not isinstance(arrays, list):
                    raise self.fail(f"'arrays' must be a list, not {arrays!r}")
                checked = [self._ref(r["value"], ref) for ref in arrays]
                if len({tuple(ref[0]) for ref in checked}) < len(checked):
                    raise self.fail("two array references share one path")
                refs = dumps(checked)
        elif kind == KIND_BYTES:
            if not _SPACES[space]:
                raise self.fail(f"the {space!r} space holds JSON values, not bytes")
            body = base64.b64decode(r["value"], validate=True)
        elif kind == KIND_ERASED:
            # As ``erasure.erase_key`` leaves it: the digest its commit's hash covers, and
            # the version that erased it in place of its trigger; no value.
            if r.get("value") is not None or trigger is not None:
                raise self.fail("an erased entry keeps no value and no trigger")
            body = bytes.fromhex(self.digest(r, "digest"))
            trigger = _commit_hash.erased_trigger(self.erased_at(r, version))
        elif r.get("value") is not None:
            raise self.fail("a deleted entry has no value")
        if kept is not None and below:
            # What the horizon's rows_hash covers, with the file's array ids.
            file_refs = dumps(r["arrays"]) if refs is not None else None
            kept.rows.append((version, space, key, kind, body, file_refs, trigger))
        self.engine.conn.execute(
            "INSERT INTO rewind_entries (branch_id, space, key, version, kind, body, refs, "
            "trigger) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (branch_id, space, key, version, kind, body, refs, trigger),
        )

    def row_version(self, r: dict[str, Any], branch_id: int) -> tuple[int, bool]:
        """An entry's or event's version, and whether it is below the branch's horizon: a
        commit of its branch, or, below the horizon, one whose commit retention removed
        (the state kept as of the cut, the log a branch with forks keeps): after the fork
        point, and a version no other branch committed."""
        if branch_id in self.left_out:
            raise self.fail(
                f"branch {self.names[branch_id]!r} stands in for one the export left out: "
                "it has no entries and no events"
            )
        kept = self.horizons.get(branch_id)
        version = self.integer(r, "version")
        if kept is None or version >= kept.kept_from:
            version = self.version_of(r, branch_id)
            self.rowless.pop(version, None)
            return version, False
        if version <= self.fork_points[branch_id]:
            raise self.fail(f"version {version} is not after its branch's fork point")
        if version in self.commits:
            raise self.fail(f"version {version} is a commit of another branch")
        return int(version), True

    def apply_event(self, r: dict[str, Any]) -> None:
        engine = self.engine
        record = engine.branch_by_id(self.branch_id(r.get("branch")))
        (version, below), sequence = self.row_version(r, record.id), self.integer(r, "sequence")
        event_type = self.text(r, "event_type", "event_type")
        erased = None if r.get("erased_at") is None else self.erased_at(r, 1)
        if erased is None:
            self.value(r["payload"], "payload")
            payload = dumps(r["payload"])
        elif r.get("payload") is not None:
            raise self.fail("an erased event has no payload")
        else:
            payload = erased_payload(erased)
        ts = self.timestamp(r, "ts")
        if below:
            self.removed_commit_time(record.id, version, ts)
        elif ts != self.stamps[version]:
            # An event is stamped with its commit's time (appends and merges alike).
            raise self.fail(f"event 'ts' {ts} is not its commit's ({self.stamps[version]})")
        last = self.log_end(record, version)
        expected = last[0] + 1 if last else 0
        if erased is None:
            digest = event_hash(last[1] if last else "", sequence, event_type, version, payload)
        else:
            # An erased event's hash is taken as stored (``events.chain_break``): the
            # events after it chain on it.
            digest = self.digest(r, "hash")
        if sequence != expected or digest != r.get("hash"):
            raise self.fail(
                f"broken hash chain: event {sequence} of branch {record.name!r} does not "
                "follow the events before it (edited, missing or reordered)"
            )
        origin = self._origin(r.get("origin"), ts, erased)
        if erased is not None and erased < version and origin[0] is None:
            raise self.fail(
                f"event {sequence} is erased at version {erased}, before it was appended "
                f"(version {version}): only a merge's copy of an erased event can be"
            )
        engine.conn.execute(
            "INSERT INTO rewind_events (branch_id, sequence, version, event_type, payload, ts, "
            "hash, origin_branch_id, origin_sequence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.id, sequence, version, event_type, payload, ts, digest, *origin),
        )
        self.log_ends[record.id] = (sequence, digest, version)

    def removed_commit_time(self, branch_id: int, version: int, ts: int) -> None:
        """An event below a horizon carries the time of its commit, which retention
        removed: one time per version, between the times of the commits around it."""
        at = bisect.bisect_left(self.commit_order, version)
        low = self.stamps[self.commit_order[at - 1]] if at else 0
        high = self.stamps[self.commit_order[at]] if at < len(self.commit_order) else self.now
        known = self.removed_stamps.setdefault((branch_id, version), ts)
        if not low <= ts <= high or known != ts:
            raise self.fail(
                f"event 'ts' {ts} is not the time of a commit at version {version} (the "
                f"commits around it were made from {low} to {high}, and one version's events "
                "share one time)"
            )

    def log_end(self, record: Any, version: int) -> tuple[int, str] | None:
        """(sequence, hash) of the newest event the branch's log holds at ``version``, as
        ``verify`` walks it: where retention removed a branch's own oldest events, its
        log goes on from its horizon's ``first_event`` (chained on ``event_hash``)."""
        for branch_id, cap in self.engine.row_lineage(record, version):
            known = self.log_ends.get(branch_id)
            if branch_id == record.id and known is not None and known[2] <= cap:
                return known[0], known[1]  # events come in version order
            row = self.engine.conn.fetchone(
                "SELECT sequence, hash FROM rewind_events WHERE branch_id = ? AND version <= ? "
                "ORDER BY version DESC, sequence DESC LIMIT 1",
                (branch_id, cap),
            )
            if row is not None:
                return int(row[0]), str(row[1])
            kept = self.horizons.get(branch_id)
            if kept is not None and kept.first_event is not None and kept.event_hash:
                return kept.first_event - 1, kept.event_hash
        return None

    def _origin(
        self, origin: Any, ts: int, erased: int | None = None
    ) -> tuple[int | None, int | None]:
        """The event a carried event copies, in this database's branch ids. The branch it
        was first appended to may be outside a partial export: it then gets a placeholder
        (a deleted branch), so copies of one event still know they are one event. A purged
        branch keeps its row but not its events. Copies of one event are erased together
        (``events.erase``), so a copy is erased exactly when its first home is."""
        if origin is None:
            return None, None
        if not isinstance(origin, list) or len(origin) != 2:
            raise self.fail(f"'origin' must be [branch id, sequence], not {origin!r}")
        old, sequence = origin[0], self.integer({"sequence": origin[1]}, "sequence")
        if isinstance(old, bool) or not isinstance(old, int):
            raise self.fail(f"'origin' must be [branch id, sequence], not {origin!r}")
        if old in self.branches:
            home = self.engine.conn.fetchone(
                "SELECT payload FROM rewind_events WHERE branch_id = ? AND sequence = ?",
                (self.branches[old], sequence),
            )
            kept = self.horizons.get(self.branches[old])
            pruned = (
                kept is not None and kept.first_event is not None and sequence < kept.first_event
            )
            if home is None and self.branches[old] not in self.deleted and not pruned:
                # (retention cut it from its first home: its copies are all that is left)
                raise self.fail(f"'origin' names event {sequence} of a branch that lacks it")
            if home is not None and erased_at(home[0]) != erased:
                raise self.fail(
                    f"the copy of event {sequence} is erased at {erased}, its first home at "
                    f"{erased_at(home[0])} (copies are erased together)"
                )
            return self.branches[old], sequence
        placeholder = self.placeholders.get(old)
        if placeholder is None:
            placeholder = self.placeholders[old] = self.insert_placeholder(old, None, 0, ts, ts)
        return placeholder, sequence

    def refuse_rowless(self) -> None:
        """Every commit writes an entry or an event of its branch, or is a merge: the
        store finds a branch's newest commit through those rows (``_clock.previous_hash``,
        and retention's walks), so in a file whose merges all name their source
        (``merge_sources``) a commit that is neither was edited or lost its rows."""
        if self.rowless:
            version, line = min(self.rowless.items())
            raise self.fail(
                f"commit {version} of branch {self.names[self.commits[version]]!r} writes "
                "no entry and no event and is not a merge (every commit writes one or "
                "merges a branch): the file was edited or is incomplete",
                line=line,
            )

    def repair_merges(self) -> None:
        """An export of an older rewinddb left out the source of a merge from a branch it
        did not export (``merge_branch`` null): in such a file a commit that wrote nothing
        can only be one of those merges. Each keeps its link to a placeholder of its own
        (``insert_placeholder``, at the merge's time), merged at the version before it, as
        a merge records its source, since the file does not say which branch it was; so
        every commit writes a row or is a merge here too (``refuse_rowless``)."""
        conn = self.engine.conn
        for version in sorted(self.rowless):
            ts = self.stamps[version]
            placeholder = self.insert_placeholder(0, None, 0, ts, ts)
            conn.execute(
                "UPDATE rewind_commits SET merge_branch_id = ?, merge_version = ? "
                "WHERE version = ?",
                (placeholder, version - 1, version),
            )

    def finish(self) -> None:
        """Keep the original clock (versions the file left out stay in the past), check
        and rehash the state kept below each horizon, and give the imported commits their
        hashes, from the rows as imported (their branch and array ids are this database's,
        so the hashes are too; a pruned branch's chain starts at its horizon's
        ``previous_hash``)."""
        conn = self.engine.conn
        for branch_id, kept in self.horizons.items():
            if rows_hash(kept.rows) != kept.rows_hash:
                raise self.fail(
                    f"the entries of branch {self.names[branch_id]!r} kept below its horizon "
                    "do not match its rows_hash (edited, added or removed)",
                    line=kept.line,
                )
            if kept.first_event is not None:
                parent = self.parents[branch_id]
                inherited = (
                    self.log_end(self.engine.branch_by_id(parent), self.fork_points[branch_id])
                    if parent is not None
                    else None
                )
                if kept.first_event < (inherited[0] if inherited else -1) + 2:
                    raise self.fail(
                        f"'first_event' {kept.first_event} is not after the events branch "
                        f"{self.names[branch_id]!r} inherits and one of its own",
                        line=kept.line,
                    )
            conn.execute(
                "UPDATE rewind_horizons SET rows_hash = ? WHERE branch_id = ?",
                (rows_hash(conn.fetchall(BASE_ROWS, (branch_id, kept.kept_from))), branch_id),
            )
        if self.merge_sources_kept:
            self.refuse_rowless()
        else:
            self.repair_merges()
        if self.clock > max(self.commits, default=0):
            conn.execute(
                "INSERT INTO rewind_meta (key, value) VALUES ('clock_floor', ?)",
                (str(self.clock),),
            )
        if self.commits:
            _commit_hash.reseal(conn, after=min(self.commits) - 1)
        self.engine.forget_cached()


def _broke_a_constraint(error: BaseException) -> bool:
    """Whether a database error (or the one it wraps) is a constraint the records broke
    (the file's fault), not a failure of the storage."""
    seen: BaseException | None = error
    while seen is not None:
        if any(cls.__name__ == "IntegrityError" for cls in type(seen).__mro__):
            return True
        seen = seen.__cause__
    return False


def import_jsonl(
    engine: Engine, lines: Iterable[bytes], *, progress: Progress | None = None
) -> TransferCounts:
    """Rebuild the history in ``lines`` (an export) in this database, all or nothing.

    The database must have no history yet (no commits): versions and hashes are kept.
    """
    given: object = lines
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise RewindError(
            "import reads an export: an open binary file or an iterable of its lines",
            code="invalid.import",
        )
    importer = _Importer(engine)
    with engine.conn.write():
        if engine.clock() != 0:
            raise RewindError(
                f"import needs a database with no history yet (this one is at version "
                f"{engine.clock()}); import into a new directory",
                code="conflict.import",
            )
        header_seen = end_seen = False
        for line in lines:
            importer.line_number += 1
            if not isinstance(line, (bytes, str)):
                raise importer.fail(f"a line must be bytes or text, not {type(line).__name__}")
            if progress is not None:
                progress.advance(len(line))
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as error:
                raise importer.fail(f"not JSON ({error})") from None
            if not isinstance(record, dict):
                raise importer.fail("a record must be a JSON object")
            if end_seen:
                raise importer.fail("records after the end record")
            if not header_seen:
                importer.header(record)
                header_seen = True
            elif record.get("type") == "end":
                counts = dict(importer.result.counts)
                if "horizon" not in (record.get("counts") or {}) and not counts["horizon"]:
                    del counts["horizon"]  # format 1 had no horizons
                if record.get("counts") != counts:
                    raise importer.fail(
                        f"the end record counts {record.get('counts')} but the file holds "
                        f"{importer.result.counts}"
                    )
                end_seen = True
                importer.finish()
            else:
                importer.apply(record)
        if not end_seen:
            raise ImportFormatError(
                "the file ends before its end record (truncated?); nothing was imported"
                if header_seen
                else "the file is empty; nothing was imported"
            )
    if progress is not None:
        progress.close()
    return importer.result
