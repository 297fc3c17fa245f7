"""LangGraph integration: ``RewindSaver`` records every thread as rewinddb branches."""

from .saver import RewindSaver

__all__ = ["RewindSaver"]
