"""The hash chain over commits: each commit's hash covers what it wrote.

A commit's hash is sha256 over the hash of the commit before it on the clock, the commit's
own fields (version, branch, time, merge parent, trigger, message) and one part per row
it wrote: each entry (space, key, kind, trigger, body, refs) and each event (sequence,
its own chained hash, time, origin). An edited, added or removed row, or a removed
commit, changes a hash that ``Database.verify()`` recomputes. (A shared array's items
are covered by their own prefix hashes, which ``verify()`` recomputes too; an entry's
part covers which array and how many items.)

Each part is canonical JSON (orjson) of its scalar fields, with the lengths of its byte
fields, followed by those bytes, so no two different rows encode alike. PostgreSQL's
write routines compute the same hash in the server: what Python knows before the call
(an entry's part, the trigger and message) is passed to them encoded, and the SQL for
the rest is made here beside the Python rule; a test checks both agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

if TYPE_CHECKING:
    from ._statements import Statements

#: Separates the previous hash from this commit's fields; the markers of its parts.
CHAIN, COMMIT, ENTRY, EVENT = b"\x1e", b"C", b"E", b"V"

_dumps = orjson.dumps


def _bytes(value: Any) -> bytes:
    """A stored byte field (b"" for NULL); a damaged row's other type, as its repr."""
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return repr(value).encode()


def _length(value: Any) -> int | None:
    return None if value is None else len(_bytes(value))


def _json(fields: list[Any]) -> bytes:
    try:
        return _dumps(fields)
    except (TypeError, orjson.JSONEncodeError):  # a damaged row: still no error
        return repr(fields).encode()


def entry_part(space: str, key: str, kind: int, body: Any, refs: Any, trigger: str | None) -> bytes:
    if (body is None or type(body) is bytes) and (refs is None or type(refs) is bytes):
        lengths = [None if body is None else len(body), None if refs is None else len(refs)]
        try:
            return b"".join(
                (ENTRY, _dumps([space, key, kind, trigger, *lengths]), body or b"", refs or b"")
            )
        except (TypeError, orjson.JSONEncodeError):
            pass
    return (  # a stored row of another type (a damaged one): still no error
        ENTRY
        + _json([space, key, kind, trigger, _length(body), _length(refs)])
        + _bytes(body)
        + _bytes(refs)
    )


def event_part(
    sequence: int, digest: str, ts: int, origin_branch: int | None, origin_sequence: int | None
) -> bytes:
    return EVENT + _json([sequence, digest, ts, origin_branch, origin_sequence])


def texts_part(trigger: str | None, message: str | None) -> bytes:
    """The end of a commit's fields: its trigger and message (what Python knows before
    a write routine allocates the rest)."""
    return _json([trigger, message])[1:]


def commit_hash(
    previous: str | None,
    commit: tuple[int, int, int, str | None, str | None, int | None, int | None],
    entries: Iterable[bytes],
    events: Iterable[bytes],
) -> str:
    """The hash of a commit: ``commit`` is (version, branch id, ts, trigger, message,
    merge branch id, merge version); ``entries`` its entries' parts (in any order: they
    are sorted), ``events`` its events' parts in sequence order."""
    version, branch_id, ts, trigger, message, merge_branch, merge_version = commit
    # The same bytes as the fields with their texts_part (what the routines join).
    fields = _json([version, branch_id, ts, merge_branch, merge_version, trigger, message])
    whole = b"".join(((previous or "").encode(), CHAIN, COMMIT, fields, *sorted(entries), *events))
    return hashlib.sha256(whole).hexdigest()


def sql_commit_hash(previous: str, texts: str, part: str) -> str:
    """PostgreSQL for :func:`commit_hash` of a commit made by a write routine (no merge
    parent, one row): ``previous`` is the previous hash, ``texts`` the bytea of
    :func:`texts_part`, ``part`` the bytea of the row's part; the routine's ``version_``,
    ``branch_id_`` and ``ts_`` are the commit's fields."""
    head = "convert_to('[' || version_ || ',' || branch_id_ || ',' || ts_ || ',null,null,', 'UTF8')"
    chain = r"'\x1e43'::bytea"  # CHAIN + COMMIT
    whole = (
        f"convert_to(coalesce({previous}, ''), 'UTF8') || {chain} || {head} || {texts} || {part}"
    )
    return f"encode(sha256({whole}), 'hex')"


#: PostgreSQL for :func:`event_part` of the event a routine appends (``o_sequence``,
#: ``o_hash``, ``ts_``; no origin).
SQL_EVENT_PART = (
    "convert_to('V[' || o_sequence || ',\"' || o_hash || '\",' || ts_ || ',null,null]', 'UTF8')"
)


class Recomputed(NamedTuple):
    """One commit as ``recompute`` finds it."""

    version: int
    branch_id: int
    stored: str | None
    computed: str


_COMMITS = (
    "SELECT version, branch_id, ts, trigger, message, merge_branch_id, merge_version, hash "
    "FROM rewind_commits WHERE version > ? ORDER BY version"
)
_ENTRIES = (
    "SELECT space, key, kind, body, refs, trigger FROM rewind_entries "
    "WHERE branch_id = ? AND version = ?"
)
_EVENTS = (
    "SELECT sequence, hash, ts, origin_branch_id, origin_sequence FROM rewind_events "
    "WHERE branch_id = ? AND version = ? ORDER BY sequence"
)


def recompute(conn: Statements, *, after: int = 0, chain_on_stored: bool) -> Iterator[Recomputed]:
    """Each commit after version ``after``, in order, with its hash recomputed from its
    rows: chained on the stored hash of the commit before (``verify``: each mismatch is
    then a commit of its own) or on the recomputed one (``reseal``)."""
    row = conn.fetchone(
        "SELECT hash FROM rewind_commits WHERE version <= ? ORDER BY version DESC LIMIT 1",
        (after,),
    )
    previous: str | None = row[0] if row else None
    for commit in conn.fetchall(_COMMITS, (after,)):
        version, branch_id = commit[0], commit[1]
        entries = [entry_part(*r) for r in conn.fetchall(_ENTRIES, (branch_id, version))]
        events = [event_part(*r) for r in conn.fetchall(_EVENTS, (branch_id, version))]
        computed = commit_hash(previous, tuple(commit[:7]), entries, events)
        stored = commit[7]
        yield Recomputed(version, branch_id, stored, computed)
        previous = stored if chain_on_stored else computed


def reseal(conn: Statements, *, after: int = 0) -> int:
    """Give every commit after ``after`` its hash again, from its rows (a database from
    before commits were hashed, or commits an import wrote); returns how many."""
    count = 0
    for found in list(recompute(conn, after=after, chain_on_stored=False)):
        conn.execute(
            "UPDATE rewind_commits SET hash = ? WHERE version = ?", (found.computed, found.version)
        )
        count += 1
    return count
