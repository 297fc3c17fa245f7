"""Erasure: a purged branch, an erased key or an erased event is gone from every read, every
file of the database and every export, while what others see stays and verify() holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from leaks import hits_in_export, hits_in_files

import rewinddb
from rewinddb.errors import InvalidInputError, NotFoundError

from .conftest import Refused

SECRET = "sk-live-7f3a9c-the-users-secret-token"


def _answers(db: rewinddb.Database, branch: str, versions: range) -> dict[int, Any]:
    """What a branch reads at each of these versions (state and log)."""
    view = db.at(branch)
    found = {}
    for version in versions:
        try:
            found[version] = (
                view.snapshot(as_of=version),
                [item.event.payload for item in view.events.list(as_of=version)],
            )
        except rewinddb.HistoryUnavailableError:
            continue
    return found


def _assert_gone(db: rewinddb.Database, secret: str) -> None:
    """The history verifies, and ``secret`` is in no export and (closed, on SQLite) no
    file of the database's directory."""
    assert db.verify().ok
    assert hits_in_export(db, secret) == []
    directory = db.path if isinstance(db.path, Path) else None
    db.close()
    if directory is not None:
        assert hits_in_files(directory, secret) == []


def _long_list(secret: str, n: int = 40) -> list[dict[str, str]]:
    return [{"text": f"message {i} " + "x" * 40} for i in range(n)] + [{"text": secret}]


def test_a_purged_branch_is_in_no_read_file_or_export(db: rewinddb.Database) -> None:
    db.kv.put("shared", 1)
    db.branches.fork("default", "alice")
    alice = db.at("alice")
    alice.kv.put("profile", {"token": SECRET})
    alice.json.set("doc", "$", {"notes": [SECRET] * 3, "more": list(range(200))})
    alice.state.set("blob", SECRET.encode())
    alice.kv.put("chat", _long_list(SECRET))  # a shared array
    alice.events.append("said", {"text": SECRET})
    alice.kv.put("profile", {"token": "rotated"})
    db.branches.fork("default", "bob")
    db.at("bob").kv.put("chat", _long_list("bob's own"))
    others = _answers(db, "bob", range(db.version + 1))
    receipt = db.branches.delete("alice", purge=True)
    assert receipt is not None
    assert receipt.branches == 1 and receipt.entries == 5 and receipt.events == 1
    assert receipt.list_items == 41 and "removed 1 branch" in str(receipt)
    assert "alice" not in db.branches
    assert _answers(db, "bob", range(db.version + 1)) == others
    assert db.kv.get("shared") == 1
    _assert_gone(db, SECRET)


def test_what_a_live_fork_inherited_stays_and_the_rest_goes(db: rewinddb.Database) -> None:
    db.branches.fork("default", "parent")
    parent = db.at("parent")
    parent.kv.put("early", "inherited by the fork")
    parent.kv.put("chat", _long_list("kept"))
    parent.events.append("step", {"n": 1})
    db.branches.fork("parent", "fork")
    fork_point = db.version
    parent.kv.put("late", {"token": SECRET})
    parent.kv.put("chat", [*_long_list("kept"), {"text": SECRET}])  # grows the shared array
    parent.events.append("step", {"secret": SECRET})
    db.at("fork").kv.put("own", 2)
    before = _answers(db, "fork", range(db.version + 1))
    db.branches.delete("parent", purge=True)
    assert _answers(db, "fork", range(db.version + 1)) == before
    assert db.at("fork").kv.get("early") == "inherited by the fork"
    assert db.at("fork").kv.get("chat", as_of=fork_point) == _long_list("kept")
    assert (db.branches.get("fork").parent or "").startswith("~purged/")  # not its name
    _assert_gone(db, SECRET)


def test_a_purge_takes_deleted_descendants_with_it(db: rewinddb.Database) -> None:
    db.branches.fork("default", "a")
    db.at("a").kv.put("k", 1)
    db.branches.fork("a", "b")
    db.at("b").kv.put("secret", SECRET)
    db.branches.delete("b")  # deleted, not purged: its rows stay until a purge or gc
    assert hits_in_export(db, SECRET) != []
    receipt = db.branches.delete("a", purge=True)
    assert receipt is not None and receipt.branches == 2
    assert hits_in_export(db, SECRET) == []
    assert db.verify().ok


def test_purge_refuses_what_it_must_not_remove(db: rewinddb.Database, refused: Refused) -> None:
    db.branches.fork("default", "keep")
    db.at("keep").kv.put("k", 1)
    db.branches.pin("keep")
    assert db.branches.pinned() == ["keep"]
    with refused(db, InvalidInputError, "invalid.branch.pinned"):
        db.branches.delete("keep", purge=True)
    with refused(db, InvalidInputError, "invalid.branch.pinned"):
        db.branches.delete("keep")
    with refused(db, InvalidInputError, "invalid.branch.default"):
        db.branches.delete("default", purge=True)
    with refused(db, rewinddb.BranchNotFound):
        db.branches.delete("nobody", purge=True)
    with refused(db, InvalidInputError, "invalid.purge"):
        db.branches.delete("keep", purge="yes")  # type: ignore[arg-type]
    db.branches.unpin("keep")
    assert db.branches.pinned() == []
    db.branches.delete("keep", purge=True)
    assert "keep" not in db.branches


def test_an_erased_key_is_gone_everywhere_and_leaves_a_tombstone(db: rewinddb.Database) -> None:
    db.kv.put("user", {"email": SECRET})
    db.kv.put("other", "stays")
    db.branches.fork("default", "fork")
    db.at("fork").kv.put("user", {"email": SECRET, "seen": 2})
    db.kv.put("user", {"chat": _long_list(SECRET)})
    written = db.version
    receipt = db.erase_key("kv", "user")
    assert receipt.entries == 3 and receipt.version == written
    assert receipt.list_items == 41
    for branch in ("default", "fork"):
        view = db.at(branch)
        assert view.kv.get("user") is None and "user" not in view.kv
        for version in range(db.branches.get(branch).forked_at, db.version + 1):
            assert view.kv.get("user", as_of=version) is None
            assert "user" not in view.snapshot(as_of=version)["kv"]
    history = db.at("fork").key_history("kv", "user")
    assert [entry.entry.erased_at for entry in history] == [written, written]
    assert all(entry.entry.value is None and not entry.entry.deleted for entry in history)
    assert db.kv.get("other") == "stays"
    assert db.verify().ok
    assert hits_in_export(db, SECRET) == []
    db.kv.put("user", {"email": "new"})  # the key can be written again
    assert db.kv.get("user") == {"email": "new"}
    _assert_gone(db, SECRET)


@pytest.mark.parametrize("space", ["json", "state"])
def test_every_space_can_be_erased(db: rewinddb.Database, space: str) -> None:
    if space == "json":
        db.json.set("doc", "$", {"secret": SECRET, "list": list(range(300))})
        assert db.json.get("doc") is not None
    else:
        db.state.set("doc", SECRET)
    db.erase_key(space, "doc")
    assert (db.json.get("doc") if space == "json" else db.state.get("doc")) is None
    assert hits_in_export(db, SECRET) == [] and db.verify().ok


def test_erase_key_refuses_bad_input(db: rewinddb.Database, refused: Refused) -> None:
    db.kv.put("k", 1)
    with refused(db, NotFoundError, "not_found.key"):
        db.erase_key("kv", "never-written")
    with refused(db, InvalidInputError, "invalid.space"):
        db.erase_key("events", "k")
    for key in ("", "\x00", 7, None):
        with refused(db, InvalidInputError, "invalid.key"):
            db.erase_key("kv", key)  # type: ignore[arg-type]


def test_an_erased_event_keeps_its_place_and_the_chain_verifies(db: rewinddb.Database) -> None:
    log = db.events
    for n in range(5):
        log.append("step", {"n": n, "secret": SECRET if n == 2 else None})
    db.branches.fork("default", "fork")
    db.branches.fork("default", "target")
    db.at("fork").events.append("own", {"n": 5})
    db.branches.merge("fork", "target", events="append")
    receipt = db.at("fork").events.erase(2)  # inherited: erased where it lives
    assert receipt.events == 1
    erased = db.at("fork").events.get(2)
    assert erased.payload is None and erased.erased_at == receipt.version
    assert erased.event_type == "step" and erased.hash == log.get(2).hash
    assert log.get(2).payload is None and log.get(3).payload == {"n": 3, "secret": None}
    for branch in ("default", "fork", "target"):
        assert db.at(branch).events.verify().ok
    assert db.verify().ok
    assert hits_in_export(db, SECRET) == []
    db.events.append("after", {})
    assert db.events.verify().ok and db.verify().ok


def test_erasing_events_refuses_bad_input(db: rewinddb.Database, refused: Refused) -> None:
    db.events.append("e", {})
    with refused(db, rewinddb.EventNotFound, "not_found.event"):
        db.events.erase(5)
    for bad in (-1, "0", True, 2**63):
        with refused(db, InvalidInputError, "invalid.sequence"):
            db.events.erase(bad)  # type: ignore[arg-type]


def test_tampering_still_shows_after_an_erasure(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.kv.put("a", 1)
        db.kv.put("b", {"secret": SECRET})
        db.kv.put("c", 3)
        db.erase_key("kv", "b")
        assert db.verify().ok
        db._engine.conn.execute("UPDATE rewind_entries SET body = '4' WHERE key = 'c'")
        report = db.verify()
        assert not report.ok and "does not match" in str(report)


def test_another_connection_reads_the_erasure_at_once(db_target: str | Path) -> None:
    with rewinddb.open(db_target) as writer, rewinddb.open(db_target) as reader:
        writer.kv.put("k", {"secret": SECRET})
        writer.kv.put("chat", _long_list(SECRET))
        assert reader.kv.get("k") == {"secret": SECRET}  # remembered by the reader
        assert reader.kv.get("chat")[-1] == {"text": SECRET}
        stamp = reader.stamp
        writer.erase_key("kv", "k")
        writer.erase_key("kv", "chat")
        assert reader.kv.get("k") is None and reader.kv.get("chat") is None
        assert writer.kv.get("k") is None
        assert reader.stamp != stamp  # the clock did not move, the history did
        stamp = reader.stamp
        assert writer.erase_key("kv", "k").entries == 0  # erased already: nothing to do
        assert reader.stamp == stamp


def test_erase_keys_in_a_branch_and_what_it_reads(db: rewinddb.Database, refused: Refused) -> None:
    db.kv.put("shared", {"secret": SECRET})  # inherited by both forks
    db.branches.fork("default", "a")
    db.branches.fork("default", "b")
    db.at("a").kv.put("own", {"secret": SECRET})
    db.at("b").kv.put("own", "b keeps its own")
    db.branches.fork("a", "a-child")
    db.at("a-child").kv.put("own", {"secret": SECRET, "child": True})
    receipt = db.erase_keys("kv", ["own", "shared", "never"], branch="a", missing_ok=True)
    assert receipt.entries == 3  # a's, a-child's, and the one a inherited from default
    assert db.at("a").kv.get("own") is None and db.at("a-child").kv.get("own") is None
    assert db.at("b").kv.get("own") == "b keeps its own"
    assert db.at("b").kv.get("shared") is None  # it inherited the erased value too
    assert db.verify().ok
    with refused(db, NotFoundError, "not_found.key"):
        db.erase_keys("kv", ["never"], branch="a")
    with refused(db, InvalidInputError, "invalid.key"):
        db.erase_keys("kv", "own")  # one string, not a list of keys
    with refused(db, InvalidInputError, "invalid.missing_ok"):
        db.erase_keys("kv", ["own"], missing_ok="yes")  # type: ignore[arg-type]
    with refused(db, rewinddb.BranchNotFound):
        db.erase_keys("kv", ["own"], branch="nobody")


def test_an_erasure_in_a_transaction_is_scrubbed_when_it_commits(db_path: Path) -> None:
    with rewinddb.open(db_path) as db:
        db.kv.put("k", {"secret": SECRET})
        db.branches.fork("default", "gone")
        db.at("gone").kv.put("g", {"secret": SECRET})
        with db.atomic():
            db.erase_key("kv", "k")
            db.branches.delete("gone", purge=True)
            db.kv.put("after", 1)
        # Not closed: the WAL was checkpointed and cut back when the block committed.
        assert hits_in_files(db_path, SECRET) == []
        assert db.verify().ok


def test_purging_a_forks_last_reader_takes_its_deleted_parent_too(db: rewinddb.Database) -> None:
    db.branches.fork("default", "parent")
    db.at("parent").kv.put("k", {"secret": SECRET})
    db.branches.fork("parent", "fork")
    db.branches.delete("parent", purge=True)  # its rows stay: the fork reads them
    assert db.at("fork").kv.get("k") == {"secret": SECRET}
    db.branches.delete("fork", purge=True)
    assert hits_in_export(db, SECRET) == []
    assert db.verify().ok
