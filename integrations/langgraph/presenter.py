"""How the explorer shows what ``RewindSaver`` recorded: threads as conversations, one
step per checkpoint, the saver's bookkeeping hidden. Needs no LangGraph import: stored
values are decoded as data (``readable``), never constructed."""

from __future__ import annotations

from typing import Any

import rewinddb
from rewinddb.presenters import Presenter

from . import _names
from .readable import readable


class LangGraphPresenter(Presenter):
    """Describes the branches ``RewindSaver`` writes (``lg/...`` and its index)."""

    name = "langgraph"

    def claims(self, branch: rewinddb.Branch) -> bool:
        return branch.name.startswith(_names.PREFIX) or branch.name == _names.INDEX_BRANCH

    def display(self, value: Any, memo: dict[Any, Any] | None = None) -> Any:
        return readable(value, memo=memo)
