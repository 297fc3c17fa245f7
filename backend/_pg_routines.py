"""PostgreSQL's routines: a single write, or the read of one key, as one statement.

A write on PostgreSQL made statement by statement costs five round trips (begin and the
write lock, the branch, the version, the row, the commit) and about five statements of
server work; with many writers the server's CPU, not the lock, is what runs out first
(measured: ``benchmarks/postgres.py``). A write that is a transaction of its own (no
``db.transaction()`` open) and needs no earlier row to encode is therefore sent as one
call of a PL/pgSQL function, which does the same steps in the server, in the same order,
under the same write lock:

- ``rewind_put_entry``: ``kv.put``, ``state.set`` of one key, ``json.set`` of a whole
  document (a value holding arrays long enough to be shared is written the ordinary way,
  since its encoding depends on the key's previous entry);
- ``rewind_append_event``: ``events.append``, ``expected_index`` included; the hash is
  computed in the server exactly as ``events.event_hash`` computes it (a test checks both
  agree, hostile event types included);
- ``rewind_read_entry``: the read of one key (``kv.get``, ``state.get``, ``json.get``)
  now or at a version: the branch, the clock, and one seek per lineage step, which are
  three round trips from Python. It reads in the caller's transaction (a ``db.read()``
  snapshot, or a write transaction), so it sees what Python's statements would.

They return NULL (or a status) where Python must answer instead (no such branch, an
append conflict, an ``as_of`` out of range), having written nothing. The version is
allocated by the very statement Python uses (``_engine.NEXT_COMMIT``), its ``?`` filled
with the routine's arguments. The routines are installed with the schema (and by
migrations 3 and 4 on older databases);
``CREATE OR REPLACE`` makes installing twice harmless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._engine import NEXT_COMMIT

if TYPE_CHECKING:
    from ._connection import Connection


def _next_commit(*arguments: str) -> str:
    """``NEXT_COMMIT`` with its ``?`` placeholders replaced by ``arguments``, in order."""
    parts = NEXT_COMMIT.split("?")
    if len(parts) != len(arguments) + 1:  # pragma: no cover - NEXT_COMMIT changed shape
        raise AssertionError("NEXT_COMMIT's parameters changed; update _pg_routines")
    sql = parts[0]
    for argument, rest in zip(arguments, parts[1:], strict=True):
        sql += argument + rest
    return sql


def routines(write_lock: str) -> list[str]:
    """The ``CREATE OR REPLACE FUNCTION`` statements, in the order they must run."""
    # Both routines begin alike: the write lock, then the live branch (NULL: none). Every
    # statement of a VOLATILE function takes a new snapshot, so what follows the lock sees
    # every earlier commit. The steps are written inline (no nested calls: each costs).
    begin_write = f"""
  PERFORM {write_lock.removeprefix("SELECT ")};
  SELECT id INTO branch_id_ FROM rewind_branches WHERE name = p_branch AND deleted_at IS NULL;"""
    commit = _next_commit("branch_id_", "p_now", "p_now", "p_trigger", "p_message", "NULL", "NULL")
    return [
        f"""
CREATE OR REPLACE FUNCTION rewind_put_entry(
  p_branch text, p_space text, p_key text, p_kind integer, p_body bytea,
  p_trigger text, p_message text, p_now bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $body$
DECLARE
  branch_id_ bigint;
  version_ bigint;
  ts_ bigint;
BEGIN{begin_write}
  IF branch_id_ IS NULL THEN
    RETURN NULL;
  END IF;
  {commit} INTO version_, ts_;
  INSERT INTO rewind_entries (branch_id, space, key, version, kind, body, refs, trigger)
    VALUES (branch_id_, p_space, p_key, version_, p_kind, p_body, NULL, p_trigger);
  RETURN version_;
END
$body$""",
        # Status 0: appended; 1: no live branch of that name; 2: the log's length is not
        # p_expected (o_sequence holds the length). The previous event is found as
        # events.last_event finds it: the branch's own newest, else its ancestors' up to
        # the fork points.
        rf"""
CREATE OR REPLACE FUNCTION rewind_append_event(
  p_branch text, p_type text, p_type_json bytea, p_payload bytea, p_expected bigint,
  p_trigger text, p_message text, p_now bigint,
  OUT o_status integer, OUT o_version bigint, OUT o_ts bigint, OUT o_sequence bigint,
  OUT o_hash text)
LANGUAGE plpgsql VOLATILE AS $body$
DECLARE
  branch_id_ bigint;
  step bigint;
  cap bigint := 9223372036854775807;
  parent bigint;
  fork bigint;
  last_sequence bigint;
  last_hash text;
BEGIN{begin_write}
  IF branch_id_ IS NULL THEN
    o_status := 1;
    RETURN;
  END IF;
  step := branch_id_;
  LOOP
    SELECT sequence, hash INTO last_sequence, last_hash FROM rewind_events
      WHERE branch_id = step AND version <= cap
      ORDER BY version DESC, sequence DESC LIMIT 1;
    EXIT WHEN FOUND;
    SELECT parent_id, forked_at INTO parent, fork FROM rewind_branches WHERE id = step;
    EXIT WHEN parent IS NULL;
    cap := least(cap, fork);
    step := parent;
  END LOOP;
  o_sequence := coalesce(last_sequence + 1, 0);
  IF p_expected IS NOT NULL AND o_sequence <> p_expected THEN
    o_status := 2;
    RETURN;
  END IF;
  {commit} INTO o_version, o_ts;
  o_hash := encode(sha256(
    convert_to(coalesce(last_hash, ''), 'UTF8') || '\x1e'::bytea
    || convert_to('[' || o_sequence || ',', 'UTF8') || p_type_json
    || convert_to(',' || o_version || ']', 'UTF8') || '\x1e'::bytea || p_payload), 'hex');
  INSERT INTO rewind_events (branch_id, sequence, event_type, payload, version, ts, hash,
      origin_branch_id, origin_sequence)
    VALUES (branch_id_, o_sequence, p_type, p_payload, o_version, o_ts, o_hash, NULL, NULL);
  o_status := 0;
END
$body$""",
        # Status 0: found (kind, body, refs); 2: no entry (never written here or before);
        # 1: Python must answer (no live branch, or as_of outside the branch's history).
        # The lineage is walked as Engine.lineage walks it; the first entry found is the
        # newest (a branch's own rows are newer than what it inherited).
        """
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
  SELECT id, forked_at INTO step, forked FROM rewind_branches
    WHERE name = p_branch AND deleted_at IS NULL;
  IF step IS NULL THEN
    o_status := 1;
    RETURN;
  END IF;
  SELECT greatest(coalesce(max(version), 0), forked) INTO cap FROM rewind_commits;
  SELECT greatest(cap, max(CAST(value AS BIGINT))) INTO cap FROM rewind_meta
    WHERE key = 'clock_floor';
  IF p_as_of IS NOT NULL THEN
    IF p_as_of < forked OR p_as_of > cap THEN
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


def install(conn: Connection, write_lock: str) -> None:
    """Create (or replace) the routines in the open write transaction; ``write_lock`` is
    the ``SELECT`` that takes the backend's write lock."""
    for statement in routines(write_lock):
        conn.execute(statement)
