"""Framework plugins for rewinddb (LangGraph first). Not built yet: see the issues."""
