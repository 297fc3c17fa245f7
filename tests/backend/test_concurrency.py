"""Several real OS processes on one database: nothing lost, nothing torn, crashes survived.

Every child is a fresh interpreter (``sys.executable -c CODE``) that imports the installed
``rewinddb``; nothing is imported from this folder. A child appends one JSON line per
acknowledged write to an "acks" file *after* the call returned, so the parent knows
exactly which writes rewinddb promised to keep, and at which version.
"""

from __future__ import annotations

import itertools
import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import rewinddb
from rewinddb._values import dumps
from rewinddb.events import event_hash

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "SIGKILL"), reason="needs POSIX processes and SIGKILL"
)

CHILD_TIMEOUT = 60.0

# -- child processes -------------------------------------------------------------------

PRELUDE = r"""
import json, os, sys, time
import rewinddb

CFG = json.loads(sys.argv[1])

def acker(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    def ack(**record):
        os.write(fd, (json.dumps(record) + "\n").encode())
    return ack

def wait_for_file(path, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {path}")
        time.sleep(0.001)

ack = acker(CFG["acks"])
"""

#: Writes ``ops`` commits mixing kv, json, events and transactions, half of them on a
#: branch of its own and half on a branch every writer shares.
WRITER = (
    PRELUDE
    + r"""
w, n = CFG["writer"], CFG["ops"]
db = rewinddb.open(CFG["db"])
own, shared = db.at(CFG["own"]), db.at(CFG["shared"])
items = own.json.get("list", "$.items")
ack(op="ready")
wait_for_file(CFG["go"])
for i in range(n):
    if i == n // 2:
        # Forking while the others write: the fork point is one consistent moment.
        fork = db.branches.fork(shared.branch, f"fork-{w}")
        ack(op="fork", branch=fork.name, source=shared.branch, forked_at=fork.forked_at)
    kind = i % 5
    if kind == 0:
        key, value = f"k{i % 7}", {"w": w, "i": i}
        version = own.kv.put(key, value)
        ack(op="kv", branch=own.branch, key=key, value=value, version=version)
    elif kind == 1:
        value = {"w": w, "i": i}
        version = shared.kv.put("hot", value)
        ack(op="kv", branch=shared.branch, key="hot", value=value, version=version)
    elif kind == 2 and i % 2:
        version = shared.json.set("doc", f"$.w{w}", i)
        ack(op="doc", branch=shared.branch, field=f"w{w}", value=i, version=version)
    elif kind == 2:
        items.append({"w": w, "i": i, "pad": "p" * 100})
        version = own.json.set("list", "$.items", items)
        ack(op="list", branch=own.branch, value=items, version=version)
    elif kind == 3:
        view = shared if i % 2 else own
        event = view.events.append(f"w{w}", {"w": w, "i": i})
        ack(op="event", branch=view.branch, sequence=event.sequence, version=event.version,
            hash=event.hash, type=f"w{w}", payload={"w": w, "i": i})
    else:
        # Every fifth transaction holds the write lock a while: the others must wait.
        hold = CFG["hold"] if i % 25 == 4 else 0.0
        with shared.transaction(trigger=f"tx-{w}"):
            va = shared.kv.put(f"tx/{w}/a", i)
            vb = shared.kv.put(f"tx/{w}/b", i)
            vd = shared.json.set("doc", f"$.tx{w}", i)
            event = shared.events.append("tx", {"w": w, "i": i})
            time.sleep(hold)
        ack(op="tx", branch=shared.branch, writer=w, i=i, versions=[va, vb, vd, event.version],
            version=va, sequence=event.sequence, hash=event.hash, type="tx",
            payload={"w": w, "i": i})
    # Like an agent between steps: a moment without the lock, so writers interleave.
    time.sleep(CFG["pause"])
db.close()
ack(op="done")
"""
)

#: Commits transactions that each set kv a, kv b, json doc $.n and one event to ``n``.
TX_WRITER = (
    PRELUDE
    + r"""
db = rewinddb.open(CFG["db"])
ack(op="ready")
wait_for_file(CFG["go"])
deadline = time.monotonic() + CFG["seconds"]
n = 0
while time.monotonic() < deadline:
    n += 1
    with db.transaction():
        version = db.kv.put("a", n)
        db.json.set("doc", "$.n", n)
        db.events.append("tick", {"n": n})
        db.kv.put("b", n)
    ack(op="tx", n=n, version=version)
db.close()
ack(op="done", n=n)
"""
)

#: Reads a, b, doc.n and the event count, at a fixed version and at "now", until told to
#: stop; reports every torn read (up to 5) and exits 1 if there was any.
READER = (
    PRELUDE
    + r"""
import random

base = CFG["base"]
db = rewinddb.open(CFG["db"], readonly=CFG["readonly"])
ack(op="ready")
wait_for_file(CFG["go"])
seen = {}
reads = apart = 0
last = -1
errors = []

def fail(message):
    errors.append(message)
    ack(op="torn", message=message)

while not os.path.exists(CFG["stop"]) and len(errors) < 5:
    v = db.version
    a = db.kv.get("a", as_of=v)
    b = db.kv.get("b", as_of=v)
    doc = db.json.get("doc", "$.n", as_of=v)
    count = db.events.length(as_of=v)
    expected = None if v == base else v - base
    if not (a == b == doc == expected and count == (expected or 0)):
        fail(f"as_of={v}: a={a} b={b} doc.n={doc} events={count}, expected {expected}")
    if (a or 0) < last:
        fail(f"went back in time: {a} after {last}")
    last = a or 0
    seen[v] = a
    # Two separate calls without as_of each read their own "now": they may straddle
    # a commit (counted, not a failure); a pinned version is how to read them together.
    if db.kv.get("a") != db.kv.get("b"):
        apart += 1
    # "now" in one call: each of these resolves "now" once for all its keys.
    kv = db.kv.items()
    snap = db.snapshot()
    if kv.get("a") != kv.get("b"):
        fail(f"kv.items() torn: {kv}")
    if not (snap["kv"].get("a") == snap["kv"].get("b") == snap["json"].get("doc", {}).get("n")):
        fail(f"snapshot() torn: {snap}")
    if snap["version"] - base != (snap["kv"].get("a") or 0):
        fail(f"snapshot() at {snap['version']} has a={snap['kv'].get('a')}")
    # An old version answers the same as when it was new.
    old = random.choice(list(seen))
    if db.kv.get("a", as_of=old) != seen[old] or db.kv.get("b", as_of=old) != seen[old]:
        fail(f"as_of={old} changed its answer from {seen[old]}")
    reads += 1
db.close()
ack(op="done", reads=reads, distinct=len(set(seen.values())), apart=apart, errors=errors)
sys.exit(1 if errors else 0)
"""
)

#: Writes forever (until killed): a counter, an event, a growing list, a transaction.
CRASHER = (
    PRELUDE
    + r"""
db = rewinddb.open(CFG["db"])
i = db.kv.get("counter", -1) + 1
items = db.json.get("doc", "$.items", default=[])
ack(op="ready", start=i)
while True:
    version = db.kv.put("counter", i)
    ack(op="counter", value=i, version=version)
    event = db.events.append("tick", {"i": i})
    ack(op="event", sequence=event.sequence, version=event.version, hash=event.hash,
        payload={"i": i})
    items.append({"i": i, "pad": "q" * 60})
    version = db.json.set("doc", "$.items", items)
    ack(op="list", length=len(items), last=i, version=version)
    with db.transaction():
        va = db.kv.put("pair/a", i)
        db.kv.put("pair/b", i)
        event = db.events.append("pair", {"i": i})
    ack(op="pair", value=i, version=va, sequence=event.sequence)
    i += 1
    time.sleep(CFG["pause"])
"""
)

#: Opens a transaction, writes, says so, and sleeps inside it (until killed or done).
HOLDER = (
    PRELUDE
    + r"""
db = rewinddb.open(CFG["db"])
with db.transaction():
    version = db.kv.put("held", 1)
    db.events.append("held", None)
    ack(op="locked", version=version)
    time.sleep(CFG["hold"])
ack(op="committed", version=version)
db.close()
"""
)

#: Waits for a flag, then writes once with the given busy timeout; reports what happened.
WAITER = (
    PRELUDE
    + r"""
db = rewinddb.open(CFG["db"], busy_timeout=CFG["busy_timeout"])
ack(op="ready")
wait_for_file(CFG["go"])
start = time.monotonic()
try:
    version = db.kv.put(CFG["key"], 1)
except Exception as error:
    ack(op="error", type=type(error).__name__, module=type(error).__module__,
        rewind=isinstance(error, rewinddb.RewindError), code=getattr(error, "code", None),
        message=str(error), waited=time.monotonic() - start)
else:
    ack(op="written", version=version, waited=time.monotonic() - start)
db.close()
"""
)

#: Round after round, opens (creating it) a new database that other processes open at
#: the same moment, and writes to it.
OPENER = (
    PRELUDE
    + r"""
ack(op="ready")
for r in range(CFG["rounds"]):
    wait_for_file(f"{CFG['go']}-{r}")
    db = rewinddb.open(f"{CFG['db']}-{r}")
    for i in range(CFG["ops"]):
        version = db.kv.put(CFG["key"], i)
        ack(op="kv", round=r, key=CFG["key"], value=i, version=version)
    db.close()
    ack(op="round", round=r)
"""
)


#: Creates a database (and is killed somewhere in the middle of doing so).
CREATOR = (
    PRELUDE
    + r"""
ack(op="ready")
db = rewinddb.open(CFG["db"])
ack(op="opened")
db.close()
"""
)


class Child:
    """One child interpreter running ``code`` with a JSON config and an acks file."""

    def __init__(self, code: str, workdir: Path, name: str, **cfg: Any) -> None:
        self.name = name
        self.killed = False
        self.acks_path = workdir / f"{name}.acks"
        self.stderr_path = workdir / f"{name}.stderr"
        cfg["acks"] = str(self.acks_path)
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, "-W", "error", "-c", code, json.dumps(cfg)],
                cwd=workdir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )

    def acks(self) -> list[dict[str, Any]]:
        """Every complete acknowledgement line written so far."""
        try:
            text = self.acks_path.read_text()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]

    def has(self, op: str) -> bool:
        return any(record["op"] == op for record in self.acks())

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait(self, timeout: float = CHILD_TIMEOUT) -> list[dict[str, Any]]:
        """Wait for a clean exit; the child's acks."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{self.name} did not finish in {timeout}s:\n{self.stderr()}")
        errors = self.stderr()
        assert "database is locked" not in errors, f"{self.name}: {errors}"
        assert code == 0, f"{self.name} exited with {code}:\n{errors}\nacks: {self.acks()[-3:]}"
        return self.acks()

    def kill(self) -> None:
        self.killed = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def wait_until(condition: Callable[[], bool], what: str, children: list[Child]) -> None:
    deadline = time.monotonic() + CHILD_TIMEOUT
    while not condition():
        for child in children:
            if not child.killed and child.proc.poll() not in (None, 0):
                pytest.fail(f"{child.name} died while waiting for {what}:\n{child.stderr()}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.005)


@pytest.fixture
def children() -> Iterator[list[Child]]:
    """Children started by a test; any still running at its end are killed."""
    started: list[Child] = []
    yield started
    for child in started:
        child.kill()


# -- checks on a database ------------------------------------------------------------------


def integrity_ok(path: Path) -> None:
    with closing(sqlite3.connect(path / "rewind.sqlite3")) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def check_event_log(view: rewinddb.BranchView | rewinddb.Database) -> list[rewinddb.Event]:
    """The branch's log is dense from 0, hash chained, in version order; its events."""
    events = [item.event for item in view.events.list()]
    assert [e.sequence for e in events] == list(range(len(events)))
    previous = ""
    for event in events:
        expected = event_hash(
            previous, event.sequence, event.event_type, event.version, dumps(event.payload)
        )
        assert event.hash == expected, f"hash chain broken at sequence {event.sequence}"
        previous = event.hash
    versions = [e.version for e in events]
    assert versions == sorted(versions)
    assert len(events) == view.events.length()
    return events


def check_clock(db: rewinddb.Database) -> list[rewinddb.Commit]:
    """Versions 1..``db.version`` each have exactly one commit, in time order."""
    commits = sorted(db.commits(), key=lambda c: c.version)
    assert [c.version for c in commits] == list(range(1, db.version + 1))
    stamps = [c.timestamp for c in commits]
    assert stamps == sorted(stamps)
    return commits


# -- 1. concurrent writers -----------------------------------------------------------------

WRITERS = 3
OPS = 250


@pytest.mark.slow
def test_concurrent_writers_lose_nothing(tmp_path: Path, children: list[Child]) -> None:
    path = tmp_path / "db"
    base_items = [{"base": j, "pad": "b" * 100} for j in range(30)]  # a shared array
    with rewinddb.open(path) as db:
        db.json.set("list", "$.items", base_items)
        db.branches.fork("default", "shared")
        for w in range(WRITERS):
            db.branches.fork("default", f"own-{w}")
        base = db.version
    go = tmp_path / "go"
    for w in range(WRITERS):
        children.append(
            Child(
                WRITER,
                tmp_path,
                f"writer-{w}",
                db=str(path),
                writer=w,
                ops=OPS,
                own=f"own-{w}",
                shared="shared",
                go=str(go),
                hold=0.02,
                pause=0.001,
            )
        )
    wait_until(lambda: all(c.has("ready") for c in children), "writers ready", children)
    go.touch()
    acks = {
        w: [a for a in child.wait() if a["op"] not in ("ready", "done", "fork")]
        for w, child in enumerate(children)
    }
    forks = [a for child in children for a in child.acks() if a["op"] == "fork"]

    integrity_ok(path)
    with rewinddb.open(path) as db:
        # The clock: one version per acknowledged commit, none lost, none shared.
        everything = [a for w in acks for a in acks[w]]
        assert len(everything) == WRITERS * OPS
        versions = [a["version"] for a in everything]
        assert len(set(versions)) == len(versions), "two commits got the same version"
        assert db.version == base + WRITERS * OPS
        assert sorted(versions) == list(range(base + 1, db.version + 1))
        commits = {c.version: c for c in check_clock(db)}
        for w in acks:
            mine = [a["version"] for a in acks[w]]
            assert mine == sorted(mine), f"writer {w} saw its versions go backwards"
        for a in everything:
            assert commits[a["version"]].branch == a["branch"], a
        # The writers really did interleave on the clock (else this tested nothing).
        writer_of = {a["version"]: w for w in acks for a in acks[w]}
        ordered = [writer_of[v] for v in sorted(writer_of)]
        switches = sum(1 for x, y in itertools.pairwise(ordered) if x != y)
        assert switches >= 30, f"the writers hardly overlapped ({switches} switches)"

        # Every acknowledged value is there, at the version its writer got back.
        for a in everything:
            view = db.at(a["branch"])
            v = a["version"]
            if a["op"] == "kv":
                assert view.kv.get(a["key"], as_of=v) == a["value"], a
            elif a["op"] == "doc":
                assert view.json.get("doc", f"$.{a['field']}", as_of=v) == a["value"], a
            elif a["op"] == "list":
                assert view.json.get("list", "$.items", as_of=v) == a["value"], a
            elif a["op"] == "tx":
                assert a["versions"] == [v] * 4, f"a transaction spans versions {a}"
                w, i = a["writer"], a["i"]
                assert view.kv.get(f"tx/{w}/a", as_of=v) == i
                assert view.kv.get(f"tx/{w}/b", as_of=v) == i
                assert view.json.get("doc", f"$.tx{w}", as_of=v) == i
                assert view.kv.get(f"tx/{w}/a", as_of=v - 1) != i
            if a["op"] in ("event", "tx"):
                event = view.events.get(a["sequence"])
                assert (event.version, event.event_type, event.payload, event.hash) == (
                    v,
                    a["type"],
                    a["payload"],
                    a["hash"],
                ), a

        # The shared hot key's history is exactly the acknowledged puts: no lost update.
        shared = db.at("shared")
        hot = sorted((a["version"], a["value"]) for a in everything if a.get("key") == "hot")
        assert [(h.version, h.value) for h in shared.kv.history("hot")] == hot

        # The shared document: every version holds every writer's latest field.
        expected: dict[str, int] = {}
        doc_writes = sorted(
            (
                a["version"],
                a["field"] if a["op"] == "doc" else f"tx{a['writer']}",
                a["value"] if a["op"] == "doc" else a["i"],
            )
            for a in everything
            if a["op"] in ("doc", "tx")
        )
        history = shared.json.history("doc")
        assert [h.version for h in history] == [v for v, _, _ in doc_writes]
        for (version, field, value), entry in zip(doc_writes, history, strict=True):
            expected[field] = value
            assert entry.value == expected, f"lost update in doc at version {version}"

        # The growing lists kept their shared base on every branch.
        for w in range(WRITERS):
            last = [a for a in acks[w] if a["op"] == "list"][-1]["value"]
            assert db.at(f"own-{w}").json.get("list", "$.items") == last
            assert last[: len(base_items)] == base_items
        assert db.json.get("list", "$.items") == base_items

        # Event logs: dense, chained, exactly the acknowledged appends.
        for name in ["shared", *(f"own-{w}" for w in range(WRITERS))]:
            events = check_event_log(db.at(name))
            acked = sorted(
                a["sequence"]
                for a in everything
                if a["branch"] == name and a["op"] in ("event", "tx")
            )
            assert acked == [e.sequence for e in events], f"events of {name}"
        assert db.events.length() == 0

        # Forks taken mid-run see exactly the source as it was at their fork point.
        assert len(forks) == WRITERS
        for a in forks:
            fork, source, at = db.at(a["branch"]), db.at(a["source"]), a["forked_at"]
            assert base < at < db.version
            assert fork.info().forked_at == at
            assert fork.snapshot()["kv"] == source.snapshot(as_of=at)["kv"]
            assert fork.snapshot()["json"] == source.snapshot(as_of=at)["json"]
            assert fork.events.list() == source.events.list(as_of=at)


@pytest.mark.slow
def test_a_busy_database_is_waited_on(tmp_path: Path, children: list[Child]) -> None:
    path = tmp_path / "db"
    with rewinddb.open(path) as db:
        base = db.version
    go = tmp_path / "go"
    waiter = Child(
        WAITER, tmp_path, "waiter", db=str(path), go=str(go), busy_timeout=60.0, key="after"
    )
    children.append(waiter)
    wait_until(lambda: waiter.has("ready"), "waiter ready", children)
    holder = Child(HOLDER, tmp_path, "holder", db=str(path), hold=1.0)
    children.append(holder)
    wait_until(lambda: holder.has("locked"), "the holder to take the write lock", children)
    locked_at = time.monotonic()
    go.touch()

    # Meanwhile readers are not blocked, and see nothing of the open transaction.
    with rewinddb.open(path) as db:
        start = time.monotonic()
        assert db.version == base
        assert db.kv.get("held") is None
        assert db.events.length() == 0
        assert time.monotonic() - start < 0.5

    held = holder.wait()
    written = waiter.wait()
    assert [a["op"] for a in held] == ["locked", "committed"]
    result = written[-1]
    assert result["op"] == "written", result
    assert result["version"] == held[0]["version"] + 1
    assert time.monotonic() - locked_at > 0.5
    assert result["waited"] > 0.3  # it really was blocked, and waited
    with rewinddb.open(path) as db:
        assert db.kv.get("held") == 1
        assert db.kv.get("after") == 1
        check_clock(db)


@pytest.mark.slow
def test_a_write_that_times_out_is_a_rewind_error_and_leaves_nothing(
    tmp_path: Path, children: list[Child]
) -> None:
    path = tmp_path / "db"
    rewinddb.open(path).close()
    go = tmp_path / "go"
    impatient = Child(
        WAITER, tmp_path, "impatient", db=str(path), go=str(go), busy_timeout=0.2, key="late"
    )
    children.append(impatient)
    wait_until(lambda: impatient.has("ready"), "child ready", children)
    holder = Child(HOLDER, tmp_path, "holder", db=str(path), hold=1.5)
    children.append(holder)
    wait_until(lambda: holder.has("locked"), "the holder to take the write lock", children)
    go.touch()
    result = impatient.wait()[-1]
    holder.wait()
    assert result["op"] == "error", result
    assert result["waited"] >= 0.15, result
    assert result["waited"] < 1.2, result
    with rewinddb.open(path) as db:
        assert db.kv.get("late") is None
        assert db.kv.get("held") == 1
        check_clock(db)
    assert result["rewind"], (
        f"a busy timeout escaped as {result['module']}.{result['type']}: {result['message']}"
    )
    assert result["code"] == "busy", result


def all_finished(children: list[Child], round_: int) -> bool:
    return all(c.acks()[-1] == {"op": "round", "round": round_} for c in children)


@pytest.mark.slow
def test_processes_opening_a_new_database_together(tmp_path: Path, children: list[Child]) -> None:
    # The races are narrow (a few ms while the first process creates the file and its
    # tables), so the four processes meet at a new database two dozen times.
    path, go = tmp_path / "db", tmp_path / "go"
    openers, rounds, ops = 4, 24, 5
    for k in range(openers):
        children.append(
            Child(
                OPENER,
                tmp_path,
                f"opener-{k}",
                db=str(path),
                go=str(go),
                rounds=rounds,
                ops=ops,
                key=f"k{k}",
            )
        )
    wait_until(lambda: all(c.has("ready") for c in children), "openers ready", children)
    for r in range(rounds):
        if r:
            wait_until(partial(all_finished, children, r - 1), f"round {r - 1}", children)
        Path(f"{go}-{r}").touch()
    acks = [a for child in children for a in child.wait() if a["op"] == "kv"]
    assert len(acks) == openers * rounds * ops
    for r in range(rounds):
        with rewinddb.open(f"{path}-{r}") as db:
            check_clock(db)
            assert db.version == openers * ops
            assert db.branches.names() == ["default"]
            for a in acks:
                if a["round"] == r:
                    assert db.kv.get(a["key"], as_of=a["version"]) == a["value"]


# -- 2. readers never see half a version ---------------------------------------------------


@pytest.mark.slow
def test_readers_never_see_a_half_written_version(tmp_path: Path, children: list[Child]) -> None:
    path = tmp_path / "db"
    with rewinddb.open(path) as db:
        base = db.version
    go, stop = tmp_path / "go", tmp_path / "stop"
    writer = Child(TX_WRITER, tmp_path, "tx-writer", db=str(path), go=str(go), seconds=1.5)
    readers = [
        Child(
            READER,
            tmp_path,
            f"reader-{k}",
            db=str(path),
            go=str(go),
            stop=str(stop),
            base=base,
            readonly=k == 1,  # one reader opens the database read-only
        )
        for k in range(2)
    ]
    children.extend([writer, *readers])
    wait_until(lambda: all(c.has("ready") for c in children), "children ready", children)
    go.touch()
    written = writer.wait()
    stop.touch()
    reports = [reader.wait()[-1] for reader in readers]

    for report in reports:
        assert report["op"] == "done"
        assert report["errors"] == []
        assert report["reads"] > 20, report  # the readers really ran alongside
        assert report["distinct"] > 5, report  # ... and saw the writer progress
    n = written[-1]["n"]
    assert n > 20, "the writer made too few commits to test anything"
    with rewinddb.open(path) as db:
        assert db.version == base + n
        check_clock(db)
        check_event_log(db)
        for a in written[1:-1]:
            v = a["version"]
            assert v == base + a["n"]
            assert db.kv.get("a", as_of=v) == db.kv.get("b", as_of=v) == a["n"]
            assert db.json.get("doc", "$.n", as_of=v) == a["n"]
            assert db.events.length(as_of=v) == a["n"]


# -- 3. crash safety -----------------------------------------------------------------------


def check_after_crash(path: Path, acks: list[dict[str, Any]]) -> int:
    """The database survived: every acknowledged write is where it was promised."""
    integrity_ok(path)
    with rewinddb.open(path) as db:
        top: int = db.version
        check_clock(db)
        events = check_event_log(db)
        by_sequence = {e.sequence: e for e in events}

        for a in acks:
            v = a.get("version")
            if v is not None:
                assert v <= top, f"acknowledged version {v} is gone (newest is {top})"
            if a["op"] == "counter":
                assert db.kv.get("counter", as_of=v) == a["value"], a
            elif a["op"] == "event":
                e = by_sequence[a["sequence"]]
                assert (e.version, e.payload, e.hash) == (v, a["payload"], a["hash"]), a
            elif a["op"] == "list":
                items = db.json.get("doc", "$.items", as_of=v)
                assert len(items) == a["length"], a
                assert items[-1] == {"i": a["last"], "pad": "q" * 60}, a
            elif a["op"] == "pair":
                assert db.kv.get("pair/a", as_of=v) == db.kv.get("pair/b", as_of=v) == a["value"]
                assert by_sequence[a["sequence"]].payload == {"i": a["value"]}

        # The history is whole: the counter went up by one per write, from 0.
        history = db.kv.history("counter")
        assert [h.value for h in history] == list(range(len(history)))
        # as_of at *every* version agrees with that history and with the other primitives.
        current = None
        changes = {h.version: h.value for h in history}
        event_versions = [e.version for e in events]
        for v in range(1, top + 1):
            current = changes.get(v, current)
            assert db.kv.get("counter", as_of=v) == current
            assert db.kv.get("pair/a", as_of=v) == db.kv.get("pair/b", as_of=v)
            assert db.events.length(as_of=v) == sum(1 for ev in event_versions if ev <= v)
        doc_history = db.json.history("doc")
        previous: list[Any] = []
        for entry in doc_history:
            items = entry.value["items"]
            assert items[: len(previous)] == previous, f"the list changed its past at {entry}"
            assert len(items) == len(previous) + 1
            previous = items
        assert db.json.get("doc", "$.items") == previous
        return top


@pytest.mark.slow
def test_killed_writers_lose_nothing_they_acknowledged(
    tmp_path: Path, children: list[Child]
) -> None:
    path = tmp_path / "db"
    rewinddb.open(path).close()
    acks: list[dict[str, Any]] = []
    top = 0
    for round_ in range(3):
        child = Child(CRASHER, tmp_path, f"crasher-{round_}", db=str(path), pause=0.001)
        children.append(child)
        wait_until(partial(child.has, "ready"), "the crasher to start", children)
        time.sleep(0.5 + 0.2 * round_)
        child.kill()
        assert child.proc.returncode == -signal.SIGKILL, child.stderr()
        mine = child.acks()
        assert mine[0]["op"] == "ready"
        # It resumed after the last counter it acknowledged (or the one in flight).
        assert mine[0]["start"] - acks_counter(acks) in (1, 2), mine[0]
        written = [a for a in mine if a["op"] != "ready"]
        assert len(written) > 20, "the child was killed before it wrote anything much"
        acks.extend(written)
        new_top = check_after_crash(path, acks)
        # Only the one write in flight at the kill can be committed but unacknowledged.
        unacknowledged = new_top - max(a["version"] for a in written)
        assert 0 <= unacknowledged <= 1
        assert new_top > top
        top = new_top


def acks_counter(acks: list[dict[str, Any]]) -> int:
    return max((a["value"] for a in acks if a["op"] == "counter"), default=-1)


@pytest.mark.slow
def test_a_writer_killed_inside_a_transaction_leaves_nothing_behind(
    tmp_path: Path, children: list[Child]
) -> None:
    path = tmp_path / "db"
    with rewinddb.open(path) as db:
        db.kv.put("before", 1)
        base = db.version
    holder = Child(HOLDER, tmp_path, "holder", db=str(path), hold=30.0)
    children.append(holder)
    wait_until(lambda: holder.has("locked"), "the holder to take the write lock", children)
    holder.kill()
    integrity_ok(path)
    with rewinddb.open(path) as db:
        assert db.version == base
        assert db.kv.get("held") is None
        assert db.events.length() == 0
        # The lock died with the process: the next write goes straight through.
        start = time.monotonic()
        version = db.kv.put("next", 2)
        assert time.monotonic() - start < 1.0
        assert version == base + 1
        assert db.kv.get("before") == 1
        check_clock(db)


@pytest.mark.slow
def test_a_process_killed_while_creating_a_database_leaves_one_that_opens(
    tmp_path: Path, children: list[Child]
) -> None:
    # Creating a database takes ~10-20 ms; kill creators at points spread across it.
    delays = [k * 0.004 for k in range(8)]
    for k in range(len(delays)):
        children.append(Child(CREATOR, tmp_path, f"creator-{k}", db=str(tmp_path / f"db-{k}")))
    ready_at: dict[int, float] = {}
    while len(ready_at) < len(children) or any(not c.killed for c in children):
        now = time.monotonic()
        for k, child in enumerate(children):
            if k not in ready_at and child.has("ready"):
                ready_at[k] = now
            if k in ready_at and not child.killed and now >= ready_at[k] + delays[k]:
                child.kill()
        for child in children:
            if not child.killed and child.proc.poll() not in (None, 0):
                pytest.fail(f"{child.name} failed:\n{child.stderr()}")
        time.sleep(0.0005)
    broken = []
    for k, child in enumerate(children):
        path = tmp_path / f"db-{k}"
        try:
            db = rewinddb.open(path)
        except rewinddb.RewindError as error:
            when = "after" if child.has("opened") else "while"
            broken.append(f"{path.name} (killed {when} creating it): {error}")
            continue
        with db:
            assert db.branches.names() == ["default"]
            assert db.kv.put("k", k) == db.version == 1
    assert not broken, "databases that no longer open:\n" + "\n".join(broken)


def test_a_branch_another_connection_deleted_or_recreated_is_seen_at_once(
    db_target: str | Path,
) -> None:
    """Branch records (and the clock) may be cached per connection: what another
    connection (here: another process) commits must still be seen by the very next call,
    inside and outside a read transaction."""
    with rewinddb.open(db_target) as db:
        db.branches.fork("default", "b")
        db.at("b").kv.put("k", "old")
        view = db.at("b")
        assert view.kv.get("k") == "old"  # the record of "b" and the clock are now known
        clock = db.version
        script = (
            "import sys, rewinddb\n"
            "with rewinddb.open(sys.argv[1]) as other:\n"
            "    other.branches.delete('b')\n"
        )
        subprocess.run([sys.executable, "-c", script, str(db_target)], check=True, timeout=60)
        with pytest.raises(rewinddb.BranchNotFound):
            view.kv.get("k")
        with pytest.raises(rewinddb.BranchNotFound):
            view.kv.put("k", "stale")
        with pytest.raises(rewinddb.BranchNotFound), db.read():
            view.kv.get("k")
        script = (
            "import sys, rewinddb\n"
            "with rewinddb.open(sys.argv[1]) as other:\n"
            "    other.branches.fork('default', 'b')\n"
            "    other.at('b').kv.put('k', 'new')\n"
        )
        subprocess.run([sys.executable, "-c", script, str(db_target)], check=True, timeout=60)
        assert db.version == clock + 1
        assert view.kv.get("k") == "new"
        assert db.at("b").info().forked_at == clock
        # The same with a second connection of this process, inside a write transaction.
        with rewinddb.open(db_target) as other:
            other.branches.delete("b")
            with pytest.raises(rewinddb.BranchNotFound), db.at("default").transaction():
                db.at("default").kv.put("x", 1)
                view.kv.put("k", "stale")
            other.branches.fork("default", "b")
            assert db.at("b").kv.get("k") is None
            view.kv.put("k", "mine")
            assert other.at("b").kv.get("k") == "mine"
            assert other.version == db.version


def test_a_branch_replaced_while_it_is_being_looked_up(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection keeps branch records while no other connection commits. Another
    connection that deletes a branch and forks a new one of the same name between this
    connection's read of the record and its keeping it must not leave the old record
    trusted: later writes would go to the deleted branch."""
    with rewinddb.open(db_path) as db, rewinddb.open(db_path) as other:
        db.branches.fork("default", "b")
        db.at("b").kv.put("x", "old b")
        other.kv.put("bump", 1)  # what `db` knows of branches is no longer trusted
        engine = db._engine
        read_row = engine._branch_row

        def read_then_replaced(name: str) -> Any:
            record = read_row(name)
            if name == "b":  # the other connection commits right after the read
                monkeypatch.setattr(engine, "_branch_row", read_row)
                other.branches.delete("b")
                other.branches.fork("default", "b")
            return record

        monkeypatch.setattr(engine, "_branch_row", read_then_replaced)
        db.at("b").kv.get("x")  # the read in flight may answer from the old branch
        assert db.at("b").kv.get("x") is None  # the new branch "b" has no x
        db.at("b").kv.put("y", "by db")
        assert other.at("b").kv.get("y") == "by db"
        assert engine.branch("b").id == engine.live_branch_id("b")
