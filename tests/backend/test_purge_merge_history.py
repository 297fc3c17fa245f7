"""A purge keeps the merge graph that remaining branches' histories walk through.

A merge base is found by following forks and merges (``merge.contained_history``): a
branch that merged ``x`` holds ``x`` up to the merged version and, through ``x``'s own
merge commits, whatever ``x`` had merged. A purge of ``x`` used to delete those merge
commits with the rest of its rows, so the walk found an older base and the merge went
ahead on it: with ``strategy='source'`` it put a replaced value back, silently. Now a
purge (``branches.delete(purge=True)`` or ``db.gc()``) keeps them as links (version,
time, merge parent: no trigger, message, entries or events), and a merge after it is the
merge it would have been without the purge, or, where the base is history the purge
removed, refused (``history_unavailable``).
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from leaks import hits_in_export, hits_in_files

import rewinddb

SECRET = "sk-live-merge-message-secret-4411"


def _through_a_purged_merge(db: rewinddb.Database) -> None:
    """``s`` reaches ``default`` only through ``x``'s merge of it; ``default`` moves on."""
    db.kv.put("k", 0)
    db.branches.fork("default", "x")
    db.branches.fork("default", "s")
    db.at("s").kv.put("k", 1)
    db.branches.merge("s", "x", message=f"took s ({SECRET})")  # x holds s's k=1
    db.branches.merge("x", "default")  # default holds x, and through it s
    db.kv.put("k", 2)  # the target replaces the value


def test_a_merge_after_a_purge_finds_the_base_the_purged_branch_merged(
    db: rewinddb.Database,
) -> None:
    """The review's repro: without the links the base was default's fork point and
    strategy='source' put k=1 back over k=2."""
    _through_a_purged_merge(db)
    db.branches.delete("x", purge=True)
    receipt = db.branches.merge("s", "default", strategy="source")
    assert receipt.up_to_date and receipt.base == ("s", 2)
    assert receipt.applied == [] and receipt.conflicts == []
    assert db.kv.get("k") == 2
    assert db.verify().ok


def test_the_same_through_gc(db: rewinddb.Database) -> None:
    _through_a_purged_merge(db)
    db.branches.delete("x")  # deleted, not purged: gc purges it
    report = db.gc()
    assert report.branches == 1 and report.entries == 1
    receipt = db.branches.merge("s", "default")  # strategy='fail' raised conflict.merge
    assert receipt.up_to_date and receipt.base == ("s", 2)
    assert db.kv.get("k") == 2
    assert db.verify().ok


def test_a_kept_link_holds_no_rows_trigger_or_message(db: rewinddb.Database) -> None:
    _through_a_purged_merge(db)
    commits_before = len(db.commits())
    receipt = db.branches.delete("x", purge=True)
    assert receipt is not None and receipt.entries == 1 and receipt.commits == 0
    assert "x" not in db.branches
    links = [c for c in db.commits() if c.branch.startswith("~purged/")]
    assert len(db.commits()) == commits_before
    assert [(c.merged_from, c.trigger, c.message) for c in links] == [("s", None, None)]
    assert hits_in_export(db, SECRET) == []
    assert db.verify().ok
    # gc comes back to the branch that keeps a link, and finds nothing more to remove.
    again = db.gc()
    assert (again.branches, again.versions, again.entries, again.events) == (0, 0, 0, 0)
    assert db.branches.merge("s", "default").up_to_date
    assert db.verify().ok
    directory = db.path if isinstance(db.path, Path) else None
    db.close()
    if directory is not None:  # the message is in no file of the database either
        assert hits_in_files(directory, SECRET) == []


def test_a_purged_branch_nothing_reaches_keeps_no_link(db: rewinddb.Database) -> None:
    db.kv.put("k", 0)
    db.branches.fork("default", "x")
    db.branches.fork("default", "s")
    db.at("s").kv.put("k", 1)
    db.branches.merge("s", "x")  # nothing ever merges x
    commits_before = len(db.commits())
    receipt = db.branches.delete("x", purge=True)
    assert receipt is not None and receipt.commits == 1
    assert len(db.commits()) == commits_before - 1
    assert not any(c.branch.startswith("~purged/") for c in db.commits())
    assert [b.name for b in db.graph(include_deleted=True).branches] == ["default", "s"]
    assert db.verify().ok


@pytest.mark.parametrize("order", [("x", "y"), ("y", "x")])
def test_links_through_two_purged_branches(db: rewinddb.Database, order: tuple[str, str]) -> None:
    """s -> x -> y -> default: each purge keeps the links the other's walk needs, in
    either order, and in one purge of both (y forked from x: x's purge takes y along)."""
    db.kv.put("k", 0)
    for name in ("x", "y", "s"):
        db.branches.fork("default", name)
    db.at("s").kv.put("k", 1)
    db.branches.merge("s", "x")
    db.branches.merge("x", "y")
    db.branches.merge("y", "default")
    db.kv.put("k", 2)
    for name in order:
        db.branches.delete(name, purge=True)
        assert db.verify().ok
    receipt = db.branches.merge("s", "default", strategy="source")
    assert receipt.up_to_date and receipt.base == ("s", 2)
    assert db.kv.get("k") == 2


def test_links_of_deleted_descendants_purged_with_their_parent(db: rewinddb.Database) -> None:
    db.kv.put("k", 0)
    db.branches.fork("default", "p")
    db.branches.fork("p", "x")
    db.branches.fork("default", "s")
    db.at("s").kv.put("k", 1)
    db.branches.merge("s", "x")
    db.branches.merge("x", "default")
    db.kv.put("k", 2)
    db.branches.delete("x")
    receipt = db.branches.delete("p", purge=True)  # takes x with it
    assert receipt is not None and receipt.branches == 2
    assert db.branches.merge("s", "default", strategy="source").up_to_date
    assert db.kv.get("k") == 2
    assert db.verify().ok


def test_a_link_goes_once_what_reached_it_is_purged(db: rewinddb.Database) -> None:
    db.kv.put("k", 0)
    db.branches.fork("default", "x")
    db.branches.fork("default", "y")
    db.branches.fork("default", "s")
    db.at("s").kv.put("k", 1)
    db.branches.merge("s", "x")
    db.branches.merge("x", "y")  # only y reaches x's merge of s
    db.branches.delete("x", purge=True)
    assert any(c.branch.startswith("~purged/") and c.merged_from == "s" for c in db.commits())
    receipt = db.branches.delete("y", purge=True)  # nothing reaches y: its merge of x
    assert receipt is not None and receipt.commits == 2  # goes, and x's link with it
    assert not any(c.branch.startswith("~purged/") for c in db.commits())
    assert [b.name for b in db.graph(include_deleted=True).branches] == ["default", "s"]
    assert db.verify().ok


def test_a_base_the_purge_removed_is_refused_not_replaced_by_an_older_one(
    db: rewinddb.Database,
) -> None:
    """s merged x; default holds x only through y's merge of it; both are purged. The
    base is on x, whose rows are gone: refused. The walk used to miss y's merge of x and
    take default's fork point (k=0), where s's k=2 and default's k=1 conflicted, and
    strategy='target' kept 1 silently (from the true base, k=1, s's change applies)."""
    db.kv.put("k", 0)
    for name in ("x", "y", "s"):
        db.branches.fork("default", name)
    db.at("x").kv.put("k", 1)
    db.branches.merge("x", "y")
    db.branches.merge("y", "default")
    db.branches.merge("x", "s")
    db.branches.delete("x", purge=True)
    db.branches.delete("y", purge=True)
    db.at("s").kv.put("k", 2)
    before = db.version
    with pytest.raises(rewinddb.HistoryUnavailableError) as raised:
        db.branches.merge("s", "default", strategy="target")
    assert "purged branch" in str(raised.value)
    assert db.version == before and db.kv.get("k") == 1
    assert db.verify().ok


def test_a_purge_that_keeps_links_above_a_live_forks_reads(db: rewinddb.Database) -> None:
    """x keeps its rows up to a live fork's fork point, and its later merge as a link:
    the chain verifies over both."""
    db.kv.put("k", 0)
    db.branches.fork("default", "x")
    db.branches.fork("default", "s")
    db.at("x").kv.put("own", 1)
    db.branches.fork("x", "fork")
    db.at("x").kv.put("own", 2)
    db.at("s").kv.put("k", 1)
    db.branches.merge("s", "x", trigger="agent")
    db.branches.merge("x", "default")
    db.kv.put("k", 2)
    db.branches.delete("x", purge=True)
    assert db.at("fork").kv.get("own") == 1
    assert db.verify().ok
    assert db.branches.merge("s", "default", strategy="source").up_to_date
    assert db.kv.get("k") == 2
    db.branches.delete("fork", purge=True)
    db.gc()
    assert db.verify().ok
    assert db.branches.merge("s", "default", strategy="source").up_to_date


# -- a shadow: the same history with and without purges ---------------------------------

KEYS = ("a", "b")


@contextmanager
def _pair() -> Iterator[tuple[rewinddb.Database, rewinddb.Database]]:
    dirs = [tempfile.mkdtemp(prefix="rewind-shadow-") for _ in range(2)]
    try:
        with rewinddb.open(dirs[0]) as purging, rewinddb.open(dirs[1]) as keeping:
            yield purging, keeping
    finally:
        for directory in dirs:
            shutil.rmtree(directory, ignore_errors=True)


def _outcome(call: Callable[[], Any]) -> tuple[Any, rewinddb.RewindError | None]:
    try:
        return call(), None
    except rewinddb.RewindError as error:
        return None, error


def _merged(receipt: rewinddb.MergeReceipt) -> tuple[Any, ...]:
    return (
        receipt.up_to_date,
        sorted((c.key, repr(c.new)) for c in receipt.applied),
        sorted((str(c), c.resolution) for c in receipt.conflicts),
    )


def _shadow(seed: int, steps: int = 60) -> None:
    """Every step runs on two databases: one purges what it deletes (now or by gc), the
    other only deletes. A merge the purging one makes is the one the other makes (same
    changes, same conflicts, the same error); where the base is history the purge removed
    it may refuse with history_unavailable (then neither merges); the states stay equal
    and verify holds."""
    pick = random.Random(seed)
    with _pair() as (purging, keeping):
        made, last = 0, "default"
        for _ in range(steps):
            names = keeping.branches.names()
            first, second = pick.choice(names), pick.choice(names)
            roll = pick.random() if len(names) > 3 else 0.3  # (a fork while they are few)
            if roll >= 0.35 and last in names and pick.random() < 0.5:
                first = last  # merge on, or delete, what the last merge went into
            if roll < 0.25:
                key, value = pick.choice(KEYS), pick.randint(0, 3)
                for db in (purging, keeping):
                    db.at(first).kv.put(key, value)
            elif roll < 0.35:
                made += 1
                for db in (purging, keeping):
                    db.branches.fork(first, f"b{made}")
            elif roll < 0.8:
                if first == second:
                    continue
                strategy, last = pick.choice(["fail", "source", "target"]), second
                got, refused = _outcome(
                    partial(purging.branches.merge, first, second, strategy=strategy)
                )
                if refused is not None and refused.code == "history_unavailable":
                    continue  # (the other one does not merge either: they stay alike)
                want, failed = _outcome(
                    partial(keeping.branches.merge, first, second, strategy=strategy)
                )
                assert (refused and refused.code) == (failed and failed.code), (refused, failed)
                if got is not None:
                    assert _merged(got) == _merged(want), (seed, first, second, strategy)
            elif roll < 0.94:
                if first == "default":
                    continue
                now = pick.random() < 0.5
                purging.branches.delete(first, purge=now)
                keeping.branches.delete(first)
                if not now:
                    purging.gc()
            else:
                purging.gc()
            assert {b: purging.at(b).snapshot() for b in purging.branches.names()} == {
                b: keeping.at(b).snapshot() for b in keeping.branches.names()
            }
        assert purging.verify().ok, purging.verify()


@pytest.mark.parametrize("seeds", [range(start, start + 10) for start in range(0, 40, 10)])
def test_merges_after_purges_are_the_merges_without_them(seeds: range) -> None:
    for seed in seeds:
        _shadow(seed)


@pytest.mark.parametrize("reader_stays", [True, False])
def test_a_base_on_a_purged_branch_that_another_fork_reads_is_whole(
    db: rewinddb.Database, reader_stays: bool
) -> None:
    """The base is on x (purged), where neither side reads it, but a live fork of x
    does: the purge kept x's rows up to there, so the merge goes ahead (it was refused).
    Once that fork is purged too, nothing keeps them: refused."""
    db.kv.put("k", 0)
    db.branches.fork("default", "x")
    db.branches.fork("default", "s")
    db.at("x").kv.put("k", 1)
    db.branches.fork("x", "reader")
    db.branches.merge("x", "default")
    db.branches.merge("x", "s")
    db.branches.delete("x", purge=True)
    if not reader_stays:
        db.branches.delete("reader", purge=True)
    db.at("s").kv.put("k", 2)
    if reader_stays:
        receipt = db.branches.merge("s", "default")
        assert receipt.base[0].startswith("~purged/")
        assert [(c.key, c.new) for c in receipt.applied] == [("k", 2)] and not receipt.conflicts
        assert db.kv.get("k") == 2
    else:
        with pytest.raises(rewinddb.HistoryUnavailableError):
            db.branches.merge("s", "default")
        assert db.kv.get("k") == 1
    assert db.verify().ok
