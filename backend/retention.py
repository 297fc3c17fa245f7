"""Retention: history bounded by policies you set, and space that comes back.

- ``db.retain(pattern, keep_last=, max_age=, keep_pinned=True)`` stores a policy for the
  branches whose names match ``pattern`` (a glob: ``lg/*``); ``db.branches.pin(name)``
  exempts a branch from deletion and, with ``keep_pinned``, from its policies.
- ``db.prune(branch, before=...)`` cuts one branch's history once: versions before the cut
  (a version, a time, or ``keep_last`` / ``max_age``) are removed, except what the state
  as of the cut needs (each key's newest entry at or below it). Reads ``as_of`` any kept
  version answer exactly as before; a read before the cut raises ``history_unavailable``
  naming the retention. The branch's event log keeps its events from the cut on (their
  sequence numbers do not change). A branch's newest version, whatever a fork of it at
  any depth reads (its state as of each fork point, and its whole log: a branch with
  forks keeps its events), and the merge commits later merges find their base through
  (a cut stops at the oldest one still needed) are never removed.
- ``db.gc(dry_run=False)`` applies every policy, purges deleted branches (``erasure``)
  and gives the space back (``Connection.reclaim``), each step a short write transaction
  of its own, so agents writing meanwhile wait at most one step. A dry run makes the same
  steps and rolls each back: its report counts exactly what a run would remove.

Where a branch's history was cut is its horizon (``_horizons``): the hash chains start
there, so ``verify()`` still proves every kept row unaltered.
"""

from __future__ import annotations

import contextlib
import fnmatch
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

from ._commit_hash import KIND_ERASED
from ._connection import PAUSE
from ._engine import DEFAULT_BRANCH, BranchRecord, Engine, check_name, now_micros
from ._horizons import BASE_ROWS, bump_generation, rows_hash
from .erasure import Sweep, Tree, purge_deleted, purged_name, unread_values
from .errors import InvalidInputError, ReadOnlyError, RewindError
from .models import ErasureReceipt, counted, to_micros

#: How many of a branch's versions one write transaction of ``gc`` removes at most.
STEP_VERSIONS = 500

_POLICY_PREFIX = "retention/"
_PIN_PREFIX = "pin/"


@dataclass(frozen=True)
class RetentionPolicy:
    """Keep, on branches matching ``pattern``, the newest ``keep_last`` versions and those
    younger than ``max_age`` (a version goes only when both would let it go)."""

    pattern: str
    keep_last: int | None = None
    max_age: timedelta | None = None
    keep_pinned: bool = True

    def __str__(self) -> str:
        return f"retain({', '.join([repr(self.pattern), *_terms(self.keep_last, self.max_age)])})"


def _terms(keep_last: int | None, max_age: timedelta | None) -> list[str]:
    """A policy's terms as they read in messages (``keep_last=10``, ``max_age=30 days``)."""
    terms = []
    if keep_last is not None:
        terms.append(f"keep_last={keep_last}")
    if max_age is not None:
        terms.append(f"max_age={_age_text(max_age)}")
    return terms


def _age_text(age: timedelta) -> str:
    if age.total_seconds() % 86400 == 0:
        return f"{int(age.total_seconds() // 86400)} days"
    return f"{age.total_seconds():g} s"


@dataclass
class GcReport:
    """What ``gc`` removed (or, with ``dry_run``, would remove)."""

    dry_run: bool
    #: Deleted branches whose rows were removed.
    branches: int = 0
    #: Versions (commits) removed, by purges and by retention.
    versions: int = 0
    entries: int = 0
    events: int = 0
    list_items: int = 0
    #: The bytes of the values, payloads and items removed (what the rows held).
    bytes: int = 0
    #: Branch name -> the first version its history now keeps (branches cut by policies).
    horizons: dict[str, int] = field(default_factory=dict)
    #: The database file's size before and after (SQLite; None elsewhere or in a dry run).
    file_bytes_before: int | None = None
    file_bytes_after: int | None = None
    #: The longest a single step held the write lock, in seconds.
    longest_step: float = 0.0

    def add(self, receipt: ErasureReceipt, removed_bytes: int) -> None:
        self.branches += receipt.branches
        self.versions += receipt.commits
        self.entries += receipt.entries
        self.events += receipt.events
        self.list_items += receipt.list_items
        self.bytes += removed_bytes

    def __str__(self) -> str:
        verb = "would free" if self.dry_run else "freed"
        counts = ", ".join(
            counted(
                [
                    (self.versions, "version", "versions"),
                    (self.branches, "deleted branch", "deleted branches"),
                    (self.entries, "entry", "entries"),
                    (self.events, "event", "events"),
                    (self.list_items, "list item", "list items"),
                ]
            )
        )
        line = f"{verb} {counts} ({self.bytes:,} bytes of data)"
        if self.file_bytes_before is not None and self.file_bytes_after is not None:
            line += f"; file {self.file_bytes_before:,} -> {self.file_bytes_after:,} bytes"
        return line


class _RolledBack(Exception):
    """Ends a dry run's step: its transaction rolls back."""


def check_policy(pattern: Any, keep_last: Any, max_age: Any, keep_pinned: Any) -> RetentionPolicy:
    """The policy, or ``invalid.retention`` saying what is wrong with it."""

    def bad(message: str) -> InvalidInputError:
        return InvalidInputError(message, code="invalid.retention")

    if not isinstance(pattern, str) or not pattern or "\x00" in pattern:
        raise bad(f"the pattern must be a non-empty glob of branch names, not {pattern!r}")
    if fnmatch.fnmatchcase(DEFAULT_BRANCH, pattern):
        raise bad(
            f"pattern {pattern!r} matches the default branch, whose history is never pruned; "
            "match the branches your agents write (for example 'lg/*')"
        )
    if keep_last is not None and (
        isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 1
    ):
        raise bad(f"keep_last must be an int of at least 1, not {keep_last!r}")
    if max_age is not None and (not isinstance(max_age, timedelta) or max_age <= timedelta(0)):
        raise bad(
            f"max_age must be a positive timedelta (a negative one is in the future), "
            f"not {max_age!r}"
        )
    if keep_last is None and max_age is None:
        raise bad("give keep_last, max_age or both: a policy that keeps everything does nothing")
    if not isinstance(keep_pinned, bool):
        raise bad(f"keep_pinned must be True or False, not {keep_pinned!r}")
    return RetentionPolicy(pattern, keep_last, max_age, keep_pinned)


def set_policy(engine: Engine, policy: RetentionPolicy) -> None:
    value = orjson.dumps(
        {
            "keep_last": policy.keep_last,
            "max_age": None if policy.max_age is None else policy.max_age.total_seconds(),
            "keep_pinned": policy.keep_pinned,
        }
    ).decode()
    key = _POLICY_PREFIX + policy.pattern
    with engine.conn.write():
        engine.conn.execute("DELETE FROM rewind_meta WHERE key = ?", (key,))
        engine.conn.execute("INSERT INTO rewind_meta (key, value) VALUES (?, ?)", (key, value))


def drop_policy(engine: Engine, pattern: str) -> bool:
    with engine.conn.write():
        found = engine.conn.fetchone(
            "SELECT 1 FROM rewind_meta WHERE key = ?", (_POLICY_PREFIX + pattern,)
        )
        engine.conn.execute("DELETE FROM rewind_meta WHERE key = ?", (_POLICY_PREFIX + pattern,))
        return found is not None


def policies(engine: Engine) -> list[RetentionPolicy]:
    """The stored policies, by pattern."""
    found = []
    for key, value in engine.conn.fetchall(
        "SELECT key, value FROM rewind_meta WHERE key >= ? AND key < ? ORDER BY key",
        (_POLICY_PREFIX, _POLICY_PREFIX[:-1] + chr(ord("/") + 1)),
    ):
        try:
            data = orjson.loads(value)
            age = data.get("max_age")
            found.append(
                RetentionPolicy(
                    key.removeprefix(_POLICY_PREFIX),
                    data.get("keep_last"),
                    None if age is None else timedelta(seconds=age),
                    bool(data.get("keep_pinned", True)),
                )
            )
        except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
            from .errors import CorruptDatabaseError

            raise CorruptDatabaseError(
                f"the retention policy {key!r} in rewind_meta is damaged: {value!r}",
                code="corrupt.meta",
            ) from None
    return found


def pinned_ids(engine: Engine) -> set[int]:
    rows = engine.conn.fetchall(
        "SELECT key FROM rewind_meta WHERE key >= ? AND key < ?",
        (_PIN_PREFIX, _PIN_PREFIX[:-1] + chr(ord("/") + 1)),
    )
    found = set()
    for (key,) in rows:
        digits = key.removeprefix(_PIN_PREFIX)
        if digits.isdigit():
            found.add(int(digits))
    return found


def pin(engine: Engine, name: str, pinned: bool) -> None:
    with engine.conn.write():
        record = engine.branch(name)
        key = f"{_PIN_PREFIX}{record.id}"
        engine.conn.execute("DELETE FROM rewind_meta WHERE key = ?", (key,))
        if pinned:
            engine.conn.execute("INSERT INTO rewind_meta (key, value) VALUES (?, ?)", (key, name))


def refuse_pinned(engine: Engine, record: BranchRecord) -> None:
    if record.id in pinned_ids(engine):
        raise InvalidInputError(
            f"branch {record.name!r} is pinned; unpin it (db.branches.unpin) before deleting it",
            code="invalid.branch.pinned",
            branch=record.name,
        )


# -- cutting one branch's history ------------------------------------------------------


def _own_versions(engine: Engine, branch_id: int) -> list[tuple[int, int]]:
    """(version, ts) of the branch's commits, oldest first."""
    return [
        (int(v), int(ts))
        for v, ts in engine.conn.fetchall(
            "SELECT version, ts FROM rewind_commits WHERE branch_id = ? ORDER BY version",
            (branch_id,),
        )
    ]


def cut_for(
    commits: list[tuple[int, int]], keep_last: int | None, max_age: timedelta | None
) -> int | None:
    """The first version to keep of a branch with these commits, by the policy's terms
    (None: keep everything). The newest commit is always kept."""
    if not commits:
        return None
    cuts = []
    if keep_last is not None:
        cuts.append(commits[max(len(commits) - keep_last, 0)][0])
    if max_age is not None:
        oldest = now_micros() - round(max_age.total_seconds() * 1_000_000)
        young = [version for version, ts in commits if ts >= oldest]
        cuts.append(young[0] if young else commits[-1][0])
    return min(cuts)


def _lowest_fork(tree: Tree, branch_id: int) -> int | None:
    """The lowest version of the branch that a branch forked from it, at any depth, may
    read (None: it has no forks). A fork reads its parent as of its fork point, and each
    further ancestor as of the lowest fork point on the way up (``Engine.row_lineage``): a
    fork of a fork taken at an event the middle branch inherited reads the branch below
    the middle one's fork point. So the lowest fork point below the branch. (A fork that
    reads none of the branch's own history, below its fork point, holds every cut back:
    a purge of the branch would keep its rows only up to there, not the state the
    horizon's hash covers.)"""
    return min((tree.forked_at[step] for step in tree.subtree(branch_id)[1:]), default=None)


def _live_reads(tree: Tree) -> dict[int, int | None]:
    """For each deleted branch: the newest version of its own history a live branch still
    reads through it (None: none reads any), as ``erasure.purge_deleted`` keeps it: a live
    child reads it as of its fork point, a deleted child passes on what is read of it,
    capped at its own fork point."""
    reads: dict[int, int | None] = {}
    for root in tree.deleted:
        if root in reads:
            continue
        order, stack, seen = [], [root], set()
        while stack:  # the deleted branches below it (through deleted ones), parents first
            step = stack.pop()
            if step in seen or step in reads:
                continue
            seen.add(step)
            order.append(step)
            stack.extend(c for c in tree.children.get(step, ()) if c in tree.deleted)
        for step in reversed(order):  # children before their parents
            best: int | None = None
            for child in tree.children.get(step, ()):
                read: int | None = tree.forked_at[child]
                if child in tree.deleted:
                    below = reads.get(child)  # (None in a damaged, cyclic tree too)
                    read = None if below is None else min(tree.forked_at[child], below)
                if read is not None:
                    best = read if best is None else max(best, read)
            reads[step] = best
    return reads


def cut_history(engine: Engine, name: str, cut: int, policy: str) -> tuple[ErasureReceipt, int]:
    """Remove ``name``'s history before version ``cut`` (lowered to what its forks read),
    in the open write transaction; returns what was removed and its bytes."""
    conn = engine.conn
    record = engine.branch(name)
    tree = Tree(engine)
    fork = _lowest_fork(tree, record.id)
    if fork is not None:
        cut = min(cut, fork)
    cut = _merge_cut(engine, tree, record.id, cut)
    kept = engine.horizon(record.id)
    if cut <= record.forked_at or (kept is not None and cut <= kept.kept_from):
        return ErasureReceipt(engine.clock()), 0
    newest = conn.fetchone(
        "SELECT max(version) FROM rewind_commits WHERE branch_id = ?", (record.id,)
    )[0]
    if newest is not None:
        cut = min(cut, int(newest))  # the newest version is always kept
    sweep = Sweep()
    doomed = conn.fetchall(
        "SELECT space, key, version, refs, "
        "coalesce(length(body), 0) + coalesce(length(refs), 0) FROM rewind_entries e "
        "WHERE branch_id = ? AND version < ? AND version < (SELECT max(version) "
        "FROM rewind_entries n WHERE n.branch_id = e.branch_id AND n.space = e.space "
        "AND n.key = e.key AND n.version <= ?)",
        (record.id, cut, cut),
    )
    removed_bytes = 0
    for space, key, _version, refs, size in doomed:
        if refs is not None:
            sweep.add(record.id, space, key, refs)
        removed_bytes += int(size)
    if doomed:
        conn.executemany(
            "DELETE FROM rewind_entries WHERE branch_id = ? AND space = ? AND key = ? "
            "AND version = ?",
            [(record.id, space, key, version) for space, key, version, _, _ in doomed],
        )
    # A fork reads its parent's whole log up to its fork point: a branch with forks keeps
    # its events (a fork's log walk starts each step at its horizon's first event).
    last_event = None
    if not tree.children.get(record.id):
        last_event = conn.fetchone(
            "SELECT sequence, hash FROM rewind_events WHERE branch_id = ? AND version < ? "
            "ORDER BY version DESC, sequence DESC LIMIT 1",
            (record.id, cut),
        )
    events = 0
    if last_event is not None:
        size = conn.fetchone(
            "SELECT count(*), coalesce(sum(length(payload)), 0) FROM rewind_events "
            "WHERE branch_id = ? AND version < ?",
            (record.id, cut),
        )
        events, removed_bytes = int(size[0]), removed_bytes + int(size[1])
        conn.execute(
            "DELETE FROM rewind_events WHERE branch_id = ? AND version < ?", (record.id, cut)
        )
    last_commit = conn.fetchone(
        "SELECT hash FROM rewind_commits WHERE branch_id = ? AND version < ? "
        "ORDER BY version DESC LIMIT 1",
        (record.id, cut),
    )
    commits = int(
        conn.fetchone(
            "SELECT count(*) FROM rewind_commits WHERE branch_id = ? AND version < ?",
            (record.id, cut),
        )[0]
    )
    conn.execute("DELETE FROM rewind_commits WHERE branch_id = ? AND version < ?", (record.id, cut))
    base = rows_hash(conn.fetchall(BASE_ROWS, (record.id, cut)))
    previous_hash = (
        last_commit[0] if last_commit is not None else (kept.previous_hash if kept else None)
    )
    first_event, event_hash = (
        (int(last_event[0]) + 1, str(last_event[1]))
        if last_event is not None
        else ((kept.first_event, kept.event_hash) if kept else (None, None))
    )
    conn.execute("DELETE FROM rewind_horizons WHERE branch_id = ?", (record.id,))
    conn.execute(
        "INSERT INTO rewind_horizons (branch_id, kept_from, policy, pruned_at, previous_hash, "
        "rows_hash, first_event, event_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (record.id, cut, policy, now_micros(), previous_hash, base, first_event, event_hash),
    )
    items = sweep.run(engine, tree)
    bump_generation(conn)
    conn.request_reclaim()
    engine.memory.clear()
    receipt = ErasureReceipt(
        engine.clock(), entries=len(doomed), events=events, commits=commits, list_items=items
    )
    return receipt, removed_bytes


def _merge_cut(engine: Engine, tree: Tree, branch_id: int, cut: int) -> int:
    """``cut`` lowered so that the branch keeps the merge commits that a walk of merge
    history (``merge.contained_history``) still needs: without one, a merge base found
    through the branch is older than the true one, and a later merge goes ahead on it
    (putting back a value the target had replaced).

    A walk reaches the branch at a cap: its own head, each fork's reach into it, and each
    merge commit naming it or a fork of it (at the merged version, capped on the way
    up). At a cap, the walk holds, of each branch the branch merged, the most that its
    merge commits at or below the cap name: the commit that names it is needed."""
    conn = engine.conn
    merges = [
        (int(version), int(merged), int(merged_version or 0))
        for version, merged, merged_version in conn.fetchall(
            "SELECT version, merge_branch_id, merge_version FROM rewind_commits "
            "WHERE branch_id = ? AND merge_branch_id IS NOT NULL ORDER BY version",
            (branch_id,),
        )
    ]
    if not any(version < cut for version, _, _ in merges):
        return cut  # (the common case: one index seek)
    reach = _reach_caps(tree, branch_id, engine.clock())
    caps = set(reach.values())
    for merged, merged_version in conn.fetchall(
        "SELECT merge_branch_id, merge_version FROM rewind_commits "
        "WHERE merge_branch_id IS NOT NULL"
    ):
        if merged in reach and merged_version is not None:
            caps.add(min(int(merged_version), reach[merged]))
    lowest = cut
    newest: dict[int, tuple[int, int]] = {}  # merged branch -> (merged version, commit)
    pending = iter(merges)
    step = next(pending, None)
    for cap in sorted(caps):
        while step is not None and step[0] <= cap:
            version, merged, merged_version = step
            if merged not in newest or merged_version >= newest[merged][0]:
                newest[merged] = (merged_version, version)
            step = next(pending, None)
        lowest = min([lowest, *(version for _, version in newest.values())])
    return lowest


def _reach_caps(tree: Tree, branch_id: int, head: int) -> dict[int, int]:
    """The branch and each branch forked from it at any depth -> the newest version of
    the branch a walk from it holds (the branch itself: ``head``)."""
    caps = {branch_id: head}
    stack = [branch_id]
    while stack:
        step = stack.pop()
        for child in tree.children.get(step, ()):
            if child not in caps:  # (a damaged, cyclic tree: never loop)
                caps[child] = min(caps[step], tree.forked_at[child])
                stack.append(child)
    return caps


def resolve_cut(
    engine: Engine,
    record: BranchRecord,
    before: int | datetime | None,
    keep_last: int | None,
    max_age: timedelta | None,
) -> int | None:
    """The version a prune of ``record`` keeps from (None: nothing to cut)."""
    if before is not None:
        if isinstance(before, datetime):
            if before.tzinfo is None:
                raise InvalidInputError(
                    "before must be a timezone-aware datetime", code="invalid.retention"
                )
            if before > datetime.now(timezone.utc):
                raise InvalidInputError(
                    f"before {before.isoformat()} is in the future", code="invalid.retention"
                )
            row = engine.conn.fetchone(
                "SELECT min(version) FROM rewind_commits WHERE branch_id = ? AND ts >= ?",
                (record.id, to_micros(before)),
            )
            return None if row is None or row[0] is None else int(row[0])
        if isinstance(before, bool) or not isinstance(before, int) or before < 0:
            raise InvalidInputError(
                f"before must be a version (int >= 0) or a datetime, not {before!r}",
                code="invalid.retention",
            )
        if before > engine.clock():
            raise InvalidInputError(
                f"version {before} does not exist yet (the newest is {engine.clock()})",
                code="invalid.retention",
            )
        return before
    return cut_for(_own_versions(engine, record.id), keep_last, max_age)


# -- gc ----------------------------------------------------------------------------------


def _file_bytes(engine: Engine) -> int | None:
    path = getattr(engine.conn, "path", None)
    if path is None:
        return None
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += (path.parent / (path.name + suffix)).stat().st_size
    return total


class _Steps:
    """Runs gc's steps, each a write transaction (rolled back in a dry run), timing the
    longest."""

    def __init__(self, engine: Engine, report: GcReport) -> None:
        self.engine, self.report = engine, report

    def run(self, step: Any) -> Any:
        start = time.perf_counter()
        result: Any = None
        try:
            with self.engine.conn.write():
                result = step()
                if self.report.dry_run:
                    raise _RolledBack
        except _RolledBack:
            self.engine.memory.clear()
        finally:
            held = time.perf_counter() - start
            self.report.longest_step = max(self.report.longest_step, held)
        time.sleep(PAUSE)  # a writer waiting meanwhile gets its turn before the next step
        return result


def gc(engine: Engine, *, dry_run: bool = False, vacuum: bool = False) -> GcReport:
    """Apply the policies, purge deleted branches, give the space back (module docstring)."""
    conn = engine.conn
    conn.check_open()
    if conn.readonly:
        raise ReadOnlyError("gc removes data: open the database writable to run it")
    if not isinstance(dry_run, bool) or not isinstance(vacuum, bool):
        raise InvalidInputError(
            "dry_run and vacuum must be True or False", code="invalid.retention"
        )
    with conn.deferring_reclaim():
        report = _gc_steps(engine, dry_run)
    # 3. Space: the WAL checkpointed and truncated, free pages given back (in steps of
    # their own; a full VACUUM, when asked for, is one long step by design).
    if not dry_run:
        held = conn.reclaim(full=vacuum)
        if not vacuum:
            report.longest_step = max(report.longest_step, held)
        report.file_bytes_after = _file_bytes(engine)
    return report


def _gc_steps(engine: Engine, dry_run: bool) -> GcReport:
    """gc's first two parts: purges of deleted branches, then the policies' cuts."""
    report = GcReport(dry_run=dry_run)
    report.file_bytes_before = None if dry_run else _file_bytes(engine)
    steps = _Steps(engine, report)
    # 1. Deleted branches: their rows go (what live forks inherited stays). One step per
    # group of deleted branches joined by forks: a purge takes the deleted descendants of
    # the topmost one with it.
    for group in _purge_groups(engine):
        receipt, size = steps.run(lambda group=group: _purge_one(engine, group))
        report.add(receipt, size)
    # 2. Policies: each live branch matching one is cut where its terms say.
    rules = policies(engine)
    if rules:
        pinned = pinned_ids(engine)
        for record in _live_records(engine):
            rule = next((r for r in rules if fnmatch.fnmatchcase(record.name, r.pattern)), None)
            if rule is None or record.name == DEFAULT_BRANCH:
                continue
            if rule.keep_pinned and record.id in pinned:
                continue
            commits = _own_versions(engine, record.id)
            cut = cut_for(commits, rule.keep_last, rule.max_age)
            if cut is None:
                continue
            kept_from = None
            for step_cut in [cut] if dry_run else _step_cuts(commits, cut):
                receipt, size, kept_from = steps.run(
                    lambda record=record, c=step_cut, r=str(rule): _cut_step(engine, record, c, r)
                )
                report.add(receipt, size)
            if kept_from is not None:  # (in a dry run too: read before the step rolled back)
                report.horizons[record.name] = kept_from
    return report


def _cut_step(
    engine: Engine, record: BranchRecord, cut: int, policy: str
) -> tuple[ErasureReceipt, int, int | None]:
    """One step of a policy's cut, and where the branch's history is kept from after it."""
    receipt, size = cut_history(engine, record.name, cut, policy)
    kept = engine.horizon(record.id)
    return receipt, size, None if kept is None else kept.kept_from


#: The newest version of a purged branch's own rows, each an index seek. (Its merge commits
#: are left out: those a purge keeps are links that remaining branches' merge history
#: walks through, and a purge that removes what names them purges them again.)
_NEWEST_ROW = (
    "SELECT max(v) FROM (SELECT max(version) AS v FROM rewind_entries WHERE branch_id = ? "
    "UNION ALL SELECT max(version) FROM rewind_events WHERE branch_id = ?) own"
)


def _purge_groups(engine: Engine) -> list[list[int]]:
    """The groups of deleted branches (joined by forks) that hold something to purge,
    each its topmost branch first: a group with a branch not purged yet, or with rows
    newer than what live branches still read of it (``_live_reads``). The topmost branch
    may hold nothing (a purged parent that never wrote): its deleted descendants count."""
    tree = Tree(engine)
    reads = _live_reads(tree)
    done: set[int] = set()  # purged, and what it keeps a live branch reads
    for branch_id in tree.deleted:
        if tree.name[branch_id] == purged_name(branch_id):
            newest = engine.conn.fetchone(_NEWEST_ROW, (branch_id,) * 2)[0]
            read = reads.get(branch_id)
            if newest is None or (read is not None and int(newest) <= read):
                done.add(branch_id)
    # Unless a fork hid some of it since (it overwrote a key, then was cut below that):
    # asked of them all at once, and of each only when some are (a second gc is cheap).
    if done and unread_values(engine, done, tree):
        done = {branch_id for branch_id in done if not unread_values(engine, [branch_id], tree)}
    groups: list[list[int]] = []
    grouped: set[int] = set()
    for branch_id in sorted(tree.deleted, reverse=True):
        if branch_id in grouped or branch_id in done:
            continue
        root, seen = branch_id, {branch_id}
        while tree.parent.get(root) in tree.deleted and tree.parent[root] not in seen:
            root = tree.parent[root]
            seen.add(root)
        group = _deleted_below(tree, root)
        grouped.update(group)
        groups.append(group)
    return sorted(groups, key=lambda group: group[0], reverse=True)


def _step_cuts(commits: list[tuple[int, int]], cut: int) -> list[int]:
    """Cuts that reach ``cut`` removing at most ``STEP_VERSIONS`` versions each."""
    versions = [version for version, _ in commits if version < cut]
    cuts = [versions[i] for i in range(STEP_VERSIONS, len(versions), STEP_VERSIONS)]
    return [*cuts, cut]


def _purge_one(engine: Engine, group: list[int]) -> tuple[ErasureReceipt, int]:
    """Purge a group of deleted branches (``_purge_groups``: the topmost first); returns
    what went and the bytes of their rows that went (what they keep for live forks stays)."""
    before = _rows_bytes(engine, group)
    receipt = purge_deleted(engine, group[:1])
    return receipt, before - _rows_bytes(engine, group)


def _deleted_below(tree: Tree, root: int) -> list[int]:
    """``root`` and its deleted descendants, through deleted branches only, ``root`` first."""
    found, stack, seen = [], [root], set()
    while stack:
        step = stack.pop()
        if step in seen or step not in tree.deleted:
            continue
        seen.add(step)
        found.append(step)
        stack.extend(tree.children.get(step, ()))
    return found


def _rows_bytes(engine: Engine, branch_ids: list[int]) -> int:
    """The bytes of these branches' values and payloads (an erased entry's digest is
    not a value: a value erased in place counts as removed)."""
    total = 0
    for branch_id in branch_ids:
        size = engine.conn.fetchone(
            "SELECT (SELECT coalesce(sum(coalesce(length(body), 0) "
            "+ coalesce(length(refs), 0)), 0) FROM rewind_entries WHERE branch_id = ? "
            f"AND kind != {KIND_ERASED}) "
            "+ (SELECT coalesce(sum(length(payload)), 0) FROM rewind_events WHERE branch_id = ?)",
            (branch_id, branch_id),
        )[0]
        total += int(size or 0)
    return total


def _live_records(engine: Engine) -> list[BranchRecord]:
    names = [
        row[0]
        for row in engine.conn.fetchall(
            "SELECT name FROM rewind_branches WHERE deleted_at IS NULL ORDER BY id"
        )
    ]
    return [engine.branch(name) for name in names]


def prune(
    engine: Engine,
    name: str,
    *,
    before: int | datetime | None = None,
    keep_last: int | None = None,
    max_age: timedelta | None = None,
    reason: str | None = None,
) -> GcReport:
    """Cut one branch's history once (see the module's docstring)."""
    check_name(name, "branch")
    given = [term for term in (before, keep_last, max_age) if term is not None]
    if len(given) != 1 and not (before is None and given):
        raise InvalidInputError(
            "give before=, or keep_last= and/or max_age=", code="invalid.retention"
        )
    if before is None:
        check_policy("~", keep_last, max_age, True)  # the same rules as a policy's terms
    if reason is not None and (not isinstance(reason, str) or "\x00" in reason):
        raise InvalidInputError("reason must be a string", code="invalid.retention")
    if name == DEFAULT_BRANCH:
        raise InvalidInputError(
            "the default branch's history is never pruned", code="invalid.retention"
        )
    report = GcReport(dry_run=False)
    steps = _Steps(engine, report)
    with engine.conn.lock:
        record = engine.branch(name)
        if record.id in pinned_ids(engine):
            raise InvalidInputError(
                f"branch {name!r} is pinned; unpin it before pruning its history",
                code="invalid.branch.pinned",
                branch=name,
            )
        cut = resolve_cut(engine, record, before, keep_last, max_age)
        if cut is None:
            return report
        policy = reason or _prune_text(before, keep_last, max_age)
        with engine.conn.deferring_reclaim():
            for step_cut in _step_cuts(_own_versions(engine, record.id), cut):
                receipt, size = steps.run(lambda c=step_cut: cut_history(engine, name, c, policy))
                report.add(receipt, size)
        kept = engine.horizon(record.id)
        if kept is not None:
            report.horizons[name] = kept.kept_from
    engine.conn.request_reclaim()  # once, for every step (inside a transaction: at its end)
    return report


def _prune_text(
    before: int | datetime | None, keep_last: int | None, max_age: timedelta | None
) -> str:
    if isinstance(before, datetime):
        return f"prune(before={before.isoformat()})"
    if before is not None:
        return f"prune(before={before})"
    return f"prune({', '.join(_terms(keep_last, max_age))})"


__all__ = ["GcReport", "RetentionPolicy", "RewindError"]
