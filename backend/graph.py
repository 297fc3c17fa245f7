"""The branch graph: what the web explorer and the notebook widget draw.

One lane per branch (in creation order, ``default`` at lane 0), one point per event and
per commit that appended no event, an edge from each fork point to the branch, and an
edge for each merge from the source's merged version to the merge commit. The front ends
only draw this; they compute no history of their own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ._engine import Engine
from ._values import loads, short_text
from .events import erased_at

PointKind = Literal["event", "commit", "merge"]
#: Characters of an event's payload shown in a dot's hover label.
SUMMARY_CHARS = 80


@dataclass(frozen=True)
class GraphBranch:
    name: str
    parent: str | None
    forked_at: int
    lane: int
    deleted: bool = False


@dataclass(frozen=True)
class GraphPoint:
    """A dot: an event (``sequence`` set), a commit that wrote state, or a merge."""

    branch: str
    version: int
    kind: PointKind
    label: str
    sequence: int | None = None
    summary: str = ""


@dataclass(frozen=True)
class GraphEdge:
    """A fork (parent at ``from_version`` -> the branch) or a merge (source -> target)."""

    kind: Literal["fork", "merge"]
    from_branch: str
    from_version: int
    to_branch: str
    to_version: int


@dataclass(frozen=True)
class HistoryGraph:
    branches: list[GraphBranch] = field(default_factory=list)
    points: list[GraphPoint] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)

    def lane(self, branch: str) -> int:
        return next(b.lane for b in self.branches if b.name == branch)

    def to_dict(self) -> dict[str, Any]:
        return {
            "branches": [asdict(branch) for branch in self.branches],
            "points": [
                {
                    "branch": p.branch,
                    "version": p.version,
                    "kind": p.kind,
                    "label": p.label,
                    "sequence": p.sequence,
                    "summary": p.summary,
                }
                for p in self.points
            ],
            "edges": [asdict(edge) for edge in self.edges],
        }


def build_graph(
    engine: Engine, *, include_deleted: bool = False, max_points_per_branch: int | None = None
) -> HistoryGraph:
    """The history graph of the whole database (deleted branches only if asked).

    Long branches are thinned *before* their events are read: a branch's own events have
    dense sequences, so the sequences to keep are chosen from each branch's count, and
    only those events (and their payloads, for the hover summaries) are fetched.
    """
    conn = engine.conn
    rows = conn.fetchall(
        "SELECT b.id, b.name, p.name, b.forked_at, b.deleted_at FROM rewind_branches b "
        "LEFT JOIN rewind_branches p ON p.id = b.parent_id ORDER BY b.id"
    )
    names: dict[int, str] = {}
    branches: list[GraphBranch] = []
    for branch_id, name, parent, forked_at, deleted_at in rows:
        if deleted_at is not None and not include_deleted:
            continue
        names[branch_id] = name
        branches.append(GraphBranch(name, parent, forked_at, len(branches), deleted_at is not None))
    points: dict[str, list[GraphPoint]] = {b.name: [] for b in branches}
    for branch_id, first, last in conn.fetchall(
        "SELECT branch_id, min(sequence), max(sequence) FROM rewind_events GROUP BY branch_id"
    ):
        if branch_id in names:
            name = names[branch_id]
            points[name] += _event_points(
                engine, branch_id, name, first, last, max_points_per_branch
            )
    edges = [
        GraphEdge("fork", b.parent, b.forked_at, b.name, b.forked_at)
        for b in branches
        if b.parent is not None and b.parent in points
    ]
    # Commits that appended no event (state writes) and merges: the dots events don't give.
    for version, branch_id, trigger, message, merge_id, merge_version in conn.fetchall(
        "SELECT version, branch_id, trigger, message, merge_branch_id, merge_version "
        "FROM rewind_commits c WHERE merge_branch_id IS NOT NULL OR NOT EXISTS ("
        "SELECT 1 FROM rewind_events e WHERE e.branch_id = c.branch_id "
        "AND e.version = c.version) ORDER BY version"
    ):
        if branch_id not in names:
            continue
        name = names[branch_id]
        if merge_id is not None:
            source = names.get(merge_id)
            points[name].append(GraphPoint(name, version, "merge", f"merge from {source}"))
            if source is not None:
                edges.append(GraphEdge("merge", source, merge_version, name, version))
        else:
            points[name].append(GraphPoint(name, version, "commit", trigger or message or "write"))
    edges = [_from_last_point(edge, points, branches) for edge in edges]
    flat: list[GraphPoint] = []
    for branch in branches:
        own = sorted(points[branch.name], key=lambda p: (p.version, p.sequence or 0))
        flat += _thin(own, max_points_per_branch)
    return HistoryGraph(branches, flat, edges)


def _event_points(
    engine: Engine, branch_id: int, name: str, first: int, last: int, limit: int | None
) -> list[GraphPoint]:
    """Dots for a branch's own events ``first..last`` (dense), at most ``limit`` of them,
    evenly spaced, the first and the last kept."""
    count = last - first + 1
    sql = (
        "SELECT sequence, version, event_type, payload FROM rewind_events "
        "WHERE branch_id = ? AND sequence "
    )
    if limit is None or count <= limit:
        rows = engine.conn.fetchall(
            sql + "BETWEEN ? AND ? ORDER BY sequence", (branch_id, first, last)
        )
    else:
        step = (count - 1) / max(limit - 1, 1)
        wanted = sorted({first + round(i * step) for i in range(limit)} | {last})
        rows = []
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            rows += engine.conn.fetchall(
                sql + f"IN ({marks}) ORDER BY sequence", (branch_id, *chunk)
            )
    return [
        GraphPoint(name, version, "event", event_type, sequence, _summary(payload))
        for sequence, version, event_type, payload in rows
    ]


def _summary(payload: bytes) -> str:
    if erased_at(payload) is not None:
        return "[erased]"
    return short_text(loads(bytes(payload)), SUMMARY_CHARS)


def _from_last_point(
    edge: GraphEdge, points: dict[str, list[GraphPoint]], branches: list[GraphBranch]
) -> GraphEdge:
    """A merge edge starts at the source's last point at or before the merged version
    (the merged version is the clock then, often far past the source's last write)."""
    if edge.kind != "merge":
        return edge
    forked_at = next(b.forked_at for b in branches if b.name == edge.from_branch)
    start = max(
        (p.version for p in points[edge.from_branch] if p.version <= edge.from_version),
        default=forked_at,
    )
    return GraphEdge("merge", edge.from_branch, start, edge.to_branch, edge.to_version)


def _thin(points: list[GraphPoint], limit: int | None) -> list[GraphPoint]:
    """At most ``limit`` points, evenly spaced, keeping the first, the last and merges."""
    if limit is None or len(points) <= limit:
        return points
    step = len(points) / max(limit - 1, 1)
    keep = {round(i * step) for i in range(limit - 1)} | {len(points) - 1}
    return [p for i, p in enumerate(points) if i in keep or p.kind == "merge"]
