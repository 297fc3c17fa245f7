"""Stateful property test: random histories against a small in-memory model.

A hypothesis ``RuleBasedStateMachine`` drives a real database (SQLite in a temp
directory, one per example) through random sequences of forks (at head and at past
versions), kv/json writes and deletes, event appends, merges (every strategy, events
skipped or appended), branch deletes, ``as_of`` reads at random versions and close/reopen
cycles. After every step the database must agree with a deliberately naive model: every
branch keeps a list of full snapshots, one per version it committed, so "the state of
branch b as of v" is just "b's newest snapshot at or before v". Nothing in the model
mirrors how rewinddb stores history (lineage seeks, shared arrays, event rows).

Large message lists (5-30 items of ~200 bytes, grown, truncated, edited, replaced, at
the top of a value or nested under object keys) exercise the shared-array storage: every
past version must read back exactly as written.

Merge base, as modelled: every branch both sides hold, following forks (lineage up to
each fork point) and merges (a merge commit holds the merged branch up to the merged
version, recursively); for each, the older of the two sides' newest versions; the newest
of those. When two candidate points share the newest version but hold different states
the rule is ambiguous; the machine then does not issue that merge (it keeps the model from
copying an arbitrary tie-break).

Events carried by ``events="append"``: the source's events that the target's log does not
hold (also those an earlier ``events="skip"`` merge left behind). Each model event has an
*origin* (the append that created it) that its copies keep, so an event already carried
into the target is never carried again.

Errors are modelled by class and ``code``. Where one fork has two faults the model takes
the API's lookup order: an unknown source, then a bad ``at``, then a taken name. Invalid
paths and values are only tried on live branches.

The tests after the machine replay, as plain histories, what the machine found.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import rewinddb

# -- the model -----------------------------------------------------------------------

ABSENT: Any = object()
"""Model: a key, document or member that does not exist (distinct from JSON null)."""

DEFAULT = "default"
FORK_NAMES = ("b1", "b2", "b3", "b4")
ALL_NAMES = (DEFAULT, *FORK_NAMES, "ghost")  # "ghost" is never created
KV_KEYS = ("k1", "k2", "big")
DOC_KEYS = ("d1", "d2", "big")
MEMBERS = ("a", "b", "messages")
SET_PATHS = ("$", "$.a", "$.a.b", "$.b", "$.messages")
READ_PATHS = ("$", "$.a", "$.a.b", "$.messages", "$.a.messages")
EVENT_TYPES = ("note", "tool.call", "msg")

Error = tuple[type[rewinddb.RewindError], str]
NOT_FOUND: Error = (rewinddb.BranchNotFound, "not_found.engine.branch")
HISTORY: Error = (rewinddb.HistoryUnavailableError, "history_unavailable")
BAD_AS_OF: Error = (rewinddb.InvalidInputError, "invalid.as_of")
EXISTS: Error = (rewinddb.BranchExistsError, "conflict.branch_exists")
DELETE_DEFAULT: Error = (rewinddb.InvalidInputError, "invalid.branch.default")
SELF_MERGE: Error = (rewinddb.InvalidInputError, "invalid.merge")
CONFLICT: Error = (rewinddb.MergeConflictError, "conflict.merge")
BAD_PATH: Error = (rewinddb.InvalidJSONPathError, "invalid.json_path")
BAD_VALUE: Error = (rewinddb.InvalidValueError, "invalid.value")
APPEND_CONFLICT: Error = (rewinddb.AppendConflictError, "conflict.append")
CLOSED: Error = (rewinddb.DatabaseClosedError, "closed")
NO_SUCH_KEY: Error = (rewinddb.NotFoundError, "not_found.key")


class PathError(Exception):
    """Model: json.set cannot apply the path to the document."""


def canon(value: Any) -> Any:
    """How a value reads back: tuples become lists (dict order does not matter to ==)."""
    if isinstance(value, (list, tuple)):
        return [canon(item) for item in value]
    if isinstance(value, dict):
        return {key: canon(item) for key, item in value.items()}
    return value


def tokens_of(path: str) -> list[str]:
    """The member names of one of our simple paths ('$', '$.a', '$.a.b', ...)."""
    return [] if path == "$" else path[2:].split(".")


def path_of(tokens: tuple[str, ...]) -> str:
    return "$" + "".join(f".{token}" for token in tokens)


def get_path(doc: Any, tokens: list[str]) -> Any:
    for token in tokens:
        if not isinstance(doc, dict) or token not in doc:
            return ABSENT
        doc = doc[token]
    return doc


def set_path(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    if doc is ABSENT:
        doc = {}
    if not isinstance(doc, dict):
        raise PathError
    copy = dict(doc)
    copy[tokens[0]] = set_path(doc.get(tokens[0], ABSENT), tokens[1:], value)
    return copy


def delete_path(doc: Any, tokens: list[str]) -> Any:
    """The document without the value at ``tokens``; ABSENT deletes the whole document.
    Callers check first (``get_path``) that there is something to delete."""
    if not tokens:
        return ABSENT
    copy = dict(doc)
    if len(tokens) == 1:
        del copy[tokens[0]]
    else:
        copy[tokens[0]] = delete_path(doc[tokens[0]], tokens[1:])
    return copy


@dataclass(frozen=True)
class MEvent:
    origin: int  # the append that created it; copies carried by merges keep it
    type: str
    payload: Any
    version: int
    home: str  # the name of the branch whose log holds this entry


@dataclass(frozen=True)
class Snap:
    version: int
    kv: dict[str, Any]
    docs: dict[str, Any]
    log: tuple[MEvent, ...]

    def same_state(self, other: Snap) -> bool:
        return (
            self.kv == other.kv
            and self.docs == other.docs
            and [e.origin for e in self.log] == [e.origin for e in other.log]
        )


@dataclass
class MBranch:
    bid: int
    name: str
    parent: MBranch | None
    forked_at: int
    snaps: list[Snap]
    commits: list[int] = field(default_factory=list)
    alive: bool = True

    @property
    def head(self) -> Snap:
        return self.snaps[-1]

    def at(self, version: int) -> Snap:
        for snap in reversed(self.snaps):
            if snap.version <= version:
                return snap
        raise AssertionError(f"{self.name} has no state at {version}")

    def lineage(self, version: int) -> list[tuple[int, int]]:
        steps = [(self.bid, version)]
        branch = self
        while branch.parent is not None:
            steps.append((branch.parent.bid, branch.forked_at))
            branch = branch.parent
        return steps


@dataclass(frozen=True)
class MMerge:
    into: int  # branch id of the merge commit
    commit: int  # the merge commit's version
    source: int  # branch id merged from
    source_version: int  # the clock when it was merged


@dataclass
class MergePlan:
    error: Error | None = None
    ambiguous: bool = False
    version: int | None = None
    base_version: int = 0
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)
    keys_applied: list[str] = field(default_factory=list)
    kv: dict[str, Any] = field(default_factory=dict)
    docs: dict[str, Any] = field(default_factory=dict)
    since: list[MEvent] = field(default_factory=list)


class Model:
    def __init__(self) -> None:
        self.clock = 0
        self.branches: list[MBranch] = [MBranch(0, DEFAULT, None, 0, [Snap(0, {}, {}, ())])]
        self.merges: list[MMerge] = []
        self.origins = 0

    def live(self, name: str) -> MBranch | None:
        for branch in self.branches:
            if branch.alive and branch.name == name:
                return branch
        return None

    def live_names(self) -> list[str]:
        return [b.name for b in self.branches if b.alive]

    def commit(
        self,
        branch: MBranch,
        *,
        kv: dict[str, Any] | None = None,
        docs: dict[str, Any] | None = None,
        log: tuple[MEvent, ...] | None = None,
    ) -> int:
        head = branch.head
        self.clock += 1
        branch.snaps.append(
            Snap(
                self.clock,
                head.kv if kv is None else kv,
                head.docs if docs is None else docs,
                head.log if log is None else log,
            )
        )
        branch.commits.append(self.clock)
        return self.clock

    def resolve(self, name: str, as_of: int | None) -> tuple[Error | None, Snap | None]:
        """What a read of ``name`` as of ``as_of`` sees, or the error it raises."""
        branch = self.live(name)
        if branch is None:
            return NOT_FOUND, None
        if as_of is None:
            return None, branch.head
        if as_of < 0 or as_of > self.clock:
            return BAD_AS_OF, None
        if as_of < branch.forked_at:
            return HISTORY, None
        return None, branch.at(as_of)

    # -- writes ------------------------------------------------------------------

    def fork(self, source: str, name: str, at: int | None) -> Error | MBranch:
        src = self.live(source)
        if src is None:
            return NOT_FOUND
        error, snap = self.resolve(source, at)
        if error is not None:
            return error
        if self.live(name) is not None:
            return EXISTS
        assert snap is not None
        version = self.clock if at is None else at
        branch = MBranch(
            len(self.branches), name, src, version, [Snap(version, snap.kv, snap.docs, snap.log)]
        )
        self.branches.append(branch)
        return branch

    def append(self, branch: MBranch, event_type: str, payload: Any) -> MEvent:
        self.origins += 1
        event = MEvent(self.origins, event_type, canon(payload), self.clock + 1, branch.name)
        self.commit(branch, log=(*branch.head.log, event))
        return event

    # -- merge -------------------------------------------------------------------

    def merge_plan(self, source: str, target: str, strategy: str, events: str) -> MergePlan:
        tgt_branch = self.live(target)
        src_branch = self.live(source)
        if tgt_branch is None or src_branch is None:
            return MergePlan(error=NOT_FOUND)
        if tgt_branch is src_branch:
            return MergePlan(error=SELF_MERGE)
        now = self.clock

        # The merge base candidates: (version, branch id) of every branch both sides hold,
        # following forks and merges.
        src_holds, tgt_holds = self.holds(src_branch, now), self.holds(tgt_branch, now)
        candidates = [
            (min(src_holds[bid], tgt_holds[bid]), bid) for bid in src_holds.keys() & tgt_holds
        ]
        base_version = max(version for version, _ in candidates)
        points = [self.branches[bid].at(base_version) for v, bid in candidates if v == base_version]
        if any(not points[0].same_state(point) for point in points[1:]):
            return MergePlan(ambiguous=True)
        base, src, tgt = points[0], src_branch.head, tgt_branch.head

        plan = MergePlan(base_version=base_version, kv=dict(tgt.kv), docs=dict(tgt.docs))
        applied: set[str] = set()
        for space, base_map, src_map, tgt_map, out in (
            ("kv", base.kv, src.kv, tgt.kv, plan.kv),
            ("json", base.docs, src.docs, tgt.docs, plan.docs),
        ):
            for key in sorted(base_map.keys() | src_map.keys()):
                base_value, src_value = base_map.get(key, ABSENT), src_map.get(key, ABSENT)
                if base_value == src_value:
                    continue
                tgt_value = tgt_map.get(key, ABSENT)
                conflicts: list[tuple[str, ...]] = []
                merged = three_way(
                    base_value, src_value, tgt_value, space == "json", (), strategy, conflicts
                )
                plan.conflicts += [(space, key, path_of(path)) for path in conflicts]
                if merged != tgt_value:
                    applied.add(key)
                    if merged is ABSENT:
                        del out[key]
                    else:
                        out[key] = merged
        plan.keys_applied = sorted(applied)
        # The source's events the target's log lacks, by identity: a copy carried by an
        # earlier merge stands for its original, so nothing reaches the target twice.
        # Events an earlier events="skip" merge left behind stay pending; only new ones
        # (not in the base's log) make a commit when they are skipped again.
        known = {event.origin for event in tgt.log}
        plan.since = [event for event in src.log if event.origin not in known]
        in_base = {event.origin for event in base.log}
        new = [event for event in plan.since if event.origin not in in_base]
        if plan.conflicts and strategy == "fail":
            plan.error = CONFLICT
        elif plan.conflicts or applied or (plan.since if events == "append" else new):
            plan.version = now + 1
        return plan

    def holds(self, branch: MBranch, version: int) -> dict[int, int]:
        """Branch id -> newest version the point holds, through forks and merges."""
        held: dict[int, int] = {}
        pending = [(branch, version)]
        while pending:
            point, cap_of_point = pending.pop()
            for bid, cap in point.lineage(cap_of_point):
                if held.get(bid, -1) >= cap:
                    continue
                held[bid] = cap
                pending += [
                    (self.branches[m.source], m.source_version)
                    for m in self.merges
                    if m.into == bid and m.commit <= cap
                ]
        return held


def three_way(
    base: Any,
    source: Any,
    target: Any,
    by_member: bool,
    path: tuple[str, ...],
    strategy: str,
    conflicts: list[tuple[str, ...]],
) -> Any:
    """Model merge of one value: kv whole; json documents member by member."""
    if source in (target, base):
        return target
    if (
        by_member
        and isinstance(source, dict)
        and isinstance(target, dict)
        and (base is ABSENT or isinstance(base, dict))
    ):
        base_dict = {} if base is ABSENT else base
        merged = {}
        for member in sorted(base_dict.keys() | source.keys() | target.keys()):
            value = three_way(
                base_dict.get(member, ABSENT),
                source.get(member, ABSENT),
                target.get(member, ABSENT),
                True,
                (*path, member),
                strategy,
                conflicts,
            )
            if value is not ABSENT:
                merged[member] = value
        return merged
    if target == base:
        return source
    conflicts.append(path)
    return source if strategy == "source" else target


# -- value strategies ----------------------------------------------------------------

scalars = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y", ""]), st.none())
small_json = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(MEMBERS), children, max_size=3),
    ),
    max_leaves=6,
)
kv_values = st.one_of(small_json, st.sampled_from([b"", b"\x00\xffraw"]))

FILLER = "x" * 185


def big_item(tag: int, index: int, style: int) -> Any:
    """One ~200-byte list item; equal (tag, index, style) give equal items."""
    if style == 0:
        return f"item-{tag}-{index:03d}-{FILLER}"
    return {"role": "user" if index % 2 else "assistant", "n": index, "text": f"{tag}{FILLER}"}


def current_list(value: Any) -> list[Any] | None:
    """The message list inside a stored value, if it has one."""
    if isinstance(value, list):
        return value
    for tokens in (["messages"], ["a", "messages"]):
        found = get_path(value, tokens)
        if isinstance(found, list):
            return found
    return None


# -- the machine -----------------------------------------------------------------------


def expect(error: Error | None, call: Callable[[], Any]) -> Any:
    """Run ``call``; it must raise exactly ``error`` (class and code), or succeed."""
    if error is None:
        return call()
    cls, code = error
    with pytest.raises(rewinddb.RewindError) as info:
        call()
    assert type(info.value) is cls, (info.value, cls)
    assert info.value.code == code, (info.value, code)
    return None


def short(*values: Any) -> str:
    """An assertion message that does not print whole 200-byte-item lists."""
    return ", ".join(r if len(r := repr(v)) < 160 else r[:150] + "...]" for v in values)


def event_rows(items: list[rewinddb.EventItem]) -> list[tuple[Any, ...]]:
    return [
        (i.event.sequence, i.event.event_type, i.event.payload, i.event.version, i.event.branch)
        for i in items
    ]


def model_rows(log: tuple[MEvent, ...]) -> list[tuple[Any, ...]]:
    return [(seq, e.type, e.payload, e.version, e.home) for seq, e in enumerate(log)]


class RewindMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="rewinddb-stateful-"))
        self.path: Path | str = self.new_target()
        self.db = rewinddb.open(self.path)
        self.model = Model()
        #: Keys ``erase_kv`` erased: their rows stay (erased), so erasing again is no error.
        self.erased: set[str] = set()

    def new_target(self) -> Path | str:
        """Where this run's database goes (a directory; a URL on PostgreSQL)."""
        return self.tmp / "agent"

    def teardown(self) -> None:
        try:
            report = self.db.verify()  # whatever was written, refused or rolled back
            assert report.ok, str(report)
            self.db.close()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- drawing helpers -----------------------------------------------------------

    def view(self, name: str) -> rewinddb.BranchView:
        # BranchView does not check the name, so deleted and unknown branches can be read
        # (and must raise BranchNotFound).
        return rewinddb.BranchView(self.db, name)

    def pick(self, data: st.DataObject, label: str, live_only: bool = False) -> str:
        live = self.model.live_names()
        if live_only or data.draw(st.integers(0, 9), label=f"{label} any?") < 8:
            return data.draw(st.sampled_from(live), label=label)
        return data.draw(st.sampled_from(ALL_NAMES), label=label)

    def pick_version(self, data: st.DataObject, label: str) -> int | None:
        return data.draw(st.none() | st.integers(-1, self.model.clock + 1), label=label)

    @initialize(data=st.data())
    def seed(self, data: st.DataObject) -> None:
        """A little shared history on default, then one or two branches to diverge."""
        self.put(DEFAULT, "k1", data.draw(small_json, label="k1"))
        messages = [big_item(0, i, 0) for i in range(data.draw(st.integers(5, 30), label="n"))]
        self.json_write(DEFAULT, "d1", "$", {"a": {"b": 0}, "b": 0, "messages": messages})
        self.json_write(DEFAULT, "big", "$", messages[:-1])
        self.append(DEFAULT, "note", {"turn": 0}, None)
        self.do_fork(DEFAULT, "b1", None)
        if data.draw(st.booleans(), label="second branch"):
            self.do_fork(DEFAULT, "b2", data.draw(st.integers(0, self.model.clock), label="at"))

    # -- branches ----------------------------------------------------------------

    def do_fork(self, source: str, name: str, at: int | None) -> None:
        outcome = self.model.fork(source, name, at)
        error = outcome if isinstance(outcome, tuple) else None
        record = expect(error, lambda: self.db.branches.fork(source, name, at=at))
        if record is not None:
            assert isinstance(outcome, MBranch)
            got = (record.name, record.parent, record.forked_at, record.head, record.commits)
            assert got == (name, source, outcome.forked_at, outcome.forked_at, 0)

    @rule(data=st.data(), name=st.sampled_from((DEFAULT, *FORK_NAMES)))
    def fork_anything(self, data: st.DataObject, name: str) -> None:
        """Any source (even deleted or unknown), any name, any ``at``: errors included."""
        self.do_fork(self.pick(data, "source"), name, self.pick_version(data, "at"))

    def free_names(self) -> list[str]:
        return [name for name in FORK_NAMES if self.model.live(name) is None]

    @precondition(lambda self: self.free_names())
    @rule(data=st.data())
    def fork(self, data: st.DataObject) -> None:
        """A fork that succeeds: a live source, a free name, at its head or in its past."""
        source = self.pick(data, "source", live_only=True)
        name = data.draw(st.sampled_from(self.free_names()), label="name")
        branch = self.model.live(source)
        assert branch is not None
        at = data.draw(st.none() | st.integers(branch.forked_at, self.model.clock), label="at")
        self.do_fork(source, name, at)

    @rule(name=st.sampled_from(ALL_NAMES))
    def delete_branch(self, name: str) -> None:
        branch = self.model.live(name)
        if name == DEFAULT:
            error: Error | None = DELETE_DEFAULT
        else:
            error = NOT_FOUND if branch is None else None
        expect(error, lambda: self.db.branches.delete(name))
        if error is None:
            assert branch is not None
            branch.alive = False
            expect(NOT_FOUND, lambda: self.db.at(name))

    # -- kv ----------------------------------------------------------------------

    def put(self, name: str, key: str, value: Any) -> None:
        branch = self.model.live(name)
        version = expect(None if branch else NOT_FOUND, lambda: self.view(name).kv.put(key, value))
        if branch is not None:
            assert version == self.model.commit(branch, kv={**branch.head.kv, key: canon(value)})

    @rule(data=st.data(), key=st.sampled_from(KV_KEYS), value=kv_values)
    def kv_put(self, data: st.DataObject, key: str, value: Any) -> None:
        name = self.pick(data, "branch")
        if data.draw(st.booleans(), label="as tuple") and isinstance(value, list):
            value = tuple(value)
        self.put(name, key, value)

    @rule(data=st.data(), key=st.sampled_from(KV_KEYS))
    def kv_delete(self, data: st.DataObject, key: str) -> None:
        name = self.pick(data, "branch")
        branch = self.model.live(name)
        version = expect(None if branch else NOT_FOUND, lambda: self.view(name).kv.delete(key))
        if branch is None:
            return
        if key not in branch.head.kv:
            assert version is None
            return
        kv = dict(branch.head.kv)
        del kv[key]
        assert version == self.model.commit(branch, kv=kv)

    @rule(key=st.sampled_from(KV_KEYS))
    def erase_kv(self, key: str) -> None:
        """``db.erase_key``: the key reads as absent on every branch (deleted ones too) at
        every version, as if it had never been written; one no branch wrote is refused."""
        written = key in self.erased or any(
            key in snap.kv for branch in self.model.branches for snap in branch.snaps
        )
        expect(None if written else NO_SUCH_KEY, lambda: self.db.erase_key("kv", key))
        if not written:
            return
        self.erased.add(key)
        for branch in self.model.branches:
            branch.snaps = [
                Snap(
                    snap.version,
                    {k: v for k, v in snap.kv.items() if k != key},
                    snap.docs,
                    snap.log,
                )
                for snap in branch.snaps
            ]
        assert self.db.verify().ok

    @rule(data=st.data(), key=st.sampled_from(KV_KEYS))
    def kv_put_invalid(self, data: st.DataObject, key: str) -> None:
        name = self.pick(data, "branch", live_only=True)
        bad = data.draw(st.sampled_from([{1: "x"}, [float("nan")], {"a": {1, 2}}]), label="bad")
        expect(BAD_VALUE, lambda: self.view(name).kv.put(key, bad))

    # -- json --------------------------------------------------------------------

    def json_write(self, name: str, key: str, path: str, value: Any) -> None:
        branch = self.model.live(name)
        error: Error | None = None
        doc: Any = ABSENT
        if branch is None:
            error = NOT_FOUND
        else:
            try:
                doc = set_path(branch.head.docs.get(key, ABSENT), tokens_of(path), canon(value))
            except PathError:
                error = BAD_PATH
        version = expect(error, lambda: self.view(name).json.set(key, path, value))
        if error is None:
            assert branch is not None
            assert version == self.model.commit(branch, docs={**branch.head.docs, key: doc})

    @rule(
        data=st.data(),
        key=st.sampled_from(DOC_KEYS),
        path=st.sampled_from(SET_PATHS),
        value=small_json,
    )
    def json_set(self, data: st.DataObject, key: str, path: str, value: Any) -> None:
        self.json_write(self.pick(data, "branch"), key, path, value)

    @rule(data=st.data(), key=st.sampled_from(DOC_KEYS), path=st.sampled_from(SET_PATHS))
    def json_delete(self, data: st.DataObject, key: str, path: str) -> None:
        name = self.pick(data, "branch")
        branch = self.model.live(name)
        version = expect(
            None if branch else NOT_FOUND, lambda: self.view(name).json.delete(key, path)
        )
        if branch is None:
            return
        doc = branch.head.docs.get(key, ABSENT)
        if get_path(doc, tokens_of(path)) is ABSENT:
            assert version is None
            return
        docs = dict(branch.head.docs)
        new = delete_path(doc, tokens_of(path))
        if new is ABSENT:
            del docs[key]
        else:
            docs[key] = new
        assert version == self.model.commit(branch, docs=docs)

    @rule(data=st.data(), key=st.sampled_from(DOC_KEYS))
    def json_invalid(self, data: st.DataObject, key: str) -> None:
        name = self.pick(data, "branch", live_only=True)
        view = self.view(name)
        path = data.draw(st.sampled_from(["a", "$..a", "$.a[", "$[*]"]), label="bad path")
        expect(BAD_PATH, lambda: view.json.set(key, path, 1))
        expect(BAD_VALUE, lambda: view.json.set(key, "$.a", float("inf")))

    # -- shared arrays -------------------------------------------------------------

    @rule(
        data=st.data(),
        op=st.sampled_from(["append", "truncate", "edit", "replace", "same"]),
        where=st.sampled_from(
            ["kv", "kv_nested", "json_root", "json_nested", "json_path", "json_deep_path"]
        ),
    )
    def write_big_list(self, data: st.DataObject, op: str, where: str) -> None:
        name = self.pick(data, "branch")
        space = "kv" if where.startswith("kv") else "json"
        key = data.draw(st.sampled_from(KV_KEYS if space == "kv" else DOC_KEYS), label="key")
        branch = self.model.live(name)
        current = None
        if branch is not None:
            stored = (branch.head.kv if space == "kv" else branch.head.docs).get(key, ABSENT)
            current = current_list(stored)
        tag = data.draw(st.integers(0, 2), label="tag")
        style = data.draw(st.integers(0, 1), label="style")
        if current is None or op == "replace":
            size = data.draw(st.integers(5, 30), label="size")
            items = [big_item(tag, i, style) for i in range(size)]
        elif op == "append":
            more = data.draw(st.integers(1, 5), label="more")
            items = current + [big_item(tag, len(current) + i, style) for i in range(more)]
        elif op == "truncate":
            items = current[: data.draw(st.integers(0, len(current)), label="keep")]
        elif op == "edit" and current:
            index = data.draw(st.integers(0, len(current) - 1), label="index")
            items = list(current)
            items[index] = big_item(tag + 10, index, style)
        else:
            items = list(current)
        value: Any = tuple(items) if data.draw(st.booleans(), label="tuple") else items
        if where == "kv":
            self.put(name, key, value)
        elif where == "kv_nested":
            self.put(name, key, {"messages": value, "turns": len(items)})
        elif where == "json_root":
            self.json_write(name, key, "$", value)
        elif where == "json_nested":
            self.json_write(name, key, "$", {"messages": value, "b": len(items)})
        elif where == "json_path":
            self.json_write(name, key, "$.messages", value)
        else:
            self.json_write(name, key, "$.a.messages", value)

    # -- events ------------------------------------------------------------------

    def append(self, name: str, event_type: str, payload: Any, expected_index: int | None) -> None:
        branch = self.model.live(name)
        length = len(branch.head.log) if branch else 0
        error: Error | None = None
        if branch is None:
            error = NOT_FOUND
        elif expected_index is not None and expected_index != length:
            error = APPEND_CONFLICT
        event = expect(
            error,
            lambda: self.view(name).events.append(
                event_type, payload, expected_index=expected_index
            ),
        )
        if error is None:
            assert branch is not None
            model_event = self.model.append(branch, event_type, payload)
            got = (event.sequence, event.event_type, event.payload, event.version, event.branch)
            assert got == (length, event_type, model_event.payload, model_event.version, name)

    @rule(data=st.data(), event_type=st.sampled_from(EVENT_TYPES), payload=small_json)
    def append_event(self, data: st.DataObject, event_type: str, payload: Any) -> None:
        name = self.pick(data, "branch")
        branch = self.model.live(name)
        length = len(branch.head.log) if branch else 0
        expected_index = data.draw(
            st.sampled_from([None, None, length, length + 1, max(length - 1, 0)]),
            label="expected_index",
        )
        self.append(name, event_type, payload, expected_index)

    # -- merge -------------------------------------------------------------------

    @rule(
        data=st.data(),
        strategy=st.sampled_from(["fail", "source", "target"]),
        events=st.sampled_from(["skip", "append"]),
    )
    def merge_anything(self, data: st.DataObject, strategy: str, events: str) -> None:
        """Any two names: deleted, unknown and self merges included."""
        self.do_merge(self.pick(data, "source"), self.pick(data, "target"), strategy, events)

    @precondition(lambda self: len(self.model.live_names()) > 1)
    @rule(
        data=st.data(),
        strategy=st.sampled_from(["fail", "source", "target"]),
        events=st.sampled_from(["skip", "append"]),
    )
    def merge(self, data: st.DataObject, strategy: str, events: str) -> None:
        """A merge between two different live branches."""
        source = self.pick(data, "source", live_only=True)
        others = [name for name in self.model.live_names() if name != source]
        target = data.draw(st.sampled_from(others), label="target")
        self.do_merge(source, target, strategy, events)

    def do_merge(self, source: str, target: str, strategy: str, events: str) -> None:
        plan = self.model.merge_plan(source, target, strategy, events)
        if plan.ambiguous:
            return

        def call() -> rewinddb.MergeReceipt:
            return self.db.branches.merge(source, target, strategy=strategy, events=events)

        if plan.error == CONFLICT:
            with pytest.raises(rewinddb.MergeConflictError) as info:
                call()
            assert info.value.code == "conflict.merge"
            listed = sorted((c.primitive, c.key, c.path) for c in info.value.conflicts)
            assert listed == sorted(plan.conflicts), (listed, plan.conflicts)
            return
        receipt = expect(plan.error, call)
        if receipt is None:
            return
        carried = len(plan.since) if events == "append" else 0
        got = {
            "version": receipt.version,
            "base version": receipt.base[1],
            "conflicts": sorted(
                (c.primitive, c.key, c.path, c.resolution) for c in receipt.conflicts
            ),
            "keys applied": receipt.keys_applied,
            "events carried": receipt.events_carried,
            "events not carried": receipt.events_not_carried,
        }
        resolution = None if strategy == "fail" else strategy
        want = {
            "version": plan.version,
            "base version": plan.base_version,
            "conflicts": sorted((*c, resolution) for c in plan.conflicts),
            "keys applied": plan.keys_applied,
            "events carried": carried,
            "events not carried": len(plan.since) - carried,
        }
        assert got == want
        if plan.version is None:
            return
        tgt = self.model.live(target)
        src = self.model.live(source)
        assert tgt is not None and src is not None
        log = tgt.head.log
        if events == "append":
            log = log + tuple(
                MEvent(e.origin, e.type, e.payload, plan.version, target) for e in plan.since
            )
        self.model.merges.append(MMerge(tgt.bid, plan.version, src.bid, self.model.clock))
        assert self.model.commit(tgt, kv=plan.kv, docs=plan.docs, log=log) == plan.version

    # -- reads -------------------------------------------------------------------

    def check_read(self, name: str, as_of: int | None) -> None:
        error, snap = self.model.resolve(name, as_of)
        view = self.view(name)
        missing = object()
        for key in KV_KEYS:
            got = expect(error, partial(view.kv.get, key, missing, as_of=as_of))
            if snap is not None:
                want = snap.kv.get(key, ABSENT)
                assert (got is missing) if want is ABSENT else (got == want), short(key, got, want)
        keys = expect(error, lambda: view.kv.keys(as_of=as_of))
        if snap is not None:
            assert keys == sorted(snap.kv)
        for key in DOC_KEYS:
            for path in READ_PATHS:
                got = expect(error, partial(view.json.get, key, path, as_of=as_of, default=missing))
                if snap is not None:
                    want = get_path(snap.docs.get(key, ABSENT), tokens_of(path))
                    assert (got is missing) if want is ABSENT else (got == want), short(
                        key, path, got, want
                    )
        keys = expect(error, lambda: view.json.keys(as_of=as_of))
        if snap is not None:
            assert keys == sorted(snap.docs)
        items = expect(error, lambda: view.events.list(as_of=as_of))
        if snap is not None:
            assert event_rows(items) == model_rows(snap.log)
        length = expect(error, lambda: view.events.length(as_of=as_of))
        if snap is not None:
            assert length == len(snap.log)

    @rule(data=st.data())
    def read_as_of(self, data: st.DataObject) -> None:
        self.check_read(self.pick(data, "branch"), self.pick_version(data, "as_of"))

    @rule(data=st.data())
    def read_whole_history(self, data: st.DataObject) -> None:
        """Every version of one branch's history reads back exactly as it was."""
        name = self.pick(data, "branch", live_only=True)
        branch = self.model.live(name)
        assert branch is not None
        view = self.view(name)
        for version in range(branch.forked_at, self.model.clock + 1):
            snap = branch.at(version)
            got = view.snapshot(as_of=version)
            assert (got["version"], got["kv"], got["json"]) == (version, snap.kv, snap.docs)
            assert event_rows(view.events.list(as_of=version)) == model_rows(snap.log)

    # -- persistence ---------------------------------------------------------------

    def answers(self) -> dict[str, Any]:
        found = {}
        for name in self.model.live_names():
            view = self.view(name)
            found[name] = (
                view.snapshot(),
                [item.event for item in view.events.list()],
            )
        return found

    @rule()
    def close_and_reopen(self) -> None:
        before = self.answers()
        old = self.db
        old.close()
        expect(CLOSED, lambda: old.kv.get("k1"))
        expect(CLOSED, lambda: old.kv.put("k1", 1))
        self.db = rewinddb.open(self.path)
        assert self.answers() == before
        for name in self.model.live_names():
            self.check_read(name, None)

    # -- invariants ----------------------------------------------------------------

    @invariant()
    def clock_and_branches_agree(self) -> None:
        assert self.db.version == self.model.clock
        got = [(b.name, b.parent, b.forked_at, b.head, b.commits) for b in self.db.branches.list()]
        want = [
            (
                b.name,
                b.parent.name if b.parent else None,
                b.forked_at,
                b.commits[-1] if b.commits else b.forked_at,
                len(b.commits),
            )
            for b in self.model.branches
            if b.alive
        ]
        assert got == want
        for branch in self.db.branches.list():  # get() finds the same through other indexes
            assert self.db.branches.get(branch.name) == branch


# About 15-25 s on a laptop when the database agrees with the model. A failing run also
# shrinks its example, which can take a few minutes.
RewindMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.filter_too_much,
    ],
)
test_rewinddb_agrees_with_model = RewindMachine.TestCase


class PostgresRewindMachine(RewindMachine):
    """The same machine on the PostgreSQL backend (a fresh schema per example)."""

    new_url: Callable[[], str] | None = None  # set by the fixture below

    def new_target(self) -> Path | str:
        assert PostgresRewindMachine.new_url is not None
        return PostgresRewindMachine.new_url()


PostgresRewindMachine.TestCase.settings = settings(RewindMachine.TestCase.settings, max_examples=25)
test_rewinddb_agrees_with_model_on_postgresql = PostgresRewindMachine.TestCase


@pytest.fixture(autouse=True)
def _postgres_for_the_machine(request: pytest.FixtureRequest) -> None:
    if request.cls is PostgresRewindMachine.TestCase:
        PostgresRewindMachine.new_url = request.getfixturevalue("postgres").new_schema


# -- regressions the machine found (each a minimal history) ----------------------------


def test_merging_back_and_forth_carries_each_event_once(db: rewinddb.Database) -> None:
    db.branches.fork("default", "s")
    s = db.at("s")
    s.events.append("e1")
    db.branches.merge("s", "default", events="append")  # default now has e1
    db.events.append("t1")
    db.branches.merge("default", "s", events="append")  # s now has t1; base moves on
    s.events.append("e2")
    receipt = db.branches.merge("s", "default", events="append")
    assert [item.event.event_type for item in db.events.list()] == ["e1", "t1", "e2"]
    assert (receipt.events_carried, receipt.events_not_carried) == (1, 0)


def test_a_merge_does_not_carry_the_targets_own_event_back(db: rewinddb.Database) -> None:
    db.events.append("note")
    db.branches.fork("default", "b1")
    db.branches.fork("default", "b2", at=0)
    db.branches.merge("default", "b2", events="skip")  # b2 takes default as of version 1
    db.branches.merge("b1", "b2", events="append")  # b2 gets a copy of default's "note"
    receipt = db.branches.merge("b2", "default", events="append")
    assert [item.event.event_type for item in db.events.list()] == ["note"]
    assert receipt.up_to_date and receipt.events_carried == 0
