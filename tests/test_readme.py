"""The README's commands are the ones CI runs, and its LangGraph snippet does what it says.

(The setup command and the quickstart are checked by test_packaging.py and
backend/test_examples.py.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _block(after: str, language: str) -> str:
    """The first ``language`` code block after the text ``after``."""
    return README.split(after, 1)[1].split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    command = ci.split("# The README's test command, exactly.\n", 1)[1].split("\n", 1)[0]
    assert _block("The tests:", "bash").strip() == command
    assert '.venv/bin/python -m pytest -m "not slow" -n 2' in README


def test_the_readme_langgraph_snippet_forks_the_thread(tmp_path: Path) -> None:
    pytest.importorskip("langgraph")
    script = tmp_path / "readme_langgraph.py"
    script.write_text(_block("## LangGraph", "python"))
    run = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    branches = subprocess.run(
        [sys.executable, "-m", "rewinddb", "branches", "--json", str(tmp_path / "agent")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    forks = {b["name"]: b["parent"] for b in json.loads(branches.stdout)}
    assert forks["lg/trip"] == "default"
    (fork,) = [name for name in forks if name.startswith("lg/trip~")]
    assert forks[fork] == "lg/trip"
