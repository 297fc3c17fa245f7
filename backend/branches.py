"""``db.branches``: fork (one row, nothing copied), list, get, delete, merge."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

from ._damage import guarded
from ._engine import (
    DEFAULT_BRANCH,
    AsOf,
    BranchRecord,
    Engine,
    check_flag,
    check_name,
    now_micros,
)
from .erasure import purge_branch
from .errors import BranchExistsError, CorruptDatabaseError, InvalidInputError
from .events import Events, last_event
from .merge import EventMode, MergeReceipt, Strategy, merge_branches
from .models import Branch, ErasureReceipt, from_micros
from .retention import pin, pinned_ids, refuse_pinned

#: Every live branch with its commits' figures, counted in one pass over the commits
#: grouped by branch (a join per branch would sort them once more for each).
_BRANCH_QUERY = (
    "SELECT b.name, p.name, b.forked_at, b.created_at, c.head, coalesce(c.n, 0), c.last, "
    "b.id, (SELECT max(sequence) FROM rewind_events e WHERE e.branch_id = b.id) "
    "FROM rewind_branches b "
    "LEFT JOIN rewind_branches p ON p.id = b.parent_id "
    "LEFT JOIN (SELECT branch_id, max(version) AS head, count(*) AS n, max(ts) AS last "
    "FROM rewind_commits GROUP BY branch_id) c ON c.branch_id = b.id "
    "WHERE b.deleted_at IS NULL ORDER BY b.id"
)


#: One branch's commits, found through the indexes its own rows already have (every
#: commit writes an entry or an event, or is a merge), so ``get`` costs what the branch
#: wrote, not a scan of every commit in the database.
_OWN_COMMITS = (
    "SELECT max(version), count(*) FROM (SELECT version FROM rewind_entries "
    "WHERE branch_id = ? UNION SELECT version FROM rewind_events WHERE branch_id = ? "
    "UNION SELECT version FROM rewind_commits WHERE branch_id = ? "
    "AND merge_branch_id IS NOT NULL) own"
)


def _branch(engine: Engine, row: tuple[Any, ...], kept_from: int | None) -> Branch:
    name, parent, forked_at, created_at, head, commits, last_ts, branch_id, last_own = row
    if type(name) is not str or not name or type(forked_at) is not int:
        raise CorruptDatabaseError(
            f"the row of branch id {branch_id!r} in rewind_branches is damaged: name "
            f"{name!r}, forked at {forked_at!r}",
            code="corrupt.branches",
        )
    if last_own is not None:  # a branch's own events continue its inherited log, densely
        events = last_own + 1
    else:
        last = last_event(engine, engine.branch_by_id(branch_id), forked_at)
        events = last[0] + 1 if last else 0
    return Branch(
        events=events,
        name=name,
        parent=parent,
        forked_at=forked_at,
        created_at=from_micros(created_at),
        head=head if head is not None else forked_at,
        commits=commits,
        last_write=from_micros(last_ts) if last_ts is not None else None,
        kept_from=kept_from,
    )


def _kept_from(engine: Engine, branch_id: int) -> int | None:
    """Where retention cut the branch's history (its horizon), or None."""
    found = engine.horizon(branch_id)
    return None if found is None else found.kept_from


@guarded
class Branches:
    """The branches of one database."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def fork(
        self, source: str, name: str, *, at: AsOf = None, at_event: int | None = None
    ) -> Branch:
        """Create branch ``name`` from ``source`` as of ``at`` (default: its head), or as of
        the event with sequence ``at_event`` (the new branch holds the log up to and
        including it, and the state as it was right after it).

        O(1): one row is inserted, whatever the size of the state.
        """
        check_name(name, "branch")
        if at is not None and at_event is not None:
            raise InvalidInputError("give at= or at_event=, not both", code="invalid.fork")
        engine = self._engine
        with engine.conn.write():
            record = engine.branch(source)
            engine.check_fork_source(record)
            if at_event is not None:
                version = self._event_version(record, at_event)
            else:
                version = engine.resolve_as_of(record, at)
            if engine.live_branch_id(name) is not None:
                raise BranchExistsError(
                    f"branch {name!r} already exists; pick another name or delete it first",
                    branch=name,
                )
            created_at = now_micros()
            engine.conn.execute(
                "INSERT INTO rewind_branches (name, parent_id, forked_at, created_at) "
                "VALUES (?, ?, ?, ?)",
                (name, record.id, version, created_at),
            )
            # The new branch has no rows of its own yet: it is what it inherited.
            last = last_event(engine, record, version)
            return Branch(
                events=last[0] + 1 if last else 0,
                name=name,
                parent=record.name,
                forked_at=version,
                created_at=from_micros(created_at),
                head=version,
                commits=0,
                last_write=None,
            )

    def _event_version(self, record: BranchRecord, sequence: int) -> int:
        """The version a fork at event ``sequence`` of ``record`` is taken at (events the
        branch inherited included: the fork then starts below the branch's own fork point)."""
        engine = self._engine
        version = Events(engine, record.name).get(sequence).version
        engine.check_kept(record, version)  # an event retention kept below its cut
        last = last_event(engine, engine.owner_at(record, version), version)
        if last is None or last[0] != sequence:
            raise InvalidInputError(
                f"event {sequence} of {record.name!r} was appended in one version together "
                "with the events after it (by a merge or a transaction); fork at the last "
                "of them instead",
                code="invalid.fork",
            )
        return version

    def get(self, name: str) -> Branch:
        """The branch called ``name``; ``BranchNotFound`` if it does not exist."""
        engine = self._engine
        with engine.conn.lock, engine.conn.snapshot():
            record = engine.branch(name)
            head, commits = engine.conn.fetchone(_OWN_COMMITS, (record.id,) * 3)
            last_ts = None
            if head is not None:
                last_ts = engine.conn.fetchone(
                    "SELECT ts FROM rewind_commits WHERE version = ?", (head,)
                )[0]
            parent = engine.branch_by_id(record.parent_id).name if record.parent_id else None
            last_own = engine.conn.fetchone(
                "SELECT max(sequence) FROM rewind_events WHERE branch_id = ?", (record.id,)
            )[0]
            row = (
                record.name,
                parent,
                record.forked_at,
                record.created_at,
                head,
                commits,
                last_ts,
                record.id,
                last_own,
            )
            return _branch(engine, row, _kept_from(engine, record.id))

    def list(self) -> builtins.list[Branch]:
        """Every live branch, in the order they were created (``default`` first)."""
        engine = self._engine
        with engine.conn.lock:
            engine.conn.check_open()
            with engine.conn.snapshot():
                rows = engine.conn.fetchall(_BRANCH_QUERY)
                cuts = engine.kept_froms()
            return [_branch(engine, row, cuts.get(row[7])) for row in rows]

    def kept_from(self, name: str) -> int | None:
        """The oldest version reads of branch ``name`` may ask for, where retention removed
        its older history (reads before it are ``history_unavailable``); None while its
        whole history is kept. Cheaper than ``get(name).kept_from``: no figures counted."""
        engine = self._engine
        with engine.conn.lock, engine.conn.snapshot():
            return _kept_from(engine, engine.branch(check_name(name, "branch")).id)

    def names(self) -> builtins.list[str]:
        """The live branches' names, in the order they were created (as ``list``, without
        its figures of each branch's commits)."""
        engine = self._engine
        with engine.conn.lock:
            engine.conn.check_open()
            rows = engine.conn.fetchall(
                "SELECT name FROM rewind_branches WHERE deleted_at IS NULL ORDER BY id"
            )
        names = [row[0] for row in rows]
        if any(type(name) is not str or not name for name in names):
            return [branch.name for branch in self.list()]  # (which names the damage)
        return names

    def exists(self, name: str) -> bool:
        check_name(name, "branch")
        with self._engine.conn.lock:
            return self._engine.live_branch_id(name) is not None

    def delete(self, name: str, *, purge: bool = False) -> ErasureReceipt | None:
        """Delete a branch: its reads then fail with ``not_found.engine.branch``.

        Branches forked from it keep their whole history; ``default`` and pinned branches
        cannot be deleted. Without ``purge`` its rows stay until ``db.gc()``; with it they
        are removed now, with those of its deleted descendants (``erasure``: what live
        forks inherited stays), and the receipt says what went.
        """
        check_flag(purge, "purge")
        if name == DEFAULT_BRANCH:
            raise InvalidInputError(
                "the default branch cannot be deleted", code="invalid.branch.default"
            )
        engine = self._engine
        with engine.conn.write():
            record = engine.branch(name)
            refuse_pinned(engine, record)
            if purge:
                receipt = purge_branch(engine, name)
            else:
                engine.conn.execute(
                    "UPDATE rewind_branches SET deleted_at = ? WHERE id = ?",
                    (now_micros(), record.id),
                )
                engine.memory.forget("branch", name)
                engine.memory.forget("branch_id", record.id)
                return None
        return receipt

    def pin(self, name: str) -> None:
        """Pin a branch: it cannot be deleted, and retention policies keep its whole
        history (unless a policy says ``keep_pinned=False``)."""
        pin(self._engine, name, True)

    def unpin(self, name: str) -> None:
        """Undo :meth:`pin` (nothing happens for a branch that is not pinned)."""
        pin(self._engine, name, False)

    def pinned(self) -> builtins.list[str]:
        """The names of the pinned live branches."""
        engine = self._engine
        with engine.conn.lock:
            engine.conn.check_open()
            ids = pinned_ids(engine)
            return [
                name
                for branch_id, name in engine.conn.fetchall(
                    "SELECT id, name FROM rewind_branches WHERE deleted_at IS NULL ORDER BY id"
                )
                if branch_id in ids
            ]

    def merge(
        self,
        source: str,
        target: str,
        *,
        strategy: Strategy = "fail",
        events: EventMode = "skip",
        trigger: str | None = None,
        message: str | None = None,
    ) -> MergeReceipt:
        """Three-way merge ``source`` into ``target`` (one commit with two parents).

        ``strategy``: ``fail`` (raise ``MergeConflictError``, write nothing), ``source``
        or ``target`` (whose value wins a conflict). ``events``: ``skip`` (the receipt
        counts them as not carried) or ``append`` (copied onto the target's log).
        """
        return merge_branches(
            self._engine,
            source,
            target,
            strategy=strategy,
            events=events,
            trigger=trigger,
            message=message,
        )

    def __iter__(self) -> Iterator[Branch]:
        return iter(self.list())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and bool(name) and self.exists(name)
