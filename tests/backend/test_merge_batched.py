"""Merges read the changed keys' entries a batch at a time: the receipts and resulting
states are those of the three-way rule applied to whole states, on the hard cases, and a
merge of few changed keys of a large state reads only those keys."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

import rewinddb
from rewinddb import merge

from .conftest import entry_reads, statements

ABSENT: Any = object()

# -- the rule on whole states -------------------------------------------------------


def stored_same(a: Any, b: Any) -> bool:
    """Equal as stored values (``1``, ``1.0``, ``True`` and ``0.0``, ``-0.0`` differ)."""
    if a is ABSENT or b is ABSENT:
        return a is b
    if isinstance(a, bytes) or isinstance(b, bytes):
        return isinstance(a, bytes) and isinstance(b, bytes) and a == b
    return bool(
        orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)
    )


def path_of(tokens: tuple[str, ...]) -> str:
    return "$" + "".join(f".{token}" for token in tokens)


def three_way(
    base: Any,
    source: Any,
    target: Any,
    tokens: tuple[str, ...],
    by_member: bool,
    applied: list[tuple[str, Any, Any]],
    conflicts: list[tuple[str, Any, Any, Any]],
) -> Any:
    if stored_same(source, target) or stored_same(source, base):
        return target
    if (
        by_member
        and isinstance(source, dict)
        and isinstance(target, dict)
        and (base is ABSENT or isinstance(base, dict))
    ):
        base_dict = {} if base is ABSENT else base
        merged = {}
        for member in sorted(base_dict.keys() | source.keys() | target.keys()):
            value = three_way(
                base_dict.get(member, ABSENT),
                source.get(member, ABSENT),
                target.get(member, ABSENT),
                (*tokens, member),
                by_member,
                applied,
                conflicts,
            )
            if value is not ABSENT:
                merged[member] = value
        return merged
    if stored_same(target, base):
        applied.append((path_of(tokens), target, source))
        return source
    conflicts.append((path_of(tokens), base, source, target))
    return target


def shown(value: Any) -> Any:
    return None if value is ABSENT else value


def expected_merge(
    db: rewinddb.Database, source: str, target: str, base: tuple[str, int], strategy: str
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, dict[str, Any]]]:
    """(applied, conflicts, the target's state after) of merging whole states."""
    states = [
        db.at(base[0]).snapshot(as_of=base[1]),
        db.at(source).snapshot(),
        db.at(target).snapshot(),
    ]
    applied: list[tuple[Any, ...]] = []
    conflicts: list[tuple[Any, ...]] = []
    after: dict[str, dict[str, Any]] = {}
    for space in ("json", "kv", "state"):  # the merge's (space, key) order
        base_state, source_state, target_state = (state[space] for state in states)
        after[space] = dict(target_state)
        for key in sorted(base_state.keys() | source_state.keys() | target_state.keys()):
            base, source, target = (
                state.get(key, ABSENT) for state in (base_state, source_state, target_state)
            )
            key_applied: list[tuple[str, Any, Any]] = []
            key_conflicts: list[tuple[str, Any, Any, Any]] = []
            merged = three_way(
                base, source, target, (), space == "json", key_applied, key_conflicts
            )
            for path, conflict_base, conflict_source, conflict_target in key_conflicts:
                resolution = None if strategy == "fail" else strategy
                conflicts.append(
                    (
                        space,
                        key,
                        path,
                        shown(conflict_base),
                        shown(conflict_source),
                        shown(conflict_target),
                        resolution,
                    )
                )
                if strategy == "source":
                    merged = put_at(merged, path, conflict_source)
                    key_applied.append((path, conflict_target, conflict_source))
            applied += [
                (space, key, path, shown(old), shown(new)) for path, old, new in key_applied
            ]
            if merged is ABSENT:
                after[space].pop(key, None)
            else:
                after[space][key] = merged
    return applied, conflicts, after


def put_at(document: Any, path: str, value: Any) -> Any:
    """``document`` with ``value`` at ``path`` (``$`` or ``$.a.b``; ABSENT removes it)."""
    tokens = path.split(".")[1:]
    if not tokens:
        return value
    document = dict(document)
    inner = document
    for token in tokens[:-1]:
        inner[token] = dict(inner[token])
        inner = inner[token]
    if value is ABSENT:
        inner.pop(tokens[-1], None)
    else:
        inner[tokens[-1]] = value
    return document


# -- the hard cases ------------------------------------------------------------------


def long_list(n: int, tag: str) -> list[dict[str, str]]:
    """A list long enough to be stored as a shared array."""
    return [{"text": f"{tag} item {i} " + "x" * 40} for i in range(n)]


def build(db: rewinddb.Database) -> None:
    """default with a base state, a fork ``run``, and changes on both sides that cover
    each way a key can merge."""
    db.kv.put_many(
        {
            "a": {"n": 1},
            "b": "drop me",
            "same-both": 0,
            "conflict": "base",
            "back": "base",
            "num": 1,
            "bool": 1,
            "zero": 0.0,
            "bytes": b"x",
            "del-both": 1,
            "erased": "secret",
            **{f"filler-{i:03d}": i for i in range(30)},
        }
    )
    db.json.set("doc", "$", {"a": 1, "b": 1, "c": 1, "d": 1, "nested": {"x": 1, "y": 1}})
    db.json.set("doc2", "$", {"m": 1})
    db.json.set("log", "$", {"items": long_list(60, "base"), "n": 0})
    db.state.set("phase", "start")
    db.state.set("owner", "base")
    db.branches.fork("default", "run")
    run = db.at("run")
    with run.transaction():
        run.kv.put("a", {"n": 2})
        run.kv.delete("b")
        run.kv.put("new-s", [1, 2])
        run.kv.put("same-both", "X")
        run.kv.put("conflict", "source")
        run.kv.put("back", "moved")
    run.kv.put("back", "base")  # and back: the same value as the base, another entry
    run.kv.put_many({"num": 1.0, "bool": True, "zero": -0.0, "bytes": b"y"})
    run.kv.delete("del-both")
    run.kv.put("add-both-same", {"v": 1})
    run.kv.put("add-both-diff", "source")
    run.kv.put_many({f"filler-{i:03d}": -i for i in range(0, 30, 3)})
    run.json.set("doc", "$.a", 2)
    run.json.set("doc", "$.c", "source")
    run.json.delete("doc", "$.d")
    run.json.set("doc", "$.nested.x", 2)
    run.json.set("doc2", "$", [1, 2])  # no longer an object
    run.json.set("log", "$.items", [*long_list(60, "base"), {"text": "appended on both"}])
    run.json.set("log", "$.n", 1)
    run.state.set("phase", "running")
    # The target moves too.
    db.kv.put("same-both", "X")
    db.kv.put("conflict", "target")
    db.kv.put("bool", 1.0)
    db.kv.delete("del-both")
    db.kv.put("add-both-same", {"v": 1})
    db.kv.put("add-both-diff", "target")
    db.kv.put_many({f"filler-{i:03d}": i * 100 for i in range(1, 30, 3)})
    db.json.set("doc", "$.b", 5)
    db.json.set("doc", "$.c", "target")
    db.json.set("doc", "$.nested.y", 3)
    db.json.set("doc2", "$.m", 2)
    db.json.set("log", "$.items", [*long_list(60, "base"), {"text": "appended on both"}])
    db.state.set("owner", "target")
    db.erase_key("kv", "erased")


@contextmanager
def keys_per_read(size: int) -> Iterator[None]:
    saved = merge._KEYS_PER_READ
    merge._KEYS_PER_READ = size
    try:
        yield
    finally:
        merge._KEYS_PER_READ = saved


def receipt_rows(receipt: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    return (
        [(c.primitive, c.key, c.path, c.old, c.new) for c in receipt.applied],
        [
            (c.primitive, c.key, c.path, c.base, c.source, c.target, c.resolution)
            for c in receipt.conflicts
        ],
    )


def state_of(db: rewinddb.Database, branch: str) -> dict[str, dict[str, Any]]:
    snapshot = db.at(branch).snapshot()
    return {space: snapshot[space] for space in ("json", "kv", "state")}


@pytest.mark.parametrize("chunk", [500, 2])
@pytest.mark.parametrize("strategy", ["source", "target"])
def test_a_merge_is_the_rule_on_whole_states(
    db: rewinddb.Database, chunk: int, strategy: str
) -> None:
    build(db)
    with keys_per_read(chunk):
        with pytest.raises(rewinddb.MergeConflictError) as info:
            db.branches.merge("run", "default")
        failed = [
            (c.primitive, c.key, c.path, c.base, c.source, c.target, c.resolution)
            for c in info.value.conflicts
        ]
        # The base of this merge is the fork point: default at the version run forked at.
        fork_point = ("default", db.branches.get("run").forked_at)
        applied, conflicts, after = expected_merge(db, "run", "default", fork_point, strategy)
        assert failed == [(*c[:6], None) for c in conflicts]
        assert [c[1:3] for c in conflicts] == [
            ("doc", "$.c"),
            ("doc2", "$"),
            ("add-both-diff", "$"),
            ("bool", "$"),
            ("conflict", "$"),
        ]
        receipt = db.branches.merge("run", "default", strategy=strategy)  # type: ignore[arg-type]
    assert receipt.base == fork_point
    assert receipt_rows(receipt) == (applied, conflicts)
    assert state_of(db, "default") == after
    keys = {change.key for change in receipt.applied}
    assert {"a", "b", "new-s", "num", "zero", "bytes", "doc", "filler-003"} <= keys
    assert not keys & {"same-both", "back", "del-both", "add-both-same", "erased"}
    assert [c.path for c in receipt.applied if c.key == "log"] == ["$.n"]  # items: the same
    assert db.kv.get("zero") == -0.0 and type(db.kv.get("num")) is float


@pytest.mark.parametrize("chunk", [500, 3])
def test_the_target_read_key_by_key_gives_the_same_merge(
    db: rewinddb.Database, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A target that changed far more keys than the source reads its entries of the
    source's keys instead of listing its changes: the same receipts and states."""
    build(db)
    monkeypatch.setattr(merge, "_TARGET_CHANGES_READ", 1)
    db.kv.put_many({f"target-only-{i:03d}": i for i in range(300)})  # > 4x the source's keys
    with keys_per_read(chunk):
        fork_point = ("default", db.branches.get("run").forked_at)
        applied, conflicts, after = expected_merge(db, "run", "default", fork_point, "source")
        receipt = db.branches.merge("run", "default", strategy="source")
    assert receipt_rows(receipt) == (applied, conflicts)
    assert state_of(db, "default") == after


def test_a_second_merge_from_a_base_held_through_a_merge(db: rewinddb.Database) -> None:
    build(db)
    db.branches.merge("run", "default", strategy="source")
    run = db.at("run")
    run.kv.put("a", {"n": 3})
    run.kv.put("conflict", "source again")
    run.kv.delete("new-s")
    run.json.set("doc", "$.nested.y", "from run")
    db.kv.put("conflict", "target again")
    db.json.set("doc", "$.a", "from default")
    with keys_per_read(2):
        base = merge.merge_base(
            db._engine, db._engine.branch("run"), db._engine.branch("default"), db.version
        )
        point = (base[0].name, base[1])
        assert point[0] == "run"  # held by default through the first merge
        applied, conflicts, after = expected_merge(db, "run", "default", point, "target")
        receipt = db.branches.merge("run", "default", strategy="target")
    assert receipt.base == point
    assert receipt_rows(receipt) == (applied, conflicts)
    assert [c[1:3] for c in conflicts] == [("doc", "$.nested.y"), ("conflict", "$")]
    assert state_of(db, "default") == after


# -- what a merge reads --------------------------------------------------------------


def grown(directory: Path, keys: int) -> None:
    """``keys`` keys on default, a source ``run`` that changed three of them and added
    one, and a target that changed two others and one of the source's the same way."""
    with rewinddb.open(directory) as db:
        db.kv.put_many({f"k{i:05d}": {"i": i} for i in range(keys)})
        db.branches.fork("default", "run")
        db.at("run").kv.put_many({"k00007": "x", "k00100": "y", "k00150": "z", "new": 1})
        db.kv.put_many({"k00200": "moved on", "k00250": "too", "k00150": "z"})


def test_a_merge_reads_the_changed_keys_only(tmp_path: Path) -> None:
    counts = []
    for keys in (300, 3000):
        grown(tmp_path / str(keys), keys)
        with rewinddb.open(tmp_path / str(keys)) as db:  # nothing remembered
            with entry_reads(db) as calls, statements(db) as seen:
                receipt = db.branches.merge("run", "default")
            assert receipt.keys_applied == ["k00007", "k00100", "new"]
            source_keys = ["k00007", "k00100", "k00150", "new"]
            # The base and the source at the source's keys; the target at the one key
            # both sides wrote (it holds the others as the base does).
            assert [(space, keys) for _, space, keys in calls] == [
                ("kv", source_keys),
                ("kv", source_keys),
                ("kv", ["k00150"]),
            ]
            reads = [s for s in seen if s.startswith("SELECT") and "rewind_entries" in s]
            counts.append(len(reads))
            written = [s for s in seen if s.startswith("INSERT INTO rewind_entries")]
            assert len(written) == 3  # a row each (traced row by row), of one executemany
            assert db.kv.get("k00007") == "x" and db.kv.get("k00200") == "moved on"
    # The source's changes and the target's, then the entries: the same few statements,
    # whatever the state's size.
    assert counts[0] == counts[1] == 5


def test_a_merge_writes_its_entries_in_one_statement_per_space(db: rewinddb.Database) -> None:
    db.kv.put_many({f"k{i:03d}": i for i in range(200)})
    db.json.set("doc", "$", {"a": 1, "b": 1})
    db.branches.fork("default", "run")
    db.at("run").kv.put_many({f"k{i:03d}": -i - 1 for i in range(0, 200, 2)})
    db.at("run").json.set("doc", "$.a", 2)
    db.json.set("doc", "$.b", 2)
    conn = db._engine.conn
    many: list[tuple[str, int]] = []
    single: list[str] = []
    executemany, execute = conn.executemany, conn.execute

    def recording_many(sql: str, rows: Any) -> None:
        many.append((sql, len(rows)))
        executemany(sql, rows)

    def recording(sql: str, params: Any = ()) -> Any:
        single.append(sql)
        return execute(sql, params)

    conn.executemany = recording_many  # type: ignore[method-assign]
    conn.execute = recording  # type: ignore[method-assign]
    try:
        receipt = db.branches.merge("run", "default")
    finally:
        del conn.executemany, conn.execute
    assert len(receipt.applied) == 101
    entry_writes = [
        sql
        for sql in single
        if sql.startswith(("INSERT INTO rewind_entries", "UPDATE rewind_entries"))
    ]
    if conn.dialect == "sqlite":  # the kv entries copied from the source's, in SQL
        assert [(sql.split(" (")[0], rows) for sql, rows in many] == [
            ("INSERT INTO rewind_entries", 1),  # json: doc
        ]
        assert entry_writes == [db._engine._COPY_ENTRIES]  # kv
    else:
        assert [(sql.split(" (")[0], rows) for sql, rows in many] == [
            ("INSERT INTO rewind_entries", 1),  # json: doc
            ("INSERT INTO rewind_entries", 100),  # kv
        ]
        assert not entry_writes
    assert db.json.get("doc") == {"a": 2, "b": 2} and db.kv.get("k010") == -11


def test_no_change_on_the_source_reads_no_entry(db: rewinddb.Database) -> None:
    db.kv.put_many({f"k{i}": i for i in range(50)})
    db.branches.fork("default", "run")
    db.kv.put("k1", "target")
    with entry_reads(db) as calls:
        assert db.branches.merge("run", "default").up_to_date
    assert calls == []


def test_what_the_target_changed_is_listed_whole_across_its_lineage(
    db: rewinddb.Database,
) -> None:
    """The target's changes are listed step by step of its lineage; keys an earlier step
    listed come again in a later one, and must not cut that step's list short (a key the
    target changed would be taken for the base's, and the source's value would replace
    it without a conflict)."""
    db.kv.put_many({f"k{i:04}": 0 for i in range(2500)})
    db.branches.fork("default", "src")  # the merge base: default here
    db.kv.put_many({f"k{i:04}": "target" for i in range(2500)})  # the target's parent
    db.branches.fork("default", "tgt")
    db.at("tgt").kv.put_many({f"k{i:04}": "t" for i in range(10)})  # its own step
    db.at("src").kv.put("k2400", "source")
    with pytest.raises(rewinddb.MergeConflictError) as raised:
        db.branches.merge("src", "tgt", strategy="fail")
    assert [c.key for c in raised.value.conflicts] == ["k2400"]
    assert db.at("tgt").kv.get("k2400") == "target"
