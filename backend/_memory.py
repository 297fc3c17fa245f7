"""What one connection remembers of its database between statements, under one rule.

The rule: an answer is true while the connection's change token is what it was when the
answer was stored. The token (``Connection.change_token``) stays the same while no other
connection can have committed: SQLite's ``PRAGMA data_version``, read once per
transaction; on a backend without one, the serial of this connection's write transaction
while it holds the write lock, and nothing outside one. So:

- another connection's commit (another process, another ``open()``) drops everything;
- this connection's own writes keep true what they change by writing it through
  (``put``) in their transaction, or by dropping it (``forget``, ``clear``);
- a rollback drops everything (its rows' ids are reused by later writes);
- an answer read outside a transaction is stored only if the token did not move since
  the ``get`` that missed it (another connection may have committed in between).

A block of reads (``reading``) asks for the token once, at its start (or takes the one
its caller has just asked for); inside it ``answers`` gives every answer held (or none,
if the token moved) for a read that looks up several at once (``Engine.read_key``: the
branch, the clock, the key's newest entry). Outside a block, ``held_under(token)`` gives
them for a token the caller has just read, and ``held()`` gives them with the token they
are held under, unasked, to a caller that reads the token in the same statement as its
rows and uses neither the answers nor the rows unless it is that token (``Engine.
read_past``): the same rule, checked in the statement's snapshot.

Everything the engine keeps (branch records, the clock with the newest commit's time and
each branch's chain head, which allocate the next commit without reading them, the newest
entry of keys, the end of event logs, the arrays it wrote) lives here, each under a named
slot, so that there is one place to look at and one rule to test
(``tests/backend/test_memory.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

#: What :meth:`Memory.get` returns for an answer it does not hold.
UNKNOWN: Any = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN", "__slots__": ()})()
#: ``Memory.reading``'s default: the block asks for the token itself.
_ASK: Any = type("Ask", (), {"__repr__": lambda self: "ASK", "__slots__": ()})()
#: What ``Memory.answers`` gives when nothing held is true.
_NOTHING: Mapping[Any, Any] = MappingProxyType({})


class Memory:
    """Answers by (slot, key), valid while the change token is unchanged.

    Bounded: past ``limit`` answers or ``byte_limit`` bytes (as the callers count them)
    it forgets everything and starts again, rather than grow with the database.
    """

    limit = 100_000
    byte_limit = 64 * 1024 * 1024

    def __init__(
        self, token: Callable[[], Hashable | None], rolled_back: list[Callable[[], None]]
    ) -> None:
        """``token`` reads the connection's change token; ``rolled_back`` is the list of
        callbacks its rollbacks call, where this memory adds its ``clear``."""
        self._change_token = token
        self._token: Hashable | None = None
        self._answers: dict[tuple[str, Hashable], Any] = {}
        self._sizes: dict[tuple[str, Hashable], int] = {}  # of the answers with a size
        self._bytes = 0
        #: The token read once for a block of reads (``reading``), boxed (it may be None).
        self._read_once: tuple[Hashable | None] | None = None
        self._read_depth = 0  # how many ``reading`` blocks are open
        self._given: Any = _ASK  # the token ``reading`` was given for its block
        rolled_back.append(self.clear)

    def _token_now(self) -> Hashable | None:
        if self._read_once is not None:
            return self._read_once[0]
        return self._change_token()

    def reading(self, token: Any = _ASK) -> Memory:
        """A block of reads (``with memory.reading():``) that asks for the token once, at
        its start: every row the block reads is read after that, so it is at least as new
        as the token says (a later call asks again and finds any commit made since).
        ``token``: the token the caller has just asked for itself (``Engine.read_key``).
        Blocks nest: an inner one keeps the outer one's token. (The memory is its own
        context manager, rather than a generator's, as every read enters one.)"""
        self._given = token
        return self

    def __enter__(self) -> None:
        if not self._read_depth:
            given, self._given = self._given, _ASK
            self._read_once = (self._change_token() if given is _ASK else given,)
        self._read_depth += 1

    def __exit__(self, *exc: object) -> None:
        self._read_depth -= 1
        if not self._read_depth:
            self._read_once = None

    def _valid(self) -> bool:
        """Whether the answers held are current (dropping them if not)."""
        token = self._token_now()
        if token is None:
            if self._answers:
                self.clear()
            return False
        if token != self._token:
            self._drop(token)
        return True

    def _drop(self, token: Hashable | None) -> None:
        self._answers, self._sizes, self._bytes, self._token = {}, {}, 0, token

    def get(self, slot: str, key: Hashable = None) -> Any:
        """The answer held for ``key`` in ``slot``, or ``UNKNOWN``."""
        read_once = self._read_once  # (``_valid``, inlined for a read block: every read)
        token = None if read_once is None else read_once[0]
        if (token is None or token != self._token) and not self._valid():
            return UNKNOWN
        return self._answers.get((slot, key), UNKNOWN)

    def answers(self) -> Mapping[tuple[str, Hashable], Any]:
        """Inside a ``reading`` block: every answer held, by (slot, key), to look up
        several with no ``get`` each (``Engine.read_key``, on every read); empty when
        none is true under the block's token. Only to read, and only in the block."""
        read_once = self._read_once
        assert read_once is not None, "answers() belongs inside a reading() block"
        token = read_once[0]
        if (token is None or token != self._token) and not self._valid():
            return _NOTHING
        return self._answers

    def held_under(self, token: Hashable | None) -> Mapping[tuple[str, Hashable], Any] | None:
        """The answers held, by (slot, key), if they are true under ``token`` (the token
        the caller has just asked for), else None (and nothing is dropped: a ``reading``
        block given that token does it). Only to read, and only until the next call."""
        if token is None or token != self._token:
            return None
        return self._answers

    def held(self) -> tuple[Hashable, Mapping[tuple[str, Hashable], Any]] | None:
        """The token the answers held are true under and the answers, without asking for
        the token now (None: nothing is held), for a caller that reads the token in the
        same statement as the rows it reads with them, and uses neither unless it is
        this one (``Engine.read_past``). Only to read, and only until the next call."""
        if self._token is None:
            return None
        return self._token, self._answers

    def put(self, slot: str, key: Hashable, value: Any, *, size: int = 0) -> None:
        """Hold ``value`` as the answer for ``key`` in ``slot`` (``size``: its bytes)."""
        self.put_many(slot, ((key, value, size),))

    def put_many(self, slot: str, answers: Iterable[tuple[Hashable, Any, int]]) -> None:
        """``put`` of several ``(key, value, size)`` answers of one slot, under one look
        at the token (a write of many entries remembers them all)."""
        token = self._token_now()
        if token is None:
            return
        if token != self._token:  # someone committed since this answer may have been read
            self._drop(token)
            return
        held, sizes = self._answers, self._sizes
        for key, value, size in answers:
            name = (slot, key)
            held.pop(name, None)
            if sizes:
                self._bytes -= sizes.pop(name, 0)
            if len(held) >= self.limit or self._bytes + size > self.byte_limit:
                self._drop(token)
                held, sizes = self._answers, self._sizes
            held[name] = value
            if size:
                sizes[name] = size
                self._bytes += size

    def forget(self, slot: str, key: Hashable = None) -> None:
        """Drop one answer (what this connection is about to change, or just changed)."""
        name = (slot, key)
        self._answers.pop(name, None)
        self._bytes -= self._sizes.pop(name, 0)

    def clear(self) -> None:
        """Drop every answer (a rollback, or a change too wide to write through)."""
        self._drop(None)

    def __len__(self) -> int:
        return len(self._answers)
