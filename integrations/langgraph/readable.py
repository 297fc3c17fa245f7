"""Stored values as a person reads them: what LangGraph's serde encoded, decoded for display.

The LangGraph saver stores each value as its serde makes it: a list item as one string
``"msgpack:<base64>"``, a pending write (and an older checkpoint record's fields) as a
pair ``["msgpack", "<base64>"]``. A diff of such values is a diff of base64. (Plain
channel values and the checkpoint record's JSON fields are stored as themselves; the
presenter shows them as stored, never through :func:`readable`.) The web explorer,
the notebook widget and the command line's text show them through :func:`readable`
(registered with the core by the LangGraph presenter: ``rewinddb.presenters.readable``)
instead, which decodes those encodings into plain JSON: a model (a LangChain message, a
dataclass, ...) becomes its class name and its fields,
``{"__class__": "langchain_core.messages.ai.AIMessage", "content": ..., ...}``.

Stored state is untrusted, so decoding constructs nothing: no module is imported and no
class is called (msgpack extensions are read as data), and pickled values are never
unpickled. Bytes show as their length and a short hash (``"<3 bytes, sha256 1f2e...>"``,
so two different blobs never look alike), NaN and infinities as text. Only what decodes
completely, and fits within the depth any stored value may have (``MAX_DEPTH`` counting
where it sits), is replaced; anything else is shown as stored. So a decoded value is as
safe to render, compare and print as a stored one. Callers decode a value once, at its
top: decoding decoded data again would decode a string that merely looks encoded. The
stored values, and every JSON endpoint, keep the exact encoding.

:func:`message` reads a decoded message as the presenters' ``Message`` record (its
role, its text, its tool calls), so every front end shows a conversation alike.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson
import ormsgpack

from rewinddb import MAX_DEPTH
from rewinddb.presenters import Message, ToolCall, short

#: The serde types the saver stores, followed by base64 (possibly empty, for "null").
_ENCODED = re.compile(r"(msgpack|json|null|bytes|bytearray|pickle):([A-Za-z0-9+/]*={0,2})")
_TYPES = frozenset(("msgpack", "json", "null", "bytes", "bytearray", "pickle"))
#: Encodings longer than this (characters of base64) are shown as stored.
MAX_ENCODED_CHARS = 1 << 20
#: LangGraph's msgpack extension codes whose data is (module, class name, value, ...).
_CONSTRUCTORS = frozenset(range(6))  # single arg, positional, keywords, method, pydantic v1, v2
_DELTA_SNAPSHOT = 7


class _Undecodable(Exception):
    """The text is not an encoding, or not one that can be shown where it sits."""


#: What an object or array holding an encoding has in its JSON text: the start of a
#: ``"type:..."`` string or of a ``["type", ...]`` pair.
_CANDIDATE = re.compile(rb'"(?:msgpack|json|null|bytes|bytearray|pickle)(?::|",")')


def readable(value: Any, depth: int = 0, memo: dict[Any, Any] | None = None) -> Any:
    """``value`` (found ``depth`` levels deep) with every serde encoding in it decoded
    for display; the same object when there is none. ``memo`` (a dict the caller keeps)
    decodes each encoding once across several values: the versions of a list that grew
    hold the same items. Decoded values are shared, so they are for reading only."""
    if isinstance(value, (dict, list)):
        try:  # most values hold no encoding: one pass in C says so
            if _CANDIDATE.search(orjson.dumps(value)) is None:
                return value
        except (TypeError, orjson.JSONEncodeError):
            pass
    return _readable(value, depth, memo)


def is_encoded(value: Any) -> bool:
    """Whether ``value`` itself (not something inside it) is an encoding ``readable``
    decodes: a ``"type:<base64>"`` string or a ``["type", "<base64>"]`` pair."""
    kind = type(value)
    if kind is str:
        return len(value) <= MAX_ENCODED_CHARS and _ENCODED.fullmatch(value) is not None
    return (
        kind is list
        and len(value) == 2
        and type(value[0]) is str
        and value[0] in _TYPES
        and type(value[1]) is str
        and len(value[1]) <= MAX_ENCODED_CHARS
    )


def _readable(value: Any, depth: int, memo: dict[Any, Any] | None) -> Any:
    kind = type(value)
    if kind is str:
        match = _ENCODED.fullmatch(value) if len(value) <= MAX_ENCODED_CHARS else None
        if match is None:
            return value
        if memo is not None:
            found = memo.get((value, depth), memo)
            if found is not memo:
                return found
        try:
            shown = _decode(match.group(1), match.group(2), depth)
        except _Undecodable:
            shown = value
        if memo is not None:
            memo[(value, depth)] = shown
        return shown
    if depth >= MAX_DEPTH:
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
                return _decode(value[0], value[1], depth)
            except _Undecodable:
                pass
        items = [_readable(item, depth + 1, memo) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if kind is dict:
        shown = {key: _readable(item, depth + 1, memo) for key, item in value.items()}
        return value if all(shown[key] is item for key, item in value.items()) else shown
    return value


def _decode(kind: str, text: str, depth: int) -> Any:
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _Undecodable from None
    if kind == "null":
        if data:
            raise _Undecodable
        return None
    if kind in ("bytes", "bytearray"):
        return _blob(data)
    if kind == "pickle":
        return {"__pickle__": _blob(data)}  # never unpickled
    try:
        if kind == "json":
            decoded = json.loads(data)
        else:
            decoded = ormsgpack.unpackb(
                data, ext_hook=_extension, option=ormsgpack.OPT_NON_STR_KEYS
            )
        if not _fits(decoded, MAX_DEPTH - depth):
            raise _Undecodable
        decoded = _plain(decoded)
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


def _fits(value: Any, levels: int) -> bool:
    """Whether ``value`` nests no deeper than ``levels`` (walked without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth >= levels:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True


def _plain(value: Any) -> Any:
    """JSON that shows every difference: string keys, lists for tuples, text for bytes,
    NaN and infinities (``_fits`` bounded the depth)."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _blob(bytes(value))
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # "nan", "inf", "-inf": orjson would write null
    return value


def _blob(data: bytes) -> str:
    return f"<{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:12]}>"


def as_text(value: Any) -> str:
    """A decoded value as one line of JSON (its repr if it is not JSON)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


# -- messages as records -----------------------------------------------------------

_ROLES = {"user": "human", "assistant": "ai", "developer": "system"}


def _role(value: dict[str, Any]) -> str:
    kind = value.get("type")
    if kind == "chat" and isinstance(value.get("role"), str):
        return str(value["role"])
    if isinstance(kind, str) and kind:
        return _ROLES.get(kind, kind.removesuffix("MessageChunk").removesuffix("Chunk").lower())
    cls = value.get("__class__")
    if isinstance(cls, str) and cls.endswith(("Message", "MessageChunk")):
        name = cls.rsplit(".", 1)[-1].removesuffix("Chunk").removesuffix("Message")
        return name.lower() or "message"
    if isinstance(value.get("role"), str):
        return str(_ROLES.get(value["role"], value["role"]))
    return "message"


def _content_text(content: Any) -> str:
    """A message's content as text: a string as is, content blocks' text joined (other
    blocks named by their type)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict) and isinstance(block.get("type"), str):
                parts.append(f"[{block['type']}]")
            else:
                parts.append(as_text(block))
        return "\n".join(parts)
    return as_text(content)


def _tool_calls(value: Any) -> tuple[ToolCall, ...]:
    if not isinstance(value, list):
        return ()
    calls = []
    for call in value:
        if isinstance(call, dict):
            name, call_id = call.get("name"), call.get("id")
            calls.append(
                ToolCall(
                    name if isinstance(name, str) else as_text(name),
                    call.get("args"),
                    call_id if isinstance(call_id, str) else None,
                )
            )
    return tuple(calls)


#: The roles LangChain's ``convert_to_messages`` takes in a ``(role, content)`` pair, as
#: shown.
_PAIR_ROLES = {
    "human": "human",
    "user": "human",
    "ai": "ai",
    "assistant": "ai",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "function",
}
#: The message classes a LangChain constructor envelope (``{"lc": 1, "type":
#: "constructor", "id": [..., "AIMessage"], "kwargs": {...}}``) names, as roles.
_ENVELOPE_ROLES = {
    f"{kind}{chunk}": role
    for kind, role in (
        ("HumanMessage", "human"),
        ("AIMessage", "ai"),
        ("SystemMessage", "system"),
        ("ToolMessage", "tool"),
        ("FunctionMessage", "function"),
        ("ChatMessage", "chat"),
    )
    for chunk in ("", "Chunk")
}


def _pair(value: Any) -> bool:
    """A ``(role, content)`` message pair (a tuple, which the serde stores as a list)."""
    return (
        type(value) is list
        and len(value) == 2
        and isinstance(value[0], str)
        and value[0] in _PAIR_ROLES
        and isinstance(value[1], (str, list))
    )


def _envelope(value: dict[str, Any]) -> dict[str, Any] | None:
    """A LangChain constructor envelope of a message as the message's own fields."""
    if value.get("lc") != 1 or value.get("type") != "constructor":
        return None
    names, fields = value.get("id"), value.get("kwargs")
    if not isinstance(names, list) or not names or not isinstance(fields, dict):
        return None
    role = _ENVELOPE_ROLES.get(names[-1]) if isinstance(names[-1], str) else None
    return None if role is None else {**fields, "type": role}


def message_likes(value: Any) -> list[Any]:
    """The message-likes a write to a messages channel holds (see ``written_messages``)."""
    return [value] if not isinstance(value, list) or _pair(value) else value


def written_messages(value: Any, text_role: str | Callable[[], str] = "message") -> list[Message]:
    """What a node wrote to a messages channel (decoded), as the messages it stands for.
    LangChain takes many message-likes (``add_messages``, ``convert_to_messages``): a
    message, a ``(role, content)`` tuple (the serde stores it as a list), a dict with a
    ``role`` or ``type``, a constructor envelope, a bare string (a human message where the
    channel holds messages: ``text_role`` says which role it takes), or a list of those.
    A list of two whose first item names a role reads as one tuple: as stored, a tuple and
    a list are alike, and a node rarely writes the word "user" as a message of its own.
    ``text_role`` may be a function, asked only when there is a bare string."""
    found = []
    for item in message_likes(value):
        if isinstance(item, str):
            role = text_role if isinstance(text_role, str) else text_role()
            found.append(Message(role, item))
        else:
            found.append(message(item))
    return found


def undecodable(stored: Any) -> Message:
    """What could not be decoded (another serde's encoding, a damaged row), shown as stored."""
    text = stored if isinstance(stored, str) else as_text(stored)
    return Message("undecodable", short(text))


def message(value: Any, stored: Any = None, step: int | None = None) -> Message:
    """A decoded message (``readable``'s form of a LangChain message, a dict with a
    ``role``, or plain text) as a ``Message``; ``stored`` is what it was decoded from:
    when decoding left it as it was, it reads as ``undecodable``."""
    if stored is not None and value is stored and isinstance(stored, (str, list)):
        return replace(undecodable(stored), step=step)
    if isinstance(value, dict) and "__pickle__" in value:
        return replace(undecodable(value["__pickle__"]), step=step)
    if isinstance(value, str):
        return Message("message", value, step=step)
    if _pair(value):  # a ("role", "content") tuple
        return Message(_PAIR_ROLES[value[0]], _content_text(value[1]), step=step)
    if not isinstance(value, dict):
        return Message("message", as_text(value), step=step)
    value = _envelope(value) or value

    def text(name: str) -> str | None:
        found = value.get(name)
        return found if isinstance(found, str) else None

    if "content" in value or "text" in value:
        said = _content_text(value.get("content", value.get("text")))
    else:  # not a message: what it holds
        said = as_text(value)
    return Message(
        _role(value),
        said,
        id=text("id"),
        name=text("name"),
        tool_calls=_tool_calls(value.get("tool_calls")),
        tool_call_id=text("tool_call_id"),
        step=step,
    )


def said(message: Message) -> str:
    """What a message says, in one line: its text, or the calls it makes."""
    if message.text.strip():
        return message.text
    calls = ", ".join(f"{call.name}({as_text(call.arguments)})" for call in message.tool_calls)
    return f"calls {calls}" if calls else message.text


def question_text(question: Any) -> str | None:
    """An interrupt's question as text: itself, or its question/message/text field."""
    if isinstance(question, str):
        return question
    if isinstance(question, dict):
        for name in ("question", "message", "text", "prompt"):
            if isinstance(question.get(name), str):
                return str(question[name])
    return None
