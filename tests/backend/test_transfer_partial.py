"""Partial exports and the merges they cut: a merge commit whose source branch the export
leaves out stays a merge in the copy (its source a placeholder, a deleted branch with none
of its history), so every commit still writes an entry or an event of its branch or is a
merge, which the store relies on to find a branch's newest commit (``_clock.previous_hash``)
and retention on to walk its commits. Older exports dropped those sources; their files
still import, and import refuses any other commit that writes nothing."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

import rewinddb
from rewinddb import _commit_hash
from rewinddb.cli import main
from rewinddb.erasure import purged
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
    """The file an export before this fix wrote: no stand-in branch records, the merges
    from them with merge_branch and merge_version null, no merge_sources in the header
    (checked against that exporter's code when this was written)."""
    records = _records(data)
    stand_ins = {
        r["id"] for r in records if r["type"] == "branch" and r["name"].startswith(STAND_IN)
    }
    older = []
    for record in records:
        if record["type"] == "header":
            record.pop("merge_sources", None)
        elif record["type"] == "branch" and record["id"] in stand_ins:
            continue
        elif record["type"] == "commit" and record["merge_branch"] in stand_ins:
            record["merge_branch"] = record["merge_version"] = None
        elif record["type"] == "end":
            record["counts"]["branch"] -= len(stand_ins)
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
    """The file the first exporter that kept merge sources wrote: its stand-ins named
    ``(not exported: branch N)``, an older name for placeholders."""
    records = _records(data)
    for record in records:
        if record["type"] == "branch" and record["name"].startswith(STAND_IN):
            record["name"] = f"(not exported: branch {record['id']})"
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
