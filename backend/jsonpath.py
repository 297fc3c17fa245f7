"""The JSONPath subset documents are addressed with.

Supported: ``$`` (the whole document), ``$.a.b`` (object members), ``$.a[0]`` (array
items, 0-based), and ``$['key with space']`` / ``$["k"]`` (any member name). Setting a
path creates the objects that are missing on the way; it never invents arrays.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ._engine import MISSING
from .errors import InvalidJSONPathError

Token = str | int
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_INDEX = re.compile(r"\[(\d+)\]")


def parse(path: str) -> tuple[Token, ...]:
    """Split a path into member names (str) and array indexes (int)."""
    if not isinstance(path, str):
        raise InvalidJSONPathError(f"a JSON path is a string like '$.a.b', not {path!r}")
    return _parse(path)


@lru_cache(maxsize=4096)
def _parse(path: str) -> tuple[Token, ...]:
    if not path.startswith("$"):
        raise InvalidJSONPathError(f"JSON path {path!r} must start with '$'")
    tokens: list[Token] = []
    pos = 1
    while pos < len(path):
        char = path[pos]
        if char == ".":
            match = _NAME.match(path, pos + 1)
            if match is None:
                raise InvalidJSONPathError(
                    f"JSON path {path!r}: expected a member name at position {pos + 1} "
                    "(use $['...'] for names with other characters)"
                )
            tokens.append(match.group())
            pos = match.end()
        elif path.startswith("['", pos) or path.startswith('["', pos):
            quote = path[pos + 1]
            name, pos = _quoted(path, pos + 2, quote)
            tokens.append(name)
        elif char == "[":
            match = _INDEX.match(path, pos)
            if match is None:
                raise InvalidJSONPathError(
                    f"JSON path {path!r}: expected [index] or ['name'] at position {pos} "
                    "(indexes are whole numbers from 0; wildcards and filters are not supported)"
                )
            tokens.append(int(match.group(1)))
            pos = match.end()
        else:
            raise InvalidJSONPathError(f"JSON path {path!r}: unexpected {char!r} at position {pos}")
    return tuple(tokens)


def _quoted(path: str, pos: int, quote: str) -> tuple[str, int]:
    chars: list[str] = []
    while pos < len(path):
        char = path[pos]
        if char == "\\" and pos + 1 < len(path):
            chars.append(path[pos + 1])
            pos += 2
            continue
        if char == quote:
            if path[pos + 1 : pos + 2] != "]":
                break
            return "".join(chars), pos + 2
        chars.append(char)
        pos += 1
    raise InvalidJSONPathError(f"JSON path {path!r}: unterminated quoted name")


def format_path(tokens: tuple[Token, ...] | list[Token]) -> str:
    """The canonical text of a parsed path (``$.a['b c'][0]``)."""
    parts = ["$"]
    for token in tokens:
        if isinstance(token, int):
            parts.append(f"[{token}]")
        elif _NAME.fullmatch(token):
            parts.append(f".{token}")
        else:
            escaped = token.replace("\\", "\\\\").replace("'", "\\'")
            parts.append(f"['{escaped}']")
    return "".join(parts)


def get(document: Any, tokens: tuple[Token, ...]) -> Any:
    """The value at ``tokens``, or ``MISSING`` if the path leads nowhere."""
    node = document
    for token in tokens:
        if isinstance(token, int):
            if not isinstance(node, list) or token >= len(node):
                return MISSING
        elif not isinstance(node, dict) or token not in node:
            return MISSING
        node = node[token]
    return node


def set_value(document: Any, tokens: tuple[Token, ...], value: Any, path: str) -> Any:
    """A copy of ``document`` with ``value`` at ``tokens`` (missing objects created)."""
    if not tokens:
        return value
    token, rest = tokens[0], tokens[1:]
    if document is MISSING:
        if isinstance(token, int):
            raise InvalidJSONPathError(
                f"JSON path {path!r}: cannot create an array item where nothing exists; "
                "set the array first"
            )
        document = {}
    if isinstance(token, int):
        if not isinstance(document, list):
            raise InvalidJSONPathError(
                f"JSON path {path!r}: [{token}] indexes an array, but the value there is "
                f"{_kind(document)}"
            )
        if token > len(document):
            raise InvalidJSONPathError(
                f"JSON path {path!r}: index {token} is past the end of an array of "
                f"{len(document)} (use index {len(document)} to append)"
            )
        copy_list = list(document)
        child = copy_list[token] if token < len(copy_list) else MISSING
        new_child = set_value(child, rest, value, path)
        if token == len(copy_list):
            copy_list.append(new_child)
        else:
            copy_list[token] = new_child
        return copy_list
    if not isinstance(document, dict):
        raise InvalidJSONPathError(
            f"JSON path {path!r}: .{token} names an object member, but the value there is "
            f"{_kind(document)}"
        )
    copy_dict = dict(document)
    copy_dict[token] = set_value(document.get(token, MISSING), rest, value, path)
    return copy_dict


def delete_value(document: Any, tokens: tuple[Token, ...]) -> tuple[Any, bool]:
    """A copy of ``document`` without the value at ``tokens``; False if nothing was there."""
    if not tokens:
        return MISSING, document is not MISSING
    token, rest = tokens[0], tokens[1:]
    if isinstance(token, int):
        if not isinstance(document, list) or token >= len(document):
            return document, False
        copy_list = list(document)
        if rest:
            copy_list[token], removed = delete_value(copy_list[token], rest)
        else:
            del copy_list[token]
            removed = True
        return copy_list, removed
    if not isinstance(document, dict) or token not in document:
        return document, False
    copy_dict = dict(document)
    if rest:
        copy_dict[token], removed = delete_value(copy_dict[token], rest)
    else:
        del copy_dict[token]
        removed = True
    return copy_dict, removed


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__
