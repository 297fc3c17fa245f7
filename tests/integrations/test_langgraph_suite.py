"""LangGraph's own test suite passes with ``RewindSaver``, sync and async.

``tests/langgraph_suite/run.py`` runs every test of the pinned langgraph release that
takes a checkpointer fixture, with ours in place of SQLite's; here it runs in full."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "langgraph_suite" / "run.py"


def test_the_suite_runs_the_langgraph_version_pyproject_pins() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = [
        spec.split("==")[1]
        for spec in pyproject["project"]["optional-dependencies"]["test"]
        if spec.replace(" ", "").startswith("langgraph==")
    ]
    assert pins == [version("langgraph")]


@pytest.mark.slow
@pytest.mark.parametrize("strict_msgpack", [False, True], ids=["default", "strict_msgpack"])
def test_langgraph_own_suite_passes_with_rewind_saver(tmp_path: Path, strict_msgpack: bool) -> None:
    """Also in LangGraph's strict msgpack mode, where every graph is compiled with a
    copy of the saver whose serde rebuilds only the types the graph's schemas name."""
    report = tmp_path / "suite.xml"
    env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true" if strict_msgpack else "false"}
    run = subprocess.run(
        [sys.executable, str(RUN), "--", f"--junitxml={report}"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    cases = ET.parse(report).getroot().iter("testcase")
    outcomes: dict[str, str] = {}
    for case in cases:
        name = f"{case.get('classname')}::{case.get('name')}"
        bad = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[name] = bad[0] if bad else "passed"
    not_passed = {name: outcome for name, outcome in outcomes.items() if outcome != "passed"}
    assert not not_passed, f"{len(not_passed)} of LangGraph's tests did not pass: {not_passed}"
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # Both checkpointers ran, each in hundreds of tests (648 in all on langgraph 1.2.24).
    sync = [name for name in outcomes if name.endswith("[rewind]") or "[rewind-" in name]
    aio = [name for name in outcomes if "[rewind_aio" in name]
    assert len(sync) > 300 and len(aio) > 200, (len(sync), len(aio))
