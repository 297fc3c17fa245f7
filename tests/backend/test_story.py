"""``rewinddb.story``: the models the web explorer and the notebook widget both render."""

from __future__ import annotations

from typing import Any

import pytest

import rewinddb
from rewinddb import presenters, story
from rewinddb.presenters import Presenter


def attempts(db: rewinddb.Database) -> None:
    """Two attempts from one start; both read the portfolio first (at other versions)."""
    db.json.set("portfolio", "$", {"stocks": 60, "bonds": 40})  # 1
    for name, stocks, score in (("run-1", 20, 90), ("run-3", 90, 45)):
        db.branches.fork("default", name)
        run = db.at(name)
        run.events.append("tool.call", {"tool": "read", "key": "portfolio"})
        run.json.set("portfolio", "$.stocks", stocks)
        run.events.append("run.end", {"score": score})


def test_attempts_leave_out_an_empty_default_unless_asked(db: rewinddb.Database) -> None:
    db.branches.fork("default", "run")
    db.at("run").events.append("run.end", {"answer": "done"})
    assert [a.branch.name for a in story.attempts(db)] == ["run"]
    assert [a.branch.name for a in story.attempts(db, include_internal=True)] == ["default", "run"]
    assert story.attempts(db)[0].summary.outcome == "done"


def test_a_step_opens_with_its_diff_from_the_step_before(db: rewinddb.Database) -> None:
    attempts(db)
    tale = story.branch_story(db, "run-1")
    assert tale.summary.status == "finished" and tale.transcript is None
    labels = [step.label for step in tale.steps.steps]
    assert labels == ["wrote portfolio", "tool.call", "wrote portfolio", "run.end"]
    third = tale.steps.steps[2]
    detail = story.step_detail(db, "run-1", third.version)
    assert detail.previous == tale.steps.steps[1] and detail.presenter == "generic"
    assert [(r.change.key, r.change.path, r.change.old, r.change.new) for r in detail.rows] == [
        ("portfolio", "$.stocks", 60, 20)
    ]
    assert detail.visible == detail.rows and detail.hidden_count == 0
    assert detail.state == {"json:portfolio": {"stocks": 20, "bonds": 40}}
    assert detail.stored["json"] == {"portfolio": {"stocks": 20, "bonds": 40}}
    first = story.step_detail(db, "run-1", tale.steps.steps[0].version)  # inherited
    assert first.previous is None and first.step.inherited
    assert [r.change.kind for r in first.rows] == ["added"]


def test_two_attempts_that_began_alike_share_their_first_steps(db: rewinddb.Database) -> None:
    attempts(db)
    compared = story.compare_stories(db, ("run-1", None), ("run-3", None))
    assert compared.shared == rewinddb.Point("default", 1)
    assert compared.same_after == 1  # both read the portfolio first
    assert compared.first_a is not None and compared.first_b is not None
    assert compared.first_a.label == compared.first_b.label == "wrote portfolio"
    assert compared.events.common_prefix == 1
    assert (compared.a.outcome, compared.b.outcome) == ('{"score":90}', '{"score":45}')
    assert compared.compared_all
    (first,) = compared.visible  # the state only: the logs are compared on their own
    assert (first.label, first.change.path, first.change.old, first.change.new) == (
        "portfolio",
        "$.stocks",
        20,
        90,
    )
    split = compared.events
    assert (split.length_a, split.length_b, split.differing) == (2, 2, 2)
    assert split.first_a is not None and split.first_a.payload == {"score": 90}
    assert split.first_b is not None and split.first_b.payload == {"score": 45}
    assert compared.hidden_count == 0
    assert compared.point_a == rewinddb.Point("run-1", db.version)  # now, on its branch
    assert compared.point_b == rewinddb.Point("run-3", db.version)
    same = story.compare_stories(db, ("run-1", None), ("run-1", None))
    assert (same.first_a, same.first_b) == (None, None)
    assert same.events.identical and same.events.first_a is None


def long_attempts(db: rewinddb.Database, alike: int, then: int) -> None:
    """Two forks of one start that take ``alike`` steps alike (each an event and a
    write), then part: ``long`` takes ``then`` more steps, ``short`` one other step."""
    db.kv.put("start", 0)
    for name in ("long", "short"):
        db.branches.fork("default", name)
        view = db.at(name)
        for step in range(alike):
            with view.transaction():
                view.events.append("tool.call", {"step": step})
                view.kv.put("step", step)
    for step in range(then):
        db.at("long").events.append("tool.call", {"long": step})
    db.at("short").events.append("run.end", {"answer": "short"})


def test_a_comparison_pages_through_what_is_alike(db: rewinddb.Database) -> None:
    long_attempts(db, alike=70, then=3)  # past the first pages of steps and events
    compared = story.compare_stories(db, ("long", None), ("short", None))
    assert compared.shared == rewinddb.Point("default", 1)
    assert compared.same_after == 70 and compared.compared_all
    assert compared.first_a is not None and compared.first_a.label == "tool.call"
    assert compared.first_b is not None and compared.first_b.label == "run.end"
    split = compared.events
    assert (split.common_prefix, split.length_a, split.length_b) == (70, 73, 71)
    assert split.first_a is not None and split.first_a.payload == {"long": 0}
    assert split.first_b is not None and split.first_b.payload == {"answer": "short"}
    # One side a prefix of the other: the longer one's next event is where they part.
    db.branches.fork("long", "longer", at=compared.first_a.version - 1)
    db.at("longer").events.append("extra")
    prefix = story.compare_stories(db, ("long", compared.first_a.version - 1), ("longer", None))
    assert prefix.events.first_a is None and prefix.events.first_b is not None
    assert prefix.events.first_b.event_type == "extra" and prefix.events.common_prefix == 70


def test_a_comparison_reads_only_until_the_attempts_part(
    db: rewinddb.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_attempts(db, alike=1, then=400)
    made: list[int] = []
    build = Presenter._commit_step

    def counted(self: Presenter, *args: Any) -> Any:
        made.append(1)
        return build(self, *args)

    monkeypatch.setattr(Presenter, "_commit_step", counted)
    compared = story.compare_stories(db, ("long", None), ("short", None))
    assert compared.same_after == 1 and compared.first_b is not None
    assert len(made) < 20  # a page or two of each side, not the long side's 401 steps


def test_a_comparison_stops_after_compare_steps_alike(
    db: rewinddb.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_attempts(db, alike=12, then=0)
    monkeypatch.setattr(story, "COMPARE_STEPS", 5)
    compared = story.compare_stories(db, ("long", None), ("short", None))
    assert (compared.same_after, compared.first_a, compared.first_b) == (5, None, None)
    assert not compared.compared_all
    monkeypatch.setattr(story, "COMPARE_STEPS", 13)  # all alike, then one side ends
    whole = story.compare_stories(db, ("long", None), ("short", None))
    assert whole.compared_all and whole.same_after == 12 and whole.first_a is None
    assert whole.first_b is not None and whole.first_b.label == "run.end"


class Bookkeeping(Presenter):
    """Counts the ``seen`` key as bookkeeping."""

    name = "bookkeeping"

    def claims(self, branch: rewinddb.Branch) -> bool:
        return branch.name == "kept"

    def hidden(self, change: Any) -> bool:
        return presenters.hidden_by_patterns(change, ["kv:seen:*"])

    def key_label(self, primitive: str, key: str) -> str:
        return key.upper()


def test_a_presenter_decides_what_is_bookkeeping(db: rewinddb.Database) -> None:
    registered = presenters.register(Bookkeeping())
    try:
        db.branches.fork("default", "kept")
        kept = db.at("kept")
        with kept.transaction():
            kept.kv.put("answer", 42)
            kept.kv.put("seen", {"a": 1})
        detail = story.step_detail(db, "kept", db.branches.get("kept").head)
        assert [(r.label, r.hidden) for r in detail.rows] == [("ANSWER", False), ("SEEN", True)]
        assert detail.hidden_count == 1 and len(detail.visible) == 1
    finally:
        presenters.unregister(registered)


def test_bad_points_are_rewind_errors(db: rewinddb.Database) -> None:
    attempts(db)
    with pytest.raises(rewinddb.BranchNotFound):
        story.branch_story(db, "nope")
    with pytest.raises(rewinddb.BranchNotFound):
        story.step_detail(db, "nope", 1)
    with pytest.raises(presenters.StepNotFound):
        story.step_detail(db, "run-1", 10_000)
    with pytest.raises(rewinddb.InvalidInputError):
        story.step_detail(db, "run-1", -1)
    with pytest.raises(rewinddb.BranchNotFound):
        story.compare_stories(db, ("run-1", None), ("nope", None))
    with pytest.raises(rewinddb.RewindError):
        story.compare_stories(db, ("run-1", 10_000), ("run-3", None))


@pytest.mark.parametrize("again_at", ["the old point", "the head"])
def test_logs_compare_when_the_shared_branch_was_deleted_and_its_name_reused(
    db: rewinddb.Database, again_at: str
) -> None:
    """The events both attempts hold as one history are found from the logs themselves
    (their chained hashes), not by the name of the branch their shared point is on."""
    db.events.append("e", {"n": 0})
    db.branches.fork("default", "x")
    db.at("x").events.append("x", {"n": 1})
    for n in range(3):
        db.events.append("d", {"n": n})
    fork_at = db.version
    db.branches.fork("x", "a")
    db.branches.fork("x", "b")
    db.at("a").events.append("A")
    db.at("b").events.append("B")
    db.branches.delete("x")
    db.branches.fork("default", "x", at=fork_at if again_at == "the old point" else None)
    split = story.compare_stories(db, ("a", None), ("b", None)).events
    assert (split.common_prefix, split.length_a, split.length_b) == (2, 3, 3)
    assert split.first_a is not None and split.first_a.event_type == "A"
    assert split.first_b is not None and split.first_b.event_type == "B"


def test_pruned_attempts_page_and_compare_by_their_kept_commits(db: rewinddb.Database) -> None:
    """Retention keeps a pruned branch's state below its cut as entries without commits:
    those are not steps, so pages read forwards or backwards, counts and comparisons see
    only the kept commits."""
    for name in ("r", "s"):
        db.branches.fork("default", name)
    for n in range(6):
        for name in ("r", "s"):
            db.at(name).kv.put(f"k{n}", n)
    for name in ("r", "s"):  # each keeps its newest two commits
        db.prune(name, before=db.at(name).commits()[1].version)
    run = db.at("r")
    kept = [c.version for c in run.commits()]
    assert len(kept) == 2 and run.commit_count() == 2
    assert [c.version for c in run.commits(after=0, limit=3)] == kept
    generic = presenters.generic()
    ahead = generic.steps(db, "r", after=0, limit=1)
    assert [(s.number, s.version) for s in ahead.steps] == [(0, kept[-1])]
    assert ahead.newer == kept[-1] and ahead.total == 2
    back = generic.steps(db, "r")
    assert [s.number for s in back.steps] == [0, 1] and back.older is None
    compared = story.compare_stories(db, ("r", None), ("s", None))
    assert compared.same_after == 2 and (compared.first_a, compared.first_b) == (None, None)


def test_a_comparison_of_a_log_pruned_in_the_middle(db: rewinddb.Database) -> None:
    """A pruned branch keeps its inherited events and its own from its cut on: the
    events it no longer holds end what the comparison can call shared."""
    db.events.append("t", {"n": 0})
    for name in ("f", "g"):
        db.branches.fork("default", name)
        for n in range(1, 5):
            db.at(name).events.append("t", {"n": n})
        db.at(name).kv.put("a", 1)
    db.prune("f", before=db.at("f").commits()[0].version)
    assert [item.event.sequence for item in db.at("f").events.list()] == [0]
    for a, b in (("f", "g"), ("g", "f")):
        split = story.compare_stories(db, (a, None), (b, None)).events
        assert split.common_prefix == 1 and (split.length_a, split.length_b) == (5, 5)
    summary = presenters.generic().summary(db, db.branches.get("f"))
    assert summary.status == "open"  # its last event was pruned
