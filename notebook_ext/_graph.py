"""The branch graph of only the branches the widget lists (internal ones left out)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from rewinddb import HistoryGraph


def only_branches(graph: HistoryGraph, names: Iterable[str]) -> HistoryGraph:
    """``graph`` with the lanes, points and edges of ``names`` only, lanes renumbered in
    their order (a fork edge from a left-out parent is left out too)."""
    kept = set(names)
    branches = [b for b in graph.branches if b.name in kept]
    if len(branches) == len(graph.branches):
        return graph
    return HistoryGraph(
        branches=[replace(branch, lane=lane) for lane, branch in enumerate(branches)],
        points=[p for p in graph.points if p.branch in kept],
        edges=[e for e in graph.edges if e.from_branch in kept and e.to_branch in kept],
    )
