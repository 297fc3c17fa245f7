"""rewinddb's web explorer: ``create_app(path)`` builds the FastAPI app that
``rewinddb serve PATH`` runs (pages with htmx, a Plotly branch graph, a JSON API)."""

from __future__ import annotations

from .app import create_app

__all__ = ["create_app"]
