"""Export and import of erased and pruned history: nothing erased or purged is in the
file, and the copy answers as the original, refuses the same pruned versions with the same
words, verifies, and has the same commit hashes."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from leaks import encodings

import rewinddb
from rewinddb.cli import main

from .conftest import BACKENDS

SECRETS = {
    "kv": "sk-kv-erased-0e1f2a3b4c5d6e7f",
    "list": "sk-list-erased-9a8b7c6d5e4f",
    "bytes": "sk-bytes-erased-55aa66bb77cc",
    "event": "sk-event-erased-1234abcd5678",
    "purged": "sk-purged-branch-feedbeef9012",
    "gone": "sk-gone-branch-c0ffee00d00d",
    "pruned": "sk-pruned-value-a1b2c3d4e5f6",
}
#: The text the prune names (what an integration passes as ``reason``).
REASON = "RewindSaver.prune(keep_last=10)"
#: Keys whose histories are compared (erased ones read as absent, so snapshots skip them).
KEYS = [
    ("kv", "token"),
    ("json", "chat"),
    ("state", "blob"),
    ("kv", "step"),
    ("json", "notes"),
    ("kv", "round"),
    ("kv", "inherited"),
]


def _long_list(last: str, n: int = 30) -> list[dict[str, str]]:
    return [{"text": f"message {i} " + "x" * 60} for i in range(n)] + [{"text": last}]


def _history(db: rewinddb.Database) -> None:
    """Forks, merges carrying events, erased keys (a shared list among them) and events
    (one carried before and one after its erasure), a purged branch whose row goes and one
    a live fork keeps, a prune with a reason on a branch with a fork, and a policy's gc
    cutting a branch's events."""
    db.kv.put("config", {"mode": "a"}, trigger="init")
    db.kv.put("token", SECRETS["kv"])
    db.json.set("chat", "$", _long_list(SECRETS["list"]))
    db.state.set("blob", SECRETS["bytes"].encode(), "start")
    # A branch purged with no fork: its row goes, so the branch ids have a gap.
    db.branches.fork("default", "gone")
    db.at("gone").kv.put("g", SECRETS["gone"])
    db.at("gone").events.append("said", {"text": SECRETS["gone"]})
    db.branches.fork("default", "later")
    db.kv.put("after gone", 1)
    db.branches.delete("gone", purge=True)
    db.branches.fork("default", "run")
    run = db.at("run")
    for i in range(6):
        run.kv.put("step", SECRETS["pruned"] if i == 0 else i)
        run.json.set("notes", "$", [f"note {j} " + "x" * 200 for j in range(20 + i)])
        run.events.append("tool", {"i": i, "text": SECRETS["event"] if i == 4 else "ok"})
    db.branches.fork("run", "kid")
    db.at("kid").kv.put("step", "kid's")
    db.at("kid").events.append("kid", {"n": 1})
    run.kv.put("step", 6)
    db.branches.merge("run", "default", events="append")
    event = next(i.event for i in run.events.list() if i.event.payload["i"] == 4)
    run.events.erase(event.sequence)  # and its copy on default
    db.branches.merge("run", "later", events="append")  # carries the erased event
    # A purged branch a live fork read: what the fork inherited stays.
    db.branches.fork("default", "doomed")
    db.at("doomed").kv.put("inherited", "the fork reads this")
    db.branches.fork("doomed", "livefork")
    db.at("doomed").kv.put("mine", SECRETS["purged"])
    db.at("doomed").events.append("x", {"text": SECRETS["purged"]})
    db.at("livefork").kv.put("own", 1)
    db.branches.delete("doomed", purge=True)
    for space, key in (("kv", "token"), ("json", "chat"), ("state", "blob")):
        db.erase_key(space, key)
    # Below the cut: step's and notes' (a shared list) newest entries stay, without commits.
    cut = next(c.version for c in db.at("run").commits() if c.branch == "run") - 5
    db.prune("run", before=cut, reason=REASON)
    # A policy: gc cuts lg/a (no forks: its oldest events go too) and purges lg/old.
    db.branches.fork("default", "lg/a")
    for i in range(5):
        db.at("lg/a").kv.put("round", i)
        db.at("lg/a").events.append("round", {"i": i})
    db.branches.fork("default", "lg/b")  # its own events all go: the horizon says how many
    db.at("lg/b").events.append("early", {"n": 1})
    for i in range(3):
        db.at("lg/b").kv.put("round", i)
    db.branches.fork("default", "lg/old")
    db.at("lg/old").kv.put("old", 1)
    db.kv.put("final", True)
    db.branches.delete("lg/old")
    db.retain("lg/*", keep_last=2)
    db.gc()
    assert db.verify().ok


def _answers(db: rewinddb.Database) -> dict[str, Any]:
    """Every read of every live branch at every version, and the error where retention
    removed the version."""
    found: dict[str, Any] = {
        "version": db.version,
        "branches": [b.to_dict() for b in db.branches.list()],
        "commits": db.commits(),
    }
    for branch in db.branches.list():
        view = db.at(branch.name)
        for version in range(branch.forked_at, db.version + 1):
            try:
                found[f"{branch.name}@{version}"] = (
                    view.snapshot(as_of=version),
                    [item.event for item in view.events.list(as_of=version)],
                    view.events.length(as_of=version),
                )
            except rewinddb.HistoryUnavailableError as error:
                found[f"{branch.name}@{version}"] = (error.code, str(error), error.details)
        for space, key in KEYS:
            try:
                found[f"{branch.name} {space} {key}"] = view.key_history(space, key)
            except rewinddb.RewindError as error:
                found[f"{branch.name} {space} {key}"] = error.code
        found[f"{branch.name} verify"] = view.events.verify()
    return found


def _stored(db: rewinddb.Database) -> tuple[list[Any], list[Any]]:
    """The commit hashes and the horizons, as stored."""
    conn = db._engine.conn
    return (
        [
            tuple(row)
            for row in conn.fetchall("SELECT version, hash FROM rewind_commits ORDER BY version")
        ],
        [tuple(row) for row in conn.fetchall("SELECT * FROM rewind_horizons ORDER BY branch_id")],
    )


def _export(db: rewinddb.Database, **kwargs: Any) -> bytes:
    out = io.BytesIO()
    db.export_jsonl(out, **kwargs)
    return out.getvalue()


@pytest.fixture(params=BACKENDS)
def targets(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """New databases on one backend: directories, or PostgreSQL schemas."""
    if request.param == "sqlite":
        made = iter(range(100))
        yield lambda: tmp_path / f"db{next(made)}"
    else:
        server = request.getfixturevalue("postgres")
        yield server.new_schema


def test_nothing_erased_purged_or_pruned_is_in_the_export(targets: Callable[[], Any]) -> None:
    with rewinddb.open(targets()) as db:
        _history(db)
        data = _export(db)
    for name, secret in SECRETS.items():
        hits = [needle for needle in encodings(secret) if needle in data]
        assert hits == [], name
    records = [orjson.loads(line) for line in data.splitlines()]
    erased = [r for r in records if r["type"] == "entry" and r["kind"] == "erased"]
    assert {(r["space"], r["key"]) for r in erased} == {
        ("kv", "token"),
        ("json", "chat"),
        ("state", "blob"),
    }
    for record in erased:
        assert len(record["digest"]) == 64 and record["trigger"] is None
        assert record["version"] <= record["erased_at"] <= records[0]["clock"]
        assert "value" not in record and "arrays" not in record
    events = [r for r in records if r["type"] == "event" and r.get("erased_at") is not None]
    assert len(events) == 3 and {r["payload"] for r in events} == {None}  # run, 2 copies
    horizons = [r for r in records if r["type"] == "horizon"]
    assert [h["policy"] for h in horizons] == [REASON] + ["retain('lg/*', keep_last=2)"] * 2
    assert records[-1]["counts"]["horizon"] == 3


def test_the_copy_answers_refuses_and_verifies_as_the_original(
    targets: Callable[[], Any],
) -> None:
    with rewinddb.open(targets()) as db:
        _history(db)
        data = _export(db)
        before, stored = _answers(db), _stored(db)
    unavailable = [
        key
        for key, answer in before.items()
        if "@" in key and len(answer) == 3 and answer[0] == "history_unavailable"
    ]
    assert any(key.startswith("run@") for key in unavailable)
    assert any(key.startswith("lg/a@") for key in unavailable)
    assert REASON in before[unavailable[0]][1]
    assert [v.entry.erased_at is not None for v in before["default kv token"]] == [True]
    with rewinddb.open(targets()) as copy:
        counts = copy.import_jsonl(io.BytesIO(data))
        assert counts.counts["horizon"] == 3 and "3 horizons" in str(counts)
        assert copy.verify().ok, copy.verify()
        assert _answers(copy) == before
        assert _stored(copy) == stored  # the same ids, so the same commit hashes
        # It goes on as the original would: new writes, and another export and import.
        again = _export(copy)
        copy.at("run").kv.put("step", 7)
        copy.branches.fork("livefork", "after the import")  # new ids do not collide
        copy.at("after the import").json.set("big", "$", _long_list("new"))
        assert copy.verify().ok
    with rewinddb.open(targets()) as third:
        third.import_jsonl(io.BytesIO(again))
        assert _answers(third) == before and third.verify().ok


def test_a_target_whose_ids_differ_still_verifies(tmp_path: Path) -> None:
    """Into a database that already has a branch (no history), the file's ids are taken:
    rows get new ids, the commits are hashed again from their rows (a pruned branch's
    chain from its horizon's previous hash), and every read answers as before."""
    with rewinddb.open(tmp_path / "a") as db:
        _history(db)
        data = _export(db)
        before = _answers(db)
        hashes = _stored(db)[0]
    with rewinddb.open(tmp_path / "b") as copy:
        copy.branches.fork("default", "already here")
        copy.branches.delete("already here")
        copy.branches.fork("default", "occupying ids")
        copy.import_jsonl(io.BytesIO(data))
        assert copy.verify().ok, copy.verify()
        copy.branches.delete("occupying ids")
        assert _answers(copy) == before
        assert _stored(copy)[0] != hashes  # they cover branch ids


def test_a_partial_export_carries_its_ancestors_horizons(tmp_path: Path) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        _history(db)
        data = _export(db, branches=["kid"])
        before = _answers(db)
    assert b'"type":"horizon"' in data
    with rewinddb.open(tmp_path / "b") as copy:
        copy.import_jsonl(io.BytesIO(data))
        assert copy.branches.names() == ["default", "run", "kid"]
        assert copy.verify().ok
        answers = _answers(copy)
        for name in ("run", "kid"):
            keys = [key for key in answers if key.startswith(f"{name}@")]
            assert keys and all(answers[key] == before[key] for key in keys)


def test_cli_export_import_and_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with rewinddb.open(tmp_path / "a") as db:
        _history(db)
        before = _answers(db)
    assert main(["export", str(tmp_path / "a"), "-o", str(tmp_path / "h.jsonl")]) == 0
    assert main(["import", str(tmp_path / "b"), str(tmp_path / "h.jsonl")]) == 0
    assert main(["verify", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    with rewinddb.open(tmp_path / "b") as copy:
        assert _answers(copy) == before


def test_a_format_1_file_still_imports(tmp_path: Path) -> None:
    """Files written before horizons and erasure: format 1, no horizon count."""
    with rewinddb.open(tmp_path / "a") as db:
        db.kv.put("a", 1)
        db.branches.fork("default", "x")
        db.at("x").events.append("e", {"n": 1})
        records = [orjson.loads(line) for line in _export(db).splitlines()]
        before = _answers(db)
    records[0]["format_version"] = 1
    del records[-1]["counts"]["horizon"]
    with rewinddb.open(tmp_path / "b") as copy:
        copy.import_jsonl([orjson.dumps(r) + b"\n" for r in records])
        assert _answers(copy) == before and copy.verify().ok
    records[0]["format_version"] = 3
    with rewinddb.open(tmp_path / "c") as copy, pytest.raises(rewinddb.ImportFormatError) as info:
        copy.import_jsonl([orjson.dumps(r) + b"\n" for r in records])
    assert "format 3 is not supported (this rewinddb reads 1 and 2)" in str(info.value)


# -- tampered files: refused, naming the line, with nothing imported -----------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    with rewinddb.open(tmp_path_factory.mktemp("source") / "db") as db:
        _history(db)
        return [orjson.loads(line) for line in _export(db).splitlines()]


Pick = Callable[[list[dict[str, Any]], dict[str, Any]], bool]


def _ids(records: list[dict[str, Any]]) -> dict[str, int]:
    return {r["name"]: r["id"] for r in records if r["type"] == "branch"}


def _horizon_of(name: str) -> Pick:
    return lambda records, r: r["type"] == "horizon" and r["branch"] == _ids(records)[name]


def _erased_entry(records: list[dict[str, Any]], r: dict[str, Any]) -> bool:
    return r["type"] == "entry" and r["kind"] == "erased" and r["key"] == "chat"


def _json_entry(records: list[dict[str, Any]], r: dict[str, Any]) -> bool:
    return r["type"] == "entry" and r["kind"] == "json"


def _erased_event(branch: str) -> Pick:
    return lambda records, r: (
        r["type"] == "event"
        and r.get("erased_at") is not None
        and r["branch"] == _ids(records)[branch]
    )


def _first_event_of(branch: str) -> Pick:
    return lambda records, r: r["type"] == "event" and r["branch"] == _ids(records)[branch]


def _kept_from(records: list[dict[str, Any]], name: str) -> int:
    return next(r["kept_from"] for r in records if _horizon_of(name)(records, r))


def _base_entry(records: list[dict[str, Any]], r: dict[str, Any]) -> bool:
    """An entry of ``run`` kept below its horizon (it has no commit)."""
    return (
        r["type"] == "entry"
        and r["branch"] == _ids(records)["run"]
        and r["version"] < _kept_from(records, "run")
    )


def _base_list(records: list[dict[str, Any]], r: dict[str, Any]) -> bool:
    return _base_entry(records, r) and bool(r.get("arrays"))


def _shorter_list(records: list[Any], r: dict[str, Any]) -> None:
    (path, array, length), *others = r["arrays"]
    r["arrays"] = [[path, array, length - 1], *others]


def _base_event(records: list[dict[str, Any]], r: dict[str, Any]) -> bool:
    """An event of ``run`` below its horizon (a branch with forks keeps its log)."""
    return (
        r["type"] == "event"
        and r["branch"] == _ids(records)["run"]
        and r["version"] < _kept_from(records, "run")
    )


def _commit_of(name: str, nth: int) -> Pick:
    def pick(records: list[dict[str, Any]], r: dict[str, Any]) -> bool:
        own = [c for c in records if c["type"] == "commit" and c["branch"] == _ids(records)[name]]
        return r is own[nth]

    return pick


def _clock(records: list[dict[str, Any]], r: dict[str, Any]) -> int:
    return int(records[0]["clock"])


def _refused(records: list[dict[str, Any]], match: str, line: int, where: Path) -> None:
    with rewinddb.open(where) as target:
        with pytest.raises(rewinddb.ImportFormatError, match=match) as info:
            target.import_jsonl([orjson.dumps(r) + b"\n" for r in records])
        assert info.value.code == "invalid.import"
        assert info.value.details["line"] == line, info.value
        assert str(info.value).startswith(f"[invalid.import] line {line}: ")
        assert target.version == 0 and target.branches.names() == ["default"]
        assert target.kv.keys() == [] and len(target.events) == 0
        conn = target._engine.conn
        for table in ("rewind_horizons", "rewind_entries", "rewind_events", "rewind_seqs"):
            assert conn.fetchone(f"SELECT count(*) FROM {table}")[0] == 0, table


def _edited(
    exported: list[dict[str, Any]], pick: Pick, change: Callable[[list[Any], dict[str, Any]], Any]
) -> tuple[list[dict[str, Any]], int]:
    """A copy of the records with the first one ``pick`` chooses changed by ``change``
    (it may return "drop" or "twice"), the end record's counts made to agree; and that
    record's line number."""
    records = [dict(r) for r in exported]
    at = next(i for i, r in enumerate(records) if pick(records, r))
    outcome = change(records, records[at])
    kind = records[at]["type"]
    counts = dict(records[-1]["counts"])
    if outcome == "drop":
        del records[at]
        counts[kind] -= 1
    elif outcome == "twice":
        records.insert(at, dict(records[at]))
        counts[kind] += 1
        at += 1
    records[-1] = {**records[-1], "counts": counts}
    return records, at + 1


def _set(**fields: Any) -> Callable[[list[Any], dict[str, Any]], None]:
    def change(records: list[Any], r: dict[str, Any]) -> None:
        r.update({k: v(records, r) if callable(v) else v for k, v in fields.items()})

    return change


def _drop(records: list[Any], r: dict[str, Any]) -> str:
    return "drop"


def _twice(records: list[Any], r: dict[str, Any]) -> str:
    return "twice"


def _other_digest(records: list[Any], r: dict[str, Any]) -> str:
    return "0" * 64 if r["hash"] != "0" * 64 else "1" * 64


@pytest.mark.parametrize(
    ("pick", "change", "match", "where"),
    [
        (_erased_entry, _set(digest="abc"), "'digest' must be a sha256", "here"),
        (_erased_entry, _set(digest=lambda rs, r: r["digest"].upper()), "'digest' must", "here"),
        (_erased_entry, _set(value="back"), "keeps no value and no trigger", "here"),
        (_erased_entry, _set(trigger="init"), "keeps no value and no trigger", "here"),
        (_erased_entry, _set(erased_at=lambda rs, r: _clock(rs, r) + 1), "'erased_at'", "here"),
        (_erased_entry, _set(erased_at=lambda rs, r: r["version"] - 1), "'erased_at'", "here"),
        (_erased_entry, _set(erased_at=None), "'erased_at' must be an integer", "here"),
        (_erased_entry, _set(kind="json", value=1), "has no digest", "here"),
        (_json_entry, _set(erased_at=5), "has no digest and no erased_at", "here"),
        (_erased_event("run"), _set(payload={"text": "back"}), "has no payload", "here"),
        (
            _erased_event("run"),
            _set(erased_at=lambda rs, r: _clock(rs, r) + 1),
            "'erased_at'",
            "here",
        ),
        (_erased_event("run"), _set(erased_at=1), "before it was appended", "here"),
        (_erased_event("run"), _set(hash="not a hash"), "'hash' must be a sha256", "here"),
        (_erased_event("run"), _set(hash=_other_digest), "broken hash chain", "next run event"),
        (_erased_event("later"), _set(erased_at=1), "erased together", "here"),
        (_erased_event("later"), _set(erased_at=None, payload={"i": 4}), "broken hash", "here"),
        (
            _horizon_of("run"),
            _set(kept_from=lambda rs, r: _clock(rs, r) + 1),
            "'kept_from'",
            "here",
        ),
        (
            _horizon_of("run"),
            _set(
                kept_from=lambda rs, r: next(
                    b["forked_at"] for b in rs if b.get("id") == r["branch"]
                )
            ),
            "is not a version of branch 'run' \\(after its fork point",
            "here",
        ),
        (
            _horizon_of("run"),
            _set(
                kept_from=lambda rs, r: (
                    next(b["forked_at"] for b in rs if b.get("name") == "kid") + 1
                )
            ),
            "where branch 'kid' forks from 'run'",
            "here",
        ),
        (_horizon_of("run"), _set(rows_hash="0" * 64), "do not match its rows_hash", "here"),
        (_horizon_of("run"), _set(rows_hash=None), "'rows_hash' must be a sha256", "here"),
        (_horizon_of("run"), _set(policy=""), "'policy' must say", "here"),
        (_horizon_of("run"), _set(policy=5), "'policy'", "here"),
        (_horizon_of("run"), _set(pruned_at=2**62), "'pruned_at' .* in the future", "here"),
        (_horizon_of("run"), _set(previous_hash="zz"), "'previous_hash' must be a sha256", "here"),
        (_horizon_of("run"), _set(branch=1), "'default' branch's history is never pruned", "here"),
        (_horizon_of("run"), _set(branch=99), "branch id 99", "here"),
        (_horizon_of("run"), _twice, "has two horizons", "here"),
        (_horizon_of("run"), _drop, "not a commit of this record's branch", "first base row"),
        (_horizon_of("lg/a"), _set(first_event=None), "go together", "here"),
        (_horizon_of("lg/b"), _set(first_event=1), "'first_event' 1 is not after", "here"),
        (_horizon_of("lg/a"), _set(first_event=0, event_hash=None), "go together", "here"),
        (
            _horizon_of("lg/a"),
            _set(first_event=lambda rs, r: r["first_event"] + 1),
            "broken hash chain: event .* of branch 'lg/a'",
            "first lg/a event",
        ),
        (
            _horizon_of("lg/a"),
            _set(event_hash="0" * 64),
            "broken hash chain: event .* of branch 'lg/a'",
            "first lg/a event",
        ),
        (
            _horizon_of("lg/a"),
            _set(kept_from=lambda rs, r: r["kept_from"] + 1),
            "is before its branch's horizon",
            "first lg/a commit",
        ),
        (_base_entry, _drop, "do not match its rows_hash", "run horizon"),
        (_base_entry, _twice, "two entries below its branch's horizon", "here"),
        (
            _base_entry,
            _set(value="edited", arrays=None),
            "do not match its rows_hash",
            "run horizon",
        ),
        (_base_list, _shorter_list, "do not match its rows_hash", "run horizon"),
        (_base_event, _set(ts=0), "is not the time of a commit", "here"),
    ],
)
def test_a_tampered_file_is_refused_whole(
    tmp_path: Path, exported: list[dict[str, Any]], pick: Pick, change: Any, match: str, where: str
) -> None:
    records, line = _edited(exported, pick, change)
    if where != "here":
        ids = _ids(records)
        lines = {
            "run horizon": lambda r: _horizon_of("run")(records, r),
            "first base row": lambda r: (
                r["type"] == "entry"
                and r["branch"] == ids["run"]
                and r["version"] < _kept_from(exported, "run")
            ),
            "next run event": lambda r: (
                r["type"] == "event"
                and r["branch"] == ids["run"]
                and r["sequence"] == records[line - 1]["sequence"] + 1
            ),
            "first lg/a event": lambda r: _first_event_of("lg/a")(records, r),
            "first lg/a commit": lambda r: _commit_of("lg/a", 0)(records, r),
        }
        line = next(i for i, r in enumerate(records, 1) if lines[where](r))
    _refused(records, match, line, tmp_path / "target")


def test_an_erased_event_far_from_its_neighbours_is_refused(
    tmp_path: Path, exported: list[dict[str, Any]]
) -> None:
    """An erased event keeps its hash, so only its place vouches for it: a sequence out of
    place breaks the chain at it."""
    records, line = _edited(
        exported, _erased_event("run"), _set(sequence=lambda rs, r: r["sequence"] + 1)
    )
    _refused(records, "broken hash chain", line, tmp_path / "target")


def test_a_tampered_file_leaves_a_postgresql_target_unchanged(
    exported: list[dict[str, Any]], postgres_url: str
) -> None:
    records, _ = _edited(exported, _horizon_of("run"), _set(rows_hash="0" * 64))
    with rewinddb.open(postgres_url) as target:
        with pytest.raises(rewinddb.ImportFormatError, match="rows_hash"):
            target.import_jsonl([orjson.dumps(r) + b"\n" for r in records])
        assert target.version == 0 and target.branches.names() == ["default"]
        conn = target._engine.conn
        assert conn.fetchone("SELECT count(*) FROM rewind_horizons")[0] == 0
        target.import_jsonl([orjson.dumps(r) + b"\n" for r in exported])
        assert target.verify().ok
        assert target.at("run").kv.get("step") == 6
        with pytest.raises(rewinddb.HistoryUnavailableError, match=re.escape(REASON)):
            target.at("run").kv.get("step", as_of=_kept_from(exported, "run") - 1)
        assert target.kv.keys(as_of=datetime.now(timezone.utc))  # reads go on at now


def test_events_a_merge_carried_before_their_first_home_was_pruned_import(
    tmp_path: Path,
) -> None:
    """default holds copies of b's events; ``prune`` then cut the originals from b: the
    copies name events the file no longer has, and still import (they were refused)."""
    with rewinddb.open(tmp_path / "a") as db:
        db.kv.put("x", 0)
        db.branches.fork("default", "b")
        for i in range(5):
            db.at("b").events.append("e", {"i": i})
            db.at("b").kv.put("y", i)
        db.branches.merge("b", "default", events="append")
        db.prune("b", keep_last=1)
        exported = io.BytesIO()
        db.export_jsonl(exported)
        carried = [(item.event.payload, item.event.origin) for item in db.events.list()]
        kept = [item.event.payload for item in db.at("b").events.list()]
    with rewinddb.open(tmp_path / "b") as copy:
        copy.import_jsonl(exported.getvalue().splitlines(keepends=True))
        assert [(item.event.payload, item.event.origin) for item in copy.events.list()] == carried
        assert [item.event.payload for item in copy.at("b").events.list()] == kept
        assert copy.verify().ok
