"""Storage that shares what consecutive versions of a value have in common.

Agents mostly *grow* their state: a message list gains one message per turn. Storing
every version whole costs O(n^2) bytes over n turns. Here a large JSON array (at the
top of a value, or under object keys) is stored as a *shared array*: rows of items in
``rewind_seq_items``, referred to by (array id, length). A new version whose array
starts with the previous version's items only appends the new items; a version that is
a prefix of the previous one (the list shrank from the end) stores nothing at all.

A large object with many members (a dict of notes, of records by id, rewritten whole
each turn with one more member) is stored the same way, as a shared array of its
``[key, value]`` pairs in order: a version that added members appends just their pairs.
The value's skeleton holds ``{}`` where a shared object goes and ``null`` where a shared
array goes.

Each item row carries a hash of the array's prefix up to and including it, so "does the
new list start with the old one?" is one index seek and one hash comparison, not a read
of the old list. Reading any version reads exactly its own items: as fast as the latest.

Writing a list that only grew costs Python work for the appended items only: the
connection's memory (``_memory``, slot ``array``) holds the encoding of the arrays it
wrote, by (array, length). The new list is encoded whole (one orjson call) and compared
with the remembered prefix; only the appended items are encoded and hashed one by one.
Reading an array exactly as this connection last wrote it decodes the remembered
encoding, or, where every item was an immutable scalar (text, numbers), copies the list
of the items written (no parsing, and the very objects written). The slot
``array_length`` holds how far each array has been written.
"""

from __future__ import annotations

import hashlib
from itertools import chain
from typing import Any, NamedTuple

from ._connection import Connection
from ._memory import UNKNOWN
from ._values import dumps, loads
from .errors import CorruptDatabaseError

#: Arrays whose items encode to fewer bytes than this are stored inline.
MIN_SHARED_BYTES = 512
#: Values that encode to fewer bytes than this are never split.
MIN_SPLIT_BYTES = 2048
#: Arrays whose encoding is longer than an eighth of this are not remembered.
KNOWN_BYTES = 64 * 1024 * 1024

#: Objects with at least this many members, none of them a list, may be stored as shared
#: objects (smaller ones are records, whose lists are shared instead).
MIN_SHARED_MEMBERS = 16

#: Items of these types are immutable: an array of them is remembered as written, too.
_SCALARS = frozenset((str, int, float, bool, type(None)))

Path = tuple[str, ...]
Ref = tuple[Path, int, int]  # (object path, array id, length)
Shared = tuple[Path, list[Any], bytes]  # (object path, items, their encoding as an array)
#: What a value's skeleton holds where a shared object's members go.
OBJECT_PLACE: dict[str, Any] = {}


def prefix_hash(previous: bytes, item: bytes) -> bytes:
    """The prefix hash of an array's item: over the previous item's and its own bytes."""
    return hashlib.blake2b(previous + item, digest_size=16).digest()


def _prefix_hashes(items: list[bytes], previous: bytes = b"") -> list[bytes]:
    hashes = []
    for item in items:
        previous = prefix_hash(previous, item)
        hashes.append(previous)
    return hashes


def _find_arrays(value: Any, path: Path, found: list[tuple[Path, list[Any]]]) -> None:
    """The lists of ``value`` (through objects), and its objects of many members as lists
    of their ``[key, value]`` pairs."""
    if isinstance(value, (list, tuple)):
        found.append((path, list(value)))
    elif isinstance(value, dict):
        if len(value) >= MIN_SHARED_MEMBERS and not any(
            issubclass(kind, (list, tuple)) for kind in set(map(type, value.values()))
        ):
            found.append((path, list(map(list, value.items()))))
            return
        for key, sub in value.items():
            if isinstance(sub, (list, tuple, dict)):
                _find_arrays(sub, (*path, key), found)


def _at(value: Any, path: Path) -> Any:
    for key in path:
        value = value[key]
    return value


def _replace(value: Any, path: Path, replacement: Any) -> Any:
    """A shallow copy of ``value`` with the item at ``path`` replaced."""
    if not path:
        return replacement
    copy = dict(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], replacement)
    return copy


def _size(prefix: bytes, items: _Kept | None) -> int:
    """What one remembered array counts as in memory (its items about as much again as
    their encoding, when they are kept)."""
    return len(prefix) * (1 if items is None else 2)


def _written_items(items: list[Any]) -> _Kept | None:
    """``items`` as written, kept to read again without parsing, when each is an immutable
    scalar, or each a list of them (a dict's ``[key, value]`` pairs); else None. Checked
    by type sets (in C), not item by item: this runs at every write of an array."""
    kinds = set(map(type, items))
    if kinds <= _SCALARS:
        return _Kept(tuple(items), _SCALAR_ITEMS, 0)
    if kinds == _LIST_TYPE and set(map(type, chain.from_iterable(items))) <= _SCALARS:
        return _Kept(tuple(map(tuple, items)), _LIST_ITEMS, 0)
    return None


class SharedArrays:
    """Encodes values into (body, refs) and back, sharing array prefixes."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        #: Slot ``array``: (array id, length) -> (encoding of the first ``length`` items
        #: as ``b"[" + b",".join(items)``, prefix hash of the last of them, the items as
        #: written when all are immutable scalars or lists of them (``_written_items``),
        #: else None). Slot ``array_length``: array id -> how many items it has as far
        #: as written (``_own_length``).
        self.memory = conn.memory

    def _known(self, seq: int, length: int) -> tuple[bytes, bytes, _Kept | None] | None:
        known = self.memory.get("array", (seq, length))
        return None if known is UNKNOWN else known

    def _remember(
        self, seq: int, length: int, prefix: bytes, last_hash: bytes, items: list[Any]
    ) -> None:
        if len(prefix) > KNOWN_BYTES // 8:
            return
        kept = _written_items(items)
        self.memory.put("array", (seq, length), (prefix, last_hash, kept), size=_size(prefix, kept))

    def _recall(self, seq: int, length: int) -> None:
        self.memory.forget("array", (seq, length))

    # -- encoding ----------------------------------------------------------------

    def plan(self, value: Any) -> tuple[bytes | None, list[Shared]]:
        """(encoding of ``value`` whole, or None if it is not needed; the arrays to store
        as shared arrays, each with its encoding). Values that encode to fewer than
        ``MIN_SPLIT_BYTES`` are never split; arrays whose items are too few or too small
        stay inline."""
        arrays: list[tuple[Path, list[Any]]] = []
        _find_arrays(value, (), arrays)
        shared: list[Shared] = []
        for path, items in arrays:
            if len(items) < 2:
                continue
            whole = dumps(items)
            # The items' bytes without brackets and commas.
            if len(whole) - 1 - len(items) >= MIN_SHARED_BYTES:
                shared.append((path, items, whole))
        if sum(len(whole) for _, _, whole in shared) >= MIN_SPLIT_BYTES:
            return None, shared  # the whole encoding is longer still: not needed
        body = dumps(value)
        return body, shared if len(body) >= MIN_SPLIT_BYTES else []

    def encode(
        self, value: Any, shared: list[Shared], previous_refs: list[Ref] | None
    ) -> tuple[bytes, bytes]:
        """The (body, refs) to store for ``value`` with its arrays ``shared`` (from
        :meth:`plan`) stored as shared arrays."""
        previous = {tuple(p): (seq, length) for p, seq, length in previous_refs or ()}
        refs: list[Ref] = []
        skeleton = value
        for path, items, whole in shared:
            stored = self._store_grown(items, whole, previous.get(path))
            if stored is None:
                encoded = [dumps(item) for item in items]
                seq, length, last_hash = self._store(encoded, previous.get(path))
                self._remember(seq, length, whole[:-1], last_hash, items)
            else:
                seq, length = stored
            refs.append((path, seq, length))
            place = OBJECT_PLACE if isinstance(_at(value, path), dict) else None
            skeleton = _replace(skeleton, path, place)
        return dumps(skeleton), dumps([[list(p), s, n] for p, s, n in refs])

    def _store_grown(
        self, items: list[Any], whole: bytes, previous: tuple[int, int] | None
    ) -> tuple[int, int] | None:
        """Store ``items`` (encoded whole as ``whole``) as the remembered previous array
        plus what was appended, or return None when that does not apply."""
        if previous is None:
            return None
        seq, old_len = previous
        if not 0 < old_len <= len(items):
            return None
        known = self._known(seq, old_len)
        if known is None:
            return None
        prefix, last_hash, _ = known
        # The items encode canonically and every item is a whole JSON value, so the new
        # array starts with the old one's items exactly when its encoding starts with
        # theirs, followed by the next comma (or the closing bracket).
        if not whole.startswith(prefix) or whole[len(prefix)] not in b",]":
            return None
        n = len(items)
        if n == old_len:
            return seq, n
        if self._own_length(seq) != old_len:
            return None  # the array was extended elsewhere: the general path decides
        added = [dumps(item) for item in items[old_len:]]
        hashes = _prefix_hashes(added, last_hash)
        self._insert(seq, old_len, added, hashes)
        self._recall(seq, old_len)
        self._remember(seq, n, whole[:-1], hashes[-1], items)
        return seq, n

    def _store(
        self, encoded: list[bytes], previous: tuple[int, int] | None
    ) -> tuple[int, int, bytes]:
        """(array, length, prefix hash of the last item) that store ``encoded``."""
        hashes = _prefix_hashes(encoded)
        n = len(encoded)
        if previous is not None:
            seq, old_len = previous
            shared = min(n, old_len)
            if shared and self._prefix_hash(seq, shared - 1) == hashes[shared - 1]:
                if n <= old_len:
                    return seq, n, hashes[-1]  # same list, or it shrank from the end
                written = self._own_length(seq)
                if written == old_len:
                    self._insert(seq, old_len, encoded[old_len:], hashes[old_len:])
                    return seq, n, hashes[-1]
                if written >= n and self._prefix_hash(seq, n - 1) == hashes[n - 1]:
                    return seq, n, hashes[-1]  # grown as the array already was (a merge)
                # The array was extended differently elsewhere (another branch):
                # a new array that shares the common prefix.
                new_seq = self.create(base=seq, base_len=old_len)
                self._insert(new_seq, old_len, encoded[old_len:], hashes[old_len:])
                return new_seq, n, hashes[-1]
        new_seq = self.create(base=None, base_len=0)
        self._insert(new_seq, 0, encoded, hashes)
        return new_seq, n, hashes[-1]

    def create(self, base: int | None, base_len: int) -> int:
        """A new, empty array on top of ``base``'s first ``base_len`` items."""
        return self.conn.insert_id(
            "INSERT INTO rewind_seqs (base_id, base_len) VALUES (?, ?)", (base, base_len)
        )

    def _insert(self, seq: int, first: int, items: list[bytes], hashes: list[bytes]) -> None:
        """Store ``items`` (with their prefix hashes) at positions ``first``... of ``seq``."""
        self.conn.executemany(
            "INSERT INTO rewind_seq_items (seq_id, idx, item, prefix_hash) VALUES (?, ?, ?, ?)",
            [(seq, first + i, item, hashes[i]) for i, item in enumerate(items)],
        )
        if items:  # items are only ever added at an array's end
            self.memory.put("array_length", seq, first + len(items))

    # -- import ------------------------------------------------------------------

    def append_items(self, seq: int, start: int, encoded: list[bytes]) -> None:
        """Store ``encoded`` items at ``start``... of ``seq`` (their prefix hashes continue
        the array's)."""
        previous = self._prefix_hash(seq, start - 1) if start else b""
        hashes = _prefix_hashes(encoded, previous or b"")
        self._insert(seq, start, encoded, hashes)

    def _own_length(self, seq: int) -> int:
        """The length of the array ``seq`` as far as it has been written."""
        known: int = self.memory.get("array_length", seq)
        if known is not UNKNOWN:
            return known
        row = self.conn.fetchone("SELECT max(idx) FROM rewind_seq_items WHERE seq_id = ?", (seq,))
        if row is not None and row[0] is not None:
            length = int(row[0]) + 1
        else:
            base = self.conn.fetchone("SELECT base_len FROM rewind_seqs WHERE id = ?", (seq,))
            length = int(base[0]) if base else 0
        self.memory.put("array_length", seq, length)
        return length

    def _locate(self, seq: int, idx: int) -> int:
        """The array in ``seq``'s base chain that holds item ``idx``."""
        while True:
            row = self.conn.fetchone(
                "SELECT base_id, base_len FROM rewind_seqs WHERE id = ?", (seq,)
            )
            if row is None or row[0] is None or idx >= row[1]:
                return seq
            seq = _base_of(seq, row[0])

    def _prefix_hash(self, seq: int, idx: int) -> bytes | None:
        row = self.conn.fetchone(
            "SELECT prefix_hash FROM rewind_seq_items WHERE seq_id = ? AND idx = ?",
            (self._locate(seq, idx), idx),
        )
        return bytes(row[0]) if row else None

    # -- decoding ----------------------------------------------------------------

    def decode(self, body: bytes, refs: bytes | None) -> Any:
        value = loads(body)
        if refs is None:
            return value
        for path, seq, length in loads(refs):
            if _at(value, path) is not None:  # a shared object: its members' pairs
                shared: Any = dict(self._read(seq, length, pairs=True))
            else:
                shared = self._read(seq, length)
            value = _replace(value, tuple(path), shared)
        return value

    def _read(self, seq: int, length: int, *, pairs: bool = False) -> list[Any]:
        """The first ``length`` items of array ``seq``; with ``pairs`` (a shared object's,
        to be made a dict at once) its items may come as tuples."""
        known = self._known(seq, length)
        if known is not None:  # the array as this connection last wrote it
            written = known[2]
            if written is not None:
                return list(written.items) if pairs else _copied_items(written, length)
            remembered: list[Any] = loads(known[0] + b"]")
            return remembered
        # An array's first n items never change: the longest read of it answers any
        # shorter one (older versions of a list that grew, read one after another), and
        # a longer one reads only the items past it (the same versions, oldest first).
        longest: _Kept = self.memory.get("array_read", seq)
        have = 0 if longest is UNKNOWN else len(longest.items)
        if have >= length:
            return list(longest.items[:length]) if pairs else _copied_items(longest, length)
        tail = self._read_rows(seq, length, first=have)
        flat = _flat_items(tail)
        if flat is not None:
            grown = _joined(longest, flat) if have else flat
            self.memory.put("array_read", seq, grown, size=grown.size)
        if not have:
            return tail
        return (list(longest.items) if pairs else _copied_items(longest, have)) + tail

    def _read_rows(self, seq: int, length: int, first: int = 0) -> list[Any]:
        """Items ``first`` to ``length - 1`` of array ``seq`` (through its bases), from the
        rows."""
        parts: list[bytes] = []
        end, top = length, seq
        while end > first:
            row = self.conn.fetchone(
                "SELECT base_id, base_len FROM rewind_seqs WHERE id = ?", (seq,)
            )
            start = row[1] if row and row[0] is not None else 0
            start = min(start, end)
            if max(start, first) < end:
                items = self.conn.fetchall(
                    "SELECT item FROM rewind_seq_items "
                    "WHERE seq_id = ? AND idx >= ? AND idx < ? ORDER BY idx DESC",
                    (seq, max(start, first), end),
                )
                parts.extend(bytes(r[0]) for r in items)
            end = start
            if row is None or row[0] is None:
                break
            seq = _base_of(seq, row[0])
        if len(parts) != length - first:
            raise CorruptDatabaseError(
                f"a stored list of {length} items (array {top} in rewind_seqs) has "
                f"{len(parts)} items from position {first} on in rewind_seq_items, not "
                f"{length - first}: rows were deleted or edited",
                code="corrupt.seq_items",
            )
        parts.reverse()
        result: list[Any] = loads(b"[" + b",".join(parts) + b"]")
        return result

    def check_bases(self) -> None:
        """Refuse a database whose arrays do not each build on an older one (a walk down
        their bases, as an export makes, would never end)."""
        row = self.conn.fetchone(
            "SELECT id, base_id FROM rewind_seqs "
            "WHERE base_id IS NOT NULL AND NOT (base_id < id) LIMIT 1"
        )
        if row is not None:
            _base_of(*row)

    def refs_of(self, refs: bytes | None) -> list[Ref] | None:
        if refs is None:
            return None
        return [(tuple(p), s, n) for p, s, n in loads(refs)]


#: What a :class:`_Kept` holds: texts and numbers only, lists (as tuples) only, or both.
_SCALAR_ITEMS, _LIST_ITEMS, _MIXED_ITEMS = 1, 2, 3
_LIST_TYPE = frozenset((list,))


class _Kept(NamedTuple):
    """Items kept for reading again: slot ``array_read``, the longest read of an array
    (and, in slot ``array``, the items as this connection wrote them)."""

    items: tuple[Any, ...]  # immutable scalars, and lists of them as tuples
    shape: int  # _SCALAR_ITEMS, _LIST_ITEMS or _MIXED_ITEMS (or 0 for no items)
    size: int  # about what the items hold in memory, as bytes


def _flat_items(items: list[Any]) -> _Kept | None:
    """``items`` kept for reading again, when each is an immutable scalar or a list of
    them (a shared object's ``[key, value]`` pairs); None otherwise."""
    kept = []
    shape = size = 0
    for item in items:
        kind = type(item)
        if kind in _SCALARS:
            kept.append(item)
            shape |= _SCALAR_ITEMS
            size += len(item) if kind is str else 8
        elif kind is list and all(type(part) in _SCALARS for part in item):
            kept.append(tuple(item))
            shape |= _LIST_ITEMS
            size += sum(len(str(part)) for part in item)
        else:
            return None
    return _Kept(tuple(kept), shape, size + 16 * len(kept))


def _joined(first: _Kept, then: _Kept) -> _Kept:
    return _Kept(first.items + then.items, first.shape | then.shape, first.size + then.size)


def _copied_items(kept: _Kept, length: int) -> list[Any]:
    """The first ``length`` items of ``kept`` as a reader may change them (lists anew)."""
    if kept.shape == _SCALAR_ITEMS:
        return list(kept.items[:length])
    if kept.shape == _LIST_ITEMS:
        return list(map(list, kept.items[:length]))
    return [list(item) if type(item) is tuple else item for item in kept.items[:length]]


def _base_of(seq: int, base: Any) -> int:
    """The base of array ``seq``: an older array (a smaller id), so a walk down the bases
    ends; one another program edited into a loop (or out of shape) is ``corrupt.seqs``."""
    if type(base) is not int or not 0 < base < seq:
        raise CorruptDatabaseError(
            f"array {seq} in rewind_seqs names {base!r} as its base, which is not an older "
            "array: the row was edited",
            code="corrupt.seqs",
        )
    return base
