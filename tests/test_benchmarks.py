"""The benchmark scripts keep running: one small smoke run of each (no timing is asserted),
checked for the figures it should print."""

from __future__ import annotations

import glob
import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from rewinddb.testing import BINARIES

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Script:
    name: str  # benchmarks/<name>.py
    args: tuple[str, ...]
    shown: tuple[str, ...]  # what its output must contain
    needs: str | None = None  # a module the script needs (skipped without it)
    postgres: bool = False  # needs PostgreSQL's server binaries
    counted: tuple[tuple[str, int], ...] = ()  # (text, how many times it is shown)


SCRIPTS = [
    Script(
        "core",
        ("--quick",),
        ("10 forks, 20 writes", "fork of a", "kv.put", "events.append", "db.diff"),
    ),
    Script(
        "web",
        ("--quick",),
        (
            "built 20 branches and 2,000 events",
            "GET /  (overview",
            "GET /.json",
            "GET /branches/long-run",
            "/compare?a=",
            "raw sqlite3",
            "ratio",
            "dots for 2,000 events",
        ),
        needs="fastapi",
        counted=(("event fragment #", 3),),
    ),
    Script(
        "postgres",
        ("--quick",),
        (
            "fsync=on, synchronous_commit=on",
            "events.append, 1 writer",
            "kv.put, 4 writers",
            "PostgreSQL: fork of a",
            "SQLite: fork of a",
            "PostgreSQL: key with",
            'kv.put: PostgreSQL vs SQLite durability="full"',
            "one write routine call",
            "ratio = rewinddb / baseline",
        ),
        needs="psycopg",
        postgres=True,
    ),
    Script(
        "notebook",
        ("--events", "300", "--moves", "20"),
        ("slider move, median of 20",),
    ),
    Script(
        "langgraph_codec",
        ("--quick",),
        ("Decoder, remembered", "Encoder, remembered", "pickle.loads"),
    ),
    Script(
        "langgraph_savers",
        ("--turns", "5", "--threads", "3", "--thread-turns", "2"),
        ("RewindSaver", "bytes on disk, closed", "strings", "notes", "3 threads of 2 turns"),
    ),
    Script(
        "retention",
        ("--threads", "6", "--turns", "4", "--keep", "5"),
        (
            "after delete_thread of 3 threads",
            "after prune of the other 3 to their last 5",
            "after db.gc()",
            "during db.gc(): longest",
            "GcReport.longest_step",
            "db.gc() with the work to do",
            "each pruned thread keeps 5 of its 12 checkpoints",
        ),
    ),
]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda script: script.name)
def test_benchmark_small_run(script: Script) -> None:
    if script.needs and importlib.util.find_spec(script.needs) is None:
        pytest.fail(  # the [test] extra installs every benchmark's needs
            f"benchmarks/{script.name}.py needs {script.needs}: pip install -e '.[test]'"
        )
    if script.postgres and not glob.glob(f"{BINARIES}/pg_ctl"):
        pytest.fail(
            f"PostgreSQL's server is not installed (no {BINARIES}/pg_ctl): "
            "run .ci/run, which installs Debian's postgresql package"
        )
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{script.name}.py"), *script.args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    for shown in script.shown:
        assert shown in result.stdout, shown
    for text, times in script.counted:
        assert result.stdout.count(text) == times, text
