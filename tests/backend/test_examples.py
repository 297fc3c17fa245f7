"""The seed tutorial's programs are acceptance tests: they print what the document shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(script: str | Path, cwd: Path, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_whole_program_and_now_rewind(tmp_path: Path) -> None:
    assert _run("agent_attempts.py", tmp_path) == (
        "scores: {'run-1': 90, 'run-2': 80, 'run-3': 45}\n"
        "winner: run-1\n"
        "portfolio now: {'bonds': 80, 'stocks': 20}\n"
        "branches left: ['default', 'run-1', 'run-2', 'run-3']\n"
    )
    assert _run("rewind.py", tmp_path) == (
        "seq 0  tool.call   portfolio was {'bonds': 40, 'stocks': 60}\n"
        "seq 1  tool.call   portfolio was {'bonds': 40, 'stocks': 60}\n"
        "seq 2  run.end     portfolio was {'bonds': 50, 'stocks': 50}\n"
    )


def test_the_examples_keep_only_the_import_changed() -> None:
    source = (EXAMPLES / "agent_attempts.py").read_text()
    assert "import rewinddb as stratadb" in source
    assert 'stratadb.open("./agent")' in source


def test_quickstart(tmp_path: Path) -> None:
    out = _run("quickstart.py", tmp_path, str(tmp_path / "agent"))
    assert out.splitlines()[:2] == [
        "0 tool.call {'bonds': 40, 'stocks': 60}",
        "1 run.end {'bonds': 40, 'stocks': 20}",
    ]
    assert "~ json 'portfolio' $.stocks: 60 -> 20" in out
    assert "2 NOT carried" in out
    assert "portfolio on default: {'bonds': 40, 'stocks': 20}" in out


def test_the_readme_quickstart_runs(tmp_path: Path) -> None:
    readme = (EXAMPLES.parent / "README.md").read_text()
    block = readme.split("## Quickstart", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "readme_quickstart.py"
    script.write_text(block)
    assert _run(script, tmp_path).splitlines() == [
        "0 {'bonds': 40, 'stocks': 60}",
        "run-1 -> default at version 5: 1 changes applied to 1 keys; 0 conflicts; "
        "0 events carried, 1 NOT carried (events='skip')",
    ]
