"""The one diff engine: structured changes between any two points."""

from __future__ import annotations

import rewinddb
from rewinddb import Change


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
