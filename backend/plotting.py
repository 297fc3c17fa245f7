"""The branch graph as a Plotly figure, shared by the web explorer and the notebook widget.

One lane per branch, a dot per event or commit, an S-curve from each fork point and a
dashed one for each merge. Plotly is imported here, not by ``import rewinddb``: the core
installs without it (``pip install "rewinddb[web]"`` or ``[notebook]`` brings it).

The figure uses a handful of traces whatever the number of branches (lanes are grouped
by colour, edges by kind), so a database with a thousand branches still draws quickly.
The dots are always the last trace; their ``customdata`` is ``[branch, sequence or -1,
version]`` so click handlers can tell which point was picked.
"""

from __future__ import annotations

from html import escape
from typing import Any

from .errors import RewindError
from .graph import GraphPoint, HistoryGraph

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


def graph_figure(graph: HistoryGraph, *, head: int) -> Any:
    """A ``plotly.graph_objects.Figure`` of ``graph`` (``head``: the newest version)."""
    return _plotly().Figure(figure_dict(graph, head=head))


def figure_dict(graph: HistoryGraph, *, head: int) -> dict[str, Any]:
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
            "hovertext": [hover_text(p) for p in points],
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
            "ticktext": [escape(b.name[:24], quote=False) for b in graph.branches],
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


def hover_text(point: GraphPoint) -> str:
    """A dot's hover label. Plotly renders hover text as HTML-ish markup, and agents
    wrote the label and summary: ``<``, ``>`` and ``&`` are escaped (quotes need not be,
    and Plotly would show ``&quot;`` literally)."""
    where = f"{point.branch} v{point.version}"
    if point.sequence is not None:
        return escape(f"{where} #{point.sequence} {point.label} {point.summary}", quote=False)
    return escape(f"{where} {point.label}", quote=False)


def points_trace(figure: Any) -> Any:
    """The trace that holds the clickable dots (the last one)."""
    return figure.data[-1]
