"""What each page shows, as plain JSON-able dicts built from rewinddb's public API.

The HTML pages and their JSON twins are rendered from the same dict, so the two never
disagree. Nothing here computes history or diffs of its own: it asks ``rewinddb``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import rewinddb
from rewinddb import story
from rewinddb.presenters import STATE_KEYS, Fork, Presenter, presenter_for, to_dict
from rewinddb.story import status_text

from .urls import branch_url, event_url, key_url, step_url

#: Events on one page of a branch's timeline.
PAGE_SIZE = 100
#: The spaces of a state, in the order pages show them.
SPACES = ("kv", "json", "state")
#: Events of each side a comparison lists, from a little before the first that differs.
LOG_LIMIT = 40
#: Events committed in one version an event page looks for on either side of it.
TOGETHER = 64
#: Dots the overview graph draws at most (long branches are thinned evenly).
GRAPH_POINTS = 5000

_POINT = re.compile(r"^(?P<branch>.+)@(?P<version>\d+)$")


class PageNotFound(Exception):
    """What the URL names does not exist (an event past the end, a key never written)."""


def overview(db: rewinddb.Database, *, include_internal: bool = False) -> dict[str, Any]:
    """The attempts table and the (thinned) branch graph of the branches it lists: the
    integrations' bookkeeping branches and an empty ``default`` are left out of both
    unless ``include_internal``. ``graph`` is the ``HistoryGraph`` itself
    (``overview_json`` makes it JSON)."""
    with db.read():
        attempts = story.attempts(db, include_internal=True)
        shown = [a for a in attempts if include_internal or not a.summary.internal]
        live = {attempt.branch.name for attempt in attempts}
        per_branch = max(2, GRAPH_POINTS // max(len(shown), 1))
        titles = {attempt.branch.name: attempt.summary.title for attempt in attempts}
        rows = [_attempt_row(db, attempt, live, titles) for attempt in shown]
        names = {attempt.branch.name for attempt in shown}
        return {
            "version": db.version,
            "stamp": db.stamp,
            "branches": rows,
            "hidden": [a.branch.name for a in attempts if a.branch.name not in names],
            "all": include_internal,
            "graph": visible_graph(db.graph(max_points_per_branch=per_branch), names),
        }


def _attempt_row(
    db: rewinddb.Database, attempt: story.Attempt, live: set[str], titles: dict[str, str]
) -> dict[str, Any]:
    """An overview row: the branch record, how it ended, how much of it is its own (its
    own commits, and the events it appended after its fork point), and of a thread told
    in several attempts, the one it continues on (``titles``: each branch's title)."""
    branch, summary = attempt.branch, attempt.summary
    row = branch.to_dict()
    row["url"] = branch_url(branch.name)
    row["parent_live"] = branch.parent in live
    own_events = branch.events
    if branch.parent is not None and branch.parent in live:
        own_events -= db.at(branch.parent).events.length(as_of=branch.forked_at)
    fork = summary.fork
    row.update(
        kind=summary.kind,
        title=summary.title,
        status=summary.status,
        status_text=status_text(summary),
        outcome=summary.outcome,
        waiting_on=summary.waiting_on,
        internal=summary.internal,
        fork=None if fork is None else {"label": fork.label, "kind": fork.kind},
        fork_url=fork_url(fork, live),
        own_events=own_events,
        current=summary.current,
        current_title=titles.get(summary.current or "", summary.current),
    )
    return row


def fork_url(fork: Fork | None, live: set[str]) -> str | None:
    """Where a fork's label leads: the parent's step it continues from (or the parent,
    when its presenter names no step), while the parent lives."""
    if fork is None or fork.parent not in live:
        return None
    return branch_url(fork.parent) if fork.step is None else step_url(fork.parent, fork.step)


def visible_graph(graph: rewinddb.HistoryGraph, names: set[str]) -> rewinddb.HistoryGraph:
    """``graph`` with only the branches in ``names``, in their order, lanes renumbered."""
    if len(names) == len(graph.branches):
        return graph
    branches = [
        replace(branch, lane=lane)
        for lane, branch in enumerate(b for b in graph.branches if b.name in names)
    ]
    return rewinddb.HistoryGraph(
        branches=branches,
        points=[point for point in graph.points if point.branch in names],
        edges=[e for e in graph.edges if e.from_branch in names and e.to_branch in names],
    )


def overview_json(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "graph": data["graph"].to_dict()}


def timeline(
    db: rewinddb.Database,
    branch: str,
    *,
    after: int | None = None,
    event_type: str | None = None,
    search: str | None = None,
    limit: int = PAGE_SIZE,
) -> dict[str, Any]:
    """One page of a branch's events, oldest first, after sequence ``after``."""
    view = db.at(branch)
    with db.read():
        items = view.events.list(
            after=after, event_type=event_type or None, search=search or None, limit=limit + 1
        )
        events = [_event_row(branch, item.event) for item in items[:limit]]
        last = events[-1]["sequence"] if events else after
        return {
            "branch": branch,
            "version": db.version,
            "events": events,
            "after": after,
            "last": last,
            "more": len(items) > limit,
        }


def branch_page(
    db: rewinddb.Database,
    branch: str,
    *,
    event_type: str | None = None,
    search: str | None = None,
    record: rewinddb.Branch | None = None,
) -> dict[str, Any]:
    """A branch's record (``record``, when the caller read it already), its event types
    (for the filter) and the first timeline page."""
    view = db.at(branch)
    with db.read():
        info = branch_info(db, branch, record)
        check = view.events.verify()
        return {
            "branch": info,
            "verification": {
                "ok": check.ok,
                "checked": check.checked,
                "first_bad": check.first_bad,
                "reason": check.reason,
            },
            "event_types": view.events.types(),
            "timeline": timeline(db, branch, event_type=event_type, search=search),
        }


def branch_info(
    db: rewinddb.Database, branch: str, record: rewinddb.Branch | None = None
) -> dict[str, Any]:
    """A branch's record (read unless given) as a page shows it: with its URL, and
    whether its parent lives."""
    with db.read():
        info = (record or db.at(branch).info()).to_dict()
        info["url"] = branch_url(branch)
        info["parent_live"] = info["parent"] is not None and db.branches.exists(info["parent"])
        return info


def event_detail(
    db: rewinddb.Database, branch: str, sequence: int, *, readable: bool = False
) -> dict[str, Any]:
    """The state as of event ``sequence`` on ``branch``, who last changed each key, and
    what the event changed: itself, and the state its version changed since the event
    before (from the fork point, for the branch's first; ``readable``: of values
    decoded as pages show them, ``rewinddb.presenters.readable``).

    Events committed in one version (``together``) share that version's state change:
    it is shown once, with the last of them (the one blame names, ``state_with``); each
    of them shows itself as the event it added, never the others.

    A branch has no history of its own before its fork point, so an inherited event is
    read on the branch it happened on. If that ancestor was deleted, its reads are gone:
    the state is then reported unavailable, and the diff starts at the fork point.
    """
    view = db.at(branch)
    with db.read():
        length = view.events.length()
        if sequence >= length:
            raise PageNotFound(f"branch {branch!r} has {length} events; there is no #{sequence}")
        event = view.events.get(sequence)
        info = view.info()
        forked_at = info.forked_at
        point = (branch, event.version) if event.version >= forked_at else None
        if point is None and db.branches.exists(event.branch):
            point = (event.branch, event.version)
        together = _committed_with(db, view, event)
        first = event if together[0] == sequence else view.events.get(together[0])
        previous = _previous_point(db, view, info, first)
        state: dict[str, list[dict[str, Any]]] | None = None
        partial: list[str] = []
        diff = None
        if point is not None:
            here = db.at(point[0])
            snapshot = here.snapshot(as_of=point[1], limit=STATE_KEYS + 1)
            blame = here.blame(as_of=point[1], limit=STATE_KEYS)
            partial = [space for space in SPACES if len(snapshot[space]) > STATE_KEYS]
            state = {
                space: [
                    _state_row(branch, space, key, value, blame[space].get(key))
                    for key, value in list(snapshot[space].items())[:STATE_KEYS]
                ]
                for space in SPACES
            }
            if previous is not None:
                whole = db.diff(
                    previous["branch"],
                    point[0],
                    as_of_a=previous["version"],
                    as_of_b=point[1],
                    readable=readable,
                )
                own = _own_changes(whole.changes, sequence, together)
                diff = replace(whole, changes=own).to_dict()
                presenter = presenter_for(info)
                _mark_bookkeeping(presenter, own, diff)
                # The same changes as the presenter tells them (a step page's rows).
                told = presenter.diff_rows(db, whole.a, whole.b, own)
                diff["rows"] = [to_dict(row) for row in told]
        return {
            "branch": branch,
            "event": _event_row(branch, event),
            "point": None if point is None else {"branch": point[0], "version": point[1]},
            "previous": previous,
            "state": state,
            "state_partial": partial,
            "state_keys": STATE_KEYS,
            "diff": diff,
            "unavailable": None
            if point is not None
            else f"this event happened on {event.branch!r}, which was deleted: its state "
            f"can no longer be read (this branch's own history starts at version {forked_at})",
            "length": length,
            "together": together if len(together) > 1 else [],
            "state_with": together[-1] if together[-1] != sequence else None,
        }


def _mark_bookkeeping(
    presenter: Presenter, changes: list[rewinddb.Change], diff: dict[str, Any]
) -> None:
    """Give each row of ``diff`` (``Diff.to_dict()`` of ``changes``) what ``presenter``
    calls its key (``label``) and whether it is bookkeeping (``hidden``), as step pages
    do."""
    for change, row in zip(changes, diff["changes"], strict=True):
        row["label"] = presenter.key_label(change.primitive, change.key)
        row["hidden"] = presenter.hidden(change)


def _committed_with(
    db: rewinddb.Database, view: rewinddb.BranchView, event: rewinddb.Event
) -> list[int]:
    """The sequences of the events appended in ``event``'s version (``event`` among
    them), in order: what the branch that wrote it wrote then, or, that branch deleted,
    the events of ``view``'s log around it (at most ``TOGETHER`` on either side)."""
    if db.branches.exists(event.branch):
        written = db.at(event.branch).written(event.version).events
        if any(item.hash == event.hash for item in written):  # not a reused name
            return sorted(item.sequence for item in written)
    start = max(event.sequence - TOGETHER, 0)
    items = view.events.list(after=start - 1 if start else None, limit=2 * TOGETHER + 1)
    together = [item.event.sequence for item in items if item.event.version == event.version]
    return together if event.sequence in together else [event.sequence]


def _own_changes(
    changes: list[rewinddb.Change], sequence: int, together: list[int]
) -> list[rewinddb.Change]:
    """An event's own rows of a diff over its version: the event itself and, for the
    last event of its version, the version's state changes."""
    owns_state = together[-1] == sequence
    return [
        change
        for change in changes
        if (change.primitive == "events" and change.key == str(sequence))
        or (change.primitive != "events" and owns_state)
    ]


def _previous_point(
    db: rewinddb.Database, view: rewinddb.BranchView, info: rewinddb.Branch, event: rewinddb.Event
) -> dict[str, Any] | None:
    """Where "what changed" starts: the previous event's point, or the fork point."""
    sequence, forked_at = event.sequence, info.forked_at
    if sequence > 0:
        before = view.events.get(sequence - 1)
        # An inherited event is read where it happened, while that branch exists.
        where = view.branch if before.version >= forked_at else before.branch
        if where == view.branch or db.branches.exists(where):
            return {"branch": where, "version": before.version, "label": f"event #{sequence - 1}"}
        return {
            "branch": view.branch,
            "version": forked_at,
            "label": f"the fork point (version {forked_at}; event #{sequence - 1} "
            "was on a deleted branch)",
        }
    owner = view.branch
    if event.branch != view.branch:  # inherited from an ancestor: that one's fork point
        if not db.branches.exists(event.branch):
            return None
        owner, info = event.branch, db.branches.get(event.branch)
    return {"branch": owner, "version": info.forked_at, "label": "the fork point"}


def key_history(
    db: rewinddb.Database,
    branch: str,
    space: str,
    key: str,
    *,
    readable: bool = False,
    limit: int = PAGE_SIZE,
    before: int | None = None,
) -> dict[str, Any]:
    """The newest ``limit`` versions of one key older than version ``before`` (default:
    the newest), each with the diff from the version before it (``readable``: as
    ``event_detail``). ``older`` is the ``before`` of the next page, or None. Pages read
    on this branch all the way back, inherited versions included (through its lineage,
    so a deleted or renamed ancestor does not matter)."""
    with db.read():
        versions = db.at(branch).key_history(
            space, key, readable=readable, limit=limit + 1, before=before
        )
        if not versions:
            if before is not None:
                raise PageNotFound(f"{branch!r} sees no versions of {key!r} before {before}")
            raise PageNotFound(f"{space} key {key!r} was never written on {branch!r}")
        # The extra version read says there are older ones.
        older = versions[-limit].entry.version if len(versions) > limit else None
        shown = versions[-limit:]
        base = versions[-limit - 1] if len(versions) > limit else None
        told = story.key_story(db, branch, space, key, shown, base=base)
        return {
            "branch": branch,
            "space": space,
            "key": key,
            # What its presenter calls it ("channel notes of thread t"), or None.
            "title": None if told is None else told.title,
            "versions": [
                _key_version(branch, version, told.versions[index] if told else None)
                for index, version in enumerate(shown)
            ],
            "older": older,
        }


def _key_version(
    branch: str, version: rewinddb.KeyVersion, told: story.KeyStep | None
) -> dict[str, Any]:
    """One version of a key: as stored (its entry and changes), and, where its presenter
    tells it, its rows in the value's own shape and the step it was written at."""
    row = version.to_dict()
    if told is not None:
        row["rows"] = [to_dict(shown) for shown in told.rows]
        step = told.step
        row["step"] = (
            None
            if step is None
            else {
                "number": step.number,
                "label": step.label,
                "version": step.version,
                "url": step_url(branch, step.version),
            }
        )
    return row


def parse_point(db: rewinddb.Database, text: str) -> tuple[str, int | None]:
    """``BRANCH@VERSION`` (or just ``BRANCH``: its head) -> (branch, version or None).

    The explorer's links always name a version, so ``run@5`` is ``run`` at 5 whenever
    ``run`` exists, even if a branch called ``run@5`` exists too (its links read
    ``run@5@VERSION``); the text is a branch name only when nothing else fits.
    """
    match = _POINT.match(text)
    if match and (db.branches.exists(match.group("branch")) or not db.branches.exists(text)):
        return match.group("branch"), int(match.group("version"))
    name, at, version = text.rpartition("@")
    if at and name and db.branches.exists(name) and not db.branches.exists(text):
        raise rewinddb.InvalidInputError(
            f"{text!r}: the version after @ must be a number (BRANCH@VERSION), not {version!r}",
            code="invalid.compare",
        )
    return text, None


def compare(db: rewinddb.Database, a: str, b: str, *, readable: bool = False) -> dict[str, Any]:
    """Two points as two attempts: how each ended, where their histories part (the first
    step each took its own way, steps compared by what they did), their event logs from
    a little before the first event that differs (events compared by type and payload;
    at most ``LOG_LIMIT`` a side), and the state diff from ``a`` to ``b`` without the
    events (the logs show them), each row marked ``hidden`` when its presenter calls it
    bookkeeping (``readable``: as ``event_detail``). ``comparison`` is the
    ``StoryComparison`` itself (``compare_json`` makes it JSON)."""
    with db.read():
        (branch_a, as_of_a), (branch_b, as_of_b) = parse_point(db, a), parse_point(db, b)
        # A point without a version is the branch now: at the clock's version.
        version_a = db.version if as_of_a is None else as_of_a
        version_b = db.version if as_of_b is None else as_of_b
        told = story.compare_stories(db, (branch_a, version_a), (branch_b, version_b))
        split = told.events
        shown_from = max(split.common_prefix - 3, 0)  # a little shared context
        state: dict[str, Any] = {
            "a": {"branch": branch_a, "version": version_a},
            "b": {"branch": branch_b, "version": version_b},
            # The rows as b's presenter tells them (a channel's value in its own shape),
            # each with the stored change behind it.
            "rows": list(told.rows),
        }
        if not readable:  # the store's own diff too, values as stored
            raw = db.diff(branch_a, branch_b, as_of_a=version_a, as_of_b=version_b, events=False)
            presenter = story.presenter_of(db, branch_b)
            changes = [
                {
                    **c.to_dict(),
                    "label": presenter.key_label(c.primitive, c.key),
                    "hidden": presenter.hidden(c),
                }
                for c in raw.changes
            ]
            state.update(counts=_counts(changes), changes=changes)
        return {
            "a": {"branch": branch_a, "version": version_a, "events": split.length_a},
            "b": {"branch": branch_b, "version": version_b, "events": split.length_b},
            "common_prefix": split.common_prefix,
            "first_divergent": {
                "a": split.first_a.sequence if split.first_a else None,
                "b": split.first_b.sequence if split.first_b else None,
            },
            "shown_from": shown_from,
            "log_a": _log_rows(db, branch_a, version_a, shown_from),
            "log_b": _log_rows(db, branch_b, version_b, shown_from),
            "log_limit": LOG_LIMIT,
            "diff": state,
            "diff_events_left_out": split.differing,
            "comparison": told,
        }


def compare_json(data: dict[str, Any]) -> dict[str, Any]:
    told: story.StoryComparison = data["comparison"]
    comparison = to_dict(told)
    comparison.pop("events")  # the logs and first_divergent say it
    comparison.pop("rows")  # the diff says it
    for side, summary in (("a", told.a), ("b", told.b)):
        comparison[side]["status_text"] = status_text(summary)
    diff = {**data["diff"], "rows": [to_dict(row) for row in data["diff"]["rows"]]}
    return {**data, "diff": diff, "comparison": comparison}


def _log_rows(db: rewinddb.Database, branch: str, version: int, start: int) -> list[dict[str, Any]]:
    """At most ``LOG_LIMIT`` events of ``branch`` as of ``version`` from sequence ``start``."""
    items = db.at(branch).events.list(
        as_of=version, after=start - 1 if start else None, limit=LOG_LIMIT
    )
    return [_event_row(branch, item.event) for item in items]


def _counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    counts = {"added": 0, "removed": 0, "changed": 0}
    for row in rows:
        counts[row["kind"]] += 1
    return counts


def _event_row(branch: str, event: rewinddb.Event) -> dict[str, Any]:
    row = event.to_dict()
    row["url"] = event_url(branch, event.sequence)
    return row


def _state_row(
    branch: str, space: str, key: str, value: Any, last: rewinddb.LastWrite | None
) -> dict[str, Any]:
    return {
        "key": key,
        "value": value if not isinstance(value, bytes) else f"<{len(value)} bytes>",
        "url": key_url(branch, space, key),
        "last_write": None if last is None else last.to_dict(),
    }


def value(db: rewinddb.Database, branch: str, space: str, key: str, as_of: int | None) -> Any:
    """One whole value (``PageNotFound`` if the key does not exist there)."""
    view = db.at(branch)
    missing = object()
    if space == "kv":
        found = view.kv.get(key, default=missing, as_of=as_of)
    elif space == "json":
        found = view.json.get(key, default=missing, as_of=as_of)
    elif space == "state":
        found = view.state.get(key, default=missing, as_of=as_of)
    else:
        raise rewinddb.InvalidInputError(
            f"space must be one of kv, json, state, not {space!r}", code="invalid.space"
        )
    if found is missing:
        raise PageNotFound(f"{space} key {key!r} does not exist on {branch!r} at {as_of}")
    return found if not isinstance(found, bytes) else f"<{len(found)} bytes>"
