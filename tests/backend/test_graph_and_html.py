"""db.graph() (what the front ends draw) and the HTML renderings (escaped)."""

from __future__ import annotations

import rewinddb
from rewinddb import rendering

HOSTILE = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>"


def test_graph_lanes_points_and_edges(db: rewinddb.Database) -> None:
    db.kv.put("task", "t")
    db.branches.fork("default", "run")
    run = db.at("run")
    run.events.append("tool.call", {"n": 1})
    run.kv.put("score", 1)
    db.branches.fork("run", "deeper")
    db.branches.merge("run", "default")
    graph = db.graph()
    assert [(b.name, b.parent, b.lane) for b in graph.branches] == [
        ("default", None, 0),
        ("run", "default", 1),
        ("deeper", "run", 2),
    ]
    assert [(p.branch, p.version, p.kind, p.label, p.sequence) for p in graph.points] == [
        ("default", 1, "commit", "write", None),
        ("default", 4, "merge", "merge from run", None),
        ("run", 2, "event", "tool.call", 0),
        ("run", 3, "commit", "write", None),
    ]
    assert graph.points[2].summary == '{"n":1}'
    assert [
        (e.kind, e.from_branch, e.from_version, e.to_branch, e.to_version) for e in graph.edges
    ] == [
        ("fork", "default", 1, "run", 1),
        ("fork", "run", 3, "deeper", 3),
        ("merge", "run", 3, "default", 4),
    ]
    assert graph.lane("deeper") == 2
    assert graph.to_dict()["points"][0]["branch"] == "default"


def test_graph_thins_long_branches_and_hides_deleted_ones(db: rewinddb.Database) -> None:
    for n in range(100):
        db.events.append("step", {"n": n})
    db.branches.fork("default", "gone")
    db.branches.delete("gone")
    thin = db.graph(max_points_per_branch=10)
    assert 9 <= len(thin.points) <= 11
    assert thin.points[0].sequence == 0 and thin.points[-1].sequence == 99
    assert [b.name for b in thin.branches] == ["default"]
    assert [b.name for b in db.graph(include_deleted=True).branches] == ["default", "gone"]


def test_html_escapes_everything(db: rewinddb.Database) -> None:
    db.branches.fork("default", HOSTILE)
    hostile = db.at(HOSTILE)
    hostile.kv.put(HOSTILE, HOSTILE)
    hostile.json.set("doc", "$", {HOSTILE: [HOSTILE]})
    event = hostile.events.append(HOSTILE, {HOSTILE: HOSTILE})
    pages = [
        db._repr_html_(),
        hostile._repr_html_(),
        db.diff("default", HOSTILE)._repr_html_(),
        rendering.event_html(event),
    ]
    for page in pages:
        assert "<script" not in page and "<img" not in page
        assert "&lt;script&gt;" in page


def test_long_values_are_shortened(db: rewinddb.Database) -> None:
    db.kv.put("big", "x" * 5000)
    page = db._repr_html_() + db.at("default")._repr_html_()
    assert "5,002 characters in all" in page
    assert "x" * 600 not in page


def test_repr_html_of_closed_or_deleted_things(db_path) -> None:  # type: ignore[no-untyped-def]
    db = rewinddb.open(db_path)
    db.branches.fork("default", "gone")
    view = db.at("gone")
    db.branches.delete("gone")
    assert "not_found.engine.branch" in view._repr_html_()
    db.close()
    assert "(closed)" in db._repr_html_()


def test_a_merge_edge_starts_at_the_sources_last_point(db: rewinddb.Database) -> None:
    db.branches.fork("default", "run")
    db.at("run").kv.put("k", 1)  # version 1, run's last write
    db.kv.put("other", 1)  # version 2: the clock moves on
    db.branches.merge("run", "default")  # merges run as of version 2
    merge = next(e for e in db.graph().edges if e.kind == "merge")
    assert (merge.from_branch, merge.from_version, merge.to_version) == ("run", 1, 3)
