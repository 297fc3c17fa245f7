"""A list channel's diff aligns the old list with the new one, so a change reads as what
happened to the list: one message removed early in a long thread is one removed row (not
every later message changed, as a comparison by place reads it), a message inserted is
one added row, an edit by id is the one field it changed, and a list of texts that
grew reads as the texts it gained. The stored diff is all there still (hidden rows)."""

from __future__ import annotations

import operator
from difflib import SequenceMatcher
from itertools import pairwise
from typing import Annotated, Any

import pytest
from chat_graphs import thread
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph, add_messages
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from typing_extensions import TypedDict

import rewinddb
from rewinddb import story
from rewinddb.integrations.langgraph import RewindSaver

#: Messages in the long thread.
LONG = 120


class Chat(TypedDict):
    messages: Annotated[list, add_messages]


def _long_thread(
    db: rewinddb.Database, node: Any, thread_id: str, saver: RewindSaver | None = None
) -> Any:
    """A graph whose node ``node`` runs on a thread of ``LONG`` messages (ids m0, m1, ...)."""
    builder = StateGraph(Chat).add_node("edit", node).add_edge(START, "edit")
    graph = builder.compile(checkpointer=saver or RewindSaver(db))
    graph.update_state(thread(thread_id), {"messages": _messages(LONG)})
    return graph


def _messages(count: int) -> list[Any]:
    return [
        HumanMessage(f"question {i}", id=f"m{i}")
        if i % 2 == 0
        else AIMessage(f"answer {i}", id=f"m{i}")
        for i in range(count)
    ]


def _last(db: rewinddb.Database, branch: str, **match: Any) -> story.StepDetail:
    steps = story.branch_story(db, branch).steps.steps
    found = [s for s in steps if all(getattr(s, k) == v for k, v in match.items())]
    return story.step_detail(db, branch, max(found, key=lambda s: s.version).version)


def _rows(detail: story.StepDetail) -> list[tuple[str, str, Any, Any]]:
    return [(r.path, r.kind, r.old, r.new) for r in detail.visible]


def _content(value: Any) -> Any:
    return value.get("content") if isinstance(value, dict) else value


def _keeps_the_stored_diff(db: rewinddb.Database, branch: str, detail: story.StepDetail) -> None:
    previous = detail.previous
    assert previous is not None
    stored = db.diff(
        previous.branch,
        branch,
        as_of_a=previous.version,
        as_of_b=detail.step.version,
        readable=True,
    )
    assert {(c.key, c.path) for c in stored.changes} <= {
        (r.change.key, r.change.path) for r in detail.rows
    }


def test_a_message_removed_early_in_a_long_thread_is_one_removed_row(
    db: rewinddb.Database,
) -> None:
    """``RemoveMessage`` of the fourth message of 120: one row, ``messages[3]`` removed,
    with the message it was; LangGraph's state has lost it and kept the rest."""
    graph = _long_thread(db, lambda s: {"messages": [RemoveMessage(id="m3")]}, "r")
    graph.invoke(None, thread("r"))
    now = graph.get_state(thread("r")).values["messages"]
    assert len(now) == LONG - 1 and "m3" not in {m.id for m in now}
    detail = _last(db, "lg/r", label="edit")
    ((path, kind, old, new),) = _rows(detail)
    assert (path, kind, _content(old), new) == ("messages[3]", "removed", "answer 3", None)
    assert old["id"] == "m3"
    _keeps_the_stored_diff(db, "lg/r", detail)


class _OwnSerde(JsonPlusSerializer):
    """Not the stock serializer: the saver stores each channel value whole."""


def test_a_list_stored_whole_aligns_its_items(db: rewinddb.Database) -> None:
    """With a serde of the user's own the messages are one stored value, decoded whole:
    the removal is still the one removed row."""
    saver = RewindSaver(db, serde=_OwnSerde())
    graph = _long_thread(db, lambda s: {"messages": [RemoveMessage(id="m3")]}, "w", saver)
    graph.invoke(None, thread("w"))
    stored = db.at("lg/w").kv.get("channel/messages")
    assert stored["type"] == "value"
    detail = _last(db, "lg/w", label="edit")
    ((path, kind, old, new),) = _rows(detail)
    assert (path, kind, _content(old), new) == ("messages[3]", "removed", "answer 3", None)
    _keeps_the_stored_diff(db, "lg/w", detail)


def test_a_removal_by_update_state_adds_no_message_to_the_step(db: rewinddb.Database) -> None:
    """The same removal made by ``update_state``: one removed row, and the step tells no
    message added or changed (it told every message after the removed one)."""
    graph = _long_thread(db, lambda s: {}, "u")
    graph.update_state(thread("u"), {"messages": [RemoveMessage(id="m1")]})
    detail = _last(db, "lg/u", source="update")
    assert [(p, k, _content(o)) for p, k, o, _ in _rows(detail)] == [
        ("messages[1]", "removed", "answer 1")
    ]
    assert detail.step.messages == ()


def test_a_message_inserted_is_one_added_row(db: rewinddb.Database) -> None:
    """The node rewrites the list (``REMOVE_ALL_MESSAGES``, then the list with a message
    inserted after the third): one row, ``messages[3]`` added."""

    def insert(state: Chat) -> dict:
        kept = list(state["messages"])
        return {
            "messages": [
                RemoveMessage(id=REMOVE_ALL_MESSAGES),
                *kept[:3],
                HumanMessage("inserted", id="new"),
                *kept[3:],
            ]
        }

    graph = _long_thread(db, insert, "i")
    graph.invoke(None, thread("i"))
    now = graph.get_state(thread("i")).values["messages"]
    assert [m.id for m in now[2:5]] == ["m2", "new", "m3"] and len(now) == LONG + 1
    detail = _last(db, "lg/i", label="edit")
    ((path, kind, old, new),) = _rows(detail)
    assert (path, kind, old, _content(new)) == ("messages[3]", "added", None, "inserted")
    _keeps_the_stored_diff(db, "lg/i", detail)


def test_an_edit_by_id_beside_a_removal_is_the_field_it_changed(db: rewinddb.Database) -> None:
    """One step removes m1 and rewrites m5's text (same id): m1 removed, and m5, now at
    index 4, changed in its content alone."""

    def edit(state: Chat) -> dict:
        return {"messages": [RemoveMessage(id="m1"), AIMessage("rewritten", id="m5")]}

    graph = _long_thread(db, edit, "e")
    graph.invoke(None, thread("e"))
    assert graph.get_state(thread("e")).values["messages"][4].content == "rewritten"
    detail = _last(db, "lg/e", label="edit")
    rows = _rows(detail)
    assert [(p, k) for p, k, _, _ in rows] == [
        ("messages[1]", "removed"),
        ("messages[4].content", "changed"),
    ]
    assert _content(rows[0][2]) == "answer 1"
    assert rows[1][2:] == ("answer 5", "rewritten")
    _keeps_the_stored_diff(db, "lg/e", detail)


def _said(old: list, new: list) -> list:
    """Messages as dicts without ids: ``{"drop": content}`` removes the one saying it."""
    dropped = {m["drop"] for m in new if "drop" in m}
    return [m for m in old + new if "drop" not in m and m.get("content") not in dropped]


class Texts(TypedDict, total=False):
    tags: Annotated[list[str], operator.add]
    window: Annotated[list[str], lambda old, new: (old + new)[-5:]]
    said: Annotated[list, _said]


def test_lists_of_texts_and_of_dicts_without_ids(db: rewinddb.Database) -> None:
    """Texts appended to a long list (stored plain) read as the texts added; a window
    that drops its first text as it gains one reads as one removed and one added; a
    list of dict messages without ids that loses one and gains one reads so."""

    def step(state: Texts) -> dict:
        said = [{"drop": "before 3"}, {"role": "user", "content": "s0"}]
        return {"tags": ["t0", "u0"], "window": ["w0"], "said": said}

    builder = StateGraph(Texts).add_node("n", step).add_edge(START, "n")
    graph = builder.compile(checkpointer=RewindSaver(db))
    tags = [f"old {i}" for i in range(2000)]
    said = [{"role": "user", "content": f"before {i}"} for i in range(10)]
    graph.invoke({"tags": tags, "window": ["a", "b", "c", "d", "e"], "said": said}, thread("t"))
    values = graph.get_state(thread("t")).values
    assert values["window"] == ["b", "c", "d", "e", "w0"] and len(values["said"]) == 10
    detail = _last(db, "lg/t", label="n")
    assert _rows(detail) == [
        ("said[3]", "removed", {"role": "user", "content": "before 3"}, None),
        ("said[9]", "added", None, {"role": "user", "content": "s0"}),
        ("tags[2000]", "added", None, "t0"),
        ("tags[2001]", "added", None, "u0"),
        ("window[0]", "removed", "a", None),
        ("window[4]", "added", None, "w0"),
    ]
    _keeps_the_stored_diff(db, "lg/t", detail)


def test_a_dict_channel_reads_as_before(db: rewinddb.Database) -> None:
    """A dict channel's members still read by key: one added, one changed, one gone."""

    class Notes(TypedDict, total=False):
        notes: Annotated[dict, lambda old, new: new]

    runs = iter([{"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 20, "d": 4}])
    builder = StateGraph(Notes).add_node("n", lambda s: {"notes": next(runs)})
    graph = builder.add_edge(START, "n").compile(checkpointer=RewindSaver(db))
    graph.invoke({}, thread("n"))
    graph.invoke({}, thread("n"))
    detail = _last(db, "lg/n", label="n")
    assert _rows(detail) == [
        ('notes["b"]', "changed", 2, 20),
        ('notes["d"]', "added", None, 4),
        ('notes["c"]', "removed", 3, None),
    ]
    _keeps_the_stored_diff(db, "lg/n", detail)


def _consistent(old: list[Any], new: list[Any], pairs: list[tuple[Any, Any]]) -> bool:
    """Whether ``pairs`` is an alignment of ``old`` to ``new``: each item in one pair at
    most, the items in none equal one to one, in order, and no pair crossing another."""
    olds = [i for i, _ in pairs if i is not None]
    news = [j for _, j in pairs if j is not None]
    if len(set(olds)) != len(olds) or len(set(news)) != len(news):
        return False
    kept_old = [old[i] for i in range(len(old)) if i not in set(olds)]
    kept_new = [new[j] for j in range(len(new)) if j not in set(news)]
    both = sorted((i, j) for i, j in pairs if i is not None and j is not None)
    ordered = all(a[1] < b[1] for a, b in pairwise(both))
    return kept_old == kept_new and ordered


def test_the_alignment_is_one_of_the_lists_however_they_differ() -> None:
    """Random edits of lists of few distinct texts (many repeats), and lists past the
    comparison budget: the pairs always align the old list to the new one."""
    from random import Random

    from rewinddb.integrations.langgraph.presenter import _item_pairs

    rng = Random(7)
    for _ in range(300):
        old = [rng.choice("abcd") for _ in range(rng.randrange(30))]
        new = list(old)
        for _ in range(rng.randrange(5)):
            at = rng.randrange(len(new) + 1)
            edit = rng.choice(("insert", "remove", "change"))
            if edit == "insert" or not new:
                new.insert(at, rng.choice("abcde"))
            elif edit == "remove":
                del new[min(at, len(new) - 1)]
            else:
                new[min(at, len(new) - 1)] = rng.choice("abcde")
        assert _consistent(old, new, _item_pairs(old, new, old, new)), (old, new)
    many = ["t"] * 3000
    changed = ["t", "u"] * 1500  # past the budget: compared by place
    pairs = _item_pairs(many, changed, many, changed)
    assert _consistent(many, changed, pairs)
    assert {j for _, j in pairs if j is not None and changed[j] == "u"} == set(range(1, 3000, 2))


class _CountingMatcher(SequenceMatcher):  # type: ignore[type-arg]
    """``SequenceMatcher`` that counts the items its passes read (each
    ``find_longest_match`` reads its range of the old list)."""

    read = 0

    def find_longest_match(
        self, alo: int = 0, ahi: Any = None, blo: int = 0, bhi: Any = None
    ) -> Any:
        ahi = len(self.a) if ahi is None else ahi
        _CountingMatcher.read += ahi - alo
        return super().find_longest_match(alo, ahi, blo, bhi)


@pytest.mark.parametrize(
    "reorder",
    [
        lambda items: [x for i in range(0, len(items), 2) for x in (items[i + 1], items[i])],
        lambda items: sorted(items, key=lambda item: (int(item[1:]) % 7, item)),
        lambda items: items[::-1],
    ],
    ids=["adjacent-swaps", "regrouped", "reversed"],
)
def test_aligning_a_long_reordered_list_takes_bounded_work(
    monkeypatch: pytest.MonkeyPatch, reorder: Any
) -> None:
    """A list of 8,000 items reordered throughout is aligned with work that grows with
    its length, not its square (adjacent pairs swapped read 16 million items, 7 s): cut
    at its anchors, the pieces past the budget compared by place."""
    from rewinddb.integrations.langgraph import presenter

    monkeypatch.setattr(presenter, "SequenceMatcher", _CountingMatcher)
    _CountingMatcher.read = 0
    old = [f"s{i}" for i in range(8000)]
    new = reorder(old)
    pairs = presenter._item_pairs(old, new, old, new)
    assert _consistent(old, new, pairs)
    assert _CountingMatcher.read < 200_000, _CountingMatcher.read
