"""The overview's branch graph: rewinddb's shared Plotly figure as plain data, with each
dot's ``customdata`` set to where it leads and the ``BRANCH@VERSION`` the compare picker
uses, so the browser needs no URL logic of its own. A circle (an event) opens its event;
a square (a commit: a checkpoint, a state write) or a diamond (a merge) opens its step."""

from __future__ import annotations

from typing import Any

import rewinddb
from rewinddb.plotting import figure_dict

from .urls import event_url, point_text, step_url


def figure_data(graph: rewinddb.HistoryGraph, head: int) -> dict[str, Any]:
    figure = figure_dict(graph, head=head)
    figure["data"][-1]["customdata"] = [
        [point_url(p), point_text(p.branch, p.version)] for p in graph.points
    ]
    return figure


def point_url(point: rewinddb.GraphPoint) -> str:
    """Where a point leads: an event's page, or (a commit, a merge) its step's."""
    if point.sequence is None:
        return step_url(point.branch, point.version)
    return event_url(point.branch, point.sequence)
