"""Fixtures shared by every suite: a real rewinddb database in a temp directory, and a
real PostgreSQL server (started once per test session) for the PostgreSQL backend; and
the ``slow`` marker, put here on the tests the fast loop (``pytest -m "not slow"``) skips."""

from __future__ import annotations

import os
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

import rewinddb
from rewinddb import RewindError
from rewinddb.testing import PostgresServer


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "agent"


@pytest.fixture
def db(db_path: Path) -> Iterator[rewinddb.Database]:
    with rewinddb.open(db_path) as database:
        yield database


# -- PostgreSQL ----------------------------------------------------------------------

#: The throwaway server runs without durability: tests never crash it, and it is faster.
FAST = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (Debian's binaries), or the server
    ``REWINDDB_TEST_POSTGRES_URL`` names; each test makes its own schema."""
    try:
        server = PostgresServer(url=os.environ.get("REWINDDB_TEST_POSTGRES_URL"), settings=FAST)
    except RewindError as error:
        if error.code != "missing.postgresql":
            raise
        pytest.fail(
            f"{error.message}. Run .ci/run, which installs Debian's postgresql package, "
            "or set REWINDDB_TEST_POSTGRES_URL"
        )
    with server:
        yield server


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> str:
    """A URL for a new, empty rewinddb database on the session's PostgreSQL server."""
    return postgres.new_schema()


# -- the fast inner loop: ``pytest -m "not slow"`` -------------------------------------
#
# ``pytest`` (CI, the README's command) runs every test; ``-m "not slow"`` leaves out
# the ones below, which take most of the time, and keeps the core store, the web pages
# over HTTP, the notebook and the LangGraph saver, all on SQLite. A test is slow when:

#: it lives where every test is slow: LangGraph's own suite (hundreds of tests per
#: run), the browser tests (Chromium, driven by Playwright, against a served process),
#: ``rewinddb demo`` / ``serve`` as real processes, hypothesis fuzzing every API
#: operation, and the benchmarks' small runs;
SLOW_PATHS = (
    "tests/langgraph_suite/*",
    "tests/web/test_browser*.py",
    "tests/web/test_serve.py",
    "tests/web/test_openapi_fuzz.py",
    "tests/test_benchmarks.py",
)

#: it needs the PostgreSQL server (the session's cluster, or a backend run of ``db``
#: parametrised "postgresql"), spawns processes that race or are killed, or builds the
#: notebook tutorial's database by running the example as a process for each test;
SLOW_FIXTURES = frozenset({"postgres", "children", "tutorial"})
SLOW_PARAMS = frozenset({"postgresql"})

#: or it starts Python processes itself (a writer racing it, an example, the installed
#: CLI, a clean interpreter, a notebook kernel, a wheel build: each costs half a second or
#: more here), runs hypothesis' stateful machine, belongs to the damaged-file corpus (200+
#: cases), or checks an engine against its reference model on many random histories
#: (fork trees, merges after purges) or long lists (1-3 s each).
SLOW_TESTS = (
    "tests/test_packaging.py::test_a_wheel_built_from_the_tree_*",
    "tests/backend/test_diff_fast.py::test_diffs_of_random_histories_*",
    "tests/backend/test_retention_depth.py::test_random_fork_trees_*",
    "tests/backend/test_erasure_forks.py::test_random_fork_trees_*",
    "tests/backend/test_purge_merge_history.py::test_merges_after_purges_*",
    "tests/integrations/test_langgraph_message_diffs.py::test_aligning_a_long_reordered_*",
    "tests/integrations/test_langgraph_suite.py::test_langgraph_own_suite_*",
    "tests/integrations/test_langgraph_processes.py::test_processes_run_graphs_*",
    "tests/integrations/test_langgraph_readable.py::test_the_time_travel_example_*",
    "tests/integrations/test_langgraph_presenter.py::test_the_presenter_module_imports_*",
    "tests/backend/test_presenters.py::test_an_entry_point_whose_framework_is_missing_*",
    "tests/backend/test_concurrency.py::test_a_branch_another_connection_deleted_*",
    "tests/backend/test_event_log.py::test_two_processes_racing_on_expected_index",
    "tests/backend/test_stateful.py::test_rewinddb_agrees_with_model*",
    "tests/backend/test_damaged.py::test_damaged_copy_raises_only_rewind_errors*",
    "tests/backend/test_examples.py::test_the_whole_program_and_now_rewind",
    "tests/backend/test_examples.py::test_quickstart",
    "tests/backend/test_examples.py::test_the_readme_quickstart_runs",
    "tests/backend/test_cli.py::test_the_installed_command_runs",
    "tests/backend/test_verify.py::test_the_verify_command",
    "tests/backend/test_migrations.py::test_migrate_command",
    "tests/backend/test_import_storage.py::test_cli_import_on_a_full_disk_*",
    "tests/notebook/test_explorer.py::test_live_follows_events_another_process_appends",
    "tests/notebook/test_tour.py::*",
    "tests/test_readme.py::test_the_readme_langgraph_snippet_*",
)


def is_slow(item: pytest.Item) -> bool:
    """Whether ``item`` is left out of the fast loop, by the rules above."""
    path = item.nodeid.split("::", 1)[0]  # relative to the root, with forward slashes
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    return (
        any(fnmatchcase(path, pattern) for pattern in SLOW_PATHS)
        or not SLOW_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))
        or any(isinstance(value, str) and value in SLOW_PARAMS for value in params)
        or any(fnmatchcase(item.nodeid, pattern) for pattern in SLOW_TESTS)
    )


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
