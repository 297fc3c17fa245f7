"""A cut keeps the merge graph that later merges walk through, and gc leaves purged links be.

A merge base is found by following forks and merges (``merge.contained_history``). A
prune or a policy's cut used to delete a branch's merge commits below the cut with the
rest of its history, so a later merge found an older base and went ahead on it, putting
back a value the target had replaced (with ``verify()`` ok). Now a cut stops at the
oldest merge commit a walk still needs. And gc used to purge again, on every run, each
purged branch that keeps merge links (it counted their merge commits as rows to purge).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import rewinddb
from rewinddb import retention


def _merged_then_put_back(db: rewinddb.Database) -> None:
    """``b`` holds default's k=2 through a merge, then puts k=1 back on purpose; two more
    writes, so that ``keep_last=1`` cuts below the merge."""
    db.kv.put("k", 1)
    db.branches.fork("default", "b")
    db.kv.put("k", 2)
    db.branches.merge("default", "b")  # b holds default@2
    db.at("b").kv.put("k", 1)
    db.at("b").kv.put("x", 1)
    db.at("b").kv.put("x", 2)


def test_a_prune_keeps_the_merge_commit_a_later_merge_base_is_found_through(
    db: rewinddb.Database,
) -> None:
    """The review's case: without the merge commit the base was default@1 (k=1), b's k=1
    read as unchanged since, and the merge put default's k=2 over it, verify ok."""
    _merged_then_put_back(db)
    (merge_version,) = [c.version for c in db.commits(branch="b") if c.merged_from]
    report = db.prune("b", keep_last=1)
    assert report.horizons["b"] == merge_version  # lowered to keep it
    assert db.verify().ok
    receipt = db.branches.merge("default", "b")
    assert receipt.base == ("default", 2) and receipt.applied == []
    assert db.at("b").kv.get("k") == 1
    assert db.verify().ok


def test_a_newer_merge_of_the_same_branch_lets_the_cut_past_the_older_one(
    db: rewinddb.Database,
) -> None:
    _merged_then_put_back(db)
    db.kv.put("k", 3)
    k3 = db.version
    db.branches.merge("default", "b", strategy="target")  # b holds default@k3, keeps k=1
    newer = max(c.version for c in db.commits(branch="b") if c.merged_from)
    db.at("b").kv.put("x", 3)
    report = db.prune("b", keep_last=1)
    assert report.horizons["b"] == newer and report.versions == 4
    assert db.verify().ok
    assert db.branches.merge("default", "b").base == ("default", k3)
    assert db.at("b").kv.get("k") == 1


def test_a_policy_cut_keeps_it_too(db: rewinddb.Database) -> None:
    _merged_then_put_back(db)
    (merge_version,) = [c.version for c in db.commits(branch="b") if c.merged_from]
    db.retain("b", keep_last=1)
    dry = db.gc(dry_run=True)
    report = db.gc()
    assert dry.horizons == report.horizons == {"b": merge_version}
    assert db.verify().ok
    assert db.branches.merge("default", "b").applied == []
    assert db.at("b").kv.get("k") == 1


def test_a_merge_of_the_cut_branch_below_its_cut_still_holds_what_it_merged(
    db: rewinddb.Database,
) -> None:
    """``c`` merged ``b`` right after b merged default: a walk from c reaches b at that
    version, and through b's merge commit there, default@2 (b's newer merge of default
    does not stand for it there)."""
    db.kv.put("k", 1)
    db.branches.fork("default", "b")
    db.branches.fork("default", "c")
    db.kv.put("k", 2)
    db.branches.merge("default", "b")
    first = db.version
    db.branches.merge("b", "c")  # c holds b, and through it default@2
    db.at("c").kv.put("k", 1)  # c puts k=1 back on purpose
    db.kv.put("other", 1)
    db.branches.merge("default", "b")  # a newer merge of default on b
    for n in range(3):
        db.at("b").kv.put("x", n)
    assert db.prune("b", keep_last=1).horizons["b"] == first
    assert db.verify().ok
    receipt = db.branches.merge("default", "c")
    assert receipt.base == ("default", 2)
    assert [change.key for change in receipt.applied] == ["other"]
    assert db.at("c").kv.get("k") == 1


def _purged_threads_that_merged_default(db: rewinddb.Database, threads: int) -> None:
    """Threads that merged default and that default merged back, deleted: each keeps
    its merge commit as a link after a purge (default's merge of it walks through it)."""
    db.kv.put("k", 0)
    for n in range(threads):
        db.branches.fork("default", f"t{n}")
        db.kv.put("k", n + 1)
        db.branches.merge("default", f"t{n}")
        db.at(f"t{n}").kv.put("secret", n)
        db.branches.merge(f"t{n}", "default")
        db.branches.delete(f"t{n}")


def test_a_second_gc_does_not_purge_branches_that_keep_links_again(
    db: rewinddb.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    _purged_threads_that_merged_default(db, 3)
    steps: list[Any] = []
    purge_one = retention._purge_one

    def counted(engine: Any, group: list[int]) -> Any:
        steps.append(group)
        return purge_one(engine, group)

    monkeypatch.setattr(retention, "_purge_one", counted)
    first = db.gc()
    assert first.branches == 3 and len(steps) == 3
    links = [c for c in db.commits() if c.branch.startswith("~purged/")]
    assert len(links) == 3  # (what the second gc used to purge again)
    steps.clear()
    again = db.gc(dry_run=True), db.gc()
    assert steps == []
    for report in again:
        assert (report.branches, report.versions, report.entries, report.bytes) == (0, 0, 0, 0)
    assert db.verify().ok


# -- a shadow: the same random story on a database that never cuts ------------------------


#: A story's steps, in about these proportions.
_OPS = ["put", "put", "event", "fork", "fork", "merge", "merge", "merge", "delete", "cut", "cut"]


def _story(seed: int, root: Path) -> None:
    """Random fork trees (depth up to 4), puts, events, merges, deletes, prunes with a
    random keep_last and gc, run twice: on a database that cuts and on its shadow, which
    skips the cuts. Every merge on the cut one is the shadow's merge (the same base and
    changes) or is refused (history_unavailable); every live branch reads the same at
    its head in both and the same as before each cut at each version above its
    horizon; verify() is ok after each cut."""
    rng = random.Random(seed)
    with rewinddb.open(root / "cut") as cut, rewinddb.open(root / "shadow") as shadow:
        both = (cut, shadow)
        depth, together = {"default": 0}, True
        for db in both:
            db.kv.put("k0", 0)
        for step in range(60):
            live = [name for name in depth if name in cut.branches]
            name = rng.choice(live)
            op = rng.choice(_OPS)
            if op == "put":
                key, value = rng.choice(["k0", "k1", "k2"]), rng.randrange(4)
                for db in both:
                    db.at(name).kv.put(key, value)
            elif op == "event":
                for db in both:
                    db.at(name).events.append("e", {"step": step})
            elif op == "fork" and depth[name] < 4:
                new = f"b{step}"
                for db in both:
                    db.branches.fork(name, new)
                depth[new] = depth[name] + 1
            elif op == "merge" and len(live) > 1 and together:
                source = rng.choice([n for n in live if n != name])
                together = _merge_both(cut, shadow, source, name)
            elif op == "delete" and name != "default":
                for db in both:  # (gc purges it on the cut database only)
                    db.branches.delete(name)
            elif op == "cut" and len(live) > 1:
                merged = {c.branch for c in cut.commits() if c.merged_from} - {"default"}
                choices = sorted(merged & set(live)) or [n for n in live if n != "default"]
                _cut(cut, rng, rng.choice(choices))  # a branch that merged, mostly
            for branch in cut.branches.names():
                assert _head(cut, branch) == _head(shadow, branch), (seed, step, branch)


def _head(db: rewinddb.Database, branch: str) -> Any:
    """What a branch holds at its head (a purge takes a version: the clocks differ)."""
    snapshot = db.at(branch).snapshot()
    return {space: snapshot[space] for space in ("kv", "json", "state")}


def _merge_both(
    cut: rewinddb.Database, shadow: rewinddb.Database, source: str, target: str
) -> bool:
    """Merge on both; False once the stories' merge graphs part: a merge with nothing new
    writes no commit, and one whose source lost events to a prune of its own log (an
    inherited log is what the parent kept) has less to carry, so only one writes it."""
    try:
        receipt = cut.branches.merge(source, target, strategy="source")
    except rewinddb.HistoryUnavailableError:
        return True  # refused exactly: the shadow leaves it too
    twin = shadow.branches.merge(source, target, strategy="source")
    assert (receipt.base[1], receipt.applied, receipt.conflicts) == (
        twin.base[1],
        twin.applied,
        twin.conflicts,
    )
    assert receipt.base[0] in (twin.base[0], _purged(shadow, twin.base[0]))
    if (receipt.version is None) == (twin.version is None):
        return True
    assert receipt.events_not_carried < twin.events_not_carried
    return False


def _purged(db: rewinddb.Database, name: str) -> str:
    """What the cut database calls a branch the shadow names, once gc purged it."""
    row = db._engine.conn.fetchone("SELECT id FROM rewind_branches WHERE name = ?", (name,))
    return f"~purged/{row[0]}"


def _cut(db: rewinddb.Database, rng: random.Random, name: str) -> None:
    """A prune, a delete and gc, or a policy's gc on the cut database only."""
    before = {
        b.name: {v: _state(db, b.name, v) for v in range(b.forked_at, db.version + 1)}
        for b in db.branches.list()
    }
    what = rng.choice(["prune", "prune", "policy", "gc"])
    if what == "prune":
        db.prune(name, keep_last=rng.choice([1, 1, 2, 4]))
    elif what == "policy":
        db.retain("b*", keep_last=rng.randint(1, 4))
        db.gc()
    else:
        db.gc()
    assert db.verify().ok
    for branch in db.branches.list():
        kept = db._engine.horizon(db._engine.branch(branch.name).id)
        for version, state in before[branch.name].items():
            if kept is None or version >= kept.kept_from:
                assert _state(db, branch.name, version) == state, (branch.name, version)


def _state(db: rewinddb.Database, branch: str, version: int) -> Any:
    try:
        return db.at(branch).snapshot(as_of=version)
    except rewinddb.HistoryUnavailableError:
        return "gone"


@pytest.mark.parametrize("seed", range(20))
def test_random_stories_merge_the_same_after_cuts(seed: int, tmp_path: Path) -> None:
    _story(seed, tmp_path)
