"""The overview's branch graph: rewinddb's shared Plotly figure, plus where each dot
leads (its event's page) so the browser needs no URL logic of its own."""

from __future__ import annotations

from typing import Any

import orjson

import rewinddb
from rewinddb.plotting import graph_figure

from .urls import branch_url, event_url, point_text


def graph_from_dict(data: dict[str, Any]) -> rewinddb.HistoryGraph:
    return rewinddb.HistoryGraph(
        branches=[rewinddb.GraphBranch(**branch) for branch in data["branches"]],
        points=[rewinddb.GraphPoint(**point) for point in data["points"]],
        edges=[rewinddb.GraphEdge(**edge) for edge in data["edges"]],
    )


def figure_data(overview: dict[str, Any]) -> dict[str, Any]:
    """What the page script needs: the figure, and per dot its URL and ``BRANCH@V``."""
    graph = graph_from_dict(overview["graph"])
    figure = graph_figure(graph, head=overview["version"])
    return {
        "figure": orjson.loads(figure.to_json()),
        "urls": [
            branch_url(p.branch) if p.sequence is None else event_url(p.branch, p.sequence)
            for p in graph.points
        ],
        "points": [point_text(p.branch, p.version) for p in graph.points],
    }
