"""Notebook fixtures: the seed tutorial's database, the ReAct run, a simulated click on a
dot, and the text a panel shows."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from react_run import ReactRun, record_react_run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def tutorial(tmp_path: Path) -> Path:
    """The database "Build an agent with rewindable state" leaves behind."""
    subprocess.run(
        [sys.executable, str(EXAMPLES / "agent_attempts.py")],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return tmp_path / "agent"


@pytest.fixture(scope="session")
def react(tmp_path_factory: pytest.TempPathFactory) -> ReactRun:
    """The ReAct run of ``examples/langgraph_react.py``, recorded once (tests only read it)."""
    return record_react_run(tmp_path_factory.mktemp("react") / "agent")


def text(panel: str) -> str:
    """What a person reads in a panel's HTML: inline tags dropped, blocks apart, entities
    decoded, spaces joined."""
    inline = re.sub(r"</?(?:b|i|code|span|summary)\b[^>]*>", "", panel)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", inline)).split())


def click(figure: Any, trace_index: int, point_index: int) -> None:
    """Deliver the message the browser sends when a point is clicked (plotly_click).

    It goes through a private attribute of plotly's FigureWidget, so it lives here only.
    """
    trace = figure.data[trace_index]
    figure._js2py_pointsCallback = {
        "event_type": "plotly_click",
        "points": {
            "trace_indexes": [trace_index],
            "point_indexes": [point_index],
            "xs": [trace.x[point_index]],
            "ys": [trace.y[point_index]],
        },
        "device_state": {
            "ctrl": False,
            "alt": False,
            "shift": False,
            "meta": False,
            "button": 0,
            "buttons": 1,
        },
    }
