"""The peers ``benchmarks/core.py`` measures rewinddb against, each in a process of its own.

DoltLite (``pip install doltlite``) swaps the SQLite engine of the whole process, and only
when it is imported before ``sqlite3``; StrataDB (``pip install stratadb==1.2.7``) is a
native engine with threads of its own. So neither runs in the benchmark's process: each
runs in a worker, ``python benchmarks/peers.py PEER``, that reads one JSON command per line
on stdin and answers one JSON line on stdout. The worker builds a workload, then times
single calls of it when asked, so the benchmark can interleave them with rewinddb's (A, B,
A, B, ...) and take medians of both from the same minutes. Each time is measured in the
worker around the call alone, never around the pipe.

The commands:

- ``{"op": "build", "workload": "diff", "keys": N, "changed": K}``: a table (or store) of
  N keys with a branch ``run`` that changed every (N // K)-th of them; answers
  ``{"seconds": build time, "size": ...}``;
- ``{"op": "build", "workload": "merge", "keys": N, "changed": K, "target_changed": 0|1}``:
  the same N keys; each timed call then forks a target from them and a source from the
  target, changes K keys on the source (every (N // K)-th, ``diff_value(i, True)``) and,
  with ``target_changed``, the K keys after those on the target, untimed, and times the
  merge of the source into the target alone (a merge commit: DoltLite's ``--no-ff``);
  the count is how many of the source's changes the target holds after it;
- ``{"op": "time"}``: one timed call of the workload built last; answers
  ``{"seconds": s, "count": rows the call returned}``;
- ``{"op": "quit"}``.

A worker whose peer is not installed answers its first line with ``{"missing": reason}``.
The workload's keys and values are the same as rewinddb's (``diff_key``, ``diff_value``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

PEERS = ("doltlite", "stratadb")


def diff_key(i: int) -> str:
    return f"key-{i:07d}"


def diff_value(i: int, changed: bool) -> dict[str, object]:
    """The value of key ``i`` on default (``changed=False``) and, where changed, on the
    branch: one member differs, so each changed key is one change of rewinddb's diff."""
    return {"i": i, "status": "done" if changed else "todo"}


def changed_indexes(keys: int, changed: int) -> range:
    """The keys the branch changes: every (keys // changed)-th."""
    return range(0, keys, max(1, keys // changed))


def target_indexes(keys: int, changed: int) -> range:
    """The keys a merge's target changes (``target_changed``): the key after each of the
    source's (``changed_indexes``), so the two sides never change the same key."""
    return range(1, keys, max(2, keys // changed))


# -- DoltLite --------------------------------------------------------------------


def _dolt_table(directory: str, keys: int) -> Any:
    """A DoltLite database whose table ``kv`` holds ``keys`` rows committed on ``main``
    (no fsync per commit: the figures compare with rewinddb's "normal")."""
    import os
    import sqlite3  # doltlite was imported first: this is DoltLite's engine

    conn = sqlite3.connect(os.path.join(directory, "peer.db"), isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO kv VALUES (?, ?)",
        ((diff_key(i), json.dumps(diff_value(i, False))) for i in range(keys)),
    )
    conn.execute("COMMIT")
    conn.execute("SELECT dolt_commit('-Am', 'default')").fetchall()
    return conn


class DoltLiteWorkload:
    """A ``kv(key TEXT PRIMARY KEY, value TEXT)`` table committed on ``main``, a branch
    ``run`` that updates K rows, and its diff: ``dolt_diff_kv('main', 'run')``, every
    column of every changed row fetched (both values, as rewinddb's changes carry)."""

    def __init__(self, directory: str, keys: int, changed: int) -> None:
        self.conn = conn = _dolt_table(directory, keys)
        conn.execute("SELECT dolt_branch('run')").fetchall()
        conn.execute("SELECT dolt_checkout('run')").fetchall()
        conn.execute("BEGIN")
        conn.executemany(
            "UPDATE kv SET value = ? WHERE key = ?",
            (
                (json.dumps(diff_value(i, True)), diff_key(i))
                for i in changed_indexes(keys, changed)
            ),
        )
        conn.execute("COMMIT")
        conn.execute("SELECT dolt_commit('-Am', 'run')").fetchall()

    def call(self) -> int:
        rows = self.conn.execute(
            "SELECT to_key, to_value, from_key, from_value, diff_type "
            "FROM dolt_diff_kv('main', 'run')"
        ).fetchall()
        return len(rows)


class DoltLiteMerge:
    """The same table committed on ``main``; each call branches ``t<n>`` from it and
    ``s<n>`` from that, commits the source's changes on ``s<n>`` (and the target's on
    ``t<n>``), then times ``dolt_merge('--no-ff', 's<n>')`` on ``t<n>``: a merge commit,
    three-way when the target changed too."""

    def __init__(self, directory: str, keys: int, changed: int, target_changed: bool) -> None:
        self.keys, self.changed, self.target_changed = keys, changed, target_changed
        self.calls = 0
        self.conn = _dolt_table(directory, keys)

    def _commit_changes(self, branch: str, indexes: range) -> None:
        conn = self.conn
        conn.execute("SELECT dolt_checkout(?)", (branch,)).fetchall()
        conn.execute("BEGIN")
        conn.executemany(
            "UPDATE kv SET value = ? WHERE key = ?",
            ((json.dumps(diff_value(i, True)), diff_key(i)) for i in indexes),
        )
        conn.execute("COMMIT")
        conn.execute("SELECT dolt_commit('-Am', ?)", (branch,)).fetchall()

    def prepare(self) -> None:
        conn, n = self.conn, self.calls
        self.calls += 1
        conn.execute("SELECT dolt_checkout('main')").fetchall()
        conn.execute("SELECT dolt_branch(?)", (f"t{n}",)).fetchall()
        conn.execute("SELECT dolt_branch(?, ?)", (f"s{n}", f"t{n}")).fetchall()
        self._commit_changes(f"s{n}", changed_indexes(self.keys, self.changed))
        if self.target_changed:
            self._commit_changes(f"t{n}", target_indexes(self.keys, self.changed))
        conn.execute("SELECT dolt_checkout(?)", (f"t{n}",)).fetchall()

    def call(self) -> int:
        ((outcome,),) = self.conn.execute(
            "SELECT dolt_merge('--no-ff', ?)", (f"s{self.calls - 1}",)
        ).fetchall()
        return int(outcome is not None)

    def count(self) -> int:
        """How many of the source's changes the target holds (after ``call``)."""
        done = self.conn.execute(
            "SELECT count(*) FROM kv WHERE value LIKE '%\"done\"%'"
        ).fetchone()[0]
        return int(done) - (
            len(target_indexes(self.keys, self.changed)) if self.target_changed else 0
        )


# -- StrataDB --------------------------------------------------------------------


class StrataWorkload:
    """The same keys in StrataDB's kv (values as JSON text, written 1,000 per batch, its
    largest accepted batch here), a fork ``run`` that rewrites K of them, and
    ``db.branches.diff("default", "run")``: it reports the changed keys, not their values."""

    BATCH = 1_000

    def __init__(self, directory: str, keys: int, changed: int) -> None:

        self.db = db = self.populated(directory, keys)
        db.branches.fork("default", "run")
        run = db.at(branch="run")
        picked = list(changed_indexes(keys, changed))
        for start in range(0, len(picked), self.BATCH):
            run.kv.put_many(
                {
                    diff_key(i): json.dumps(diff_value(i, True))
                    for i in picked[start : start + self.BATCH]
                }
            )

    @classmethod
    def populated(cls, directory: str, keys: int) -> Any:
        """A StrataDB store in ``directory`` with ``keys`` keys on default."""
        import os

        stratadb = importlib.import_module("stratadb")  # optional: not known to type checks
        db = stratadb.open(os.path.join(directory, "strata"), ipc="off")
        for start in range(0, keys, cls.BATCH):
            db.kv.put_many(
                {
                    diff_key(i): json.dumps(diff_value(i, False))
                    for i in range(start, min(keys, start + cls.BATCH))
                }
            )
        return db

    def call(self) -> int:
        result = self.db.branches.diff("default", "run")
        return sum(len(s.added) + len(s.removed) + len(s.modified) for s in result.spaces)


class StrataMerge:
    """The same keys; each call forks ``t<n>`` from default and ``s<n>`` from that (its
    merge needs a direct fork lineage), writes the source's changes on ``s<n>`` (and the
    target's on ``t<n>``), then times ``db.branches.merge("s<n>", "t<n>")``."""

    def __init__(self, directory: str, keys: int, changed: int, target_changed: bool) -> None:
        self.keys, self.changed, self.target_changed = keys, changed, target_changed
        self.calls = 0
        self.db = StrataWorkload.populated(directory, keys)
        self.outcome: Any = None

    def _write(self, branch: str, indexes: range) -> None:
        picked = list(indexes)
        view = self.db.at(branch=branch)
        for start in range(0, len(picked), StrataWorkload.BATCH):
            view.kv.put_many(
                {
                    diff_key(i): json.dumps(diff_value(i, True))
                    for i in picked[start : start + StrataWorkload.BATCH]
                }
            )

    def prepare(self) -> None:
        n = self.calls
        self.calls += 1
        self.db.branches.fork("default", f"t{n}")
        self.db.branches.fork(f"t{n}", f"s{n}")
        self._write(f"s{n}", changed_indexes(self.keys, self.changed))
        if self.target_changed:
            self._write(f"t{n}", target_indexes(self.keys, self.changed))

    def call(self) -> int:
        n = self.calls - 1
        self.outcome = self.db.branches.merge(f"s{n}", f"t{n}")
        return 1

    def count(self) -> int:
        return len(self.outcome.applied)


# -- the benchmark's side ---------------------------------------------------------


class Peer:
    """A running worker of one peer (``Peer.start``), driven from the benchmark."""

    def __init__(self, name: str, version: str, process: subprocess.Popen[str]) -> None:
        self.name, self.version, self._process = name, version, process

    @classmethod
    def start(cls, name: str) -> Peer | str:
        """A worker of ``name``, or why there is none (not installed, failed to start)."""
        process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            hello = cls._answer(process)
        except RuntimeError as error:
            process.kill()
            process.wait()
            return str(error)
        if "missing" in hello:
            process.wait()
            return str(hello["missing"])
        return cls(name, str(hello["version"]), process)

    @staticmethod
    def _answer(process: subprocess.Popen[str]) -> dict[str, Any]:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker ended (exit code {process.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(command) + "\n")
        self._process.stdin.flush()
        return self._answer(self._process)

    def build(self, workload: str, **sizes: int) -> float:
        """Build ``workload`` in the worker; the seconds it took there."""
        return float(self.ask(op="build", workload=workload, **sizes)["seconds"])

    def call(self) -> tuple[float, int]:
        """One timed call of the built workload: (seconds, rows it returned)."""
        answer = self.ask(op="time")
        return float(answer["seconds"]), int(answer["count"])

    def close(self) -> None:
        if self._process.poll() is None:
            with contextlib.suppress(OSError, RuntimeError, ValueError):  # it ended
                self.ask(op="quit")
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


# -- the worker ------------------------------------------------------------------


def load(peer: str) -> str:
    """Import the peer (DoltLite before anything imports sqlite3); its version."""
    if peer == "doltlite":
        if "sqlite3" in sys.modules:
            raise RuntimeError("sqlite3 was imported before doltlite")
        doltlite = importlib.import_module("doltlite")  # swaps the engine as it loads
        return str(doltlite.__version__)
    if peer == "stratadb":
        from importlib.metadata import version

        importlib.import_module("stratadb")

        return version("stratadb")
    raise ValueError(f"unknown peer {peer!r}; one of {', '.join(PEERS)}")


def serve(peer: str) -> None:
    import gc
    import tempfile
    import time

    try:
        found = load(peer)
    except ImportError as error:
        print(json.dumps({"missing": f"{peer} is not installed ({error})"}), flush=True)
        return
    print(json.dumps({"peer": peer, "version": found}), flush=True)
    workload: DoltLiteWorkload | StrataWorkload | DoltLiteMerge | StrataMerge | None = None
    with tempfile.TemporaryDirectory(prefix=f"rewinddb-peer-{peer}-") as scratch:
        for line in sys.stdin:
            command = json.loads(line)
            op = command["op"]
            if op == "quit":
                break
            try:
                if op == "build":
                    directory = tempfile.mkdtemp(dir=scratch)
                    start = time.perf_counter()
                    if command.get("workload") == "merge":
                        merge = DoltLiteMerge if peer == "doltlite" else StrataMerge
                        workload = merge(
                            directory,
                            command["keys"],
                            command["changed"],
                            bool(command.get("target_changed")),
                        )
                    else:
                        kind = DoltLiteWorkload if peer == "doltlite" else StrataWorkload
                        workload = kind(directory, command["keys"], command["changed"])
                    answer: dict[str, object] = {"seconds": time.perf_counter() - start}
                elif op == "time":
                    assert workload is not None, "build first"
                    if isinstance(workload, (DoltLiteMerge, StrataMerge)):
                        workload.prepare()  # untimed: a fresh source and target
                    gc.collect()
                    gc.disable()
                    start = time.perf_counter()
                    count = workload.call()
                    answer = {"seconds": time.perf_counter() - start, "count": count}
                    gc.enable()
                    if isinstance(workload, (DoltLiteMerge, StrataMerge)):
                        answer["count"] = workload.count()
                else:
                    answer = {"error": f"unknown op {op!r}"}
            except Exception as error:  # reported to the benchmark, which goes on without
                answer = {"error": f"{type(error).__name__}: {error}"}
            print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in PEERS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(PEERS)}}}")
    serve(sys.argv[1])
