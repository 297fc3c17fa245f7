"""The changes a merge applied (``MergeReceipt.applied``), decoded when first read.

A merge of k changed keys into a target that left them alone applies each as a whole:
the receipt's change of such a key is (base value -> source value), and the merge itself
never needs those values (it copies the source's stored entry). Decoding both sides of
every key only to build a receipt nobody reads cost more than the rest of the merge, so
the receipt holds their stored forms (``PendingChange``) and decodes them all, in one
call, the first time anything but its length (or its keys) is asked for. It is a
``list`` of ``MergeChange`` like any other (``isinstance``, ``==`` either way round,
iteration, indexing, slicing, ``+``, ``repr``, pickling, copying, ``json.dumps`` and
``dataclasses.asdict`` see the built list); what it decodes is the stored JSON or bytes
the merge read, so reading it later needs no database. The one use that reads a list's
items without asking it, ``orjson.dumps`` of an unbuilt list, fails loudly (a
``PendingChange`` is not JSON) rather than write something else.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

#: Held while a list builds its items (``AppliedChanges._fill``).
_BUILDING = threading.Lock()


class PendingChange:
    """A whole value's change not decoded yet: ``primitive``, ``key`` and the stored forms
    (kind, body, refs) of its ``base`` and ``source`` values (None: no value)."""

    __slots__ = ("base", "key", "primitive", "source")

    def __init__(self, primitive: str, key: str, base: Any, source: Any) -> None:
        self.primitive, self.key, self.base, self.source = primitive, key, base, source

    def __repr__(self) -> str:
        return f"PendingChange({self.primitive!r}, {self.key!r})"


class AppliedChanges(list):  # (of MergeChange)
    """``list[MergeChange]`` whose items may be ``PendingChange`` until it is first read.

    ``len()``, truth and :meth:`keys` answer without decoding; every other use of the
    list (or of another such list it meets) first builds its items, in place and in
    order, and from then on it is a plain list."""

    # (Class defaults: a copy or an unpickled one gets its items before its attributes.)
    _build: Callable[[list[Any]], list[Any]] | None = None

    def __init__(
        self,
        items: Iterable[Any] = (),
        *,
        build: Callable[[list[Any]], list[Any]] | None = None,
    ) -> None:
        """``items``: the changes in order, each a ``MergeChange`` or (with ``build``) a
        ``PendingChange``; ``build`` turns the list of them into the changes
        (``merge._build_applied``). Without ``build``, it is ``list(items)``."""
        super().__init__(items)
        self._build = build

    def _fill(self) -> None:
        """Build the items (once, whichever thread asks first; a build that fails, on a
        damaged value, leaves them waiting: the next use fails the same way)."""
        with _BUILDING:
            build = self._build
            if build is None:
                return  # (another thread built them)
            built = build(list(list.__iter__(self)))
            list.__setitem__(self, slice(None), built)
            self._build = None

    def keys(self) -> list[str]:
        """The keys of the changes, in order (one per change), without decoding."""
        return [change.key for change in list.__iter__(self)]

    def __radd__(self, other: Any) -> Any:
        if not isinstance(other, list):
            return NotImplemented
        if self._build is not None:
            self._fill()
        return list.__add__(other, self)


def _filled(name: str) -> Callable[..., Any]:
    method = getattr(list, name)

    def call(self: AppliedChanges, *args: Any, **kwargs: Any) -> Any:
        if self._build is not None:
            self._fill()
        for other in args:  # (``==``, ``+``, ... read the other list's items directly)
            if type(other) is AppliedChanges and other._build is not None:
                other._fill()
        return method(self, *args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = method.__doc__
    return call


# Everything a list does but tell its length: with its items built first.
for _name in (
    "__getitem__",
    "__iter__",
    "__reversed__",
    "__contains__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__repr__",
    "__add__",
    "__mul__",
    "__rmul__",
    "__iadd__",
    "__imul__",
    "__setitem__",
    "__delitem__",
    "__reduce_ex__",
    "__sizeof__",
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "reverse",
    "sort",
    "index",
    "count",
    "copy",
):
    setattr(AppliedChanges, _name, _filled(_name))
del _name
