"""The retention and erasure commands (``rewinddb gc``, ``retain``, ``pin``, ``unpin``,
``delete``) and ``import`` into a URL, run as the installed command on real databases."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import rewinddb
from rewinddb.testing import PostgresServer

#: Every test here starts the command as a process (about half a second each).
pytestmark = pytest.mark.slow

SECRET = "S3CRET-7f3a9c-of-the-tmp-branch"
#: What a gc report counts (the rest is timing and file sizes).
COUNTED = ("branches", "versions", "entries", "events", "list_items", "bytes", "horizons")


def _run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewinddb", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def _ok(*args: str | Path, cwd: Path | None = None) -> str:
    result = _run(*args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def _json(*args: str | Path) -> Any:
    return json.loads(_ok(*args, "--json"))


def _refused(code: str, *args: str | Path) -> str:
    """Run a command that must fail with ``code``: exit 1, one line, no traceback."""
    result = _run(*args)
    assert result.returncode == 1, (args, result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.startswith(f"rewinddb: error: [{code}] "), (args, result.stderr)
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    return result.stderr


def _files(directory: Path) -> dict[str, bytes]:
    """The bytes of the database's files that hold data: the file and a WAL with frames
    (not SQLite's shared-memory index, a cache every open rewrites, nor an empty WAL,
    which a reader may leave and a writer's close removes)."""
    return {
        path.name: data
        for path in sorted(directory.iterdir())
        if not path.name.endswith("-shm") and (data := path.read_bytes())
    }


def _build(target: str | Path) -> tuple[int, int]:
    """default and three branches: ``lg/a`` with 30 versions of one key, ``keep`` with 4,
    and ``tmp`` (deleted, not purged) holding the secret in each primitive. Returns the
    first and the last version of ``lg/a``."""
    with rewinddb.open(target) as db:
        db.kv.put("task", "t")
        db.branches.fork("default", "lg/a")
        lg = db.at("lg/a")
        first = lg.kv.put("step", 0)
        for step in range(1, 30):
            last = lg.kv.put("step", step)
            if step % 10 == 0:
                lg.events.append("checkpoint", {"step": step})
        db.branches.fork("default", "keep")
        for step in range(4):
            db.at("keep").kv.put("n", step)
        db.branches.fork("default", "tmp")
        tmp = db.at("tmp")
        tmp.kv.put("secret", SECRET)
        tmp.json.set("doc", "$", {"notes": [SECRET, "b", "c"]})
        tmp.events.append("tool.call", {"secret": SECRET})
        db.branches.delete("tmp")
    return int(first), int(last)


def test_a_dry_run_changes_nothing_then_gc_frees_what_it_said(db_path: Path) -> None:
    first, last = _build(db_path)
    kept_point = last - 1
    _ok("retain", db_path, "lg/*", "--keep-last", "5")
    with rewinddb.open(db_path, readonly=True) as db:
        version, branches = db.version, [b.to_dict() for b in db.branches.list()]
    shown = _json("show", db_path, "--branch", "lg/a", "--as-of", kept_point)
    before = _files(db_path)

    text = _ok("gc", db_path, "--dry-run")
    dry = _json("gc", db_path, "--dry-run")
    assert _files(db_path) == before  # not a byte of the file or its WAL changed
    with rewinddb.open(db_path, readonly=True) as db:
        assert db.version == version
        assert [b.to_dict() for b in db.branches.list()] == branches
    assert dry["dry_run"] is True and dry["branches"] == 1  # tmp
    assert dry["versions"] >= 3 + 20 and dry["entries"] >= 2 + 20 and dry["events"] >= 1
    assert dry["bytes"] > len(SECRET) * 3
    assert set(dry["horizons"]) == {"lg/a"} and dry["horizons"]["lg/a"] > first
    assert dry["file_bytes_before"] is None and dry["file_bytes_after"] is None
    lines = text.splitlines()
    assert lines[0].startswith(
        f"would free {dry['versions']} versions, 1 deleted branch, {dry['entries']} entries, "
        f"{dry['events']} events, {dry['list_items']} list items ({dry['bytes']:,} bytes of data)"
    )
    assert re.search(r"; longest write-lock step \d+\.\d ms$", lines[0])
    assert f"  lg/a: would keep its history from version {dry['horizons']['lg/a']}" in lines
    assert lines[-1].startswith("dry run: nothing was changed")

    real = _json("gc", db_path)
    assert {k: real[k] for k in COUNTED} == {k: dry[k] for k in COUNTED}
    assert real["dry_run"] is False
    assert 0 < real["file_bytes_after"] <= real["file_bytes_before"]
    assert real["longest_step_ms"] == pytest.approx(real["longest_step"] * 1000, abs=0.001)

    # What was kept reads as before; what was cut says which retention removed it.
    after = _json("show", db_path, "--branch", "lg/a", "--as-of", kept_point)
    assert after == shown
    error = _refused("history_unavailable", "show", db_path, "--branch", "lg/a", "--as-of", first)
    assert "keep_last=5" in error
    assert _json("show", db_path, "--branch", "keep")["kv"]["n"] == 3  # no policy: untouched
    assert SECRET.encode() not in b"".join(_files(db_path).values())
    assert _ok("verify", db_path).startswith("ok: ")
    again = _json("gc", db_path, "--dry-run")
    assert (again["branches"], again["versions"], again["entries"]) == (0, 0, 0)


def test_the_event_count_at_a_kept_version_survives_gc(db_path: Path) -> None:
    _, last = _build(db_path)
    _ok("retain", db_path, "lg/*", "--keep-last", "5")
    before = _json("show", db_path, "--branch", "lg/a", "--as-of", last - 1)["events"]
    _ok("gc", db_path)
    assert _json("show", db_path, "--branch", "lg/a", "--as-of", last - 1)["events"] == before
    listed = {b["name"]: b["kept_from"] for b in _json("branches", db_path)}
    assert listed == {"default": None, "lg/a": last - 4, "keep": None}
    lines = _ok("branches", db_path).splitlines()
    assert [line.split()[0] for line in lines if "kept from" in line] == ["lg/a"]
    assert lines[2].endswith(f"  (history kept from {last - 4})")


def test_a_version_before_gc_is_still_a_version_after_it(db_path: Path) -> None:
    _build(db_path)  # tmp, deleted, wrote the newest versions
    with rewinddb.open(db_path, readonly=True) as db:
        newest = db.version
    _ok("gc", db_path)
    assert _json("show", db_path, "--as-of", newest)["version"] == newest


def test_the_gc_report_in_text(db_path: Path) -> None:
    _build(db_path)
    out = _ok("gc", db_path, "--vacuum")
    assert re.fullmatch(
        r"freed \d+ versions, 1 deleted branch, \d+ entries, \d+ events?, \d+ list items "
        r"\([\d,]+ bytes of data\); file [\d,]+ -> [\d,]+ bytes; "
        r"longest write-lock step \d+\.\d ms\n",
        out,
    ), out


def test_retain_sets_lists_and_drops_policies(db_path: Path) -> None:
    _build(db_path)
    assert _ok("retain", db_path, "--list").startswith("no retention policies")
    out = _ok("retain", db_path, "lg/*", "--keep-last", "50", "--max-age", "30d")
    assert out.splitlines()[0] == (
        "retain 'lg/*': keep the last 50 versions and versions younger than 30d; "
        "pinned branches kept whole"
    )
    assert _json("retain", db_path, "scratch/*", "--max-age", "90m", "--include-pinned") == {
        "pattern": "scratch/*",
        "keep_last": None,
        "max_age": 5400.0,
        "keep_pinned": False,
    }
    _ok("retain", db_path, "lg/*", "--keep-last", "10")  # a pattern's policy is replaced
    table = _ok("retain", db_path, "--list").splitlines()
    assert [line.split() for line in table] == [
        ["pattern", "keep", "last", "max", "age", "pinned", "branches"],
        ["lg/*", "10", "-", "kept", "whole"],
        ["scratch/*", "-", "90m", "included"],
    ]
    with rewinddb.open(db_path, readonly=True) as db:  # what the API sees
        assert [(p.pattern, p.keep_last, p.max_age, p.keep_pinned) for p in db.retention()] == [
            ("lg/*", 10, None, True),
            ("scratch/*", None, timedelta(minutes=90), False),
        ]
    assert _ok("retain", db_path, "scratch/*", "--drop") == (
        "dropped the retention policy for 'scratch/*'\n"
    )
    assert [p["pattern"] for p in _json("retain", db_path, "--list")] == ["lg/*"]
    _refused("invalid.retention", "retain", db_path, "scratch/*", "--drop")


def test_bad_retention_input_is_refused_and_stores_nothing(db_path: Path) -> None:
    _build(db_path)
    before = _files(db_path)
    for terms in (
        ["lg/*", "--max-age", "30x"],
        ["lg/*", "--max-age", "12"],
        ["lg/*", "--max-age", "1.5d"],
        ["lg/*", "--max-age", "0d"],
        ["lg/*", "--max-age=-5d"],  # in the future
        ["lg/*", "--keep-last", "0"],
        ["lg/*"],  # no terms: a policy that keeps everything
        ["*", "--keep-last", "3"],  # each of these matches default
        ["def*", "--keep-last", "3"],
        ["default", "--max-age", "30d"],
    ):
        error = _refused("invalid.retention", "retain", db_path, *terms)
        assert ("default" in error) == (terms[0] in ("*", "def*", "default")), error
    assert _files(db_path) == before
    assert _json("retain", db_path, "--list") == []
    # Usage mistakes are argparse's: exit 2 with the usage line.
    for usage in (
        [],
        ["lg/*", "--keep-last", "many"],
        ["lg/*", "--drop", "--keep-last", "3"],
        ["lg/*", "--list"],
        ["--list", "--drop"],
    ):
        result = _run("retain", db_path, *usage)
        assert result.returncode == 2 and "usage: rewinddb" in result.stderr, usage
        assert "Traceback" not in result.stderr


def test_pin_unpin_and_delete(db_path: Path) -> None:
    _build(db_path)
    with rewinddb.open(db_path) as db:
        db.branches.fork("default", "lg/b")
        for step in range(10):
            db.at("lg/b").kv.put("step", step)
    assert _json("pin", db_path, "lg/a")["all_pinned"] == ["lg/a"]
    assert "cannot be deleted" in _ok("pin", db_path, "keep")
    _refused("invalid.branch.pinned", "delete", db_path, "keep")
    _refused("invalid.branch.pinned", "delete", db_path, "keep", "--purge")
    _refused("invalid.branch.default", "delete", db_path, "default")
    for command in ("pin", "unpin", "delete"):
        _refused("not_found.engine.branch", command, db_path, "nope")
    _refused("not_found.engine.branch", "pin", db_path, "tmp")  # deleted

    # A policy keeps pinned branches whole, unless it includes them.
    _ok("retain", db_path, "lg/*", "--keep-last", "3")
    assert set(_json("gc", db_path, "--dry-run")["horizons"]) == {"lg/b"}
    _ok("retain", db_path, "lg/*", "--keep-last", "3", "--include-pinned")
    assert set(_json("gc", db_path, "--dry-run")["horizons"]) == {"lg/a", "lg/b"}

    assert _ok("unpin", db_path, "keep") == "unpinned 'keep'\n"
    assert _json("unpin", db_path, "keep")["all_pinned"] == ["lg/a"]  # again: no change
    out = _ok("delete", db_path, "keep")
    assert out.startswith("deleted 'keep'; its rows stay until `rewinddb gc")
    _refused("not_found.engine.branch", "show", db_path, "--branch", "keep")

    with rewinddb.open(db_path) as db:
        db.branches.fork("default", "tmp2")
        db.at("tmp2").kv.put("secret", SECRET + "-2")
    assert (SECRET + "-2").encode() in b"".join(_files(db_path).values())
    purged = _json("delete", db_path, "tmp2", "--purge")
    assert purged["purged"] is True
    assert (purged["removed"]["branches"], purged["removed"]["entries"]) == (1, 1)
    assert (SECRET + "-2").encode() not in b"".join(_files(db_path).values())
    with rewinddb.open(db_path, readonly=True) as db:
        assert [b.name for b in db.branches.list()] == ["default", "lg/a", "lg/b"]
        assert db.branches.pinned() == ["lg/a"]


def test_commands_that_change_a_database_never_create_one(tmp_path: Path) -> None:
    missing = tmp_path / "nothing"
    for args in (
        ["gc"],
        ["gc", "--dry-run"],
        ["retain", "lg/*", "--keep-last", "3"],
        ["retain", "--list"],
        ["pin", "x"],
        ["delete", "x"],
    ):
        _refused("not_found.database", args[0], missing, *args[1:])
    assert not missing.exists()
    (tmp_path / "a-file").write_text("not a database")
    _refused("invalid.database", "gc", tmp_path / "a-file")


def test_gc_on_a_read_only_mount_fails_cleanly(db_path: Path, tmp_path: Path) -> None:
    _build(db_path)
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(db_path), str(readonly)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.decode().strip()}")
    try:
        remounted = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(readonly)], capture_output=True
        )
        if remounted.returncode != 0:
            pytest.skip(f"cannot remount read-only: {remounted.stderr.decode().strip()}")
        before = _files(db_path)
        for args in (["gc"], ["gc", "--dry-run"], ["delete", "lg/a", "--purge"]):
            result = _run(args[0], readonly, *args[1:])
            assert result.returncode == 1 and result.stderr.startswith("rewinddb: error: [")
            assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert _files(db_path) == before
    finally:
        subprocess.run(["umount", str(readonly)], check=True)


def test_gc_retain_and_delete_on_postgresql(postgres: PostgresServer) -> None:
    url = postgres.new_schema()
    readonly = postgres.url_for(postgres.schemas[-1], "default_transaction_read_only=on")
    _build(url)
    _ok("retain", url, "lg/*", "--keep-last", "5")
    dry = _json("gc", url, "--dry-run")
    assert dry["branches"] == 1 and set(dry["horizons"]) == {"lg/a"}

    # A read-only target: refused in one line, nothing removed.
    _refused("storage", "gc", readonly)
    _refused("storage", "retain", readonly, "x/*", "--keep-last", "1")
    _refused("storage", "delete", readonly, "lg/a", "--purge")
    assert [p["pattern"] for p in _json("retain", readonly, "--list")] == ["lg/*"]
    again = _json("gc", url, "--dry-run")
    assert {k: again[k] for k in COUNTED} == {k: dry[k] for k in COUNTED}

    out = _ok("gc", url)
    assert out.startswith(f"freed {dry['versions']} versions, 1 deleted branch, ")
    assert "; file " not in out  # no file to measure on a server
    assert _json("delete", url, "keep", "--purge")["removed"]["branches"] == 1
    with rewinddb.open(url, readonly=True) as db:
        assert [b.name for b in db.branches.list()] == ["default", "lg/a"]
        assert db.at("lg/a").kv.get("step") == 29


def test_import_into_a_postgresql_url(postgres: PostgresServer, tmp_path: Path) -> None:
    source = tmp_path / "source"
    _build(source)
    export = tmp_path / "run.jsonl"
    _run("export", source, "-o", export).check_returncode()
    work = tmp_path / "cwd"
    work.mkdir()
    url = postgres.new_schema()
    result = _run("import", url, export, cwd=work)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("imported ") and url in result.stderr
    assert list(work.iterdir()) == []  # the URL was not taken for a directory
    with rewinddb.open(url, readonly=True) as db:
        assert db.at("lg/a").kv.get("step") == 29
        assert [b.name for b in db.branches.list()] == ["default", "lg/a", "keep"]
    # A failed import into a URL fails in one line, and makes no directory either.
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"not": "an export"}\n')
    result = _run("import", postgres.new_schema(), broken, cwd=work)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("rewinddb: error: [")
    assert list(work.iterdir()) == []
