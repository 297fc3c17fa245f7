"""The core's presenter hook: the registry, the generic presenter, and the lineage
commits it is built on (``view.commits``, ``commit_count``, ``written``)."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from typing import Any

import pytest

import rewinddb
from rewinddb import presenters
from rewinddb.presenters import Presenter, Step, Summary


def attempt(db: rewinddb.Database) -> None:
    """default: two commits; run forks after the first, appends two events in one
    version, writes a key, then ends."""
    db.kv.put("task", "reduce risk")  # 1
    db.kv.put("budget", 10)  # 2
    db.branches.fork("default", "run", at=1)
    run = db.at("run")
    with run.transaction(message="plan"):
        run.events.append("tool.call", {"tool": "read"})
        run.events.append("tool.result", {"rows": 3})
    run.kv.put("plan", ["a", "b"])
    run.events.append("run.end", {"answer": "sell stocks", "score": 90})


def test_lineage_commits_include_inherited_ones_newest_first(db: rewinddb.Database) -> None:
    attempt(db)
    run = db.at("run")
    commits = run.commits()
    assert [(c.version, c.branch) for c in commits] == [
        (5, "run"),
        (4, "run"),
        (3, "run"),
        (1, "default"),  # inherited: version 2 is after the fork point
    ]
    assert commits[2].message == "plan"
    assert [c.version for c in run.commits(before=4, limit=1)] == [3]
    assert [c.version for c in run.commits(limit=2)] == [5, 4]
    assert run.commit_count() == 4
    assert run.commit_count(before=4) == 2
    assert run.commit_count(before=1) == 0
    assert db.at("default").commit_count() == 2
    written = run.written(3)
    assert written.keys == ()
    assert [(e.sequence, e.event_type) for e in written.events] == [
        (0, "tool.call"),
        (1, "tool.result"),
    ]
    assert run.written(4).keys == (("kv", "plan"),)
    assert run.written(1).keys == (("kv", "task"),)  # inherited from default
    assert run.written(2).keys == ()  # default's, after the fork point: not run's history
    assert db.at("default").written(1).keys == (("kv", "task"),)


def test_lineage_commits_refuse_bad_cursors(db: rewinddb.Database) -> None:
    attempt(db)
    run = db.at("run")
    for bad in (-1, "3", 1.5, True):
        with pytest.raises(rewinddb.InvalidInputError):
            run.commits(before=bad)  # type: ignore[arg-type]
        with pytest.raises(rewinddb.InvalidInputError):
            run.commit_count(before=bad)  # type: ignore[arg-type]
        with pytest.raises(rewinddb.InvalidInputError):
            run.written(bad)  # type: ignore[arg-type]
    with pytest.raises(rewinddb.InvalidInputError):
        run.commits(limit=-2)


def test_common_point_is_where_histories_part(db: rewinddb.Database) -> None:
    attempt(db)
    db.branches.fork("run", "retry", at=4)
    db.at("retry").kv.put("plan", ["c"])
    assert db.common_point("run", "retry") == rewinddb.Point("run", 4)
    assert db.common_point("default", "run") == rewinddb.Point("default", 1)
    assert db.common_point("run", "run", as_of_a=3, as_of_b=5) == rewinddb.Point("run", 3)
    assert db.common_point("retry", "default", as_of_b=2) == rewinddb.Point("default", 1)
    with pytest.raises(rewinddb.BranchNotFound):
        db.common_point("run", "nope")
    with pytest.raises(rewinddb.InvalidInputError):
        db.common_point("run", "retry", as_of_a="x")  # type: ignore[arg-type]


def test_event_logs_compare_by_content_unless_asked_for_hashes(db: rewinddb.Database) -> None:
    db.kv.put("start", 1)
    db.branches.fork("default", "a")
    db.at("a").events.append("tool.call", {"tool": "read"})
    db.kv.put("later", 2)  # b's first event is appended at another version
    db.branches.fork("default", "b")
    db.at("b").events.append("tool.call", {"tool": "read"})
    db.at("a").events.append("run.end", {"score": 1})
    db.at("b").events.append("run.end", {"score": 2})
    split = rewinddb.diff_event_logs(db.at("a"), db.at("b"))
    assert split.common_prefix == 1
    assert [e.payload for e in split.only_a] == [{"score": 1}]
    assert rewinddb.diff_event_logs(db.at("a"), db.at("b"), by="hash").common_prefix == 0
    with pytest.raises(rewinddb.InvalidInputError) as raised:
        rewinddb.diff_event_logs(db.at("a"), db.at("b"), by="payload")  # type: ignore[arg-type]
    assert raised.value.code == "invalid.event_log"


def test_generic_presenter_describes_an_attempt(db: rewinddb.Database) -> None:
    attempt(db)
    presenter = presenters.presenter_for(db.branches.get("run"))
    assert presenter is presenters.generic()
    summary = presenter.summary(db, db.branches.get("run"))
    assert (summary.kind, summary.status, summary.outcome) == ("attempt", "finished", "sell stocks")
    assert summary.fork is not None and summary.fork.label == "fork of default at version 1"
    page = presenter.steps(db, "run")
    assert page.total == 4 and page.older is None
    assert [(s.number, s.version, s.label, s.inherited) for s in page.steps] == [
        (0, 1, "wrote task", True),
        (1, 3, "tool.call, tool.result", False),
        (2, 4, "wrote plan", False),
        (3, 5, "run.end", False),
    ]
    assert page.steps[1].events == (0, 1)
    older = presenter.steps(db, "run", limit=2)
    assert [s.number for s in older.steps] == [2, 3] and older.older == 4
    rest = presenter.steps(db, "run", before=older.older, limit=2)
    assert [s.number for s in rest.steps] == [0, 1] and rest.older is None
    assert rest.newer == 3 and older.newer is None
    # Read forwards: the oldest steps after a version, the next page's cursor in ``newer``.
    forwards = presenter.steps(db, "run", after=1, limit=2)
    assert [s.number for s in forwards.steps] == [1, 2] and forwards.older == 3
    assert forwards.newer == 4 and forwards.total == 4
    last = presenter.steps(db, "run", after=forwards.newer, limit=2)
    assert [s.number for s in last.steps] == [3] and last.newer is None
    assert presenter.steps(db, "run", after=0, before=4).steps == page.steps[:2]
    assert presenter.steps(db, "run", after=5).steps == ()
    assert [c.version for c in db.at("run").commits(after=1, limit=2)] == [4, 3]
    for bad in (-1, "1", 1.5):
        with pytest.raises(rewinddb.InvalidInputError) as raised:
            presenter.steps(db, "run", after=bad)  # type: ignore[arg-type]
        assert raised.value.code == "invalid.after"
    assert presenter.step(db, "run", 3) == page.steps[1]
    with pytest.raises(presenters.StepNotFound) as raised:
        presenter.step(db, "run", 2)  # default's commit after the fork: not run's
    assert raised.value.code == "not_found.step"
    with pytest.raises(rewinddb.NotFoundError) as raised:
        presenter.step_by_id(db, "run", "1f0c")
    assert raised.value.code == "not_found.step"
    with pytest.raises(rewinddb.BranchNotFound):
        presenter.step_by_id(db, "nope", "1f0c")
    assert presenter.state(db, page.steps[2]) == {"kv:task": "reduce risk", "kv:plan": ["a", "b"]}
    assert presenter.transcript(db, "run") is None


def test_a_page_with_no_steps_before_its_cursor_points_at_the_newer_ones(
    db: rewinddb.Database,
) -> None:
    """A page read with ``before=`` at or below the first step, or between two cursors
    that hold no step, is empty; ``newer`` still says where the steps after it begin
    (``after=newer`` reads them), and is None only when there are none."""
    attempt(db)  # run's steps: versions 1 (inherited), 3, 4, 5
    presenter = presenters.generic()
    steps = presenter.steps(db, "run").steps
    for before in (0, 1):
        page = presenter.steps(db, "run", before=before, limit=2)
        assert (page.steps, page.older, page.total) == ((), None, 4)
        assert page.newer is not None, before
        assert presenter.steps(db, "run", after=page.newer, limit=2).steps == steps[:2]
    between = presenter.steps(db, "run", after=1, before=3)  # version 2 is default's only
    assert between.steps == () and between.newer is not None
    assert presenter.steps(db, "run", after=between.newer, limit=2).steps == steps[1:3]
    assert presenter.steps(db, "run", after=5, before=9).newer is None  # nothing after 5
    assert presenter.steps(db, "run", after=5).newer is None
    # The newest page, and a page that reaches it, have nothing newer.
    assert presenter.steps(db, "run", before=9).newer is None
    assert presenter.steps(db, "run", before=5, limit=9).newer == 4
    db.branches.fork("default", "empty", at=0)
    assert presenter.steps(db, "empty", before=1).newer is None


def test_steps_inherited_from_a_deleted_ancestor_still_list(db: rewinddb.Database) -> None:
    attempt(db)
    db.branches.fork("run", "retry", at=4)
    db.at("retry").kv.put("plan", ["c"])
    db.branches.delete("run")
    page = presenters.generic().steps(db, "retry")
    assert [(s.version, s.branch, s.label) for s in page.steps] == [
        (1, "default", "wrote task"),
        (3, "run", "tool.call, tool.result"),
        (4, "run", "wrote plan"),
        (6, "retry", "wrote plan"),
    ]
    assert presenters.generic().fingerprint(db, page.steps[1])  # from its labels


def test_generic_summaries_say_open_failed_and_empty(db: rewinddb.Database) -> None:
    presenter = presenters.generic()
    empty = presenter.summary(db, db.branches.get("default"))
    assert (empty.status, empty.internal) == ("empty", True)  # an empty default is hidden
    db.branches.fork("default", "crash")
    db.at("crash").events.append("tool.call", {"tool": "x"})
    assert presenter.summary(db, db.branches.get("crash")).status == "open"
    db.at("crash").events.append("run.failed", "timeout after 30 s")
    failed = presenter.summary(db, db.branches.get("crash"))
    assert (failed.status, failed.outcome) == ("failed", "timeout after 30 s")
    db.kv.put("k", 1)
    assert presenter.summary(db, db.branches.get("default")).internal is False


def test_records_become_json() -> None:
    when = datetime(2026, 12, 1, 12, 0)
    step = Step(5, "run", 2, "agent", when, writes=("messages",), events=(3,))
    data = presenters.to_dict(step)
    assert data["timestamp"] == "2026-12-01T12:00:00" and data["writes"] == ["messages"]
    summary = Summary("b", "generic", "attempt", "b", "open", outcome=None)
    assert presenters.to_dict(summary)["fork"] is None


class Shouting(Presenter):
    """A presenter of branches named ``loud/...`` whose stored strings are upper-cased."""

    name = "shouting"

    def claims(self, branch: rewinddb.Branch) -> bool:
        return branch.name.startswith("loud/")

    def display(self, value: Any, memo: dict[Any, Any] | None = None) -> Any:
        return value.upper() if isinstance(value, str) else value


def test_a_registered_presenter_claims_its_branches_and_decodes_values(
    db: rewinddb.Database,
) -> None:
    shouting = presenters.register(Shouting())
    try:
        db.branches.fork("default", "loud/one")
        db.at("loud/one").kv.put("k", "quiet")
        assert presenters.presenter_for(db.branches.get("loud/one")) is shouting
        assert presenters.presenter_for(db.branches.get("default")) is presenters.generic()
        assert presenters.readable("quiet") == "QUIET"
        diff = db.diff("default", "loud/one", readable=True)
        assert [c.new for c in diff.changes] == ["QUIET"]
    finally:
        presenters.unregister(shouting)
    assert shouting not in presenters.registered()
    assert presenters.readable("quiet") == "quiet"


def test_register_refuses_what_is_not_a_presenter() -> None:
    with pytest.raises(rewinddb.InvalidInputError) as raised:
        presenters.register(object())  # type: ignore[arg-type]
    assert raised.value.code == "invalid.presenter"


def test_the_langgraph_presenter_is_found_through_its_entry_point() -> None:
    names = [presenter.name for presenter in presenters.registered()]
    assert "langgraph" in names


def test_an_entry_point_whose_framework_is_missing_is_skipped(tmp_path: Any) -> None:
    """A presenter whose import fails (its framework is not installed) is left out, and
    the core still imports, reads and diffs."""
    dist = tmp_path / "broken_presenter-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-presenter\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[rewinddb.presenters]\nbroken = no_such_framework_xyz.presenter:Presenter\n"
    )
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import rewinddb.presenters as p; "
        "from importlib import metadata; "
        "assert 'broken' in [e.name for e in metadata.entry_points(group=p.ENTRY_POINT_GROUP)]; "
        "names = [x.name for x in p.registered()]; "
        "assert 'broken' not in names and 'langgraph' in names, names; print('ok')"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.stdout.strip() == "ok", done.stderr
