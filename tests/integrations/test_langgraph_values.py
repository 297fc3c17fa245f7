"""Values round-trip exactly, whatever the saver remembers to go faster.

The saver remembers what it stored for messages it saw (keyed by their content) and how
to copy what it loaded; these tests change messages in place between
checkpoints, mutate what it returns, and use values it cannot remember.
"""

from __future__ import annotations

import datetime
import threading
from typing import Annotated, Any

from chat_graphs import Note, thread
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel, PlainSerializer, computed_field, field_serializer, model_serializer
from typing_extensions import TypedDict

import rewinddb
from rewinddb.integrations.langgraph import RewindSaver

TEXT = "lorem ipsum dolor sit amet " * 20


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _put(saver: RewindSaver, parent: dict, messages: list[Any], step: int, version: int) -> dict:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": messages}
    checkpoint["channel_versions"] = {"messages": version}
    return saver.put(parent, checkpoint, {"source": "loop", "step": step}, {"messages": version})  # type: ignore[return-value]


def _messages(saver: RewindSaver, config: dict) -> list[Any]:
    loaded = saver.get_tuple(config)  # type: ignore[arg-type]
    assert loaded is not None
    return loaded.checkpoint["channel_values"]["messages"]  # type: ignore[no-any-return]


def _dumped(messages: list[Any]) -> list[dict]:
    return [(type(m).__name__, m.model_dump()) for m in messages]  # type: ignore[misc]


def test_messages_changed_in_place_between_checkpoints(saver: RewindSaver) -> None:
    messages: list[Any] = [
        HumanMessage(content=f"{i}: {TEXT}", id=f"m{i}", additional_kwargs={"n": i})
        for i in range(5)
    ]
    expected = []
    config: dict = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    for version, change in enumerate(
        [
            lambda: None,
            lambda: messages.append(AIMessage(content="new", id="m5")),
            lambda: setattr(messages[1], "content", "edited in place"),
            lambda: messages[2].additional_kwargs.update(n=True),  # 2 -> True
            lambda: messages[3].additional_kwargs.__setitem__("n", 3.0),  # 3 -> 3.0
            lambda: messages[0].additional_kwargs.__setitem__("raw", b"bytes"),
            lambda: messages[0].additional_kwargs.__setitem__("raw", "bytes"),  # same text
            lambda: messages[4].additional_kwargs.__setitem__("when", datetime.date(2026, 1, 1)),
            lambda: messages.__setitem__(slice(1, 3), [messages[2], messages[1]]),  # swapped
            lambda: messages.pop(),
        ],
        start=1,
    ):
        change()
        config = _put(saver, config, messages, version, version)
        expected.append((config, _dumped(messages)))
    for config, dumped in expected:
        assert _dumped(_messages(saver, config)) == dumped
    # Exactly as the serde alone would give them back.
    serde = JsonPlusSerializer()
    for config, _ in expected[-3:]:
        loaded = _messages(saver, config)
        again = [serde.loads_typed(serde.dumps_typed(m)) for m in loaded]
        assert [(type(m), m.__getstate__()) for m in loaded] == [
            (type(m), m.__getstate__()) for m in again
        ]


def test_what_a_read_returns_is_its_own(saver: RewindSaver) -> None:
    config: dict = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    messages = [HumanMessage(content=f"{i}: {TEXT}", id=f"m{i}") for i in range(3)]
    call = {"name": "search", "args": {"query": "x", "tags": ["a"]}, "id": "c1"}
    reply = AIMessage(content="reply", id="r", tool_calls=[call])
    first = _put(saver, config, messages, 1, 1)
    second = _put(saver, first, [*messages, reply], 2, 2)
    for _ in range(2):  # the first read decodes with the serde, the second from memory
        read = _messages(saver, second)
        assert _dumped(read) == _dumped([*messages, reply])
        read[0].content = "mutated by the caller"
        read[0].additional_kwargs["x"] = 1
        read[3].tool_calls[0]["args"]["tags"].append("b")
        read[3].model_fields_set.discard("content")
    again = _messages(saver, second)
    assert _dumped(again) == _dumped([*messages, reply])
    serde = JsonPlusSerializer()
    assert again[3].model_fields_set == serde.loads_typed(serde.dumps_typed(reply)).model_fields_set
    listed = list(saver.list({"configurable": {"thread_id": "t"}}))
    listed[0].checkpoint["channel_values"]["messages"][1].content = "mutated"
    assert listed[1].checkpoint["channel_values"]["messages"][1].content == messages[1].content
    assert _messages(saver, first)[1].content == messages[1].content


class _Unpicklable:
    """A value the serde can store (as pickle) but the saver cannot copy."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lock = threading.Lock()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unpicklable) and other.text == self.text

    def __reduce__(self) -> Any:
        return (_Unpicklable, (self.text,))


def test_a_custom_serde_and_values_that_cannot_be_remembered(db: rewinddb.Database) -> None:
    class Serde(JsonPlusSerializer):
        pass

    saver = RewindSaver(db, serde=Serde(pickle_fallback=True))
    config: dict = {"configurable": {"thread_id": "c", "checkpoint_ns": ""}}
    messages: list[Any] = [HumanMessage(content=TEXT, id="a"), AIMessage(content=TEXT, id="b")]
    first = _put(saver, config, messages, 1, 1)
    messages[0].content = "changed"
    second = _put(saver, first, messages, 2, 2)
    assert _messages(saver, first)[0].content == TEXT
    assert _messages(saver, second)[0].content == "changed"


def _history_of_a_graph_that_edits_history_in_place(saver: Any) -> list[Any]:
    def reply(state: Chat) -> dict:
        state["messages"][0].content += " (seen)"  # discouraged, but it happens
        state["messages"][0].additional_kwargs.setdefault("seen", []).append(True)
        return {"messages": [AIMessage(content=f"{len(state['messages'])}: {TEXT}", id="r")]}

    builder = StateGraph(Chat)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "g"}}
    for turn in range(3):
        graph.invoke(
            {"messages": [HumanMessage(content=f"{turn}: {TEXT}", id=f"h{turn}")]},
            config,
            durability="sync",  # "async" races the node that edits against the put
        )
    return [
        (len(s.values.get("messages", [])), _dumped(s.values.get("messages", [])), s.next)
        for s in graph.get_state_history(config)
    ]


def test_a_graph_whose_node_edits_history_in_place(saver: RewindSaver) -> None:
    ours = _history_of_a_graph_that_edits_history_in_place(saver)
    reference = _history_of_a_graph_that_edits_history_in_place(InMemorySaver())
    assert ours == reference
    assert ours[0][1][0][1]["content"].endswith(" (seen) (seen) (seen)")


def test_listing_finds_every_checkpoints_writes(saver: RewindSaver) -> None:
    config: dict = {"configurable": {"thread_id": "w", "checkpoint_ns": ""}}
    configs = []
    for step in range(6):
        config = _put(saver, config, [HumanMessage(content=f"{step}", id=f"m{step}")], step, step)
        configs.append(config)
        saver.put_writes(config, [("messages", f"write {step}")], f"task{step}")
    saver.put_writes(configs[1], [("late", "after its children")], "late-task")
    fork = _put(saver, configs[2], [HumanMessage(content="fork", id="f")], 9, 9)  # time travel
    saver.put_writes(fork, [("messages", "on the fork")], "fork-task")
    saver.put_writes(configs[2], [("late", "after its fork")], "late-task")
    listed = {
        t.config["configurable"]["checkpoint_id"]: t
        for t in saver.list({"configurable": {"thread_id": "w"}})
    }
    assert len(listed) == 7
    for listed_tuple in listed.values():
        one = saver.get_tuple(listed_tuple.config)  # type: ignore[arg-type]
        assert one is not None and one.pending_writes == listed_tuple.pending_writes
    writes = {
        step: [w[2] for w in listed[c["configurable"]["checkpoint_id"]].pending_writes]
        for step, c in enumerate(configs)
    }
    assert writes == {
        0: ["write 0"],
        1: ["after its children", "write 1"],  # in task order: "late-task" first
        2: ["after its fork", "write 2"],
        3: ["write 3"],
        4: ["write 4"],
        5: ["write 5"],
    }
    assert [w[2] for w in listed[fork["configurable"]["checkpoint_id"]].pending_writes] == [
        "on the fork"
    ]


def test_messages_read_from_memory_are_what_the_serde_reads(saver: RewindSaver) -> None:
    """A checkpoint read again gives copies of what its first read gave, state and all
    (fields, extra and private attributes, which fields were set)."""
    config: dict = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    messages = [HumanMessage(content="hi", id="h"), AIMessage(content="yes", id="a")]
    put = _put(saver, config, messages, 1, 1)
    serde = JsonPlusSerializer()
    loaded = [serde.loads_typed(serde.dumps_typed(message)) for message in messages]
    for read in (_messages(saver, put), _messages(saver, put)):  # serde, then memory
        for got, want in zip(read, loaded, strict=True):
            assert type(got) is type(want)
            assert got.__getstate__() == want.__getstate__()


_LABEL = {"text": "first"}


class _Labelled(BaseModel):
    """A model whose model_dump() is not made of its state alone."""

    name: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def label(self) -> str:
        return _LABEL["text"]


class _Shouting(BaseModel):
    name: str

    @field_serializer("name")
    def _loud(self, name: str) -> str:
        return name.upper() + _LABEL["text"]


class _Framed(BaseModel):
    name: Annotated[str, PlainSerializer(lambda name: f"[{name}{_LABEL['text']}]")]


class _Whole(BaseModel):
    name: str

    @model_serializer
    def _whole(self) -> dict:
        return {"name": self.name + _LABEL["text"]}


def test_a_message_is_recognised_by_its_state_only_where_that_is_all_it_dumps() -> None:
    """Messages are recognised by their packed field values and extra attributes; a model
    with a computed field or a serializer (of a field, of the model, or in an annotation)
    by its model_dump()."""
    from rewinddb.integrations.langgraph import _codec

    serde = JsonPlusSerializer()
    encoder = _codec.Encoder(serde)
    message = AIMessage(content="hi", id="a", additional_kwargs={"n": 1})
    first = encoder.item(message)
    assert encoder.item(message) == first == _codec.dump_item(serde, message)
    message.custom = "an extra attribute"  # type: ignore[attr-defined]  (extra="allow")
    with_extra = encoder.item(message)
    assert with_extra != first and with_extra == _codec.dump_item(serde, message)
    for model in (_Labelled(name="x"), _Shouting(name="x"), _Framed(name="x"), _Whole(name="x")):
        _LABEL["text"] = "first"
        before = encoder.item(model)
        _LABEL["text"] = "second"  # the same state, another model_dump()
        after = encoder.item(model)
        assert after != before and after == _codec.dump_item(serde, model)
    assert encoder._how(AIMessage)[0] == _codec._FIELDS
    for kind in (_Labelled, _Shouting, _Framed, _Whole):
        assert encoder._how(kind)[0] == _codec._MODEL_DUMP


def test_a_copy_of_the_saver_with_an_allowlist_decodes_what_it_allows(
    db: rewinddb.Database,
) -> None:
    """LangGraph's strict msgpack mode compiles a graph with ``saver.with_allowlist``
    (a shallow copy given a new serde): the copy must decode with that serde."""
    strict = RewindSaver(db, serde=JsonPlusSerializer(allowed_msgpack_modules=None))
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"note": Note("hi")}
    checkpoint["channel_versions"] = {"note": "1"}
    config = strict.put(thread("t"), checkpoint, {"step": 0}, {"note": "1"})

    def note(saver: RewindSaver) -> Any:
        loaded = saver.get_tuple(config)
        assert loaded is not None
        return loaded.checkpoint["channel_values"]["note"]

    assert not isinstance(note(strict), Note)  # not on the allowlist: not rebuilt
    allowed = strict.with_allowlist([("chat_graphs", "Note")])
    assert allowed is not strict and note(allowed) == Note("hi")
    assert not isinstance(note(strict), Note)  # the original keeps its own serde
    strict.serde = JsonPlusSerializer()  # setting the serde changes what it decodes with
    assert note(strict) == Note("hi")
