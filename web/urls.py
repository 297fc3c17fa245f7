"""URLs of the explorer's pages. Branch names and keys may hold any text (LangGraph's
branches hold ``/`` and ``~``), so they are tilde-encoded into one path segment, as
Datasette does: every byte outside ``A-Za-z0-9_-`` becomes ``~XX``. An encoded name has
no ``.``, so ``/branches/NAME.json`` is always the JSON twin of ``/branches/NAME``."""

from __future__ import annotations

import re
from urllib.parse import urlencode

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ESCAPE = re.compile(r"~([0-9A-Fa-f]{2})")


class BadSegment(ValueError):
    """A path segment that is not a tilde-encoded name."""


def tilde_encode(text: str) -> str:
    return "".join(chr(byte) if byte in _SAFE else f"~{byte:02X}" for byte in text.encode("utf-8"))


def tilde_decode(segment: str) -> str:
    if not segment or not set(_ESCAPE.sub("", segment).encode("utf-8")) <= _SAFE:
        raise BadSegment(f"{segment!r} is not a tilde-encoded name")
    raw = bytearray()
    position = 0
    for match in _ESCAPE.finditer(segment):
        raw += segment[position : match.start()].encode()
        raw.append(int(match.group(1), 16))
        position = match.end()
    raw += segment[position:].encode()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadSegment(f"{segment!r} does not decode to UTF-8 text") from None


def branch_url(branch: str, suffix: str = "") -> str:
    return f"/branches/{tilde_encode(branch)}{suffix}"


def event_url(branch: str, sequence: int, suffix: str = "") -> str:
    return f"{branch_url(branch)}/events/{sequence}{suffix}"


def key_url(branch: str, space: str, key: str, suffix: str = "") -> str:
    return f"{branch_url(branch)}/keys/{tilde_encode(key)}{suffix}?{urlencode({'space': space})}"


def step_url(branch: str, version: int, suffix: str = "") -> str:
    """The page of the step of ``branch`` at ``version`` (a checkpoint, or a commit)."""
    return f"{branch_url(branch)}/steps/{version}{suffix}"


def steps_url(branch: str, suffix: str = "", before: int | None = None) -> str:
    """A page of ``branch``'s steps: the newest, or those older than version ``before``."""
    query = "" if before is None else f"?{urlencode({'before': before})}"
    return f"{branch_url(branch)}/steps{suffix}{query}"


def transcript_url(branch: str, suffix: str = "", before: int | None = None) -> str:
    """A page of ``branch``'s conversation: the newest messages, or those before
    position ``before``."""
    query = "" if before is None else f"?{urlencode({'before': before})}"
    return f"{branch_url(branch)}/transcript{suffix}{query}"


def point_text(branch: str, version: int) -> str:
    """``BRANCH@VERSION``, how the compare page names a point."""
    return f"{branch}@{version}"


def compare_url(a: str, b: str, suffix: str = "") -> str:
    return f"/compare{suffix}?{urlencode({'a': a, 'b': b})}"
