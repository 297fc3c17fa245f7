"""Run LangGraph's own test suite with ``RewindSaver`` as its checkpointer.

The tests ship in the source release of langgraph; this script takes the release of the
installed version (the one pyproject pins for tests), applies ``checkpointers.patch``
(``rewind`` and ``rewind_aio`` added next to ``sqlite`` and ``sqlite_aio``) to a fresh
copy of its ``tests/`` folder, and runs the tests that take a checkpointer with the
checkpointers named (ours by default)::

    python tests/langgraph_suite/run.py                          # rewind, rewind_aio
    python tests/langgraph_suite/run.py --checkpointers sqlite,sqlite_aio
    python tests/langgraph_suite/run.py -- -k time_travel -x     # pytest's own options
    LANGGRAPH_STRICT_MSGPACK=true python tests/langgraph_suite/run.py   # its strict mode

The source release is downloaded once into ``build/langgraph-suite/``. The exit code is
pytest's; no test run (pytest's 5) is a failure too. Tests that need servers started
with Docker (PostgreSQL, Redis, a LangGraph API) are left out, as ``NO_DOCKER=true``
leaves them out in LangGraph's own CI without Docker.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
PATCH = HERE / "checkpointers.patch"
CACHE = HERE.parents[1] / "build" / "langgraph-suite"
OURS = "rewind,rewind_aio"
# Needs a LangGraph API server in Docker; NO_DOCKER makes it skip itself as a module.
NEEDS_DOCKER = ["tests/test_remote_graph.py"]


def source_release(langgraph_version: str) -> Path:
    """The langgraph source release of ``langgraph_version``, downloaded if missing."""
    archive = CACHE / f"langgraph-{langgraph_version}.tar.gz"
    if not archive.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        wanted = ["--no-binary", ":all:", f"langgraph=={langgraph_version}", "-d", str(CACHE)]
        subprocess.run([*pip, *wanted], check=True)
    return archive


def patched_tests(archive: Path, into: Path) -> Path:
    """Extract the release's ``tests/`` under ``into`` and apply our patch to it."""
    with tarfile.open(archive) as tar:
        top = tar.getmembers()[0].name.split("/")[0]
        members = [m for m in tar.getmembers() if m.name.startswith(f"{top}/tests/")]
        if hasattr(tarfile, "data_filter"):  # Python 3.10.12+, 3.11.4+
            tar.extractall(into, members=members, filter="data")
        else:
            tar.extractall(into, members=members)
    root = into / top
    # The copy lives outside any git work tree, so git applies the patch as `patch` would.
    subprocess.run(["git", "apply", "-p1", str(PATCH)], cwd=root, check=True)
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--checkpointers",
        default=OURS,
        help=f"comma-separated fixture names to run (default {OURS}; also memory, sqlite, "
        "sqlite_aes, sqlite_aio)",
    )
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest (after --)")
    args = parser.parse_args(argv)
    archive = source_release(version("langgraph"))
    with tempfile.TemporaryDirectory(prefix="langgraph-suite-") as tmp:
        root = patched_tests(archive, Path(tmp))
        env = {**os.environ, "NO_DOCKER": "true", "CHECKPOINTERS": args.checkpointers}
        command = [sys.executable, "-m", "pytest", "tests", "-p", "no:cacheprovider"]
        command += ["-o", "addopts=", "-q", "--rootdir", str(root)]
        command += [f"--ignore={path}" for path in NEEDS_DOCKER]
        return subprocess.run(command + args.pytest_args, cwd=root, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
