"""A step whose parent checkpoint retention cut is not told as its own change since the
step listed before it.

After ``db.retain`` then ``db.gc()`` a fork's step may follow, in its story, an older
step than the one it came from (the one between was removed): its page's diff covers
the steps between too, and the step page (``story.step_detail``, the explorer's step
page, the notebook's step panel) says the steps between were removed by retention."""

from __future__ import annotations

import html
import re
from itertools import pairwise
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import rewinddb
from rewinddb import story
from rewinddb.notebook import _html
from rewinddb.web import create_app
from rewinddb.web.urls import step_url
from tests.integrations.test_langgraph_story_forks_cuts import _copy, forked_trip

__all__ = ["forked_trip"]  # (the module fixture: two turns of the trip, then a fork)

REMOVED = "the steps between were removed by retention"


def _words(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _after_cut_parent(db: rewinddb.Database, branch: str) -> story.Step:
    """The fork's own step listed after a step that is not its parent checkpoint."""
    steps = story.branch_story(db, branch).steps.steps
    found = []
    for before, step in pairwise(steps):
        # (a step listed below its branch's cut is the state kept there: read there)
        at = max(step.version, db.branches.kept_from(step.branch) or 0)
        record = db.at(step.branch).kv.history("checkpoint", as_of=at, limit=1)
        if not step.inherited and record[-1].value.get("parent") != before.id:
            found.append(step)
    (step,) = found
    return step


@pytest.mark.parametrize("keep", [1, 2])
def test_a_step_whose_parent_was_cut_says_the_steps_between_were_removed(
    forked_trip: Path, tmp_path: Path, keep: int
) -> None:
    with rewinddb.open(_copy(forked_trip, tmp_path)) as db:
        (fork,) = [b.name for b in db.branches.list() if b.name.startswith("lg/trip~")]
        db.retain("lg/*", keep_last=keep)
        db.gc()
        step = _after_cut_parent(db, fork)
        detail = story.step_detail(db, fork, step.version)
        assert detail.kept_from is None  # (the step before is kept: the diff starts there)
        assert detail.previous is not None and detail.previous.inherited
        assert detail.previous.number < step.number - 1  # (steps between it and its parent)
        assert detail.step.parent_cut and step.parent_cut
        # The step before it, and every step after its own parent, are told as before.
        others = [s for s in story.branch_story(db, fork).steps.steps if s.id != step.id]
        assert not any(s.parent_cut for s in others)
        since = f"What changed since step {detail.previous.number}"
        with TestClient(create_app(db.path), base_url="http://localhost") as client:
            page = client.get(step_url(fork, step.version))
            assert page.status_code == 200
            shown = _words(page.text)
            assert since in shown and REMOVED in shown
            # A step after its own parent says nothing of the kind.
            if others and not others[-1].inherited:
                assert REMOVED not in _words(client.get(step_url(fork, others[-1].version)).text)
        notebook = _words(_html.detail_html(detail, show_hidden=False))
        assert f"changed since step {detail.previous.number} ({REMOVED})" in notebook


def test_an_uncut_fork_says_no_steps_were_removed(forked_trip: Path, tmp_path: Path) -> None:
    with rewinddb.open(_copy(forked_trip, tmp_path)) as db:
        (fork,) = [b.name for b in db.branches.list() if b.name.startswith("lg/trip~")]
        steps = story.branch_story(db, fork).steps.steps
        assert steps and not any(s.parent_cut for s in steps)
        last = steps[-1]
        assert not story.step_detail(db, fork, last.version).step.parent_cut
        with TestClient(create_app(db.path), base_url="http://localhost") as client:
            assert REMOVED not in _words(client.get(step_url(fork, last.version)).text)
