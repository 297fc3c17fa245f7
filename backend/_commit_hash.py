"""The hash chains over commits: each commit's hash covers what it wrote.

Each branch has a chain of its own: a commit's hash is sha256 over the hash of the
branch's commit before it, the commit's own fields (version, branch, time, merge parent,
trigger, message) and one part per row it wrote: the sha256 digest of each entry's part
(space, key, kind, trigger, body, refs) and each event's part (sequence, its own chained
hash, time, origin). An edited, added or removed row, or a removed commit before the
branch's newest, changes a hash that ``Database.verify()`` recomputes. (A shared array's
items are covered by their own prefix hashes, which ``verify()`` recomputes too; an
entry's part covers which array and how many items.)

Why a chain per branch, over digests: erasure and retention remove rows and commits.
An erased entry keeps its part's digest (``erasure``), so its commit still verifies
without its value; a purged branch takes its whole chain with it, and a branch whose
oldest history was pruned starts its chain at the hash its horizon keeps
(``rewind_horizons``), so no other branch's chain changes.

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


#: An erased entry's kind: its body is :func:`entry_digest` of the row as written.
KIND_ERASED = 3


def erased_trigger(version: int) -> str:
    """What an entry erased at ``version`` keeps as its trigger."""
    return f"erased@{version}"


def erased_version(trigger: Any) -> int | None:
    """The version an erased entry's stored trigger names (``erased@N``)."""
    if isinstance(trigger, str) and trigger.startswith("erased@"):
        digits = trigger.removeprefix("erased@")
        return int(digits) if digits.isdigit() else 0
    return None


def entry_digest(part: bytes) -> bytes:
    """What a commit's hash covers of an entry: the sha256 of its part."""
    return hashlib.sha256(part).digest()


def stored_entry_digest(
    space: str, key: str, kind: int, body: Any, refs: Any, trigger: str | None
) -> bytes:
    """The digest of an entry as stored: an erased one keeps it as its body."""
    if kind == KIND_ERASED and type(body) is bytes and len(body) == 32:
        return body
    return entry_digest(entry_part(space, key, kind, body, refs, trigger))


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
    """The hash of a commit: ``previous`` is the hash of its branch's commit before it,
    ``commit`` is (version, branch id, ts, trigger, message, merge branch id, merge
    version); ``entries`` its entries' digests (:func:`entry_digest`, in any order: they
    are sorted), ``events`` its events' parts in sequence order."""
    version, branch_id, ts, trigger, message, merge_branch, merge_version = commit
    # The same bytes as the fields with their texts_part (what the routines join).
    fields = _json([version, branch_id, ts, merge_branch, merge_version, trigger, message])
    whole = b"".join(((previous or "").encode(), CHAIN, COMMIT, fields, *sorted(entries), *events))
    return hashlib.sha256(whole).hexdigest()


def sql_commit_hash(previous: str, texts: str, part: str, *, digest: bool) -> str:
    """PostgreSQL for :func:`commit_hash` of a commit made by a write routine (no merge
    parent, one row): ``previous`` is the previous hash, ``texts`` the bytea of
    :func:`texts_part`, ``part`` the bytea of the row's part (an entry's, hashed first
    when ``digest``); the routine's ``version_``, ``branch_id_`` and ``ts_`` are the
    commit's fields."""
    if digest:
        part = f"sha256({part})"
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
#: A range of one version, not ``version = ?``: for the equality SQLite (3.40) walks the
#: branch's whole primary key (a branch of 20,000 entries: about 1 ms a commit), for the
#: range it seeks the (branch, version) index.
_ENTRIES = (
    "SELECT space, key, kind, body, refs, trigger FROM rewind_entries "
    "WHERE branch_id = ? AND version >= ? AND version <= ?"
)
_EVENTS = (
    "SELECT sequence, hash, ts, origin_branch_id, origin_sequence FROM rewind_events "
    "WHERE branch_id = ? AND version = ? ORDER BY sequence"
)


def chain_starts(conn: Statements, after: int = 0) -> dict[Any, str | None]:
    """Each branch's hash that its first commit after version ``after`` chains on: its
    newest commit at or before ``after``, else where retention cut its history."""
    starts: dict[Any, str | None] = dict(
        conn.fetchall("SELECT branch_id, previous_hash FROM rewind_horizons")
    )
    if after:
        starts.update(
            conn.fetchall(
                "SELECT c.branch_id, c.hash FROM rewind_commits c JOIN (SELECT branch_id, "
                "max(version) AS newest FROM rewind_commits WHERE version <= ? "
                "GROUP BY branch_id) n ON c.version = n.newest",
                (after,),
            )
        )
    return starts


def recompute(conn: Statements, *, after: int = 0, chain_on_stored: bool) -> Iterator[Recomputed]:
    """Each commit after version ``after``, in order, with its hash recomputed from its
    rows: chained on the stored hash of its branch's commit before it (``verify``: each
    mismatch is then a commit of its own) or on the recomputed one (``reseal``)."""
    previous = chain_starts(conn, after)
    for commit in conn.fetchall(_COMMITS, (after,)):
        version, branch_id = commit[0], commit[1]
        rows = conn.fetchall(_ENTRIES, (branch_id, version, version))
        entries = [stored_entry_digest(*r) for r in rows]
        events = [event_part(*r) for r in conn.fetchall(_EVENTS, (branch_id, version))]
        computed = commit_hash(previous.get(branch_id), tuple(commit[:7]), entries, events)
        stored = commit[7]
        yield Recomputed(version, branch_id, stored, computed)
        previous[branch_id] = stored if chain_on_stored else computed


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
