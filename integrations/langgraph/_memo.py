"""What the saver itself wrote last, kept while nothing else writes to the database.

A put reads back what the saver's previous write made: the namespace's and the parent's
index records, the branch's newest checkpoint and its number of events; a put_writes
reads the checkpoint's record and the writes it already has. While ``db.change_mark()``
is what it was when the saver last committed, nothing else has written since (no other
code on this connection, no other process), so those answers come from here instead of
the database. Any doubt forgets everything: another writer, a failed write, a delete, a
copy. PostgreSQL has no cheap mark, so there nothing is kept.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from typing import Any

import rewinddb

#: What :meth:`Memo.get` returns for a key it does not know.
MISSING: Any = object()


class Memo:
    """Answers keyed by what they answer (``("index", key)``, ``("head", branch)``, ...),
    valid while the database's change mark is ``self._mark``."""

    #: Forget everything rather than grow past this many answers.
    limit = 20_000
    #: Answers of these kinds hold whole channel values (``("keys", branch)``): forget
    #: them all rather than keep them for more than ``big_limit`` branches, so memory
    #: stays bounded however many threads one saver serves.
    big_kinds = frozenset({"keys"})
    big_limit = 64

    def __init__(self, db: rewinddb.Database) -> None:
        self.db = db
        self._mark: tuple[int, int, int] | None = None
        self._values: dict[Hashable, Any] = {}
        self._big = 0  # how many answers of ``big_kinds`` ``_values`` holds
        # The calling thread's view while it writes or reads: (answers, staged or None).
        self._local = threading.local()

    def forget(self) -> None:
        self._mark, self._values, self._big = None, {}, 0
        self._local.view = None

    def begin(self) -> None:
        """Inside the saver's write transaction: use what is known if nothing else wrote
        since, and stage what this write makes known."""
        mark = self.db.change_mark()
        self._local.trusted = mark is not None and mark == self._mark
        if not self._local.trusted:
            self.forget()
        self._local.view = (self._values, {})

    def trusted(self) -> bool:
        """Whether the current write began with what is known still true (nothing else
        wrote since the saver's last write): only then is more worth remembering."""
        return bool(getattr(self._local, "trusted", False)) and self.writing()

    def end(self) -> tuple[dict[Hashable, Any], tuple[int, int, int] | None]:
        """After the write's last statement, still inside its transaction: what it
        staged, and the mark the database has once it commits."""
        view = getattr(self._local, "view", None)
        self._local.view = None
        return (view[1] if view else {}), self.db.change_mark()

    def keep(self, ended: tuple[dict[Hashable, Any], tuple[int, int, int] | None]) -> None:
        """The write committed: what it staged is now known."""
        staged, mark = ended
        if mark is None:
            return
        old = self._values if len(self._values) < self.limit else {}
        big = (0 if old is not self._values else self._big) + sum(
            1 for key in staged if key not in old and self._is_big(key)
        )
        values = {**old, **staged}
        if big > self.big_limit:
            values = {key: value for key, value in values.items() if not self._is_big(key)}
            big = 0
        self._mark = None  # a reader trusts the answers only once the mark matches again
        self._values, self._big = values, big
        self._mark = mark

    def _is_big(self, key: Hashable) -> bool:
        return isinstance(key, tuple) and bool(key) and key[0] in self.big_kinds

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Inside ``db.read()``: use what is known if nothing wrote since."""
        mark = self.db.change_mark()
        current = mark is not None and mark == self._mark
        self._local.view = (self._values, None) if current else None
        try:
            yield
        finally:
            self._local.view = None

    def writing(self) -> bool:
        """Whether the calling thread is inside a write that began here."""
        view = getattr(self._local, "view", None)
        return view is not None and view[1] is not None

    def get(self, key: Hashable) -> Any:
        view = getattr(self._local, "view", None)
        if view is None:
            return MISSING
        values, staged = view
        if staged is not None and key in staged:
            return staged[key]
        return values.get(key, MISSING)

    def put(self, key: Hashable, value: Any) -> None:
        """Record an answer read or written inside the current write (nothing else)."""
        view = getattr(self._local, "view", None)
        if view is not None and view[1] is not None:
            view[1][key] = value
