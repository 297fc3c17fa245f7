"""The benchmark scripts keep running (a quick smoke run; no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_core_benchmark_quick_run() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "core.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    for figure in ("10 forks, 20 writes", "fork of a", "kv.put", "events.append"):
        assert figure in result.stdout, figure


def test_notebook_benchmark_small_run() -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "notebook.py"),
            "--events",
            "300",
            "--moves",
            "20",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "slider move, median of 20" in result.stdout


def test_langgraph_benchmark_small_run() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "langgraph_savers.py"), "--turns", "5"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "RewindSaver" in result.stdout and "bytes on disk vs SqliteSaver" in result.stdout
