"""The branch graph as a Plotly figure, shared by the web explorer and the notebook widget.

One lane per branch, a dot per event or commit, an S-curve from each fork point and a
dashed one for each merge. Plotly is imported here, not by ``import rewinddb``: the core
installs without it (``pip install "rewinddb[web]"`` or ``[notebook]`` brings it).

The figure uses a handful of traces whatever the number of branches (lanes are grouped
by colour, edges by kind), so a database with a thousand branches still draws quickly.
The dots are always the last trace; their ``customdata`` is ``[branch, sequence or -1,
version]`` so click handlers can tell which point was picked.

Drawn as stored, a lane is named by its branch and a dot by its event type and payload
(or its commit's trigger). :func:`story_labels` names them in the agent's words instead:
a lane by its presenter's title (and, for an edit or a replay, which step it edits), a
commit by its step (``step 4: agent (loop)`` and the message it added), an event by the
step it made. Branches of the generic presenter keep their stored labels, which are that
presenter's words already.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

from .errors import RewindError
from .graph import GraphPoint, HistoryGraph

if TYPE_CHECKING:
    from .database import Database
    from .presenters import Message, Presenter, Step

SYMBOLS = {"event": "circle", "commit": "square", "merge": "diamond"}
COLORS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
]
#: Lanes shown at once; a taller graph scrolls (pans) vertically.
VISIBLE_LANES = 30
#: Characters of a lane's name (each of its lines) and of a dot's message line.
LANE_CHARS = 24
MESSAGE_CHARS = 80
#: Steps :func:`story_labels` asks the presenters for, at most, over the whole graph
#: (each request counts as at least ``REQUEST_COST``): lanes past it keep stored labels.
STEP_BUDGET = 1000
REQUEST_COST = 25
#: Steps asked for in one request.
STEP_REQUEST = 500


@dataclass(frozen=True)
class GraphLabels:
    """What the graph calls its lanes and dots, in the agent's words: ``titles`` and
    ``lanes`` (a lane's tick, one or two lines) by branch, and the lines of a dot's
    hover label by ``(branch, version, sequence)`` (None for a commit or a merge).
    A branch or a dot left out is labelled as stored. The texts are plain (not HTML):
    the figure escapes them."""

    titles: dict[str, str] = field(default_factory=dict)
    lanes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    points: dict[tuple[str, int, int | None], tuple[str, ...]] = field(default_factory=dict)


def _plotly() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError:  # pragma: no cover - depends on the installed extras
        raise RewindError(
            'drawing the branch graph needs plotly: pip install "rewinddb[web]"',
            code="missing.dependency",
        ) from None
    return go


def _curve(x0: float, y0: float, x1: float, y1: float, steps: int = 12) -> tuple[list, list]:
    """Points of an S-curve from (x0, y0) to (x1, y1), horizontal at both ends."""
    xs, ys = [], []
    for i in range(steps + 1):
        t = i / steps
        ease = t * t * (3 - 2 * t)
        xs.append(x0 + (x1 - x0) * t)
        ys.append(y0 + (y1 - y0) * ease)
    return xs, ys


def graph_figure(graph: HistoryGraph, *, head: int, labels: GraphLabels | None = None) -> Any:
    """A ``plotly.graph_objects.Figure`` of ``graph`` (``head``: the newest version;
    ``labels``: :func:`story_labels`, or None for the stored labels)."""
    return _plotly().Figure(figure_dict(graph, head=head, labels=labels))


def figure_dict(
    graph: HistoryGraph, *, head: int, labels: GraphLabels | None = None
) -> dict[str, Any]:
    """The same figure as plain data (``{"data": [...], "layout": {...}}``), for
    ``Plotly.newPlot`` in a page: building it needs no plotly package and no validation,
    which matters for thousands of dots."""
    data: list[dict[str, Any]] = []
    lanes = {branch.name: branch.lane for branch in graph.branches}
    ends: dict[str, int] = {b.name: b.forked_at for b in graph.branches}
    for point in graph.points:
        ends[point.branch] = max(ends[point.branch], point.version)
    by_color: dict[str, tuple[list, list]] = {}
    for branch in graph.branches:
        xs, ys = by_color.setdefault(COLORS[branch.lane % len(COLORS)], ([], []))
        xs += [branch.forked_at, max(ends[branch.name], branch.forked_at), None]
        ys += [branch.lane, branch.lane, None]
    for color, (xs, ys) in by_color.items():
        data.append(_lines("lanes", xs, ys, {"color": color, "width": 2}))
    for kind in ("fork", "merge"):
        xs, ys = [], []
        for edge in graph.edges:
            if edge.kind != kind or edge.from_branch not in lanes or edge.to_branch not in lanes:
                continue
            curve_x, curve_y = _curve(
                edge.from_version,
                lanes[edge.from_branch],
                edge.to_version + 0.5 if kind == "fork" else edge.to_version,
                lanes[edge.to_branch],
            )
            xs += [*curve_x, None]
            ys += [*curve_y, None]
        if xs:
            line = {"color": "#999", "width": 1.5, "dash": "dash" if kind == "merge" else "solid"}
            data.append(_lines(f"{kind}s", xs, ys, line))
    points = graph.points
    data.append(
        {
            "type": "scatter",
            "name": "points",
            "mode": "markers",
            "x": [p.version for p in points],
            "y": [lanes[p.branch] for p in points],
            "marker": {
                "size": 10,
                "symbol": [SYMBOLS[p.kind] for p in points],
                "color": [COLORS[lanes[p.branch] % len(COLORS)] for p in points],
                "line": {"width": 1, "color": "white"},
            },
            "customdata": [
                [p.branch, -1 if p.sequence is None else p.sequence, p.version] for p in points
            ],
            "hovertext": [hover_text(p, labels) for p in points],
            "hoverinfo": "text",
            "showlegend": False,
        }
    )
    shown = min(len(graph.branches), VISIBLE_LANES)
    layout = {
        "height": max(180, 60 + 40 * shown),
        "margin": {"l": 10, "r": 10, "t": 10, "b": 30},
        "xaxis": {
            "title": {"text": "version"},
            "range": [-0.5, head + 1],
            "zeroline": False,
            "gridcolor": "#eee",
        },
        "yaxis": {
            "automargin": True,  # room for the lane names
            "showgrid": False,
            "zeroline": False,
            "tickvals": [b.lane for b in graph.branches],
            "ticktext": [lane_text(b.name, labels) for b in graph.branches],
            # Reversed: lane 0 (default) on top; more lanes than fit scroll by panning.
            "range": [shown - 0.5, -0.5],
        },
        "plot_bgcolor": "white",
        "dragmode": "pan",
    }
    return {"data": data, "layout": layout}


def _lines(name: str, xs: list, ys: list, line: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "scatter",
        "name": name,
        "mode": "lines",
        "x": xs,
        "y": ys,
        "hoverinfo": "skip",
        "showlegend": False,
        "line": line,
    }


def _escape(text: str) -> str:
    # Plotly renders hover and tick text as HTML-ish markup, and agents wrote it: ``<``,
    # ``>`` and ``&`` are escaped (quotes need not be; Plotly shows ``&quot;`` literally).
    return escape(text, quote=False)


def lane_text(branch: str, labels: GraphLabels | None = None) -> str:
    """A lane's tick: its branch name, or its title (and second line) from ``labels``,
    each line shortened to ``LANE_CHARS`` in its middle, so lanes that differ only at
    the end (a thread's subgraphs) still read apart."""
    lines = (branch,) if labels is None else labels.lanes.get(branch, (branch,))
    return "<br>".join(_escape(_shortened(line)) for line in lines)


def _shortened(text: str) -> str:
    if len(text) <= LANE_CHARS:
        return text
    head = (LANE_CHARS - 1) // 2
    return f"{text[:head]}…{text[-(LANE_CHARS - 1 - head) :]}"


def hover_text(point: GraphPoint, labels: GraphLabels | None = None) -> str:
    """A dot's hover label: ``BRANCH vVERSION #SEQUENCE`` (the branch by its title when
    ``labels`` has one), then what ``labels`` says of it, else its stored label (and an
    event's payload summary)."""
    title = point.branch if labels is None else labels.titles.get(point.branch, point.branch)
    where = f"{title} v{point.version}"
    if point.sequence is not None:
        where += f" #{point.sequence}"
    lines = None if labels is None else labels.points.get(_key(point))
    if lines is not None:
        return "<br>".join(_escape(line) for line in (where, *lines))
    if point.sequence is not None:
        return _escape(f"{where} {point.label} {point.summary}")
    return _escape(f"{where} {point.label}")


def _key(point: GraphPoint) -> tuple[str, int, int | None]:
    return (point.branch, point.version, point.sequence)


def story_labels(
    db: Database,
    graph: HistoryGraph,
    *,
    titles: Mapping[str, str] | None = None,
    forks: Mapping[str, str] | None = None,
    budget: int = STEP_BUDGET,
) -> GraphLabels:
    """``graph``'s lanes and dots as their branches' presenters describe them.

    ``titles`` (a branch's title) and ``forks`` (the label of an edit or a replay: "edit
    of step 4 of alice") are the overview's, when the caller has them; otherwise they
    are asked of the presenters. A dot of a branch whose presenter is not the generic
    one is labelled by its step: a commit as ``step N: label (source)`` and the first
    message the step added, an event as the step it made (or the step it came after).
    Steps are read newest first, a page at a time, lane by lane, ``budget`` of them in
    all; the dots of lanes past it, or of a branch whose steps cannot be read, say only
    their stored type (not the stored payload)."""
    from . import presenters

    labels = GraphLabels()
    with db.read():
        records = {record.name: record for record in db.branches.list()}
        drawn = {branch.name: branch for branch in graph.branches}
        points: dict[str, list[GraphPoint]] = {}
        for point in graph.points:
            points.setdefault(point.branch, []).append(point)
        told = {} if titles is None else dict(titles)
        edits = {} if forks is None else dict(forks)
        found = {
            name: presenters.presenter_for(record)
            for name, record in records.items()
            if name in drawn
        }
        if titles is None:
            for name, teller in found.items():
                if teller is presenters.generic():
                    continue
                try:
                    summary = teller.summary(db, records[name])
                except RewindError:
                    continue
                told[name] = summary.title
                if summary.fork is not None and summary.fork.kind != "fork":
                    edits.setdefault(name, summary.fork.label)
        for branch in graph.branches:
            title = told.get(branch.name, branch.name)
            labels.titles[branch.name] = title
            edit = edits.get(branch.name)
            if edit is not None and branch.parent is not None:
                parent = told.get(branch.parent, branch.parent)
                edit = edit.removesuffix(f" of {parent}")
            labels.lanes[branch.name] = (title,) if edit is None else (title, edit)
        for branch in graph.branches:
            presenter = found.get(branch.name)
            own = points.get(branch.name, [])
            if presenter is None or presenter is presenters.generic() or not own:
                continue
            steps: list[Step] = []
            if budget > 0:
                try:
                    steps, budget = _own_steps(db, presenter, branch.name, own, budget)
                except RewindError:
                    steps = []
            labels.points.update(_point_lines(own, steps))
    return labels


def _own_steps(
    db: Database, presenter: Presenter, branch: str, own: list[GraphPoint], budget: int
) -> tuple[list[Step], int]:
    """``branch``'s own steps back to its oldest dot (or as many as ``budget`` allows),
    oldest first, and the budget left."""
    oldest = min(point.version for point in own)
    pages: list[tuple[Step, ...]] = []
    before: int | None = None
    while budget > 0:
        page = presenter.steps(db, branch, before=before, limit=min(STEP_REQUEST, budget))
        budget -= max(len(page.steps), REQUEST_COST)
        pages.append(page.steps)
        first = page.steps[0] if page.steps else None
        if first is None or page.older is None or first.inherited or first.version <= oldest:
            break
        before = page.older
    steps = [step for page in reversed(pages) for step in page if step.branch == branch]
    return steps, budget


def _point_lines(
    own: list[GraphPoint], steps: list[Step]
) -> dict[tuple[str, int, int | None], tuple[str, ...]]:
    """The hover lines of one branch's dots, from its own ``steps`` (oldest first)."""
    at = {step.version: step for step in steps}
    made = {sequence: step for step in steps for sequence in step.events}
    versions = [step.version for step in steps]
    lines: dict[tuple[str, int, int | None], tuple[str, ...]] = {}
    for point in own:
        if point.sequence is None:
            step = at.get(point.version)
            shown = (point.label,) if step is None else _step_lines(step)
        elif point.sequence in made:
            step = made[point.sequence]
            shown = (f"event of {step_text(step)}", *_step_lines(step)[1:])
        else:
            index = bisect.bisect_right(versions, point.version) - 1
            shown = (f"event after {step_text(steps[index])}",) if index >= 0 else (point.label,)
        lines[_key(point)] = shown
    return lines


def step_text(step: Step) -> str:
    """``step 4: agent (loop)``: the step's number, its label and (when it says more
    than the label) how it came to be."""
    source = f" ({step.source})" if step.source and step.source != step.label else ""
    return f"step {step.number}: {step.label}{source}"


def _step_lines(step: Step) -> tuple[str, ...]:
    said = next((line for m in step.messages if (line := message_line(m))), None)
    return (step_text(step),) if said is None else (step_text(step), said)


def message_line(message: Message) -> str:
    """A message as one short line: ``ai: the answer``, ``ai: calls search``."""
    text = " ".join(message.text.split())
    if not text and message.tool_calls:
        text = "calls " + ", ".join(call.name for call in message.tool_calls)
    if not text:
        return ""
    line = f"{message.role}: {text}"
    return line if len(line) <= MESSAGE_CHARS else line[: MESSAGE_CHARS - 1].rstrip() + "…"


def points_trace(figure: Any) -> Any:
    """The trace that holds the clickable dots (the last one)."""
    return figure.data[-1]
