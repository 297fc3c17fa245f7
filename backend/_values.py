"""What a value may be, and its canonical encoding.

Values are JSON (dicts with string keys, lists, str, int, finite float, bool, None) or
raw ``bytes``. Anything else is refused *before* anything is written. JSON is encoded
with orjson with sorted keys, so equal values have equal bytes (hashes and merges rely
on that) and documents come back with their keys in sorted order.
"""

from __future__ import annotations

import math
from itertools import chain
from typing import Any

import orjson

from .errors import InvalidValueError

_DUMPS_OPTIONS = orjson.OPT_SORT_KEYS
_SCALARS = (str, bool, int, type(None))
_MAX_INT = 2**63 - 1
#: Deeper values are refused (orjson's own limit is 255; self-containing lists never end).
MAX_DEPTH = 128
_MIN_INT = -(2**63)
#: Children of these exact types need no look of their own (``_is_json_value``).
_LEAVES = frozenset((str, bool, type(None)))
_NUMBERS_AND_LEAVES = _LEAVES | {int, float}
_LISTS = frozenset((list,))
_TEXT = frozenset((str,))


def validate(value: Any, *, allow_bytes: bool = True, depth: int = 0) -> None:
    """Raise ``InvalidValueError`` naming the first part of ``value`` that is not JSON.

    ``depth``: how deep in a document the value will be stored (a JSONPath's length).
    """
    if allow_bytes and isinstance(value, (bytes, bytearray, memoryview)):
        return
    if _is_json_value(value, depth):
        return
    _explain(value, depth)
    # _is_json_value and _explain disagree: refuse rather than store something unchecked.
    raise InvalidValueError("the value is not a JSON value")


def _is_json_value(value: Any, depth: int) -> bool:
    """Whether :func:`_explain` accepts ``value``; the same rules, without building the
    path of every part (most values are valid, and large ones have many parts)."""
    stack: list[tuple[Any, int]] = [(value, depth)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth > MAX_DEPTH:
            return False
        kind = type(item)
        if kind is dict:
            children: Any = item.values()
            if not set(map(type, item)) <= _TEXT and not all(isinstance(k, str) for k in item):
                return False
        elif kind is list or kind is tuple:
            children = item
        elif kind is str or kind is bool or item is None:
            continue
        elif kind is int:
            if not _MIN_INT <= item <= _MAX_INT:
                return False
            continue
        elif kind is float:
            if not math.isfinite(item):
                return False
            continue
        else:  # subclasses of the JSON types, and everything else
            if not _explained_ok(item, depth):
                return False
            continue
        if not children:
            continue
        depth += 1
        if depth > MAX_DEPTH:
            return False
        # The types of the children at once (in C): a list of texts, a dict of numbers
        # or a list of [key, text] pairs costs no Python step per child.
        kinds = set(map(type, children))
        if kinds <= _LEAVES:
            continue
        if (
            kinds == _LISTS
            and depth < MAX_DEPTH  # their own children are not too deep either
            and set(map(type, chain.from_iterable(children))) <= _LEAVES
        ):
            continue  # lists of leaves
        if kinds <= _NUMBERS_AND_LEAVES:
            if not all(map(_number_fits, children)):
                return False
            continue
        for child in children:
            kind = type(child)
            if kind is str or kind is bool or child is None:
                continue
            push((child, depth))
    return True


def _number_fits(value: Any) -> bool:
    """Whether a leaf or number child is JSON we store (an int of 64 bits, a finite float)."""
    kind = type(value)
    if kind is int:
        return bool(_MIN_INT <= value <= _MAX_INT)
    if kind is float:
        return math.isfinite(value)
    return True


def _explained_ok(item: Any, depth: int) -> bool:
    try:
        _explain(item, depth)
    except InvalidValueError:
        return False
    return True


def _explain(value: Any, depth: int) -> None:
    """Raise ``InvalidValueError`` naming the first part of ``value`` that is not JSON."""
    stack: list[tuple[Any, str, int]] = [(value, "$", depth)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidValueError(
                f"the value is nested deeper than {MAX_DEPTH} levels at {where} "
                "(or contains itself)"
            )
        if isinstance(item, _SCALARS):
            if isinstance(item, int) and not _MIN_INT <= item <= _MAX_INT:
                raise InvalidValueError(
                    f"integer at {where} does not fit in 64 bits; store it as a string"
                )
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidValueError(
                    f"{item!r} at {where} is not JSON (NaN and Infinity are refused); "
                    "store None or a string instead"
                )
            continue
        if isinstance(item, dict):
            for k, v in item.items():
                if not isinstance(k, str):
                    raise InvalidValueError(
                        f"object key {k!r} at {where} is not a string; JSON keys are strings"
                    )
                stack.append((v, f"{where}.{k}", depth + 1))
            continue
        if isinstance(item, (list, tuple)):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))
            continue
        raise InvalidValueError(
            f"{type(item).__name__} at {where} is not a JSON value (use dict, list, str, "
            "int, float, bool or None; bytes only as a whole value)"
        )


def height(value: Any) -> int:
    """How many levels of containers a validated JSON value has below its top (0 for a
    scalar or an empty container): ``validate(value, depth=d)`` refuses it as too deep
    exactly when ``d + height(value) > MAX_DEPTH``. The importer uses it to find the
    deepest item of a shared array, which it then validates at the array's depth."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((child, level + 1) for child in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((child, level + 1) for child in item)
    return deepest


def dumps(value: Any) -> bytes:
    """Canonical JSON bytes of an already validated value."""
    try:
        return orjson.dumps(value, option=_DUMPS_OPTIONS)
    except orjson.JSONEncodeError as error:  # e.g. a string with a lone surrogate
        raise InvalidValueError(f"the value cannot be stored as JSON: {error}") from None


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def jsonable(value: Any) -> Any:
    """``value`` for JSON output: bytes become ``{"$bytes": "<hex>"}``."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": bytes(value).hex()}
    return value


def same(a: Any, b: Any) -> bool:
    """Equal as stored values (``1``, ``1.0`` and ``True`` are different JSON).

    ``MISSING``-style sentinels are compared by identity.
    """
    if a is b:
        return True
    if isinstance(a, (bytes, bytearray)) or isinstance(b, (bytes, bytearray)):
        return isinstance(a, (bytes, bytearray)) and isinstance(b, (bytes, bytearray)) and a == b
    if not _is_json(a) or not _is_json(b):
        return False
    return dumps(a) == dumps(b)


def _is_json(value: Any) -> bool:
    return isinstance(value, (dict, list, tuple, str, int, float, type(None)))


def short_text(value: Any, limit: int = 120) -> str:
    """A one-line rendering of a value, shortened to ``limit`` characters."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        text = f"bytes[{len(value)}]"
    else:
        text = dumps(value).decode()
    return text if len(text) <= limit else text[: limit - 3] + "..."
