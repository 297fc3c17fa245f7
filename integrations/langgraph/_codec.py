"""How LangGraph values are stored as rewinddb JSON.

Every value goes through the saver's serde (``dumps_typed`` -> ``(type, bytes)``) and is
stored as ``[type, base64]``, or as one string ``"type:base64"`` in channel values; with
the stock serializer, plain values (texts, numbers, booleans, None, and lists and
text-keyed dicts of them) are stored as themselves, marked ``"plain"``, and a checkpoint's
bookkeeping and metadata as plain JSON when JSON gives them back exactly
(:func:`dump_record`). A list
channel value is stored item by item, ``{"type": "list", "items": ["type:base64", ...]}``,
so that a list that only grew between two checkpoints (``messages`` with
``add_messages``) is a JSON list that only grew: rewinddb then stores just the appended
items. (Strings rather than pairs: reading a long list then allocates no container per
item, which keeps Python's garbage collector quiet while a history is listed.)

Any other serializer (:func:`stock` is false: one that encrypts, a subclass, a wrapper) is
opaque: every byte the user wrote is in its output. Every channel value is then stored
whole through it, ``{"type": "value", "value": "type:base64"}``: a dict with its keys, a
list with its items and how many there are; nothing is ``"plain"``. (Item by item, an
encrypting serde would encrypt every item again at every checkpoint, each time with a
fresh nonce, so no two checkpoints would share an item, and the store would keep every
item once per checkpoint; whole, a list costs what it costs a saver that encrypts the
whole checkpoint, and its length is hidden. A list stored item by item before still
loads: reading is unchanged.)

Writing goes through an :class:`Encoder`: the whole message list is handed over at every
checkpoint, so it remembers what the serde made of each pydantic model (message) it saw,
keyed by what the serde's output is made of (the class and its field values, or its
``model_dump()`` where the class customises serialization), which is cheaper to compute
than serializing again.

Loading goes through a :class:`Decoder`: every later checkpoint of a thread reads the same
message again, so it remembers what each stored item decoded to and makes a new copy
instead of running the serde's ``loads_typed`` (which validates every message anew). With
another serializer a stored value is a whole channel value, which a thread that changes
it at every checkpoint reads once or twice: it is remembered the second time it is
decoded (remembering one costs about half a decoding), an immutable one the first time. Plain
data (dicts, lists and sets of immutable values) is copied as new containers that share
only the immutable values (so a long history does not copy every message's text again);
an object whose state is plain data is copied as ``copy.deepcopy`` copies it, through its
own ``__reduce_ex__`` and ``__setstate__``; anything else is a pickled copy. Only public
protocols are used: pydantic's models are never given state by hand. Each load returns
objects nobody else holds.
"""

from __future__ import annotations

import base64
import binascii
import copyreg
import math
import operator
import pickle
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import orjson
import ormsgpack
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel, TypeAdapter

Typed = list[str]

#: Immutable values that store alike whenever they are equal (not floats: -0.0 == 0.0).
_SAME_WHEN_EQUAL = frozenset((str, bytes, int, bool, type(None)))
#: Values of these types are immutable: a remembered one is returned as it is.
_IMMUTABLE = (str, bytes, int, float, bool, type(None))


def stock(serde: SerializerProtocol) -> bool:
    """Whether ``serde`` is LangGraph's stock serializer itself (no subclass, no wrapper
    such as ``EncryptedSerializer``): only then may the saver store values, keys or
    records as themselves. Any other serializer is opaque: nothing the user wrote is
    stored outside its output."""
    return type(serde) is JsonPlusSerializer


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


#: A record kept as plain JSON is at most this deep (deeper ones go through the serde).
_RECORD_DEPTH = 32
_INT_RANGE = range(-(2**63), 2**63)


def dump_record(serde: SerializerProtocol, record: Mapping[str, Any]) -> Any:
    """A checkpoint's bookkeeping or metadata as stored: with the stock serializer, the
    dict itself when it is JSON that reads back exactly as it is (its key order aside),
    which keeps it small and readable in the store; else as :func:`dump_typed` makes it
    (a list: another serializer, e.g. one that encrypts, sees every record)."""
    if stock(serde) and _exact_json(record, 0):
        return record
    return dump_typed(serde, record)


def load_record(serde: SerializerProtocol, stored: Any) -> Any:
    """The inverse of :func:`dump_record`: a new dict either way (the caller owns it)."""
    if type(stored) is dict:
        return _json_copy(stored)
    return load_typed(serde, stored)


def _exact_json(value: Any, depth: int) -> bool:
    """Whether ``value`` is made of exact JSON types only (no tuples, subclasses, sets,
    non-finite floats or keys other than text), so a JSON round trip gives it back."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return kind is not str or _utf8(value)
    if kind is int:
        return value in _INT_RANGE
    if kind is float:
        return math.isfinite(value)
    if depth >= _RECORD_DEPTH:
        return False
    if kind is dict:
        return all(
            type(key) is str and _utf8(key) and _exact_json(item, depth + 1)
            for key, item in value.items()
        )
    if kind is list:
        return all(_exact_json(item, depth + 1) for item in value)
    return False


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def _json_copy(value: Any) -> Any:
    """A new copy of plain JSON (one round trip through orjson, in C)."""
    return orjson.loads(orjson.dumps(value))


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


_SERDE, _FIELDS, _MODEL_DUMP = "serde", "fields", "model_dump"


def _customises_serialization(schema: Any) -> bool:
    """Whether a pydantic core schema (as ``TypeAdapter(...).core_schema`` gives it) has a
    serializer or a computed field anywhere: then model_dump() is not made of the field
    values alone."""
    if isinstance(schema, dict):
        if "serialization" in schema or schema.get("computed_fields"):
            return True
        return any(_customises_serialization(item) for item in schema.values())
    if isinstance(schema, list):
        return any(_customises_serialization(item) for item in schema)
    return False


def _no_fields(value: Any) -> tuple:
    return ()


class _Remembered:
    """A map bounded by ``max_bytes``, the oldest entries dropped first. Reads take no
    lock (one dict lookup is atomic, and ``values`` may be read directly); writes and
    drops do."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.values: dict[Any, Any] = {}
        self._sizes: dict[Any, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Any, default: Any = None) -> Any:
        return self.values.get(key, default)

    def put(self, key: Any, value: Any, size: int) -> None:
        with self._lock:
            if key in self.values or size > self.max_bytes // 4:
                return
            self.values[key] = value
            self._sizes[key] = size
            self._bytes += size
            while self._bytes > self.max_bytes:
                oldest = next(iter(self._sizes))
                self._bytes -= self._sizes.pop(oldest)
                del self.values[oldest]


class Encoder:
    """Stores values with the serde, remembering the stored form of pydantic models by
    what that form is made of (at most ``max_bytes`` of them)."""

    def __init__(self, serde: SerializerProtocol, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.serde = serde
        #: Whether ``serde`` is the stock serializer (:func:`stock`).
        self.stock = stock(serde)
        self._remembered = _Remembered(max_bytes)
        self._kinds: dict[type, tuple[str, Any]] = {}

    def _how(self, kind: type) -> tuple[str, Any]:
        """How to recognise values of ``kind`` already stored, and with what. The stock
        serializer stores a pydantic model as its class and model_dump(), so a model is
        recognised (any other value is not):

        - by its field values (an ``operator.attrgetter`` of the class's ``model_fields``)
          and ``model_extra``, where model_dump() is pydantic's own and the class's core
          schema has no serializer or computed field, so that model_dump() is made of
          those alone;
        - else by its model_dump()."""
        if not self.stock or not issubclass(kind, BaseModel):
            return _SERDE, None
        if kind.model_dump is not BaseModel.model_dump:
            return _MODEL_DUMP, None
        try:
            customised = _customises_serialization(TypeAdapter(kind).core_schema)
        except Exception:  # e.g. a model not fully defined yet: ask model_dump()
            return _MODEL_DUMP, None
        if customised:
            return _MODEL_DUMP, None
        names = tuple(kind.model_fields)
        return _FIELDS, operator.attrgetter(*names) if names else _no_fields

    def item(self, value: Any) -> str:
        """``value`` as ``"type:base64"``, as :func:`dump_item` makes it."""
        kind = type(value)
        known = self._kinds.get(kind)
        if known is None:
            known = self._kinds[kind] = self._how(kind)
        how, fields = known
        if how is _SERDE:
            if kind in _SAME_WHEN_EQUAL and self.stock:
                # A list of texts stores the same texts turn after turn: each once.
                key = (kind, value)
                found: str | None = self._remembered.get(key)
                if found is None:
                    found = dump_item(self.serde, value)
                    size = len(found) + (len(value) if isinstance(value, (str, bytes)) else 8)
                    self._remembered.put(key, found, size)
                return found
            return dump_item(self.serde, value)
        try:
            # What the serde stores for a model is made of its class and model_dump().
            made_of = (fields(value), value.model_extra) if how is _FIELDS else value.model_dump()
            packed = ormsgpack.packb(made_of, option=_STRICT)
        except Exception:  # something the serde packs its own way: no shortcut
            return dump_item(self.serde, value)
        stored: str | None = self._remembered.get((kind, how, packed))
        if stored is None:
            stored = dump_item(self.serde, value)
            self._remembered.put((kind, how, packed), stored, len(packed) + len(stored))
        return stored

    def channel(self, value: Any, version: str | int | float | None) -> dict:
        """A channel value at one channel version; with the stock serializer, lists item
        by item and text-keyed dicts as their ``[key, member]`` pairs in order (so the
        store shares what consecutive versions have in common: a list that grew, a dict
        of notes that gained one).

        With the stock serializer, texts, numbers, booleans and None (and lists of them,
        and dicts of them by text keys) are stored as themselves, marked ``"plain"``:
        JSON gives them back exactly, they read as they are in the store, and a list of
        a thousand texts costs no Python call per item. Another serializer (e.g. one
        that encrypts) sees every value whole, as ``"type": "value"`` (a list with its
        items and its length, a dict with its keys): nothing the user wrote is stored
        outside what it made, and each version of the value costs one call of it."""
        plain = self.stock
        if plain and isinstance(value, list):
            if type(value) is list and plain_scalars(value):
                return {"version": version, "type": "list", "plain": True, "items": list(value)}
            return {"version": version, "type": "list", "items": [self.item(v) for v in value]}
        if plain and type(value) is dict and text_keys(value):
            if plain_scalars(value) and plain_scalars(value.values()):
                pairs = list(map(list, value.items()))
                return {"version": version, "type": "dict", "plain": True, "pairs": pairs}
            pairs = [[key, self.item(member)] for key, member in value.items()]
            return {"version": version, "type": "dict", "pairs": pairs}
        if plain and plain_scalars((value,)):
            return {"version": version, "type": "value", "plain": True, "value": value}
        return {"version": version, "type": "value", "value": self.item(value)}


def text_keys(value: dict) -> bool:
    """Whether every key of ``value`` is exactly a ``str`` (checked in C, not key by key)."""
    return set(map(type, value)) <= _TEXT


_TEXT = frozenset((str,))

#: The exact types a ``"plain"`` channel value is made of.
_PLAIN_SCALARS = frozenset((str, int, float, bool, type(None)))


def plain_scalars(values: Iterable[Any]) -> bool:
    """Whether every one of ``values`` is a text (valid UTF-8), an int of 64 bits, a
    finite float, a boolean or None, of exactly those types: JSON keeps each exactly.
    (The common case, all texts, is checked without a Python call per value.)"""
    values = values if isinstance(values, (list, tuple)) else list(values)
    kinds = set(map(type, values))
    if not kinds <= _PLAIN_SCALARS:
        return False
    if kinds == {str}:
        return all(map(str.isascii, values)) or all(map(_utf8, values))
    return all(_exact_json(value, 0) for value in values)


_PLAIN, _COPIED, _PICKLED = "plain", "copied", "pickled"

#: What the decoder's memory gives for an item it does not hold.
_NOT_HELD: Any = type("NotHeld", (), {"__slots__": ()})()


def _plain(value: Any) -> bool:
    """Whether ``value`` is made of dicts, lists and sets holding immutable scalars (exact
    types, so that no subclass hides mutable state), dict keys included."""
    kind = type(value)
    if kind is dict:
        return all(type(k) in _IMMUTABLE and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    if kind is set or kind is frozenset:
        return all(type(v) in _IMMUTABLE for v in value)
    return kind in _IMMUTABLE


Plan = tuple[tuple[Any, "Plan"], ...]


def _plan(value: Any) -> Plan:
    """Where a :func:`_plain` dict or list holds dicts, lists or sets: ``(key, plan)``
    pairs, so that a copy visits only those and shares every scalar."""
    items = value.items() if type(value) is dict else enumerate(value)
    return tuple(
        (key, _plan(item) if type(item) is dict or type(item) is list else ())
        for key, item in items
        if type(item) is dict or type(item) is list or type(item) is set
    )


def _copied(value: Any, plan: Plan) -> Any:
    """A new copy of a :func:`_plain` dict or list, following its :func:`_plan`."""
    copied = value.copy()
    for key, inner in plan:
        item = value[key]
        copied[key] = _copied(item, inner) if inner else item.copy()
    return copied


#: What ``__reduce_ex__`` names to make an object with ``cls.__new__(cls)`` (typeshed lacks it).
_NEW_OBJECT = vars(copyreg)["__newobj__"]


def _copy_recipe(value: Any) -> tuple | None:
    """``(class, its __new__, its __setstate__, state, plan)`` to copy ``value`` as
    ``copy.deepcopy`` does (its ``__reduce_ex__``, then its class's own ``__setstate__``
    given a copy of the state), when that state is :func:`_plain` data and such a copy
    compares equal to ``value`` with an equal state; else None."""
    kind = type(value)
    if getattr(kind, "__setstate__", None) is None:
        return None
    reduced = value.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
    if not isinstance(reduced, tuple) or len(reduced) < 3:
        return None
    make, arguments, state, *rest = reduced
    if make is not _NEW_OBJECT or arguments != (kind,) or any(r is not None for r in rest):
        return None
    if type(state) is not dict or not _plain(state):
        return None
    plan = _plan(state)
    # The class's own functions, looked up once; a state of its own, not the caller's.
    recipe = (kind, kind.__new__, kind.__setstate__, _copied(state, plan), plan)
    again = _copy(recipe)
    if type(again) is not kind or not bool(again == value):
        return None
    if again.__reduce_ex__(pickle.HIGHEST_PROTOCOL)[2] != state:
        return None
    return recipe


def _copy(recipe: tuple) -> Any:
    """A new object from :func:`_copy_recipe`'s recipe."""
    kind, new, set_state, state, plan = recipe
    value = new(kind)
    set_state(value, _copied(state, plan))
    return value


class _Seen:
    """The hashes of the last ``limit`` keys :meth:`Decoder.item` decoded once (a
    collision only makes a value remembered one decoding early)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._hashes: dict[int, None] = {}
        self._lock = threading.Lock()

    def first(self, key: Any) -> bool:
        """Whether ``key`` is seen here for the first time (it is then noted)."""
        digest = hash(key)
        if digest in self._hashes:
            return False
        with self._lock:
            self._hashes[digest] = None
            while len(self._hashes) > self.limit:
                del self._hashes[next(iter(self._hashes))]
        return True


class Decoder:
    """Loads stored values with the serde, remembering what it loaded: immutable values
    as they are, others as how to copy them (at most ``max_bytes`` of each); with a
    serializer that is not the stock one, those the second time they are decoded."""

    def __init__(self, serde: SerializerProtocol, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.serde = serde
        self._as_is = _Remembered(max_bytes)
        self._remembered = _Remembered(max_bytes)
        #: Keys decoded once, not remembered yet (None: the stock serializer's items,
        #: which later checkpoints read again, are remembered at once).
        self._once: _Seen | None = None if stock(serde) else _Seen(4096)

    def item(self, stored: Any) -> Any:
        """The value of one ``"type:base64"`` (or ``[type, base64]``), as
        :func:`load_typed` returns it."""
        key = stored if isinstance(stored, str) else tuple(stored)
        value = self._as_is.get(key, _NOT_HELD)
        if value is not _NOT_HELD:
            return value
        remembered = self._remembered.get(key)
        if remembered is not None:
            how, value = remembered
            if how is _COPIED:
                return _copy(value)
            if how is _PLAIN:
                return _copied(*value)
            return pickle.loads(value)
        kind, data = _split(stored)
        value = self.serde.loads_typed((kind, binascii.a2b_base64(data)))
        once = self._once
        if once is None or isinstance(value, _IMMUTABLE) or not once.first(key):
            self._remember(key, value, len(data))
        return value

    def items(self, stored: Sequence[Any]) -> list[Any]:
        """:meth:`item` of each of ``stored``; when every one is remembered as it is
        (texts, numbers), in one lookup of all (no Python call each)."""
        if len(stored) > 1:
            try:
                return list(operator.itemgetter(*stored)(self._as_is.values))
            except (KeyError, TypeError):  # one is not held so, or items are pairs
                pass
        return [self.item(item) for item in stored]

    def _remember(self, key: Any, value: Any, size: int) -> None:
        """Remembers how to give ``value`` again: as it is (immutable), as a copy of plain
        data or of an object's plain state, else as a pickled copy; a value that none of
        these reproduces is not remembered (the serde decodes it every time)."""
        if isinstance(value, _IMMUTABLE):
            self._as_is.put(key, value, size)
            return
        try:
            if type(value) is dict or type(value) is list:
                if _plain(value):
                    plan = _plan(value)
                    self._remembered.put(key, (_PLAIN, (_copied(value, plan), plan)), 2 * size)
                    return
            else:
                recipe = _copy_recipe(value)
                if recipe is not None:
                    self._remembered.put(key, (_COPIED, recipe), 2 * size)
                    return
        except Exception:  # e.g. nested too deep to walk: pickle decides below
            pass
        try:
            pickled = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            again = pickle.loads(pickled)
            faithful = type(again) is type(value) and bool(again == value)
        except Exception:  # not picklable, or not comparable: always use the serde
            faithful = False
        if faithful:
            self._remembered.put(key, (_PICKLED, pickled), size + len(pickled))

    def channel(self, stored: dict) -> Any:
        """A channel value stored by :meth:`Encoder.channel` (or as :func:`held` keeps
        it)."""
        plain = stored.get("plain") is True  # stored as itself: immutable scalars
        if stored["type"] == "list":
            return list(stored["items"]) if plain else self.items(stored["items"])
        if stored["type"] == "dict":
            pairs = stored["pairs"]
            if type(pairs) is _Columns:
                keys, members = pairs
            elif not pairs:
                return {}
            elif plain:
                return dict(pairs)
            else:
                keys, members = zip(*pairs, strict=True)
            return dict(zip(keys, members if plain else self.items(members), strict=True))
        return stored["value"] if plain else self.item(stored["value"])


class _Columns(NamedTuple):
    """A stored dict's pairs as :func:`held` keeps them."""

    keys: tuple[str, ...]
    members: tuple[Any, ...]


def held(stored: Any) -> Any:
    """A stored channel value (:meth:`Encoder.channel`'s, as read) to be decoded later,
    kept compact: a dict's pairs, a list each as read, as two tuples (its keys, its
    members), which the garbage collector need not walk; anything else as it is."""
    if type(stored) is dict and stored.get("type") == "dict":
        pairs = stored.get("pairs")
        if type(pairs) is list and pairs:
            try:
                columns = tuple(zip(*pairs, strict=True))
            except (TypeError, ValueError):  # not pairs of one length: as it is
                return stored
            if len(columns) == 2:
                return {**stored, "pairs": _Columns(*columns)}
    return stored


def pairs_of(stored: Any) -> int:
    """How many pairs a value :func:`held` keeps stood for (1 for any other value)."""
    if type(stored) is dict and type(stored.get("pairs")) is _Columns:
        return len(stored["pairs"].keys)
    return 1
