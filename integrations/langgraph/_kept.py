"""Pending writes the LangGraph saver kept as channel values, read the one way the saver
and the presenter both read them (no LangGraph import: the explorer loads the presenter
without it).

The saver keeps a write of a dict of many members (with the stock serde) beside its
event instead of in it: stored as a channel value under a ``write/<idx>/<channel>`` key
of the branch that stores the event, the event's payload naming where, ``"value_at":
[key, version]``. :func:`kept_at` says where (or that the payload names no such place),
:func:`read_kept` reads what is stored there; each reader decodes it its own way (the
saver through the serde, the presenter as data).
"""

from __future__ import annotations

from typing import Any

import rewinddb

#: The payload field that names where a kept write's value is.
VALUE_AT = "value_at"


def kept(payload: Any) -> bool:
    """Whether a write event's payload says its value is kept elsewhere (``value_at``),
    in the shape :func:`kept_at` reads or not."""
    return isinstance(payload, dict) and VALUE_AT in payload


def kept_at(payload: Any) -> tuple[str, int] | None:
    """``(key, version)`` where a write event's payload says its value is kept: its
    ``value_at``, a text key and an int version as the saver writes them. None when the
    payload names no place, or names one in any other shape (damaged)."""
    at = payload.get(VALUE_AT) if isinstance(payload, dict) else None
    if type(at) is list and len(at) == 2 and type(at[0]) is str and type(at[1]) is int:
        return at[0], at[1]
    return None


def place(key: str, version: int) -> list[Any]:
    """The ``value_at`` of a value kept under ``key`` at ``version``."""
    return [key, version]


def read_kept(db: rewinddb.Database, branch: str, at: tuple[str, int]) -> Any:
    """The stored value kept at ``at`` (:func:`kept_at`'s) on ``branch``, the branch
    that stored the write's event (a copied thread's checkpoint names its source's): as
    ``kv.get`` reads it there, None when nothing is; a read that cannot be made (the
    branch deleted, its history pruned) raises ``kv.get``'s ``RewindError``."""
    key, version = at
    return db.at(branch).kv.get(key, as_of=version)
