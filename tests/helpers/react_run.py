"""The realistic ReAct run the front-end tests share: ``examples/langgraph_react.py``,
loaded by path so the example is the one implementation, and the facts it recorded."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_react.py"


@dataclass(frozen=True)
class ReactRun:
    """What ``record_react_run`` wrote: where, under which names, and the texts, calls
    and ids a page or widget must show."""

    directory: Path
    thread_id: str
    main_branch: str
    fork_branch: str
    question: str
    """A human question of the thread (it led to ``tool``'s call)."""
    answer: str
    """The thread's final AI answer."""
    fork_answer: str
    """The fork's final AI answer (after the edited call ran)."""
    tool: str
    tool_args: dict[str, Any]
    tool_call_id: str
    tool_result: str
    """The text of the tool message that answered ``tool_call_id`` on the thread."""
    interrupt_question: str
    resume: str
    edited_args: dict[str, Any]
    """The arguments of the same call on the fork, as ``update_state`` edited them."""
    edited_checkpoint_id: str
    """The checkpoint ``update_state`` wrote: the fork's first step (source ``update``)."""
    forked_from_checkpoint_id: str
    """The past checkpoint of the thread that was edited (its AI message held the call)."""


@cache
def example() -> ModuleType:
    """The example module, loaded once by path."""
    spec = importlib.util.spec_from_file_location("langgraph_react_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record_react_run(directory: Path) -> ReactRun:
    """Record the ReAct run (ten turns, tools, an interrupt, an edit) into ``directory``."""
    return ReactRun(**example().record(Path(directory)))
