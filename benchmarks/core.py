"""Core performance figures of rewinddb, each against a baseline measured in the same run.

Run it from the repository root::

    .venv/bin/python benchmarks/core.py           # the full run (well under two minutes)
    .venv/bin/python benchmarks/core.py --quick   # a smoke run with small sizes
    .venv/bin/python benchmarks/core.py --diff-only   # only the diffs and merges, against the peers
    .venv/bin/python benchmarks/core.py --merge-only  # only the merges, against the peers
    .venv/bin/python benchmarks/core.py --reads-only  # only the point reads (9)

Every figure is a median over several repetitions. Where a figure has a baseline, the two
are measured interleaved (A, B, A, B, ...), so that a noisy machine slows both alike, and
the table shows ``ratio = rewinddb / baseline``. The script only measures and prints: it
asserts no timing, and it exits 0 whatever the verdicts.

The figures:

1. the seeds' workload "ten forks and twenty writes" (a competitor: 831 ms, 68 KB), total
   time and size on disk, against the same number of single-row commits in raw SQLite;
2. the cost of one fork with 10,000 keys on the source against 10 keys;
3. an ``as_of`` read of a key with 10,000 versions against a key with 10;
4. storage of 1,000 versions of a list that grows by one 500-byte item per version, each
   written whole, and the read time of an old version against the latest;
5. single-write commits per second against raw SQLite single-insert commits, for
   ``durability="normal"`` and ``"full"`` with the same journal mode and synchronous;
6. ``events.append`` per second, and an ``as_of`` read on a branch ten forks deep;
7. the event-log protocol: appends with ``expected_index``, ``events.verify()``; and
   ``db.verify()`` of one branch of many small commits (a LangGraph saver's index);
8. ``db.diff`` of two branches that differ in 1,000 of 10,000 keys and in 10 of 1,000,000,
   against DoltLite's ``dolt_diff_<table>`` and StrataDB 1.2.7's ``branches.diff`` when
   they are installed (``pip install doltlite stratadb==1.2.7``; each runs in a worker
   process of its own, ``benchmarks/peers.py``, timed call by call between rewinddb's).
   Without them the figures are printed without that baseline, and a note says so.
   Next to them, ``db.branches.merge`` of a source that changed 1,000 of 10,000 keys into a
   target that changed nothing, and into one that changed 1,000 other keys (three-way),
   against DoltLite's ``dolt_merge('--no-ff', ...)`` and StrataDB's ``branches.merge``:
   each call forks a fresh target and source and writes their changes untimed, then
   times the merge alone;
9. point reads on a database of 10,000 keys (each written twice, one version each time):
   ``kv.get`` of a key the connection remembers, the first ``kv.get`` after another
   process committed (which drops what a connection remembers) and ``kv.get`` ``as_of``
   the first version (a key the memory cannot answer: one index seek; also inside one
   ``db.read()`` block, for information), each against a raw sqlite3 primary-key select
   on a plain table of the same keys in this process (for the first read after a commit,
   a select after that process committed to the plain table too: SQLite drops its page
   cache then as well); and the ``as_of`` read against StrataDB 1.2.7's
   ``kv.get(as_of=...)`` when it is installed, run in this process (a point read costs
   microseconds: a worker's pipe would cost more than the read).
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import random
import select
import sqlite3
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from _report import (
    KIB,
    MIB,
    Report,
    Row,
    Target,
    describe_machine,
    expect,
    gc_paused,
    interleaved,
    ms,
    python_version,
    rate,
    repeated,
    size,
    timed,
    us,
)
from peers import Peer, changed_indexes, diff_key, diff_value, target_indexes

import rewinddb

#: The seeds' figures for "ten forks and twenty writes" on the competitor.
SEED_FORKS, SEED_WRITES = 10, 20
SEED_COMPETITOR_MS = 831
SEED_COMPETITOR_BYTES = 68 * KIB

#: rewinddb's durability levels and the ``PRAGMA synchronous`` each stands for.
SYNCHRONOUS = {"normal": "NORMAL", "full": "FULL"}

RAW_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, key TEXT NOT NULL, value BLOB NOT NULL)"
)
RAW_INSERT = "INSERT INTO t (key, value) VALUES (?, ?)"


# -- sizes -----------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    """How much work each figure does; ``--quick`` shrinks everything."""

    repeats: int = 9  # repetitions of the commit-rate runs
    seed_repeats: int = 15  # repetitions of the (short) seed workload and of open
    point_calls: int = 500  # timed calls of a single fork or read, per side
    fork_keys: int = 10_000  # keys on the big fork source
    few: int = 10  # keys on the small fork source, versions of the short key
    history: int = 10_000  # versions of the long key
    list_versions: int = 1_000  # versions of the growing list
    item_bytes: int = 500  # encoded size of one list item
    list_reads: int = 31  # timed reads of each list version
    commits: int = 5_000  # single commits per repetition, durability="normal"
    full_commits: int = 500  # single commits per repetition, durability="full"
    depth: int = 10  # forks between default and the deep branch
    verify_events: int = 100_000  # events in the log that verify() checks
    verify_commits: int = 2_000  # commits of 10 new keys each that db.verify() checks
    diff_keys: int = 10_000  # keys on default for the diff
    diff_changed: int = 1_000  # of which the branch changes
    diff_big_keys: int = 1_000_000  # keys on default for the diff of a large state
    diff_big_changed: int = 10  # of which the branch changes
    diff_calls: int = 31  # timed diffs, per side
    diff_cold: int = 5  # timed first diffs after reopening
    merge_keys: int = 10_000  # keys on default for the merges
    merge_changed: int = 1_000  # of which the source changes (and the target other ones)
    merge_calls: int = 15  # timed merges, per side (each on a fresh source and target)
    read_keys: int = 10_000  # keys of the point reads' database
    read_calls: int = 2_000  # timed point reads, per side (each of another key)
    cold_calls: int = 500  # timed first reads after another connection's commit, per side


FULL_RUN = Sizes()
QUICK_RUN = Sizes(
    repeats=3,
    seed_repeats=3,
    point_calls=30,
    fork_keys=1_000,
    history=1_000,
    list_versions=200,
    list_reads=5,
    commits=200,
    full_commits=40,
    verify_events=10_000,
    verify_commits=200,
    diff_keys=2_000,
    diff_changed=200,
    diff_big_keys=20_000,
    diff_calls=7,
    diff_cold=3,
    merge_keys=2_000,
    merge_changed=200,
    merge_calls=5,
    read_keys=2_000,
    read_calls=300,
    cold_calls=100,
)


# -- directories and sizes on disk -----------------------------------------------


@contextmanager
def scratch() -> Iterator[Path]:
    """A fresh, not yet existing database directory inside a temporary one."""
    with tempfile.TemporaryDirectory(prefix="rewinddb-bench-") as parent:
        yield Path(parent) / "db"


def measured_in_scratch(measure: Callable[[Path], float]) -> Callable[[], float]:
    """A measuring function that runs ``measure`` in a fresh directory and cleans up."""

    def run() -> float:
        with scratch() as directory:
            return measure(directory)

    return run


@dataclass(frozen=True)
class DiskSize:
    """A closed database directory on disk."""

    total: int  # every file as left after close, -wal included
    wal: int  # of which -wal files
    checkpointed: int  # the total after PRAGMA wal_checkpoint(TRUNCATE)


def directory_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.iterdir() if path.is_file())


def disk_size(directory: Path) -> DiskSize:
    """The size of a closed database directory, checkpointing any WAL left behind."""
    total = directory_bytes(directory)
    wal = sum(path.stat().st_size for path in directory.glob("*-wal"))
    if wal:
        for wal_file in directory.glob("*-wal"):
            conn = sqlite3.connect(wal_file.with_name(wal_file.name.removesuffix("-wal")))
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.close()
    return DiskSize(total, wal, directory_bytes(directory))


def page_usage(db_file: Path) -> str:
    """How the pages of a SQLite file are used, e.g. '17 pages of 4096 B (7 tables, ...)'."""
    conn = sqlite3.connect(db_file)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        page_count = conn.execute("PRAGMA page_count").fetchone()[0]
        kinds = dict(conn.execute("SELECT type, count(*) FROM sqlite_master GROUP BY type"))
        try:
            empty = conn.execute(
                "SELECT count(*) FROM (SELECT name FROM dbstat GROUP BY name HAVING sum(ncell) = 0)"
            ).fetchone()[0]
            used = f", {empty} of them holding no row yet"
        except sqlite3.Error:  # SQLite built without the dbstat table
            used = ""
    finally:
        conn.close()
    return (
        f"{page_count} pages of {page_size} B: the schema page, "
        f"{kinds.get('table', 0)} tables and {kinds.get('index', 0)} indexes, "
        f"each at least one page{used}"
    )


# -- raw SQLite, the baseline ----------------------------------------------------


def raw_open(db_file: Path, synchronous: str) -> sqlite3.Connection:
    """A plain SQLite file with the pragmas rewinddb uses (WAL, ``synchronous``)."""
    db_file.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db_file, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute(RAW_SCHEMA)
    return conn


def raw_insert_rate(directory: Path, synchronous: str, n: int) -> float:
    """Single-row INSERTs per second, each its own (autocommit) transaction."""
    conn = raw_open(directory / "raw.sqlite3", synchronous)
    try:

        def insert_many() -> None:
            for i in range(n):
                conn.execute(RAW_INSERT, (f"key-{i % 100}", orjson.dumps({"n": i})))

        return n / timed(insert_many)
    finally:
        conn.close()


# -- 1. the seed workload --------------------------------------------------------


def seed_rewinddb(directory: Path) -> None:
    """Open a fresh database, fork ten branches, write twenty small values, close."""
    db = rewinddb.open(directory)
    names = [f"attempt-{i}" for i in range(SEED_FORKS)]
    for name in names:
        db.branches.fork("default", name)
    views = [db.at(name) for name in names]
    for i in range(SEED_WRITES):
        view = views[i % len(views)]
        if i % 2:
            view.json.set(f"doc-{i}", "$", {"step": i, "status": "ok"})
        else:
            view.kv.put(f"key-{i}", {"step": i, "note": "small"})
    db.close()


def seed_raw(directory: Path) -> None:
    """The baseline: a fresh SQLite file and as many rows, one commit each, then close."""
    conn = raw_open(directory / "raw.sqlite3", "NORMAL")
    for i in range(SEED_FORKS + SEED_WRITES):
        conn.execute(RAW_INSERT, (f"row-{i}", orjson.dumps({"step": i})))
    conn.close()


def open_time(directory: Path) -> float:
    """Seconds to open (create) a new database, closed again untimed."""
    start = time.perf_counter()
    db = rewinddb.open(directory)
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed


def raw_open_time(directory: Path) -> float:
    """The baseline: seconds to create a SQLite file with the pragmas and one table."""
    start = time.perf_counter()
    conn = raw_open(directory / "raw.sqlite3", "NORMAL")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def run_seed(workload: Callable[[Path], None]) -> tuple[float, DiskSize]:
    """Time one run of a seed workload on a fresh directory; measure it on disk after."""
    with scratch() as directory:
        with gc_paused():
            elapsed = timed(lambda: workload(directory))
        return elapsed, disk_size(directory)


def measure_seed(sizes: Sizes, report: Report) -> None:
    cold, _ = run_seed(seed_rewinddb)  # the first open in this process pays imports, caches
    run_seed(seed_raw)
    runs: list[tuple[float, DiskSize]] = []
    raw_runs: list[tuple[float, DiskSize]] = []
    for _ in range(sizes.seed_repeats):
        runs.append(run_seed(seed_rewinddb))
        raw_runs.append(run_seed(seed_raw))
    elapsed = statistics.median(run[0] for run in runs)
    raw_elapsed = statistics.median(run[0] for run in raw_runs)
    disk, raw_disk = runs[-1][1], raw_runs[-1][1]

    report.section(
        f"1. seed: open, {SEED_FORKS} forks, {SEED_WRITES} writes, close (competitor "
        f"{SEED_COMPETITOR_MS} ms, 68 KB; baseline: {SEED_FORKS + SEED_WRITES} raw commits)"
    )
    report.add(
        Row(
            f"total time (median of {sizes.seed_repeats})",
            ms(elapsed),
            ms(raw_elapsed),
            elapsed / raw_elapsed,
            Target("<", 0.030, "< 30 ms"),
            checked=elapsed,
        )
    )
    opened, raw_opened = repeated(
        sizes.seed_repeats, measured_in_scratch(open_time), measured_in_scratch(raw_open_time)
    )
    report.add(
        Row("of which: open a new database", ms(opened), ms(raw_opened), opened / raw_opened)
    )
    report.add(Row("total time, first run in the process (cold)", ms(cold)))
    report.add(
        Row(
            "size on disk after close" + (" (-wal included)" if disk.wal else ""),
            size(disk.total),
            size(raw_disk.total),
            disk.total / raw_disk.total,
            Target("<", SEED_COMPETITOR_BYTES, "< 68 KiB"),
            checked=disk.total,
        )
    )
    if disk.wal or raw_disk.wal:
        report.add(
            Row(
                "size after wal_checkpoint(TRUNCATE)",
                size(disk.checkpointed),
                size(raw_disk.checkpointed),
                disk.checkpointed / raw_disk.checkpointed,
            )
        )
    report.note(
        f"seed size: {disk.total:,} B ({'no' if not disk.wal else size(disk.wal)} -wal left "
        f"after close); {page_usage_of_seed()}"
    )


def page_usage_of_seed() -> str:
    """Page usage of a database after the seed workload."""
    with scratch() as directory:
        seed_rewinddb(directory)
        return page_usage(directory / "rewind.sqlite3")


# -- 2. fork cost ----------------------------------------------------------------


def populated(directory: Path, keys: int, batch: int = 100) -> rewinddb.Database:
    """A database with ``keys`` keys on default, written ``batch`` keys per version."""
    db = rewinddb.open(directory)
    for start in range(0, keys, batch):
        with db.transaction():
            for i in range(start, min(keys, start + batch)):
                db.kv.put(f"key-{i:05d}", {"i": i})
    return db


def measure_fork(sizes: Sizes, report: Report) -> None:
    with scratch() as small_dir, scratch() as big_dir:
        small, big = populated(small_dir, sizes.few), populated(big_dir, sizes.fork_keys)
        try:
            expect(len(big.kv.keys()), sizes.fork_keys, "keys on the big source")
            names = itertools.count()

            def fork_of(db: rewinddb.Database) -> Callable[[], Any]:
                return lambda: db.branches.fork("default", f"fork-{next(names)}")

            t_small, t_big = interleaved(sizes.point_calls, fork_of(small), fork_of(big))
        finally:
            small.close()
            big.close()
    report.section(f"2. fork cost (median of {sizes.point_calls} single forks)")
    report.add(
        Row(
            f"fork of a {sizes.fork_keys:,}-key source vs {sizes.few} keys",
            us(t_big),
            us(t_small),
            t_big / t_small,
            Target("<=", 1.5, "<= 1.5"),
        )
    )


# -- 3. as_of reads against history length ---------------------------------------


def measure_history(sizes: Sizes, report: Report) -> None:
    with scratch() as directory:
        db = rewinddb.open(directory)
        try:
            short = [db.kv.put("short", {"n": i}) for i in range(sizes.few)]
            long = [db.kv.put("long", {"n": i}) for i in range(sizes.history)]
            mid_short, mid_long = len(short) // 2, len(long) // 2
            expect(db.kv.get("short", as_of=short[mid_short]), {"n": mid_short}, "short key")
            expect(db.kv.get("long", as_of=long[mid_long]), {"n": mid_long}, "long key")
            t_short, t_long = interleaved(
                sizes.point_calls,
                lambda: db.kv.get("short", as_of=short[mid_short]),
                lambda: db.kv.get("long", as_of=long[mid_long]),
            )
        finally:
            db.close()
    report.section(f"3. kv.get(key, as_of=middle version) (median of {sizes.point_calls} reads)")
    report.add(
        Row(
            f"key with {sizes.history:,} versions vs {sizes.few}",
            us(t_long),
            us(t_short),
            t_long / t_short,
            Target("<=", 2, "<= 2"),
        )
    )


# -- 4. storage of a growing list ------------------------------------------------


def chat_item(i: int, nbytes: int) -> dict[str, Any]:
    """A chat message whose canonical JSON encoding is exactly ``nbytes`` bytes."""
    message: dict[str, Any] = {"i": i, "role": "user" if i % 2 else "assistant", "text": ""}
    pad = nbytes - len(orjson.dumps(message, option=orjson.OPT_SORT_KEYS))
    message["text"] = "".join(random.Random(i).choices(string.ascii_letters + " ", k=pad))
    return message


def encoded_list_bytes(items: int, item_bytes: int) -> int:
    """Bytes of the compact JSON encoding of a list of ``items`` items: '[' a,b,... ']'."""
    return 2 + items * item_bytes + items - 1


def measure_storage(sizes: Sizes, report: Report) -> None:
    n, item_bytes = sizes.list_versions, sizes.item_bytes
    items = [chat_item(i, item_bytes) for i in range(n)]
    expect(len(orjson.dumps(items[:3])), encoded_list_bytes(3, item_bytes), "list encoding")
    naive = sum(encoded_list_bytes(k, item_bytes) for k in range(1, n + 1))
    with scratch() as directory:
        db = rewinddb.open(directory)
        try:
            grown: list[dict[str, Any]] = []

            def write_all() -> list[int]:
                versions = []
                for item in items:
                    grown.append(item)
                    versions.append(db.json.set("chat", "$", grown))
                return versions

            with gc_paused():
                start = time.perf_counter()
                versions = write_all()
                write_time = time.perf_counter() - start
            picks = {count: versions[count - 1] for count in (sizes.few, n // 2, n)}
            # Read from storage, as another process or a later session does: the writing
            # process itself reads the latest version from the encoding it remembers.
            db.close()
            db = rewinddb.open(directory)
            for count, version in picks.items():
                expect(len(db.json.get("chat", as_of=version)), count, f"version {version}")
            early, middle, latest = interleaved(
                sizes.list_reads,
                *(lambda v=version: db.json.get("chat", as_of=v) for version in picks.values()),
            )
        finally:
            db.close()
        disk = disk_size(directory)

    report.section(
        f"4. {n:,} versions of a list growing by a {item_bytes} B item, json.set whole "
        "(baseline: each version whole)"
    )
    report.add(
        Row(
            "size on disk after close" + (" (-wal included)" if disk.wal else ""),
            size(disk.total),
            size(naive),
            disk.total / naive,
            Target("<", 2 * MIB, "< 2 MiB"),
            checked=disk.total,
        )
    )
    if disk.wal:
        report.add(Row("size after wal_checkpoint(TRUNCATE)", size(disk.checkpointed)))
    report.add(Row("json.set of the whole list, mean per version", ms(write_time / n)))
    count_early, count_middle, count_latest = picks
    read_rows = ((count_early, early), (count_middle, middle), (count_latest, latest))
    for count, seconds in read_rows:
        report.add(
            Row(
                f"read version {picks[count]} ({count:,} items): time (per item)",
                f"{ms(seconds)} ({us(seconds / count)})",
            )
        )
    report.add(
        Row(
            f"read version {picks[count_middle]} vs the latest, time",
            ms(middle),
            ms(latest),
            middle / latest,
        )
    )
    per_middle, per_latest = middle / count_middle, latest / count_latest
    report.add(
        Row(
            f"read version {picks[count_middle]} vs the latest, per item",
            us(per_middle),
            us(per_latest),
            per_middle / per_latest,
            Target("<=", 1.5, "<= 1.5"),
        )
    )
    report.note(
        f"storage: the latest version alone encodes to {size(encoded_list_bytes(n, item_bytes))}"
        f"; storing every version whole would take {naive:,} B ({size(naive)})"
    )


# -- 5 and 6. commits per second -------------------------------------------------


def rewinddb_rate(directory: Path, durability: str, n: int, write: str) -> float:
    """Single-write commits per second on a fresh database: ``kv`` puts or ``events``."""
    db = rewinddb.open(directory, durability=durability)
    try:

        def put_many() -> None:
            for i in range(n):
                db.kv.put(f"key-{i % 100}", {"n": i})

        def append_many() -> None:
            for i in range(n):
                db.events.append("tick", {"n": i})

        return n / timed(put_many if write == "kv" else append_many)
    finally:
        db.close()


def measure_commits(sizes: Sizes, report: Report) -> None:
    normal_put, normal_append, normal_raw = repeated(
        sizes.repeats,
        measured_in_scratch(lambda d: rewinddb_rate(d, "normal", sizes.commits, "kv")),
        measured_in_scratch(lambda d: rewinddb_rate(d, "normal", sizes.commits, "events")),
        measured_in_scratch(lambda d: raw_insert_rate(d, SYNCHRONOUS["normal"], sizes.commits)),
    )
    full_put, full_raw = repeated(
        sizes.repeats,
        measured_in_scratch(lambda d: rewinddb_rate(d, "full", sizes.full_commits, "kv")),
        measured_in_scratch(lambda d: raw_insert_rate(d, SYNCHRONOUS["full"], sizes.full_commits)),
    )
    report.section(
        "5. single-write commits/s (baseline: raw single-row INSERT commits, same WAL "
        f"and synchronous; median of {sizes.repeats} runs)"
    )
    for label, put, raw, n in (
        ('kv.put, durability="normal" (WAL, NORMAL)', normal_put, normal_raw, sizes.commits),
        ('kv.put, durability="full" (WAL, FULL)', full_put, full_raw, sizes.full_commits),
    ):
        report.add(
            Row(
                f"{label}, {n:,} commits",
                rate(put),
                rate(raw),
                put / raw,
                Target(">=", 0.25, ">= 0.25"),
            )
        )
    report.section("6. events and fork depth")
    report.add(
        Row(
            f'events.append, durability="normal", {sizes.commits:,} appends',
            rate(normal_append),
            rate(normal_raw),
            normal_append / normal_raw,
        )
    )


# -- 6. as_of reads against fork depth -------------------------------------------


def measure_depth(sizes: Sizes, report: Report) -> None:
    with scratch() as directory:
        db = rewinddb.open(directory)
        try:
            db.kv.put("target", {"found": True})
            parent = "default"
            for level in range(1, sizes.depth + 1):
                name = f"level-{level}"
                db.branches.fork(parent, name)
                db.at(name).kv.put(f"note-{level}", level)  # each fork at its own version
                parent = name
            deep, version = db.at(parent), db.version
            expect(deep.kv.get("target", as_of=version), {"found": True}, "deep read")
            t_default, t_deep = interleaved(
                sizes.point_calls,
                lambda: db.kv.get("target", as_of=version),
                lambda: deep.kv.get("target", as_of=version),
            )
        finally:
            db.close()
    report.add(
        Row(
            f"kv.get(as_of) on a branch {sizes.depth} forks deep vs on default",
            us(t_deep),
            us(t_default),
            t_deep / t_default,
        )
    )


# -- 7. the event-log protocol ---------------------------------------------------


def append_rate(directory: Path, n: int, expected_index: bool) -> float:
    """Single appends per second, each its own commit, with or without expected_index."""
    db = rewinddb.open(directory)
    try:

        def append_many() -> None:
            for i in range(n):
                db.events.append("tick", {"n": i}, expected_index=i if expected_index else None)

        return n / timed(append_many)
    finally:
        db.close()


def verify_time(directory: Path, events: int) -> float:
    """Seconds for events.verify() over a log of ``events`` events."""
    db = rewinddb.open(directory)
    try:
        for start in range(0, events, 1000):
            with db.transaction():
                for i in range(start, min(start + 1000, events)):
                    db.events.append("tick", {"n": i, "text": "payload " * 8})
        report = None

        def verify() -> None:
            nonlocal report
            report = db.events.verify()

        seconds = statistics.median(timed(verify) for _ in range(3))
        expect((report.ok, report.checked) if report else None, (True, events), "verify")
        return seconds
    finally:
        db.close()


def db_verify_time(directory: Path, commits: int) -> float:
    """Seconds for db.verify() of one branch of ``commits`` commits of 10 new keys each
    (the shape of an index a LangGraph saver keeps: one branch, many small commits)."""
    db = rewinddb.open(directory)
    try:
        for commit in range(commits):
            db.kv.put_many(
                {f"key-{commit}-{i}": {"n": i, "text": "payload " * 8} for i in range(10)}
            )
        report = None

        def verify() -> None:
            nonlocal report
            report = db.verify()

        seconds = statistics.median(timed(verify) for _ in range(3))
        expect(report.ok if report else None, True, "db.verify()")
        return seconds
    finally:
        db.close()


def measure_event_log(sizes: Sizes, report: Report) -> None:
    checked, plain = repeated(
        sizes.repeats,
        measured_in_scratch(lambda d: append_rate(d, sizes.commits, True)),
        measured_in_scratch(lambda d: append_rate(d, sizes.commits, False)),
    )
    with scratch() as directory:
        seconds = verify_time(directory, sizes.verify_events)
    with scratch() as directory:
        whole = db_verify_time(directory, sizes.verify_commits)
    report.section("7. the event-log protocol, and db.verify()")
    report.add(
        Row(
            f"events.append with expected_index, {sizes.commits:,} appends (vs without)",
            rate(checked),
            rate(plain),
            checked / plain,
        )
    )
    report.add(
        Row(
            f"events.verify() of {sizes.verify_events:,} events (median of 3)",
            ms(seconds),
            target=Target("<", 2.0, "< 2 s"),
            checked=seconds,
        )
    )
    report.add(
        Row(
            f"db.verify() of {sizes.verify_commits:,} commits of 10 keys on one branch "
            "(median of 3)",
            ms(whole),
            target=Target("<", 1.0, "< 1 s"),
            checked=whole,
        )
    )


# -- 8. diff against the peers ----------------------------------------------------

#: The peers' figures, and what each one's diff returns.
PEER_LABELS = {
    "doltlite": "DoltLite dolt_diff_kv, rows with both values",
    "stratadb": "StrataDB branches.diff, changed keys only",
}
#: StrataDB takes batches of at most 1,000 keys: a million takes half a minute to build.
STRATA_MOST_KEYS = 100_000


def diffed(directory: Path, keys: int, changed: int) -> rewinddb.Database:
    """``keys`` keys on default (``kv.put_many``, 50,000 per version) and a branch ``run``
    that changes ``changed`` of them in one version (``peers.diff_value``)."""
    db = rewinddb.open(directory)
    for start in range(0, keys, 50_000):
        db.kv.put_many(
            {diff_key(i): diff_value(i, False) for i in range(start, min(keys, start + 50_000))}
        )
    db.branches.fork("default", "run")
    db.at("run").kv.put_many(
        {diff_key(i): diff_value(i, True) for i in changed_indexes(keys, changed)}
    )
    return db


def peer_samples(
    calls: int,
    fn: Callable[[], Any],
    peers: list[Peer],
    expected: int,
    *,
    prepare: Callable[[], Any] | None = None,
    what: str = "diff rows",
) -> tuple[float, dict[str, float]]:
    """Median seconds of ``fn`` and of each peer's built workload, called in turn (the
    order reversing every round, as in ``samples``); a peer's time is measured in its
    worker, around its call alone. ``prepare`` runs untimed before each call of ``fn``."""
    local: list[float] = []
    remote: dict[str, list[float]] = {peer.name: [] for peer in peers}
    turn: list[Peer | None] = [None, *peers]
    with gc_paused():
        for _ in range(calls):
            for who in turn:
                if who is None:
                    if prepare is not None:
                        prepare()
                    local.append(timed(fn))
                else:
                    seconds, count = who.call()
                    expect(count, expected, f"{who.name}'s {what}")
                    remote[who.name].append(seconds)
            turn.reverse()
    return statistics.median(local), {
        name: statistics.median(taken) for name, taken in remote.items()
    }


def add_peer_rows(
    report: Report,
    label: str,
    ours: float,
    theirs: dict[str, float],
    peers: list[Peer],
    labels: dict[str, str],
    *,
    doltlite_at_most: float,
) -> None:
    """rewinddb's row of a section 8 figure, then one row against each peer (DoltLite's
    with its target: at most ``doltlite_at_most`` times its time)."""
    report.add(Row(label, ms(ours)))
    limit = doltlite_at_most
    for peer in peers:
        report.add(
            Row(
                f"  vs {labels[peer.name]} {peer.version}",
                ms(ours),
                ms(theirs[peer.name]),
                ours / theirs[peer.name],
                Target("<=", limit, f"<= {limit:g}") if peer.name == "doltlite" else None,
            )
        )


def cold_diff(directory: Path, calls: int, expected: int) -> float:
    """Median seconds of the first diff after opening the database again: the entries
    are read from storage, none from the connection's memory."""
    taken = []
    for _ in range(calls):
        db = rewinddb.open(directory)
        try:
            with gc_paused():
                start = time.perf_counter()
                found = len(db.diff("default", "run"))
                taken.append(time.perf_counter() - start)
            expect(found, expected, "diff changes after reopening")
        finally:
            db.close()
    return statistics.median(taken)


def measure_diff_case(
    sizes: Sizes, report: Report, peers: list[Peer], keys: int, changed: int
) -> float:
    """One diff figure against every peer that can build it; rewinddb's median."""
    expected = len(changed_indexes(keys, changed))
    running = [peer for peer in peers if peer.name != "stratadb" or keys <= STRATA_MOST_KEYS]
    for peer in running:
        peer.build("diff", keys=keys, changed=changed)
    with scratch() as directory:
        db = diffed(directory, keys, changed)
        try:
            expect(len(db.diff("default", "run")), expected, "diff changes")
            ours, theirs = peer_samples(
                sizes.diff_calls, lambda: len(db.diff("default", "run")), running, expected
            )
        finally:
            db.close()
        cold = cold_diff(directory, sizes.diff_cold, expected)
    label = f"db.diff, {expected:,} of {keys:,} keys changed"
    add_peer_rows(report, label, ours, theirs, running, PEER_LABELS, doltlite_at_most=1)
    report.add(Row(f"{label}, first diff after reopening", ms(cold)))
    return ours


#: What each peer's merge is.
MERGE_LABELS = {
    "doltlite": "DoltLite dolt_merge('--no-ff')",
    "stratadb": "StrataDB branches.merge",
}


class MergeCalls:
    """rewinddb's side of a merge figure: ``prepare`` forks ``t<n>`` from default and
    ``s<n>`` from it and writes their changes (``kv.put_many``, one version each), ``call``
    merges ``s<n>`` into ``t<n>``; ``applied`` is how many changes the receipt lists."""

    def __init__(self, db: rewinddb.Database, keys: int, changed: int, target_changed: bool):
        self.db, self.keys, self.changed = db, keys, changed
        self.target_changed = target_changed
        self.calls, self.applied = 0, 0

    def prepare(self) -> None:
        db, n = self.db, self.calls
        self.calls += 1
        db.branches.fork("default", f"t{n}")
        db.branches.fork(f"t{n}", f"s{n}")
        db.at(f"s{n}").kv.put_many(
            {diff_key(i): diff_value(i, True) for i in changed_indexes(self.keys, self.changed)}
        )
        if self.target_changed:
            db.at(f"t{n}").kv.put_many(
                {diff_key(i): diff_value(i, True) for i in target_indexes(self.keys, self.changed)}
            )

    def call(self) -> None:
        n = self.calls - 1
        self.applied = len(self.db.branches.merge(f"s{n}", f"t{n}").applied)


def measure_merge_case(
    sizes: Sizes, report: Report, peers: list[Peer], target_changed: bool
) -> float:
    """One merge figure against every peer; rewinddb's median."""
    keys, changed = sizes.merge_keys, sizes.merge_changed
    expected = len(changed_indexes(keys, changed))
    for peer in peers:
        peer.build("merge", keys=keys, changed=changed, target_changed=int(target_changed))
    with scratch() as directory:
        db = rewinddb.open(directory)
        try:
            db.kv.put_many({diff_key(i): diff_value(i, False) for i in range(keys)})
            calls = MergeCalls(db, keys, changed, target_changed)
            calls.prepare()
            calls.call()  # once untimed: the receipt is checked
            expect(calls.applied, expected, "merge changes applied")

            def call() -> None:
                calls.call()

            ours, theirs = peer_samples(
                sizes.merge_calls,
                call,
                peers,
                expected,
                prepare=calls.prepare,
                what="merged changes",
            )
            expect(calls.applied, expected, "merge changes applied")
        finally:
            db.close()
    target = f"target changed {expected:,} other keys" if target_changed else "target unchanged"
    label = f"branches.merge, {expected:,} of {keys:,} keys changed, {target}"
    add_peer_rows(report, label, ours, theirs, peers, MERGE_LABELS, doltlite_at_most=2)
    return ours


def measure_merge(sizes: Sizes, report: Report, peers: list[Peer]) -> None:
    report.section(
        f"8. branches.merge, a fresh source and target each call (median of "
        f"{sizes.merge_calls}, interleaved with the peers' merges)"
    )
    measure_merge_case(sizes, report, peers, target_changed=False)
    measure_merge_case(sizes, report, peers, target_changed=True)


def start_peers() -> tuple[list[Peer], list[str]]:
    """A worker of every peer that starts, and why the others did not."""
    peers: list[Peer] = []
    missing: list[str] = []
    for name in PEER_LABELS:
        started = Peer.start(name)
        if isinstance(started, Peer):
            peers.append(started)
        else:
            missing.append(f"{name}: {started}")
    return peers, missing


def measure_diff(sizes: Sizes, report: Report, *, diffs: bool = True) -> None:
    """Section 8: the diffs (unless not ``diffs``) and the merges, against the peers."""
    peers, missing = start_peers()
    try:
        if diffs:
            measure_diffs(sizes, report, peers)
        measure_merge(sizes, report, peers)
    finally:
        for peer in peers:
            peer.close()
    if missing:
        report.note(
            "diff and merge figures without a peer's baseline (pip install doltlite "
            "stratadb==1.2.7 to compare): " + "; ".join(missing)
        )
    if (
        diffs
        and any(peer.name == "stratadb" for peer in peers)
        and sizes.diff_big_keys > STRATA_MOST_KEYS
    ):
        report.note(
            f"StrataDB is not run at {sizes.diff_big_keys:,} keys: it takes at most 1,000 "
            "keys per batch, and building that state takes about half a minute"
        )


def measure_diffs(sizes: Sizes, report: Report, peers: list[Peer]) -> None:
    report.section(
        f"8. db.diff of two branches, every change fetched (median of {sizes.diff_calls}, "
        "interleaved with the peers' diffs)"
    )
    measure_diff_case(sizes, report, peers, sizes.diff_keys, sizes.diff_changed)
    big = measure_diff_case(sizes, report, peers, sizes.diff_big_keys, sizes.diff_big_changed)
    report.add(
        Row(
            f"db.diff of {sizes.diff_big_changed} of {sizes.diff_big_keys:,} keys, target",
            ms(big),
            target=Target("<", 0.001, "< 1 ms"),
            checked=big,
        )
    )


# -- 9. point reads against raw SQLite and StrataDB ---------------------------------

RAW_KV_SCHEMA = "CREATE TABLE kv (key TEXT PRIMARY KEY, value BLOB NOT NULL)"
RAW_POINT_SELECT = "SELECT value FROM kv WHERE key = ?"


def read_keys(sizes: Sizes, calls: int) -> list[str]:
    """``calls`` keys of the point reads' database, spread over it (a key once each
    while there are enough)."""
    step = max(1, sizes.read_keys // calls)
    return [diff_key((i * step) % sizes.read_keys) for i in range(calls)]


def raw_kv(db_file: Path, keys: int) -> sqlite3.Connection:
    """A plain table of the same keys and (old) values, WAL as rewinddb's file."""
    conn = raw_open(db_file, "NORMAL")
    conn.execute(RAW_KV_SCHEMA)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO kv VALUES (?, ?)",
        ((diff_key(i), orjson.dumps(diff_value(i, False))) for i in range(keys)),
    )
    conn.execute("COMMIT")
    return conn


#: The other connection of the first reads after a commit: a process of its own (as an
#: agent writing while an explorer reads), committing to both databases on each line.
OTHER_WRITER = """
import sqlite3, sys
import rewinddb
db = rewinddb.open(sys.argv[1])
raw = sqlite3.connect(sys.argv[2], isolation_level=None)
print("ready", flush=True)
for n, _ in enumerate(sys.stdin):
    db.kv.put("elsewhere", n)
    raw.execute("INSERT OR REPLACE INTO kv VALUES ('elsewhere', ?)", (n,))
    print("committed", flush=True)
db.close()
"""


class OtherWriter:
    """Another process with a connection to each database; ``commit`` has it commit to
    both and waits until it has."""

    def __init__(self, directory: Path, raw_file: Path) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", OTHER_WRITER, str(directory), str(raw_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._answer("ready")

    def _answer(self, expected: str) -> None:
        assert self._process.stdout is not None
        line = self._process.stdout.readline().strip()
        if line != expected:
            raise RuntimeError(f"the other writer said {line!r} (exit {self._process.poll()})")

    def commit(self) -> None:
        """(Waiting busy, not asleep: a process woken from a sleep runs its next few
        thousand instructions several times slower, whatever they are, which would
        measure the scheduler rather than the read.)"""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write("commit\n")
        self._process.stdin.flush()
        answer = [self._process.stdout]
        while not select.select(answer, [], [], 0)[0]:
            pass
        self._answer("committed")

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=60)


def point_samples(
    keys: list[str], *sides: tuple[Callable[[], Any] | None, Callable[[str], Any]]
) -> list[float]:
    """The median seconds of each side's read (``read(key)``, for each key in turn; the
    sides alternate call by call, their order reversing every round as in ``samples``);
    a side's ``prepare`` runs untimed before each of its reads."""
    taken: list[list[float]] = [[] for _ in sides]
    turn = list(zip(taken, sides, strict=True))
    clock = time.perf_counter
    with gc_paused():
        for key in keys:
            for sample, (prepare, read) in turn:
                if prepare is not None:
                    prepare()
                start = clock()
                read(key)
                sample.append(clock() - start)
            turn.reverse()
    return [statistics.median(sample) for sample in taken]


class StrataReads:
    """StrataDB 1.2.7 in this process, holding the same keys and values (JSON text) written
    twice like rewinddb's, 1,000 keys per batch; ``old`` is the commit timestamp after
    the first writing, which its ``as_of`` reads name."""

    def __init__(self, module: Any, directory: Path, keys: int) -> None:
        self.db = db = module.open(str(directory / "strata"), ipc="off")
        for changed in (False, True):
            for start in range(0, keys, 1_000):
                db.kv.put_many(
                    {
                        diff_key(i): json.dumps(diff_value(i, changed))
                        for i in range(start, min(keys, start + 1_000))
                    }
                )
            if not changed:
                self.old = db.kv.put("marker", "after the first writing").commit.timestamp

    def read_old(self, key: str) -> Any:
        return self.db.kv.get(key, as_of=self.old)

    def close(self) -> None:
        self.db.close()


def strata_module() -> Any:
    """StrataDB's module, or why it is not there."""
    try:
        return importlib.import_module("stratadb")  # optional: not known to type checks
    except ImportError as error:
        return f"stratadb is not installed ({error})"


def measure_reads(sizes: Sizes, report: Report) -> None:
    keys = sizes.read_keys
    strata = strata_module()
    with scratch() as directory:
        db = rewinddb.open(directory)
        raw = raw_kv(directory.parent / "raw.sqlite3", keys)
        other = OtherWriter(directory, directory.parent / "raw.sqlite3")
        peer = None
        try:
            old = db.kv.put_many({diff_key(i): diff_value(i, False) for i in range(keys)})
            db.kv.put_many({diff_key(i): diff_value(i, True) for i in range(keys)})
            probe = diff_key(keys // 2)
            expect(db.kv.get(probe, as_of=old), diff_value(keys // 2, False), "as_of read")
            expect(db.kv.get(probe), diff_value(keys // 2, True), "latest read")

            def raw_select(key: str) -> Any:
                return raw.execute(RAW_POINT_SELECT, (key,)).fetchone()

            def latest(key: str) -> Any:
                return db.kv.get(key)

            def as_of(key: str) -> Any:
                return db.kv.get(key, as_of=old)

            warm = read_keys(sizes, sizes.read_calls)
            for key in warm:  # remembered: the writes above remembered them already
                latest(key)
            t_latest, t_raw = point_samples(warm, (None, latest), (None, raw_select))
            t_as_of, t_raw_as_of = point_samples(warm, (None, as_of), (None, raw_select))
            with db.read():  # one snapshot: its token and read lock taken once for all
                t_as_of_block, t_raw_block = point_samples(warm, (None, as_of), (None, raw_select))
            cold = read_keys(sizes, sizes.cold_calls)
            t_cold, t_raw_cold = point_samples(
                cold, (other.commit, latest), (other.commit, raw_select)
            )
            t_strata = None
            if not isinstance(strata, str):
                peer = StrataReads(strata, directory.parent, keys)
                expect(
                    peer.read_old(probe),
                    json.dumps(diff_value(keys // 2, False)).encode(),
                    "StrataDB's as_of read",
                )
                t_as_of_peer, t_strata = point_samples(warm, (None, as_of), (None, peer.read_old))
        finally:
            if peer is not None:
                peer.close()
            other.close()
            raw.close()
            db.close()
    report.section(
        f"9. point reads, {keys:,} keys (median of {sizes.read_calls:,} reads of distinct "
        "keys, call by call against a raw sqlite3 primary-key select in this process)"
    )
    report.add(
        Row(
            "kv.get of a remembered key vs raw PK select",
            us(t_latest),
            us(t_raw),
            t_latest / t_raw,
            Target("<=", 2, "<= 2"),
        )
    )
    report.add(
        Row(
            f"kv.get after another connection committed vs raw PK select after one "
            f"(median of {sizes.cold_calls})",
            us(t_cold),
            us(t_raw_cold),
            t_cold / t_raw_cold,
            Target("<=", 2, "<= 2"),
        )
    )
    report.add(
        Row(
            "kv.get(as_of=the first version) vs raw PK select",
            us(t_as_of),
            us(t_raw_as_of),
            t_as_of / t_raw_as_of,
            Target("<=", 2, "<= 2"),
        )
    )
    report.add(
        Row(
            "  the same, every read inside one db.read() block",
            us(t_as_of_block),
            us(t_raw_block),
            t_as_of_block / t_raw_block,
        )
    )
    if t_strata is None:
        report.note(f"no StrataDB as_of figure (pip install stratadb==1.2.7): {strata}")
    else:
        version = importlib.import_module("importlib.metadata").version("stratadb")
        report.add(
            Row(
                f"kv.get(as_of) vs StrataDB {version} kv.get(as_of)",
                us(t_as_of_peer),
                us(t_strata),
                t_as_of_peer / t_strata,
                Target("<=", 1, "<= 1"),
            )
        )


# -- main ------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run, smaller sizes")
    parser.add_argument(
        "--diff-only",
        action="store_true",
        help="only the diff and merge figures (8), with the peers",
    )
    parser.add_argument(
        "--merge-only", action="store_true", help="only the merge figures (8), with the peers"
    )
    parser.add_argument(
        "--reads-only",
        action="store_true",
        help="only the point reads (9), against raw SQLite and StrataDB",
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    sizes = QUICK_RUN if args.quick else FULL_RUN
    print(
        describe_machine(
            [sys.argv[0], *argv],
            ("python", python_version()),
            ("sqlite", f"{sqlite3.sqlite_version} (module sqlite3)"),
            ("rewinddb", f"{rewinddb.__version__}, orjson {orjson.__version__}"),
            machine=f", temp dir {tempfile.gettempdir()}",
        )
    )
    print(f"run:      {'quick (small sizes, targets indicative only)' if args.quick else 'full'}")
    print()
    started = time.perf_counter()
    report = Report()
    if not (args.diff_only or args.merge_only or args.reads_only):
        measure_seed(sizes, report)
        measure_fork(sizes, report)
        measure_history(sizes, report)
        measure_storage(sizes, report)
        measure_commits(sizes, report)
        measure_depth(sizes, report)
        measure_event_log(sizes, report)
    if not args.reads_only:
        measure_diff(sizes, report, diffs=not args.merge_only)
    if not (args.diff_only or args.merge_only):
        measure_reads(sizes, report)
    print(report.render())
    print(f"\nmeasured in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
