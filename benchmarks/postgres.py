"""PostgreSQL backend performance figures (issue 7), each against a baseline of the same run.

Run it from the repository root (the postgres extra installed)::

    .venv/bin/python benchmarks/postgres.py            # the full run, on its own server
    .venv/bin/python benchmarks/postgres.py --quick    # a smoke run: small N, 1 and 4 writers
    .venv/bin/python benchmarks/postgres.py --url postgresql://user@host/db  # a given server
    .venv/bin/python benchmarks/postgres.py --setting synchronous_commit=off  # a what-if run
    .venv/bin/python benchmarks/postgres.py --only writers  # figure 1 alone (repeatable)

Without ``--url`` the script starts a throwaway PostgreSQL cluster (Debian's binaries in
``/usr/lib/postgresql/*/bin``, run as the ``postgres`` user when run as root) on
127.0.0.1 with the DEFAULT durability settings (``fsync = on``, ``synchronous_commit =
on``), and removes it at the end. With ``--url`` every figure works in its own new schema
of that database, dropped at the end. The settings the figures were measured with are
printed above the table. ``--setting NAME=VALUE`` (repeatable) applies a server setting to
rewinddb's connections only, to see what a change would buy; the baselines keep the
server's settings.

Every figure is a median over several repetitions, baselines measured interleaved with
what they are compared to, ``ratio = rewinddb / baseline``. The script asserts no timing
and exits 0 whatever the verdicts.

The figures:

1. concurrent writers: 1, 4 and 16 writer processes (spawned once, reused), each on its own
   branch (forked from ``default`` beforehand), each making 1,000 single-write commits with
   rewinddb's default ``durability="normal"`` (``synchronous_commit = off`` on its
   connections; the baseline's connections set the same):
   ``view.events.append(type, ~200 B payload)`` and ``view.kv.put(key, ~200 B value)``;
   total commits/s from the first writer's start to the last one's end. Baseline: as many
   processes, each inserting the same rows ``(branch, seq, payload)`` into its own table
   with psycopg, one autocommit INSERT per row. Target: ratio >= 0.5 at 16 writers;
2. fork cost with 10,000 keys of state against 100, on PostgreSQL and on SQLite;
3. ``kv.get(as_of=...)`` of a key with 10,000 versions against one with 10, on both;
4. single-writer latency of ``kv.put``, ``events.append`` and ``kv.get``: PostgreSQL
   against SQLite (``durability="normal"`` and ``"full"``), to say when to move;
5. where a writer's time goes, for ``kv.put`` with 1 writer and with the most writers:
   the time per commit in each class of statement (a single write is one call of the
   write routine ``rewind_put_entry``; in a transaction: BEGIN with the write lock,
   other statements, COMMIT) and in Python, timed inside the writer process.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import multiprocessing as mp
import sqlite3
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from _report import (
    Report,
    Row,
    Target,
    describe_machine,
    expect,
    interleaved,
    ms,
    python_version,
    rate,
    us,
)

import rewinddb
from rewinddb import RewindError
from rewinddb.testing import PostgresServer

try:
    import psycopg
except ImportError as missing:  # pragma: no cover - the postgres extra is not installed
    sys.exit(f"benchmarks/postgres.py needs psycopg 3 (pip install -e '.[postgres]'): {missing}")

PAYLOAD_BYTES = 200
RAW_TABLE = (
    "CREATE TABLE {name} (branch text NOT NULL, seq bigint NOT NULL, payload bytea NOT NULL, "
    "PRIMARY KEY (branch, seq))"
)
RAW_INSERT = "INSERT INTO {name} (branch, seq, payload) VALUES (%s, %s, %s)"
SETTINGS = ("fsync", "synchronous_commit", "wal_sync_method", "full_page_writes", "commit_delay")


# -- sizes -----------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    """How much work each figure does; ``--quick`` shrinks everything."""

    writers: tuple[int, ...] = (1, 4, 16)
    # Commits per writer per run: at 300, a 16-writer run lasted about 0.6 s and its start
    # (16 processes let go at once, cold caches) weighed on the figure; in 3 interleaved
    # pairs events.append measured 0.46-0.50 of raw at 300 and 0.52-0.53 at 1,000.
    ops: int = 1_000
    repeats: int = 5  # runs of each (writers, kind), interleaved
    warmup: int = 5  # commits per writer before the clock starts
    few_keys: int = 100  # keys on the small fork source
    fork_keys: int = 10_000  # keys on the big fork source
    few_versions: int = 10  # versions of the short key
    history: int = 10_000  # versions of the long key
    point_calls: int = 300  # timed single forks / reads / writes, per side
    profile_ops: int = 300  # commits per writer in the profiled runs


FULL_RUN = Sizes()
QUICK_RUN = Sizes(
    writers=(1, 4),
    ops=30,
    repeats=2,
    warmup=2,
    fork_keys=1_000,
    history=1_000,
    point_calls=30,
    profile_ops=30,
)


def payload(i: int, writer: int = 0) -> dict[str, Any]:
    """An agent step whose compact JSON encoding is exactly ``PAYLOAD_BYTES`` bytes."""
    step: dict[str, Any] = {"step": i, "writer": writer, "status": "ok", "text": ""}
    pad = PAYLOAD_BYTES - len(orjson.dumps(step))
    step["text"] = ("observation " * 20)[:pad]
    return step


# -- the server ------------------------------------------------------------------


class Server(PostgresServer):
    """A throwaway PostgreSQL cluster with default durability settings, or a given URL,
    and the ``--setting`` settings for rewinddb's connections.

    Every figure asks for a new schema; the given server's are dropped at the end, the
    throwaway cluster is stopped and removed.
    """

    def __init__(self, url: str | None, settings: tuple[str, ...] = ()) -> None:
        try:
            super().__init__(url=url)
        except RewindError as error:
            if error.code != "missing.postgresql":
                raise
            sys.exit(f"{error.message} (--url)")
        self.rewinddb_settings = settings

    def rewinddb_schema(self, *settings: str) -> str:
        """``new_schema()`` with the ``--setting`` settings, for rewinddb's connections."""
        return self.new_schema(*self.rewinddb_settings, *settings)

    def describe(self) -> str:
        with psycopg.connect(self.base, autocommit=True) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            values = [f"{name}={conn.execute(f'SHOW {name}').fetchone()[0]}" for name in SETTINGS]
        where = "given by --url" if self.given else "throwaway cluster on 127.0.0.1 (TCP)"
        extra = self.rewinddb_settings
        shown = f"; rewinddb's connections only: {', '.join(extra)}" if extra else ""
        return f"PostgreSQL {version}, {where}; " + ", ".join(values) + shown


# -- writer processes ------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """What one writer process does in one run."""

    kind: str  # "append", "put" or "raw"
    url: str
    target: str  # the branch (rewinddb) or the table (raw)
    writer: int
    ops: int
    warmup: int
    profile: bool = False


def statement_class(sql: str) -> str:
    if "rewind_put_entry" in sql or "rewind_append_event" in sql:
        return "routine"
    if sql.startswith("BEGIN"):
        return "begin"
    return "statements"


def profiled(conn: Any, timings: dict[str, float], counts: dict[str, int]) -> None:
    """Time every statement of a rewinddb connection by class (instance-level wrappers
    around the backend's three hooks; a profiling aid, nothing else uses it)."""
    end = conn._end

    def timing(run: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
        def timed_run(sql: str, params: Any) -> Any:
            start = time.perf_counter()
            try:
                return run(sql, params)
            finally:
                kind = statement_class(sql)
                timings[kind] += time.perf_counter() - start
                counts[kind] += 1

        return timed_run

    def timed_end(*, commit: bool) -> None:
        start = time.perf_counter()
        try:
            end(commit=commit)
        finally:
            timings["commit"] += time.perf_counter() - start
            counts["commit"] += 1

    conn._run = timing(conn._run)
    conn._run_one = timing(conn._run_one)
    conn._end = timed_end


def prepare(task: Task) -> tuple[Callable[[int], Any], Callable[[], None], Callable[[], Any]]:
    """(one operation, close, the profile so far) for ``task``, connected and warmed up."""
    timings: dict[str, float] = dict.fromkeys(("routine", "begin", "statements", "commit"), 0.0)
    counts: dict[str, int] = dict.fromkeys(timings, 0)
    if task.kind == "raw":
        conn = psycopg.connect(task.url, autocommit=True)
        # The same promise as rewinddb's default durability="normal" (which sets it too):
        # a server crash may lose the newest commits, never one in the middle.
        conn.execute("SET synchronous_commit = off")
        sql = RAW_INSERT.format(name=task.target)
        offset = task.warmup

        def insert(i: int) -> None:
            conn.execute(sql, (f"writer-{task.writer}", i + offset, orjson.dumps(payload(i))))

        op: Callable[[int], Any] = insert
        close: Callable[[], None] = conn.close
    else:
        db = rewinddb.open(task.url)
        view = db.at(task.target)
        if task.kind == "append":

            def append(i: int) -> None:
                view.events.append("step", payload(i, task.writer))

            op = append
        else:

            def put(i: int) -> None:
                view.kv.put(f"key-{i % 100}", payload(i, task.writer))

            op = put
        close = db.close
        if task.profile:
            profiled(db._engine.conn, timings, counts)
    for i in range(-task.warmup, 0):
        op(i)
    for kind in timings:
        timings[kind], counts[kind] = 0.0, 0
    return op, close, lambda: (dict(timings), dict(counts))


def writer_process(index: int, inbox: Any, outbox: Any) -> None:
    """A writer: for each task, connect and warm up, say ready, wait for go, run, report."""
    while True:
        task = inbox.get()
        if task is None:
            return
        try:
            op, close, profile = prepare(task)
            outbox.put(("ready", index))
            inbox.get()  # go
            gc.disable()
            start = time.perf_counter()  # CLOCK_MONOTONIC: one clock for every process
            for i in range(task.ops):
                op(i)
            end = time.perf_counter()
            gc.enable()
            close()
            outbox.put(("done", index, start, end, profile()))
        except BaseException:
            outbox.put(("error", index, traceback.format_exc()))


@dataclass(frozen=True)
class RunResult:
    rate: float  # commits per second, all writers together
    per_op: float  # mean seconds per commit of one writer
    profile: dict[str, float]  # mean seconds per commit in each class, over the writers
    counts: dict[str, float]  # statements per commit in each class


class Writers:
    """A pool of spawned writer processes, started once and reused by every run."""

    def __init__(self, count: int) -> None:
        context = mp.get_context("spawn")
        self.outbox = context.Queue()
        self.inboxes = [context.Queue() for _ in range(count)]
        self.processes = [
            context.Process(target=writer_process, args=(i, inbox, self.outbox), daemon=True)
            for i, inbox in enumerate(self.inboxes)
        ]
        for process in self.processes:
            process.start()

    def _collect(self, n: int, expected: str) -> list[tuple[Any, ...]]:
        messages = []
        while len(messages) < n:
            message = self.outbox.get(timeout=600)
            if message[0] == "error":
                raise RuntimeError(f"writer {message[1]} failed:\n{message[2]}")
            expect(message[0], expected, "writer message")
            messages.append(message)
        return messages

    def run(self, tasks: list[Task]) -> RunResult:
        for inbox, task in zip(self.inboxes, tasks, strict=False):
            inbox.put(task)
        self._collect(len(tasks), "ready")
        for inbox in self.inboxes[: len(tasks)]:
            inbox.put("go")
        done = self._collect(len(tasks), "done")
        start = min(message[2] for message in done)
        end = max(message[3] for message in done)
        ops = sum(task.ops for task in tasks)
        per_op = statistics.mean((message[3] - message[2]) / tasks[0].ops for message in done)
        profile = {
            kind: statistics.mean(message[4][0][kind] / tasks[0].ops for message in done)
            for kind in done[0][4][0]
        }
        counts = {
            kind: statistics.mean(message[4][1][kind] / tasks[0].ops for message in done)
            for kind in done[0][4][1]
        }
        return RunResult(ops / (end - start), per_op, profile, counts)

    def close(self) -> None:
        for inbox in self.inboxes:
            inbox.put(None)
        for process in self.processes:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()


# -- 1. concurrent writers -------------------------------------------------------


class Workload:
    """One rewinddb database and one raw schema on the server, and fresh branches and
    tables for every run."""

    def __init__(self, server: Server, sizes: Sizes) -> None:
        self.sizes = sizes
        self.url = server.rewinddb_schema()
        self.raw_url = server.new_schema()
        self.db = rewinddb.open(self.url)
        self.raw = psycopg.connect(self.raw_url, autocommit=True)
        self.runs = itertools.count()

    def tasks(self, kind: str, writers: int, *, ops: int, profile: bool = False) -> list[Task]:
        run = next(self.runs)
        tasks = []
        for writer in range(writers):
            if kind == "raw":
                target = f"raw_{run}_{writer}"
                self.raw.execute(RAW_TABLE.format(name=target))
                url = self.raw_url
            else:
                target = f"run-{run}-writer-{writer}"
                self.db.branches.fork("default", target)
                url = self.url
            tasks.append(Task(kind, url, target, writer, ops, self.sizes.warmup, profile))
        return tasks

    def close(self) -> None:
        self.db.close()
        self.raw.close()


def measure_writers(sizes: Sizes, workload: Workload, pool: Writers, report: Report) -> None:
    kinds = ("append", "put", "raw")
    samples: dict[tuple[int, str], list[float]] = {
        (n, kind): [] for n in sizes.writers for kind in kinds
    }
    for _ in range(sizes.repeats):
        for n in sizes.writers:
            for kind in kinds:
                result = pool.run(workload.tasks(kind, n, ops=sizes.ops))
                samples[n, kind].append(result.rate)
    report.section(
        f"1. concurrent writers, each on its own branch, {sizes.ops} single-write commits "
        f"each, total commits/s (median of {sizes.repeats} runs; baseline: raw psycopg "
        "autocommit INSERTs of the same rows, as many processes)"
    )
    most = max(sizes.writers)
    for n in sizes.writers:
        raw = statistics.median(samples[n, "raw"])
        for kind, label in (("append", "events.append"), ("put", "kv.put")):
            value = statistics.median(samples[n, kind])
            report.add(
                Row(
                    f"{label}, {n} writer{'s' if n > 1 else ''}",
                    rate(value),
                    rate(raw),
                    value / raw,
                    Target(">=", 0.5, ">= 0.5") if n == most and n >= 16 else None,
                )
            )
    report.note(
        f"writers: {PAYLOAD_BYTES} B JSON payloads; kv.put cycles over 100 keys per branch; "
        f"each writer makes {sizes.warmup} untimed commits first (connect, prepare); the "
        "writer processes are spawned once and reused"
    )


# -- 2 and 3. fork and as_of, PostgreSQL and SQLite --------------------------------


def populate(db: rewinddb.BranchView, keys: int, batch: int = 100) -> None:
    for start in range(0, keys, batch):
        with db.transaction():
            for i in range(start, min(keys, start + batch)):
                db.kv.put(f"key-{i:05d}", {"i": i})


def build_history(db: rewinddb.Database, sizes: Sizes) -> tuple[int, int]:
    """A short key and a long key; the version in the middle of each one's history."""
    short = [db.kv.put("short", {"n": i}) for i in range(sizes.few_versions)]
    long = [db.kv.put("long", {"n": i}) for i in range(sizes.history)]
    return short[len(short) // 2], long[len(long) // 2]


@dataclass
class Backend:
    """Where a database for the fork and as_of figures is made."""

    name: str
    new: Callable[[], tuple[str, str]]  # (the URL or path to measure, one to build with)


def fork_cost(backend: Backend, sizes: Sizes) -> tuple[float, float]:
    """Forks of a small and of a big source branch, both in one database, through one
    connection (two connections to one server can differ by more than the sources do)."""
    at, build = backend.new()
    with rewinddb.open(build) as db:
        for source, keys in (("small-source", sizes.few_keys), ("big-source", sizes.fork_keys)):
            db.branches.fork("default", source)
            populate(db.at(source), keys)
    with rewinddb.open(at) as db:
        expect(len(db.at("big-source").kv.keys()), sizes.fork_keys, "keys on the big source")
        names = itertools.count()

        def fork_of(source: str) -> Callable[[], Any]:
            return lambda: db.branches.fork(source, f"fork-{next(names)}")

        t_small, t_big = interleaved(
            sizes.point_calls, fork_of("small-source"), fork_of("big-source")
        )
    return t_small, t_big


def as_of_cost(backend: Backend, sizes: Sizes) -> tuple[float, float]:
    at, build = backend.new()
    with rewinddb.open(build) as db:
        mid_short, mid_long = build_history(db, sizes)
    with rewinddb.open(at) as db:
        expect(db.kv.get("short", as_of=mid_short), {"n": sizes.few_versions // 2}, "short")
        expect(db.kv.get("long", as_of=mid_long), {"n": sizes.history // 2}, "long")
        return tuple(  # type: ignore[return-value]
            interleaved(
                sizes.point_calls,
                lambda: db.kv.get("short", as_of=mid_short),
                lambda: db.kv.get("long", as_of=mid_long),
            )
        )


def measure_flat(sizes: Sizes, backends: list[Backend], report: Report) -> None:
    forks = {backend.name: fork_cost(backend, sizes) for backend in backends}
    reads = {backend.name: as_of_cost(backend, sizes) for backend in backends}
    report.section(f"2. fork cost (median of {sizes.point_calls} single forks)")
    for name, (small, big) in forks.items():
        report.add(
            Row(
                f"{name}: fork of a {sizes.fork_keys:,}-key source vs {sizes.few_keys} keys",
                us(big),
                us(small),
                big / small,
                Target("<=", 1.5, "<= 1.5"),
            )
        )
    report.section(f"3. kv.get(key, as_of=middle version) (median of {sizes.point_calls} reads)")
    for name, (short, long) in reads.items():
        report.add(
            Row(
                f"{name}: key with {sizes.history:,} versions vs {sizes.few_versions}",
                us(long),
                us(short),
                long / short,
                Target("<=", 2, "<= 2"),
            )
        )
    report.note(
        "fork and as_of sources are built through a connection with synchronous_commit=off "
        "(PostgreSQL) to save time; every timed call runs on a new connection with the "
        "server's default settings"
    )


# -- 4. single-writer latency ------------------------------------------------------


def measure_latency(sizes: Sizes, server: Server, scratch: Path, report: Report) -> None:
    pg = rewinddb.open(server.rewinddb_schema())
    normal = rewinddb.open(scratch / "latency-normal")
    full = rewinddb.open(scratch / "latency-full", durability="full")
    dbs = (pg, normal, full)
    try:
        for db in dbs:  # warm up: connections, prepared statements, caches
            for i in range(5):
                db.kv.put(f"key-{i}", payload(i))
                db.events.append("step", payload(i))
        counter = itertools.count()

        def put(db: rewinddb.Database) -> Callable[[], Any]:
            return lambda: db.kv.put(f"key-{next(counter) % 100}", payload(0))

        def append(db: rewinddb.Database) -> Callable[[], Any]:
            return lambda: db.events.append("step", payload(0))

        def get(db: rewinddb.Database) -> Callable[[], Any]:
            return lambda: db.kv.get("key-1")

        figures = {
            what: interleaved(sizes.point_calls, *(make(db) for db in dbs))
            for what, make in (("kv.put", put), ("events.append", append), ("kv.get", get))
        }
    finally:
        for db in dbs:
            db.close()
    report.section(
        f"4. single-writer latency, PostgreSQL vs SQLite (median of {sizes.point_calls} calls)"
    )
    for what, (t_pg, t_normal, t_full) in figures.items():
        for durability, t_sqlite in (("normal", t_normal), ("full", t_full)):
            report.add(
                Row(
                    f'{what}: PostgreSQL vs SQLite durability="{durability}"',
                    ms(t_pg),
                    ms(t_sqlite),
                    t_pg / t_sqlite,
                )
            )


# -- 5. where a writer's time goes ---------------------------------------------------


def measure_profile(sizes: Sizes, workload: Workload, pool: Writers, report: Report) -> None:
    most = max(sizes.writers)
    results = {
        n: pool.run(workload.tasks("put", n, ops=sizes.profile_ops, profile=True))
        for n in sorted({1, most})
    }
    raw = {n: pool.run(workload.tasks("raw", n, ops=sizes.profile_ops)) for n in results}
    report.section(
        "5. where one kv.put commit goes, mean per commit of one writer (timed around each "
        "statement in the writer; baseline: one raw autocommit INSERT, same writers)"
    )
    for n, result in results.items():
        other = result.per_op - sum(result.profile.values())
        labels = {
            "routine": "one write routine call",
            "begin": "BEGIN and the write lock wait",
            "statements": "other statements",
            "commit": "COMMIT",
        }
        writers = f"{n} writer{'s' if n > 1 else ''}"
        report.add(
            Row(
                f"{writers}: whole kv.put, {result.rate:,.0f} commits/s in all",
                ms(result.per_op),
                ms(raw[n].per_op),
                result.per_op / raw[n].per_op,
            )
        )
        for kind, label in labels.items():
            count = result.counts[kind]
            if count:  # a class kv.put did not use is left out
                seconds = result.profile[kind]
                report.add(
                    Row(
                        f"{writers}:   {label} ({count:.0f} per commit), "
                        f"{seconds / result.per_op:.0%} of the time",
                        ms(seconds),
                    )
                )
        report.add(Row(f"{writers}:   Python, outside statements", ms(other)))


# -- main ------------------------------------------------------------------------


#: The figures, by the name ``--only`` gives them: 1; 2 and 3; 4; 5.
FIGURES = ("writers", "flat", "latency", "profile")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: small N, 1 and 4")
    parser.add_argument("--url", help="a PostgreSQL server to use (default: start a throwaway one)")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting for rewinddb's connections only (what-if runs)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=FIGURES,
        metavar="FIGURE",
        help=f"measure only these figures (repeatable; one of {', '.join(FIGURES)})",
    )
    args = parser.parse_args(argv)
    for setting in args.setting:
        if "=" not in setting or " " in setting:
            parser.error(f"--setting takes NAME=VALUE without spaces, not {setting!r}")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    sizes = QUICK_RUN if args.quick else FULL_RUN
    started = time.perf_counter()
    server = Server(args.url, tuple(args.setting))
    pool: Writers | None = None
    try:
        print(
            describe_machine(
                [sys.argv[0], *argv],
                ("python", python_version()),
                ("server", server.describe()),
                ("sqlite", f"{sqlite3.sqlite_version} (module sqlite3)"),
                ("rewinddb", f"{rewinddb.__version__}, psycopg {psycopg.__version__}"),
            )
        )
        print(
            f"run:      {'quick (small sizes, targets indicative only)' if args.quick else 'full'}"
        )
        print(flush=True)
        report = Report()
        pool = Writers(max(sizes.writers))
        workload = Workload(server, sizes)
        only = set(args.only or FIGURES)
        try:
            if "writers" in only:
                measure_writers(sizes, workload, pool, report)
            with tempfile.TemporaryDirectory(prefix="rewinddb-pg-bench-") as tmp:
                scratch, paths = Path(tmp), itertools.count()

                def pg_new() -> tuple[str, str]:
                    url = server.rewinddb_schema()
                    return url, server.url_for(server.schemas[-1], "synchronous_commit=off")

                def sqlite_new() -> tuple[str, str]:
                    path = str(scratch / f"db-{next(paths)}")
                    return path, path

                if "flat" in only:
                    backends = [Backend("PostgreSQL", pg_new), Backend("SQLite", sqlite_new)]
                    measure_flat(sizes, backends, report)
                if "latency" in only:
                    measure_latency(sizes, server, scratch, report)
            if "profile" in only:
                measure_profile(sizes, workload, pool, report)
        finally:
            workload.close()
        print(report.render())
    finally:
        if pool is not None:
            pool.close()
        server.close()
    print(f"\nmeasured in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
