"""LangGraph integration: ``RewindSaver`` records every thread as rewinddb branches, and
``LangGraphPresenter`` shows them in the explorer as conversations and steps.

``RewindSaver`` is imported on first use, so the explorer can load the presenter (found
through the ``rewinddb.presenters`` entry point) without importing LangGraph itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .saver import RewindSaver

__all__ = ["RewindSaver"]


def __getattr__(name: str) -> Any:
    if name == "RewindSaver":
        from .saver import RewindSaver

        return RewindSaver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
