"""What each page shows, as plain JSON-able dicts built from rewinddb's public API.

The HTML pages and their JSON twins are rendered from the same dict, so the two never
disagree. Nothing here computes history or diffs of its own: it asks ``rewinddb``.
"""

from __future__ import annotations

import re
from typing import Any

import rewinddb

from .urls import branch_url, event_url, key_url

#: Events on one page of a branch's timeline.
PAGE_SIZE = 100
#: Dots the overview graph draws at most (long branches are thinned evenly).
GRAPH_POINTS = 5000

_POINT = re.compile(r"^(?P<branch>.+)@(?P<version>\d+)$")


class PageNotFound(Exception):
    """What the URL names does not exist (an event past the end, a key never written)."""


def overview(db: rewinddb.Database) -> dict[str, Any]:
    """The branch table and the (thinned) branch graph; ``graph`` is the
    ``HistoryGraph`` itself (``overview_json`` makes it JSON)."""
    with db.read():
        branches = db.branches.list()
        per_branch = max(2, GRAPH_POINTS // max(len(branches), 1))
        live = {branch.name for branch in branches}
        rows = []
        for branch in branches:
            row = branch.to_dict()
            row["url"] = branch_url(branch.name)
            row["parent_live"] = branch.parent in live
            rows.append(row)
        return {
            "version": db.version,
            "stamp": db.stamp,
            "branches": rows,
            "graph": db.graph(max_points_per_branch=per_branch),
        }


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
) -> dict[str, Any]:
    """A branch's record, its event types (for the filter) and the first timeline page."""
    view = db.at(branch)
    with db.read():
        info = view.info().to_dict()
        info["url"] = branch_url(branch)
        info["parent_live"] = info["parent"] is not None and db.branches.exists(info["parent"])
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


def event_detail(
    db: rewinddb.Database, branch: str, sequence: int, *, readable: bool = False
) -> dict[str, Any]:
    """The state as of event ``sequence`` on ``branch``, who last changed each key, and
    the diff from the previous event (from the fork point, for the branch's first;
    ``readable``: of values decoded as pages show them, ``rewinddb.presenters.readable``).

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
        previous = _previous_point(db, view, info, event)
        state: dict[str, list[dict[str, Any]]] | None = None
        diff = None
        if point is not None:
            here = db.at(point[0])
            snapshot = here.snapshot(as_of=point[1])
            blame = here.blame(as_of=point[1])
            state = {
                space: [
                    _state_row(branch, space, key, value, blame[space].get(key))
                    for key, value in snapshot[space].items()
                ]
                for space in ("kv", "json", "state")
            }
            if previous is not None:
                diff = db.diff(
                    previous["branch"],
                    point[0],
                    as_of_a=previous["version"],
                    as_of_b=point[1],
                    readable=readable,
                ).to_dict()
        return {
            "branch": branch,
            "event": _event_row(branch, event),
            "point": None if point is None else {"branch": point[0], "version": point[1]},
            "previous": previous,
            "state": state,
            "diff": diff,
            "unavailable": None
            if point is not None
            else f"this event happened on {event.branch!r}, which was deleted: its state "
            f"can no longer be read (this branch's own history starts at version {forked_at})",
            "length": length,
        }


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
        return {
            "branch": branch,
            "space": space,
            "key": key,
            "versions": [version.to_dict() for version in versions[-limit:]],
            "older": older,
        }


def parse_point(db: rewinddb.Database, text: str) -> tuple[str, int | None]:
    """``BRANCH@VERSION`` (or just ``BRANCH``: its head) -> (branch, version or None).

    The explorer's links always name a version, so ``run@5`` is ``run`` at 5 whenever
    ``run`` exists, even if a branch called ``run@5`` exists too (its links read
    ``run@5@VERSION``); the text is a branch name only when nothing else fits.
    """
    match = _POINT.match(text)
    if match and (db.branches.exists(match.group("branch")) or not db.branches.exists(text)):
        return match.group("branch"), int(match.group("version"))
    return text, None


def compare(db: rewinddb.Database, a: str, b: str, *, readable: bool = False) -> dict[str, Any]:
    """Two points side by side: their logs from the common fork point, the first
    divergent event, and the state diff from ``a`` to ``b`` (``readable``: as
    ``event_detail``)."""
    (branch_a, as_of_a), (branch_b, as_of_b) = parse_point(db, a), parse_point(db, b)
    with db.read():
        diff = db.diff(branch_a, branch_b, as_of_a=as_of_a, as_of_b=as_of_b, readable=readable)
        version_a, version_b = diff.a.version, diff.b.version
        log_a = db.at(branch_a).events.list(as_of=version_a)
        log_b = db.at(branch_b).events.list(as_of=version_b)
        split = rewinddb.diff_event_logs(log_a, log_b)
        shown_from = max(split.common_prefix - 3, 0)  # a little shared context
        return {
            "a": {"branch": branch_a, "version": version_a, "events": len(log_a)},
            "b": {"branch": branch_b, "version": version_b, "events": len(log_b)},
            "common_prefix": split.common_prefix,
            "first_divergent": {
                "a": split.only_a[0].sequence if split.only_a else None,
                "b": split.only_b[0].sequence if split.only_b else None,
            },
            "shown_from": shown_from,
            "log_a": [_event_row(branch_a, item.event) for item in log_a[shown_from:]],
            "log_b": [_event_row(branch_b, item.event) for item in log_b[shown_from:]],
            "diff": diff.to_dict(),
        }


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
