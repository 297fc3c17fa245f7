"""Stored values as a person reads them: what LangGraph's serde encoded, decoded for display.

The LangGraph saver stores each value as its serde makes it: a list item as one string
``"msgpack:<base64>"``, a record field or a pending write as a pair
``["msgpack", "<base64>"]``. A diff of such values is a diff of base64. The web explorer
and the notebook widget show them through :func:`readable` instead, which decodes those
encodings into plain JSON: a model (a LangChain message, a dataclass, ...) becomes its
class name and its fields, ``{"__class__": "langchain_core.messages.ai.AIMessage",
"content": ..., ...}``.

Stored state is untrusted, so decoding constructs nothing: no module is imported and no
class is called (msgpack extensions are read as data), and pickled values are never
unpickled (shown as ``{"__pickle__": "<N bytes>"}``); bytes are shown as ``"<N bytes>"``.
Only what decodes completely is replaced; anything else is shown as stored. The stored
values, and every JSON endpoint, keep the exact encoding.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

import orjson
import ormsgpack

#: The serde types the saver stores, followed by base64 (possibly empty, for "null").
_ENCODED = re.compile(r"(msgpack|json|null|bytes|bytearray|pickle):([A-Za-z0-9+/]*={0,2})")
_TYPES = frozenset(("msgpack", "json", "null", "bytes", "bytearray", "pickle"))
#: Encodings longer than this (characters of base64) are shown as stored.
MAX_ENCODED_CHARS = 1 << 20
#: LangGraph's msgpack extension codes whose data is (module, class name, value, ...).
_CONSTRUCTORS = frozenset(range(6))  # single arg, positional, keywords, method, pydantic v1, v2
_DELTA_SNAPSHOT = 7


class _Undecodable(Exception):
    """The text looked like an encoding but is not one."""


def readable(value: Any) -> Any:
    """``value`` with every serde encoding in it decoded for display; the same object
    when there is none."""
    kind = type(value)
    if kind is str:
        match = _ENCODED.fullmatch(value) if len(value) <= MAX_ENCODED_CHARS else None
        if match is None:
            return value
        try:
            return _decode(match.group(1), match.group(2))
        except _Undecodable:
            return value
    if kind is list:
        if (
            len(value) == 2
            and type(value[0]) is str
            and value[0] in _TYPES
            and type(value[1]) is str
            and len(value[1]) <= MAX_ENCODED_CHARS
        ):
            try:
                return _decode(value[0], value[1])
            except _Undecodable:
                pass
        items = [readable(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if kind is dict:
        shown = {key: readable(item) for key, item in value.items()}
        return value if all(shown[key] is item for key, item in value.items()) else shown
    return value


def _decode(kind: str, text: str) -> Any:
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _Undecodable from None
    if kind == "null":
        if data:
            raise _Undecodable
        return None
    if kind in ("bytes", "bytearray"):
        return _plain(data)
    if kind == "pickle":
        return {"__pickle__": f"<{len(data)} bytes>"}  # never unpickled
    try:
        if kind == "json":
            decoded = _plain(json.loads(data))
        else:
            decoded = _plain(
                ormsgpack.unpackb(data, ext_hook=_extension, option=ormsgpack.OPT_NON_STR_KEYS)
            )
        orjson.dumps(decoded)  # what a page can show (no lone surrogates, no huge ints)
    except Exception:  # whatever the bytes hold, a page shows the value as stored
        raise _Undecodable from None
    return decoded


def _extension(code: int, data: bytes) -> Any:
    """A msgpack extension of LangGraph's serde, as data: never imported or called."""
    inner = ormsgpack.unpackb(data, ext_hook=_extension, option=ormsgpack.OPT_NON_STR_KEYS)
    if code == _DELTA_SNAPSHOT:
        return inner
    if (
        code in _CONSTRUCTORS
        and isinstance(inner, (list, tuple))
        and len(inner) >= 3
        and all(isinstance(part, str) for part in inner[:2])
    ):
        shown: dict[str, Any] = {"__class__": f"{inner[0]}.{inner[1]}"}
        if isinstance(inner[2], dict) and code in (2, 4, 5):  # keywords, pydantic fields
            shown.update((str(key), item) for key, item in inner[2].items())
        else:
            shown["value"] = inner[2]
        return shown
    return {"__extension__": code, "value": inner}


def _plain(value: Any) -> Any:
    """JSON: string keys, lists for tuples, ``"<N bytes>"`` for bytes."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(value)} bytes>"
    return value
