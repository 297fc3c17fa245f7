# The seed tutorial's "whole program", with only its import changed.
import rewinddb as stratadb


def run_attempt(db, run_id, strategy):
    work = db.at(branch=run_id)

    work.events.append("tool.call", {"tool": "read", "key": "portfolio"})
    portfolio = work.json.get("portfolio")

    proposal, score = policy(strategy, portfolio)
    work.events.append("tool.call", {"tool": "write", "value": proposal})
    work.json.set("portfolio", "$", proposal)
    work.kv.put("score", str(score))

    work.events.append("run.end", {"score": score})
    return score


TASK = "reduce the portfolio's risk"
ATTEMPTS = ["conservative", "balanced", "aggressive"]


def policy(strategy, portfolio):
    """Stand-in for a model call. Returns a proposed change and a score."""
    stocks = {"conservative": 20, "balanced": 50, "aggressive": 85}[strategy]
    risk = abs(stocks - 30)
    return {"stocks": stocks, "bonds": 100 - stocks}, 100 - risk


with stratadb.open("./agent") as db:
    db.kv.put("task", TASK)
    db.json.set("portfolio", "$", {"stocks": 60, "bonds": 40})

    scores = {}
    for i, strategy in enumerate(ATTEMPTS, start=1):
        run_id = f"run-{i}"
        db.branches.fork("default", run_id)
        scores[run_id] = run_attempt(db, run_id, strategy)

    winner = max(scores, key=scores.get)
    db.branches.merge(winner, "default")

    print("scores:", scores)
    print("winner:", winner)
    print("portfolio now:", db.json.get("portfolio"))
    print("branches left:", [b.name for b in db.branches.list()])
