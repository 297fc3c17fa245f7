"""PostgreSQL's routines: a single write, or the read of one key, as one statement.

A write on PostgreSQL made statement by statement costs five round trips (begin and the
write lock, the branch, the version, the row, the commit) and about five statements of
server work; with many writers the server's CPU, not the lock, is what runs out first
(``benchmarks/postgres.py``). A write that is a transaction of its own (no
``db.transaction()`` open) and needs no earlier row to encode is therefore sent as one
call of a PL/pgSQL function, which does the same steps in the server, in the same order,
under the same write lock:

- ``rewind_put_entry``: ``kv.put``, ``state.set`` of one key, ``json.set`` of a whole
  document (a value holding arrays long enough to be shared is written the ordinary way,
  since its encoding depends on the key's previous entry);
- ``rewind_append_event``: ``events.append``, ``expected_index`` included, on a branch
  whose log ends in its own events or that has no parent (the first append to a forked
  branch's inherited log is written the ordinary way, which walks the lineage);
- ``rewind_read_entry``: the read of one key (``kv.get``, ``state.get``, ``json.get``)
  now or at a version: the branch, the clock, and one seek per lineage step, which are
  three round trips from Python. It reads in the caller's transaction (a ``db.read()``
  snapshot, or a write transaction), so it sees what Python's statements would.

They return NULL (or a status) where Python must answer instead (no such branch, an
inherited log, an append conflict, an ``as_of`` out of range), having written nothing.

The rules they share with the Python path have one definition each, which a test ties
both paths to (``tests/backend/test_pg_routines.py``):

- the clock: the text of ``_clock`` (``SOURCES``, ``NOW``, ``next_version``, ``next_ts``,
  ``previous_hash``), which the Python path's ``NEXT_COMMIT`` and ``CLOCK`` are made of
  too;
- the hash chain: ``_commit_hash.commit_hash`` and ``events.event_hash``, rendered in
  SQL beside them (``_commit_hash.sql_commit_hash``) or here (``sql_event_hash``), each
  rendering checked against its Python rule on hostile inputs;
- the lineage walk: ``Engine.lineage`` (a branch, then each parent capped at the fork
  point below), which ``rewind_read_entry``'s loop follows; a test compares its answers
  with the Python path's for every branch, version and key of random fork trees.

The routines are installed with the schema and by the migrations that change them (3, 4,
5 and 6); ``CREATE OR REPLACE`` makes installing twice harmless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._clock import NOW, SOURCES, next_ts, next_version, previous_hash
from ._commit_hash import SQL_EVENT_PART, sql_commit_hash

if TYPE_CHECKING:
    from ._connection import Connection

#: The next version, its time and the hash it chains on, as ``_clock`` allocates them,
#: for the select list of a statement that joins ``SOURCES`` (``p_now``: the caller's time).
NEXT = f"{next_version()}, {next_ts('p_now')}, {previous_hash('branch.id')}"


def sql_event_hash(previous: str, sequence: str, type_json: str, version: str, payload: str) -> str:
    """PostgreSQL for ``events.event_hash``: sha256 (hex) over the previous hash (text,
    NULL for none), 0x1e, the JSON ``[sequence, type, version]`` (``type_json``: the
    type's JSON encoding, a bytea), 0x1e, the payload (bytea)."""
    separator = r"'\x1e'::bytea"
    fields = (
        f"convert_to('[' || {sequence} || ',', 'UTF8') || {type_json} "
        f"|| convert_to(',' || {version} || ']', 'UTF8')"
    )
    whole = (
        f"convert_to(coalesce({previous}, ''), 'UTF8') || {separator} || {fields} "
        f"|| {separator} || {payload}"
    )
    return f"encode(sha256({whole}), 'hex')"


def routines(write_lock: str) -> list[str]:
    """The ``CREATE OR REPLACE FUNCTION`` statements, in the order they must run."""
    # Both write routines begin alike: the write lock, then one statement for the live
    # branch (no row: none), the next version, its time and the previous hash. Every
    # statement of a VOLATILE function takes a new snapshot, so what follows the lock sees
    # every earlier commit (which is why the lock is a statement of its own). The steps
    # are written inline (no nested calls: each costs).
    lock = f"PERFORM {write_lock.removeprefix('SELECT ')};"
    # The commit's hash, chained on the newest commit's, as ``_commit_hash`` makes it
    # (Python passes what it knows of it encoded: the entry's part, trigger and message).
    entry_hash = sql_commit_hash("previous_hash", "p_texts", "p_part", digest=True)
    event_hash = sql_commit_hash("previous_hash", "p_texts", SQL_EVENT_PART, digest=False)

    def new_commit(digest: str) -> str:
        return f"""
  INSERT INTO rewind_commits (version, branch_id, ts, trigger, message, hash)
    VALUES (version_, branch_id_, ts_, p_trigger, p_message, {digest});"""

    return [
        f"""
CREATE OR REPLACE FUNCTION rewind_put_entry(
  p_branch text, p_space text, p_key text, p_kind integer, p_body bytea, p_part bytea,
  p_texts bytea, p_trigger text, p_message text, p_now bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $body$
DECLARE
  branch_id_ bigint;
  version_ bigint;
  ts_ bigint;
  previous_hash text;
BEGIN
  {lock}
  SELECT branch.id, {NEXT} INTO branch_id_, version_, ts_, previous_hash
    FROM rewind_branches branch {SOURCES}
    WHERE branch.name = p_branch AND branch.deleted_at IS NULL;
  IF branch_id_ IS NULL THEN
    RETURN NULL;
  END IF;{new_commit(entry_hash)}
  INSERT INTO rewind_entries (branch_id, space, key, version, kind, body, refs, trigger)
    VALUES (branch_id_, p_space, p_key, version_, p_kind, p_body, NULL, p_trigger);
  RETURN version_;
END
$body$""",
        # Status 0: appended; 1: Python must append (no live branch of that name, or a log
        # that so far is all inherited); 2: the log's length is not p_expected (o_sequence
        # holds the length). A branch's own events are newer than any it inherited, so its
        # newest own event, when it has one, ends its log.
        f"""
CREATE OR REPLACE FUNCTION rewind_append_event(
  p_branch text, p_type text, p_type_json bytea, p_payload bytea, p_expected bigint,
  p_texts bytea, p_trigger text, p_message text, p_now bigint,
  OUT o_status integer, OUT o_version bigint, OUT o_ts bigint, OUT o_sequence bigint,
  OUT o_hash text)
LANGUAGE plpgsql VOLATILE AS $body$
DECLARE
  branch_id_ bigint;
  parent bigint;
  version_ bigint;
  ts_ bigint;
  previous_hash text;
  last_sequence bigint;
  last_hash text;
BEGIN
  {lock}
  SELECT branch.id, branch.parent_id, {NEXT}, last_event.sequence, last_event.hash
    INTO branch_id_, parent, version_, ts_, previous_hash, last_sequence, last_hash
    FROM rewind_branches branch {SOURCES}
    LEFT JOIN LATERAL (SELECT sequence, hash FROM rewind_events
      WHERE branch_id = branch.id ORDER BY version DESC, sequence DESC LIMIT 1) last_event ON true
    WHERE branch.name = p_branch AND branch.deleted_at IS NULL;
  IF branch_id_ IS NULL OR (last_sequence IS NULL AND parent IS NOT NULL) THEN
    o_status := 1;
    RETURN;
  END IF;
  o_sequence := coalesce(last_sequence + 1, 0);
  IF p_expected IS NOT NULL AND o_sequence <> p_expected THEN
    o_status := 2;
    RETURN;
  END IF;
  o_version := version_;
  o_ts := ts_;
  o_hash := {sql_event_hash("last_hash", "o_sequence", "p_type_json", "o_version", "p_payload")};
  {new_commit(event_hash).strip()}
  INSERT INTO rewind_events (branch_id, sequence, event_type, payload, version, ts, hash,
      origin_branch_id, origin_sequence)
    VALUES (branch_id_, o_sequence, p_type, p_payload, version_, ts_, o_hash, NULL, NULL);
  o_status := 0;
END
$body$""",
        # Status 0: found (kind, body, refs); 2: no entry (never written here or before);
        # 1: Python must answer (no live branch, or as_of outside the branch's history).
        # The lineage is walked as Engine.lineage walks it: the branch up to the version
        # read (now: the clock, or the fork point of a branch forked above it), then each
        # parent up to the lowest fork point met so far. The first entry found is the
        # newest (a branch's own rows are newer than what it inherited).
        f"""
CREATE OR REPLACE FUNCTION rewind_read_entry(
  p_branch text, p_space text, p_key text, p_as_of bigint,
  OUT o_status integer, OUT o_kind integer, OUT o_body bytea, OUT o_refs bytea)
LANGUAGE plpgsql STABLE AS $body$
DECLARE
  step bigint;
  forked bigint;
  cap bigint;
  parent bigint;
  fork bigint;
BEGIN
  SELECT branch.id, branch.forked_at, greatest({NOW}, branch.forked_at)
    INTO step, forked, cap
    FROM rewind_branches branch {SOURCES}
    WHERE branch.name = p_branch AND branch.deleted_at IS NULL;
  IF step IS NULL THEN
    o_status := 1;
    RETURN;
  END IF;
  IF p_as_of IS NOT NULL THEN
    IF p_as_of < forked OR p_as_of > cap OR p_as_of < coalesce(
        (SELECT kept_from FROM rewind_horizons WHERE branch_id = step), 0) THEN
      o_status := 1;
      RETURN;
    END IF;
    cap := p_as_of;
  END IF;
  LOOP
    SELECT kind, body, refs INTO o_kind, o_body, o_refs FROM rewind_entries
      WHERE branch_id = step AND space = p_space AND key = p_key AND version <= cap
      ORDER BY version DESC LIMIT 1;
    IF FOUND THEN
      o_status := 0;
      RETURN;
    END IF;
    SELECT parent_id, forked_at INTO parent, fork FROM rewind_branches WHERE id = step;
    EXIT WHEN parent IS NULL;
    cap := least(cap, fork);
    step := parent;
  END LOOP;
  o_status := 2;
END
$body$""",
    ]


#: The routines' signatures before schema 6 (which added the hash's parameters).
_OLD_SIGNATURES = [
    "rewind_put_entry(text, text, text, integer, bytea, text, text, bigint)",
    "rewind_append_event(text, text, bytea, bytea, bigint, text, text, bigint)",
]


def install(conn: Connection, write_lock: str) -> None:
    """Create (or replace) the routines in the open write transaction; ``write_lock`` is
    the ``SELECT`` that takes the backend's write lock."""
    for signature in _OLD_SIGNATURES:
        conn.execute(f"DROP FUNCTION IF EXISTS {signature}")
    for statement in routines(write_lock):
        conn.execute(statement)
