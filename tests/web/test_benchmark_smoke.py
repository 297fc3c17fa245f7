"""benchmarks/web.py keeps running: a --quick smoke run (no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

ROOT = Path(__file__).resolve().parents[2]


def test_web_benchmark_quick_run() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "web.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "built 20 branches and 2,000 events" in out
    for figure in ("GET /  (overview", "GET /.json", "GET /branches/long-run", "/compare?a="):
        assert figure in out, figure
    assert out.count("event fragment #") == 3
    assert "raw sqlite3" in out and "ratio" in out
    assert "dots for 2,000 events" in out
