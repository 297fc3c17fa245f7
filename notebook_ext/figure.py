"""The branch graph as a Plotly figure: one lane per branch, a dot per event or commit,
a curve from each fork point, a dashed curve for each merge."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

import rewinddb

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


def _curve(x0: float, y0: float, x1: float, y1: float, steps: int = 12) -> tuple[list, list]:
    """Points of an S-curve from (x0, y0) to (x1, y1), horizontal at both ends."""
    xs, ys = [], []
    for i in range(steps + 1):
        t = i / steps
        ease = t * t * (3 - 2 * t)
        xs.append(x0 + (x1 - x0) * t)
        ys.append(y0 + (y1 - y0) * ease)
    return xs, ys


def graph_figure(graph: rewinddb.HistoryGraph, *, head: int) -> go.Figure:
    """A figure of ``graph``; the last trace holds the dots (``customdata`` = [branch,
    sequence or -1, version]) so click handlers can tell which point was picked."""
    figure = go.Figure()
    lanes = {branch.name: branch.lane for branch in graph.branches}
    ends: dict[str, int] = {b.name: b.forked_at for b in graph.branches}
    for point in graph.points:
        ends[point.branch] = max(ends[point.branch], point.version)
    for branch in graph.branches:
        color = COLORS[branch.lane % len(COLORS)]
        figure.add_trace(
            go.Scatter(
                x=[branch.forked_at, max(ends[branch.name], branch.forked_at)],
                y=[branch.lane, branch.lane],
                mode="lines",
                hoverinfo="skip",
                line={"color": color, "width": 2},
                showlegend=False,
            )
        )
    for edge in graph.edges:
        if edge.from_branch not in lanes or edge.to_branch not in lanes:
            continue
        xs, ys = _curve(
            edge.from_version,
            lanes[edge.from_branch],
            edge.to_version + 0.5 if edge.kind == "fork" else edge.to_version,
            lanes[edge.to_branch],
        )
        figure.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                line={
                    "color": "#999",
                    "width": 1.5,
                    "dash": "dash" if edge.kind == "merge" else "solid",
                },
            )
        )
    points = graph.points
    figure.add_trace(
        go.Scatter(
            x=[p.version for p in points],
            y=[lanes[p.branch] for p in points],
            mode="markers",
            marker={
                "size": 10,
                "symbol": [SYMBOLS[p.kind] for p in points],
                "color": [COLORS[lanes[p.branch] % len(COLORS)] for p in points],
                "line": {"width": 1, "color": "white"},
            },
            customdata=[
                [p.branch, -1 if p.sequence is None else p.sequence, p.version] for p in points
            ],
            hovertext=[_hover(p) for p in points],
            hoverinfo="text",
            showlegend=False,
            name="points",
        )
    )
    figure.update_layout(
        height=max(180, 60 + 40 * len(graph.branches)),
        margin={"l": 10, "r": 10, "t": 10, "b": 30},
        xaxis={"title": "version", "range": [-0.5, head + 1]},
        yaxis={
            "tickvals": [b.lane for b in graph.branches],
            "ticktext": [b.name[:24] for b in graph.branches],
            "autorange": "reversed",
        },
        plot_bgcolor="white",
    )
    return figure


def _hover(point: rewinddb.GraphPoint) -> str:
    # Plotly renders hover text as HTML-ish markup: escape what agents wrote.
    from html import escape

    where = f"{point.branch} v{point.version}"
    if point.sequence is not None:
        return escape(f"{where} #{point.sequence} {point.label} {point.summary}")
    return escape(f"{where} {point.label}")


def points_trace(figure: Any) -> Any:
    """The trace that holds the clickable dots (the last one)."""
    return figure.data[-1]
