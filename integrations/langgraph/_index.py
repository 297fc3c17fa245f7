"""The saver's index: where each checkpoint lives.

It is kept as kv keys on its own branch (``lg-index``), so the thread branches hold only
LangGraph state. Keys (see ``_names``):

- ``cp/<thread>/<ns>/<checkpoint_id>`` -> ``{"branch", "read", "version", "events",
  "parent", "run_id"}``: the checkpoint is readable on ``read`` as of ``version``; its
  pending writes are the events of ``branch`` from sequence ``events`` on; its children
  continue ``branch`` while it is that branch's newest checkpoint.
- ``ns/<thread>/<ns>`` -> ``{"main": branch, "head": id, "newest": branch}``: the
  namespace's first branch, and its newest checkpoint: the newer of ``head`` and the
  newest checkpoint of branch ``newest``, where its checkpoints go (so the record is
  written again only when they go to another branch; ``head`` alone in older records).
  ``"thread": id`` and ``"ns": namespace`` when the names hold their digest
  (``_names.Digest``: the empty thread id, long ones), which is how a key read back
  names them.
- Thread ids and namespaces in keys are escaped, or digests (see ``_names``).
- ``run/<run_id>/<thread>/<ns>/<id>``: the checkpoints of a run.
- ``own/<thread>/<branch>``: branches a thread created; ``ref/<branch>/<thread>``:
  branches a copied thread reads from, kept while referenced; ``held/<branch>``: a
  branch its thread let go while a copy still read it (purged with the last ``ref``).
  An ``own`` or ``ref`` key that holds the digest of its branch's name (one too long to
  fit beside the thread's part) has the name as its value (else ``True``).
- ``gone/<digest of thread>`` -> ``{"through": id, "deleted": id}``: a thread's
  tombstone. ``through``: the newest checkpoint ``delete_thread``, ``prune`` or
  ``delete_for_runs`` removed (a late pending write of one is dropped); ``deleted``: the
  newest ``delete_thread`` removed (a late checkpoint of the deleted thread is dropped
  too, instead of bringing the thread back).

Records that go are deleted and then erased (``db.erase_key``): read ``as_of`` any
earlier version, the index no longer lists them either.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import rewinddb

from . import _names


class Index:
    """Read and write the index branch of one database."""

    def __init__(self, db: rewinddb.Database) -> None:
        self.db = db
        if not db.branches.exists(_names.INDEX_BRANCH):
            with db.atomic():  # several processes may open the first saver at once
                if not db.branches.exists(_names.INDEX_BRANCH):
                    db.branches.fork("default", _names.INDEX_BRANCH, at=0)
        self.view = db.at(_names.INDEX_BRANCH)

    def get(self, key: str) -> Any:
        """The record at ``key`` (None if there is none); do not change it in place."""
        return self.view.kv.get(key)

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        """The records at those of ``keys`` that have one, read together."""
        return self.view.kv.get_many(keys)

    def keys(self, prefix: str) -> list[str]:
        return list(self.view.kv.keys(prefix))

    def readers(self, branch: str) -> list[str]:
        """The ``ref`` keys of the copied threads that read ``branch``."""
        return [key for prefix in _names.ref_prefixes(branch) for key in self.keys(prefix)]

    def branches_of(self, keys: Iterable[str]) -> dict[str, str]:
        """The branch each ``own`` or ``ref`` key names, by key: in the key, or its
        value when the key holds the digest of the name (``_names.names_branch``)."""
        keys = list(keys)
        named = self.get_many([key for key in keys if _names.names_branch(key)])
        found = {}
        for key in keys:
            branch = named.get(key, _names.branch_of_key(key))
            found[key] = branch if isinstance(branch, str) else _names.branch_of_key(key)
        return found

    def records(self, thread_id: str, checkpoint_ns: str | None = None) -> list[str]:
        """Checkpoint keys of a thread (of one namespace when given)."""
        if checkpoint_ns is None:
            return self.keys("cp/" + _names.thread_prefix(thread_id))
        return self.keys(_names.checkpoint_key(thread_id, checkpoint_ns, ""))

    def write(self, puts: dict[str, Any], deletes: Iterable[str] = ()) -> None:
        """Apply ``puts`` and ``deletes`` as one version."""
        deletes = [key for key in deletes if key not in puts]
        if not puts and not deletes:
            return
        if not deletes:  # one write: a version of its own, no transaction to open
            self.view.kv.put_many(puts, trigger="langgraph.index")
        else:
            with self.view.transaction(trigger="langgraph.index"):
                if puts:
                    self.view.kv.put_many(puts)
                for key in deletes:
                    self.view.kv.delete(key)

    def erase(self, keys: Iterable[str]) -> None:
        """Erase every value the index ``keys`` ever had, at every version (they then
        read as absent as of any version; ``key_history`` shows them erased)."""
        keys = list(keys)
        for key in keys:
            if not key.startswith(_names.INDEX_PREFIXES):
                raise ValueError(f"{key!r} is not a key of the saver's index")
        if keys:  # the index branch and nothing else (it has no forks, it inherits nothing)
            self.db.erase_keys("kv", keys, branch=_names.INDEX_BRANCH, missing_ok=True)
