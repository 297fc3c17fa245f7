"""How LangGraph values are stored as rewinddb JSON.

Every value goes through the saver's serde (``dumps_typed`` -> ``(type, bytes)``) and is
stored as ``[type, base64]``. A list channel value is stored item by item,
``{"type": "list", "items": [[type, base64], ...]}``, so that a list that only grew
between two checkpoints (``messages`` with ``add_messages``) is a JSON list that only grew:
rewinddb then stores just the appended items.
"""

from __future__ import annotations

import base64
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol

Typed = list[str]


def dump_typed(serde: SerializerProtocol, value: Any) -> Typed:
    """``value`` as ``[type, base64 of its bytes]``."""
    kind, data = serde.dumps_typed(value)
    return [kind, base64.b64encode(data).decode("ascii")]


def load_typed(serde: SerializerProtocol, stored: Any) -> Any:
    """The inverse of :func:`dump_typed`."""
    kind, data = stored
    return serde.loads_typed((kind, base64.b64decode(data)))


def dump_channel(serde: SerializerProtocol, value: Any, version: str | int | float) -> dict:
    """A channel value at one channel version, lists item by item."""
    if isinstance(value, list):
        return {
            "version": version,
            "type": "list",
            "items": [dump_typed(serde, item) for item in value],
        }
    return {"version": version, "type": "value", "value": dump_typed(serde, value)}


def load_channel(serde: SerializerProtocol, stored: dict) -> Any:
    """The inverse of :func:`dump_channel`."""
    if stored["type"] == "list":
        return [load_typed(serde, item) for item in stored["items"]]
    return load_typed(serde, stored["value"])
