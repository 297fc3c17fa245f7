"""With an encrypting serde (LangGraph's ``EncryptedSerializer``), or any serde but the
stock one, nothing a graph writes into its state is stored outside the serde's output:
not a dict's keys or values, not a list's items, not a text, a number, a ``Send``'s
payload, an interrupt's value, a resume value or an ``update_state``'s values, in channel
values or in pending writes. Real graphs (dict, list, text and number channels, a Send
fan-out, an interrupt, a subgraph, update_state, a fork from an older checkpoint) on a
real SQLite file (every file of its directory, read while open and after close) and on
PostgreSQL (every row of its schema); and everything reads back as LangGraph's
InMemorySaver gives it back, with and without encryption. Every channel value goes
through such a serde whole, so not even how many items a list holds is stored; lists
stored item by item before (each item through the serde) still load."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from langgraph.types import Command, Interrupt, Send, interrupt
from leaks import hits_in_files, hits_in_rows
from typing_extensions import TypedDict

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver
from rewinddb.integrations.langgraph._codec import Encoder, dump_record
from rewinddb.testing import PostgresServer

KEY = b"0123456789abcdef"

# What the user writes: every one of these is user data.
INPUT_KEY = "mark-input-key-7f3a9c"
INPUT_VALUE = "mark-input-value-2b8e1d"
NOTE_KEY = "mark-note-key-5c1f0e"
NOTE_VALUE = "mark-note-value-9d4a7b"
ITEM = "mark-list-item-3e6b2a"
TEXT = "mark-text-value-8a0c4f"
NUMBER = 7391827364519  # as JSON would keep it: its digits
SEND = "mark-send-payload-1d7e3b"
WORKER = "mark-worker-item-6f2c8a"
QUESTION = "mark-interrupt-question-4b9d0e"
#: A resume value (and what the node then writes) as big as a dict of notes gets: the
#: saver keeps such a pending write as a channel value, beside its event.
RESUME = {f"mark-resume-key-{i:02}-a1b2": f"mark-resume-value-{i:02}-c3d4" for i in range(20)}
SUB_KEY = "mark-subgraph-key-0e5a9f"
SUB_TEXT = "mark-subgraph-text-7c3b1d"
UPDATE_KEY = "mark-update-key-2f8d6a"
UPDATE_VALUE = "mark-update-value-5a1e9c"
UPDATE_ITEM = "mark-update-item-9b4c2e"
FORK_KEY = "mark-fork-key-4d0f7b"
FORK_TEXT = "mark-fork-text-1a6e3c"

MARKERS = [
    INPUT_KEY,
    INPUT_VALUE,
    NOTE_KEY,
    NOTE_VALUE,
    ITEM,
    TEXT,
    str(NUMBER),
    SEND,
    WORKER,
    QUESTION,
    *RESUME,
    *RESUME.values(),
    SUB_KEY,
    SUB_TEXT,
    UPDATE_KEY,
    UPDATE_VALUE,
    UPDATE_ITEM,
    FORK_KEY,
    FORK_TEXT,
]


def merge(left: dict, right: dict) -> dict:
    return {**left, **right}


class State(TypedDict, total=False):
    notes: Annotated[dict, merge]
    items: Annotated[list, operator.add]
    text: str
    count: int


def write(state: State) -> dict:
    notes = {NOTE_KEY: NOTE_VALUE, "number": NUMBER, "nested": {NOTE_KEY: [NOTE_VALUE]}}
    return {"notes": notes, "items": [ITEM, {"item": ITEM}], "text": TEXT, "count": NUMBER}


def fan_out(state: State) -> list[Send]:
    return [Send("worker", {"job": f"{SEND}-{n}"}) for n in range(2)]


def worker(job: dict) -> dict:
    return {"items": [f"{WORKER} for {job['job']}"]}


def ask(state: State) -> dict:
    answer = interrupt({"question": QUESTION})
    return {"notes": answer}


def inner(state: State) -> dict:
    return {"notes": {SUB_KEY: len(state["items"])}, "text": SUB_TEXT}


def build(saver: BaseCheckpointSaver) -> Any:
    sub = StateGraph(State)
    sub.add_node("inner", inner)
    sub.add_edge(START, "inner")
    builder = StateGraph(State)
    builder.add_node("write", write)
    builder.add_node("worker", worker)
    builder.add_node("ask", ask)
    builder.add_node("sub", sub.compile())
    builder.add_edge(START, "write")
    builder.add_conditional_edges("write", fan_out, ["worker"])
    builder.add_edge("worker", "ask")
    builder.add_edge("ask", "sub")
    return builder.compile(checkpointer=saver)


CONFIG: Any = {"configurable": {"thread_id": "t"}}


def run(saver: BaseCheckpointSaver) -> None:
    """The same story on any saver: a run up to its interrupt, the resume, an
    update_state, and a fork from the checkpoint before the fan-out, run to its end."""
    graph = build(saver)
    graph.invoke({"notes": {INPUT_KEY: INPUT_VALUE}, "items": [], "text": ""}, CONFIG)
    assert graph.get_state(CONFIG).interrupts[0].value == {"question": QUESTION}
    graph.invoke(Command(resume=RESUME), CONFIG)
    graph.update_state(CONFIG, {"notes": {UPDATE_KEY: UPDATE_VALUE}, "items": [UPDATE_ITEM]})
    past = next(s for s in graph.get_state_history(CONFIG) if s.next == ("worker", "worker"))
    forked = graph.update_state(past.config, {"notes": {FORK_KEY: 1}, "text": FORK_TEXT})
    graph.invoke(None, forked)
    graph.invoke(Command(resume={FORK_KEY: "resumed"}), CONFIG)


def shown(value: Any) -> Any:
    """``value`` with what differs between two runs of the same story left out (the ids
    LangGraph makes from checkpoint ids and times), so that two savers compare."""
    if isinstance(value, Interrupt):
        return ("Interrupt", shown(value.value))
    if isinstance(value, Send):
        return ("Send", value.node, shown(value.arg))
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items() if k not in _IDS}
    if isinstance(value, (list, tuple)):
        return [shown(v) for v in value]
    return value


#: Metadata and config fields that name checkpoints or tasks (different in every run).
_IDS = frozenset({"parents", "checkpoint_id", "checkpoint_ns", "thread_id", "run_id"})


def story(saver: BaseCheckpointSaver) -> dict[str, Any]:
    """Everything the saver gives back about the thread: its state, its history (values,
    next nodes, tasks with their interrupts and results, metadata), and every checkpoint
    tuple of every namespace (channel values and pending writes), newest first."""
    graph = build(saver)
    state = graph.get_state(CONFIG)
    history = [
        (
            shown(s.values),
            s.next,
            [(t.name, t.path[:1], shown(t.interrupts), shown(t.result)) for t in s.tasks],
            shown(s.metadata),
        )
        for s in graph.get_state_history(CONFIG)
    ]
    tuples = sorted(
        repr(
            (
                str(t.config["configurable"]["checkpoint_ns"]).partition(":")[0],
                sorted(shown(t.checkpoint["channel_values"]).items()),  # in any order
                sorted(repr((channel, shown(value))) for _, channel, value in t.pending_writes),
                shown(t.metadata),
            )
        )
        for t in saver.list(CONFIG)
    )
    return {"state": (shown(state.values), state.next), "history": history, "tuples": tuples}


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    """What LangGraph's own in-memory saver gives back for the story."""
    saver = InMemorySaver()
    run(saver)
    return story(saver)


def encrypted() -> EncryptedSerializer:
    return EncryptedSerializer.from_pycryptodome_aes(key=KEY)


class Reversing(JsonPlusSerializer):
    """A serializer of the user's own (here: the stock one's bytes, reversed). The saver
    cannot know what a subclass does with what it is given, so it gives it everything."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = super().dumps_typed(obj)
        return f"reversed-{kind}", data[::-1]

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return super().loads_typed((data[0].removeprefix("reversed-"), data[1][::-1]))


#: The serializers that must see every byte the user wrote.
OPAQUE = {"encrypted": encrypted, "subclass": Reversing}


def leaked(directory: Path) -> list[str]:
    return [hit for marker in MARKERS for hit in hits_in_files(directory, marker)]


def stored(db: rewinddb.Database, records: bool = False) -> list[Any]:
    """Every stored version of every channel value and kept write on the saver's
    branches, and of each trigger channel's value in the checkpoint records (with
    ``records``: every version of the checkpoint records instead)."""
    found: list[Any] = []
    for branch in db.branches.names():
        if not branch.startswith("lg/"):
            continue
        kv = db.at(branch).kv
        for key in kv.keys(prefix=None):
            for entry in kv.history(key):
                if entry.value is None:
                    continue
                if key == "checkpoint":
                    triggers = entry.value.get("triggers", {}).values()
                    found += [entry.value] if records else [v for v in triggers if v is not None]
                elif key.startswith(("channel/", "write/")) and not records:
                    found.append(entry.value)
    return found


#: A checkpoint record with another serde: what the saver orders checkpoints by, the
#: trigger channels' names, and the rest (bookkeeping, metadata, the triggers' values)
#: sealed, one output of the serde.
SEALED_RECORD = {"id", "parent", "ts", "source", "step", "sealed", "triggers"}


def sealed(record: dict) -> bool:
    return record.keys() == SEALED_RECORD and set(record["triggers"].values()) <= {None}


def whole(value: Any) -> bool:
    """A channel value stored as one output of the serde (no items, no pairs)."""
    return value.keys() == {"version", "type", "value"} and value["type"] == "value"


def test_the_story_is_what_the_test_expects(expected: dict[str, Any]) -> None:
    history = expected["history"]
    assert len(expected["tuples"]) > len(history)  # the subgraph's checkpoints too
    assert sum(s[1] == ("worker", "worker") for s in history) == 2  # the fan-out, and its fork
    assert any(t[2] for s in history for t in s[2])  # an interrupt
    assert [s[3]["source"] for s in history].count("update") == 2  # update_state, the fork
    values = expected["state"][0]  # the fork's, run to its end
    assert values["text"] == SUB_TEXT and values["notes"][FORK_KEY] == "resumed"
    notes = [s[0]["notes"] for s in history if "notes" in s[0]]
    assert any(UPDATE_KEY in n for n in notes) and any(RESUME.items() <= n.items() for n in notes)


@pytest.mark.parametrize("serde", list(OPAQUE))
def test_an_encrypting_serde_leaves_no_user_data_in_any_file(
    tmp_path: Path, expected: dict[str, Any], serde: str
) -> None:
    path = tmp_path / "agent"
    with rewinddb.open(path) as db:
        saver = RewindSaver(db, serde=OPAQUE[serde]())
        run(saver)
        assert story(saver) == expected
        assert {p.suffix for p in path.iterdir()} == {".sqlite3", ".sqlite3-wal", ".sqlite3-shm"}
        assert leaked(path) == []  # the database, its WAL and its shm, while open
        values = stored(db)  # and not how many items a list holds
        assert len(values) > 10 and all(map(whole, values))
        records = stored(db, records=True)
        assert len(records) > 10 and all(map(sealed, records))
    assert leaked(path) == []  # and after close
    with rewinddb.open(path) as db:  # read from the file, by a saver that remembers nothing
        assert story(RewindSaver(db, serde=OPAQUE[serde]())) == expected


class ItemByItem(Encoder):
    """What the saver's encoder stored before lists went whole through another serde:
    a list item by item, each item through the serde (how many it held in the clear)."""

    def channel(self, value: Any, version: Any) -> dict:
        if isinstance(value, list) and not self.stock:
            return {"version": version, "type": "list", "items": [self.item(v) for v in value]}
        return super().channel(value, version)


class Before(RewindSaver):
    """The saver as it was before records were sealed and lists went whole: a record's
    bookkeeping, metadata and each trigger's value through the serde one by one, lists
    item by item."""

    def __init__(self, db: rewinddb.Database, *, serde: Any) -> None:
        super().__init__(db, serde=serde)
        self._encoder = ItemByItem(serde)

    def _record(self, rest: dict, metadata: dict, triggers: dict, versions: Any) -> dict:
        return {
            "checkpoint": dump_record(self.serde, rest),
            "metadata": dump_record(self.serde, metadata),
            "triggers": {c: self._encoder.channel(v, versions[c]) for c, v in triggers.items()},
        }


@pytest.mark.parametrize("serde", list(OPAQUE))
def test_records_and_lists_stored_before_still_load(
    tmp_path: Path, expected: dict[str, Any], serde: str
) -> None:
    path = tmp_path / "agent"
    with rewinddb.open(path) as db:
        run(Before(db, serde=OPAQUE[serde]()))
        values = stored(db)
        old = [value for value in values if not whole(value)]
        assert old and all(value["type"] == "list" for value in old)
        records = stored(db, records=True)
        assert records and all({"checkpoint", "metadata"} <= set(r) for r in records)
        assert not any(map(sealed, records))
    assert leaked(path) == []
    with rewinddb.open(path) as db:
        saver = RewindSaver(db, serde=OPAQUE[serde]())
        assert story(saver) == expected
        # The thread runs on: the old list is read, and written again whole.
        graph = build(saver)
        graph.update_state(CONFIG, {"items": [UPDATE_ITEM]})
        items = shown(graph.get_state(CONFIG).values["items"])
        assert items == [*expected["state"][0]["items"], UPDATE_ITEM]
        now = stored(db)
        assert len(now) > len(values) and [value for value in now if not whole(value)] == old
        assert sum(map(sealed, stored(db, records=True))) == 1  # the update's checkpoint
    assert leaked(path) == []


def test_without_encryption_the_same_story_round_trips(
    tmp_path: Path, expected: dict[str, Any]
) -> None:
    path = tmp_path / "agent"
    with rewinddb.open(path) as db:
        saver = RewindSaver(db)
        run(saver)
        assert story(saver) == expected
    with rewinddb.open(path) as db:
        assert story(RewindSaver(db)) == expected
    # The search finds what is there: the stock serde stores the state readably.
    found = [marker for marker in MARKERS if hits_in_files(path, marker)]
    assert found == MARKERS


def test_an_encrypting_serde_leaves_no_user_data_in_postgresql_rows(
    postgres: PostgresServer, postgres_url: str, expected: dict[str, Any]
) -> None:
    with rewinddb.open(postgres_url) as db:
        saver = RewindSaver(db, serde=encrypted())
        run(saver)
        assert story(saver) == expected
    assert [hit for marker in MARKERS for hit in hits_in_rows(postgres_url, marker)] == []
    with rewinddb.open(postgres_url) as db:
        assert story(RewindSaver(db, serde=encrypted())) == expected
    # The search finds what is there: the same story stored with the stock serde.
    plain = postgres.new_schema()
    with rewinddb.open(plain) as db:
        run(RewindSaver(db))
    assert [marker for marker in MARKERS if hits_in_rows(plain, marker)] == MARKERS
