"""How fast the notebook widget follows its slider on a branch with 10,000 events.

Run from the repository root (the notebook extra installed)::

    .venv/bin/python benchmarks/notebook.py [--events 10000] [--moves 200]

The widget is driven without a kernel, as a test would: setting ``slider.value`` runs the
same code a browser's slider move does (read the state as of the event, diff it with the
previous event, render both). The baseline, measured in the same run, is the two reads
alone (``snapshot`` + ``diff``) without any widget or HTML. Target: a move under 100 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import rewinddb
from rewinddb.notebook import explore


def build(path: Path, events: int) -> None:
    """A branch whose every event changes the state a little (a growing chat, a counter)."""
    with rewinddb.open(path) as db:
        db.json.set("plan", "$", {"goal": "reduce risk", "steps": []})
        db.branches.fork("default", "run")
        run = db.at("run")
        for n in range(events):
            with run.transaction():
                run.events.append("tool.call", {"n": n, "tool": "search", "query": f"q{n}"})
                run.kv.put("counter", n)
                if n % 10 == 0:
                    run.json.set("plan", f"$.steps[{n // 10}]", {"n": n, "note": "x" * 40})


def measure(path: Path, moves: int) -> dict[str, float]:
    """Medians (seconds) of a slider move and of the bare reads it needs."""
    with rewinddb.open(path, readonly=True) as db:
        started = time.perf_counter()
        explorer = explore(db, branch="run")
        load = time.perf_counter() - started
        events = [item.event for item in db.at("run").events.list()]
        picks = random.Random(7).sample(range(1, len(events)), moves)
        widget, bare = [], []
        for index in picks:
            started = time.perf_counter()
            explorer.slider.value = index
            widget.append(time.perf_counter() - started)
            event, previous = events[index], events[index - 1]
            started = time.perf_counter()
            db.at("run").snapshot(as_of=event.version)
            db.diff("run", "run", as_of_a=previous.version, as_of_b=event.version)
            bare.append(time.perf_counter() - started)
        explorer.close()
    widget.sort()
    return {
        "load": load,
        "move": statistics.median(widget),
        "move_p95": widget[int(len(widget) * 0.95)],
        "bare": statistics.median(bare),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--moves", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "agent"
        started = time.perf_counter()
        build(path, args.events)
        print(f"built a branch of {args.events:,} events in {time.perf_counter() - started:.1f} s")
        result = measure(path, min(args.moves, args.events - 1))
    ms = {name: seconds * 1000 for name, seconds in result.items()}
    verdict = "PASS" if ms["move"] < 100 else "FAIL"
    print(f"{'figure':48} {'widget':>10} {'bare reads':>11} {'ratio':>6}  target")
    print(f"{'explore(db) on the branch (loads its log)':48} {ms['load']:8.1f} ms")
    print(
        f"{'slider move, median of ' + str(args.moves):48} {ms['move']:8.1f} ms "
        f"{ms['bare']:8.1f} ms {ms['move'] / ms['bare']:6.2f}  < 100 ms: {verdict}"
    )
    print(f"{'slider move, 95th percentile':48} {ms['move_p95']:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
