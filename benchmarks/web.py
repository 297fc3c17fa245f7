"""The web explorer at scale: 1,000 branches, 100,000 events.

Run it from the repository root (the web extra installed)::

    .venv/bin/python benchmarks/web.py                      # full size, built in a temp dir
    .venv/bin/python benchmarks/web.py --db /tmp/web-bench  # build once there, reuse after
    .venv/bin/python benchmarks/web.py --quick              # a smoke run (20 branches)
    .venv/bin/python benchmarks/web.py --db DIR --profile 25  # and cProfile the two targets
    .venv/bin/python benchmarks/web.py --part load          # only the load run (below)
    .venv/bin/python benchmarks/web.py --part thread        # only the LangGraph thread

The database is shaped like agent runs: ``default`` holds a little kv/json state and a
few events; 999 branches fork from it or from each other (some at past versions, some
forks of forks), a few are merged back into their parent, and each appends events and
writes nested JSON state in the same transactions (one transaction per agent step). One
branch, ``long-run``, has 10,000 events. 100,000 events in all.

Every page is requested in process through FastAPI's ``TestClient`` on
``rewinddb.web.create_app(path)`` (no network, no server): the overview ``/`` and its
``/.json`` twin, the first page of the long branch, the event fragment (``HX-Request``)
near the start, middle and end of the long branch, and the compare page of two sibling
branches. Each figure is the median (and 95th percentile) of several requests after a
warm-up, each one a render (the responses the explorer keeps between writes are dropped
before every request). Baselines, measured interleaved in the same run, are raw ``sqlite3`` reads of
the same facts from the database file: for the overview every branch row (commit count,
head, last write, event count) and every event's (branch, version, type); for the
fragment the event, the one before it and the branch's state rows at the event's version
(decoded). ``ratio = web / raw``. Targets: overview < 1 s server-side, an event
fragment on a 10,000-event branch < 50 ms.

The thread run: a LangGraph thread of 1,000 turns (a human question and an AI
answer each: 2,000 messages, 3,000 checkpoints), recorded with ``RewindSaver`` by a
one-node ``MessagesState`` graph, in a database of its own (beside ``--db``, as
``DIR-thread``, when it is given). Requested in process like the pages above: the
thread's page (its newest messages and steps), a step's page (the state as of it, decoded,
and its diff from the step before) near the end and in the middle, a page of earlier
messages (htmx) and the step's JSON twin. Targets: the thread page and a step's page
< 200 ms server-side each. It needs the langgraph extra; without it, it is left out.

The load run: fifty readers while an agent writes. ``rewinddb serve`` runs as its own
process on 127.0.0.1 (only there: the clients never connect anywhere else) on a copy of
a smaller database (50 branches, 10,000 events: an overview costs tens of milliseconds,
not the 0.4 s of the big one), while a separate writer process appends agent steps (an
event, a kv and a JSON write in one transaction) at a steady rate to the branch
``live``. 50 clients, each one connection, send requests back to back for 30 s (and at
most 2,000 each, each with a 30 s timeout): the requests an explorer page open on that
run makes (the version and live-timeline polls, the overview poll with the stamp it last
saw, event fragments, the branch page, a key's history, the overview, a compare page;
``--load-mix light`` leaves out the three that draw the whole graph or two whole logs).
It prints requests/s, p50, p99 and the count of 5xx (and of failed connections), for
``--read-connections 4`` (the baseline: four read connections, the default before the
shared renders) and for the server's default, in that order, the ratio after / before;
then, for each run, the server's CPU time per request and, for each kind of request,
how many were answered and their p50 and p99 (what the clients wait on). Target: p99
< 1 s and no 5xx with the default. The script asserts nothing and exits 0 whatever
the verdicts.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gzip
import io
import math
import os
import platform
import pstats
import random
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
from _report import Report, Target, describe_machine, ms, rate, samples, table
from _report import Row as ReportRow

import rewinddb

try:
    import httpx
    from fastapi.testclient import TestClient

    from rewinddb.web import create_app
except ImportError as missing:  # pragma: no cover - the web extra is not installed
    sys.exit(f"benchmarks/web.py needs the web extra (pip install -e '.[web]'): {missing}")

DB_FILENAME = "rewind.sqlite3"
BIG = "long-run"
HX = {"HX-Request": "true"}
#: TestClient's requests name a host the explorer answers for (it refuses others).
LOCAL = "http://localhost"


@dataclass(frozen=True)
class Sizes:
    """The database to build and how often each page is requested."""

    branches: int = 1_000  # default and the long branch included
    events: int = 100_000  # rows of rewind_events, all branches
    big: int = 10_000  # events on the long branch (its inherited ones included)
    default_events: int = 20
    merges: int = 10
    overview_reps: int = 9
    page_reps: int = 15
    fragment_reps: int = 41
    thread_turns: int = 1_000  # the LangGraph thread's turns (question and answer each)


FULL_RUN = Sizes()
QUICK_RUN = Sizes(
    branches=20,
    events=2_000,
    big=1_000,
    default_events=10,
    merges=2,
    overview_reps=3,
    page_reps=3,
    fragment_reps=5,
    thread_turns=30,
)

TOOLS = ("search", "fetch", "python", "sql", "browser")
WORDS = (
    "plan",
    "check",
    "risk",
    "budget",
    "vendor",
    "report",
    "draft",
    "cite",
    "verify",
    "retry",
    "summary",
    "table",
)


# -- building the database ---------------------------------------------------------------


def split_total(total: int, parts: int, rng: random.Random) -> list[int]:
    """``parts`` random sizes (each at least 1, spread about the mean) summing to ``total``."""
    mean = total / parts
    sizes = [max(1, round(rng.uniform(0.2, 1.8) * mean)) for _ in range(parts)]
    drift = total - sum(sizes)
    index = 0
    while drift:
        step = 1 if drift > 0 else -1
        if sizes[index % parts] + step >= 1:
            sizes[index % parts] += step
            drift -= step
        index += 1
    return sizes


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def run_agent(db: rewinddb.Database, branch: str, events: int, rng: random.Random) -> list[int]:
    """Append ``events`` events to ``branch`` as an agent would: one transaction per step
    (an LLM response, sometimes with a tool result), writing its nested JSON state and a
    kv counter in the same transaction. Returns the versions it committed."""
    view = db.at(branch)
    versions: list[int] = []
    notes = 0
    step = 0
    with view.transaction(trigger="agent.start"):
        view.json.set(
            "run",
            "$",
            {
                "goal": sentence(rng, 6),
                "notes": [],
                "last": None,
                "budget": {"tokens": 0, "usd": 0.0},
            },
        )
    left = events
    while left:
        tool = rng.choice(TOOLS)
        with view.transaction(trigger="agent.step"):
            view.events.append(
                "llm.response",
                {"step": step, "text": sentence(rng, 12), "tokens": rng.randint(50, 900)},
            )
            left -= 1
            if left and rng.random() < 0.25:
                view.events.append(
                    "tool.result",
                    {
                        "step": step,
                        "tool": tool,
                        "ok": rng.random() < 0.9,
                        "rows": rng.randint(0, 50),
                    },
                )
                left -= 1
            view.kv.put("step", step)
            view.json.set(
                "run",
                "$.last",
                {"tool": tool, "args": {"q": sentence(rng, 3), "k": rng.randint(1, 9)}},
            )
            if step % 10 == 0:
                view.json.set(
                    "run",
                    f"$.notes[{notes}]",
                    {"step": step, "note": sentence(rng, 8), "tags": [tool, "auto"]},
                )
                notes += 1
            if step % 25 == 0:
                view.json.set("run", "$.budget", {"tokens": step * 400, "usd": step * 0.002})
        versions.append(db.version)
        step += 1
    return versions


def build(path: Path, sizes: Sizes, seed: int = 7) -> None:
    """The database described in the module docstring, deterministic for one seed."""
    rng = random.Random(seed)
    with rewinddb.open(path) as db:
        with db.transaction(trigger="setup"):
            db.kv.put("config", {"model": "m-large", "temperature": 0.2, "max_steps": 50})
            db.json.set(
                "plan",
                "$",
                {
                    "goal": "reduce vendor risk",
                    "steps": [
                        {"id": i, "title": sentence(rng, 4), "done": False} for i in range(5)
                    ],
                    "owner": {"team": "risk", "contact": {"name": "ops", "slack": "#risk"}},
                },
            )
        versions = {"default": run_agent(db, "default", sizes.default_events, rng)}
        db.branches.fork("default", BIG)
        versions[BIG] = run_agent(db, BIG, sizes.big - sizes.default_events, rng)
        others: list[str] = []
        counts = split_total(sizes.events - sizes.big, sizes.branches - 2, rng)
        for index, count in enumerate(counts):
            if others and rng.random() < 0.3:
                parent = rng.choice(others)
                name = f"retry-{index:04d}"
            else:
                parent = "default"
                name = f"run-{index:04d}"
            at = rng.choice(versions[parent]) if rng.random() < 0.5 else None
            db.branches.fork(parent, name, at=at)
            versions[name] = run_agent(db, name, count, rng)
            others.append(name)
        for name in rng.sample(others, sizes.merges):
            parent = db.branches.get(name).parent
            assert parent is not None
            db.branches.merge(name, parent, strategy="source", message="keep the better run")


def count_rows(path: Path) -> tuple[int, int]:
    """(live branches, event rows) of the database at ``path``, read with raw sqlite3."""
    conn = raw_connect(path)
    try:
        branches = conn.execute(
            "SELECT count(*) FROM rewind_branches WHERE deleted_at IS NULL"
        ).fetchone()[0]
        events = conn.execute("SELECT count(*) FROM rewind_events").fetchone()[0]
        return branches, events
    finally:
        conn.close()


def ensure_database(path: Path, sizes: Sizes) -> str:
    """Build the database at ``path`` unless it is already there; say what happened."""
    expected = (sizes.branches, sizes.events)
    if (path / DB_FILENAME).exists():
        found = count_rows(path)
        if found != expected:
            sys.exit(
                f"{path} holds {found[0]:,} branches and {found[1]:,} events, not "
                f"{expected[0]:,} and {expected[1]:,}: give another --db (or remove it)"
            )
        return f"reused the database in {path} (built by an earlier run)"
    started = time.perf_counter()
    build(path, sizes)
    seconds = time.perf_counter() - started
    found = count_rows(path)
    if found != expected:
        raise RuntimeError(f"built {found}, expected {expected}")
    on_disk = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
    return (
        f"built {sizes.branches:,} branches and {sizes.events:,} events in {seconds:.1f} s "
        f"({sizes.events / seconds:,.0f} events/s; {on_disk / 2**20:.1f} MiB on disk)"
    )


# -- raw sqlite3 baselines ---------------------------------------------------------------


def raw_connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path / DB_FILENAME}?mode=ro", uri=True)


RAW_BRANCHES = (
    "SELECT b.id, b.name, p.name, b.forked_at, b.created_at, max(c.version), "
    "count(c.version), max(c.ts) FROM rewind_branches b "
    "LEFT JOIN rewind_branches p ON p.id = b.parent_id "
    "LEFT JOIN rewind_commits c ON c.branch_id = b.id "
    "WHERE b.deleted_at IS NULL GROUP BY b.id ORDER BY b.id"
)


def raw_overview(conn: sqlite3.Connection) -> tuple[int, int]:
    """Every branch row with its commit count, head, last write and event count, and every
    event's (branch, version, type): the facts the overview shows."""
    branches = conn.execute(RAW_BRANCHES).fetchall()
    lengths = dict(
        conn.execute("SELECT branch_id, max(sequence) + 1 FROM rewind_events GROUP BY branch_id")
    )
    rows = [(*branch, lengths.get(branch[0], 0)) for branch in branches]
    events = conn.execute(
        "SELECT branch_id, version, event_type FROM rewind_events "
        "ORDER BY branch_id, version, sequence"
    ).fetchall()
    return len(rows), len(events)


def raw_lineage(conn: sqlite3.Connection, name: str, version: int) -> list[tuple[int, int]]:
    """[(branch id, highest visible version)], the branch first, then its ancestors."""
    row = conn.execute(
        "SELECT id, parent_id, forked_at FROM rewind_branches "
        "WHERE name = ? AND deleted_at IS NULL",
        (name,),
    ).fetchone()
    steps = [(row[0], version)]
    cap = version
    while row[1] is not None:
        cap = min(cap, row[2])
        row = conn.execute(
            "SELECT id, parent_id, forked_at FROM rewind_branches WHERE id = ?", (row[1],)
        ).fetchone()
        steps.append((row[0], cap))
    return steps


def raw_array(conn: sqlite3.Connection, seq: int, length: int) -> list[Any]:
    """A shared array's first ``length`` items, following its base chain."""
    parts: list[Any] = []
    end = length
    while end > 0:
        base, base_len = conn.execute(
            "SELECT base_id, base_len FROM rewind_seqs WHERE id = ?", (seq,)
        ).fetchone()
        start = min(base_len if base is not None else 0, end)
        items = conn.execute(
            "SELECT item FROM rewind_seq_items WHERE seq_id = ? AND idx >= ? AND idx < ? "
            "ORDER BY idx DESC",
            (seq, start, end),
        ).fetchall()
        parts.extend(orjson.loads(item) for (item,) in items)
        end, seq = start, base
    parts.reverse()
    return parts


def raw_fragment(conn: sqlite3.Connection, branch: str, sequence: int) -> int:
    """The event, the one before it, and the branch's state rows as of the event."""
    lineage = raw_lineage(conn, branch, 1 << 62)
    found = []
    for wanted in (sequence, sequence - 1):
        for branch_id, cap in lineage:
            row = conn.execute(
                "SELECT sequence, event_type, payload, version, ts, hash FROM rewind_events "
                "WHERE branch_id = ? AND sequence = ? AND version <= ?",
                (branch_id, wanted, cap),
            ).fetchone()
            if row is not None:
                found.append((*row[:2], orjson.loads(row[2]), *row[3:]))
                break
    version = found[0][3]
    state: dict[tuple[str, str], Any] = {}
    for branch_id, cap in raw_lineage(conn, branch, version):
        for space, key, kind, body, refs, _ in conn.execute(
            "SELECT space, key, kind, body, refs, max(version) FROM rewind_entries "
            "WHERE branch_id = ? AND version <= ? GROUP BY space, key",
            (branch_id, cap),
        ):
            if (space, key) in state:
                continue  # the branch's own rows are newer than its ancestors'
            if kind == 2:
                state[space, key] = None
                continue
            value = orjson.loads(body) if kind == 0 else body
            for path, seq, length in orjson.loads(refs) if refs else ():
                target = value
                for part in path[:-1]:
                    target = target[part]
                if path:
                    target[path[-1]] = raw_array(conn, seq, length)
                else:
                    value = raw_array(conn, seq, length)
            state[space, key] = value
    return len(found) + len(state)


def raw_first_page(conn: sqlite3.Connection, branch: str) -> int:
    """A branch page's data: the branch row, its distinct event types, its first 100 events."""
    lineage = raw_lineage(conn, branch, 1 << 62)
    conn.execute(RAW_BRANCHES.replace("GROUP BY", "AND b.name = ? GROUP BY"), (branch,)).fetchone()
    types: set[str] = set()
    rows: list[Any] = []
    for branch_id, cap in reversed(lineage):
        types.update(
            t
            for (t,) in conn.execute(
                "SELECT DISTINCT event_type FROM rewind_events "
                "WHERE branch_id = ? AND version <= ?",
                (branch_id, cap),
            )
        )
        if len(rows) < 100:
            rows += [
                (*row[:2], orjson.loads(row[2]), *row[3:])
                for row in conn.execute(
                    "SELECT sequence, event_type, payload, version, ts, hash FROM rewind_events "
                    "WHERE branch_id = ? AND version <= ? ORDER BY version, sequence LIMIT ?",
                    (branch_id, cap, 100 - len(rows)),
                )
            ]
    return len(rows) + len(types)


# -- timing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    median: float
    p95: float


def timing(seconds: list[float]) -> Timing:
    ordered = sorted(seconds)
    return Timing(statistics.median(ordered), ordered[math.ceil(0.95 * len(ordered)) - 1])


def interleaved(reps: int, *fns: Callable[[], Any]) -> list[Timing]:
    """Each function called once as a warm-up, then all in turn ``reps`` times."""
    return [timing(sample) for sample in samples(reps, *fns, warmup=True)]


def getter(
    client: TestClient, url: str, headers: dict[str, str] | None = None
) -> Callable[[], Any]:
    """A request of ``url`` that the explorer renders each time: the responses its shared
    renders keep (they would answer a repeat from memory) are dropped first."""
    shared = client.app.state.shared  # type: ignore[attr-defined]

    def get() -> Any:
        shared.clear()
        response = client.get(url, headers=headers)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url}: {response.status_code} {response.text[:300]}")
        return response

    return get


# -- the report --------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    figure: str
    web: Timing
    raw: Timing | None = None
    limit: float | None = None  # seconds; the target is web.median < limit

    def cells(self) -> tuple[str, ...]:
        ratio = f"{self.web.median / self.raw.median:.1f}" if self.raw else ""
        target = "" if self.limit is None else f"< {fmt(self.limit)}"
        verdict = "info"
        if self.limit is not None:
            verdict = "met" if self.web.median < self.limit else "NOT MET"
        return (
            self.figure,
            fmt(self.web.median),
            fmt(self.web.p95),
            fmt(self.raw.median) if self.raw else "",
            ratio,
            target,
            verdict,
        )


def fmt(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.1f} ms"


def render(rows: list[Row]) -> str:
    header = ("figure", "web median", "web p95", "raw sqlite3", "ratio", "target", "result")
    return "\n".join(table(header, [(None, [row.cells() for row in rows])], numbers=4))


def report(rows: list[Row], notes: list[str]) -> None:
    """Print a part's table and its notes."""
    print(render(rows))
    for note in notes:
        print(f"note: {note}")


# -- measuring ---------------------------------------------------------------------------


def pick_siblings(db: rewinddb.Database) -> tuple[str, str]:
    """Two branches forked from ``default`` (not the long one), the first two made."""
    children = [b.name for b in db.branches.list() if b.parent == "default" and b.name != BIG]
    return children[0], children[1]


def pick_events(db: rewinddb.Database) -> dict[str, int]:
    """Event numbers near the start, middle and end of the long branch's own events."""
    view = db.at(BIG)
    length = view.events.length()
    inherited = db.at("default").events.length(as_of=view.info().forked_at)
    first = inherited + 5
    return {"start": first, "middle": (first + length) // 2, "end": length - 1}


def measure(path: Path, sizes: Sizes) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    notes: list[str] = []
    app = create_app(path)
    conn = raw_connect(path)
    with TestClient(app, base_url=LOCAL) as client:
        db: rewinddb.Database = app.state.db
        length = db.at(BIG).events.length()
        a, b = pick_siblings(db)
        picks = pick_events(db)

        # The overview: the whole page, then its JSON twin.
        overview = getter(client, "/")
        web, raw = interleaved(sizes.overview_reps, overview, lambda: raw_overview(conn))
        rows.append(Row("GET /  (overview page: graph + branch table)", web, raw, 1.0))
        (web_json,) = interleaved(sizes.overview_reps, getter(client, "/.json"))
        rows.append(Row("GET /.json  (the overview's data)", web_json, raw))
        page = overview().content
        data = orjson.loads(getter(client, "/.json")().content)
        notes.append(
            f"the overview page is {len(page) / 1024:,.0f} KiB "
            f"({len(gzip.compress(page)) / 1024:,.0f} KiB gzipped); its graph sends "
            f"{len(data['graph']['points']):,} dots for {sizes.events:,} events, "
            f"its table {len(data['branches']):,} branches"
        )

        # The long branch's page (first timeline page).
        (web_page, raw_page) = interleaved(
            sizes.page_reps,
            getter(client, f"/branches/{BIG}"),
            lambda: raw_first_page(conn, BIG),
        )
        rows.append(Row(f"GET /branches/{BIG}  ({length:,} events)", web_page, raw_page))

        # The event fragment near the start, middle and end of the long branch.
        for where, sequence in picks.items():
            url = f"/branches/{BIG}/events/{sequence}"
            fragment = getter(client, url, HX)
            body = fragment().text
            if "<html" in body.lower():
                raise RuntimeError(f"{url} with HX-Request sent a whole page")
            web_fragment, raw_fragment_timing = interleaved(
                sizes.fragment_reps, fragment, lambda s=sequence: raw_fragment(conn, BIG, s)
            )
            rows.append(
                Row(
                    f"event fragment #{sequence} ({where}), HX-Request",
                    web_fragment,
                    raw_fragment_timing,
                    0.050,
                )
            )

        # Two sibling branches side by side.
        (web_compare,) = interleaved(sizes.page_reps, getter(client, f"/compare?a={a}&b={b}"))
        rows.append(Row(f"GET /compare?a={a}&b={b}  (siblings)", web_compare))
    conn.close()
    notes.append(
        f"reps: overview {sizes.overview_reps}, pages {sizes.page_reps}, "
        f"fragments {sizes.fragment_reps} (after one warm-up each); raw baselines interleaved"
    )
    return rows, notes


def endpoint(app: Any, path: str) -> Callable[..., Any]:
    """The function the GET route ``path`` of ``app`` runs (in included routers too)."""
    routes = list(app.routes)
    while routes:
        route = routes.pop(0)
        router = getattr(route, "original_router", None)  # FastAPI's included routers
        if router is not None:
            routes += router.routes
        elif getattr(route, "path", None) == path and "GET" in getattr(route, "methods", ()):
            return route.endpoint  # type: ignore[no-any-return]
    raise LookupError(path)


def request_for(app: Any, url: str, headers: dict[str, str] | None = None) -> Any:
    """A starlette Request for ``url``, to call a route's function in this thread."""
    from starlette.requests import Request

    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {"type": "http", "app": app, "method": "GET", "path": url, "headers": raw}
    return Request({**scope, "query_string": b""})


def profile(path: Path, top: int) -> None:
    """cProfile the overview page and a fragment in the middle of the long branch. The
    route functions are called in this thread (TestClient runs them in a worker thread,
    which cProfile does not see); what they return is what the client would get."""
    app = create_app(path)
    with TestClient(app, base_url=LOCAL):
        picks = pick_events(app.state.db)
        overview = endpoint(app, "/")
        event = endpoint(app, "/branches/{branch}/events/{sequence}")
        sequence = picks["middle"]
        cases = (
            ("GET /", lambda: overview(request_for(app, "/")), 3),
            (
                f"GET /branches/{BIG}/events/{sequence} (HX-Request)",
                lambda: event(
                    request_for(app, f"/branches/{BIG}/events/{sequence}", HX),
                    branch=BIG,
                    sequence=str(sequence),
                ),
                30,
            ),
        )
        for title, call, reps in cases:
            call()
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(reps):
                call()
            profiler.disable()
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out).strip_dirs()
            print(f"\n== profile: {title}, {reps} calls ==")
            for order in ("tottime", "cumulative"):
                out.seek(0)
                out.truncate()
                stats.sort_stats(order).print_stats(top)
                text = out.getvalue()
                print(f"-- by {order}")
                print(text[text.find("   ncalls") :].rstrip())


# -- a LangGraph thread of a thousand turns ---------------------------------------------

THREAD = "long-thread"
THREAD_BRANCH = f"lg/{THREAD}"
#: The thread branch's name in a URL (``rewinddb.web.urls.tilde_encode``).
THREAD_URL = f"/branches/lg~2F{THREAD}"


def build_thread(path: Path, turns: int) -> None:
    """``turns`` turns of a chat thread recorded with RewindSaver: each a human question
    in, one node (``agent``) answering it."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph

    from rewinddb.integrations.langgraph import RewindSaver

    rng = random.Random(17)

    def agent(state: MessagesState) -> dict[str, Any]:
        count = len(state["messages"])
        text = f"answer {count}: {sentence(rng, 24)}"
        return {"messages": [AIMessage(text, id=f"ai-{count}")]}

    config = {"configurable": {"thread_id": THREAD}}
    with RewindSaver.from_path(path) as saver:
        builder = StateGraph(MessagesState)
        builder.add_node("agent", agent)
        builder.add_edge(START, "agent")
        graph = builder.compile(checkpointer=saver)
        for turn in range(turns):
            question = HumanMessage(f"question {turn}: {sentence(rng, 12)}", id=f"human-{turn}")
            graph.invoke({"messages": [question]}, config)


def ensure_thread(path: Path, turns: int) -> str:
    """Build the thread's database at ``path`` unless it is there; say what happened."""
    if (path / DB_FILENAME).exists():
        with rewinddb.open(path, readonly=True) as db:
            found = db.at(THREAD_BRANCH).commit_count() if db.branches.exists(THREAD_BRANCH) else 0
        if not found:
            sys.exit(f"{path} holds no thread {THREAD_BRANCH!r}: remove it or give another --db")
        return f"reused the thread in {path} (built by an earlier run)"
    started = time.perf_counter()
    build_thread(path, turns)
    seconds = time.perf_counter() - started
    on_disk = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
    return (
        f"built a LangGraph thread of {turns:,} turns ({2 * turns:,} messages) in "
        f"{seconds:.1f} s ({on_disk / 2**20:.1f} MiB on disk)"
    )


def measure_thread(path: Path, sizes: Sizes) -> tuple[list[Row], list[str]]:
    """The thread's page, step pages near its end and in its middle, a page of earlier
    messages and a step's JSON, each requested in process."""
    rows: list[Row] = []
    notes: list[str] = []
    with TestClient(create_app(path), base_url=LOCAL) as client:
        listed = orjson.loads(getter(client, f"{THREAD_URL}/steps.json")().content)
        steps, last = listed["total"], listed["steps"][-1]
        # Page back (50 steps a page) to the middle of the thread.
        seen, middle = len(listed["steps"]), listed["steps"][0]["version"]
        while listed["older"] is not None and seen < steps // 2:
            older = f"{THREAD_URL}/steps.json?before={listed['older']}"
            listed = orjson.loads(getter(client, older)().content)
            seen, middle = seen + len(listed["steps"]), listed["steps"][0]["version"]
        page = getter(client, THREAD_URL)
        body = page().text
        if 'class="msg role-ai' not in body:
            raise RuntimeError(f"{THREAD_URL} shows no conversation")
        transcript = orjson.loads(getter(client, f"{THREAD_URL}/transcript.json")().content)
        messages = transcript["transcript"]["total"]
        earlier = f"{THREAD_URL}/transcript?before={messages // 2}"
        cases = [
            (f"GET {THREAD_URL}  (thread page, {messages:,} messages)", page, 0.200),
            (
                f"GET {THREAD_URL}/steps/{last['version']}  (the last step: state + diff)",
                getter(client, f"{THREAD_URL}/steps/{last['version']}"),
                0.200,
            ),
            (
                f"GET {THREAD_URL}/steps/{middle}  (a middle step: state + diff)",
                getter(client, f"{THREAD_URL}/steps/{middle}"),
                0.200,
            ),
            (f"GET {earlier}  (earlier messages, HX-Request)", getter(client, earlier, HX), None),
            (
                f"GET {THREAD_URL}/steps/{last['version']}.json  (the step's data)",
                getter(client, f"{THREAD_URL}/steps/{last['version']}.json"),
                None,
            ),
        ]
        timings = interleaved(sizes.page_reps, *(get for _, get, _ in cases))
        for (figure, _, limit), web in zip(cases, timings, strict=True):
            rows.append(Row(figure, web, None, limit))
        step_page = cases[1][1]().content
        notes.append(
            f"the thread has {steps:,} steps and {messages:,} messages; its "
            f"page is {len(body.encode()) / 1024:,.0f} KiB, the last step's "
            f"{len(step_page) / 1024:,.0f} KiB"
        )
    notes.append(f"reps: {sizes.page_reps} each (after one warm-up), interleaved")
    return rows, notes


def thread_part(args: argparse.Namespace, sizes: Sizes) -> None:
    """Build (or reuse) the thread's database and print its figures."""
    try:
        import langgraph  # noqa: F401
    except ImportError:
        print("thread: left out (needs the langgraph extra: pip install -e '.[langgraph]')")
        return
    with tempfile.TemporaryDirectory(prefix="rewinddb-thread-bench-") as scratch:
        if args.db is not None:
            path = args.db.with_name(args.db.name + "-thread")
        else:
            path = Path(scratch) / "thread"
        print(f"thread database: {ensure_thread(path, sizes.thread_turns)}")
        print()
        report(*measure_thread(path, sizes))


# -- the load run: fifty readers while an agent writes ----------------------------------

LIVE = "live"  # the branch the writer process appends to


@dataclass(frozen=True)
class Load:
    """The load run: its database, clients, duration and bounds."""

    database: Sizes = field(
        default_factory=lambda: Sizes(
            branches=50, events=10_000, big=2_000, default_events=20, merges=5
        )
    )
    clients: int = 50
    seconds: float = 30.0
    per_client: int = 2_000  # requests at most, each client
    timeout: float = 30.0  # seconds, each request
    writes_per_second: float = 20.0  # agent steps the writer process commits
    mix: str = "explorer"  # a key of CYCLES


FULL_LOAD = Load()
QUICK_LOAD = Load(
    database=Sizes(branches=10, events=1_000, big=300, default_events=10, merges=1),
    clients=10,
    seconds=3.0,
    per_client=300,
)

#: What each client asks for, in turn (each starts at another place in the cycle):
#: ``explorer``, what pages open on the run ask; ``light``, the same without the three
#: requests that draw the whole graph or two whole logs (the overview, its poll, compare).
CYCLES = {
    "explorer": (
        "version",
        "timeline poll",
        "events",
        "overview poll",
        "event",
        "branch",
        "version",
        "timeline poll",
        "event",
        "key",
        "overview",
        "compare",
    ),
    "light": (
        "version",
        "timeline poll",
        "events",
        "event",
        "branch",
        "version",
        "timeline poll",
        "event",
        "key",
    ),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def prepare_load_database(path: Path, load: Load) -> tuple[list[str], int]:
    """The load run's database: built as the page benchmark's is (smaller), plus the
    branch ``live`` the writer appends to. Returns the branch names and the last event
    number on ``live``."""
    build(path, load.database, seed=11)
    with rewinddb.open(path) as db:
        db.branches.fork(BIG, LIVE)
        run_agent(db, LIVE, 20, random.Random(5))
        names = db.branches.names()
        return names, db.at(LIVE).events.length() - 1


def agent_writer(path: Path, seconds: float, per_second: float) -> int:
    """The writer process: agent steps on ``live`` at ``per_second`` for ``seconds`` (an
    event, a kv and a JSON write in one transaction each); prints how many it made."""
    rng = random.Random(13)
    steps = 0
    with rewinddb.open(path, create=False) as db:
        view = db.at(LIVE)
        start = time.monotonic()
        while steps < seconds * per_second:
            due = start + steps / per_second
            now = time.monotonic()
            if now >= start + seconds:
                break
            if due > now:
                time.sleep(due - now)
            with view.transaction(trigger="agent.step"):
                view.events.append(
                    "llm.response", {"step": steps, "text": sentence(rng, 12), "tokens": 300}
                )
                view.kv.put("step", steps)
                view.json.set("run", "$.last", {"tool": rng.choice(TOOLS), "step": steps})
            steps += 1
    print(steps, flush=True)
    return steps


@contextmanager
def serving(
    path: Path, log: Path, read_connections: int | None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``rewinddb serve`` on 127.0.0.1 as its own process; yields its URL (and the
    process) once it answers."""
    port = free_port()
    command = [sys.executable, "-m", "rewinddb", "serve", str(path)]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    if read_connections is not None:
        command += ["--read-connections", str(read_connections)]
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"rewinddb serve exited:\n{log.read_text()}")
            try:
                if httpx.get(f"{base}/api/version", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"rewinddb serve did not answer in 60 s:\n{log.read_text()}")
            time.sleep(0.05)
        yield base, server
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@dataclass
class LoadResult:
    latencies: list[float]
    statuses: list[int]
    failures: list[str]  # requests with no answer (timeouts, dropped connections)
    seconds: float
    kinds: list[str] = field(default_factory=list)  # each answered request's kind
    writes: int = 0
    server_cpu: float | None = None  # seconds of CPU the server process used meanwhile

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.seconds

    def quantile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    @property
    def errors(self) -> int:
        return sum(1 for status in self.statuses if status >= 500)

    def by_kind(self) -> dict[str, LoadResult]:
        """The answered requests of each kind, as results of their own."""
        kinds: dict[str, LoadResult] = {}
        for kind, latency, status in zip(self.kinds, self.latencies, self.statuses, strict=True):
            part = kinds.setdefault(kind, LoadResult([], [], [], self.seconds))
            part.latencies.append(latency)
            part.statuses.append(status)
        return kinds


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU time of process ``pid`` so far (Linux ``/proc``; else None)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def next_request(
    kind: str, rng: random.Random, stamp: str, last: int, names: list[str]
) -> tuple[str, dict[str, str]]:
    if kind == "version":
        return "/api/version", {}
    if kind == "timeline poll":
        return f"/branches/{LIVE}/timeline?after={last}&poll=1", HX
    if kind == "events":
        return f"/api/branches/{LIVE}/events?after={last}", {}
    if kind == "overview poll":
        return f"/fragments/overview?since={stamp}", HX
    if kind == "event":
        return f"/branches/{LIVE}/events/{rng.randint(0, last)}", HX
    if kind == "branch":
        return f"/branches/{rng.choice(names)}", {}
    if kind == "key":
        return f"/branches/{LIVE}/keys/step?space=kv", {}
    if kind == "overview":
        return "/", {}
    return f"/compare?a={LIVE}&b={rng.choice(names)}", {}


async def run_clients(base: str, load: Load, names: list[str], last: int) -> LoadResult:
    """``load.clients`` clients sending requests back to back until ``load.seconds``."""
    if not base.startswith("http://127.0.0.1:"):
        raise RuntimeError(f"the load run targets only 127.0.0.1, not {base}")
    latencies: list[float] = []
    statuses: list[int] = []
    kinds: list[str] = []
    failures: list[str] = []
    cycle = CYCLES[load.mix]
    # uvicorn closes a connection idle for 5 s, and 5 s is also httpx's default expiry:
    # a request could go out on a connection the server was closing just then (a
    # ReadError that is the client's race, not the server's failure). Browsers retry
    # such a request; these clients let an idle connection go after 2 s instead.
    limits = httpx.Limits(
        max_connections=load.clients, max_keepalive_connections=load.clients, keepalive_expiry=2.0
    )
    async with httpx.AsyncClient(base_url=base, timeout=load.timeout, limits=limits) as client:
        deadline = time.monotonic() + load.seconds

        async def user(index: int) -> None:
            rng = random.Random(index)
            stamp, seen = "0", last
            for n in range(load.per_client):
                if time.monotonic() >= deadline:
                    return
                kind = cycle[(index + n) % len(cycle)]
                url, headers = next_request(kind, rng, stamp, seen, names)
                started = time.perf_counter()
                try:
                    response = await client.get(url, headers=headers)
                except httpx.HTTPError as error:
                    failures.append(type(error).__name__)
                    continue
                latencies.append(time.perf_counter() - started)
                statuses.append(response.status_code)
                kinds.append(kind)
                if response.status_code == 200 and kind == "version":
                    stamp = response.json()["stamp"]
                elif response.status_code == 200 and kind == "events":
                    seen = response.json()["last"] or seen

        started = time.perf_counter()
        await asyncio.gather(*(user(index) for index in range(load.clients)))
        return LoadResult(latencies, statuses, failures, time.perf_counter() - started, kinds)


def load_run(
    pristine: Path, scratch: Path, load: Load, names: list[str], last: int, readers: int | None
) -> LoadResult:
    """One load run on a fresh copy of the database, with its writer process."""
    label = f"readers-{readers or 'default'}"
    path = scratch / label
    shutil.copytree(pristine, path)
    with serving(path, scratch / f"{label}.log", readers) as (base, server):
        command = [sys.executable, __file__, "--agent-writer", str(path)]
        command += ["--agent-seconds", str(load.seconds)]
        command += ["--agent-rate", str(load.writes_per_second)]
        writer = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            text=True,
        )
        cpu_before = cpu_seconds(server.pid)
        try:
            result = asyncio.run(run_clients(base, load, names, last))
            cpu_after = cpu_seconds(server.pid)
        finally:
            out, _ = writer.communicate(timeout=load.seconds + 60)
        result.writes = int(out.split()[-1]) if out.strip() else 0
        if cpu_before is not None and cpu_after is not None:
            result.server_cpu = cpu_after - cpu_before
    shutil.rmtree(path)
    return result


#: The baseline's read connections: the default before the shared renders.
BASELINE_READERS = 4


def measure_load(load: Load) -> Report:
    """The load run with four read connections (the baseline), then the server's default."""
    report = Report()
    with tempfile.TemporaryDirectory(prefix="rewinddb-web-load-") as scratch_dir:
        scratch = Path(scratch_dir)
        pristine = scratch / "pristine"
        names, last = prepare_load_database(pristine, load)
        before = load_run(pristine, scratch, load, names, last, BASELINE_READERS)
        after = load_run(pristine, scratch, load, names, last, None)
    sizes = load.database
    report.section(
        f"{load.clients} clients for {load.seconds:.0f} s on `rewinddb serve` (127.0.0.1; "
        f"{sizes.branches} branches, {sizes.events:,} events) while another process "
        f"writes {load.writes_per_second:.0f} agent steps/s; baseline: "
        f"--read-connections {BASELINE_READERS}"
    )
    report.add(
        ReportRow(
            "requests/s",
            rate(after.per_second),
            rate(before.per_second),
            after.per_second / before.per_second,
        )
    )
    for name, q, target in (("p50", 0.50, None), ("p99", 0.99, Target("<", 1.0, "< 1 s"))):
        report.add(
            ReportRow(
                f"{name} latency",
                ms(after.quantile(q)),
                ms(before.quantile(q)),
                after.quantile(q) / before.quantile(q),
                target,
                after.quantile(q) if target else None,
            )
        )
    report.add(
        ReportRow(
            "5xx responses",
            f"{after.errors}",
            f"{before.errors}",
            None,
            Target("<=", 0, "0"),
            after.errors,
        )
    )
    report.add(
        ReportRow(
            "failed requests (no answer)",
            f"{len(after.failures)}",
            f"{len(before.failures)}",
            None,
            Target("<=", 0, "0"),
            len(after.failures),
        )
    )
    report.add(ReportRow("agent steps the writer committed", f"{after.writes}", f"{before.writes}"))
    for title, result in ((f"--read-connections {BASELINE_READERS}", before), ("default", after)):
        counts = {code: result.statuses.count(code) for code in sorted(set(result.statuses))}
        shown = ", ".join(f"{code}: {count:,}" for code, count in counts.items())
        for kind in sorted(set(result.failures)):
            shown += f", {kind}: {result.failures.count(kind)}"
        cpu = ""
        if result.server_cpu is not None and result.latencies:
            cpu = (
                f"; the server used {result.server_cpu / result.seconds:.0%} of a core, "
                f"{ms(result.server_cpu / len(result.latencies))} of CPU a request"
            )
        report.note(
            f"{title}: {len(result.latencies):,} requests in {result.seconds:.1f} s ({shown}){cpu}"
        )
        parts = result.by_kind()
        report.note(
            f"{title}, by kind (answered, p50, p99): "
            + "; ".join(
                f"{kind} {len(part.latencies):,}, {ms(part.quantile(0.5))}, "
                f"{ms(part.quantile(0.99))}"
                for kind, part in sorted(parts.items(), key=lambda item: -item[1].quantile(0.99))
            )
        )
    report.note(
        "each client: one connection, requests back to back, at most "
        f"{load.per_client:,} and a {load.timeout:.0f} s timeout each; the {load.mix} "
        f"cycle: " + ", ".join(CYCLES[load.mix])
    )
    return report


# -- main --------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 20 branches, 2,000 events"
    )
    parser.add_argument("--db", type=Path, help="build the database here once and reuse it")
    parser.add_argument(
        "--profile", type=int, metavar="N", help="also cProfile the overview and a fragment (top N)"
    )
    parser.add_argument(
        "--part",
        choices=("all", "pages", "thread", "load"),
        default="all",
        help="the page timings, the LangGraph thread's pages, the load run (50 clients on "
        "rewinddb serve), or all three",
    )
    parser.add_argument(
        "--load-mix",
        choices=sorted(CYCLES),
        default="explorer",
        help="the requests of the load run (default: explorer, every kind of page)",
    )
    # The load run's writer process (this script run again).
    parser.add_argument("--agent-writer", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--agent-seconds", type=float, default=30.0, help=argparse.SUPPRESS)
    parser.add_argument("--agent-rate", type=float, default=20.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.agent_writer is not None:
        agent_writer(args.agent_writer, args.agent_seconds, args.agent_rate)
        return 0
    sizes = QUICK_RUN if args.quick else FULL_RUN
    versions = f"{platform.python_version()}, sqlite {sqlite3.sqlite_version}"
    print(
        describe_machine(
            [sys.argv[0], *argv], ("python", f"{versions}, rewinddb {rewinddb.__version__}")
        )
    )
    if args.part in ("all", "pages"):
        with tempfile.TemporaryDirectory(prefix="rewinddb-web-bench-") as scratch:
            path = args.db if args.db is not None else Path(scratch) / "agent"
            print(f"database: {ensure_database(path, sizes)}")
            print()
            report(*measure(path, sizes))
            if args.profile:
                profile(path, args.profile)
    if args.part in ("all", "thread"):
        print()
        thread_part(args, sizes)
    if args.part in ("all", "load"):
        print()
        load = QUICK_LOAD if args.quick else FULL_LOAD
        print(measure_load(replace(load, mix=args.load_mix)).render())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
