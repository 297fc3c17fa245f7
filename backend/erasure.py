"""Erasure: data that is gone when it is deleted, with hash chains that still verify.

Three operations remove what users stored, each in one write transaction:

- :func:`purge_branch` (``branches.delete(name, purge=True)``): a branch's rows go, and
  so do those of its deleted descendants: entries, events, commits, list items no
  remaining row reads. What live branches inherited from it (its history up to their
  fork points) stays, readable as before, except the values no remaining branch reads at
  any version it can read (from its fork point, or its horizon, on: a fork that
  overwrote or deleted the key there): those are erased as :func:`erase_keys` erases,
  the entry keeping its place and digest (``_erase_unread``). The branch's row stays
  only while something still names it (a live fork's lineage, a merge or a carried
  event), under a name that is not its own. Its merge commits that the history of a
  remaining branch holds through a merge stay as links (version, time, merge parent; no
  trigger, message or rows, the hash chain resealed over what is left): a merge base is
  found by walking them (``merge.contained_history``), and without them a later merge
  would find an older base and go ahead on it (:func:`_merge_reach`).
- :func:`erase_keys`: keys' values, in every branch and version, become erased
  entries: each keeps its place (``kv.history`` shows "erased at version N") and the
  digest of what it was, which its commit's hash covers (``_commit_hash``), so the chain
  still verifies without the value.
- ``events.erase`` (in ``events``): events keep their place and their chained hash, and
  lose their payload, so the log still verifies from end to end (the events after an
  erased one chain on its hash).

Shared arrays (``_arrays``) are swept after each: an array's items past what any
remaining entry reads are deleted, and an array nothing reads goes whole. An array is
only ever read through entries of the key that wrote it, by the branch that created it
and its descendants, so the sweep reads the entries of those keys in that family only.

Erased and purged bytes must not linger in the file: the connection deletes with
SQLite's ``secure_delete`` on (freed space is overwritten with zeros), and
:func:`scrub` checkpoints the WAL afterwards, so no old page image keeps them either.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from . import _commit_hash
from ._engine import SPACES, Engine, check_name, now_micros
from ._horizons import bump_generation, hold_clock
from ._values import loads
from .errors import InvalidInputError, NotFoundError
from .models import ErasureReceipt

#: The spaces of keyed state, by the name users know them by.


class Tree:
    """Every branch row: parents, fork points, which are deleted, and children."""

    def __init__(self, engine: Engine) -> None:
        rows = engine.conn.fetchall(
            "SELECT id, parent_id, forked_at, deleted_at, name FROM rewind_branches"
        )
        self.parent = {row[0]: row[1] for row in rows}
        self.forked_at = {row[0]: row[2] for row in rows}
        self.deleted = {row[0] for row in rows if row[3] is not None}
        self.name = {row[0]: row[4] for row in rows}
        self.children: dict[int, list[int]] = defaultdict(list)
        for branch_id, parent in self.parent.items():
            if parent is not None:
                self.children[parent].append(branch_id)

    def subtree(self, root: int) -> list[int]:
        found, stack, seen = [], [root], set()
        while stack:
            branch_id = stack.pop()
            if branch_id in seen:  # a damaged tree: never loop
                continue
            seen.add(branch_id)
            found.append(branch_id)
            stack.extend(self.children.get(branch_id, ()))
        return found

    def ancestors(self, branch_id: int) -> list[int]:
        """The branch's ancestors, nearest first."""
        found, seen = [], {branch_id}
        parent = self.parent.get(branch_id)
        while parent is not None and parent not in seen:
            seen.add(parent)
            found.append(parent)
            parent = self.parent.get(parent)
        return found


class Sweep:
    """Array ids the removed rows read, by the key that wrote them; swept at the end."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str], set[int]] = defaultdict(set)
        self.branches: dict[tuple[str, str], set[int]] = defaultdict(set)

    def add(self, branch_id: int, space: str, key: str, refs: Any) -> None:
        for seq, _ in _refs(refs):
            self.by_key[(space, key)].add(seq)
        self.branches[(space, key)].add(branch_id)

    def run(self, engine: Engine, tree: Tree) -> int:
        """Delete the list items no remaining entry reads; returns how many."""
        if not self.by_key:
            return 0
        conn = engine.conn
        bases = {
            row[0]: (row[1], row[2])
            for row in conn.fetchall("SELECT id, base_id, base_len FROM rewind_seqs")
        }
        candidates: set[int] = set()
        for seqs in self.by_key.values():
            for seq in seqs:
                seen = set()
                while seq in bases and seq not in seen:  # the arrays it builds on too
                    seen.add(seq)
                    candidates.add(seq)
                    seq = bases[seq][0]
        needed: dict[int, int] = defaultdict(int)
        for (space, key), branch_ids in self.branches.items():
            for branch_id in self._family(engine, tree, space, key, branch_ids):
                for (refs,) in conn.fetchall(
                    "SELECT refs FROM rewind_entries WHERE branch_id = ? AND space = ? "
                    "AND key = ? AND refs IS NOT NULL",
                    (branch_id, space, key),
                ):
                    for seq, length in _refs(refs):
                        _mark(seq, length, bases, needed)
        removed = 0
        for seq in sorted(candidates, reverse=True):
            base, base_len = bases[seq]
            own_from = base_len if base is not None else 0
            keep = needed.get(seq, 0)
            if keep == 0:
                removed += _count(conn, seq, 0)
                conn.execute("DELETE FROM rewind_seq_items WHERE seq_id = ?", (seq,))
                conn.execute("DELETE FROM rewind_seqs WHERE id = ?", (seq,))
                continue
            cut = max(keep, own_from)
            removed += _count(conn, seq, cut)
            conn.execute("DELETE FROM rewind_seq_items WHERE seq_id = ? AND idx >= ?", (seq, cut))
        return removed

    @staticmethod
    def _family(engine: Engine, tree: Tree, space: str, key: str, branch_ids: set[int]) -> set[int]:
        """The branches whose entries of the key may read the arrays these branches' rows
        read: the subtree of the oldest ancestor that wrote the key (an array is created
        by a write of its key, and read by the writer and its descendants)."""
        family: set[int] = set()
        for branch_id in branch_ids:
            root = branch_id
            for ancestor in tree.ancestors(branch_id):
                if engine.conn.fetchone(
                    "SELECT 1 FROM rewind_entries WHERE branch_id = ? AND space = ? AND key = ? "
                    "LIMIT 1",
                    (ancestor, space, key),
                ):
                    root = ancestor
            if root not in family:
                family.update(tree.subtree(root))
        return family


def _refs(refs: Any) -> list[tuple[int, int]]:
    if refs is None:
        return []
    try:
        return [(int(seq), int(length)) for _, seq, length in loads(bytes(refs))]
    except (TypeError, ValueError):
        return []


def _mark(seq: int, length: int, bases: dict[int, tuple[Any, Any]], needed: dict[int, int]) -> None:
    """Reading ``length`` items of ``seq`` reads these items of it and of its bases."""
    seen = set()
    while seq in bases and seq not in seen and length > 0:
        seen.add(seq)
        if needed[seq] >= length:
            return  # it and its bases are read this far already
        needed[seq] = length
        base, base_len = bases[seq]
        if base is None:
            return
        seq, length = base, min(length, base_len)


def _count(conn: Any, seq: int, start: int) -> int:
    row = conn.fetchone(
        "SELECT count(*) FROM rewind_seq_items WHERE seq_id = ? AND idx >= ?", (seq, start)
    )
    return int(row[0])


def purged_name(branch_id: int) -> str:
    """What a purged branch's row is called while something still names it."""
    return f"~purged/{branch_id}"


def purged(record: Any) -> bool:
    """Whether a deleted branch's rows were purged (``purge``, ``db.gc()``): all but those
    a live branch reads are gone; its row stays, renamed, while something names it."""
    return record.deleted_at is not None and record.name == purged_name(record.id)


def still_read(engine: Engine, branch_id: int, version: int) -> bool:
    """Whether a branch that is not purged reads this branch's rows up to ``version``
    through its lineage (a fork reads its parent up to its fork point, and so on down):
    a purge keeps exactly those rows (``purge_deleted``), so its state there is whole."""
    tree = Tree(engine)
    stack, seen = [branch_id], {branch_id}
    found = False
    while stack and not found:
        for child in tree.children.get(stack.pop(), ()):
            if child in seen or tree.forked_at[child] < version:
                continue  # (below its fork point: it reads less of the branch than that)
            seen.add(child)
            if child not in tree.deleted or tree.name[child] != purged_name(child):
                found = True
                break
            stack.append(child)
    return found and not _erased_there(engine, tree, branch_id, version)


def _erased_there(engine: Engine, tree: Tree, branch_id: int, version: int) -> bool:
    """Whether the state of the branch as of ``version`` reads an erased entry of a purged
    branch of its lineage: a purge erases the values no remaining branch reads at any
    version it can read (``_erase_unread``), so the state there is no longer whole."""
    cap = version
    for step in [branch_id, *tree.ancestors(branch_id)]:
        if step in tree.deleted and tree.name.get(step) == purged_name(step):
            row = engine.conn.fetchone(
                "SELECT 1 FROM rewind_entries e WHERE branch_id = ? AND kind = ? "
                "AND version <= ? AND version = (SELECT max(version) FROM rewind_entries n "
                "WHERE n.branch_id = e.branch_id AND n.space = e.space AND n.key = e.key "
                "AND n.version <= ?) LIMIT 1",
                (step, _commit_hash.KIND_ERASED, cap, cap),
            )
            if row is not None:
                return True
        cap = min(cap, tree.forked_at[step])
    return False


def purge_branch(engine: Engine, name: str) -> ErasureReceipt:
    """Delete branch ``name`` and remove its rows and its deleted descendants' (see the
    module's docstring). The caller refused ``default`` and pinned branches."""
    with engine.conn.write():
        record = engine.branch(name)
        engine.conn.execute(
            "UPDATE rewind_branches SET deleted_at = ? WHERE id = ?",
            (now_micros(), record.id),
        )
        return purge_deleted(engine, [record.id])


def purge_deleted(engine: Engine, branch_ids: Iterable[int]) -> ErasureReceipt:
    """Remove the rows of these deleted branches and of their deleted descendants, in the
    open write transaction."""
    conn = engine.conn
    tree = Tree(engine)
    doomed, cuts, reach = _doomed(engine, tree, branch_ids)
    sweep = Sweep()
    counts = {"branches": 0, "entries": 0, "events": 0, "commits": 0}
    removed: dict[int, int] = {}
    if doomed:
        hold_clock(conn, engine.clock())
    for branch_id in sorted(doomed, reverse=True):
        cut = cuts[branch_id]
        above = -1 if cut is None else cut
        links = reach.get(branch_id)
        for space, key, refs in conn.fetchall(
            "SELECT space, key, refs FROM rewind_entries WHERE branch_id = ? AND version > ? "
            "AND refs IS NOT NULL",
            (branch_id, above),
        ):
            sweep.add(branch_id, space, key, refs)
        removed[branch_id] = 0
        for table, noun in (
            ("rewind_entries", "entries"),
            ("rewind_events", "events"),
            ("rewind_commits", "commits"),
        ):
            where = f"FROM {table} WHERE branch_id = ? AND version > ?"
            params: tuple[int, ...] = (branch_id, above)
            if noun == "commits" and links is not None:  # the links stay (_merge_reach)
                where += " AND (merge_branch_id IS NULL OR version > ?)"
                params = (*params, links)
            found = int(conn.fetchone(f"SELECT count(*) {where}", params)[0])
            if found:
                conn.execute(f"DELETE {where}", params)
            counts[noun] += found
            removed[branch_id] += found
        if cut is None:
            conn.execute("DELETE FROM rewind_horizons WHERE branch_id = ?", (branch_id,))
    # Of the rows kept up to a cut, the values no remaining branch reads at any version
    # it can still read (a fork that overwrote a key, with its history below the
    # overwrite cut) are erased: their entries stay (the hash chains hold their digests).
    erased = _erase_unread(engine, tree, doomed, cuts, sweep)
    counts["entries"] += erased  # (as erase_keys counts them: their values are gone)
    # Then the rows of the branches, once no removed row names them (children first).
    changed = any(removed.values()) or erased > 0
    for branch_id in sorted(doomed, reverse=True):
        cut = cuts[branch_id]
        links = reach.get(branch_id)
        kept_links, sealed = (
            _seal_links(engine, branch_id, -1 if cut is None else cut) if links else (0, False)
        )
        changed = changed or sealed
        row_goes = cut is None and not kept_links and not _named_elsewhere(engine, branch_id)
        was = tree.name.get(branch_id)
        if row_goes:
            conn.execute("DELETE FROM rewind_branches WHERE id = ?", (branch_id,))
        elif was != purged_name(branch_id):
            conn.execute(
                "UPDATE rewind_branches SET name = ? WHERE id = ?",
                (purged_name(branch_id), branch_id),
            )
        # A branch purged before counts again only when more of it went now.
        if removed[branch_id] or row_goes or was != purged_name(branch_id):
            counts["branches"] += 1
            changed = True
    items = sweep.run(engine, tree)
    if changed or items:
        bump_generation(conn)
        conn.request_reclaim()
    engine.memory.clear()
    return ErasureReceipt(engine.clock(), list_items=items, **counts)


def _doomed(
    engine: Engine, tree: Tree, branch_ids: Iterable[int]
) -> tuple[set[int], dict[int, int | None], dict[int, int]]:
    """What a purge of these deleted branches removes rows of, each one's cut (``_cuts``)
    and the merge links it keeps (``_merge_reach``)."""
    doomed: set[int] = set()
    for branch_id in branch_ids:
        stack = [branch_id]
        while stack:  # deleted descendants, through deleted branches only
            step = stack.pop()
            if step in doomed or step not in tree.deleted:
                continue
            doomed.add(step)
            stack.extend(tree.children.get(step, ()))
        # Deleted ancestors kept rows only for what this branch read: those may go now.
        for ancestor in tree.ancestors(branch_id):
            if ancestor not in tree.deleted:
                break
            doomed.add(ancestor)
    # A purge that removes merge commits naming branches purged before may leave their
    # links unreached: those are purged again with these (their links, nothing else of
    # them is left above what live forks read), until no more come.
    while True:
        cuts = _cuts(tree, doomed)
        reach, unnamed = _merge_reach(engine, tree, doomed, cuts)
        again = {
            branch_id
            for branch_id in unnamed - doomed
            if branch_id in tree.deleted and tree.name.get(branch_id) == purged_name(branch_id)
        }
        if not again:
            break
        doomed |= again
    return doomed, cuts, reach


def unread_values(engine: Engine, branch_ids: Iterable[int], tree: Tree | None = None) -> bool:
    """Whether a purge of these deleted branches (purged before, say) would erase values
    they keep: ones no remaining branch reads any more (a fork that overwrote them since
    and had its history below the overwrite cut). ``tree``: the branches, if read."""
    tree = tree if tree is not None else Tree(engine)
    doomed, cuts, _ = _doomed(engine, tree, branch_ids)
    return _erase_unread(engine, tree, doomed, cuts, Sweep(), write=False) > 0


def _readers(engine: Engine, tree: Tree, doomed: set[int]) -> list[tuple[int, int, list[int]]]:
    """The branches a purge keeps rows for: every branch neither doomed nor purged (a
    deleted one not yet purged still counts), with the lowest version it can read (its
    fork point, or its horizon's ``kept_from`` above it: a branch reads nothing as of a
    version before it existed) and its lineage, itself first."""
    kept_from = engine.kept_froms()
    found = []
    for branch_id in tree.parent:
        if branch_id in doomed:
            continue
        if branch_id in tree.deleted and tree.name.get(branch_id) == purged_name(branch_id):
            continue
        lineage = [branch_id, *tree.ancestors(branch_id)]
        if any(step in doomed for step in lineage):
            low = max(tree.forked_at[branch_id] or 0, kept_from.get(branch_id, 0))
            found.append((branch_id, low, lineage))
    return found


def _erase_unread(
    engine: Engine,
    tree: Tree,
    doomed: set[int],
    cuts: dict[int, int | None],
    sweep: Sweep,
    *,
    write: bool = True,
) -> int:
    """Erase the values of the doomed branches' kept entries (at or below their cuts)
    that no reader (``_readers``) reads at any version it can read; returns how many.

    A reader at version ``v`` reads a step of its lineage as of ``min(v, c)``, ``c`` the
    lowest fork point on the way there, and a key there only while no nearer step has an
    entry of it visible: from the version of the oldest such entry on, the nearer one
    shadows it. So of a doomed branch's entries of a key, a reader that reads from
    version ``low`` and is shadowed from ``shadow`` on reads the newest one at or below
    ``min(low, c)`` and every one above that up to ``min(shadow - 1, c)``."""
    conn = engine.conn
    kept = {branch_id: cut for branch_id, cut in cuts.items() if cut is not None}
    if not kept:
        return 0
    entries: dict[int, dict[tuple[str, str], list[int]]] = {}

    def rows_of(branch_id: int) -> dict[tuple[str, str], list[int]]:
        if branch_id not in entries:
            found: dict[tuple[str, str], list[int]] = defaultdict(list)
            for space, key, version in conn.fetchall(
                "SELECT space, key, version FROM rewind_entries WHERE branch_id = ? "
                "ORDER BY version",
                (branch_id,),
            ):
                found[(space, key)].append(int(version))
            entries[branch_id] = found
        return entries[branch_id]

    needed: set[tuple[int, str, str, int]] = set()
    for _reader, low, lineage in _readers(engine, tree, doomed):
        caps: list[int | None] = [None]  # (the reader itself: no cap)
        cap: int | None = None
        for child in lineage[:-1]:
            fork = tree.forked_at[child]
            cap = fork if cap is None else min(cap, fork)
            caps.append(cap)
        shadow: dict[tuple[str, str], int] = {}  # key -> from which version it is shadowed
        for step, step_cap in zip(lineage, caps, strict=True):
            own = rows_of(step)
            if step in kept and step_cap is not None:
                top = min(step_cap, kept[step])
                first = min(low, step_cap)
                for (space, key), versions in own.items():
                    shadowed = shadow.get((space, key))
                    if shadowed is None:
                        shadowed = top + 1
                    elif shadowed <= low:
                        continue  # shadowed at every version the reader can read
                    last = min(shadowed - 1, top)
                    below = [v for v in versions if v <= first]
                    if below:
                        needed.add((step, space, key, below[-1]))
                    for version in versions:
                        if first < version <= last:
                            needed.add((step, space, key, version))
            for (space, key), versions in own.items():
                visible = [v for v in versions if step_cap is None or v <= step_cap]
                if visible and visible[0] < shadow.get((space, key), visible[0] + 1):
                    shadow[(space, key)] = visible[0]
    marker = _commit_hash.erased_trigger(engine.clock())
    erased = 0
    for branch_id, cut in sorted(kept.items()):
        for space, key, version, kind, body, refs, trigger in conn.fetchall(
            "SELECT space, key, version, kind, body, refs, trigger FROM rewind_entries "
            "WHERE branch_id = ? AND version <= ?",
            (branch_id, cut),
        ):
            if kind in (_commit_hash.KIND_ERASED, 2):
                continue  # erased already, or a deletion (no value)
            if (branch_id, space, key, int(version)) in needed:
                continue
            erased += 1
            if not write:
                return erased  # (one is enough to tell)
            digest = _commit_hash.stored_entry_digest(space, key, kind, body, refs, trigger)
            sweep.add(branch_id, space, key, refs)
            conn.execute(
                "UPDATE rewind_entries SET kind = ?, body = ?, refs = NULL, trigger = ? "
                "WHERE branch_id = ? AND space = ? AND key = ? AND version = ?",
                (_commit_hash.KIND_ERASED, digest, marker, branch_id, space, key, version),
            )
    return erased


def _cuts(tree: Tree, doomed: set[int]) -> dict[int, int | None]:
    """For each doomed branch: the newest version of it that something kept still reads
    through its lineage (None: nothing), which its rows up to there stay for."""
    cuts: dict[int, int | None] = {}

    def cut_of(branch_id: int) -> int | None:
        if branch_id in cuts:
            return cuts[branch_id]
        cuts[branch_id] = None  # a damaged (cyclic) tree reads as nothing kept
        best: int | None = None
        for child in tree.children.get(branch_id, ()):
            fork = tree.forked_at[child]
            if child in doomed:
                below = cut_of(child)
                if below is None:
                    continue
                fork = min(fork, below)
            best = fork if best is None else max(best, fork)
        cuts[branch_id] = best
        return best

    return {branch_id: cut_of(branch_id) for branch_id in doomed}


def _merge_reach(
    engine: Engine, tree: Tree, doomed: set[int], cuts: dict[int, int | None]
) -> tuple[dict[int, int], set[int]]:
    """For each doomed branch with merge commits above what it keeps (``cuts``) that a
    remaining branch's history may still walk through: the newest version of it such a
    walk can hold. Its merge commits at or below that version stay, as links.

    ``merge.contained_history`` finds what a point holds by following its lineage (a fork
    holds its parent up to its fork point) and, at each step, the merge commits there
    (a merge holds its source up to the merged version). Without a doomed branch's merge
    commits, every branch that merged it would seem to hold less than it does, and a
    merge base found through it would be older than the true one: the merge would go
    ahead and put back values the target had replaced (or report conflicts that are not
    there). A walk reaches a doomed branch only from a row that stays: a remaining
    child's fork, a remaining merge commit that names it, or a kept link of another
    doomed branch (so the reach of each is found together, until none grows). A
    remaining branch counts whether or not anything live reaches it (the reach is never
    too low; a later purge of what reached it lowers it, and purges it again).

    Returns the reaches, and the branches that the merge commits this purge removes
    merged (their links may be unreached now).
    """
    conn = engine.conn
    own: dict[int, list[tuple[int, int]]] = {}
    for branch_id in doomed:  # (the merges index: commits have no index by branch)
        cut = cuts[branch_id]
        rows = conn.fetchall(
            "SELECT version, merge_branch_id FROM rewind_commits WHERE branch_id = ? "
            "AND merge_branch_id IS NOT NULL AND version > ?",
            (branch_id, -1 if cut is None else cut),
        )
        if rows:
            own[branch_id] = [(int(version), int(merged)) for version, merged in rows]
    if not own:
        return {}, set()  # nothing above the cuts that a walk could need (the common case)
    naming: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    ids = sorted(doomed)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for on, version, merged, merged_version in conn.fetchall(
            "SELECT branch_id, version, merge_branch_id, merge_version FROM rewind_commits "
            f"WHERE merge_branch_id IN ({marks})",
            chunk,
        ):
            if merged_version is not None:
                naming[int(merged)].append((int(on), int(version), int(merged_version)))
    reach: dict[int, int | None] = dict(cuts)
    grew = True
    while grew:  # each round only raises a reach, to one of finitely many versions
        grew = False
        for branch_id in doomed:
            best = reach[branch_id]
            for child in tree.children.get(branch_id, ()):
                read: int | None = tree.forked_at[child]
                if child in doomed:
                    below = reach[child]
                    read = None if below is None else min(tree.forked_at[child], below)
                if read is not None and (best is None or read > best):
                    best = read
            for on, version, merged_version in naming.get(branch_id, ()):
                if on in doomed:
                    held = reach[on]
                    if held is None or version > held:
                        continue  # a merge commit this purge removes
                if best is None or merged_version > best:
                    best = merged_version
            if best != reach[branch_id]:
                reach[branch_id] = best
                grew = True
    found: dict[int, int] = {}
    unnamed: set[int] = set()
    for branch_id, merges in own.items():
        held, cut = reach[branch_id], cuts[branch_id]
        if held is not None and (cut is None or held > cut):
            found[branch_id] = held
        unnamed.update(merged for version, merged in merges if held is None or version > held)
    return found, unnamed


def _seal_links(engine: Engine, branch_id: int, above: int) -> tuple[int, bool]:
    """Blank the trigger and message of the merge commits a purge kept as links above
    ``above`` (the rows they wrote are gone) and chain their hashes again over what is
    left of the branch, as ``verify`` recomputes them; returns how many there are, and
    whether any changed."""
    conn = engine.conn
    links = conn.fetchall(
        "SELECT version, ts, merge_branch_id, merge_version, trigger, message, hash "
        "FROM rewind_commits WHERE branch_id = ? AND merge_branch_id IS NOT NULL "
        "AND version > ? ORDER BY version",
        (branch_id, above),
    )
    if not links:
        return 0, False
    row = conn.fetchone(
        "SELECT hash FROM rewind_commits WHERE branch_id = ? AND version <= ? "
        "ORDER BY version DESC LIMIT 1",
        (branch_id, above),
    )
    if row is None:  # the chain starts where retention cut it, if it did
        row = conn.fetchone(
            "SELECT previous_hash FROM rewind_horizons WHERE branch_id = ?", (branch_id,)
        )
    previous: str | None = None if row is None else row[0]
    changed = False
    for version, ts, merged, merged_version, trigger, message, stored in links:
        sealed = _commit_hash.commit_hash(
            previous, (version, branch_id, ts, None, None, merged, merged_version), (), ()
        )
        if (trigger, message, stored) != (None, None, sealed):
            conn.execute(
                "UPDATE rewind_commits SET trigger = NULL, message = NULL, hash = ? "
                "WHERE version = ?",
                (sealed, version),
            )
            changed = True
        previous = sealed
    return len(links), changed


def _named_elsewhere(engine: Engine, branch_id: int) -> bool:
    """Whether another row names the branch (as a parent, a merge source or the first
    home of a carried event), so its row must stay for reads to resolve it."""
    conn = engine.conn
    return any(
        conn.fetchone(sql, (branch_id,)) is not None
        for sql in (
            "SELECT 1 FROM rewind_branches WHERE parent_id = ? LIMIT 1",
            "SELECT 1 FROM rewind_commits WHERE merge_branch_id = ? LIMIT 1",
            "SELECT 1 FROM rewind_events WHERE origin_branch_id = ? LIMIT 1",
        )
    )


def erase_keys(
    engine: Engine,
    space: str,
    keys: Iterable[str],
    *,
    branch: str | None = None,
    missing_ok: bool = False,
) -> ErasureReceipt:
    """Erase every value these keys of ``space`` ever had (see the module's docstring): on
    every branch, or with ``branch`` on that branch and every branch forked from it, and
    what they inherited (for every branch that inherits it too). A key no branch in that
    scope wrote is ``not_found.key`` unless ``missing_ok``."""
    if space not in SPACES:
        raise InvalidInputError(
            f"space must be one of {', '.join(SPACES)}, not {space!r}", code="invalid.space"
        )
    if isinstance(keys, str):
        raise InvalidInputError(
            "keys must be a list of keys, not one string (erase_key takes one)",
            code="invalid.key",
        )
    wanted = sorted({check_name(key, "key") for key in keys})
    conn = engine.conn
    with conn.write():
        tree = Tree(engine)
        scope: list[tuple[int, int | None]] = [
            (branch_id, None) for branch_id in sorted(tree.parent)
        ]
        if branch is not None:
            record = engine.branch(branch)
            scope = [(branch_id, None) for branch_id in tree.subtree(record.id)]
            scope += [
                (branch_id, cap)
                for branch_id, cap in engine.row_lineage(record, engine.clock())
                if branch_id != record.id
            ]
        version = engine.clock()
        rows = []
        for key in wanted:
            found = []
            for branch_id, cap in scope:
                sql = (
                    "SELECT version, kind, body, refs, trigger FROM rewind_entries "
                    "WHERE branch_id = ? AND space = ? AND key = ?"
                )
                params: tuple[Any, ...] = (branch_id, space, key)
                if cap is not None:
                    sql, params = sql + " AND version <= ?", (*params, cap)
                found += [(branch_id, key, *row) for row in conn.fetchall(sql, params)]
            if not found and not missing_ok:
                where = "no branch" if branch is None else f"no branch that {branch!r} reads"
                raise NotFoundError(
                    f"{where} ever wrote {space} key {key!r}: there is nothing to erase",
                    code="not_found.key",
                    space=space,
                    key=key,
                )
            rows += found
        sweep = Sweep()
        erased = 0
        kind_erased, marker = _commit_hash.KIND_ERASED, _commit_hash.erased_trigger(version)
        for branch_id, key, at, kind, body, refs, trigger in rows:
            if kind in (kind_erased, 2):  # erased already, or a deletion
                continue
            digest = _commit_hash.stored_entry_digest(space, key, kind, body, refs, trigger)
            sweep.add(branch_id, space, key, refs)
            conn.execute(
                "UPDATE rewind_entries SET kind = ?, body = ?, refs = NULL, trigger = ? "
                "WHERE branch_id = ? AND space = ? AND key = ? AND version = ?",
                (kind_erased, digest, marker, branch_id, space, key, at),
            )
            erased += 1
        items = sweep.run(engine, tree)
        if erased:
            bump_generation(conn)
            conn.request_reclaim()
        engine.memory.clear()
        return ErasureReceipt(version, entries=erased, list_items=items)
