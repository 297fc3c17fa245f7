"""``rewinddb demo``: a small database worth exploring.

It holds the seed tutorial's three attempts at one task (each a branch, the best one
merged back), and a richer research run: dozens of events with nested JSON state, a
retry forked from a mid-run event, a fork of that fork, and a merge back. Everything is
deterministic (no model, no network), so the same command always builds the same history.
"""

from __future__ import annotations

import os
from pathlib import Path

from .database import Database
from .database import open as open_database
from .errors import RewindError

TASK = "reduce the portfolio's risk"
STRATEGIES = {"conservative": 20, "balanced": 50, "aggressive": 85}
SOURCES = ["arxiv", "wiki", "blog", "docs", "forum", "news"]


def build_demo(path: str | os.PathLike[str]) -> Database:
    """Create the demo database in the new (or empty) directory ``path`` (or at a
    ``postgresql://`` URL with no history yet) and return it open. Refuses a database
    that already has history (``demo.exists``)."""
    target = path if isinstance(path, str) and "://" in path else Path(path)
    if isinstance(target, Path) and (target / "rewind.sqlite3").exists():
        raise RewindError(
            f"{target} already holds a database; give a new directory", code="demo.exists"
        )
    db = open_database(target)
    if db.version:
        db.close()
        raise RewindError(f"{db.path} already has history", code="demo.exists")
    try:
        _portfolio_attempts(db)
        _research_run(db)
    except BaseException:
        db.close()
        raise
    return db


def _portfolio_attempts(db: Database) -> None:
    """The seed tutorial: three attempts at one task, the best merged into default."""
    db.kv.put("task", TASK)
    db.json.set("portfolio", "$", {"stocks": 60, "bonds": 40})
    scores = {}
    for number, (strategy, stocks) in enumerate(STRATEGIES.items(), start=1):
        name = f"run-{number}"
        db.branches.fork("default", name)
        work = db.at(name)
        work.events.append("tool.call", {"tool": "read", "key": "portfolio"})
        proposal = {"stocks": stocks, "bonds": 100 - stocks}
        score = 100 - abs(stocks - 30)
        work.events.append("tool.call", {"tool": "write", "value": proposal})
        work.json.set("portfolio", "$", proposal)
        work.kv.put("score", str(score))
        work.events.append("run.end", {"score": score, "strategy": strategy})
        scores[name] = score
    db.branches.merge(max(scores, key=lambda name: scores[name]), "default", events="append")


def _research_run(db: Database) -> None:
    """A longer agent run with nested state, a retry fork, a fork of it, and a merge."""
    db.branches.fork("default", "research")
    run = db.at("research")
    run.state.set("phase", "plan", trigger="start")
    run.json.set(
        "notebook",
        "$",
        {"question": "Which index funds have the lowest fees?", "sources": [], "findings": {}},
    )
    run.events.append("run.start", {"question": "Which index funds have the lowest fees?"})
    for step in range(24):
        source = SOURCES[step % len(SOURCES)]
        with run.transaction(trigger=f"step {step}"):
            run.events.append(
                "tool.call", {"tool": "search", "query": f"index fund fees {source}", "step": step}
            )
            run.json.set("notebook", f"$.sources[{step}]", {"name": source, "rank": step % 5})
            if step % 3 == 2:
                run.json.set(
                    "notebook",
                    f"$.findings.f{step}",
                    {"fund": f"FUND-{step:02d}", "fee_bps": 3 + step % 7, "ok": step % 2 == 0},
                )
                run.events.append(
                    "note", {"text": f"fund FUND-{step:02d} charges {3 + step % 7} bps"}
                )
        if step == 8:
            run.state.set("phase", "read", trigger="enough sources")
    run.state.set("phase", "write", trigger="draft")
    run.kv.put("draft", "Low-fee index funds: FUND-02, FUND-08, FUND-14.")
    run.events.append("run.end", {"answer": "FUND-02", "confidence": 0.62})

    # The reviewer rewinds to step 9's search and retries with a stricter filter.
    retry_from = next(
        item.event.sequence
        for item in run.events.list(event_type="tool.call")
        if item.event.payload.get("step") == 9
    )
    db.branches.fork("research", "research-retry", at_event=retry_from)
    retry = db.at("research-retry")
    retry.state.set("phase", "filter", trigger="stricter filter")
    for step in range(6):
        with retry.transaction(trigger=f"filter {step}"):
            retry.events.append("tool.call", {"tool": "filter", "max_fee_bps": 5, "pass": step})
            retry.json.set("notebook", f"$.findings.strict{step}", {"kept": 6 - step})
    db.branches.fork("research-retry", "research-retry-2")
    second = db.at("research-retry-2")
    second.events.append("tool.call", {"tool": "rank", "by": "fee"})
    second.kv.put("draft", "Lowest fees: FUND-08 (3 bps).")
    second.events.append("run.end", {"answer": "FUND-08", "confidence": 0.81})
    db.branches.merge("research-retry-2", "research-retry", events="append")
