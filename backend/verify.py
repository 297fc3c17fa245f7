"""``db.verify()``: check the whole stored history, and say where it first goes wrong.

Four things are recomputed or walked, each from the rows as stored:

- **lineage**: every branch's parent exists and the parents never loop back;
- **commits**: the hash chain over commits (``_commit_hash``): each commit's hash is
  recomputed from its own fields and the entries and events it wrote, chained on the
  stored hash of the commit before it, so an edited, added or removed row, or a removed
  commit, shows at that commit; rows whose commit is missing are reported too;
- **event logs**: each event's chained hash, and no gap in a log's sequence numbers;
- **shared lists**: each list item's prefix hash, so a changed item shows at every entry
  that reads it.

Each problem belongs to a branch at a version; a branch also sees its ancestors' problems
up to its fork point, so the report gives every branch its first bad point.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _commit_hash
from ._arrays import prefix_hash
from ._horizons import BASE_ROWS, all_horizons, log_start, rows_hash
from ._values import loads
from .events import chain_break

if TYPE_CHECKING:
    from ._engine import Engine


@dataclass(frozen=True, order=True)
class Problem:
    """One thing found wrong: on branch ``branch`` (None: the database as a whole) at
    ``version`` (None: not tied to one)."""

    version: int | None
    branch: str | None
    what: str

    def __str__(self) -> str:
        where = " ".join(
            part
            for part in (
                f"branch {self.branch!r}" if self.branch else None,
                f"at version {self.version}" if self.version is not None else None,
            )
            if part
        )
        return f"{where}: {self.what}" if where else self.what


@dataclass(frozen=True)
class BranchCheck:
    """A branch's result: ``first_bad`` is the earliest problem it sees (its own or an
    ancestor's before its fork point), None when its whole history checks out."""

    branch: str
    first_bad: Problem | None

    @property
    def ok(self) -> bool:
        return self.first_bad is None


@dataclass(frozen=True)
class DatabaseVerification:
    """What ``Database.verify()`` found."""

    branches: list[BranchCheck]
    problems: list[Problem]
    checked: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        counts = ", ".join(f"{n:,} {what}" for what, n in self.checked.items())
        if self.ok:
            return f"ok: {counts} checked"
        lines = [f"NOT OK: {len(self.problems)} problem(s) in {counts}"]
        for check in self.branches:
            if check.first_bad is not None:
                lines.append(f"  {check.branch}: first bad point: {check.first_bad}")
        lines += [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines)


#: A commit that writes nothing and is not a merge, whose hash is as stored: no commit
#: rewinddb makes is one (every commit writes an entry or an event of its branch, or is a
#: merge, and the store finds a branch's newest commit through those rows:
#: ``_clock.previous_hash``). An import of a partial export by a rewinddb before merge
#: sources were kept left one for each merge whose source the export dropped.
_WRITES_NOTHING = (
    "the commit writes no entry and no event and is not a merge (every commit rewinddb "
    "makes does one or is the other; an older rewinddb's import of a partial export left "
    "each merge whose source that export dropped so): the branch's next commit chains on "
    "the commit before it, and its hash does not verify. Reads are right; to repair, "
    "export the database (rewinddb export) and import the file into a new one, where "
    "this commit becomes a merge of a placeholder"
)


def _hash_on(conn: Any, version: int, previous: str | None) -> str:
    """The hash commit ``version`` has when it chains on ``previous``."""
    commit = conn.fetchone(
        "SELECT version, branch_id, ts, trigger, message, merge_branch_id, merge_version "
        "FROM rewind_commits WHERE version = ?",
        (version,),
    )
    branch_id = commit[1]
    entries = [
        _commit_hash.stored_entry_digest(*row)
        for row in conn.fetchall(_commit_hash._ENTRIES, (branch_id, version, version))
    ]
    events = [
        _commit_hash.event_part(*row)
        for row in conn.fetchall(_commit_hash._EVENTS, (branch_id, version))
    ]
    return _commit_hash.commit_hash(previous, tuple(commit), entries, events)


def _as_bytes(value: Any) -> bytes | None:
    return bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else None


class _Check:
    def __init__(self, engine: Engine) -> None:
        self.conn = engine.conn
        self.problems: list[Problem] = []
        self.checked: dict[str, int] = {}
        rows = self.conn.fetchall("SELECT id, name, parent_id, forked_at FROM rewind_branches")
        self.names: dict[int, str] = {row[0]: str(row[1]) for row in rows}
        self.parents: dict[int, tuple[Any, Any]] = {row[0]: (row[2], row[3]) for row in rows}
        #: Branch id -> its lineage as (branch id, cap) steps, None where it is broken.
        self.lineages: dict[int, list[tuple[int, int]] | None] = {}
        #: Where retention cut branches' histories (their chains start there).
        self.horizons = all_horizons(self.conn)

    def add(self, branch_id: int | None, version: int | None, what: str) -> None:
        name = self.names.get(branch_id) if branch_id is not None else None
        self.problems.append(Problem(version, name, what))

    def lineage(self) -> None:
        big = 2**63 - 1
        for branch_id in self.names:
            steps, seen, step, cap = [], set(), branch_id, big
            broken = None
            while step is not None:
                if step in seen:
                    broken = "its lineage loops back on itself (a branch-parent cycle)"
                    break
                seen.add(step)
                if step not in self.parents:
                    broken = f"its lineage names branch id {step}, which does not exist"
                    break
                steps.append((step, cap))
                parent, forked_at = self.parents[step]
                if parent is not None:
                    if not isinstance(forked_at, int) or forked_at < 0:
                        broken = f"its fork point is not a version: {forked_at!r}"
                        break
                    cap = min(cap, forked_at)
                step = parent
            if broken is not None:
                self.add(branch_id, None, broken)
            self.lineages[branch_id] = None if broken else steps
        self.checked["branches"] = len(self.names)

    def commits(self) -> None:
        count = 0
        rowless = self.rowless()
        # branch id -> (the version of a commit that wrote nothing, the hash the branch's
        # next commit chains on instead: its newest commit before that one)
        skipped: dict[Any, tuple[int, str | None]] = {}
        chained = _commit_hash.chain_starts(self.conn)  # branch id -> its last stored hash
        for found in _commit_hash.recompute(self.conn, chain_on_stored=True):
            count += 1
            if found.branch_id not in self.names:
                self.add(None, found.version, f"commit {found.version} names no branch")
            elif found.stored is None:
                self.add(found.branch_id, found.version, "the commit has no hash")
            elif found.stored != found.computed:
                cause = skipped.get(found.branch_id)
                if cause is not None and found.stored == _hash_on(
                    self.conn, found.version, cause[1]
                ):
                    self.add(
                        found.branch_id,
                        found.version,
                        f"its hash chains on the branch's commit before version {cause[0]}, "
                        f"past commit {cause[0]}, which writes nothing and is not a merge "
                        f"(see version {cause[0]}): export and import the database to repair it",
                    )
                else:
                    self.add(
                        found.branch_id,
                        found.version,
                        "its hash does not match its rows: an entry or event of it was "
                        "changed, added or removed, or an earlier commit was removed",
                    )
            if found.version in rowless and found.stored == found.computed:
                self.add(found.branch_id, found.version, _WRITES_NOTHING)
                if found.branch_id not in skipped:
                    skipped[found.branch_id] = (found.version, chained.get(found.branch_id))
            else:
                skipped.pop(found.branch_id, None)
            chained[found.branch_id] = found.stored
        self.checked["commits"] = count
        for table in ("rewind_entries", "rewind_events"):
            orphans = self.conn.fetchall(
                f"SELECT DISTINCT branch_id, version FROM {table} row WHERE NOT EXISTS ("
                "SELECT 1 FROM rewind_commits c WHERE c.version = row.version "
                "AND c.branch_id = row.branch_id) ORDER BY version"
            )
            what = table.removeprefix("rewind_")
            for branch_id, version in orphans:
                kept = self.horizons.get(branch_id)
                if kept is not None and version < kept.kept_from:
                    continue  # the state kept at a horizon: its rows_hash covers it
                self.add(branch_id, version, f"{what} of a commit that does not exist")
        for branch_id, kept in self.horizons.items():
            digest = rows_hash(self.conn.fetchall(BASE_ROWS, (branch_id, kept.kept_from)))
            if digest != kept.rows_hash:
                self.add(
                    branch_id,
                    kept.kept_from,
                    "the state kept where retention cut its history does not match its hash: "
                    "an entry below the cut was changed, added or removed",
                )

    def rowless(self) -> set[int]:
        """The commits that write no entry and no event and are not merges (a range of
        one version: SQLite seeks the (branch, version) indexes for it)."""
        return {
            int(row[0])
            for row in self.conn.fetchall(
                "SELECT c.version FROM rewind_commits c WHERE c.merge_branch_id IS NULL "
                "AND NOT EXISTS (SELECT 1 FROM rewind_entries e WHERE e.branch_id = "
                "c.branch_id AND e.version >= c.version AND e.version <= c.version) "
                "AND NOT EXISTS (SELECT 1 FROM rewind_events v WHERE v.branch_id = "
                "c.branch_id AND v.version = c.version)"
            )
        }

    def events(self) -> None:
        count = 0
        for branch_id, steps in self.lineages.items():
            if steps is None:
                continue
            previous, expected = "", 0
            for step, cap in reversed(steps):
                previous, expected = log_start(self.horizons.get(step), previous, expected)
                rows = self.conn.fetchall(
                    "SELECT sequence, event_type, version, payload, hash FROM rewind_events "
                    "WHERE branch_id = ? AND version <= ? ORDER BY version, sequence",
                    (step, cap),
                )
                bad = None
                for row in rows:
                    count += step == branch_id
                    reason = chain_break(previous, expected, row)
                    if reason == "sequence gap":
                        bad = (row[2], f"event {expected} is missing from the log")
                    elif reason is not None:
                        bad = (row[2], f"event {row[0]}'s hash does not match it")
                    if bad is not None:
                        break
                    previous, expected = str(row[4]), expected + 1
                if bad is not None:
                    if step == branch_id:  # an ancestor's log is reported as its own
                        self.add(branch_id, *bad)
                    break
        self.checked["events"] = count

    def lists(self) -> None:
        """Recompute every shared array's prefix hashes; report each entry reading a
        damaged one."""
        bases = {
            row[0]: (row[1], row[2])
            for row in self.conn.fetchall("SELECT id, base_id, base_len FROM rewind_seqs")
        }
        first_bad: dict[int, int] = {}  # array id -> first index that fails
        hashes: dict[tuple[int, int], bytes] = {}  # (array id, index) -> its prefix hash

        def hash_at(seq: Any, idx: int) -> bytes | None:
            """The checked prefix hash of item ``idx`` as array ``seq`` reads it."""
            seen = set()
            while seq in bases and seq not in seen:
                seen.add(seq)
                base, base_len = bases[seq]
                if base is None or idx >= base_len:
                    return hashes.get((seq, idx))
                seq = base
            return None

        count = 0
        for seq in sorted(bases):  # a base array is always created before its users
            base, base_len = bases[seq]
            start = base_len if base is not None else 0
            previous = hash_at(base, start - 1) if start else b""
            if previous is None:  # what it builds on is damaged, or not there
                first_bad[seq] = start
                continue
            expected = start
            for idx, item, stored in self.conn.fetchall(
                "SELECT idx, item, prefix_hash FROM rewind_seq_items WHERE seq_id = ? ORDER BY idx",
                (seq,),
            ):
                count += 1
                raw = _as_bytes(item)
                if idx != expected or raw is None:
                    first_bad[seq] = expected
                    break
                previous = prefix_hash(previous, raw)
                if _as_bytes(stored) != previous:
                    first_bad[seq] = idx
                    break
                hashes[(seq, idx)] = previous
                expected += 1
        self.checked["list items"] = count
        if not first_bad:
            return
        for branch_id, version, key, refs in self.conn.fetchall(
            "SELECT branch_id, version, key, refs FROM rewind_entries WHERE refs IS NOT NULL"
        ):
            for seq, length in _refs(refs):
                if _reads_damage(seq, length, bases, first_bad):
                    self.add(branch_id, version, f"key {key!r} reads a list item that changed")
                    break

    def report(self) -> DatabaseVerification:
        by_branch: dict[int | None, list[Problem]] = defaultdict(list)
        ids = {name: branch_id for branch_id, name in self.names.items()}
        for problem in self.problems:
            by_branch[ids.get(problem.branch) if problem.branch else None].append(problem)
        checks = []
        for branch_id, name in sorted(self.names.items(), key=lambda item: item[1]):
            steps = self.lineages.get(branch_id)
            seen = (
                by_branch[branch_id]
                if steps is None
                else [
                    problem
                    for step, cap in steps
                    for problem in by_branch[step]
                    if problem.version is None or problem.version <= cap or step == branch_id
                ]
            )
            first = min(seen, key=lambda p: (p.version is not None, p.version or 0), default=None)
            checks.append(BranchCheck(name, first))
        return DatabaseVerification(checks, sorted(self.problems, key=_order), self.checked)


def _order(problem: Problem) -> tuple[int, str, str]:
    return (
        problem.version if problem.version is not None else -1,
        problem.branch or "",
        problem.what,
    )


def _refs(refs: Any) -> list[tuple[int, int]]:
    try:
        return [(int(seq), int(length)) for _, seq, length in loads(bytes(refs))]
    except (TypeError, ValueError):
        return [(-1, 1)]  # not readable: the entry reads something damaged


def _reads_damage(
    seq: int, length: int, bases: dict[int, tuple[Any, Any]], first_bad: dict[int, int]
) -> bool:
    """Reading ``length`` items of array ``seq`` (through its bases) meets a damaged one."""
    seen = set()
    while True:
        if seq not in bases or seq in seen:
            return True
        seen.add(seq)
        if first_bad.get(seq, length) < length:
            return True
        base, base_len = bases[seq]
        if base is None or not base_len:
            return False
        seq, length = base, min(length, base_len)


def verify(engine: Engine) -> DatabaseVerification:
    """Check the database's whole history (see the module's docstring)."""
    with engine.conn.snapshot():
        check = _Check(engine)
        check.lineage()
        check.commits()
        check.events()
        check.lists()
        return check.report()
