"""Partial exports and the merges they cut: a merge commit whose source branch the export
leaves out stays a merge in the copy (its source a placeholder, a deleted branch with none
of its history), so every commit still writes an entry or an event of its branch or is a
merge, which the store relies on to find a branch's newest commit (``_clock.previous_hash``)
and retention on to walk its commits. Older exports dropped those sources; their files
still import, and import refuses any other commit that writes nothing."""

from __future__ import annotations

import io
import random
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

import rewinddb
from rewinddb import _commit_hash
from rewinddb.cli import main
from rewinddb.erasure import purge_deleted, purged
from rewinddb.models import from_micros
from rewinddb.web import create_app

from .conftest import BACKENDS, Refused

#: How the copy names a stand-in or placeholder: as a purged branch (``erasure.purged``).
STAND_IN = "~purged/"


@pytest.fixture(params=BACKENDS)
def targets(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """New databases on one backend: directories, or PostgreSQL schemas."""
    if request.param == "sqlite":
        made = iter(range(100))
        yield lambda: tmp_path / f"db{next(made)}"
    else:
        server = request.getfixturevalue("postgres")
        yield server.new_schema


def _export(db: rewinddb.Database, **kwargs: Any) -> bytes:
    out = io.BytesIO()
    db.export_jsonl(out, **kwargs)
    return out.getvalue()


def _records(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in data.splitlines()]


def _file(records: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def _hashes(db: rewinddb.Database) -> dict[int, str]:
    rows = db._engine.conn.fetchall("SELECT version, hash FROM rewind_commits")
    return {int(version): str(digest) for version, digest in rows}


def _skip_merge(db: rewinddb.Database) -> int:
    """'t' merges 'side', which holds only an event, with events='skip': a merge commit
    that writes nothing. Its version."""
    db.kv.put("seed", 0)
    db.branches.fork("default", "t")
    db.branches.fork("default", "side")
    db.at("side").events.append("note", {"n": 1})
    db.at("t").kv.put("a", 1)
    return db.branches.merge("side", "t", events="skip").version


def _as_an_older_export(data: bytes) -> bytes:
    """The file an export before merge sources were kept wrote: no stand-in branch
    records (nor their links), the merges from them with merge_branch and merge_version
    null, no merge_sources in the header (checked against that exporter's code when this
    was written)."""
    records = _records(data)
    stand_ins = {r["id"] for r in records if r["type"] == "branch" and r.get("left_out")}
    older = []
    for record in records:
        if record["type"] == "header":
            record.pop("merge_sources", None)
        elif record.get("id" if record["type"] == "branch" else "branch") in stand_ins:
            continue  # a stand-in, or a link
        elif record["type"] == "commit" and record["merge_branch"] in stand_ins:
            record["merge_branch"] = record["merge_version"] = None
        elif record["type"] == "end":
            record["counts"]["branch"] -= len(stand_ins)
            record["counts"]["commit"] = sum(1 for r in older if r["type"] == "commit")
        older.append(record)
    return _file(older)


def _an_older_copy(target: Any) -> tuple[rewinddb.Database, int]:
    """What an import by rewinddb before merge sources were kept left of a partial
    export: the merge from the left-out branch a commit with no source and no rows (the
    branch that would have made one), hashed as such; no placeholder. (Checked against
    that importer's database, made with its code, when this was written.) The database,
    open, and the version of that commit."""
    with rewinddb.open(target()) as src:
        merged = _skip_merge(src)
        older = _as_an_older_export(_export(src, branches=["t"]))
    db = rewinddb.open(target())
    db.import_jsonl(io.BytesIO(older))
    conn = db._engine.conn
    with conn.write():
        placeholders = [
            row[0]
            for row in conn.fetchall(
                "SELECT merge_branch_id FROM rewind_commits WHERE merge_branch_id IN "
                "(SELECT id FROM rewind_branches WHERE parent_id IS NULL AND deleted_at "
                "IS NOT NULL)"
            )
        ]
        conn.execute(
            "UPDATE rewind_commits SET merge_branch_id = NULL, merge_version = NULL "
            "WHERE version = ?",
            (merged,),
        )
        for placeholder in placeholders:
            conn.execute("DELETE FROM rewind_branches WHERE id = ?", (placeholder,))
        _commit_hash.reseal(conn)
    db._engine.forget_cached()
    return db, merged


def _rowless_commits(data: bytes) -> list[int]:
    """The commits of an export that write no entry and no event and are not merges."""
    records = _records(data)
    written = {r["version"] for r in records if r["type"] in ("entry", "event")}
    return [
        r["version"]
        for r in records
        if r["type"] == "commit" and r["merge_branch"] is None and r["version"] not in written
    ]


def _answers(db: rewinddb.Database) -> dict[str, Any]:
    return {
        "branches": [b.to_dict() for b in db.branches.list()],
        "state": {
            b.name: (db.at(b.name).snapshot(), [i.event for i in db.at(b.name).events.list()])
            for b in db.branches.list()
        },
        "commits": db.commits(),
    }


def test_a_merge_from_a_left_out_branch_stays_a_merge_with_the_same_hash(
    targets: Callable[[], Any],
) -> None:
    with rewinddb.open(targets()) as src:
        merged = _skip_merge(src)
        data = _export(src, branches=["t"])
        hashes = _hashes(src)
    with rewinddb.open(targets()) as copy:
        copy.import_jsonl(io.BytesIO(data))
        merge = next(c for c in copy.commits() if c.version == merged)
        assert merge.merged_from is not None and merge.merged_from.startswith(STAND_IN)
        assert merge.merged_version == merged - 1
        # Kept ids keep the original's hashes: every imported commit's is the source's.
        assert _hashes(copy) == {v: h for v, h in hashes.items() if v in _hashes(copy)}
        assert merged in _hashes(copy)
        assert copy.verify().ok
        copy.at("t").kv.put("a", 2)  # chains on the merge, t's newest commit
        copy.at("t").events.append("later", {})
        assert copy.verify().ok, copy.verify().problems


def test_the_stand_in_is_no_live_branch_anywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with rewinddb.open(tmp_path / "a") as src:
        merged = _skip_merge(src)
        data = _export(src, branches=["t"])
    with rewinddb.open(tmp_path / "b") as copy:
        counts = copy.import_jsonl(io.BytesIO(data))
        assert counts.branches == ["default", "t"]
        assert copy.branches.names() == ["default", "t"]
        assert [b.name for b in copy.branches.list()] == ["default", "t"]
        assert [b.name for b in copy.graph().branches] == ["default", "t"]
        shown = copy.graph(include_deleted=True)  # asked for: the merge's source is there
        stand_in = next(b.name for b in shown.branches if b.name.startswith(STAND_IN))
        assert any(e.kind == "merge" and e.from_branch == stand_in for e in shown.edges)
        assert next(c for c in copy.commits() if c.version == merged).merged_from == stand_in
    assert main(["branches", str(tmp_path / "b")]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]] == [
        "default",
        "t",
    ]
    assert main(["branches", str(tmp_path / "b"), "--json"]) == 0
    assert [b["name"] for b in orjson.loads(capsys.readouterr().out)] == ["default", "t"]
    with TestClient(create_app(tmp_path / "b"), base_url="http://localhost") as client:
        for url in ("/", "/.json", "/api/branches", "/api/overview", "/fragments/overview"):
            page = client.get(url)
            assert page.status_code == 200, url
            assert "not exported" not in page.text, url
        # t's own history says where its merge came from, and the step opens.
        assert f"merge from {stand_in}" in client.get("/branches/t").text
        assert client.get(f"/branches/t/steps/{merged}").status_code == 200


def _both_merged_side(db: rewinddb.Database) -> None:
    """'t' and 'u' both merge 'side', which set k to 1; 't' then sets k back to 0, 'u'
    writes z. Merging 'u' into 't' bases on 'side' as of those merges."""
    db.kv.put("k", 0)
    for name in ("t", "u", "side"):
        db.branches.fork("default", name)
    db.at("side").kv.put("k", 1)
    db.at("side").events.append("note", {})
    db.branches.merge("side", "t", events="skip")
    db.branches.merge("side", "u", events="append")
    db.at("t").kv.put("k", 0)
    db.at("u").kv.put("z", 2)


def test_a_merge_based_on_a_left_out_branch_is_refused_as_after_a_purge(
    targets: Callable[[], Any], refused: Refused
) -> None:
    """The stand-in has none of the left-out branch's rows: a merge whose base is on it is
    refused (history_unavailable), as in the original once that branch is purged. It
    read the stand-in's fork point as the base (k 0, not 1) and put u's k=1 over t's 0
    without a word."""
    with rewinddb.open(targets()) as src:
        _both_merged_side(src)
        data = _export(src, branches=["t", "u"])
        hashes = _hashes(src)
        receipt = src.branches.merge("u", "t")
        assert (receipt.base, src.at("t").kv.get("k")) == (("side", receipt.base[1]), 0)
    with rewinddb.open(targets()) as purged:  # the original, once 'side' is purged
        _both_merged_side(purged)
        purged.branches.delete("side", purge=True)
        with refused(purged, rewinddb.HistoryUnavailableError, "history_unavailable"):
            purged.branches.merge("u", "t")
    with rewinddb.open(targets()) as copy:
        copy.import_jsonl(io.BytesIO(data))
        assert _hashes(copy) == {v: h for v, h in hashes.items() if v in _hashes(copy)}
        merges = {c.merged_from for c in copy.commits() if c.merged_from is not None}
        assert len(merges) == 1 and merges.pop().startswith(STAND_IN)
        for source, target in (("u", "t"), ("t", "u")):
            with refused(copy, rewinddb.HistoryUnavailableError, "history_unavailable"):
                copy.branches.merge(source, target)
        assert copy.verify().ok
        assert copy.at("t").kv.get("k") == 0


def test_after_gc_a_merge_based_on_the_stand_in_is_refused_as_in_the_original(
    targets: Callable[[], Any], refused: Refused
) -> None:
    """gc purges the stand-in like any deleted branch; a merge whose base is on it then
    refuses, as the original does once the left-out branch is deleted and purged."""
    with rewinddb.open(targets()) as src:
        for name in ("t", "u", "side"):
            src.branches.fork("default", name)
        src.at("side").kv.put("k", 1)
        src.branches.merge("side", "t")
        src.branches.merge("side", "u")
        src.at("u").kv.put("z", 2)
        data = _export(src, branches=["t", "u"])
        src.branches.delete("side")
        src.gc()
        with refused(src, rewinddb.HistoryUnavailableError, "history_unavailable"):
            src.branches.merge("u", "t")
    with rewinddb.open(targets()) as copy:
        copy.import_jsonl(io.BytesIO(data))
        copy.gc()
        with refused(copy, rewinddb.HistoryUnavailableError, "history_unavailable"):
            copy.branches.merge("u", "t")
        assert copy.verify().ok


def test_gc_prune_and_purge_keep_the_copy_verified(targets: Callable[[], Any]) -> None:
    with rewinddb.open(targets()) as src:
        _skip_merge(src)
        src.branches.fork("t", "child")
        src.at("child").kv.put("c", 1)
        data = _export(src, branches=["t", "child"])
    for older in (False, True):
        with rewinddb.open(targets()) as copy:
            copy.import_jsonl(io.BytesIO(_as_an_older_export(data) if older else data))
            copy.at("t").kv.put("a", 2)
            copy.at("t").kv.put("a", 3)
            assert copy.verify().ok
            copy.gc()
            assert copy.verify().ok
            copy.prune("t", keep_last=1)
            assert copy.verify().ok
            copy.at("t").kv.put("a", 4)
            copy.branches.delete("child", purge=True)
            assert copy.verify().ok
            copy.branches.delete("t", purge=True)
            copy.gc()
            assert copy.verify().ok
            assert copy.branches.names() == ["default"]


def test_an_older_partial_export_imports_its_merges_as_merges(targets: Callable[[], Any]) -> None:
    """An older export's merge with merge_branch null that wrote nothing can only be a
    merge whose source it left out: it gets a placeholder of its own (the file does not
    say which branch it was), merged at the version before it, as merges record."""
    with rewinddb.open(targets()) as src:
        merged = _skip_merge(src)
        older = _as_an_older_export(_export(src, branches=["t"]))
    with rewinddb.open(targets()) as copy:
        copy.import_jsonl(io.BytesIO(older))
        merge = next(c for c in copy.commits() if c.version == merged)
        assert merge.merged_from is not None and merge.merged_from.startswith(STAND_IN)
        assert merge.merged_version == merged - 1
        assert copy.branches.names() == ["default", "t"]
        copy.at("t").kv.put("a", 2)
        assert copy.verify().ok, copy.verify().problems
        answers, whole, part = _answers(copy), _export(copy), _export(copy, branches=["t"])
    for again in (whole, part):
        with rewinddb.open(targets()) as copy:
            copy.import_jsonl(io.BytesIO(again))
            assert copy.verify().ok
            copy.at("t").kv.put("a", 3)
            assert copy.verify().ok
    with rewinddb.open(targets()) as copy:
        copy.import_jsonl(io.BytesIO(whole))
        assert _answers(copy) == answers


def _null_the_merge(data: bytes) -> bytes:
    records = _records(data)
    for record in records:
        if record["type"] == "commit" and record["merge_branch"] is not None:
            record["merge_branch"] = record["merge_version"] = None
    return _file(records)


def _drop_an_entry(data: bytes) -> bytes:
    """Without the one entry of the commit of 'a' on 't' (the end record's count too)."""
    records = _records(data)
    kept = [r for r in records if not (r["type"] == "entry" and r["key"] == "a")]
    kept[-1]["counts"]["entry"] -= 1
    return _file(kept)


@pytest.mark.parametrize("edit", [_null_the_merge, _drop_an_entry], ids=["merge", "entry"])
def test_import_refuses_a_commit_that_writes_nothing_and_is_not_a_merge(
    targets: Callable[[], Any], edit: Callable[[bytes], bytes]
) -> None:
    with rewinddb.open(targets()) as src:
        _skip_merge(src)
        data = edit(_export(src, branches=["t"]))
    with rewinddb.open(targets()) as copy:
        with pytest.raises(rewinddb.ImportFormatError) as info:
            copy.import_jsonl(io.BytesIO(data))
        assert info.value.code == "invalid.import"
        assert "writes no entry and no event and is not a merge" in info.value.message
        line = data.splitlines()[info.value.details["line"] - 1]
        assert orjson.loads(line)["type"] == "commit"
        assert copy.version == 0 and copy.branches.names() == ["default"]


def test_a_whole_export_round_trips_identically(targets: Callable[[], Any]) -> None:
    """A whole export names every merge's source itself: no stand-in, and the export of
    its copy is the same file (but for the time it was made)."""
    with rewinddb.open(targets()) as src:
        _skip_merge(src)
        src.branches.delete("side")
        data = _export(src)
        hashes, answers = _hashes(src), _answers(src)
    assert STAND_IN.encode() not in data
    with rewinddb.open(targets()) as copy:
        copy.import_jsonl(io.BytesIO(data))
        again = _export(copy)
        assert _hashes(copy) == hashes and _answers(copy) == answers
    first, second = _records(data), _records(again)
    for records in (first, second):
        del records[0]["exported_at"]
    assert first == second


def _reads(db: rewinddb.Database) -> dict[tuple[str, int], Any]:
    """Every live branch's state and events at every version (or the error's code)."""
    found: dict[tuple[str, int], Any] = {}
    for name in db.branches.names():
        view = db.at(name)
        for at in range(db.version + 1):
            try:
                found[(name, at)] = (view.snapshot(as_of=at), view.events.list(as_of=at))
            except rewinddb.RewindError as error:
                found[(name, at)] = error.code
    return found


def test_a_copy_an_older_import_made_exports_and_imports_again(
    targets: Callable[[], Any],
) -> None:
    """Its commit that wrote nothing and is no merge goes out as the importer repairs an
    older file: a merge of a placeholder of its own. So the header's "kept" is true, and
    the file imports (it was refused as "edited or incomplete"); the copy verifies, reads
    as the older copy does, and takes writes."""
    old, merged = _an_older_copy(targets)
    with old:
        reads = _reads(old)
        files = [_export(old), _export(old, branches=["t"])]
        old.at("t").kv.put("a", 2)  # its chain breaks here (see the verify test)
        files.append(_export(old))
        after = _reads(old)
    for data, expected in zip(files, (reads, reads, after), strict=True):
        assert _records(data)[0]["merge_sources"] == "kept"
        assert _rowless_commits(data) == []
        record = next(r for r in _records(data) if r.get("version") == merged)
        placeholder = next(r for r in _records(data) if r.get("id") == record["merge_branch"])
        assert placeholder["type"] == "branch" and placeholder["deleted_at"] is not None
        assert record["merge_version"] == merged - 1
        with rewinddb.open(targets()) as copy:
            copy.import_jsonl(io.BytesIO(data))
            assert copy.verify().ok, copy.verify().problems
            assert _reads(copy) == expected
            assert copy.branches.names() == ["default", "t"]
            copy.at("t").kv.put("a", 3)
            copy.at("t").events.append("later", {})
            assert copy.verify().ok, copy.verify().problems


def test_verify_names_a_commit_that_writes_nothing_as_the_cause(
    targets: Callable[[], Any],
) -> None:
    """In such a copy the next write on the branch chains past that commit (the store
    finds a branch's newest commit through its rows): verify() names the commit as the
    cause, before and after that write, and how to repair it."""
    old, merged = _an_older_copy(targets)
    with old:
        found = old.verify()
        assert not found.ok
        assert [(p.branch, p.version) for p in found.problems] == [("t", merged)]
        assert "writes no entry and no event and is not a merge" in found.problems[0].what
        assert "export the database" in found.problems[0].what
        written = old.at("t").kv.put("a", 2)
        found = old.verify()
        assert [(p.branch, p.version) for p in found.problems] == [
            ("t", merged),
            ("t", written),
        ]
        assert f"past commit {merged}, which writes nothing" in found.problems[1].what
        assert next(c for c in found.branches if c.branch == "t").first_bad == found.problems[0]
        data = _export(old)
    with rewinddb.open(targets()) as copy:  # the repair the message names
        copy.import_jsonl(io.BytesIO(data))
        assert copy.verify().ok, copy.verify().problems
        copy.at("t").kv.put("a", 3)
        assert copy.verify().ok, copy.verify().problems


def _as_first_kept_export(data: bytes) -> bytes:
    """The file the first exporter that kept merge sources wrote (for histories without
    links): its stand-ins named ``(not exported: branch N)``, an older name for
    placeholders, made and deleted at 0, not marked "left_out"."""
    records = _records(data)
    for record in records:
        if record["type"] == "branch" and record.pop("left_out", False):
            record["name"] = f"(not exported: branch {record['id']})"
            record["created_at"] = record["deleted_at"] = 0
    return _file(records)


@pytest.mark.parametrize("older", [False, True], ids=["now", "first-kept"])
def test_a_stand_in_is_a_purged_branch_whatever_its_id_or_older_name(
    targets: Callable[[], Any], refused: Refused, older: bool
) -> None:
    """Imported where its id is taken, or from a file that names it as the first
    exporter that kept merge sources did, a stand-in is still a purged branch (named for
    its id here), so the merge based on it is still refused."""
    with rewinddb.open(targets()) as src:
        _both_merged_side(src)
        data = _export(src, branches=["t", "u"])
    if older:
        data = _as_first_kept_export(data)
    with rewinddb.open(targets()) as copy:
        copy.branches.fork("default", "taken")  # ids 2 on are taken: the file's move
        copy.import_jsonl(io.BytesIO(data))
        stand_in = copy._engine.branch_by_id(
            copy._engine.conn.fetchone(
                "SELECT merge_branch_id FROM rewind_commits WHERE merge_branch_id IS NOT NULL"
            )[0]
        )
        assert stand_in.name == f"{STAND_IN}{stand_in.id}" and purged(stand_in)
        assert stand_in.id not in {r.get("id") for r in _records(data)}  # it moved
        with refused(copy, rewinddb.HistoryUnavailableError, "history_unavailable"):
            copy.branches.merge("u", "t")
        assert copy.verify().ok


def test_an_event_carried_through_copies_stays_one_event(targets: Callable[[], Any]) -> None:
    """Copies of an event from a left-out branch keep it as their first home: merging one
    exported branch that holds a copy into another that holds one carries nothing (the
    merge's base is on an exported branch here: one on the stand-in is refused)."""
    with rewinddb.open(targets()) as src:
        src.branches.fork("default", "x")
        src.branches.fork("default", "t")
        src.at("x").events.append("e", {})
        src.branches.merge("x", "t", events="append")
        src.branches.fork("default", "y")
        src.branches.merge("t", "y", events="append")
        src.at("y").kv.put("k", 1)
        data = _export(src, branches=["t", "y"])
    with rewinddb.open(targets()) as copy:
        copy.import_jsonl(io.BytesIO(data))
        receipt = copy.branches.merge("y", "t", events="append")
        assert receipt.events_carried == 0 and receipt.base[0] == "t"
        assert [i.event.event_type for i in copy.at("t").events.list()] == ["e"]
        assert copy.at("t").kv.get("k") == 1
        assert "x" not in copy.branches
        assert copy.verify().ok


# -- the left-out branches' own merges ------------------------------------------------


def _x_merged_a_then_t_merged_x(db: rewinddb.Database, *, t_resets: bool) -> None:
    """Left-out 'x' merges exported 'a' (k 1), exported 't' merges 'x'. Then either 'a'
    moves on (k 2), or 't' sets k back to 0 and 'a' writes another key."""
    db.kv.put("k", 0)
    for name in ("a", "x", "t"):
        db.branches.fork("default", name)
    db.at("a").kv.put("k", 1)
    db.branches.merge("a", "x")
    db.branches.merge("x", "t")
    if t_resets:
        db.at("t").kv.put("k", 0)
        db.at("a").kv.put("other", 1)
    else:
        db.at("a").kv.put("k", 2)


@pytest.mark.parametrize("t_resets", [False, True], ids=["a-moves-on", "t-resets"])
def test_a_left_out_branchs_merges_stay_as_links(
    targets: Callable[[], Any], t_resets: bool
) -> None:
    """'t' holds 'a' as of x's merge of it (through 'x'), so merging 'a' into 't' bases
    there: the copy keeps x's merge commit as a link (version, time, merge parent; no
    rows, trigger or message) and merges as the original does. Without it the copy's 't'
    held only 'default': a conflict (k changed on both sides since), or, where 't' had
    set k back to 0, a's k=1 put over it without a word."""
    with rewinddb.open(targets()) as src:
        _x_merged_a_then_t_merged_x(src, t_resets=t_resets)
        data = _export(src, branches=["t", "a"])
        receipt = src.branches.merge("a", "t")
        expected = (receipt.base, src.at("t").snapshot())
    links = [r for r in _records(data) if r["type"] == "commit" and r["branch"] == 3]
    assert [(r["merge_branch"], r["trigger"], r["message"]) for r in links] == [(2, None, None)]
    with rewinddb.open(targets()) as copy:
        copy.import_jsonl(io.BytesIO(data))
        assert copy.verify().ok
        receipt = copy.branches.merge("a", "t")
        assert (receipt.base, copy.at("t").snapshot()) == expected
        assert copy.at("t").kv.get("k") == (0 if t_resets else 2)
        copy.at("t").kv.put("w", 1)
        copy.gc()  # keeps the link: a remaining branch's history walks it
        assert copy.verify().ok
        assert [r for r in _records(_export(copy)) if r.get("branch") == 3] == links


def test_links_through_a_left_out_lineage(targets: Callable[[], Any]) -> None:
    """Left-out 'y' forks from left-out 'x' after x merged exported 'a'; 't' merges
    'y': 't' holds 'a' through y's lineage, so both stand in (y forked from x, as in the
    original) and x keeps its merge as a link."""
    with rewinddb.open(targets()) as src:
        src.kv.put("k", 0)
        for name in ("a", "x", "t"):
            src.branches.fork("default", name)
        src.at("a").kv.put("k", 1)
        src.branches.merge("a", "x")
        src.branches.fork("x", "y")
        src.at("y").kv.put("y", 1)
        src.branches.merge("y", "t")
        src.at("t").kv.put("k", 0)
        src.at("a").kv.put("other", 1)
        data = _export(src, branches=["t", "a"])
        x, y = (src._engine.branch_by_id(i) for i in (3, 5))
        src.branches.merge("a", "t")
        expected = src.at("t").snapshot()
    stand_ins = {r["id"]: r for r in _records(data) if r.get("left_out")}
    assert {i: (r["parent"], r["forked_at"]) for i, r in stand_ins.items()} == {
        x.id: (x.parent_id, x.forked_at),
        y.id: (y.parent_id, y.forked_at),
    }
    with rewinddb.open(targets()) as copy:
        copy.import_jsonl(io.BytesIO(data))
        copy.branches.merge("a", "t")
        assert copy.at("t").snapshot() == expected
        assert copy.verify().ok


def _history(pick: random.Random, db: rewinddb.Database, steps: int) -> None:
    """Random writes, forks, merges, deletes, purges and prunes."""
    made = 0
    for _ in range(steps):
        names = db.branches.names()
        first, second = pick.choice(names), pick.choice(names)
        roll = pick.random() if len(names) > 3 else 0.3
        try:
            if roll < 0.25:
                db.at(first).kv.put(pick.choice("ab"), pick.randint(0, 3))
            elif roll < 0.3:
                db.at(first).events.append("e", {"n": pick.randint(0, 3)})
            elif roll < 0.42:
                made += 1
                at = pick.choice([None, pick.randint(0, db.version)])
                db.branches.fork(first, f"b{made}", at=at)
            elif roll < 0.8 and first != second:
                db.branches.merge(
                    first,
                    second,
                    strategy=pick.choice(["fail", "source", "target"]),
                    events=pick.choice(["skip", "append"]),
                )
            elif roll < 0.9 and first != "default":
                db.branches.delete(first, purge=pick.random() < 0.3)
            elif roll < 0.95 and first != "default":
                db.prune(first, keep_last=pick.randint(1, 3))
        except rewinddb.RewindError:
            pass


def _with_left_out_purged(data: bytes, exported: set[str], target: Any) -> rewinddb.Database:
    """A copy of the whole history in ``data`` with every branch not in the lineage of
    ``exported`` deleted and purged: what the copy of a partial export must act as."""
    db = rewinddb.open(target)
    db.import_jsonl(io.BytesIO(data))
    engine = db._engine
    keep = {i for name in exported for i, _ in engine.lineage(engine.branch(name), 0)}
    rows = engine.conn.fetchall("SELECT id, name, deleted_at FROM rewind_branches")
    for _, name, deleted_at in rows:
        if deleted_at is None and engine.branch(name).id not in keep:
            db.branches.delete(name)
    # (a purge also purges the deleted ancestors of what it purges; an export keeps the
    # deleted ancestors of what it exports whole: they stay as they are here)
    kept_deleted = [(i, deleted_at) for i, _, deleted_at in rows if i in keep and deleted_at]
    with engine.conn.write():
        for branch_id, _ in kept_deleted:
            engine.conn.execute(
                "UPDATE rewind_branches SET deleted_at = NULL WHERE id = ?", (branch_id,)
            )
        purge_deleted(engine, [i for i, _, _ in rows if i not in keep])
        for branch_id, deleted_at in kept_deleted:
            engine.conn.execute(
                "UPDATE rewind_branches SET deleted_at = ? WHERE id = ?", (deleted_at, branch_id)
            )
    engine.forget_cached()
    return db


def _merge(db: rewinddb.Database, source: str, target: str, how: dict[str, str]) -> Any:
    try:
        receipt = db.branches.merge(source, target, **how)  # type: ignore[arg-type]
    except rewinddb.RewindError as error:
        return error.code
    ids = dict(db._engine.conn.fetchall("SELECT name, id FROM rewind_branches"))
    return (
        receipt.version,
        (ids[receipt.base[0]], receipt.base[1]),  # (a deleted ancestor's name may differ)
        sorted((c.key, repr(c.new)) for c in receipt.applied),
        sorted(str(c) for c in receipt.conflicts),
        receipt.events_carried,
        receipt.events_not_carried,
    )


def _shadow(seed: int, tmp: Path) -> int:
    """A partial export's copy merges as its original with the left-out branches purged
    does (the same receipts, or the same refusal), merge after merge, and where both go
    ahead, as the original itself did (its first merge). Returns how many merges went
    ahead on the copy."""
    pick = random.Random(seed)
    paths = iter(tmp / f"{seed}-{n}" for n in range(1000))
    with rewinddb.open(next(paths)) as src:
        _history(pick, src, 45)
        assert src.verify().ok, (seed, "the source does not verify", src.verify())
        whole = _export(src)
        live = [n for n in src.branches.names() if n != "default"]
        exported = pick.sample(live, min(len(live), pick.randint(1, 2)))
        data = _export(src, branches=exported)
        names = _exported_names(src, exported)
        pairs = [(a, b) for a in names for b in names if a != b]
        pick.shuffle(pairs)
        hows = [
            {"strategy": pick.choice(["fail", "source", "target"]), "events": e}
            for e in pick.choices(["skip", "append"], k=len(pairs))
        ]
        first = [
            (_merge(src, a, b, how), a, b) for (a, b), how in zip(pairs[:1], hows[:1], strict=True)
        ]
    went = 0
    with (
        rewinddb.open(next(paths)) as copy,
        _with_left_out_purged(whole, set(exported), next(paths)) as purged_original,
    ):
        copy.import_jsonl(io.BytesIO(data))
        assert copy.verify().ok, (seed, copy.verify())
        for n, ((a, b), how) in enumerate(zip(pairs, hows, strict=True)):
            got, want = _merge(copy, a, b, how), _merge(purged_original, a, b, how)
            assert got == want, (seed, a, b, how, got, want)
            if n == 0 and "history_unavailable" not in (got, first[0][0]):
                # (the original refuses a base below a horizon also where the branch's
                # fork point is at or after it, so it reads none of the cut rows there:
                # the copy and the purged original, with no horizon there, go ahead)
                assert got == first[0][0], (seed, a, b, got, first)
            went += not isinstance(got, str)
            assert copy.at(b).snapshot() == purged_original.at(b).snapshot()
        assert copy.verify().ok, (seed, copy.verify())
    return went


def _exported_names(db: rewinddb.Database, exported: list[str]) -> list[str]:
    """The live branches a partial export of ``exported`` holds (with their ancestors)."""
    engine = db._engine
    ids = {i for name in exported for i, _ in engine.lineage(engine.branch(name), 0)}
    return [name for name in db.branches.names() if engine.branch(name).id in ids]


@pytest.mark.parametrize("seeds", [range(start, start + 15) for start in range(0, 45, 15)])
def test_a_partial_copy_merges_as_its_original_with_the_left_out_branches_purged(
    tmp_path: Path, seeds: range
) -> None:
    went = sum(_shadow(seed, tmp_path) for seed in seeds)
    assert went > len(seeds)  # (the merges are not all refused)


def test_a_horizon_above_a_fork_that_reads_none_of_its_branch_imports(
    targets: Callable[[], Any],
) -> None:
    """A fork at or below its parent's own fork point reads none of the parent's rows
    (``Engine.row_lineage``), so retention may cut the parent past it; import refused
    such a horizon ('retention keeps what forks read'). A stand-in keeps its real parent
    so, too."""
    with rewinddb.open(targets()) as src:
        src.kv.put("k", 0)
        src.branches.fork("default", "p")
        for value in range(3):
            src.at("p").kv.put("k", value + 1)
        src.prune("p", keep_last=1)
        data = _export(src)
        expected = _reads(src)
    records = _records(data)
    p = next(r for r in records if r.get("name") == "p")
    fork = {**p, "id": 99, "name": "c", "parent": p["id"], "forked_at": p["forked_at"]}
    records.insert(records.index(p) + 1, fork)
    records[-1]["counts"]["branch"] += 1
    with rewinddb.open(targets()) as copy:
        copy.import_jsonl(io.BytesIO(_file(records)))
        assert copy.verify().ok
        reads = _reads(copy)
        assert {k: v for k, v in reads.items() if k[0] != "c"} == expected
        assert copy.at("c").snapshot()["kv"] == {"k": 0}  # default's at the fork point


# -- the header, placeholders' times, the summary, an empty list --------------------------


@pytest.mark.parametrize("value", ["dropped", "", None, True, 1, ["kept"], {"kept": 1}])
def test_merge_sources_is_kept_or_absent(targets: Callable[[], Any], value: Any) -> None:
    """Only a missing field means an older export (whose merges may name no source);
    any other value than "kept" is refused, not read as one."""
    with rewinddb.open(targets()) as src:
        _skip_merge(src)
        records = _records(_as_an_older_export(_export(src, branches=["t"])))
    records[0]["merge_sources"] = value
    with rewinddb.open(targets()) as copy:
        with pytest.raises(rewinddb.ImportFormatError) as info:
            copy.import_jsonl(io.BytesIO(_file(records)))
        assert info.value.code == "invalid.import" and info.value.details["line"] == 1
        assert "'merge_sources' must be 'kept'" in info.value.message
        assert copy.version == 0 and copy.branches.names() == ["default"]


def test_placeholders_are_made_and_deleted_at_times_of_their_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stand-in is made when its branch was, and deleted when it was or, live, when
    the export was made; a placeholder the importer makes is timed as the merge or the
    event that names it. The CLI said 'deleted at 1970-01-01'."""
    with rewinddb.open(tmp_path / "src") as src:
        merged = _skip_merge(src)
        src.branches.fork("default", "gone")
        src.at("gone").kv.put("g", 1)
        src.branches.merge("gone", "t")
        src.branches.delete("gone")
        made = dict(src._engine.conn.fetchall("SELECT name, created_at FROM rewind_branches"))
        deleted = src._engine.conn.fetchone(
            "SELECT deleted_at FROM rewind_branches WHERE name = 'gone'"
        )[0]
        before = datetime.now(timezone.utc)
        data = _export(src, branches=["t"])
        after = datetime.now(timezone.utc)
        merge_time = next(c.timestamp for c in src.commits() if c.version == merged)
    stand_ins = {r["id"]: r for r in _records(data) if r.get("left_out")}
    side, gone = stand_ins[3], stand_ins[4]
    assert side["created_at"] == made["side"]
    assert before <= from_micros(side["deleted_at"]) <= after
    assert (gone["created_at"], gone["deleted_at"]) == (made["gone"], deleted)
    with rewinddb.open(tmp_path / "copy") as copy:
        copy.import_jsonl(io.BytesIO(data))
    assert main(["show", str(tmp_path / "copy"), "--branch", "~purged/3"]) == 1
    said = capsys.readouterr().err
    assert (
        "1970" not in said and f"deleted at {from_micros(side['deleted_at']).isoformat()}" in said
    )
    with rewinddb.open(tmp_path / "older") as older:  # a placeholder the importer makes
        older.import_jsonl(io.BytesIO(_as_an_older_export(data)))
        row = older._engine.conn.fetchone(
            "SELECT b.created_at, b.deleted_at FROM rewind_commits c JOIN rewind_branches b "
            "ON b.id = c.merge_branch_id WHERE c.version = ?",
            (merged,),
        )
        assert [from_micros(t) for t in row] == [merge_time, merge_time]


def test_the_summaries_count_stand_ins_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """They said '1 deleted branches' of a branch nobody deleted."""
    with rewinddb.open(tmp_path / "src") as src:
        _skip_merge(src)
        out = io.BytesIO()
        counts = src.export_jsonl(out, branches=["t"])
    assert (counts.branches, counts.stand_ins, counts.counts["branch"]) == (["default", "t"], 1, 3)
    assert str(counts).startswith("2 branches, 1 stand-ins of left-out branches, 3 commits")
    assert "deleted" not in str(counts)
    with rewinddb.open(tmp_path / "copy") as copy:
        assert str(copy.import_jsonl(io.BytesIO(out.getvalue()))) == str(counts)
    with rewinddb.open(tmp_path / "older") as older:  # the older names count as stand-ins
        counts = older.import_jsonl(io.BytesIO(_as_first_kept_export(out.getvalue())))
        assert "1 stand-ins of left-out branches" in str(counts) and "deleted" not in str(counts)
    exported = tmp_path / "t.jsonl"
    assert main(["export", str(tmp_path / "src"), "--branch", "t", "-o", str(exported)]) == 0
    assert main(["import", str(tmp_path / "cli"), str(exported)]) == 0
    said = capsys.readouterr()
    assert "1 stand-ins of left-out branches" in said.out + said.err
    assert "deleted branches" not in said.out + said.err


def test_an_empty_list_of_branches_is_refused(targets: Callable[[], Any]) -> None:
    """branches=[] named nothing to export: SQLite wrote a file with no branch at all,
    PostgreSQL failed with a storage error (a syntax error at 'IN ()')."""
    with rewinddb.open(targets()) as src:
        src.kv.put("k", 1)
        out = io.BytesIO()
        with pytest.raises(rewinddb.RewindError) as info:
            src.export_jsonl(out, branches=[])
        assert info.value.code == "invalid.branches" and out.getvalue() == b""


def test_an_event_origins_placeholder_is_timed_as_the_event(targets: Callable[[], Any]) -> None:
    with rewinddb.open(targets()) as src:
        src.branches.fork("default", "t")
        src.branches.fork("default", "side")
        src.at("side").events.append("note", {})
        merged = src.branches.merge("side", "t", events="append").version
        older = _as_an_older_export(_export(src, branches=["t"]))  # (no stand-in in it)
    with rewinddb.open(targets()) as copy:
        copy.import_jsonl(io.BytesIO(older))
        [event] = copy.at("t").events.list()
        row = copy._engine.conn.fetchone(
            "SELECT b.name, b.created_at, b.deleted_at FROM rewind_events e JOIN "
            "rewind_branches b ON b.id = e.origin_branch_id WHERE e.version = ?",
            (merged,),
        )
        assert row[0].startswith(STAND_IN)
        assert [from_micros(t) for t in row[1:]] == [event.event.timestamp] * 2


def _edit_stand_in(data: bytes, edit: str) -> bytes:
    """The file of ``_x_merged_a_then_t_merged_x`` (stand-in x, id 3, with one link)
    with one thing about the stand-in changed."""
    records = _records(data)
    stand_in = next(r for r in records if r.get("left_out"))
    link = next(r for r in records if r["type"] == "commit" and r["branch"] == stand_in["id"])
    if edit == "not-a-flag":
        stand_in["left_out"] = "yes"
    elif edit == "live":
        stand_in["deleted_at"] = None
    elif edit == "a-link-that-is-no-merge":
        link["merge_branch"] = link["merge_version"] = None
    else:  # an entry of its own, at its link's version
        entry = next(r for r in records if r["type"] == "entry")
        records.insert(
            records.index(entry), {**entry, "branch": stand_in["id"], "version": link["version"]}
        )
        records[-1]["counts"]["entry"] += 1
    return _file(records)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ("not-a-flag", "'left_out' must be true or false"),
        ("live", "stands in for a branch the export left out ('left_out'), so it is deleted"),
        ("a-link-that-is-no-merge", "keeps only its merges (as links)"),
        ("an-entry", "it has no entries and no events"),
    ],
)
def test_import_refuses_a_stand_in_with_more_than_links(
    targets: Callable[[], Any], edit: str, says: str
) -> None:
    with rewinddb.open(targets()) as src:
        _x_merged_a_then_t_merged_x(src, t_resets=False)
        data = _edit_stand_in(_export(src, branches=["t", "a"]), edit)
    with rewinddb.open(targets()) as copy:
        with pytest.raises(rewinddb.ImportFormatError) as info:
            copy.import_jsonl(io.BytesIO(data))
        assert info.value.code == "invalid.import" and says in info.value.message
        assert copy.version == 0 and copy.branches.names() == ["default"]
