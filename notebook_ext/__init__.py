"""rewinddb in Jupyter: ``explore(db)`` and ``show_diff(db, a, b)``.

Needs the ``notebook`` extra: ``pip install "rewinddb[notebook]"``.
"""

from __future__ import annotations

try:
    import ipywidgets  # noqa: F401
    import plotly  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        f'rewinddb.notebook needs {error.name}: pip install "rewinddb[notebook]"'
    ) from error

from .explorer import Explorer, explore, show_diff

__all__ = ["Explorer", "explore", "show_diff"]
