"""benchmarks/postgres.py keeps running: a --quick smoke run on its own throwaway server
(no timing is asserted)."""

from __future__ import annotations

import glob
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("psycopg")


def test_postgres_benchmark_quick_run() -> None:
    if not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"):
        pytest.fail(
            "PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/pg_ctl): "
            "run .ci/run, which installs Debian's postgresql package"
        )
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "postgres.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "fsync=on, synchronous_commit=on" in out
    for figure in (
        "events.append, 1 writer",
        "kv.put, 4 writers",
        "PostgreSQL: fork of a",
        "SQLite: fork of a",
        "PostgreSQL: key with",
        'kv.put: PostgreSQL vs SQLite durability="full"',
        "advisory lock wait",
        "ratio = rewinddb / baseline",
    ):
        assert figure in out, figure
    assert "Traceback" not in result.stderr
