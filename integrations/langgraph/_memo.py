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

    def __init__(self, db: rewinddb.Database) -> None:
        self.db = db
        self._mark: tuple[int, int, int] | None = None
        self._values: dict[Hashable, Any] = {}
        # The calling thread's view while it writes or reads: (answers, staged or None).
        self._local = threading.local()

    def forget(self) -> None:
        self._mark, self._values = None, {}
        self._local.view = None

    def begin(self) -> None:
        """Inside the saver's write transaction: use what is known if nothing else wrote
        since, and stage what this write makes known."""
        mark = self.db.change_mark()
        if mark is None or mark != self._mark:
            self.forget()
        self._local.view = (self._values, {})

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
        values = {**self._values, **staged} if len(self._values) < self.limit else staged
        self._mark = None  # a reader trusts the answers only once the mark matches again
        self._values = values
        self._mark = mark

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
