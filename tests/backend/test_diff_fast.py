"""The diff's fast path against a naive reference: random histories (forks, deletes,
shared lists and objects, bytes, nested JSON, several spaces in one commit) are written
to a real database and to a plain model that keeps every branch's full state after each
of its commits. ``db.diff`` between any two points must list exactly the changes that a
plain recursive comparison of the model's states at the two points gives, on the
connection that wrote the history (entries remembered) and after reopening (entries
read from storage)."""

from __future__ import annotations

import itertools
import math
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewinddb
from rewinddb import Change, jsonpath
from rewinddb.diff import _change

SPACES = ("json", "kv")  # the order a diff lists them
KEYS = ("a", "B", "k1", "ä")  # few: steps often meet on a key
ABSENT: Any = object()

# -- the naive reference ---------------------------------------------------------------


def _same(old: Any, new: Any) -> bool:
    """Equal as JSON (or bytes) values: ``1``, ``1.0`` and ``True`` differ, as do
    ``0.0`` and ``-0.0``."""
    if type(old) is not type(new):
        return False
    if isinstance(old, float):
        return old == new and math.copysign(1, old) == math.copysign(1, new)
    if isinstance(old, dict):
        return old.keys() == new.keys() and all(_same(old[k], new[k]) for k in old)
    if isinstance(old, list):
        return len(old) == len(new) and all(_same(x, y) for x, y in zip(old, new, strict=True))
    return bool(old == new)


def reference(
    space: str, key: str, old: Any, new: Any, tokens: tuple[Any, ...] = ()
) -> list[Change]:
    """The changes from ``old`` to ``new`` (``ABSENT``: no value): objects by member in
    sorted order, arrays by index, anything else as a whole."""
    path = jsonpath.format_path(tokens)
    if old is ABSENT and new is ABSENT:
        return []
    if old is ABSENT:
        return [Change(space, key, path, "added", None, new)]
    if new is ABSENT:
        return [Change(space, key, path, "removed", old, None)]
    if isinstance(old, dict) and isinstance(new, dict):
        changes: list[Change] = []
        for name in sorted(old.keys() | new.keys()):
            changes += reference(
                space, key, old.get(name, ABSENT), new.get(name, ABSENT), (*tokens, name)
            )
        return changes
    if isinstance(old, list) and isinstance(new, list):
        changes = []
        for index in range(max(len(old), len(new))):
            changes += reference(
                space,
                key,
                old[index] if index < len(old) else ABSENT,
                new[index] if index < len(new) else ABSENT,
                (*tokens, index),
            )
        return changes
    return [] if _same(old, new) else [Change(space, key, path, "changed", old, new)]


def canonical(value: Any) -> Any:
    """``value`` with every part's type beside it, objects' members sorted: equal
    exactly when the values are the same JSON (``Change.__eq__`` takes ``1 == 1.0 ==
    True``), whatever order a decoded object lists its members in."""
    if isinstance(value, dict):
        return ("object", sorted((name, canonical(item)) for name, item in value.items()))
    if isinstance(value, list):
        return ("array", [canonical(item) for item in value])
    return (type(value).__name__, repr(value))


def typed(changes: list[Change]) -> list[tuple[Any, ...]]:
    """The changes, their values ``canonical``."""
    return [
        (c.primitive, c.key, c.path, c.kind, canonical(c.old), canonical(c.new)) for c in changes
    ]


# -- random histories ---------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 1, 0.0, -0.0, 1.0, True, False, "", "1"]),
    st.text(st.characters(codec="utf-8"), max_size=6),
)
members = st.text(st.characters(codec="utf-8"), max_size=4) | st.sampled_from(
    ["a", "b", "a.b", "$", "[0]", "'", '"', "x y"]
)
nested = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(members, inner, max_size=4),
    max_leaves=12,
)
#: Items large enough that a list of a few dozen is stored as a shared array.
big_items = st.builds(
    lambda n, text: {"n": n, "text": text * 120}, st.integers(0, 50), st.sampled_from("xyz")
)


def grown(previous: Any, how: str, items: list[Any]) -> Any:
    """A list derived from ``previous`` (if it is one): the kinds of change shared
    arrays store cheaply (grown, shrunk from the end) and those they must not take for
    a prefix (an item replaced, reordered)."""
    base = (
        previous if isinstance(previous, list) else [{"n": i, "text": "w" * 120} for i in range(20)]
    )
    if how == "grow":
        return [*base, *items]
    if how == "shrink":
        return base[: max(0, len(base) - len(items) - 1)]
    if how == "edit" and base:
        return [*base[:-1], *items[:1]] if items else base[:-1]
    if how == "nested":
        return {"messages": [*base, *items], "meta": {"turn": len(base)}}
    return list(reversed(base))


def retyped(value: Any) -> Any:
    """``value`` with its numbers and booleans in another type that Python calls equal
    (``1`` -> ``1.0``, ``True`` -> ``1``, ``0.0`` -> ``-0.0``): ``==`` to the value, a
    different JSON value, which the diff must not take for the same."""
    if isinstance(value, dict):
        return {name: retyped(item) for name, item in value.items()}
    if isinstance(value, list):
        return [retyped(item) for item in value]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and abs(value) < 2**53:
        return float(value)
    if isinstance(value, float):
        return -value if value == 0 else value
    return value


#: Steps that write a large list or object derived from the key's value on the branch
#: (two keys only, so that lists grow from their own earlier versions).
list_steps = st.tuples(
    st.just("list"),
    st.integers(0, 3),
    st.integers(0, 1),
    st.sampled_from(["grow", "shrink", "edit", "nested", "reverse"]),
    st.lists(big_items, max_size=5),
)
object_steps = st.tuples(
    st.just("object"),
    st.integers(0, 3),
    st.integers(0, 1),
    st.integers(0, 3),
    st.lists(st.integers(0, 40), max_size=3),
)
#: One step of a history: (what, branch index, key index, value or how, items).
steps = st.one_of(
    list_steps,
    list_steps,
    object_steps,
    st.tuples(
        st.just("put"), st.integers(0, 3), st.integers(0, len(KEYS) - 1), nested, st.just([])
    ),
    st.tuples(
        st.just("bytes"),
        st.integers(0, 3),
        st.integers(0, len(KEYS) - 1),
        st.binary(max_size=8),
        st.just([]),
    ),
    st.tuples(
        st.just("retype"), st.integers(0, 3), st.integers(0, len(KEYS) - 1), st.none(), st.just([])
    ),
    st.tuples(
        st.just("delete"), st.integers(0, 3), st.integers(0, len(KEYS) - 1), st.none(), st.just([])
    ),
    st.tuples(
        st.just("doc"), st.integers(0, 3), st.integers(0, len(KEYS) - 1), nested, st.just([])
    ),
    st.tuples(
        st.just("both"), st.integers(0, 3), st.integers(0, len(KEYS) - 1), nested, st.just([])
    ),
    st.tuples(st.just("fork"), st.integers(0, 3), st.none(), st.none(), st.just([])),
)


class History:
    """A database and the model of it: each branch's (version, state) after each of its
    commits, where a state is ``{space: {key: value}}``."""

    def __init__(self, db: rewinddb.Database) -> None:
        self.db = db
        self.branches = ["default"]
        self.states: dict[str, list[tuple[int, dict[str, dict[str, Any]]]]] = {
            "default": [(db.version, {"json": {}, "kv": {}})]
        }
        self.points: list[tuple[str, int]] = [("default", db.version)]

    def state(self, branch: str, version: int) -> dict[str, dict[str, Any]]:
        return [state for at, state in self.states[branch] if at <= version][-1]

    def _commit(self, branch: str, space_values: dict[str, dict[str, Any]]) -> None:
        self.states[branch].append((self.db.version, space_values))
        self.points.append((branch, self.db.version))

    def apply(self, step: tuple[Any, ...]) -> None:
        what, which, key_index, value, items = step
        branch = self.branches[which % len(self.branches)]
        current = self.states[branch][-1][1]
        state = {space: dict(values) for space, values in current.items()}
        view = self.db.at(branch)
        if what == "fork":
            name = f"b{len(self.branches)}"
            self.db.branches.fork(branch, name)
            self.branches.append(name)
            self.states[name] = [(self.db.version, state)]
            self.points.append((name, self.db.version))
            return
        key = KEYS[key_index]
        if what == "delete":
            if view.kv.delete(key) is None:
                assert key not in state["kv"]
                return
            del state["kv"][key]
        elif what == "doc":
            view.json.set(key, "$", value)
            state["json"][key] = value
        elif what == "both":  # two spaces in one commit
            with view.transaction():
                view.kv.put(key, value)
                view.json.set(key, "$", [value])
            state["kv"][key], state["json"][key] = value, [value]
        else:
            if what == "retype":
                value = retyped(state["kv"].get(key))
            elif what == "list":
                value = grown(state["kv"].get(key), value, items)
            elif what == "object":  # enough members to be stored as a shared object
                value = {f"m{i:02d}": {"v": i, "text": "o" * 150} for i in range(16 + value)}
                for changed in items:
                    value[f"m{changed:02d}"] = {"v": -changed}
            view.kv.put(key, value)
            state["kv"][key] = value
        self._commit(branch, state)

    def steps(self) -> list[tuple[tuple[str, int], tuple[str, int]]]:
        """(the point before, the point after) each commit of each branch."""
        return [
            ((branch, before), (branch, after))
            for branch, states in self.states.items()
            for (before, _), (after, _) in itertools.pairwise(states)
        ]

    def expected(self, a: tuple[str, int], b: tuple[str, int]) -> list[Change]:
        state_a, state_b = self.state(*a), self.state(*b)
        changes: list[Change] = []
        for space in SPACES:
            for key in sorted(state_a[space].keys() | state_b[space].keys()):
                changes += reference(
                    space, key, state_a[space].get(key, ABSENT), state_b[space].get(key, ABSENT)
                )
        return changes


def diffed(db: rewinddb.Database, a: tuple[str, int], b: tuple[str, int]) -> list[Change]:
    return db.diff(a[0], b[0], as_of_a=a[1], as_of_b=b[1], events=False).changes


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(history=st.lists(steps, min_size=1, max_size=14), data=st.data())
def test_diffs_of_random_histories_match_the_reference(
    history: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    directory = Path(tempfile.mkdtemp(prefix="rewind-diff-"))
    try:
        with rewinddb.open(directory) as db:
            model = History(db)
            for step in history:
                model.apply(step)
            points = model.points
            pairs = data.draw(
                st.lists(
                    st.tuples(st.sampled_from(points), st.sampled_from(points)),
                    min_size=1,
                    max_size=6,
                )
            )
            pairs.append((points[0], points[-1]))
            pairs += model.steps()  # each commit against the one before it
            for a, b in pairs:
                expected = model.expected(a, b)
                assert typed(diffed(db, a, b)) == typed(expected), (a, b)
        with rewinddb.open(directory) as db:  # nothing remembered: read from storage
            for a, b in pairs:
                assert typed(diffed(db, a, b)) == typed(model.expected(a, b)), (a, b)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# -- plain cases ---------------------------------------------------------------------

BIG = [{"n": i, "text": "w" * 120} for i in range(20)]


@pytest.mark.parametrize(
    "history",
    [
        pytest.param(
            [("list", 0, 0, "grow", [{"n": 1, "text": "x" * 120}])] * 2
            + [("list", 0, 0, "shrink", [])],
            id="a shared list grown and shrunk: one body, other refs",
        ),
        pytest.param(
            [("put", 0, 0, {"x": [1, True, 0.0], "y": {"z": [2]}}, []), ("retype", 0, 0, None, [])],
            id="numbers retyped inside containers",
        ),
        pytest.param(
            [("object", 0, 1, 0, []), ("fork", 0, None, None, []), ("object", 1, 1, 1, [3])],
            id="a shared object on a fork",
        ),
        pytest.param(
            [("bytes", 0, 0, b"\x00", []), ("put", 0, 0, [0], []), ("bytes", 0, 0, b"", [])],
            id="bytes and JSON in turn",
        ),
    ],
)
def test_histories_a_random_search_rarely_builds(
    history: list[tuple[Any, ...]], tmp_path: Path
) -> None:
    """Each commit against the one before it, on cases a random search finds rarely."""
    with rewinddb.open(tmp_path / "db") as db:
        model = History(db)
        for step in history:
            model.apply(step)
        for a, b in [*model.steps(), (model.points[0], model.points[-1])]:
            assert typed(diffed(db, a, b)) == typed(model.expected(a, b)), (a, b)
            assert typed(diffed(db, b, a)) == typed(model.expected(b, a)), (b, a)


def test_a_change_built_fast_is_the_same_record() -> None:
    """``_change`` fills a ``Change``'s fields without its ``__init__``: the record must
    be the very one ``Change(...)`` builds (fields, equality, hash, repr)."""
    fast = _change("kv", "k", "$.a", "changed", [1], b"x")
    slow = Change("kv", "k", "$.a", "changed", [1], b"x")
    assert vars(fast) == vars(slow)
    assert fast == slow and repr(fast) == repr(slow)
    hashable = _change("kv", "k", "$", "added", None, 1)
    assert hash(hashable) == hash(Change("kv", "k", "$", "added", None, 1))
    with pytest.raises(AttributeError):
        fast.kind = "added"  # still frozen


def test_keys_of_several_spaces_in_one_range(db: rewinddb.Database) -> None:
    """A commit that wrote kv, json and state keys: each space's changes, in order."""
    db.branches.fork("default", "run")
    run = db.at("run")
    with run.transaction():
        run.kv.put("k", 1)
        run.json.set("d", "$", {"a": 1})
        run.kv.put("j", 2)
    assert [(c.primitive, c.key) for c in db.diff("default", "run", events=False)] == [
        ("json", "d"),
        ("kv", "j"),
        ("kv", "k"),
    ]


def test_values_equal_but_stored_apart_are_no_change(db: rewinddb.Database) -> None:
    """The same list written on two branches is stored as two arrays (different stored
    forms): decoded, they are equal, so the diff has no change for it."""
    items = [{"n": i, "text": "x" * 200} for i in range(30)]
    db.branches.fork("default", "run")
    db.kv.put("messages", items)
    db.at("run").kv.put("messages", list(items))
    db.kv.put("other", 1)
    assert [(c.key, c.kind) for c in db.diff("default", "run", events=False)] == [
        ("other", "removed")
    ]


@pytest.mark.parametrize("column", ["key", "space"])
def test_a_name_stored_as_a_blob_is_damage(tmp_path: Path, column: str) -> None:
    """Another program stored a key (or space) as a BLOB: the diff says the file is
    damaged and names the column, rather than fail with SQLite's JSON error."""
    path = tmp_path / "db"
    with rewinddb.open(path) as db:
        db.kv.put_many({"a": 1, "b": 2})
        db.branches.fork("default", "run")
        db.at("run").kv.put_many({"a": 10, "b": 20})
    raw = sqlite3.connect(path / "rewind.sqlite3")
    with raw:
        raw.execute(
            f"UPDATE rewind_entries SET {column} = CAST({column} AS BLOB) "
            "WHERE key = 'a' AND branch_id != 1"
        )
    raw.close()
    with rewinddb.open(path) as db, pytest.raises(rewinddb.CorruptDatabaseError) as raised:
        db.diff("default", "run")
    assert raised.value.code == "corrupt.entries"
    assert f"rewind_entries.{column}" in str(raised.value)


def test_a_step_whose_keys_exceed_sqlites_longest_string_is_read_row_by_row(
    tmp_path: Path,
) -> None:
    """The changed keys of a lineage step come back as one JSON text; a step that wrote
    more key text than SQLite's longest string (1e9 bytes by default, lowered here) is
    read a row per key instead, with the same answer."""
    with rewinddb.open(tmp_path / "db") as db:
        db.branches.fork("default", "run")
        keys = {f"{i:04d}" + "\x01" * 1020: i for i in range(40)}  # \u0001: 6 bytes each
        db.at("run").kv.put_many(keys)
        expected = sorted(c.key for c in db.diff("default", "run"))
        db._engine.conn._raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 200_000)
        assert sorted(c.key for c in db.diff("default", "run")) == expected == sorted(keys)


def test_long_member_names_are_not_remembered() -> None:
    from rewinddb import diff

    long_name = "m" * 1000
    changes = diff.diff_values("kv", "k", {long_name: 1, "short": 1}, {long_name: 2, "short": 2})
    assert {c.path for c in changes} == {f"$.{long_name}", "$.short"}
    assert long_name not in diff._STEPS and "short" in diff._STEPS
