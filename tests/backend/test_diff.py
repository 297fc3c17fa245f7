"""The one diff engine: structured changes between any two points."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import rewinddb
from rewinddb import Change, presenters
from rewinddb._engine import MISSING
from rewinddb.diff import diff_values
from rewinddb.presenters import Presenter

from .conftest import entry_reads, statements


def test_diff_between_branches(db: rewinddb.Database) -> None:
    db.kv.put("task", "t")
    db.json.set("portfolio", "$", {"stocks": 60, "bonds": 40, "meta": {"owner": "ann"}})
    db.branches.fork("default", "run")
    run = db.at("run")
    run.json.set("portfolio", "$.stocks", 20)
    run.json.delete("portfolio", "$.meta")
    run.json.set("portfolio", "$.new", [1])
    run.kv.put("score", "90")
    run.kv.delete("task")
    event = run.events.append("run.end", {"score": 90})
    diff = db.diff("default", "run")
    assert diff.changes == [
        Change("json", "portfolio", "$.meta", "removed", {"owner": "ann"}, None),
        Change("json", "portfolio", "$.new", "added", None, [1]),
        Change("json", "portfolio", "$.stocks", "changed", 60, 20),
        Change("kv", "score", "$", "added", None, "90"),
        Change("kv", "task", "$", "removed", "t", None),
        Change(
            "events",
            "0",
            "$",
            "added",
            None,
            {"event_type": "run.end", "payload": {"score": 90}, "version": event.version},
        ),
    ]
    assert diff.counts() == {"added": 3, "removed": 2, "changed": 1}
    assert (str(diff.a), str(diff.b)) == (f"default@{db.version}", f"run@{db.version}")
    assert db.diff("default", "run", events=False).changes == diff.changes[:-1]  # state only
    reverse = db.diff("run", "default")
    assert [c.kind for c in reverse] == [
        "added",
        "removed",
        "changed",
        "removed",
        "added",
        "removed",
    ]


def test_diff_of_two_versions_of_one_branch(db: rewinddb.Database) -> None:
    v1 = db.json.set("chat", "$", {"messages": ["hi"]})
    db.json.set("chat", "$.messages[1]", "how are you")
    v3 = db.kv.put("unrelated", 1)
    diff = db.at("default").diff(v1, v3)
    assert [(c.primitive, c.key, c.path, c.kind) for c in diff] == [
        ("json", "chat", "$.messages[1]", "added"),
        ("kv", "unrelated", "$", "added"),
    ]
    assert not db.at("default").diff(v3, v3)
    assert db.at("default").diff(v3).changes == []  # up to now


def test_diff_at_past_versions_of_two_branches(db: rewinddb.Database) -> None:
    db.kv.put("x", 1)
    db.branches.fork("default", "a")
    va = db.at("a").kv.put("x", 2)
    db.at("a").kv.put("x", 3)
    diff = db.diff("default", "a", as_of_b=va)
    assert [(c.old, c.new) for c in diff] == [(1, 2)]


def test_diverged_logs_show_both_sides(db: rewinddb.Database) -> None:
    db.events.append("common", {})
    db.branches.fork("default", "a")
    db.branches.fork("default", "b")
    db.at("a").events.append("only a", {})
    db.at("b").events.append("only b", {})
    diff = db.diff("a", "b")
    assert [(c.key, c.kind) for c in diff] == [("1", "removed"), ("1", "added")]


def test_text_and_json_renderings(db: rewinddb.Database) -> None:
    db.branches.fork("default", "run")
    db.at("run").kv.put("blob", b"\x00\x01")
    db.at("run").json.set("doc", "$.a", "x" * 500)
    diff = db.diff("default", "run")
    text = diff.to_text()
    assert text.splitlines()[0] == f"--- default@{db.version}"
    assert "+ kv 'blob' $: bytes[2]" in text
    assert "..." in text  # long values are shortened in text
    assert text.endswith("2 changes: 2 added, 0 removed, 0 changed")
    data = diff.to_dict()
    assert data["changes"][1]["new"] == {"$bytes": "0001"}
    assert str(diff) == text


def test_diff_only_reads_what_changed(db: rewinddb.Database) -> None:
    with db.transaction():
        for i in range(500):
            db.kv.put(f"k{i}", i)
    db.branches.fork("default", "run")
    db.at("run").kv.put("k7", "changed")
    assert [(c.key, c.new) for c in db.diff("default", "run")] == [("k7", "changed")]


# -- the diff against a reference: every key of both states, compared in full ---------

SPACES = ("json", "kv", "state")


def full_diff(
    db: rewinddb.Database, a: str, b: str, *, as_of_a: int | None = None, as_of_b: int | None = None
) -> list[Change]:
    """The reference ``db.diff(a, b, events=False)`` must equal: every key that exists at
    either point, read in full at both (``Engine.entries``, a scan of each lineage step)
    and compared by ``diff_values``, the plain recursive comparison, in (space, key)
    order. It reads the whole state; the diff reads what changed."""
    engine = db._engine
    record_a, record_b = engine.branch(a), engine.branch(b)
    version_a = engine.resolve_as_of(record_a, as_of_a)
    version_b = engine.resolve_as_of(record_b, as_of_b)
    changes: list[Change] = []
    for space in SPACES:
        entries_a = engine.entries(record_a, version_a, space)
        entries_b = engine.entries(record_b, version_b, space)
        for key in sorted(entries_a.keys() | entries_b.keys()):
            old = engine.decode(*entries_a[key]) if key in entries_a else MISSING
            new = engine.decode(*entries_b[key]) if key in entries_b else MISSING
            changes += diff_values(space, key, old, new)
    return changes


def assert_like_full(
    db: rewinddb.Database, a: str, b: str, *, as_of_a: int | None = None, as_of_b: int | None = None
) -> list[Change]:
    """``db.diff(a, b)`` (both ways) has the reference's changes, and some."""
    changes = db.diff(a, b, events=False, as_of_a=as_of_a, as_of_b=as_of_b).changes
    assert changes == full_diff(db, a, b, as_of_a=as_of_a, as_of_b=as_of_b)
    back = db.diff(b, a, events=False, as_of_a=as_of_b, as_of_b=as_of_a).changes
    assert back == full_diff(db, b, a, as_of_a=as_of_b, as_of_b=as_of_a)
    assert changes
    return changes


def test_forks_of_forks_with_deletions_and_re_writes(db: rewinddb.Database) -> None:
    with db.transaction():
        for i in range(30):
            db.kv.put(f"k{i:02d}", {"i": i, "tags": ["a", "b"]})
    db.kv.put("gone", "soon")
    db.branches.fork("default", "a")
    a = db.at("a")
    a.kv.put("k01", {"i": 1, "tags": ["a", "b", "c"]})  # an item added
    a.kv.delete("k02")
    a.kv.put("k03", {"i": 3, "tags": ["a", "b"]})  # rewritten with the same value
    a.kv.put("only-a", 1)
    mid_a = db.version
    db.branches.fork("a", "b")
    b = db.at("b")
    b.kv.put("k02", {"i": 2, "tags": ["a", "b"]})  # deleted by its parent, written again
    b.kv.delete("only-a")
    b.kv.put("k04", {"i": 4})  # a member removed
    b.kv.delete("gone")
    b.kv.put("gone", "soon")  # deleted, then written back as it was
    db.kv.put("k05", {"i": 5.0, "tags": ["a", "b"]})  # default moves on after the forks
    db.kv.delete("k06")
    a.kv.put("k07", None)
    assert_like_full(db, "default", "b")
    assert_like_full(db, "a", "b")
    assert_like_full(db, "default", "a")
    assert_like_full(db, "b", "b", as_of_a=mid_a)  # a past point of an ancestor, seen from b
    assert_like_full(db, "a", "b", as_of_a=mid_a, as_of_b=db.version)
    # a deleted key written back as it was is no change; one rewritten the same, neither
    keys = {c.key for c in db.diff("default", "b")}
    assert "gone" not in keys and "k03" not in keys and "k02" not in keys


def test_nested_documents_by_path(db: rewinddb.Database) -> None:
    doc = {
        "plan": {"steps": [{"n": 1, "done": False}, {"n": 2, "done": False}], "owner": "ann"},
        "scores": [1, 2, 3],
        "flags": {"fast": True, "count": 1, "ratio": 0.0, "none": None},
        "odd key": {"with 'quote'": 1},
        "bits": [1, 0, {"on": 1}],  # equal in Python to the booleans below, not in JSON
    }
    db.json.set("doc", "$", doc)
    db.branches.fork("default", "run")
    run = db.at("run").json
    run.set("doc", "$.plan.steps[1].done", True)
    run.set("doc", "$.plan.steps[2]", {"n": 3, "done": False})
    run.delete("doc", "$.plan.owner")
    run.set("doc", "$.scores", [1, 2])
    run.set("doc", "$.flags.fast", 1)  # the same in Python, not in JSON
    run.set("doc", "$.flags.count", 1.0)
    run.set("doc", "$.flags.ratio", -0.0)
    run.set("doc", "$.flags.none", {"now": "an object"})
    run.set("doc", "$.bits", [True, 0, {"on": True}])
    run.set("doc", "$['odd key']['with \\'quote\\'']", 2)
    db.json.set("other", "$", {"list": [[1, 2], [3]]})
    db.at("run").json.set("other", "$", {"list": [[1, 2, 3], [3]]})
    changes = assert_like_full(db, "default", "run")
    assert [(c.key, c.path, c.kind, c.old, c.new) for c in changes] == [
        ("doc", "$.bits[0]", "changed", 1, True),
        ("doc", "$.bits[2].on", "changed", 1, True),
        ("doc", "$.flags.count", "changed", 1, 1.0),
        ("doc", "$.flags.fast", "changed", True, 1),
        ("doc", "$.flags.none", "changed", None, {"now": "an object"}),
        ("doc", "$.flags.ratio", "changed", 0.0, -0.0),
        ("doc", "$['odd key']['with \\'quote\\'']", "changed", 1, 2),
        ("doc", "$.plan.owner", "removed", "ann", None),
        ("doc", "$.plan.steps[1].done", "changed", False, True),
        ("doc", "$.plan.steps[2]", "added", None, {"n": 3, "done": False}),
        ("doc", "$.scores[2]", "removed", 3, None),
        ("other", "$.list[0][2]", "added", None, 3),
    ]


def test_shared_arrays_and_long_lists(db: rewinddb.Database) -> None:
    messages: list[dict[str, object]] = []
    versions = []
    for i in range(60):  # a list that grows, written whole: stored as shared arrays
        messages.append({"i": i, "text": "x" * 40})
        versions.append(db.json.set("chat", "$", messages))
    db.kv.put("big", list(range(2000)))
    db.branches.fork("default", "run")
    run = db.at("run")
    run.json.set("chat", "$", [*messages, {"i": 60, "text": "new"}])
    run.kv.put("big", [*range(1000), -1, *range(1001, 2000)])
    run.json.set("copy", "$", messages)  # the same list under another key
    stored = db._engine.read_entry(db._engine.branch("default"), db.version, "json", "chat")
    assert stored is not None and stored.refs  # shared arrays, decoded by the engine
    changes = assert_like_full(db, "default", "run")
    assert [(c.key, c.path, c.kind) for c in changes][:2] == [
        ("chat", "$[60]", "added"),
        ("copy", "$", "added"),
    ]
    assert [(c.key, c.path, c.old, c.new) for c in changes if c.key == "big"] == [
        ("big", "$[1000]", 1000, -1)
    ]
    # two versions of one branch: one item added per version
    diff = db.at("default").diff(versions[10], versions[12])
    assert [(c.path, c.kind) for c in diff] == [("$[11]", "added"), ("$[12]", "added")]
    assert_like_full(db, "default", "default", as_of_a=versions[10], as_of_b=versions[40])


def test_keys_on_one_side_bytes_and_state(db: rewinddb.Database) -> None:
    db.kv.put("blob", b"\x00\x01")
    db.kv.put("left", "only on default")
    db.branches.fork("default", "run")
    db.kv.delete("left")
    db.kv.put("default-only", [1])
    run = db.at("run")
    run.kv.put("blob", b"\x00\x02")
    run.kv.put("run-only", {"a": {"b": 1}})
    run.state.set("phase", "review")
    changes = assert_like_full(db, "default", "run")
    assert [(c.primitive, c.key, c.kind) for c in changes] == [
        ("kv", "blob", "changed"),
        ("kv", "default-only", "removed"),
        ("kv", "left", "added"),
        ("kv", "run-only", "added"),
        ("state", "phase", "added"),
    ]


def test_erased_keys_read_as_absent(db: rewinddb.Database) -> None:
    db.kv.put("secret", "s3cr3t")
    db.kv.put("kept", 1)
    db.branches.fork("default", "run")
    db.at("run").kv.put("secret", "changed")
    db.at("run").kv.put("kept", 2)
    db.erase_key("kv", "secret")
    changes = db.diff("default", "run", events=False).changes
    assert changes == full_diff(db, "default", "run")
    assert [(c.key, c.old, c.new) for c in changes] == [("kept", 1, 2)]


def test_many_changed_keys_in_several_reads(db: rewinddb.Database) -> None:
    with db.transaction():
        for i in range(1300):  # more keys than one read takes
            db.kv.put(f"k{i:04d}", {"i": i, "even": i % 2 == 0})
    db.branches.fork("default", "run")
    with db.at("run").transaction():
        for i in range(0, 1300, 1):
            if i % 3 == 0:
                db.at("run").kv.put(f"k{i:04d}", {"i": i, "even": i % 2 == 0})  # the same
            elif i % 3 == 1:
                db.at("run").kv.put(f"k{i:04d}", {"i": -i, "even": i % 2 == 0})
            else:
                db.at("run").kv.delete(f"k{i:04d}")
    changes = assert_like_full(db, "default", "run")
    assert len(changes) == 2 * (1300 // 3) + (1300 % 3 > 1)


class Encoded(Presenter):
    """A presenter whose stored ``{"$enc": text}`` values read as ``text`` upper-cased,
    decoded as a whole (``encoded``), as LangGraph's serde encodings are."""

    name = "encoded-test"

    def claims(self, branch: rewinddb.Branch) -> bool:
        return False

    def encoded(self, value: Any) -> bool:
        return isinstance(value, dict) and set(value) == {"$enc"}

    def display(self, value: Any, memo: dict[Any, Any] | None = None) -> Any:
        if self.encoded(value):
            return {"text": str(value["$enc"]).upper()}
        if isinstance(value, list):
            return [self.display(item, memo) for item in value]
        return value


def test_readable_diffs_decode_only_what_differs(db: rewinddb.Database) -> None:
    presenter = presenters.register(Encoded())
    try:
        db.json.set("thread", "$", {"messages": [{"$enc": "hi"}], "n": 1})
        db.branches.fork("default", "run")
        db.at("run").json.set("thread", "$.messages[1]", {"$enc": "how are you"})
        db.at("run").json.set("thread", "$.n", 2)
        readable = db.diff("default", "run", readable=True).changes
        assert [(c.path, c.kind, c.old, c.new) for c in readable] == [
            ("$.messages[1]", "added", None, {"text": "HOW ARE YOU"}),
            ("$.n", "changed", 1, 2),
        ]
        stored = db.diff("default", "run").changes
        assert [(c.path, c.new) for c in stored] == [
            ("$.messages[1]", {"$enc": "how are you"}),
            ("$.n", 2),
        ]
    finally:
        presenters.unregister(presenter)


# -- what a diff reads ---------------------------------------------------------------


def grown(db_path: Path, keys: int) -> rewinddb.Database:
    """``keys`` keys on default and a branch ``run`` that changed three of them."""
    db = rewinddb.open(db_path)
    db.kv.put_many({f"k{i:05d}": {"i": i} for i in range(keys)})
    db.branches.fork("default", "run")
    db.at("run").kv.put_many({"k00007": "x", "k00100": "y", "new": 1})
    db.kv.put("k00200", "moved on")
    return db


def test_a_diff_reads_the_changed_keys_only(tmp_path: Path) -> None:
    counts = []
    for keys in (300, 3000):
        with grown(tmp_path / str(keys), keys) as db:
            db.close()
        with rewinddb.open(tmp_path / str(keys)) as db:  # nothing remembered
            with entry_reads(db) as calls, statements(db) as seen:
                diff = db.diff("default", "run", events=False)
            assert [(c.key, c.kind) for c in diff] == [
                ("k00007", "changed"),
                ("k00100", "changed"),
                ("k00200", "changed"),
                ("new", "added"),
            ]
            wanted = ["k00007", "k00100", "k00200", "new"]
            assert [(space, keys) for _, space, keys in calls] == [("kv", wanted)] * 2
            counts.append(len([s for s in seen if "rewind_entries" in s]))
    assert counts[0] == counts[1] <= 6  # the same few statements, whatever the state's size


def test_no_change_reads_no_entry(db: rewinddb.Database) -> None:
    db.kv.put_many({f"k{i}": i for i in range(50)})
    db.branches.fork("default", "run")
    with entry_reads(db) as calls:
        assert not db.diff("default", "run")
    assert calls == []


def test_a_damaged_body_among_many_is_corrupt_not_shifted(tmp_path: Path) -> None:
    """Bodies stored whole are parsed together; one edited to hold two values (``1,2``)
    must say the file is damaged, not shift every value after it."""
    path = tmp_path / "db"
    with rewinddb.open(path) as db:
        db.kv.put_many({"a": 1, "b": 2, "c": 3})
        db.branches.fork("default", "run")
        db.at("run").kv.put_many({"a": 10, "b": 20, "c": 30})
    raw = sqlite3.connect(path / "rewind.sqlite3")
    with raw:
        raw.execute(
            "UPDATE rewind_entries SET body = CAST('1,2' AS BLOB) "
            "WHERE key = 'a' AND branch_id != 1"
        )
    raw.close()
    with rewinddb.open(path) as db, pytest.raises(rewinddb.CorruptDatabaseError) as raised:
        db.diff("default", "run")
    assert raised.value.code == "corrupt.entries"


@pytest.mark.parametrize(
    "bodies",
    [(b"[1", b"2]", b"3,4"), (b"1],[2", b"3", b"4"), (b"[1", b"2]", b"3")],
)
def test_damaged_bodies_that_rejoin_are_corrupt_not_shifted(
    tmp_path: Path, bodies: tuple[bytes, bytes, bytes]
) -> None:
    """Pieces of values that, joined, read as the right number of values (``[1`` and
    ``2]`` as one list, then ``3,4`` as two) must still say the file is damaged."""
    path = tmp_path / "db"
    with rewinddb.open(path) as db:
        db.branches.fork("default", "run")
        db.at("run").kv.put_many({"a": 1, "b": 2, "c": 3})
    raw = sqlite3.connect(path / "rewind.sqlite3")
    with raw:
        for key, body in zip("abc", bodies, strict=True):
            raw.execute(
                "UPDATE rewind_entries SET body = ? WHERE key = ? AND branch_id != 1", (body, key)
            )
    raw.close()
    with rewinddb.open(path) as db, pytest.raises(rewinddb.CorruptDatabaseError) as raised:
        db.diff("default", "run")
    assert raised.value.code == "corrupt.entries"
