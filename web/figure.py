"""The overview's branch graph: rewinddb's shared Plotly figure as plain data, with each
dot's ``customdata`` set to where it leads and the ``BRANCH@VERSION`` the compare picker
uses, so the browser needs no URL logic of its own. A circle (an event) opens its event;
a square (a commit: a checkpoint, a state write) or a diamond (a merge) opens its step.

Given the database, lanes and dots are named as the presenters tell the story
(``rewinddb.plotting.story_labels``): a thread's lane by its title, a fork's with the
step it edits, a checkpoint's dot as ``step 4: agent (loop)``; ``rows`` (the overview's
table) saves asking the presenters for the titles again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import rewinddb
from rewinddb.plotting import figure_dict, story_labels

from .urls import event_url, point_text, step_url


def figure_data(
    graph: rewinddb.HistoryGraph,
    head: int,
    *,
    db: rewinddb.Database | None = None,
    rows: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The figure of ``graph`` (``head``: the newest version); labelled by the
    presenters when ``db`` is given, with the titles and fork labels of ``rows`` (the
    overview's rows: ``name``, ``title``, ``fork``) when those are given too."""
    labels = None
    if db is not None:
        titles = forks = None
        if rows is not None:
            titles = {row["name"]: row["title"] or row["name"] for row in rows}
            forks = {
                row["name"]: row["fork"]["label"]
                for row in rows
                if row.get("fork") and row["fork"]["kind"] != "fork"
            }
        labels = story_labels(db, graph, titles=titles, forks=forks)
    figure = figure_dict(graph, head=head, labels=labels)
    figure["data"][-1]["customdata"] = [
        [point_url(p), point_text(p.branch, p.version)] for p in graph.points
    ]
    return figure


def point_url(point: rewinddb.GraphPoint) -> str:
    """Where a point leads: an event's page, or (a commit, a merge) its step's."""
    if point.sequence is None:
        return step_url(point.branch, point.version)
    return event_url(point.branch, point.sequence)
