"""The overview's branch graph: rewinddb's shared Plotly figure as plain data, with each
dot's ``customdata`` set to where it leads (its event's page) and the ``BRANCH@VERSION``
the compare picker uses, so the browser needs no URL logic of its own."""

from __future__ import annotations

from typing import Any

import rewinddb
from rewinddb.plotting import figure_dict

from .urls import branch_url, event_url, point_text


def figure_data(graph: rewinddb.HistoryGraph, head: int) -> dict[str, Any]:
    figure = figure_dict(graph, head=head)
    figure["data"][-1]["customdata"] = [
        [
            branch_url(p.branch) if p.sequence is None else event_url(p.branch, p.sequence),
            point_text(p.branch, p.version),
        ]
        for p in graph.points
    ]
    return figure
