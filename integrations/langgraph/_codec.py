"""How LangGraph values are stored as rewinddb JSON.

Every value goes through the saver's serde (``dumps_typed`` -> ``(type, bytes)``) and is
stored as ``[type, base64]``, or as one string ``"type:base64"`` in channel values. A list
channel value is stored item by item, ``{"type": "list", "items": ["type:base64", ...]}``,
so that a list that only grew between two checkpoints (``messages`` with
``add_messages``) is a JSON list that only grew: rewinddb then stores just the appended
items. (Strings rather than pairs: reading a long list then allocates no container per
item, which keeps Python's garbage collector quiet while a history is listed.)

Writing goes through an :class:`Encoder`, which remembers what the serde made of the
pydantic models (messages) it serialized, keyed by their content: the whole message list
is handed over at every checkpoint, and checking that a message is one already seen (its
state packed with msgpack, where model_dump() is made of that alone) costs a third of
serializing it again.

Loading goes through a :class:`Decoder`, which remembers what the items it decoded were:
the same message is read again by every later checkpoint of a thread, and rebuilding it
from memory costs a fraction of the serde's ``loads_typed`` (which validates every message
anew). A pydantic model whose state is plain data is rebuilt as pickle would rebuild it
(its own ``__setstate__``) from new dicts and lists that share only immutable values (so a
long history does not copy every message's text again); anything else is a pickled copy.
Each load still returns objects nobody else holds.
"""

from __future__ import annotations

import base64
import binascii
import copy
import pickle
import threading
from typing import Any

import ormsgpack
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

Typed = list[str]

#: Values of these types are immutable: a remembered one is returned as it is.
_IMMUTABLE = (str, bytes, int, float, bool, type(None))


def dump_typed(serde: SerializerProtocol, value: Any) -> Typed:
    """``value`` as ``[type, base64 of its bytes]``."""
    kind, data = serde.dumps_typed(value)
    return [kind, base64.b64encode(data).decode("ascii")]


def load_typed(serde: SerializerProtocol, stored: Any) -> Any:
    """The inverse of :func:`dump_typed` (and of :func:`dump_item`)."""
    kind, data = _split(stored)
    return serde.loads_typed((kind, binascii.a2b_base64(data)))


def dump_item(serde: SerializerProtocol, value: Any) -> str:
    """``value`` as ``"type:base64 of its bytes"``."""
    kind, data = serde.dumps_typed(value)
    return f"{kind}:{base64.b64encode(data).decode('ascii')}"


def _split(stored: Any) -> tuple[str, str]:
    if isinstance(stored, str):
        kind, _, data = stored.partition(":")
        return kind, data
    kind, data = stored
    return kind, data


#: ``model_dump()`` packed with these options fails unless every value in it is one msgpack
#: encodes natively (exact str, int, float, bool, None, bytes, lists, dicts with str keys),
#: and those the serde packs the same way. So equal packings mean equal serde output.
_STRICT = (
    ormsgpack.OPT_PASSTHROUGH_SUBCLASS
    | ormsgpack.OPT_PASSTHROUGH_DATACLASS
    | ormsgpack.OPT_PASSTHROUGH_DATETIME
    | ormsgpack.OPT_PASSTHROUGH_ENUM
    | ormsgpack.OPT_PASSTHROUGH_UUID
    | ormsgpack.OPT_PASSTHROUGH_BIG_INT
)


_SERDE, _STATE, _TO_PYTHON, _MODEL_DUMP = "serde", "state", "to_python", "model_dump"


class _Remembered:
    """A map bounded by ``max_bytes``, the oldest entries dropped first. Reads take no
    lock (one dict lookup is atomic); writes and drops do."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._values: dict[Any, tuple[int, Any]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        found = self._values.get(key)
        return None if found is None else found[1]

    def put(self, key: Any, value: Any, size: int) -> None:
        with self._lock:
            if key in self._values or size > self.max_bytes // 4:
                return
            self._values[key] = (size, value)
            self._bytes += size
            while self._bytes > self.max_bytes:
                self._bytes -= self._values.pop(next(iter(self._values)))[0]


class Encoder:
    """Stores values with the serde, remembering the stored form of pydantic models by
    their content (at most ``max_bytes`` of them)."""

    def __init__(self, serde: SerializerProtocol, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.serde = serde
        self._remembered = _Remembered(max_bytes)
        self._kinds: dict[type, str] = {}

    def _how(self, kind: type) -> str:
        """How to recognise values of ``kind`` already stored (pydantic models, with the
        stock serializer only; anything else is not recognised):

        - by their state (``__dict__``, extra and private attributes), where model_dump()
          is pydantic's own and the class declares no serializer or computed field, so
          that model_dump() is made of that state alone;
        - else by their model_dump()."""
        if type(self.serde) is not JsonPlusSerializer or not issubclass(kind, BaseModel):
            return _SERDE
        if kind.model_dump is not BaseModel.model_dump:
            return _MODEL_DUMP
        decorators = kind.__pydantic_decorators__
        if decorators.field_serializers or decorators.model_serializers:
            return _TO_PYTHON
        return _TO_PYTHON if decorators.computed_fields else _STATE

    def item(self, value: Any) -> str:
        """``value`` as ``"type:base64"``, as :func:`dump_item` makes it."""
        kind = type(value)
        how = self._kinds.get(kind)
        if how is None:
            how = self._kinds[kind] = self._how(kind)
        if how is _SERDE:
            return dump_item(self.serde, value)
        try:
            # What the serde stores for a model is made of its class and model_dump().
            if how is _STATE:  # what model_dump() is made of (strict: exact types)
                state = (value.__dict__, value.__pydantic_extra__, value.__pydantic_private__)
                key = (kind, how, ormsgpack.packb(state, option=_STRICT))
            else:
                if how is _TO_PYTHON:  # model_dump() as pydantic defines it, minus its wrapper
                    dumped = value.__pydantic_serializer__.to_python(value)
                else:
                    dumped = value.model_dump()
                key = (kind, how, ormsgpack.packb(dumped, option=_STRICT))
        except Exception:  # something the serde packs its own way: no shortcut
            return dump_item(self.serde, value)
        stored: str | None = self._remembered.get(key)
        if stored is None:
            stored = dump_item(self.serde, value)
            self._remembered.put(key, stored, len(key[2]) + len(stored))
        return stored

    def channel(self, value: Any, version: str | int | float) -> dict:
        """A channel value at one channel version, lists item by item."""
        if isinstance(value, list):
            return {"version": version, "type": "list", "items": [self.item(v) for v in value]}
        return {"version": version, "type": "value", "value": self.item(value)}


_AS_IS, _REBUILD, _PICKLED = "as is", "rebuild", "pickled"
_GETSTATE, _SETSTATE = BaseModel.__getstate__, BaseModel.__setstate__
_STATE_KEYS = {
    "__dict__",
    "__pydantic_extra__",
    "__pydantic_fields_set__",
    "__pydantic_private__",
}


def _plain(value: Any) -> bool:
    """Whether ``value`` is made of dicts with str keys, lists and immutable scalars."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    return kind is str or kind is int or kind is float or kind is bool or value is None


def _fresh(value: Any) -> Any:
    """A copy of a :func:`_plain` value: new dicts and lists, the same immutable scalars.
    (Scalars are copied by ``copy()`` without a call each: a message is mostly scalars.)"""
    kind = type(value)
    if kind is dict:
        copied = value.copy()
        for key, item in value.items():
            if type(item) is dict or type(item) is list:
                copied[key] = _fresh(item)
        return copied
    if kind is list:
        copied = value.copy()
        for index, item in enumerate(value):
            if type(item) is dict or type(item) is list:
                copied[index] = _fresh(item)
        return copied
    return value


def _model_state(value: Any) -> tuple | None:
    """(class, state) to rebuild a pydantic model as pickle would (its own
    ``__getstate__``/``__setstate__``) when its state is plain data, else None."""
    kind = type(value)
    if not isinstance(value, BaseModel) or kind.__getstate__ is not _GETSTATE:
        return None
    if kind.__setstate__ is not _SETSTATE:
        return None
    state = value.__getstate__()
    if set(state) != _STATE_KEYS or not all(
        _plain(state[k]) for k in ("__dict__", "__pydantic_extra__", "__pydantic_private__")
    ):
        return None
    fields_set = state["__pydantic_fields_set__"]
    if type(fields_set) is not set or not all(type(f) is str for f in fields_set):
        return None
    fields = _fresh(state["__dict__"])
    extra = _fresh(state["__pydantic_extra__"])
    containers = [k for k, v in fields.items() if type(v) is dict or type(v) is list]
    model = (
        kind,
        fields,
        tuple(k for k in containers if _flat(fields[k])),
        tuple(k for k in containers if not _flat(fields[k])),
        extra,
        extra is not None and _flat(extra),
        frozenset(fields_set),
        _fresh(state["__pydantic_private__"]),
    )
    again = _rebuild(model)
    if again != value or again.__pydantic_fields_set__ != value.__pydantic_fields_set__:
        return None
    if kind not in _REBUILT_AS_PYDANTIC and not _as_pydantic_rebuilds(again):
        return None
    return model


#: Classes for which :func:`_rebuild` was seen to make what ``__setstate__`` makes.
_REBUILT_AS_PYDANTIC: set[type] = set()


def _as_pydantic_rebuilds(rebuilt: Any) -> bool:
    """Whether pydantic's own ``__setstate__``, given ``rebuilt``'s state, makes an object
    with exactly the same attributes (so a pydantic that sets more is noticed)."""
    kind: Any = type(rebuilt)
    state = {key: copy.copy(value) for key, value in rebuilt.__getstate__().items()}
    reference = kind.__new__(kind)
    reference.__setstate__(state)
    same = all(
        getattr(reference, name, _MISSING) == getattr(rebuilt, name, _MISSING)
        for name in (*_STATE_KEYS, *getattr(kind, "__slots__", ()))
    )
    if same:
        _REBUILT_AS_PYDANTIC.add(kind)
    return same


_MISSING = object()


_set_attribute = object.__setattr__


def _flat(value: Any) -> bool:
    """A dict or list holding no dict or list: ``copy()`` copies it as :func:`_fresh`."""
    items = value.values() if type(value) is dict else value
    return not any(type(item) is dict or type(item) is list for item in items)


def _rebuild(model: tuple) -> Any:
    """A new model from :func:`_model_state`'s tuple (``flat`` and ``deep``: the fields
    that hold dicts or lists without or with more inside, the only ones to copy). It
    sets what pydantic's own ``__setstate__`` sets, in its order, without building the
    state dict first (``_model_state`` checked that the result equals the model)."""
    kind, fields, flat, deep, extra, extra_flat, fields_set, private = model
    copied = fields.copy()
    for key in flat:  # most of a message's: empty, or plain text (one C call each)
        copied[key] = copied[key].copy()
    for key in deep:
        copied[key] = _fresh(copied[key])
    if extra is not None:
        extra = extra.copy() if extra_flat else _fresh(extra)
    value = kind.__new__(kind)
    _set_attribute(value, "__pydantic_fields_set__", set(fields_set))
    _set_attribute(value, "__pydantic_extra__", extra)
    _set_attribute(value, "__pydantic_private__", None if private is None else _fresh(private))
    _set_attribute(value, "__dict__", copied)
    return value


class Decoder:
    """Loads stored values with the serde, remembering how to rebuild what it loaded (at
    most ``max_bytes`` of it)."""

    def __init__(self, serde: SerializerProtocol, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.serde = serde
        self._remembered = _Remembered(max_bytes)

    def item(self, stored: Any) -> Any:
        """The value of one ``"type:base64"`` (or ``[type, base64]``), as
        :func:`load_typed` returns it."""
        key = stored if isinstance(stored, str) else tuple(stored)
        remembered = self._remembered.get(key)
        if remembered is not None:
            how, value = remembered
            if how is _AS_IS:
                return value
            return _rebuild(value) if how is _REBUILD else pickle.loads(value)
        kind, data = _split(stored)
        value = self.serde.loads_typed((kind, binascii.a2b_base64(data)))
        if isinstance(value, _IMMUTABLE):
            self._remembered.put(key, (_AS_IS, value), len(data))
            return value
        try:
            model = _model_state(value)
        except Exception:  # e.g. nested too deep to walk: pickle decides below
            model = None
        if model is not None:
            self._remembered.put(key, (_REBUILD, model), 2 * len(data))
            return value
        try:
            pickled = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            again = pickle.loads(pickled)
            faithful = type(again) is type(value) and bool(again == value)
        except Exception:  # not picklable, or not comparable: always use the serde
            faithful = False
        if faithful:
            self._remembered.put(key, (_PICKLED, pickled), len(data) + len(pickled))
        return value

    def channel(self, stored: dict) -> Any:
        """A channel value stored by :meth:`Encoder.channel`."""
        if stored["type"] == "list":
            return [self.item(item) for item in stored["items"]]
        return self.item(stored["value"])
