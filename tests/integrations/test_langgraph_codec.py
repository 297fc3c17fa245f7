"""The codec gives back exactly what the serde would, as copies nobody else holds.

Property tests over every kind of LangChain message (and an application's own message
classes): what the ``Encoder`` stores is what the serde stores, even as a message changes
in place; what the ``Decoder`` gives back from memory equals the serde's own decoding
(type, content, tool calls, keyword arguments, metadata, id, extra and private
attributes, which fields were set) and shares no dict, list or set with any other decoding
of the same stored value.
"""

from __future__ import annotations

import ast
import datetime
import enum
import inspect
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel, PrivateAttr

from rewinddb.integrations.langgraph import _codec
from rewinddb.integrations.langgraph._codec import Decoder, Encoder, dump_item


class Colour(str, enum.Enum):
    RED = "red"


class Rated(AIMessage):
    """An application's message class with a field of its own."""

    rating: int = 0


class Tracked(HumanMessage):
    """One with a private attribute holding a list."""

    _seen: list[int] = PrivateAttr(default_factory=list)


class Inner(BaseModel):
    label: str
    tags: list[str] = []


class Nested(HumanMessage):
    """One with a field holding another model (not plain data: copied with pickle)."""

    inner: Inner


class Counted(BaseModel):
    """A model whose private attribute is set when it is validated."""

    name: str
    _log: list[str] = PrivateAttr(default_factory=list)

    def model_post_init(self, context: Any) -> None:
        self._log.append("validated")


SERDE = JsonPlusSerializer(
    allowed_msgpack_modules=[
        (__name__, cls.__name__) for cls in (Rated, Tracked, Nested, Inner, Counted)
    ]
)

#: How the Decoder remembers each class's messages.
REMEMBERED = {Nested: _codec._PICKLED}

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
json_dicts = st.dictionaries(st.text(max_size=6), json_values, max_size=3)
contents = st.text(max_size=40) | st.lists(
    st.text(max_size=10)
    | st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}),
    max_size=3,
)
ids = st.none() | st.text(min_size=1, max_size=8)
tool_calls = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.text(min_size=1, max_size=8),
            "args": json_dicts,
            "id": st.text(min_size=1, max_size=6),
        }
    ),
    max_size=2,
)
extras = st.dictionaries(st.sampled_from(["custom", "label", "score"]), json_values, max_size=2)


@st.composite
def messages(draw: st.DrawFn) -> Any:
    kind = draw(
        st.sampled_from(
            [
                *(HumanMessage, AIMessage, ToolMessage, SystemMessage, AIMessageChunk),
                *(RemoveMessage, Rated, Tracked, Nested),
            ]
        )
    )
    if kind is RemoveMessage:
        return RemoveMessage(id=draw(st.text(min_size=1, max_size=8)))
    kwargs: dict[str, Any] = {
        "content": draw(contents),
        "id": draw(ids),
        "additional_kwargs": draw(json_dicts),
        "response_metadata": draw(json_dicts),
        "name": draw(st.none() | st.text(max_size=6)),
        **draw(extras),
    }
    if kind in (AIMessage, Rated):
        kwargs["tool_calls"] = draw(tool_calls)
    if kind is Rated:
        kwargs["rating"] = draw(st.integers(-5, 5))
    if kind is ToolMessage:
        kwargs["tool_call_id"] = draw(st.text(min_size=1, max_size=6))
        kwargs["artifact"] = draw(json_values)
        kwargs["status"] = draw(st.sampled_from(["success", "error"]))
    if kind is Nested:
        kwargs["inner"] = Inner(
            label=draw(st.text(max_size=6)), tags=draw(st.lists(st.text(max_size=4), max_size=2))
        )
    message = kind(**kwargs)
    if kind is Tracked:
        message._seen.extend(draw(st.lists(st.integers(), max_size=2)))  # not stored by the serde
    return message


def _exactly(got: Any, want: Any) -> None:
    """``got`` is ``want``'s equal in every way the serde and pickle can tell."""
    assert type(got) is type(want)
    assert got == want
    assert SERDE.dumps_typed(got) == SERDE.dumps_typed(want)  # exact types: 1, 1.0, True differ
    assert got.model_fields_set == want.model_fields_set
    assert got.__getstate__() == want.__getstate__()  # fields, extra, private, fields set


def _containers(value: Any, found: dict[int, Any] | None = None) -> dict[int, Any]:
    """Every dict, list and set reachable from ``value`` (a model through its state)."""
    found = {} if found is None else found
    if isinstance(value, BaseModel):
        value = value.__getstate__()
    if type(value) in (dict, list, set):
        if id(value) in found:
            return found
        found[id(value)] = value
        items = value.values() if type(value) is dict else value
        for item in items:
            _containers(item, found)
    return found


def _mutate(value: Any) -> None:
    """Changes every dict, list and set reachable from ``value``, in place."""
    for container in list(_containers(value).values()):
        if type(container) is dict:
            container["__mutated__"] = True
        elif type(container) is list:
            container.append("mutated")
        else:
            container.add("mutated")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=messages())
def test_a_decoded_message_is_the_serdes_and_its_own(message: Any) -> None:
    stored = Encoder(SERDE).item(message)
    assert stored == dump_item(SERDE, message)
    want = SERDE.loads_typed(SERDE.dumps_typed(message))
    decoder = Decoder(SERDE)
    first, second, third = (decoder.item(stored) for _ in range(3))  # serde, memory, memory
    how, _ = decoder._remembered.get(stored)
    assert how == REMEMBERED.get(type(message), _codec._COPIED)
    for got in (first, second, third):
        _exactly(got, want)
    held = [_containers(got) for got in (first, second, third)]  # alive: ids stay unique
    assert not held[1].keys() & held[0].keys() and not held[1].keys() & held[2].keys()
    for mutated in (first, second):  # the serde's own result, and a copy from memory
        _mutate(mutated)
        mutated.content = "changed by the caller"
    for got in (third, decoder.item(stored)):
        _exactly(got, want)


@settings(max_examples=100, deadline=None)
@given(
    value=st.dictionaries(st.text(max_size=6), json_values, max_size=5)
    | st.lists(json_values, max_size=5)
)
def test_a_decoded_plain_value_is_the_serdes_and_its_own(value: Any) -> None:
    """Channel values that are plain data (a ``notes`` dict) are copied without pickle."""
    stored = dump_item(SERDE, value)
    want = SERDE.loads_typed(SERDE.dumps_typed(value))
    decoder = Decoder(SERDE)
    first, second = decoder.item(stored), decoder.item(stored)
    assert decoder._remembered.get(stored)[0] == _codec._PLAIN
    assert first == second == want and SERDE.dumps_typed(second) == SERDE.dumps_typed(want)
    assert not _containers(first).keys() & _containers(second).keys()
    _mutate(first)
    assert decoder.item(stored) == want


@settings(max_examples=100, deadline=None)
@given(message=messages(), key=st.text(max_size=4))
def test_what_is_stored_follows_a_message_changed_in_place(message: Any, key: str) -> None:
    """Values that compare equal, or that msgpack alone would pack alike, but that the serde
    stores apart are told apart (1, True, 1.0; a date, a UUID, an enum and their text)."""
    encoder = Encoder(SERDE)
    day, uid = datetime.date(2026, 1, 1), uuid.UUID(int=1)
    variants = (1, True, 1.0, "1", [1], {"1": 1}, None, day, day.isoformat(), uid, str(uid))
    for value in (*variants, Colour.RED, Colour.RED.value):
        message.additional_kwargs[key] = value
        assert encoder.item(message) == dump_item(SERDE, message)
        assert encoder.item(message) == dump_item(SERDE, message)  # remembered
    message.content = "edited"
    assert encoder.item(message) == dump_item(SERDE, message)


def test_a_private_attribute_is_copied_with_the_rest() -> None:
    decoder = Decoder(SERDE)
    stored = _codec.dump_typed(SERDE, Counted(name="x"))
    first, second = decoder.item(stored), decoder.item(stored)
    assert decoder._remembered.get(tuple(stored))[0] == _codec._COPIED
    first._log.append("mine")
    assert second._log == ["validated"] == decoder.item(stored)._log


class _KeepsItsState:
    """An object whose ``__setstate__`` keeps the very dict it is given."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__ = state

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _KeepsItsState) and other.items == self.items


def test_an_object_that_keeps_its_state_gets_a_state_of_its_own() -> None:
    serde = JsonPlusSerializer(pickle_fallback=True)
    decoder = Decoder(serde)
    stored = _codec.dump_item(serde, _KeepsItsState([1, [2]]))
    first, second = decoder.item(stored), decoder.item(stored)
    first.items[1].append(3)
    first.__dict__["more"] = True
    assert decoder.item(stored).__dict__ == second.__dict__ == {"items": [1, [2]]}


def test_the_codec_uses_no_private_pydantic_state() -> None:
    """No ``__pydantic_*__`` attribute, ``__dict__`` or ``__setattr__`` of another class is
    touched: pydantic's models are copied through their public protocol only."""
    tree = ast.parse(inspect.getsource(_codec))
    touched = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and (node.attr.startswith("__pydantic") or node.attr in {"__dict__", "__setattr__"})
    }
    assert not touched


# -- the checkpoint record: plain JSON when it reads back exactly ----------------------

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), _JSON, max_size=6))
@settings(max_examples=200, deadline=None)
def test_a_json_record_is_stored_as_itself_and_read_as_a_copy(record: dict) -> None:
    stored = _codec.dump_record(SERDE, record)
    assert stored is record  # kept as JSON: no serde, no base64
    first = _codec.load_record(SERDE, stored)
    assert first == record
    first["added"] = [1]
    for value in first.values():
        if isinstance(value, (list, dict)):
            value.clear()
    assert _codec.load_record(SERDE, stored) == record  # the caller's copy was its own


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        (1, 2),  # a tuple would read back as a list
        {1, 2},
        datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc),
        float("nan"),
        float("inf"),
        2**63,
        "\ud800",  # a lone surrogate is not UTF-8
        Colour.RED,  # a subclass of str
        uuid.UUID(int=1),
        {1: "a key that is not text"},
        _nested(40),
    ],
)
def test_a_record_json_cannot_give_back_exactly_goes_through_the_serde(value: Any) -> None:
    record = {"source": "loop", "value": value}
    stored = _codec.dump_record(SERDE, record)
    assert isinstance(stored, list)  # [type, base64], as before
    # What LangGraph's own savers give back: the serde's round trip.
    expected = SERDE.loads_typed(SERDE.dumps_typed(record))
    loaded = _codec.load_record(SERDE, stored)
    assert repr(loaded) == repr(expected)  # repr: nan != nan


def test_a_record_stored_the_old_way_still_loads() -> None:
    record = {"v": 4, "channel_versions": {"messages": "0001.5"}, "versions_seen": {}}
    assert _codec.load_record(SERDE, _codec.dump_typed(SERDE, record)) == record


# -- plain channel values: texts and numbers stored as themselves ----------------------

_PLAIN = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text()
_PLAIN |= st.floats(allow_nan=False, allow_infinity=False)


@given(
    st.one_of(
        st.lists(_PLAIN, max_size=8),
        st.dictionaries(st.text(), _PLAIN, max_size=8),
        _PLAIN,
    )
)
@settings(max_examples=300, deadline=None)
def test_a_plain_channel_value_is_stored_as_itself_and_read_back_exactly(value: Any) -> None:
    stored = Encoder(SERDE).channel(value, "7")
    assert stored["plain"] is True
    # No serde encoding in the store: the value itself (a dict's pairs in order).
    kept = stored.get("items", stored.get("pairs", stored.get("value")))
    assert repr(kept) == repr(list(map(list, value.items())) if type(value) is dict else value)
    for form in (stored, _codec.held(stored)):
        decoded = Decoder(SERDE).channel(form)
        assert repr(decoded) == repr(value)  # equal, of the same types, in the same order
        assert [type(v) for v in _values(decoded)] == [type(v) for v in _values(value)]
        if isinstance(value, (list, dict)):
            assert decoded is not value and decoded is not Decoder(SERDE).channel(form)


def _values(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [*value, *value.values()]
    return list(value) if isinstance(value, list) else [value]


@pytest.mark.parametrize(
    "value",
    [
        ["text", "\ud800"],  # not UTF-8
        ["text", Colour.RED],  # a subclass of str
        [1, 2**63],  # beyond 64 bits
        [1.0, float("nan")],
        ["text", ("a", "tuple")],
        ["text", {"nested": "dict"}],
        {"a": "text", "b": [1]},
        {"a": datetime.date(2026, 12, 1)},
        uuid.UUID(int=1),
        (1, 2),
    ],
)
def test_a_value_json_cannot_keep_exactly_goes_through_the_serde(value: Any) -> None:
    stored = Encoder(SERDE).channel(value, 1)
    assert "plain" not in stored
    expected = SERDE.loads_typed(SERDE.dumps_typed(value))
    if isinstance(value, list):
        expected = [SERDE.loads_typed(SERDE.dumps_typed(v)) for v in value]
    elif isinstance(value, dict):
        expected = {k: SERDE.loads_typed(SERDE.dumps_typed(v)) for k, v in value.items()}
    assert repr(Decoder(SERDE).channel(stored)) == repr(expected)


ENCRYPTED = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef")


class Subclassed(JsonPlusSerializer):
    """A serializer of the user's own: the saver cannot know what it does with values."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = super().dumps_typed(obj)
        return f"own-{kind}", data[::-1]

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return super().loads_typed((data[0].removeprefix("own-"), data[1][::-1]))


def test_only_the_stock_serializer_itself_is_stock() -> None:
    assert _codec.stock(SERDE) and _codec.stock(JsonPlusSerializer(pickle_fallback=True))
    assert not _codec.stock(ENCRYPTED) and not _codec.stock(Subclassed())
    assert Encoder(SERDE).stock and not Encoder(ENCRYPTED).stock


def test_a_list_subclass_and_another_serializer_are_never_plain() -> None:
    class Log(list):  # type: ignore[type-arg]
        pass

    assert "plain" not in Encoder(SERDE).channel(Log(["a"]), 1)
    values: list[Any] = [
        ["secret"],
        {"secret-key": "secret"},
        {"secret-key": ["secret"], "secret-other": 7391827364519},
        "secret",
        7391827364519,
        [{"secret-key": "secret"}, "secret"],
    ]
    for serde in (ENCRYPTED, Subclassed()):
        for value in values:
            stored = Encoder(serde).channel(value, 1)
            assert "plain" not in stored and "secret" not in repr(stored)
            assert "7391827364519" not in repr(stored)
            assert repr(Decoder(serde).channel(stored)) == repr(value)


def test_another_serializer_sees_a_dict_and_a_list_whole() -> None:
    """A dict's keys are the user's as much as its values, and a list's length as much
    as its items: each goes through the serde in one piece (one call, one ciphertext)."""
    notes = {"secret-key": "secret", "other": [1, {"deep-key": 2}]}
    log = [notes, "secret", HumanMessage("secret", id="m-1")]
    for serde in (ENCRYPTED, Subclassed()):
        for value, version in ((notes, 3), (log, 4), ([], 5)):
            stored = Encoder(serde).channel(value, version)
            assert stored == {"version": version, "type": "value", "value": stored["value"]}
            assert isinstance(stored["value"], str)
            assert _codec.load_typed(serde, stored["value"]) == value
            assert Decoder(serde).channel(stored) == value


def test_a_list_stored_item_by_item_with_another_serializer_still_loads() -> None:
    """What rewinddb stored for a list before it sent lists whole through another
    serializer: each item through the serde, one ciphertext each."""
    log = [{"secret-key": "secret"}, "secret", HumanMessage("secret", id="m-1"), None]
    old = {"version": "7", "type": "list", "items": [dump_item(ENCRYPTED, v) for v in log]}
    decoder = Decoder(ENCRYPTED)
    for _ in range(3):  # decoded, then remembered, then copied from memory
        assert decoder.channel(old) == log


def test_another_serializers_values_are_given_back_as_copies_of_their_own() -> None:
    """With another serializer a value is remembered the second time it is decoded:
    every read, from the serde or from memory, gives back a value nobody else holds."""
    value = [{"notes": ["a"]}, HumanMessage("hi", id="m-1", additional_kwargs={"k": [1]})]
    stored = Encoder(ENCRYPTED).channel(value, 1)
    decoder = Decoder(ENCRYPTED)
    reads = [decoder.channel(stored) for _ in range(4)]
    assert all(read == value for read in reads)
    reads[0][0]["notes"].append("changed")
    reads[1][1].additional_kwargs["k"].append(2)
    reads[2].append("more")
    assert decoder.channel(stored) == value and reads[3] == value


def test_a_dict_the_leaking_version_stored_with_another_serializer_still_loads() -> None:
    """What rewinddb stored for a text-keyed dict before it sent dicts whole through
    another serializer: its keys as they are, each member through the serde."""
    members = {"k": "secret", "n": 7, "deep": {"x": [1]}}
    old = {
        "version": "5",
        "type": "dict",
        "pairs": [[key, dump_item(ENCRYPTED, member)] for key, member in members.items()],
    }
    for form in (old, _codec.held(old)):
        assert Decoder(ENCRYPTED).channel(form) == members


def test_another_serializer_sees_every_record() -> None:
    record = {"source": "loop", "secret": "text"}
    for serde in (ENCRYPTED, Subclassed()):
        stored = _codec.dump_record(serde, record)
        assert isinstance(stored, list) and "text" not in repr(stored)
        assert "secret" not in repr(stored)
        assert _codec.load_record(serde, stored) == record
