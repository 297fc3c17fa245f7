"""Damaged and tampered database files: every public read either answers or raises a
``RewindError`` (``corrupt...`` when the file is damaged), the CLI prints one line and
exits non-zero, the explorer answers an error page, and nothing hangs or eats memory.

The corpus starts from one real database holding every kind of row (forks of forks, kv,
json and state writes, deletions, a list long enough for shared arrays, events, a merge
that carried events, a deleted branch), then damages a copy of it per case with plain
``sqlite3``: each column of each table gets NULL, text, out-of-range and dangling
values (garbage bytes in BLOBs), each table loses its rows or is dropped, the file is
truncated or gets garbage pages, or is replaced by another application's SQLite file.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import rewinddb
from rewinddb import _schema
from rewinddb.cli import main as cli_main

DB_FILE = "rewind.sqlite3"
BRANCHES = ("default", "run-1", "run-2", "gone")
PAGE = 4096

# -- the database every damaged copy starts from ---------------------------------------


def build(directory: Path) -> None:
    """A database with a row of every kind in every table."""
    with rewinddb.open(directory) as db:
        db.kv.put("a", {"n": 1}, trigger="t0", message="first")
        db.kv.put("b", "bee")
        db.kv.put("raw", b"\x00\x01bytes")
        db.json.set("doc", "$", {"items": [1, 2], "name": "x"})
        db.state.set("phase", "plan", "start")
        db.events.append("tool.call", {"tool": "read"})
        db.events.append("tool.result", {"ok": True})
        # A list long enough to be stored as shared arrays (rewind_seqs / seq_items).
        items = [{"i": i, "text": "x" * 500} for i in range(12)]
        db.json.set("big", "$", {"log": items})
        db.json.set("big", "$.log", [*items, {"i": 12, "text": "y" * 500}])
        db.kv.delete("b")
        db.branches.fork("default", "run-1")
        run = db.at("run-1")
        run.kv.put("a", {"n": 2})
        run.json.set("doc", "$.items[2]", 3)
        run.state.set("phase", "act", "go")
        run.events.append("tool.call", {"tool": "write"})
        db.branches.fork("run-1", "run-2")
        deep = db.at("run-2")
        deep.kv.put("c", [1, 2, 3])
        deep.events.append("done", {"by": "run-2"})
        db.branches.fork("default", "gone")
        db.at("gone").kv.put("g", 1)
        db.branches.delete("gone")
        db.kv.put("after", 1)
        db.branches.merge("run-1", "default", strategy="source", events="append")
        # A branch whose oldest history retention removed (rewind_horizons), an erased
        # value and an erased event.
        db.branches.fork("default", "kept")
        kept = db.at("kept")
        for n in range(4):
            kept.kv.put("k", n)
            kept.events.append("step", {"n": n})
        db.prune("kept", keep_last=2)
        db.kv.put("erased", {"secret": 1})
        db.erase_key("kv", "erased")
        kept.events.erase(kept.events.length() - 1)
    with sqlite3.connect(directory / DB_FILE) as conn:
        for table in (
            "rewind_seqs",
            "rewind_seq_items",
            "rewind_events",
            "rewind_commits",
            "rewind_horizons",
        ):
            count = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            assert count, f"the base database has no row in {table}"
        merges = conn.execute(
            "SELECT count(*) FROM rewind_commits WHERE merge_branch_id IS NOT NULL"
        ).fetchone()[0]
        assert merges
    conn.close()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("damaged") / "base"
    build(directory)
    assert not (directory / f"{DB_FILE}-wal").exists()
    return directory


# -- the damages -----------------------------------------------------------------------


@dataclass(frozen=True)
class Damage:
    name: str
    apply: Callable[[Path], None]
    #: Run in a subprocess under a memory limit and a timeout (it used to loop forever).
    isolated: bool = False


def _sql(*statements: str, relax: str | None = None) -> Callable[[Path], None]:
    """Run statements on the file; ``relax`` drops NOT NULL from that table first, as an
    application that rewrote the schema would."""

    def apply(path: Path) -> None:
        conn = sqlite3.connect(path / DB_FILE, isolation_level=None)
        try:
            if relax is not None:
                conn.execute("PRAGMA writable_schema = ON")
                conn.execute(
                    "UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE name = ?",
                    (relax,),
                )
                conn.execute("PRAGMA writable_schema = OFF")
                conn.close()
                conn = sqlite3.connect(path / DB_FILE, isolation_level=None)
            changed = 0
            for statement in statements:
                before = conn.total_changes
                conn.execute(statement)
                changed += conn.total_changes - before
            assert changed or not any(s.lstrip().upper().startswith("UPDATE") for s in statements)
        finally:
            conn.close()

    return apply


def _truncate(size: int | None, fraction: float = 0.0) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        file = path / DB_FILE
        length = size if size is not None else int(file.stat().st_size * fraction)
        with file.open("r+b") as out:
            out.truncate(length)

    return apply


def _garbage(page: int | None, *, last: bool = False) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        file = path / DB_FILE
        pages = file.stat().st_size // PAGE
        number = pages - 1 if last else page
        assert number is not None and number < pages
        noise = bytes((i * 151 + 7) % 256 for i in range(PAGE))
        with file.open("r+b") as out:
            out.seek(number * PAGE + (100 if number == 0 else 0))
            out.write(noise[: PAGE - (100 if number == 0 else 0)])

    return apply


def _replace_with_other_app(path: Path) -> None:
    file = path / DB_FILE
    file.unlink()
    with sqlite3.connect(file) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO notes (body) VALUES ('hello')")
    conn.close()


def _replace_with_text(path: Path) -> None:
    (path / DB_FILE).write_bytes(b"this is not a database\n" * 400)


def _column_damages() -> Iterator[Damage]:
    """Each column of each table: NULL, text, out-of-range and dangling values."""
    for table in _schema.TABLES:
        name = table.name
        for column in table.columns:
            col = column.name
            where = ""
            if name == "rewind_meta":
                where = f" WHERE key = '{'format' if col == 'value' else 'schema_version'}'"
            relax = name if not column.nullable and not column.primary_key else None
            update = f"UPDATE OR IGNORE {name} SET {col} = {{}}{where}"
            short = f"{name.removeprefix('rewind_')}.{col}"
            values = {"null": "NULL", "text": "'garbage'"}
            if isinstance(column.type, _schema.LargeBinary) or col == "hash":
                values["bytes"] = "x'ff00fe80'"
                values["json"] = "x'7b2261223a'"  # {"a":  (cut short)
            elif name != "rewind_meta" and col not in ("space", "key", "name", "event_type"):
                values["negative"] = "-7"
                values["huge"] = str(2**62)
                values["dangling"] = "987654"
                values["real"] = "1.5"
            else:
                values["integer"] = "42"
                values["not-utf8"] = "CAST(x'61ff' AS TEXT)"  # another program's bytes
            # INTEGER PRIMARY KEY (the rowid): SQLite refuses a non-integer.
            rowid = col == "id" or (name == "rewind_commits" and col == "version")
            for kind, value in values.items():
                if kind in ("null", "text", "real") and rowid:
                    continue
                if kind == "null" and column.primary_key:
                    continue  # WITHOUT ROWID keys are NOT NULL whatever the schema says
                yield Damage(f"{short}={kind}", _sql(update.format(value), relax=relax))


def _damages() -> list[Damage]:
    damages = list(_column_damages())
    for table in _schema.TABLES:
        short = table.name.removeprefix("rewind_")
        damages.append(Damage(f"{short}:rows-deleted", _sql(f"DELETE FROM {table.name}")))
        damages.append(Damage(f"{short}:dropped", _sql(f"DROP TABLE {table.name}")))
    damages += [
        Damage("entries:one-row-deleted", _sql("DELETE FROM rewind_entries WHERE key = 'doc'")),
        Damage("entries:kind=7", _sql("UPDATE rewind_entries SET kind = 7")),
        # One row edited (run-2's only entry of 'c', which its diffs read), so that no
        # other row's damage is what fails the calls.
        *(
            Damage(f"entries:one-{name}", _sql(f"UPDATE rewind_entries SET {edit} WHERE key = 'c'"))
            for name, edit in (
                ("kind=9", "kind = 9"),
                ("kind=bytes", "kind = x'01'"),
                ("space=zz", "space = 'zz'"),
                ("key-with-nul", "key = 'c' || char(0) || 'x'"),
                ("key-empty", "key = ''"),
                ("version=text", "version = 'v'"),
            )
        ),
        Damage(
            "seq_items:one-item-deleted",
            _sql("DELETE FROM rewind_seq_items WHERE idx = 3"),
        ),
        Damage("events:one-deleted", _sql("DELETE FROM rewind_events WHERE sequence = 1")),
        Damage(
            "events:payload-edited",
            _sql("UPDATE rewind_events SET payload = CAST('{\"ok\":false}' AS BLOB)"),
        ),
        Damage(
            "commits:merge-deleted",
            _sql("DELETE FROM rewind_commits WHERE merge_branch_id IS NOT NULL"),
        ),
        Damage(
            "branches:default-deleted",
            _sql("UPDATE rewind_branches SET deleted_at = 1 WHERE name = 'default'"),
        ),
        Damage(
            "branches:parent-is-self",
            _sql("UPDATE rewind_branches SET parent_id = id WHERE name = 'run-1'"),
            isolated=True,
        ),
        Damage(
            "branches:parent-cycle",
            _sql(
                "UPDATE rewind_branches SET parent_id = "
                "(SELECT id FROM rewind_branches WHERE name = 'run-2') WHERE name = 'default'"
            ),
            isolated=True,
        ),
        Damage(
            "seqs:base-is-self",
            _sql("UPDATE rewind_seqs SET base_id = id, base_len = 1000"),
            isolated=True,
        ),
        Damage(
            "seqs:base-cycle",
            _sql(
                "UPDATE rewind_seqs SET base_id = (SELECT max(id) FROM rewind_seqs), "
                "base_len = 1000",
                "UPDATE rewind_seqs SET base_id = (SELECT min(id) FROM rewind_seqs) "
                "WHERE id = (SELECT max(id) FROM rewind_seqs)",
            ),
            isolated=True,
        ),
        Damage(
            "meta:schema=abc",
            _sql("UPDATE rewind_meta SET value = 'abc' WHERE key = 'schema_version'"),
        ),
        Damage(
            "meta:schema=999",
            _sql("UPDATE rewind_meta SET value = '999' WHERE key = 'schema_version'"),
        ),
        Damage(
            "meta:schema=-1",
            _sql("UPDATE rewind_meta SET value = '-1' WHERE key = 'schema_version'"),
        ),
        Damage(
            "meta:clock_floor=abc", _sql("INSERT INTO rewind_meta VALUES ('clock_floor', 'abc')")
        ),
        Damage("meta:format-deleted", _sql("DELETE FROM rewind_meta WHERE key = 'format'")),
        Damage("file:zero-bytes", _truncate(0)),
        Damage("file:truncated-50", _truncate(50)),
        Damage("file:truncated-1-page", _truncate(PAGE)),
        Damage("file:truncated-3-pages", _truncate(3 * PAGE)),
        Damage("file:truncated-half", _truncate(None, 0.5)),
        Damage("file:truncated-odd", _truncate(None, 0.77)),
        Damage("file:garbage-header", _garbage(0)),
        # (Page 2 of a file with incremental vacuum is its pointer map, which reads do
        # not use: the first table page after it.)
        Damage("file:garbage-page-3", _garbage(2)),
        Damage("file:garbage-page-5", _garbage(4)),
        Damage("file:garbage-last-page", _garbage(None, last=True)),
        Damage("file:other-app", _replace_with_other_app),
        Damage("file:text", _replace_with_text),
    ]
    return damages


DAMAGES = _damages()

#: Damages some call must name with exactly this code.
EXPECTED = {
    "branches:parent-is-self": "corrupt.branches",
    "branches:parent-cycle": "corrupt.branches",
    "branches:default-deleted": "corrupt.branches",
    "branches.parent_id=dangling": "corrupt.branches",
    "branches.forked_at=text": "corrupt.branches",
    "commits.ts=null": "corrupt.commits",
    "entries.body=bytes": "corrupt.entries",
    "entries:kind=7": "corrupt.entries",
    "entries.space=text": "corrupt.entries",
    "entries.space=integer": "corrupt.entries",
    **{
        f"entries:one-{name}": "corrupt.entries"
        for name in ("kind=9", "kind=bytes", "space=zz", "key-with-nul", "key-empty")
    },
    # Left out of every read (text sorts above every version); verify says so.
    "entries:one-version=text": "corrupt.entries",
    "seqs:base-is-self": "corrupt.seqs",
    "seqs:base-cycle": "corrupt.seqs",
    "seq_items:one-item-deleted": "corrupt.seq_items",
    "seq_items.item=json": "corrupt.seq_items",
    "events.payload=bytes": "corrupt.events",
    "events.ts=huge": "corrupt.events",
    "meta:schema=abc": "corrupt.meta",
    "meta:schema=-1": "corrupt.meta",
    "meta:dropped": "invalid.database",
    **{
        f"{table}:dropped": f"corrupt.{table}"
        for table in ("branches", "commits", "entries", "seqs", "seq_items", "events")
    },
    **{
        f"file:{name}": "corrupt"
        for name in ("truncated-1-page", "truncated-3-pages", "truncated-half", "truncated-odd")
    },
    **{f"file:{name}": "corrupt" for name in ("garbage-header", "garbage-page-3")},
    **{f"file:{name}": "corrupt" for name in ("garbage-page-5", "garbage-last-page")},
    **{f"file:{name}": "invalid.database" for name in ("zero-bytes", "other-app", "text")},
}

#: Damages the diff from default to run-2 (the API's and the CLI's), which reads the edited
#: row, must answer with this code: a kind, space or key rewinddb never writes is refused
#: where the diff meets it (it was reported as an ordinary change, or silently left out);
#: a text version is below no version, so no read sees the row, the diff neither.
DIFF_EXPECTED = {
    **{
        f"entries:one-{name}": "corrupt.entries"
        for name in ("kind=9", "kind=bytes", "space=zz", "key-with-nul", "key-empty")
    },
    "entries:one-version=text": "ok",
}

# -- every public read -----------------------------------------------------------------


def _api_calls(db: rewinddb.Database) -> Iterator[tuple[str, Callable[[], Any]]]:
    yield "branches.list", db.branches.list
    yield "db.version", lambda: db.version
    yield "db.stamp", lambda: db.stamp
    yield "commits", db.commits
    yield "commits(run-1)", lambda: db.commits("run-1", limit=5)
    yield "graph", db.graph
    yield "diff(default, run-2)", lambda: db.diff("default", "run-2")
    yield "diff(run-1, default, readable)", lambda: db.diff("run-1", "default", readable=True)
    yield "export_jsonl", lambda: db.export_jsonl(io.BytesIO())
    yield "snapshot", db.snapshot
    if hasattr(db, "verify"):
        yield "verify", db.verify
    for name in BRANCHES:
        yield f"branches.get({name})", lambda name=name: db.branches.get(name)
        yield f"at({name})", lambda name=name: db.at(name)
        view = db.at if name == "default" else None
        del view
        yield from _view_calls(db, name)


def _view_calls(db: rewinddb.Database, name: str) -> Iterator[tuple[str, Callable[[], Any]]]:
    def on(call: Callable[[rewinddb.BranchView], Any]) -> Callable[[], Any]:
        return lambda: call(db.at(name))

    calls: dict[str, Callable[[rewinddb.BranchView], Any]] = {
        "kv.get": lambda v: v.kv.get("a"),
        "kv.get(as_of=3)": lambda v: v.kv.get("raw", as_of=3),
        "kv.items": lambda v: v.kv.items(),
        "kv.keys": lambda v: v.kv.keys(),
        "kv.history": lambda v: v.kv.history("a"),
        "kv.history(limit)": lambda v: v.kv.history("b", limit=1),
        "json.get": lambda v: v.json.get("doc", "$.items[0]"),
        "json.get(big)": lambda v: v.json.get("big"),
        "json.get(big, old)": lambda v: v.json.get("big", as_of=8),
        "json.history": lambda v: v.json.history("big"),
        "state.get": lambda v: v.state.get("phase"),
        "state.get_all": lambda v: v.state.get_all(),
        "state.history": lambda v: v.state.history(),
        "events.list": lambda v: v.events.list(),
        "events.list(search)": lambda v: v.events.list(search="ok", limit=3),
        "events.get(0)": lambda v: v.events.get(0),
        "events.length": lambda v: v.events.length(),
        "events.types": lambda v: v.events.types(),
        "events.verify": lambda v: v.events.verify(),
        "info": lambda v: v.info(),
        "snapshot": lambda v: v.snapshot(),
        "blame": lambda v: v.blame(),
        "key_history": lambda v: v.key_history("json", "big", readable=True),
        "view.diff": lambda v: v.diff(1),
    }
    for label, call in calls.items():
        yield f"{name}: {label}", on(call)


CLI_COMMANDS = (
    ["branches"],
    ["branches", "--json"],
    ["log", "--branch", "run-2"],
    ["show", "--branch", "run-1"],
    ["show", "--branch", "default", "--as-of", "4"],
    ["diff", "default", "run-2"],
    ["export", "-o", "{out}"],
    ["migrate"],
)

WEB_PAGES = (
    "/",
    "/.json",
    "/branches/default",
    "/branches/run-2",
    "/branches/run-1/timeline.json",
    "/branches/default/events/0",
    "/branches/run-1/keys/a",
    "/compare?a=default&b=run-2",
)


@dataclass
class Outcome:
    """What the calls on one damaged copy did: ``raw`` lists the ones that broke the rule."""

    raw: list[str]
    codes: dict[str, str]


def _record(outcome: Outcome, label: str, call: Callable[[], Any]) -> bool:
    try:
        call()
    except rewinddb.RewindError as error:
        outcome.codes[label] = error.code
        return False
    except Exception as error:  # the rule: never anything but a RewindError
        outcome.raw.append(f"{label}: {type(error).__module__}.{type(error).__name__}: {error}")
        return False
    outcome.codes[label] = "ok"
    return True


def exercise(path: Path, scratch: Path) -> Outcome:
    """Run every public read, the CLI and the explorer on the database at ``path``."""
    outcome = Outcome([], {})
    opened: list[rewinddb.Database] = []
    if _record(outcome, "open", lambda: opened.append(rewinddb.open(path, create=False))):
        db = opened[0]
        try:
            for label, call in _api_calls(db):
                _record(outcome, label, call)
        finally:
            db.close()
    _record(outcome, "open(readonly)", lambda: rewinddb.open(path, readonly=True).close())
    for argv in CLI_COMMANDS:
        args = [part.format(out=scratch / "out.jsonl") for part in argv]
        _cli(outcome, [args[0], str(path), *args[1:]])
    _web(outcome, path)
    return outcome


def _cli(outcome: Outcome, argv: list[str]) -> None:
    label = f"cli {' '.join(argv[:1] + argv[2:])}"
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            status = cli_main(argv)
    except Exception as error:
        outcome.raw.append(f"{label}: {type(error).__name__}: {error}")
        return
    message = stderr.getvalue().strip()
    if status == 0:
        outcome.codes[label] = "ok"
        return
    lines = message.splitlines()
    if len(lines) != 1 or not lines[0].startswith("rewinddb: error: [") or "Traceback" in message:
        outcome.raw.append(f"{label}: exit {status} with {message!r}")
    outcome.codes[label] = (
        lines[0].split("]")[0].removeprefix("rewinddb: error: [") if lines else ""
    )


def _web(outcome: Outcome, path: Path) -> None:
    from fastapi.testclient import TestClient

    from rewinddb.web import create_app

    apps: list[Any] = []
    if not _record(outcome, "web create_app", lambda: apps.append(create_app(path))):
        return
    with TestClient(apps[0], base_url="http://localhost") as client:
        for page in WEB_PAGES:
            label = f"web {page}"
            try:
                response = client.get(page)
            except Exception as error:
                outcome.raw.append(f"{label}: {type(error).__name__}: {error}")
                continue
            if response.status_code >= 500 and "corrupt" not in response.text:
                outcome.raw.append(f"{label}: {response.status_code} {response.text[:200]!r}")
            ok = response.status_code == 200
            outcome.codes[label] = "ok" if ok else f"http {response.status_code}"


# -- the tests ---------------------------------------------------------------------------


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Fail (instead of hanging the suite) if the block runs longer than ``seconds``."""

    def expired(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _damaged_copy(base: Path, tmp_path: Path, damage: Damage) -> Path:
    copy = tmp_path / "db"
    shutil.copytree(base, copy)
    damage.apply(copy)
    return copy


_ISOLATED = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))
    sys.path.insert(0, sys.argv[3])
    import test_damaged
    outcome = test_damaged.exercise(Path(sys.argv[1]), Path(sys.argv[2]))
    print(json.dumps({"raw": outcome.raw, "codes": outcome.codes}))
    """
)


def _exercise_isolated(path: Path, scratch: Path) -> Outcome:
    """``exercise`` in a subprocess under a 2 GiB address-space limit and a time limit."""
    import json

    env = {**os.environ, "PYTHONWARNINGS": "error"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _ISOLATED, str(path), str(scratch), str(Path(__file__).parent)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return Outcome(["the calls did not finish within 60 s (a loop?)"], {})
    if done.returncode != 0:
        return Outcome([f"the subprocess failed ({done.returncode}): {done.stderr[-2000:]}"], {})
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return Outcome(result["raw"], result["codes"])


@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
def test_damaged_copy_raises_only_rewind_errors(base: Path, tmp_path: Path, damage: Damage) -> None:
    path = _damaged_copy(base, tmp_path, damage)
    if damage.isolated:
        outcome = _exercise_isolated(path, tmp_path)
    else:
        with _deadline(120):
            outcome = exercise(path, tmp_path)
    assert not outcome.raw, "\n".join(outcome.raw)
    if damage.name in EXPECTED:
        assert EXPECTED[damage.name] in outcome.codes.values(), outcome.codes
    if damage.name in DIFF_EXPECTED:
        for label in ("diff(default, run-2)", "cli diff default run-2"):
            assert outcome.codes[label] == DIFF_EXPECTED[damage.name], (label, outcome.codes)


@pytest.mark.parametrize("kind", ["zero-bytes", "empty-sqlite", "other-app"])
@pytest.mark.parametrize("readonly", [False, True])
def test_open_without_create_refuses_a_file_that_holds_no_database(
    tmp_path: Path, kind: str, readonly: bool
) -> None:
    """``create=False`` never turns an empty or foreign ``rewind.sqlite3`` into a new
    database; the file is left as it was."""
    directory = tmp_path / "db"
    directory.mkdir()
    file = directory / DB_FILE
    if kind == "zero-bytes":
        file.write_bytes(b"")
    else:
        with sqlite3.connect(file) as conn:
            if kind == "other-app":
                conn.execute("CREATE TABLE notes (body TEXT)")
            else:
                conn.execute("PRAGMA user_version = 0")
        conn.close()
    before = file.read_bytes()
    with pytest.raises(rewinddb.NotADatabaseError) as info:
        rewinddb.open(directory, create=False, readonly=readonly)
    assert info.value.code == "invalid.database"
    assert str(file) in info.value.message
    assert file.read_bytes() == before
    assert sorted(p.name for p in directory.iterdir()) == [DB_FILE]


def test_the_undamaged_copy_answers_everything(base: Path, tmp_path: Path) -> None:
    """The corpus's calls all succeed on the database before it is damaged."""
    copy = tmp_path / "db"
    shutil.copytree(base, copy)
    outcome = exercise(copy, tmp_path)
    assert not outcome.raw, "\n".join(outcome.raw)
    refused = {label: code for label, code in outcome.codes.items() if code != "ok"}
    assert all(
        label.startswith(("gone", "branches.get(gone)", "at(gone)", "run-")) for label in refused
    ), refused
    assert set(refused.values()) == {"not_found.engine.branch", "history_unavailable"}
