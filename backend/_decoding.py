"""Stored values as people read them: the installed presenters' decoders, asked in order.

A presenter (``rewinddb.presenters.Presenter``) describes a framework's branches and
decodes the values it stores. The diff engine and the HTML renderings sit below the
database that presenters describe, and need only the decoding: so the part of a presenter
they call (:class:`Decoder`) and the registry of installed presenters live here, below
both, and ``rewinddb.presenters`` builds on them.

Presenters are found through the ``rewinddb.presenters`` entry point group (each entry
names a presenter class or instance) and ``rewinddb.presenters.register``; an entry whose
module cannot be imported (its framework is not installed) is skipped.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

ENTRY_POINT_GROUP = "rewinddb.presenters"


class Decoder:
    """What a presenter knows of values: how people read the encodings its framework
    stores. This base class decodes nothing; every ``Presenter`` is one."""

    def display(self, value: Any, memo: dict[Any, Any] | None = None) -> Any:
        """``value`` with the encodings this presenter knows decoded for people (the same
        object when there are none); ``memo`` decodes shared parts once."""
        return value

    def value_text(self, value: Any) -> str | None:
        """A decoded value this presenter recognizes, as the line a person reads (a chat
        message as ``ai: Have a good trip``), or None. The front ends show that line
        where the value appears in a state or a diff, its JSON behind a toggle."""
        return None

    def encoded(self, value: Any) -> bool:
        """Whether ``value`` itself (not something inside it) is one of the encodings
        ``display`` decodes. A readable diff compares stored values first and decodes
        only where they differ, down to these: a list that grew by one encoded message
        decodes one message, not the whole list."""
        return False


@dataclass
class _Registry:
    """The presenters in the order they are asked. ``decoders`` is replaced, never
    changed in place, so readers (every decoded value asks it) take no lock."""

    decoders: tuple[Decoder, ...] = ()
    loaded: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


_registry = _Registry()


def registered() -> tuple[Decoder, ...]:
    """The presenters in the order they are asked, the entry points' loaded on first use."""
    if not _registry.loaded:
        with _registry.lock:
            if not _registry.loaded:
                _registry.decoders = (*_registry.decoders, *_from_entry_points())
                _registry.loaded = True
    return _registry.decoders


def add(decoder: Decoder) -> None:
    """Ask ``decoder`` before the ones registered earlier (the entry points' included)."""
    registered()  # the entry points first, so a presenter registered by hand wins
    with _registry.lock:
        _registry.decoders = (decoder, *_registry.decoders)


def remove(decoder: Decoder) -> None:
    """Stop asking ``decoder``."""
    with _registry.lock:
        _registry.decoders = tuple(d for d in _registry.decoders if d is not decoder)


def _from_entry_points() -> list[Decoder]:
    found = []
    for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            loaded = entry.load()
        except ImportError:  # its framework is not installed: the generic one shows it
            continue
        decoder = loaded() if isinstance(loaded, type) else loaded
        if isinstance(decoder, Decoder):
            found.append(decoder)
    return found


def value_text(value: Any) -> str | None:
    """The line the first registered presenter that recognizes ``value`` reads it as
    (see ``Decoder.value_text``), or None."""
    for decoder in registered():
        text = decoder.value_text(value)
        if text is not None:
            return text
    return None


def encoded(value: Any) -> bool:
    """Whether some registered presenter decodes ``value`` as a whole."""
    return any(decoder.encoded(value) for decoder in registered())


def readable(value: Any, memo: dict[Any, Any] | None = None) -> Any:
    """``value`` as people read it: every registered presenter's encodings decoded
    (LangGraph's serde, when its integration is installed); the same object when there
    is nothing to decode. Decode a stored value once, at its top."""
    for decoder in registered():
        value = decoder.display(value, memo)
    return value
