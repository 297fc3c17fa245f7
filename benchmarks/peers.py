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


# -- DoltLite --------------------------------------------------------------------


class DoltLiteWorkload:
    """A ``kv(key TEXT PRIMARY KEY, value TEXT)`` table committed on ``main``, a branch
    ``run`` that updates K rows, and its diff: ``dolt_diff_kv('main', 'run')``, every
    column of every changed row fetched (both values, as rewinddb's changes carry)."""

    def __init__(self, directory: str, keys: int, changed: int) -> None:
        import os
        import sqlite3  # doltlite was imported first: this is DoltLite's engine

        self.conn = conn = sqlite3.connect(os.path.join(directory, "peer.db"), isolation_level=None)
        # The figures compare without an fsync per commit (rewinddb's "normal").
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO kv VALUES (?, ?)",
            ((diff_key(i), json.dumps(diff_value(i, False))) for i in range(keys)),
        )
        conn.execute("COMMIT")
        conn.execute("SELECT dolt_commit('-Am', 'default')").fetchall()
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


# -- StrataDB --------------------------------------------------------------------


class StrataWorkload:
    """The same keys in StrataDB's kv (values as JSON text, written 1,000 per batch, its
    largest accepted batch here), a fork ``run`` that rewrites K of them, and
    ``db.branches.diff("default", "run")``: it reports the changed keys, not their values."""

    BATCH = 1_000

    def __init__(self, directory: str, keys: int, changed: int) -> None:
        import os

        stratadb = importlib.import_module("stratadb")  # optional: not known to type checks
        self.db = db = stratadb.open(os.path.join(directory, "strata"), ipc="off")
        for start in range(0, keys, self.BATCH):
            db.kv.put_many(
                {
                    diff_key(i): json.dumps(diff_value(i, False))
                    for i in range(start, min(keys, start + self.BATCH))
                }
            )
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

    def call(self) -> int:
        result = self.db.branches.diff("default", "run")
        return sum(len(s.added) + len(s.removed) + len(s.modified) for s in result.spaces)


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
    workload: DoltLiteWorkload | StrataWorkload | None = None
    with tempfile.TemporaryDirectory(prefix=f"rewinddb-peer-{peer}-") as scratch:
        for line in sys.stdin:
            command = json.loads(line)
            op = command["op"]
            if op == "quit":
                break
            try:
                if op == "build":
                    directory = tempfile.mkdtemp(dir=scratch)
                    kind = DoltLiteWorkload if peer == "doltlite" else StrataWorkload
                    start = time.perf_counter()
                    workload = kind(directory, command["keys"], command["changed"])
                    answer: dict[str, object] = {"seconds": time.perf_counter() - start}
                elif op == "time":
                    assert workload is not None, "build first"
                    gc.collect()
                    gc.disable()
                    start = time.perf_counter()
                    count = workload.call()
                    answer = {"seconds": time.perf_counter() - start, "count": count}
                    gc.enable()
                else:
                    answer = {"error": f"unknown op {op!r}"}
            except Exception as error:  # reported to the benchmark, which goes on without
                answer = {"error": f"{type(error).__name__}: {error}"}
            print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in PEERS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(PEERS)}}}")
    serve(sys.argv[1])
