"""Bad input gets a clear RewindError with a stable code and writes nothing."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rewinddb


@pytest.fixture
def db(db):  # type: ignore[no-untyped-def]
    db.kv.put("k", 1)
    db.json.set("doc", "$", {"stocks": 60, "list": [1, 2]})
    db.events.append("e", {"n": 1})
    db.branches.fork("default", "run")
    return db


@pytest.mark.parametrize(
    "value",
    [
        {1, 2},
        object(),
        float("nan"),
        float("inf"),
        {"nested": [1, float("-inf")]},
        {1: "non-string key"},
        {"when": datetime.now(timezone.utc)},
        Decimal("1.5"),
        2**70,
        [b"bytes inside JSON"],
    ],
    ids=[
        "set",
        "object",
        "nan",
        "inf",
        "nested-inf",
        "int-key",
        "datetime",
        "decimal",
        "bigint",
        "nested-bytes",
    ],
)
def test_non_json_values_are_refused(db, refused, value) -> None:  # type: ignore[no-untyped-def]
    with refused(db, rewinddb.InvalidValueError, "invalid.value"):
        db.kv.put("k", value)
    with refused(db, rewinddb.InvalidValueError, "invalid.value"):
        db.json.set("doc", "$.stocks", value)
    with refused(db, rewinddb.InvalidValueError, "invalid.value"):
        db.events.append("e", value)


@pytest.mark.parametrize("key", ["", "   ", None, 5, b"k", "nul\x00key"])
def test_bad_keys_are_refused(db, refused, key) -> None:  # type: ignore[no-untyped-def]
    with refused(db, rewinddb.InvalidInputError, "invalid.key"):
        db.kv.put(key, 1)
    with refused(db, rewinddb.InvalidInputError, "invalid.key"):
        db.kv.get(key)
    with refused(db, rewinddb.InvalidInputError, "invalid.key"):
        db.json.set(key, "$", 1)
    with refused(db, rewinddb.InvalidInputError, "invalid.key"):
        db.kv.delete(key)


@pytest.mark.parametrize(
    "path", ["", "stocks", "$.", "$..a", "$[*]", "$[-1]", "$['open", "$.a b", "$[?(@.x)]", 5]
)
def test_invalid_json_paths(db, refused, path) -> None:  # type: ignore[no-untyped-def]
    with refused(db, rewinddb.InvalidJSONPathError, "invalid.json_path"):
        db.json.set("doc", path, 1)
    with refused(db, rewinddb.InvalidJSONPathError, "invalid.json_path"):
        db.json.get("doc", path)


@pytest.mark.parametrize("path", ["$.stocks.x", "$.list.x", "$.stocks[0]", "$.list[5]"])
def test_paths_through_the_wrong_kind_of_value(db, refused, path) -> None:  # type: ignore[no-untyped-def]
    with refused(db, rewinddb.InvalidJSONPathError, "invalid.json_path") as info:
        db.json.set("doc", path, 1)
    assert path in str(info.value)


def test_unknown_branch_for_reads_and_writes(db, refused) -> None:  # type: ignore[no-untyped-def]
    with refused(db, rewinddb.BranchNotFound, "not_found.engine.branch"):
        db.at("nope")
    view = db.at("run")
    db.branches.delete("run")
    for call in (
        lambda: view.kv.get("k"),
        lambda: view.kv.put("k", 2),
        lambda: view.json.set("doc", "$.a", 1),
        lambda: view.events.append("e", {}),
        lambda: view.events.list(),
        lambda: db.branches.fork("run", "x"),
        lambda: db.branches.delete("run"),
        lambda: db.branches.get("run"),
        lambda: db.diff("run", "default"),
    ):
        with refused(db, rewinddb.BranchNotFound, "not_found.engine.branch"):
            call()


def test_fork_onto_an_existing_name(db, refused) -> None:  # type: ignore[no-untyped-def]
    with refused(db, rewinddb.BranchExistsError, "conflict.branch_exists"):
        db.branches.fork("default", "run")
    with refused(db, rewinddb.InvalidInputError, "invalid.branch"):
        db.branches.fork("default", "")


def test_deleting_default_is_refused(db, refused) -> None:  # type: ignore[no-untyped-def]
    with refused(db, rewinddb.InvalidInputError, "invalid.branch.default"):
        db.branches.delete("default")


def test_as_of_before_the_branch_existed_or_in_the_future(db, refused) -> None:  # type: ignore[no-untyped-def]
    run = db.at("run")
    with refused(db, rewinddb.HistoryUnavailableError, "history_unavailable"):
        run.kv.get("k", as_of=1)
    with refused(db, rewinddb.HistoryUnavailableError, "history_unavailable"):
        db.branches.fork("run", "too-early", at=1)
    with refused(db, rewinddb.InvalidInputError, "invalid.as_of"):
        db.kv.get("k", as_of=db.version + 1)
    with refused(db, rewinddb.InvalidInputError, "invalid.as_of"):
        db.kv.get("k", as_of=datetime.now(timezone.utc) + timedelta(hours=1))
    with refused(db, rewinddb.InvalidInputError, "invalid.as_of"):
        db.kv.get("k", as_of=datetime.now())  # naive: ambiguous
    with refused(db, rewinddb.InvalidInputError, "invalid.as_of"):
        db.kv.get("k", as_of=-1)
    with refused(db, rewinddb.InvalidInputError, "invalid.as_of"):
        db.events.list(as_of="3")  # type: ignore[arg-type]
    with refused(db, rewinddb.InvalidInputError, "invalid.as_of"):
        db.diff("default", "run", as_of_a=True)  # type: ignore[arg-type]


def test_bad_metadata_and_event_arguments(db, refused) -> None:  # type: ignore[no-untyped-def]
    with refused(db, rewinddb.InvalidInputError, "invalid.trigger"):
        db.kv.put("k", 2, trigger=5)  # type: ignore[arg-type]
    with refused(db, rewinddb.InvalidInputError, "invalid.message"):
        db.json.set("doc", "$", 2, message=["x"])  # type: ignore[arg-type]
    with refused(db, rewinddb.InvalidInputError, "invalid.event_type"):
        db.events.append("", {})
    with refused(db, rewinddb.InvalidInputError, "invalid.expected_index"):
        db.events.append("e", {}, expected_index=-1)
    with refused(db, rewinddb.InvalidInputError, "invalid.limit"):
        db.events.list(limit=-1)
    with refused(db, rewinddb.InvalidInputError, "invalid.sequence"):
        db.events.get("0")  # type: ignore[arg-type]


def test_expected_index_conflict_writes_nothing(db, refused) -> None:  # type: ignore[no-untyped-def]
    with refused(db, rewinddb.AppendConflictError, "conflict.append"):
        db.events.append("e", {}, expected_index=0)
    assert db.events.append("e", {}, expected_index=1).sequence == 1


def test_errors_are_catchable_as_builtins(db) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KeyError):
        db.at("nope")
    with pytest.raises(ValueError):
        db.kv.put("k", float("nan"))
    assert str(rewinddb.BranchNotFound("x")).startswith("[not_found.engine.branch]")


def test_values_that_contain_themselves_or_nest_too_deep(db, refused) -> None:  # type: ignore[no-untyped-def]
    looped: list[object] = []
    looped.append(looped)
    deep: object = 1
    for _ in range(300):
        deep = [deep]
    for value in (looped, deep):
        with refused(db, rewinddb.InvalidValueError, "invalid.value"):
            db.kv.put("k", value)
        with refused(db, rewinddb.InvalidValueError, "invalid.value"):
            db.events.append("e", value)
        with refused(db, rewinddb.InvalidValueError, "invalid.value"):
            db.state.set("s", value)


def test_lone_surrogates_are_refused(db, refused) -> None:  # type: ignore[no-untyped-def]
    bad = "broken \ud800 text"
    with refused(db, rewinddb.InvalidValueError, "invalid.value"):
        db.kv.put("k", bad)
    with refused(db, rewinddb.InvalidValueError, "invalid.value"):
        db.json.set("doc", "$", {bad: 1})
    with refused(db, rewinddb.InvalidInputError, "invalid.key"):
        db.kv.put(bad, 1)
    with refused(db, rewinddb.InvalidInputError, "invalid.branch"):
        db.branches.fork("default", bad)
    with refused(db, rewinddb.InvalidInputError, "invalid.trigger"):
        db.kv.put("k", 1, trigger=bad)
    with refused(db, rewinddb.InvalidInputError, "invalid.event_type"):
        db.events.append(bad, {})
    with db.transaction(), pytest.raises(rewinddb.InvalidValueError):
        db.kv.put("k", bad)  # refused inside a transaction: the rest goes on
    assert db.kv.get("k") == 1


@pytest.mark.parametrize("number", [2**70, -1, "1", 1.0, True])
def test_counts_must_be_non_negative_ints(db, refused, number) -> None:  # type: ignore[no-untyped-def]
    for call, code in (
        (lambda: db.events.get(number), "invalid.sequence"),
        (lambda: db.events.list(after=number), "invalid.after"),
        (lambda: db.events.list(limit=number), "invalid.limit"),
        (lambda: db.branches.fork("default", "x", at_event=number), "invalid.sequence"),
        (lambda: db.commits(limit=number), "invalid.limit"),
        (lambda: db.state.history(limit=number), "invalid.limit"),
        (lambda: db.events.append("e", {}, expected_index=number), "invalid.expected_index"),
    ):
        with refused(db, rewinddb.InvalidInputError, code):
            call()


def test_more_bad_arguments(db, refused) -> None:  # type: ignore[no-untyped-def]
    with refused(db, rewinddb.InvalidInputError, "invalid.key"):
        db.state.set([], 1)  # type: ignore[arg-type]
    with refused(db, rewinddb.RewindError, "invalid.output"):
        db.export_jsonl(object())  # type: ignore[arg-type]
    for flag in ("yes", 1, None):
        with refused(db, rewinddb.InvalidInputError, "invalid.readable"):
            db.diff("default", "run", readable=flag)  # type: ignore[arg-type]
        with refused(db, rewinddb.InvalidInputError, "invalid.readable"):
            db.key_history("kv", "k", readable=flag)  # type: ignore[arg-type]
        with refused(db, rewinddb.InvalidInputError, "invalid.events"):
            db.diff("default", "run", events=flag)  # type: ignore[arg-type]
    deep_path = "$" + ".a" * 100
    with refused(db, rewinddb.InvalidValueError, "invalid.value"):
        db.json.set("doc", deep_path, [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]])


class _Text(str):
    pass


class _Number(int):
    pass


class _Mapping(dict):  # type: ignore[type-arg]
    pass


_EDGE_VALUES: list[object] = [
    _Text("a str subclass"),
    {"k": _Number(3), "n": [_Number(2**64)]},
    _Mapping({"a": [1, 2.5, None, True]}),
    _Mapping({1: "non-string key in a dict subclass"}),
    (1, "tuple", (2.0,)),
    {"a": [float("nan")]},
    {"a": {"b": b"bytes"}},
    [2**63 - 1, -(2**63)],
    [2**63],
    [-(2**63) - 1],
    {"set": {1}},
    [["k", "text"], ["j", None], ["i", True]],  # pairs of leaves
    [["k", 1], ["j", 2**63]],  # a pair holding a number too large
    [["k", float("inf")]],
    [["k", "v"], [_Text("a subclass in a pair")]],
    [["k", "v"], ["j", {"inner": 1}]],
    {"a": 1, "b": 2.5, "c": float("nan")},
    {"a": 1, "b": -(2**63) - 1},
    {"a": 1, "b": _Number(1)},
]


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        *_EDGE_VALUES,
        *(_nested(n, leaf) for n in (127, 128, 129) for leaf in ("s", 1, [], {}, [1])),
        *(_nested(n, [["k", "v"], ["j", None]]) for n in (125, 126, 127, 128)),
        *({"a": _nested(n, None)} for n in (126, 127, 128)),
    ],
)
def test_the_fast_check_of_values_agrees_with_the_explained_one(value: object) -> None:
    from rewinddb import _values

    for depth in (0, 1, 3):
        try:
            _values._explain(value, depth)
            explained = True
        except rewinddb.InvalidValueError:
            explained = False
        assert _values._is_json_value(value, depth) is explained


@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**65), max_value=2**65)
        | st.floats()
        | st.text(max_size=3)
        | st.binary(max_size=2),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=2) | st.integers(0, 3), children, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_the_fast_check_agrees_on_generated_values(value: object) -> None:
    from rewinddb import _values

    try:
        _values._explain(value, 0)
        explained = True
    except rewinddb.InvalidValueError:
        explained = False
    assert _values._is_json_value(value, 0) is explained
