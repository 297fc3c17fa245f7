"""Export to JSON Lines and import into another database: the same history."""

from __future__ import annotations

import io
import json
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import orjson
import pytest

import rewinddb
from rewinddb.cli import main
from rewinddb.progress import Progress


def _build(db: rewinddb.Database) -> None:
    db.kv.put("task", "t", trigger="init")
    db.kv.put("blob", b"\x00\xffbinary")
    db.json.set("chat", "$", {"messages": [{"text": "m" * 300, "n": i} for i in range(12)]})
    db.state.set("phase", "start", "init")
    db.branches.fork("default", "run")
    run = db.at("run")
    run.events.append("tool.call", {"n": 1})
    run.json.set("chat", "$.messages[12]", {"text": "x" * 300, "n": 12})
    run.state.set("phase", "done", "tests_passed")
    db.branches.fork("run", "grandchild")
    db.at("grandchild").events.append("deep", {"nested": {"a": [1, 2]}})
    db.branches.fork("default", "gone")
    db.at("gone").kv.put("lost", 1)
    db.branches.fork("gone", "orphan")
    db.branches.delete("gone")
    db.branches.merge("run", "default", events="append")
    with db.transaction(message="batch"):
        db.kv.delete("task")
        db.events.append("after merge", None)


def _answers(db: rewinddb.Database) -> dict[str, object]:
    answers: dict[str, object] = {"branches": [b.to_dict() for b in db.branches.list()]}
    for branch in db.branches.list():
        view = db.at(branch.name)
        for version in range(branch.forked_at, db.version + 1):
            answers[f"{branch.name}@{version}"] = (
                view.snapshot(as_of=version),
                [item.event for item in view.events.list(as_of=version)],
            )
        answers[f"{branch.name} history"] = (view.json.history("chat"), view.state.history())
    answers["commits"] = db.commits()
    return answers


def _export(db: rewinddb.Database, **kwargs: object) -> bytes:
    out = io.BytesIO()
    db.export_jsonl(out, **kwargs)  # type: ignore[arg-type]
    return out.getvalue()


def test_round_trip_gives_the_same_history(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        _build(db)
        data = _export(db)
        before = _answers(db)
    with rewinddb.open(tmp_path / "b") as copy:
        counts = copy.import_jsonl(io.BytesIO(data))
        assert counts.counts["event"] == 4
        assert _answers(copy) == before
        for branch in copy.branches.list():
            assert copy.at(branch.name).events.verify().ok


def test_the_file_is_json_lines_with_a_header_and_an_end(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        _build(db)
        lines = [orjson.loads(line) for line in _export(db).splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["format"] == "rewinddb-export"
    assert lines[-1]["type"] == "end"
    types = [line["type"] for line in lines]
    assert {"branch", "array", "items", "commit", "entry", "event"} <= set(types)
    blob = next(line for line in lines if line.get("key") == "blob")
    assert blob["kind"] == "bytes"


def test_exporting_some_branches(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        _build(db)
        data = _export(db, branches=["grandchild"])
        expected = _answers(db)
    with rewinddb.open(tmp_path / "b") as copy:
        copy.import_jsonl(io.BytesIO(data))
        assert copy.branches.names() == ["default", "run", "grandchild"]
        view = copy.at("grandchild")
        versions = range(view.info().forked_at, copy.version + 1)
        assert len(versions) > 1
        for version in versions:
            assert (
                view.snapshot(as_of=version),
                [i.event for i in view.events.list(as_of=version)],
            ) == expected[f"grandchild@{version}"]


def _bad(tmp_path: Path, data: bytes, error: type[Exception], code: str, match: str) -> None:
    with rewinddb.open(tempfile.mkdtemp(dir=tmp_path)) as target:
        target.branches.fork("default", "existing")
        with pytest.raises(error, match=match) as info:
            target.import_jsonl(io.BytesIO(data))
        assert info.value.code == code  # type: ignore[attr-defined]
        assert target.version == 0
        assert target.branches.names() == ["default", "existing"]
        assert target.kv.keys() == [] and len(target.events) == 0


@pytest.fixture
def exported(tmp_path: Path) -> list[bytes]:
    with rewinddb.open(tmp_path / "source") as db:
        _build(db)
        return _export(db).splitlines(keepends=True)


def test_import_refuses_a_broken_hash_chain(tmp_path: Path, exported: list[bytes]) -> None:
    lines = [line.replace(b'"payload":{"n":1}', b'"payload":{"n":2}') for line in exported]
    assert lines != exported
    _bad(
        tmp_path, b"".join(lines), rewinddb.ImportFormatError, "invalid.import", "broken hash chain"
    )


def test_import_refuses_unknown_records(tmp_path: Path, exported: list[bytes]) -> None:
    lines = [*exported[:3], b'{"type":"mystery"}\n', *exported[3:]]
    _bad(
        tmp_path,
        b"".join(lines),
        rewinddb.ImportFormatError,
        "invalid.import",
        "unknown record type 'mystery'",
    )


def test_import_refuses_an_existing_branch(tmp_path: Path, exported: list[bytes]) -> None:
    lines = [line.replace(b'"name":"run"', b'"name":"existing"') for line in exported]
    _bad(
        tmp_path,
        b"".join(lines),
        rewinddb.BranchExistsError,
        "conflict.branch_exists",
        "'existing' already exists",
    )


def test_import_refuses_a_commit_at_or_below_its_branch_fork_point(
    tmp_path: Path, exported: list[bytes]
) -> None:
    """Reads skip a branch's history at or below its fork point, so such a row would be
    invisible: the file is refused instead."""
    records = [json.loads(line) for line in exported]
    run = next(r for r in records if r["type"] == "branch" and r["name"] == "run")
    run["forked_at"] = min(r["version"] for r in records if r.get("branch") == run["id"])
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    _bad(tmp_path, data, rewinddb.ImportFormatError, "invalid.import", "fork point")


@pytest.mark.parametrize(
    ("mangle", "match"),
    [
        (lambda lines: lines[:-3], "truncated"),
        (lambda lines: lines[1:], "no header"),
        (lambda lines: [], "empty"),
        (lambda lines: [*lines[:2], b"not json\n", *lines[2:]], "not JSON"),
        (lambda lines: [*lines[:2], b"[1, 2]\n", *lines[2:]], "JSON object"),
        (lambda lines: [*lines, b'{"type":"branch"}\n'], "after the end"),
        (lambda lines: [lines[0], lines[-1]], "counts"),
        (
            lambda lines: [*lines[:2], b'{"type":"commit","version":1}\n', *lines[2:]],
            "branch id None",
        ),
    ],
    ids=[
        "truncated",
        "no-header",
        "empty",
        "not-json",
        "not-object",
        "after-end",
        "counts",
        "malformed",
    ],
)
def test_import_refuses_broken_files(tmp_path, exported, mangle, match) -> None:  # type: ignore[no-untyped-def]
    _bad(tmp_path, b"".join(mangle(exported)), rewinddb.ImportFormatError, "invalid.import", match)


def test_import_needs_a_database_without_history(tmp_path: Path, exported: list[bytes]) -> None:
    with rewinddb.open(tmp_path / "used") as target:
        target.kv.put("k", 1)
        with pytest.raises(rewinddb.RewindError) as info:
            target.import_jsonl(exported)
        assert info.value.code == "conflict.import"
        assert target.version == 1


def test_cli_export_and_import(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        _build(db)
        before = _answers(db)
    assert main(["export", str(tmp_path / "a")]) == 0
    out, err = capsysbinary.readouterr()
    assert b"exported" in err and b"\r" not in err  # no progress bar when not a terminal
    (tmp_path / "run.jsonl").write_bytes(out)
    assert (
        main(
            [
                "export",
                str(tmp_path / "a"),
                "--branch",
                "run",
                "-o",
                str(tmp_path / "run-only.jsonl"),
            ]
        )
        == 0
    )
    assert main(["import", str(tmp_path / "b"), str(tmp_path / "run.jsonl")]) == 0
    with rewinddb.open(tmp_path / "b") as copy:
        assert _answers(copy) == before
    assert main(["import", str(tmp_path / "b"), str(tmp_path / "run.jsonl")]) == 1
    assert b"conflict.import" in capsysbinary.readouterr().err


class _Terminal(io.StringIO):
    """Stands in for the user's terminal (a real one cannot be attached in CI)."""

    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        _build(db)
        terminal = _Terminal()
        db.export_jsonl(io.BytesIO(), progress=Progress("exporting", 0, "records", terminal))
    shown = terminal.getvalue()
    assert shown.startswith("\rexporting [") and "100%" in shown and shown.endswith("\n")
    quiet = io.StringIO()
    progress = Progress("importing", 10, "bytes", quiet)
    progress.advance(5)
    progress.close()
    assert quiet.getvalue() == ""


def test_a_partial_import_keeps_the_original_clock(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        db.kv.put("a", 1)
        db.branches.fork("default", "x")
        db.at("x").kv.put("noise", 1)
        db.at("x").kv.put("noise", 2)
        db.branches.fork("default", "y")
        db.at("y").kv.put("mine", 1)
        data = _export(db, branches=["y"])
        clock = db.version
    with rewinddb.open(tmp_path / "b") as copy:
        copy.import_jsonl(io.BytesIO(data))
        assert copy.version == clock
        assert copy.kv.put("later", 1) == clock + 1  # lands after y's fork point
        assert copy.at("y").kv.keys() == ["a", "mine"]
        assert copy.at("y").kv.get("a", as_of=3) == 1  # a version the file left out


def test_a_partial_export_leaves_other_branches_items_out(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        chat = [{"text": "m" * 300, "n": i} for i in range(10)]
        db.json.set("chat", "$", chat)
        db.branches.fork("default", "secret")
        db.at("secret").json.set("chat", "$", [*chat, {"text": "TOP-SECRET-PASSWORD"}])
        data = _export(db, branches=["default"])
    assert b"TOP-SECRET" not in data
    with rewinddb.open(tmp_path / "b") as copy:
        copy.import_jsonl(io.BytesIO(data))
        assert copy.json.get("chat") == chat


@pytest.mark.parametrize(
    ("swap", "match"),
    [
        ((b'"name":"run"', b'"name":""'), "must not be empty"),
        ((b'"name":"run"', b'"name":5'), "must be a string"),
        ((b'"space":"kv"', b'"space":123'), "unknown space"),
        ((b'"deleted_at":null', b'"deleted_at":"yesterday"'), "must be an integer"),
        ((b'"trigger":"init"', b'"trigger":{"a":1}'), "'trigger'"),
        ((b'"key":"task"', b'"key":["task"]'), "'key'"),
        ((b'"version":1,"kind"', b'"version":999,"kind"'), "not a commit"),
    ],
    ids=["empty-name", "int-name", "space", "deleted_at", "trigger", "key", "version"],
)
def test_import_checks_every_field(tmp_path, exported, swap, match) -> None:  # type: ignore[no-untyped-def]
    data = b"".join(exported)
    assert swap[0] in data, swap[0]
    _bad(
        tmp_path,
        data.replace(swap[0], swap[1], 1),
        rewinddb.ImportFormatError,
        "invalid.import",
        match,
    )


def test_import_refuses_repeated_records(tmp_path: Path, exported: list[bytes]) -> None:
    commit = next(line for line in exported if b'"type":"commit"' in line)
    at = exported.index(commit)
    _bad(
        tmp_path,
        b"".join([*exported[:at], commit, *exported[at:]]),
        rewinddb.ImportFormatError,
        "invalid.import",
        "repeated",
    )


def test_export_and_import_argument_errors(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        with pytest.raises(rewinddb.RewindError) as info:
            db.export_jsonl(io.StringIO())  # type: ignore[arg-type]
        assert info.value.code == "invalid.output"
        with pytest.raises(rewinddb.RewindError) as info:
            db.export_jsonl(io.BytesIO(), branches="default")  # type: ignore[arg-type]
        assert info.value.code == "invalid.branches"
        with pytest.raises(rewinddb.RewindError) as info:
            db.import_jsonl(None)  # type: ignore[arg-type]
        assert info.value.code == "invalid.import"


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        _build(db)
    assert main(["import", str(tmp_path / "new"), str(tmp_path / "missing.jsonl")]) == 1
    assert "No such file" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    assert main(["export", str(tmp_path / "a"), "-o", str(tmp_path / "no" / "dir.jsonl")]) == 1
    assert "No such file" in capsys.readouterr().err
    assert (
        main(["export", str(tmp_path / "a"), "--branch", "nope", "-o", str(tmp_path / "out.jsonl")])
        == 1
    )
    assert "not_found.engine.branch" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()
    (tmp_path / "broken.jsonl").write_bytes(b'{"type":"header"}\n')
    assert main(["import", str(tmp_path / "new"), str(tmp_path / "broken.jsonl")]) == 1
    assert not (tmp_path / "new").exists()  # a failed import leaves no empty database


def test_a_partial_export_keeps_events_one_event(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        db.branches.fork("default", "x")
        db.branches.fork("default", "t")
        db.branches.fork("default", "y")
        db.at("x").events.append("e", {})
        db.branches.merge("x", "t", events="append")
        db.branches.merge("x", "y", events="append")
        data = _export(db, branches=["t", "y"])
    with rewinddb.open(tmp_path / "b") as copy:
        copy.import_jsonl(io.BytesIO(data))
        receipt = copy.branches.merge("y", "t", events="append")
        assert receipt.events_carried == 0
        assert [i.event.event_type for i in copy.at("t").events.list()] == ["e"]
        assert "x" not in copy.branches


def _edit(lines: list[bytes], kind: str, change: dict[str, object], nth: int = 0) -> bytes:
    """The export with the ``nth`` record of ``kind`` changed."""
    out, seen = [], 0
    for line in lines:
        record = orjson.loads(line)
        if record["type"] == kind:
            if seen == nth:
                record.update(change)
                line = orjson.dumps(record) + b"\n"
            seen += 1
        out.append(line)
    return b"".join(out)


@pytest.mark.parametrize(
    ("kind", "change", "match"),
    [
        ("header", {"clock": 2**63 - 1}, "'clock'"),
        ("commit", {"ts": 2**62}, "'ts'"),
        ("branch", {"created_at": 2**62}, "'created_at'"),
        ("commit", {"merge_branch": 1, "merge_version": None}, "merge_branch"),
        ("items", {"start": 5}, "items start at 5"),
        ("array", {"base": 99}, "array 99"),
    ],
    ids=["clock", "ts", "created_at", "merge-half", "items-gap", "array-base"],
)
def test_import_refuses_crafted_values(tmp_path, exported, kind, change, match) -> None:  # type: ignore[no-untyped-def]
    _bad(
        tmp_path, _edit(exported, kind, change), rewinddb.ImportFormatError, "invalid.import", match
    )


def test_import_refuses_crafted_array_references(tmp_path, exported) -> None:  # type: ignore[no-untyped-def]
    entry = next(orjson.loads(line) for line in exported if b'"arrays"' in line)
    nth = [orjson.loads(line) for line in exported if b'"type":"entry"' in line].index(entry)
    path, array, length = entry["arrays"][0]
    for arrays, match in (
        ([[["nope"], array, length]], "does not lead into the value"),
        ([[[], array, length]], "does not end at a placeholder"),
        ([[path, array, length + 100]], "which has fewer"),
        ([[path, 77, length]], "array 77"),
        (["junk"], "[path, array, length]"),
    ):
        _bad(
            tmp_path,
            _edit(exported, "entry", {"arrays": arrays}, nth),
            rewinddb.ImportFormatError,
            "invalid.import",
            match,
        )


def test_import_refuses_an_origin_that_does_not_exist(tmp_path, exported) -> None:  # type: ignore[no-untyped-def]
    _bad(
        tmp_path,
        _edit(exported, "event", {"origin": [1, 99]}),
        rewinddb.ImportFormatError,
        "invalid.import",
        "lacks it",
    )


def test_now_as_a_datetime_after_a_partial_import(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        db.branches.fork("default", "x")
        db.at("x").kv.put("noise", 1)
        db.branches.fork("default", "y")
        data = _export(db, branches=["y"])
    with rewinddb.open(tmp_path / "b") as copy:
        copy.import_jsonl(io.BytesIO(data))
        copy.branches.fork("y", "later")
        assert copy.at("later").kv.keys(as_of=datetime.now(timezone.utc)) == []


def test_a_failed_import_inside_a_transaction_forgets_its_branches(
    tmp_path: Path, exported: list[bytes]
) -> None:
    with rewinddb.open(tmp_path / "target") as target:
        with target.transaction():
            with pytest.raises(rewinddb.ImportFormatError):
                target.import_jsonl([*exported[:-8], b'{"type":"mystery"}\n'])
            target.import_jsonl(exported)
        assert "run" in target.branches and target.at("run").events.verify().ok


def test_history_moves_between_sqlite_and_postgresql(tmp_path: Path, postgres_url: str) -> None:
    """Export from SQLite, import into PostgreSQL, export again, import into SQLite: the
    same answers and the same hashes everywhere."""
    with rewinddb.open(tmp_path / "a") as db:
        _build(db)
        data = _export(db)
        before = _answers(db)
    with rewinddb.open(postgres_url) as server:
        server.import_jsonl(io.BytesIO(data))
        assert _answers(server) == before
        again = _export(server)
    with rewinddb.open(tmp_path / "b") as copy:
        copy.import_jsonl(io.BytesIO(again))
        assert _answers(copy) == before
        for branch in copy.branches.list():
            assert copy.at(branch.name).events.verify().ok
