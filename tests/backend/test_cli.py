"""The rewinddb command: branches, log, show, diff, story, each with --json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import rewinddb
from rewinddb.cli import main


@pytest.fixture
def agent(db_path: Path) -> Path:
    with rewinddb.open(db_path) as db:
        db.kv.put("task", "t")
        db.json.set("portfolio", "$", {"stocks": 60, "bonds": 40})
        db.branches.fork("default", "run-1")
        run = db.at("run-1")
        run.events.append("tool.call", {"tool": "read"})
        run.json.set("portfolio", "$.stocks", 20)
        run.events.append("run.end", {"score": 90})
    return db_path


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_branches(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "branches", str(agent))
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == ["branch", "default", "run-1"]
    code, out, _ = _cli(capsys, "branches", str(agent), "--json")
    data = json.loads(out)
    assert [(b["name"], b["parent"], b["forked_at"]) for b in data] == [
        ("default", None, 0),
        ("run-1", "default", 2),
    ]


def test_log(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "log", str(agent), "--branch", "run-1")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["seq", "0", "v3", "tool.call"]
    assert lines[1].split()[:4] == ["seq", "1", "v5", "run.end"]
    _, out, _ = _cli(capsys, "log", str(agent), "--branch", "run-1", "--json", "--as-of", "4")
    assert [(e["sequence"], e["version"], e["payload"]) for e in json.loads(out)] == [
        (0, 3, {"tool": "read"})
    ]


def test_log_hints_at_other_branches_only_when_default_has_no_events(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Events a filter left out are no reason to say ``default`` has none; an empty
    ``--branch`` is a bad name, not ``default``."""
    with rewinddb.open(agent) as db:
        db.events.append("chat", {"x": 1})
    for filtered in (["--type", "nope"], ["--as-of", "0"]):
        assert _cli(capsys, "log", str(agent), *filtered) == (0, "", "")
    assert _cli(capsys, "log", str(agent))[1].startswith("seq 0 ")
    code, out, err = _cli(capsys, "log", str(agent), "--branch", "")
    assert (code, out) == (1, "") and "branch" in err


def test_show(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "show", str(agent), "--branch", "run-1", "--as-of", "3")
    assert code == 0
    assert 'portfolio = {"bonds":40,"stocks":60}' in out
    assert "[events] 1" in out
    _, out, _ = _cli(capsys, "show", str(agent), "--branch", "run-1", "--json")
    data = json.loads(out)
    assert data["json"]["portfolio"] == {"bonds": 40, "stocks": 20}
    assert (data["kv"], data["version"], data["events"]) == ({"task": "t"}, 5, 2)


def test_diff(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "diff", str(agent), "default", "run-1")
    assert code == 0
    assert "~ json 'portfolio' $.stocks: 60 -> 20" in out
    _, out, _ = _cli(capsys, "diff", str(agent), "run-1", "run-1", "--as-of-a", "3", "--json")
    data = json.loads(out)
    assert data["counts"] == {"added": 1, "removed": 0, "changed": 1}


def test_errors_are_one_clear_line(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "log", str(agent), "--branch", "nope")
    assert code == 1
    assert err.strip() == (
        "rewinddb: error: [not_found.engine.branch] branch 'nope' does not exist (or was deleted)"
    )
    code, _, err = _cli(capsys, "show", str(agent), "--branch", "run-1", "--as-of", "1")
    assert code == 1 and "history_unavailable" in err
    code, _, err = _cli(capsys, "branches", str(agent.parent / "missing"))
    assert code == 1 and "not_found.database" in err
    assert not (agent.parent / "missing").exists()
    with pytest.raises(SystemExit) as exit_info:
        main(["show", str(agent), "--as-of", "yesterday"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["show", str(agent), "--as-of", "2026-01-02T10:00:00"])
    assert exit_info.value.code == 2
    assert "has no timezone: add one, as in 2026-01-02T10:00:00Z" in capsys.readouterr().err


def test_story_lists_the_attempts_and_tells_one(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(capsys, "story", str(agent))
    assert code == 0
    assert out.splitlines() == [
        "default  (branch, open)",
        "run-1  (attempt, finished)",
        "  from     fork of default at version 2",
        '  outcome  {"score":90}',
    ]
    code, out, _ = _cli(capsys, "story", str(agent), "run-1")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "attempt run-1 - finished" and "steps (5 steps)" in lines
    steps = lines[lines.index("steps (5 steps)") + 1 :]
    assert [line.split()[1] if "----" not in line else "fork" for line in steps] == [
        "wrote",
        "wrote",
        "fork",
        "tool.call",
        "wrote",
        "run.end",
    ]
    assert steps[0].endswith("v1 (on default)")
    _, out, _ = _cli(capsys, "story", str(agent), "run-1", "--json")
    told = json.loads(out)
    assert told["summary"]["status"] == "finished" and told["steps"]["total"] == 5
    _, out, _ = _cli(capsys, "story", str(agent), "--json")
    rows = json.loads(out)
    assert [row["branch"]["name"] for row in rows] == ["default", "run-1"]
    assert rows[1]["summary"]["fork"]["label"] == "fork of default at version 2"


def test_story_of_an_unknown_attempt_says_how_to_list_them(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "story", str(agent), "nope")
    assert code == 1 and not out
    assert err.strip() == (
        "rewinddb: error: [not_found.engine.branch] no attempt or branch is called 'nope'; "
        "`rewinddb story PATH` lists them"
    )


def test_the_installed_command_runs(agent: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "rewinddb", "branches", str(agent), "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(result.stdout)[1]["name"] == "run-1"


def test_the_cli_never_writes(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (agent / "rewind.sqlite3").read_bytes()
    for args in (["branches"], ["log"], ["show"], ["diff", "default", "run-1"]):
        _cli(capsys, args[0], str(agent), *args[1:])
    assert (agent / "rewind.sqlite3").read_bytes() == before
