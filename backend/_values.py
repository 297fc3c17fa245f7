"""What a value may be, and its canonical encoding.

Values are JSON (dicts with string keys, lists, str, int, finite float, bool, None) or
raw ``bytes``. Anything else is refused *before* anything is written. JSON is encoded
with orjson with sorted keys, so equal values have equal bytes (hashes and merges rely
on that) and documents come back with their keys in sorted order.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from .errors import InvalidValueError

_DUMPS_OPTIONS = orjson.OPT_SORT_KEYS
_SCALARS = (str, bool, int, type(None))
_MAX_INT = 2**63 - 1
_MIN_INT = -(2**63)


def validate(value: Any, *, allow_bytes: bool = True) -> None:
    """Raise ``InvalidValueError`` naming the first part of ``value`` that is not JSON."""
    if allow_bytes and isinstance(value, (bytes, bytearray, memoryview)):
        return
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        item, where = stack.pop()
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
                stack.append((v, f"{where}.{k}"))
            continue
        if isinstance(item, (list, tuple)):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
            continue
        raise InvalidValueError(
            f"{type(item).__name__} at {where} is not a JSON value (use dict, list, str, "
            "int, float, bool or None; bytes only as a whole value)"
        )


def dumps(value: Any) -> bytes:
    """Canonical JSON bytes of an already validated value."""
    return orjson.dumps(value, option=_DUMPS_OPTIONS)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def canonical(value: Any) -> Any:
    """The value as it reads back after storage: tuples become lists, keys sorted."""
    return orjson.loads(dumps(value))


def jsonable(value: Any) -> Any:
    """``value`` for JSON output: bytes become ``{"$bytes": "<hex>"}``."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": bytes(value).hex()}
    return value
