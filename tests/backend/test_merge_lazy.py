"""A merge's receipt decodes its changes when they are read, and the kv entries a target
left alone are copied from the source's in SQL: on random merges the receipt is the
one the three-way rule gives on whole states (before and after it is built), it is a
list of ``MergeChange`` to every use of one, the commits verify, and what the
connection remembers of the written entries is what storage holds."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewinddb
from rewinddb import merge
from rewinddb._merge_applied import AppliedChanges

from .test_merge_batched import expected_merge, keys_per_read, receipt_rows, state_of

KEYS = [f"k{i:02d}" for i in range(24)]

json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, -0.0, 1.0, 1.5])
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet="abc", min_size=1, max_size=2), inner, max_size=3)
    ),
    max_leaves=6,
)
value = (
    json_value | st.binary(max_size=4) | st.just([{"text": f"item {i} " * 6} for i in range(40)])
)
#: A side's changes: key index -> a value, or None to delete it.
changes = st.dictionaries(st.integers(0, len(KEYS) - 1), st.none() | value, max_size=12)
documents = st.dictionaries(
    st.integers(0, 3),
    st.dictionaries(st.sampled_from("abcd"), st.none() | json_value, max_size=3),
    max_size=3,
)


def apply(view: rewinddb.BranchView, kv: dict[int, Any], docs: dict[int, dict[str, Any]]) -> None:
    with view.transaction():
        for index, new in kv.items():
            if new is None:
                view.kv.delete(KEYS[index])
            else:
                view.kv.put(KEYS[index], new)
        for index, members in docs.items():
            for member, new in members.items():
                if new is None:
                    if view.json.get(f"doc{index}") is not None:
                        view.json.delete(f"doc{index}", f"$.{member}")
                else:
                    view.json.set(f"doc{index}", f"$.{member}", new)


def plain(receipt: rewinddb.MergeReceipt) -> rewinddb.MergeReceipt:
    """The receipt with its changes as a plain list (what it was before they were lazy)."""
    return dataclasses.replace(receipt, applied=list(receipt.applied))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    base=changes,
    source=changes,
    target=changes,
    source_docs=documents,
    target_docs=documents,
    strategy=st.sampled_from(["source", "target"]),
    chunk=st.sampled_from([500, 3]),
    fewest=st.sampled_from([8, 1]),
)
def test_lazy_receipts_are_the_rule_on_random_merges(
    base: dict[int, Any],
    source: dict[int, Any],
    target: dict[int, Any],
    source_docs: dict[int, dict[str, Any]],
    target_docs: dict[int, dict[str, Any]],
    strategy: str,
    chunk: int,
    fewest: int,
) -> None:
    directory = Path(tempfile.mkdtemp())
    saved = rewinddb._engine._FEWEST_COPIED
    rewinddb._engine._FEWEST_COPIED = fewest  # (1: every copied entry goes by SQL)
    try:
        with rewinddb.open(directory / "db") as db, keys_per_read(chunk):
            db.kv.put_many({key: {"n": i} for i, key in enumerate(KEYS)})
            apply(db.at("default"), base, {})
            db.branches.fork("default", "run")
            apply(db.at("run"), source, source_docs)
            apply(db.at("default"), target, target_docs)
            fork_point = ("default", db.branches.get("run").forked_at)
            applied, conflicts, after = expected_merge(db, "run", "default", fork_point, strategy)
            receipt = db.branches.merge("run", "default", strategy=strategy)  # type: ignore[arg-type]
            assert isinstance(receipt.applied, list)
            # What the receipt tells unbuilt, then built.
            count, keys, line = len(receipt.applied), receipt.keys_applied, receipt.summary()
            assert count == len(applied) and keys == sorted({row[1] for row in applied})
            assert receipt_rows(receipt) == (applied, conflicts)
            assert line == receipt.summary() == plain(receipt).summary()
            assert receipt.to_dict() == plain(receipt).to_dict()
            assert state_of(db, "default") == after
            assert db.verify().ok
            remembered = db.at("default").snapshot()
        with rewinddb.open(directory / "db") as reopened:
            assert reopened.at("default").snapshot() == remembered  # storage agrees
    finally:
        rewinddb._engine._FEWEST_COPIED = saved
        shutil.rmtree(directory, ignore_errors=True)


def merged(db: rewinddb.Database, name: str = "run") -> rewinddb.MergeReceipt:
    """100 keys on default, half of them changed on a fork ``name``, merged back (on a
    default that merged before, its values are put back first)."""
    db.kv.put_many({f"k{i:03d}": {"i": i, "status": "todo"} for i in range(100)})
    db.branches.fork("default", name)
    changed = {f"k{i:03d}": {"i": i, "status": "done"} for i in range(0, 100, 2)}
    db.at(name).kv.put_many(changed)
    return db.branches.merge(name, "default", trigger="merge run")


def test_a_merge_into_an_untouched_target_decodes_nothing_until_its_receipt_is_read(
    db: rewinddb.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = db._engine
    decoded: list[int] = []
    decode_many = engine.decode_many

    def counting(forms: list[Any]) -> list[Any]:
        decoded.append(len(forms))
        return decode_many(forms)

    monkeypatch.setattr(engine, "decode_many", counting)
    receipt = merged(db)
    # SQLite checks the copied bodies in the copy's statement (json_valid); PostgreSQL's
    # rows are sent, and decoded once, together, to check them before they are.
    checked = [] if engine.conn.dialect == "sqlite" else [50]
    assert decoded == checked and len(receipt.applied) == 50
    assert receipt.keys_applied == [f"k{i:03d}" for i in range(0, 100, 2)]
    assert decoded == checked  # (nor for its keys)
    first = receipt.applied[0]
    assert decoded == [*checked, 100]  # all of them, once, in one call
    assert first == merge.MergeChange(
        "kv", "k000", "$", {"i": 0, "status": "todo"}, {"i": 0, "status": "done"}
    )
    assert list(receipt.applied) == [
        merge.MergeChange(
            "kv", f"k{i:03d}", "$", {"i": i, "status": "todo"}, {"i": i, "status": "done"}
        )
        for i in range(0, 100, 2)
    ]
    assert decoded == [*checked, 100]


def test_copied_entries_are_what_write_values_writes(db_target: str | Path) -> None:
    """The copied rows hold the source's stored values, the merge's trigger and version;
    the merge commit's hash covers them (verify); the connection remembers them as
    storage holds them."""
    wanted = [f"k{i:03d}" for i in range(0, 100, 2)]
    with rewinddb.open(db_target) as db:
        receipt = merged(db)
        engine = db._engine
        target, source = engine.branch("default").id, engine.branch("run").id
        assert receipt.version is not None
        rows = engine.conn.fetchall(
            "SELECT key, kind, body, refs, trigger FROM rewind_entries "
            "WHERE branch_id = ? AND version = ? ORDER BY key",
            (target, receipt.version),
        )
        bodies = dict(
            engine.conn.fetchall(
                "SELECT key, body FROM rewind_entries WHERE branch_id = ? AND space = 'kv'",
                (source,),
            )
        )
        assert [
            (key, kind, bytes(body), refs, trigger) for key, kind, body, refs, trigger in rows
        ] == [(key, 0, bytes(bodies[key]), None, "merge run") for key in wanted]
        held = {key: engine.memory.get("entry", (target, "kv", key)) for key in wanted}
        if engine.conn.dialect == "sqlite":  # (PostgreSQL's holds nothing between writes)
            assert all(row is not rewinddb._engine.UNKNOWN for row in held.values())
        assert db.verify().ok
        values = {f"k{i:03d}": db.kv.get(f"k{i:03d}") for i in range(100)}
    with rewinddb.open(db_target) as reopened:
        assert {key: reopened.kv.get(key) for key in values} == values
        engine = reopened._engine
        record = engine.branch("default")
        for key, row in held.items():
            if row is rewinddb._engine.UNKNOWN:
                continue
            stored = engine.read_entry(record, reopened.version, "kv", key)
            assert stored is not None and tuple(row) == tuple(stored)


def test_a_lazy_receipt_is_a_list_of_changes_to_every_use(tmp_path: Path) -> None:
    uses = [
        lambda r: r.applied == expected,
        lambda r: expected == r.applied,
        lambda r: list(r.applied) == expected,
        lambda r: r.applied[:] == expected and r.applied[-1] == expected[-1],
        lambda r: repr(r.applied) == repr(expected),
        lambda r: pickle.loads(pickle.dumps(r.applied)) == expected,
        lambda r: copy.copy(r.applied) == expected,
        lambda r: copy.deepcopy(r.applied) == expected,
        lambda r: dataclasses.asdict(r)["applied"] == [dataclasses.asdict(c) for c in expected],
        lambda r: r == plain(r),
        lambda r: r.to_dict()["applied"] == [vars(c) for c in expected],
        lambda r: expected[0] in r.applied and r.applied.index(expected[1]) == 1,
        lambda r: r.applied + [] == expected,  # noqa: RUF005 - list concatenation
        lambda r: sorted(r.applied, key=lambda c: c.key) == expected,
        lambda r: bool(r.applied) and len(r.applied) == len(expected),
        lambda r: [] + r.applied == expected,  # noqa: RUF005 - list concatenation
        lambda r: json.loads(json.dumps(r.to_dict()))["applied"] == [vars(c) for c in expected],
        lambda r: (
            json.dumps([vars(c) for c in r.applied]) == json.dumps([vars(c) for c in expected])
        ),
        lambda r: (
            orjson.loads(orjson.dumps(list(r.applied))) == orjson.loads(orjson.dumps(expected))
        ),
    ]
    with rewinddb.open(tmp_path / "db") as db:
        expected = list(merged(db, name="run").applied)
        for number, use in enumerate(uses):  # each on a receipt not built yet
            lazy = merged(db, name=f"run{number}")
            assert isinstance(lazy.applied, AppliedChanges) and lazy.applied._build is not None
            assert use(lazy), number
            assert lazy.applied == expected  # and still (once built)
        first, second = merged(db, name="again-1"), merged(db, name="again-2")
        assert first.applied == second.applied  # two unbuilt lists: each builds the other
        assert first.applied == expected
        unbuilt = merged(db, name="again-3")
        with pytest.raises(TypeError):  # orjson reads a list's items directly: loudly
            orjson.dumps(unbuilt.applied)
        assert orjson.dumps(unbuilt.applied[:]) == orjson.dumps(expected)


def _damage(path: Path, key: str, branch_id: int) -> None:
    """Another program's bytes, not JSON, in the body of ``key``'s entry on a branch."""
    raw = sqlite3.connect(path / "rewind.sqlite3")
    with raw:
        changed = raw.execute(
            "UPDATE rewind_entries SET body = x'7b2261223a' WHERE key = ? AND branch_id = ?",
            (key, branch_id),
        ).rowcount
    raw.close()
    assert changed == 1


@pytest.mark.parametrize("keys", [20, 3])  # copied by one INSERT ... SELECT, or sent as rows
def test_a_merge_refuses_to_copy_a_damaged_value_and_writes_nothing(
    tmp_path: Path, keys: int
) -> None:
    """A source entry the merge would copy as stored is not JSON: the merge fails with
    ``corrupt.entries`` naming the key, and the target is as it was (the damage does not
    spread to it under a valid hash)."""
    path = tmp_path / "db"
    with rewinddb.open(path) as db:
        db.kv.put_many({f"k{i}": {"i": i} for i in range(keys)})
        db.branches.fork("default", "run")
        db.at("run").kv.put_many({f"k{i}": {"i": -i - 1} for i in range(keys)})
        before = db.version
    _damage(path, "k1", branch_id=2)
    with rewinddb.open(path) as db:
        with pytest.raises(rewinddb.CorruptDatabaseError) as raised:
            db.branches.merge("run", "default")
        assert raised.value.code == "corrupt.entries" and "'k1'" in str(raised.value)
        assert db.version == before and db.kv.get("k2") == {"i": 2}
        assert db.kv.items() == {f"k{i}": {"i": i} for i in range(keys)}


def test_a_damaged_base_value_fails_the_receipt_with_a_rewind_error(tmp_path: Path) -> None:
    """The base's entry is not JSON: the merge copies the source's value (the base is
    not written anywhere), and reading the receipt's change fails with
    ``corrupt.entries`` naming the key, never with the JSON parser's error."""
    path = tmp_path / "db"
    with rewinddb.open(path) as db:
        db.kv.put_many({f"k{i}": {"i": i} for i in range(20)})
        db.branches.fork("default", "run")
        db.at("run").kv.put_many({f"k{i}": {"i": -i - 1} for i in range(20)})
    _damage(path, "k3", branch_id=1)
    with rewinddb.open(path) as db:
        receipt = db.branches.merge("run", "default")
        assert len(receipt.applied) == 20 and "k3" in receipt.keys_applied
        for use in (lambda: receipt.applied[0], lambda: list(receipt.applied), receipt.to_dict):
            with pytest.raises(rewinddb.CorruptDatabaseError) as raised:
                use()
            assert raised.value.code == "corrupt.entries" and "'k3'" in str(raised.value)
        assert db.kv.get("k3") == {"i": -4} and db.kv.get("k4") == {"i": -5}
