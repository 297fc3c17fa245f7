"""view.blame(), view.key_history(), events.list(search=), db.read() and the demo."""

from __future__ import annotations

import threading

import pytest

import rewinddb
from rewinddb.demo import build_demo


def test_blame_names_the_event_written_in_the_same_version(db: rewinddb.Database) -> None:
    db.kv.put("task", "plan")  # a commit with no event
    with db.transaction():
        db.events.append("tool.call", {"tool": "write"})
        db.json.set("doc", "$", {"a": 1})
    db.state.set("phase", "done", trigger="finished")
    blame = db.blame()
    assert blame["kv"]["task"].event is None
    assert blame["json"]["doc"].event is not None
    assert blame["json"]["doc"].event.event_type == "tool.call"
    assert blame["state"]["phase"].trigger == "finished"
    assert blame["state"]["phase"].event is None
    assert blame["json"]["doc"].to_dict()["event"]["sequence"] == 0


def test_blame_follows_inherited_values_and_as_of(db: rewinddb.Database) -> None:
    db.kv.put("a", 1)
    first = db.events.append("e", {"n": 1})
    db.kv.put("a", 2)
    db.branches.fork("default", "run")
    run = db.at("run")
    run.kv.put("b", 3)
    blame = run.blame()
    assert blame["kv"]["a"].branch == "default"
    assert blame["kv"]["b"].branch == "run"
    past = db.blame(as_of=first.version)
    assert past["kv"]["a"].version == first.version - 1
    db.kv.delete("a")
    assert "a" not in db.blame()["kv"]


def test_blame_bad_input(db: rewinddb.Database) -> None:
    with pytest.raises(rewinddb.RewindError) as info:
        db.blame(as_of=10**6)
    assert info.value.code == "invalid.as_of"
    with pytest.raises(rewinddb.BranchNotFound):
        db.branches.fork("default", "gone")
        db.branches.delete("gone")
        db.at("gone").blame()


def test_key_history_has_structural_diffs(db: rewinddb.Database) -> None:
    db.json.set("doc", "$", {"items": [1]})
    db.json.set("doc", "$.items[1]", 2)
    db.json.delete("doc")
    versions = db.key_history("json", "doc")
    assert [v.entry.deleted for v in versions] == [False, False, True]
    assert [(c.kind, c.path) for c in versions[1].changes] == [("added", "$.items[1]")]
    assert versions[2].changes[0].kind == "removed"
    assert versions[0].to_dict()["changes"][0]["new"] == {"items": [1]}


def test_key_history_reads_forwards_after_a_version(db: rewinddb.Database) -> None:
    for value in range(5):
        db.kv.put("k", value)  # versions 1-5
    db.branches.fork("default", "run")
    for value in range(5, 8):
        db.at("run").kv.put("k", value)  # versions 6-8, the first three inherited
    run = db.at("run")
    ahead = run.key_history("kv", "k", after=3, limit=4)
    assert [v.entry.version for v in ahead] == [4, 5, 6, 7]
    assert [v.entry.branch for v in ahead] == ["default", "default", "run", "run"]
    assert [(c.old, c.new) for c in ahead[0].changes] == [(2, 3)]  # from the one before
    assert [v.entry.version for v in run.key_history("kv", "k", after=5, before=8)] == [6, 7]
    assert [v.entry.version for v in run.key_history("kv", "k", after=0, limit=2)] == [1, 2]
    assert run.key_history("kv", "k", after=8) == []
    for bad in (-1, "3", True):
        with pytest.raises(rewinddb.InvalidInputError) as info:
            run.key_history("kv", "k", after=bad)  # type: ignore[arg-type]
        assert info.value.code == "invalid.after"


def test_key_history_of_state_and_bad_space(db: rewinddb.Database) -> None:
    db.state.set("phase", "a")
    db.state.set("phase", "b")
    changes = [v.changes[0].new for v in db.key_history("state", "phase")]
    assert changes == ["a", "b"]
    with pytest.raises(rewinddb.InvalidInputError) as info:
        db.key_history("nope", "phase")
    assert info.value.code == "invalid.space"
    with pytest.raises(rewinddb.InvalidInputError):
        db.key_history("kv", "")


def test_events_search_matches_type_and_payload_text(db: rewinddb.Database) -> None:
    db.events.append("tool.call", {"query": "Index Fund fees"})
    db.events.append("note", {"text": "100% sure"})
    db.events.append("note", {"text": "under_score"})
    assert [i.event.sequence for i in db.events.list(search="index fund")] == [0]
    assert [i.event.sequence for i in db.events.list(search="tool.")] == [0]
    assert [i.event.sequence for i in db.events.list(search="%")] == [1]  # a literal %
    assert [i.event.sequence for i in db.events.list(search="_")] == [2]
    assert db.events.list(search="nothing like it") == []
    with pytest.raises(rewinddb.InvalidInputError) as info:
        db.events.list(search=3)  # type: ignore[arg-type]
    assert info.value.code == "invalid.search"


def test_events_search_matches_text_inside_json_strings(db: rewinddb.Database) -> None:
    db.events.append("said", {"text": 'she said "hi" \\ then\nleft', "ok": True})
    db.events.append("said", {"text": "ünïcode ✓"})
    found = lambda text: [i.event.sequence for i in db.events.list(search=text)]  # noqa: E731
    assert found('said "hi"') == [0]  # stored as said \"hi\" in the JSON text
    assert found("\\ then") == [0] and found("then\nleft") == [0]
    assert found('"ok":true') == [0]  # the JSON text itself still matches
    assert found("ünïcode ✓") == [1]
    assert found('"hi" \\ now') == []


def test_read_sees_one_history_while_another_connection_writes(
    db: rewinddb.Database, tmp_path_factory: pytest.TempPathFactory
) -> None:
    db.kv.put("n", 0)
    other = rewinddb.open(db.path)
    try:
        with db.read():
            before = db.version
            writer = threading.Thread(target=lambda: other.kv.put("n", 1))
            writer.start()
            writer.join()
            assert db.version == before
            assert db.kv.get("n") == 0
        assert db.kv.get("n") == 1
    finally:
        other.close()


def test_demo_builds_a_history_worth_exploring(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with build_demo(tmp_path / "demo") as db:
        names = db.branches.names()
        assert {"default", "run-1", "run-2", "run-3", "research", "research-retry"} <= set(names)
        retry = db.branches.get("research-retry-2")
        assert retry.parent == "research-retry"  # a fork of a fork
        assert any(c.merged_from for c in db.commits())
        assert db.at("research").events.length() >= 30
        assert db.json.get("portfolio") == {"stocks": 20, "bonds": 80}
    with pytest.raises(rewinddb.RewindError) as info:
        build_demo(tmp_path / "demo")
    assert info.value.code == "demo.exists"


def test_histories_take_the_newest_few(db: rewinddb.Database) -> None:
    """``limit`` reads only the newest versions, across a fork too, and each one's diff is
    still from the version before it."""
    for i in range(4):
        db.kv.put("k", {"n": i})
    db.branches.fork("default", "run")
    run = db.at("run")
    for i in range(4, 6):
        run.kv.put("k", {"n": i})
    everything = run.kv.history("k")
    assert [h.value["n"] for h in everything] == [0, 1, 2, 3, 4, 5]
    assert run.kv.history("k", limit=3) == everything[-3:]
    assert run.kv.history("k", limit=2) == everything[-2:]  # the branch's own only
    assert run.kv.history("k", limit=10) == everything
    assert run.kv.history("k", limit=0) == []
    assert run.kv.history("k", as_of=4, limit=2) == everything[2:4]  # inherited only
    assert run.kv.history("k", as_of=5, limit=2) == everything[3:5]
    versions = run.key_history("kv", "k", limit=3)
    assert [v.entry.value["n"] for v in versions] == [3, 4, 5]
    assert [(c.kind, c.old, c.new) for c in versions[0].changes] == [("changed", 2, 3)]
    assert run.key_history("kv", "k")[-3:] == versions
    run.json.set("doc", "$", {"a": 1})
    run.json.set("doc", "$.a", 2)
    assert [h.value for h in run.json.history("doc", limit=1)] == [{"a": 2}]


def test_key_history_pages_back_with_before(db: rewinddb.Database) -> None:
    """``before`` is a page's cursor: versions older than it, inherited ones included
    (below the fork point, where no ``as_of`` may read)."""
    for i in range(3):
        db.kv.put("k", i)  # versions 1-3
    db.branches.fork("default", "run")
    db.at("run").kv.put("k", 3)  # version 4
    run = db.at("run")
    whole = run.key_history("kv", "k")
    pages, before = [], None
    while True:
        page = run.key_history("kv", "k", limit=2, before=before)
        pages = page + pages
        if len(run.key_history("kv", "k", limit=3, before=before)) <= 2:
            break
        before = page[0].entry.version
    assert pages == whole
    assert [v.entry.version for v in run.key_history("kv", "k", before=3)] == [1, 2]
    assert run.key_history("kv", "k", before=1) == []
    with pytest.raises(rewinddb.InvalidInputError) as info:
        run.key_history("kv", "k", before=-1)
    assert info.value.code == "invalid.before"


def test_history_limits_must_be_counts(db: rewinddb.Database, refused) -> None:  # type: ignore[no-untyped-def]
    db.kv.put("k", 1)
    for limit in (-1, True, "2", 2.0):
        with refused(db, rewinddb.InvalidInputError, "invalid.limit"):
            db.kv.history("k", limit=limit)  # type: ignore[arg-type]
        with refused(db, rewinddb.InvalidInputError, "invalid.limit"):
            db.key_history("kv", "k", limit=limit)  # type: ignore[arg-type]


def test_blame_of_a_value_kept_below_a_prune_cut(db: rewinddb.Database) -> None:
    """A value a prune kept below the branch's cut has no commit any more: blame tells
    it at the cut's time, as key_history does (it raised a bare KeyError)."""
    db.branches.fork("default", "main")
    main = db.at("main")
    main.kv.put("old", 1)  # (its commit goes with the prune)
    for i in range(3):
        main.kv.put("n", i)
    db.prune("main", before=db.version)
    for limit in (None, 10):
        blamed = main.blame(limit=limit)["kv"]
        assert set(blamed) == {"old", "n"}
        assert blamed["old"].timestamp == main.kv.history("old")[-1].timestamp
