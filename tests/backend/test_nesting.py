"""Nested ``db.atomic()`` and ``transaction()`` blocks, some failing, against a model.

Inner levels are savepoints, and a level that starts before any statement ran since the
newest savepoint shares it (``Connection.write``); whatever the nesting, a block that
raises must undo exactly its own writes, and every surviving write must land in the
version its outermost ``transaction()`` (or its own commit) gives it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewinddb


@dataclass(frozen=True)
class Put:
    key: str
    value: int


@dataclass(frozen=True)
class Block:
    kind: str  # "atomic" or "transaction"
    body: tuple[Node, ...]
    fails: bool  # raises at its end; the enclosing level catches it


Node = Put | Block


class Boom(Exception):
    pass


nodes = st.recursive(
    st.builds(Put, st.sampled_from("abc"), st.integers(0, 9)),
    lambda inner: st.builds(
        Block,
        st.sampled_from(("atomic", "transaction")),
        st.lists(inner, max_size=4).map(tuple),
        st.booleans(),
    ),
    max_leaves=12,
)


def run(view: rewinddb.BranchView, db: rewinddb.Database, node: Node) -> None:
    if isinstance(node, Put):
        view.kv.put(node.key, node.value)
        return
    try:
        with db.atomic() if node.kind == "atomic" else view.transaction():
            for child in node.body:
                run(view, db, child)
            if node.fails:
                raise Boom
    except Boom:
        pass


def model(state: dict[str, int], node: Node, commits: list[str], grouped: bool) -> None:
    """Apply ``node`` to ``state``; ``commits`` gets one mark per version written
    (``grouped``: inside a transaction, whose writes share its one version)."""
    if isinstance(node, Put):
        state[node.key] = node.value
        if not grouped:
            commits.append("put")
        return
    before, made = dict(state), len(commits)
    opens_group = node.kind == "transaction" and not grouped
    wrote: list[str] = []
    for child in node.body:
        model(state, child, wrote if opens_group else commits, grouped or opens_group)
    if node.fails:
        state.clear()
        state.update(before)
        del commits[made:]
    elif opens_group and (wrote or _writes(node)):
        commits.append("transaction")


def _writes(node: Node) -> bool:
    """Whether a block's surviving body writes anything (a failed inner block does not)."""
    if isinstance(node, Put):
        return True
    return not node.fails and any(_writes(child) for child in node.body)


_names = itertools.count()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=st.lists(nodes, min_size=1, max_size=4))
def test_nested_blocks_undo_exactly_what_they_wrote(
    db: rewinddb.Database, program: list[Node]
) -> None:
    branch = f"case-{next(_names)}"
    db.branches.fork("default", branch, at=0)
    view = db.at(branch)
    state: dict[str, int] = {}
    commits: list[str] = []
    for node in program:
        run(view, db, node)
        model(state, node, commits, grouped=False)
    assert view.kv.items() == state
    assert len(db.commits(branch)) == len(commits)


def test_the_model_counts_versions_as_the_store_does(db: rewinddb.Database) -> None:
    """The model itself, on a hand-written case (so a wrong model cannot pass quietly)."""
    program: list[Node] = [
        Put("a", 1),
        Block("transaction", (Put("a", 2), Block("atomic", (Put("b", 1),), True)), False),
        Block("atomic", (Block("transaction", (Put("c", 1),), False),), True),
        Block("transaction", (Block("atomic", (Put("b", 2),), True),), False),
    ]
    state: dict[str, int] = {}
    commits: list[str] = []
    for node in program:
        model(state, node, commits, grouped=False)
    assert state == {"a": 2} and commits == ["put", "transaction"]
    db.branches.fork("default", "hand", at=0)
    for node in program:
        run(db.at("hand"), db, node)
    assert db.at("hand").kv.items() == state and len(db.commits("hand")) == 2


@pytest.mark.parametrize("fails", [False, True])
def test_a_failed_level_after_a_shared_rollback_undoes_its_earlier_writes(
    db: rewinddb.Database, fails: bool
) -> None:
    """An inner block rolled back to a savepoint it shared leaves that savepoint fresh;
    a sibling then shares it too, and the enclosing block still undoes everything."""
    try:
        with db.atomic(), db.atomic():  # its own savepoint
            try:
                with db.atomic():  # shares it, and fails
                    db.kv.put("lost", 1)
                    raise Boom
            except Boom:
                pass
            db.kv.put("kept", 1)  # written after sharing: undone with the block
            if fails:
                raise Boom
    except Boom:
        pass
    assert db.kv.items() == ({} if fails else {"kept": 1})


def test_a_statement_run_at_a_level_ends_its_savepoint_being_shared(
    db: rewinddb.Database,
) -> None:
    """A level that runs a statement of its own, then opens an inner level that fails:
    the inner level must set its own savepoint, or its rollback would undo the outer
    level's statement too."""
    conn = db._engine.conn
    with db.atomic(), conn.write():
        conn.execute("INSERT INTO rewind_meta (key, value) VALUES ('probe', 'kept')")
        try:
            with conn.write():
                raise Boom
        except Boom:
            pass
    assert conn.fetchone("SELECT value FROM rewind_meta WHERE key = 'probe'") == ("kept",)
