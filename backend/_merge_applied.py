"""The changes a merge applied (``MergeReceipt.applied``), built when first read.

A merge of k changed keys into a target that left them alone applies each as a whole:
the receipt's change of such a key is (base value -> source value), and the merge itself
never needs those values (it copies the source's stored entry). Decoding both sides of
every key only to build a receipt nobody reads cost more than the rest of the merge, so
the receipt holds their stored forms and decodes them, all in one call, the first time
anything but its length (or its keys) is asked for. It is a ``list`` of ``MergeChange``
like any other (``isinstance``, ``==``, iteration, indexing, ``repr``, pickling, copying
and ``dataclasses.asdict`` see the full list); what it would decode is the stored JSON
or bytes the merge read, so reading it later needs no database.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

#: Held while a list builds its items (``AppliedChanges._fill``).
_BUILDING = threading.Lock()

#: A change still in stored form: (primitive, key, base form, source form), each form
#: (kind, body, refs) or None for no value; its path is ``$``.
Pending = tuple[str, str, Any, Any]


class AppliedChanges(list):  # (of MergeChange)
    """``list[MergeChange]`` whose items may wait in stored form (``Pending``) until read.

    ``len()``, truth and :meth:`keys` answer without decoding; every other use of the
    list first builds its items, in order, and from then on it is a plain list."""

    # (Class defaults: a copy or an unpickled one gets its items before its attributes.)
    _pending: list[Any] | None = None
    _build: Callable[[list[Any]], list[Any]] | None = None

    def __init__(
        self,
        items: Iterable[Any] = (),
        *,
        pending: list[Any] | None = None,
        build: Callable[[list[Any]], list[Any]] | None = None,
    ) -> None:
        """``items``: a list's items (as ``list(items)``). ``pending``: the changes in
        order, each a ``MergeChange`` or a ``Pending`` tuple; ``build`` turns that list
        into the changes (``merge._build_applied``)."""
        super().__init__(items)
        self._pending = pending
        self._build = build

    def _fill(self) -> None:
        """Build the items (once, whichever thread asks first; a build that fails, on a
        damaged value, leaves them waiting: the next use fails the same way)."""
        with _BUILDING:
            pending, build = self._pending, self._build
            if pending is None:
                return  # (another thread built them)
            built = build(pending) if pending and build is not None else []
            list.extend(self, built)
            self._pending = self._build = None

    def __len__(self) -> int:
        pending = self._pending
        return list.__len__(self) if pending is None else len(pending)

    def keys(self) -> list[str]:
        """The keys of the changes, in order (one per change), without decoding."""
        pending = self._pending
        if pending is None:
            return [change.key for change in list.__iter__(self)]
        return [item[1] if type(item) is tuple else item.key for item in pending]


def _filled(name: str) -> Callable[..., Any]:
    method = getattr(list, name)

    def call(self: AppliedChanges, *args: Any, **kwargs: Any) -> Any:
        if self._pending is not None:
            self._fill()
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
