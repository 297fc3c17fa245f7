"""A purge keeps a deleted branch's rows only where a remaining branch reads them: a
value that every fork overwrote (or deleted), at every version the fork can still read,
is gone from the file, while every read stays as it was and verify() holds."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any

import orjson
from leaks import hits_in_export, hits_in_files

import rewinddb

SECRET = "sk-live-0b5e1d-a-forks-overwritten-secret"
SEEDS = int(__import__("os").environ.get("ERASURE_FORK_SEEDS", "40"))


def _reads(db: rewinddb.Database) -> dict[tuple[str, int], Any]:
    """Every live branch's state (and key values) at every version it can still read."""
    found: dict[tuple[str, int], Any] = {}
    for name in sorted(branch.name for branch in db.branches):
        view = db.at(name)
        for version in range(db.version + 1):
            try:
                found[(name, version)] = view.snapshot(as_of=version)
            except rewinddb.HistoryUnavailableError:
                continue
    return found


def _gone(db: rewinddb.Database, path: Path, secret: str) -> list[str]:
    assert db.verify().ok
    hits = hits_in_export(db, secret)
    db.close()
    return hits + hits_in_files(path, secret)


def test_a_value_the_fork_overwrote_below_its_horizon_is_purged(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    db = rewinddb.open(path)
    db.branches.fork("default", "p")
    p = db.at("p")
    p.kv.put("k", {"token": SECRET})
    p.kv.put("other", "inherited")
    db.branches.fork("p", "f")
    f = db.at("f")
    f.kv.put("k", "rotated")
    f.kv.put("more", 1)
    db.prune("f", keep_last=1)  # f reads nothing of p's k any more
    db.branches.delete("p")
    before = _reads(db)
    db.gc()
    assert _reads(db) == before
    assert db.at("f").kv.get("other") == "inherited"
    assert _gone(db, path, SECRET) == []


def test_a_value_the_parent_itself_replaced_before_the_fork(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    db = rewinddb.open(path)
    db.branches.fork("default", "p")
    db.at("p").kv.put("k", {"token": SECRET})
    db.at("p").kv.put("k", "replaced")
    db.branches.fork("p", "f")
    db.at("f").kv.put("x", 1)
    db.at("f").kv.put("x", 2)
    db.prune("f", keep_last=1)
    db.branches.delete("p")
    before = _reads(db)
    db.gc()
    assert _reads(db) == before
    assert db.at("f").kv.get("k") == "replaced"
    assert _gone(db, path, SECRET) == []


def test_a_fork_of_a_fork_that_deleted_the_key(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    db = rewinddb.open(path)
    db.branches.fork("default", "p")
    db.at("p").kv.put("k", {"token": SECRET})
    db.branches.fork("p", "m")
    db.at("m").kv.put("y", 1)
    db.branches.fork("m", "g")
    db.at("g").kv.delete("k")
    db.at("g").kv.put("y", 2)
    db.prune("g", keep_last=1)
    db.branches.delete("m")
    db.branches.delete("p")
    before = _reads(db)
    db.gc()
    assert _reads(db) == before
    assert db.at("g").kv.get("k") is None
    assert _gone(db, path, SECRET) == []


def test_what_a_live_fork_still_reads_stays(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    db = rewinddb.open(path)
    db.branches.fork("default", "p")
    db.at("p").kv.put("k", {"token": SECRET})
    db.branches.fork("p", "f")
    db.branches.fork("p", "g")
    db.at("f").kv.put("k", "rotated")
    db.at("g").kv.put("z", 1)
    db.prune("f", keep_last=1)
    db.prune("g", keep_last=1)  # g still reads the secret: it stays
    db.branches.delete("p")
    before = _reads(db)
    db.gc()
    assert _reads(db) == before
    assert db.at("g").kv.get("k") == {"token": SECRET}
    assert _gone(db, path, SECRET) != []


def test_a_value_a_fork_overwrites_after_the_purge_goes_at_the_next_gc(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    db = rewinddb.open(path)
    db.branches.fork("default", "p")
    db.at("p").kv.put("k", {"token": SECRET})
    db.branches.fork("p", "f")
    db.at("f").kv.put("x", 1)
    db.branches.delete("p")
    db.gc()  # f still reads the secret: it stays
    db.at("f").kv.put("k", "rotated")
    db.at("f").kv.put("x", 2)
    db.prune("f", keep_last=1)
    before = _reads(db)
    db.gc()
    assert _reads(db) == before
    assert _gone(db, path, SECRET) == []


def _secret(n: int) -> str:
    return f"sk-fuzz-{n:04d}-value"


def _random_history(db: rewinddb.Database, rng: random.Random) -> list[str]:
    """A small fork tree with writes, overwrites, deletions and cuts; returns every value
    written (as strings)."""
    names = ["default"]
    written: list[str] = []
    keys = ["a", "b", "c"]
    for step in range(rng.randint(6, 16)):
        roll = rng.random()
        name = rng.choice(names)
        if roll < 0.35 and len(names) < 6:
            child = f"b{step}"
            db.branches.fork(name, child)
            names.append(child)
        elif roll < 0.7:
            value = _secret(len(written))
            written.append(value)
            long = rng.random() < 0.3  # a list long enough to be a shared array
            db.at(name).kv.put(rng.choice(keys), [value, *range(40)] if long else value)
        elif roll < 0.78 and len(names) > 1:
            source, target = rng.sample(names, 2)
            with contextlib.suppress(rewinddb.RewindError):
                db.branches.merge(source, target, strategy="source")
        elif roll < 0.85:
            key = rng.choice(keys)
            if db.at(name).kv.get(key) is not None:
                db.at(name).kv.delete(key)
        elif name != "default":
            with contextlib.suppress(rewinddb.RewindError):
                db.prune(name, keep_last=rng.randint(1, 2))
    return names


def test_random_fork_trees_purge_exactly_what_no_branch_reads(tmp_path: Path) -> None:
    for seed in range(SEEDS):
        _check_seed(tmp_path, seed)


def _check_seed(tmp_path: Path, seed: int) -> None:
    """Deleted branches of a random fork tree purged: (a) no value only they held is in
    the file, (b) every read of a live branch is as before, (c) verify() holds."""
    rng = random.Random(seed)
    path = tmp_path / f"db{seed}.sqlite"
    db = rewinddb.open(path)
    names = _random_history(db, rng)
    for name in names[1:]:
        if rng.random() < 0.7:
            db.at(name).kv.put(rng.choice(["a", "b", "c"]), f"own-{name}")
            db.at(name).kv.put("filler", seed)
            if rng.random() < 0.8:
                db.prune(name, keep_last=1)
    doomed = [name for name in names[1:] if rng.random() < 0.6]
    for name in doomed:
        db.branches.delete(name)
    before = _reads(db)
    readable = {
        value
        for state in before.values()
        for value in _strings(state)
        if value.startswith("sk-fuzz-")
    }
    written = {_secret(n) for n in range(60)}
    db.gc()
    assert _reads(db) == before, seed
    assert db.verify().ok, seed
    db.close()
    for value in sorted(written - readable):
        assert hits_in_files(path, value) == [], (seed, value)


def _strings(state: Any) -> list[str]:
    if isinstance(state, str):
        return [state]
    if isinstance(state, dict):
        return [s for v in state.values() for s in _strings(v)]
    if isinstance(state, list | tuple):
        return [s for v in state for s in _strings(v)]
    return []


def test_the_receipts_count_the_values_erased_in_place(tmp_path: Path) -> None:
    """A value a purge erases in place (its entry stays for the hash chain) is counted
    as an entry gone, and its bytes as freed, by gc's report (dry run alike) and by a
    purging delete's receipt: the digest that stays is no value."""
    value = {"token": SECRET}
    for purge_now in (False, True):
        db = rewinddb.open(tmp_path / f"receipt-{purge_now}.sqlite")
        db.branches.fork("default", "p")
        db.at("p").kv.put("k", value)
        db.at("p").kv.put("other", "inherited")  # f reads it: it stays whole
        db.branches.fork("p", "f")
        db.at("f").kv.put("k", "rotated")
        db.at("f").kv.put("more", 1)
        db.prune("f", keep_last=1)
        if purge_now:
            receipt = db.branches.delete("p", purge=True)
            assert receipt is not None
            assert (receipt.entries, receipt.branches, receipt.commits) == (1, 1, 0)
            assert "1 entry" in str(receipt)
        else:
            db.branches.delete("p")
            would = db.gc(dry_run=True)
            report = db.gc()
            for told in (would, report):
                assert (told.entries, told.branches, told.versions) == (1, 1, 0)
                assert told.bytes == len(orjson.dumps(value))
            assert db.gc().entries == 0
        assert _gone(db, tmp_path / f"receipt-{purge_now}.sqlite", SECRET) == []
