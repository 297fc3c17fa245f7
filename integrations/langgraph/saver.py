"""``RewindSaver``: a LangGraph checkpointer that records threads as rewinddb branches."""

from __future__ import annotations

import asyncio
import bisect
import builtins
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

import rewinddb

from . import _kept, _names
from ._codec import (
    Decoder,
    Encoder,
    _json_copy,
    dump_record,
    dump_typed,
    held,
    load_record,
    load_typed,
    pairs_of,
    text_keys,
)
from ._index import Index

#: The longest thread id the saver takes (one too long to stand as itself in names stands
#: as its digest there, see ``_names``; the id itself is kept once per namespace).
THREAD_ID_LIMIT = 65_536


def _bad_config(message: str) -> rewinddb.InvalidInputError:
    """A config or thread id the saver refuses."""
    return rewinddb.InvalidInputError(message, code="invalid.config")


def _text(value: str) -> bool:
    """Whether ``value`` is text the store can hold (no lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _thread_id(value: Any, what: str) -> str:
    """A thread id as the saver names it (``str`` of it, as LangGraph's savers do), or a
    ``RewindError`` that says why it cannot be one."""
    thread_id = str(value)
    if len(thread_id) > THREAD_ID_LIMIT:
        raise _bad_config(
            f"{what}: RewindSaver takes thread ids of up to {THREAD_ID_LIMIT:,} characters; "
            f"this one has {len(thread_id):,} (use a shorter id, such as a digest of it)"
        )
    if not _text(thread_id):
        raise _bad_config(
            f"{what}: the thread id {thread_id[:40]!r}... is not valid Unicode text (it "
            "holds a lone surrogate), so RewindSaver cannot name its branch"
        )
    return thread_id


def _target(config: RunnableConfig | None, what: str) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` of a config, or a clear error (a
    thread id, namespace or checkpoint id the saver cannot take: ``RewindError``, before
    anything is read or written)."""
    if not isinstance(config, dict) or not isinstance(config.get("configurable"), dict):
        raise ValueError(
            f"{what} needs a config like {{'configurable': {{'thread_id': ...}}}}, got {config!r}"
        )
    configurable = config["configurable"]
    thread_id = configurable.get("thread_id")
    if thread_id is None:
        raise ValueError(
            f"{what}: the config has no 'thread_id' in 'configurable'; pass "
            "{'configurable': {'thread_id': '<your thread id>'}}"
        )
    checkpoint_ns = str(configurable.get("checkpoint_ns") or "")
    if not _text(checkpoint_ns):
        raise _bad_config(
            f"{what}: the checkpoint_ns {checkpoint_ns[:40]!r}... is not valid Unicode text"
        )
    checkpoint_id = configurable.get("checkpoint_id") or None
    if checkpoint_id is not None:
        checkpoint_id = _checkpoint_id(checkpoint_id, what)
    return _thread_id(thread_id, what), checkpoint_ns, checkpoint_id


def _checkpoint_id(value: Any, what: str) -> str:
    """A checkpoint id the saver can name (LangGraph's are 36 characters)."""
    if not isinstance(value, str) or len(value) > _names.CHECKPOINT_ID or not _text(value):
        raise _bad_config(
            f"{what}: RewindSaver takes checkpoint ids of up to {_names.CHECKPOINT_ID} "
            f"characters of text (LangGraph's are 36), not {str(value)[:80]!r}"
        )
    return value


def _own(stored: Any, given: Any) -> Any:
    """What ``dump_record`` made of ``given``, as a copy of its own when that is the dict
    itself (plain JSON): LangGraph may change the dicts inside it after the call."""
    return _json_copy(stored) if stored is given else stored


def _names_of(thread_id: str, checkpoint_ns: str) -> dict[str, str]:
    """What a namespace's record keeps of its thread id and namespace: each that the
    saver's names hold the digest of (``_names.kept_names``)."""
    return _names.kept_names(thread_id, checkpoint_ns)


def _before_id(before: RunnableConfig | None) -> str | None:
    """The checkpoint id a ``list(before=...)`` config names: LangGraph passes only
    ``{"configurable": {"checkpoint_id": ...}}`` there (no thread), and so do users."""
    if before is None:
        return None
    if not isinstance(before, dict) or not isinstance(before.get("configurable"), dict):
        raise ValueError(
            "list(before=...) needs a config like "
            f"{{'configurable': {{'checkpoint_id': ...}}}}, got {before!r}"
        )
    checkpoint_id = before["configurable"].get("checkpoint_id")
    return str(checkpoint_id) if checkpoint_id else None


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _versions_on_fork(
    checkpoint: Checkpoint, held: ChannelVersions, new_versions: ChannelVersions
) -> ChannelVersions:
    """The channels to store for a checkpoint that starts a new branch, which holds
    ``held`` (its fork point's versions). LangGraph's ``new_versions`` are relative to the
    checkpoint the values came from, which for a copy (``update_state(..., as_node=
    "__copy__")``, saved under the original's parent with ``new_versions={}``) is not
    that fork point: every channel it does not hold at the checkpoint's version."""
    values = checkpoint.get("channel_values", {})
    stale = {
        channel: version
        for channel, version in checkpoint["channel_versions"].items()
        if held.get(channel) != version and (channel in values or channel in held)
    }
    return {**stale, **new_versions}


#: A dict written with at least this many members is kept as a channel value is, beside
#: its event: a node that returns its whole dict of notes each turn then stores only what
#: it added (``_arrays`` shares the pairs with the previous write of it). Only with the
#: stock serializer: the pairs' keys are the user's, and any other serializer (one that
#: encrypts) sees each write whole, in its event.
KEPT_MEMBERS = 16


def _kept_as_channel(value: Any, encoder: Encoder) -> bool:
    return encoder.stock and type(value) is dict and len(value) >= KEPT_MEMBERS and text_keys(value)


#: The digits of a channel version (``get_next_version``): ten thousand trillion steps.
_VERSION_DIGITS = 16

#: The strategies of ``prune``.
_STRATEGIES = ("keep_latest", "keep_last", "delete")

#: Metadata keys a graph with a ``DeltaChannel`` leaves in its checkpoints (LangGraph
#: Python's update counters; LangGraph.js marks the threads it starts).
_DELTA_MARKS = frozenset({"counters_since_delta_snapshot", "delta_writes_versioned"})


def _bad_retention(message: str) -> rewinddb.InvalidInputError:
    return rewinddb.InvalidInputError(message, code="invalid.retention")


#: ``list`` reads the index records of this many checkpoints at a time.
_LISTED_TOGETHER = 64


class _Placement(NamedTuple):
    """Where ``put`` stores a checkpoint."""

    branch: str
    index_puts: dict[str, Any]  # index entries the placement creates
    namespace: dict | None  # the namespace's index record as it was read
    fork_versions: ChannelVersions | None  # a new branch: the channel versions it holds


class _Encoded(NamedTuple):
    """One pending write as ``put_writes`` encoded it: its channel, its index, and its
    value through the serde (``value``) or as a channel value to keep beside its event
    (``kept``)."""

    channel: str
    idx: int
    value: Any
    kept: dict | None


class _Copy(NamedTuple):
    """A kept checkpoint as ``_rebuild`` writes it anew: what it reads as, read before
    the thread's branches are purged."""

    key: str  # its index key
    ns: str  # its namespace, as its key holds it
    checkpoint_id: str
    entry: dict  # its index record
    stored: dict  # its record (``CHECKPOINT_KEY``), its parent as kept
    values: dict[str, Any]  # channel key -> the stored value it holds
    writes: builtins.list[tuple[dict, dict | None]]  # its pending writes, each kept value
    parent: str | None  # its parent's id, None when the parent goes


#: What a batch read of a key leaves to the checkpoint's own read (see ``_Newest``).
_UNREAD: Any = object()


#: About how many pairs one page of a key's history may hold. A dict's pairs come as a
#: list each; a page is made compact (``held``) before the next is read, so that few of
#: those lists live long enough to cost the garbage collector full collections.
_PAGE_PAIRS = 1024


class _Newest:
    """A key's values at several versions of one branch (``versions``, ascending), from
    its newest entries: ``kv.history`` read newest first, ``expected`` entries in all
    (in pages of about ``_PAGE_PAIRS`` pairs, ``pairs`` an entry at first), and more
    until they reach back to the oldest version, instead of one read each."""

    def __init__(
        self, kv: Any, key: str, versions: builtins.list[int], expected: int, pairs: int = 1
    ) -> None:
        self.values: builtins.list[Any] = []
        self.versions: builtins.list[int] = []
        self.complete = False  # whether no older entry exists than those read
        self.pairs = 1  # the most pairs an entry read holds
        as_of, left = versions[-1], max(expected, 1)
        try:
            while True:
                wanted = min(left, max(1, _PAGE_PAIRS // max(pairs, 1)))
                page = kv.history(key, as_of=as_of, limit=wanted)
                # None for a deletion, or a value erased.
                self.values[:0] = [held(entry.value) for entry in page]
                self.versions[:0] = [entry.version for entry in page]
                pairs = max(map(pairs_of, self.values[: len(page)]), default=1)
                self.pairs = max(self.pairs, pairs)
                if len(page) < wanted:
                    self.complete = True
                    break
                if page[0].version <= versions[0]:
                    break
                as_of = page[0].version - 1
                left = left - len(page) if left > len(page) else 2 * len(page)
        except rewinddb.RewindError:  # e.g. before the fork point: the checkpoint's own
            pass  # read answers (or raises) as ever

    def at(self, version: int) -> Any:
        """The stored value at ``version`` (None: none), or ``_UNREAD`` when the entries
        read do not reach back that far."""
        found = bisect.bisect_right(self.versions, version)
        if not found:
            return None if self.complete else _UNREAD
        return self.values[found - 1]


def _triggers(stored: dict) -> dict[str, Any] | None:
    """The trigger channels a checkpoint's record holds (``_names.is_trigger``), or None
    for a record written before the saver kept them there (they are keys, as every
    other channel)."""
    triggers = stored.get(_names.TRIGGERS)
    return triggers if type(triggers) is dict else None


class _Sealed(NamedTuple):
    """A trigger channel's value as a sealed record holds it: decoded with the record."""

    version: Any
    value: Any


class _Opened(NamedTuple):
    """A checkpoint's record (``CHECKPOINT_KEY``) decoded: LangGraph's bookkeeping (the
    checkpoint without channel values), its metadata (None: still to be loaded from
    the record's ``metadata``), and the trigger channels it holds (channel -> the
    stored value, or ``_Sealed``; None: a record from before they were kept there)."""

    checkpoint: Checkpoint
    metadata: CheckpointMetadata | None
    triggers: dict[str, Any] | None


def _open(serde: SerializerProtocol, stored: dict) -> _Opened:
    """A checkpoint's record decoded. With a serde that is not the stock one the record
    is sealed: its bookkeeping, metadata and trigger values are one output of the serde
    (``_names.SEALED``), the trigger channels' names beside it; a record from before
    that holds each through the serde on its own (``checkpoint``, ``metadata``, and
    each trigger's value)."""
    sealed = stored.get(_names.SEALED)
    if sealed is None:
        return _Opened(load_record(serde, stored["checkpoint"]), None, _triggers(stored))
    parts = load_typed(serde, sealed)
    checkpoint = parts["checkpoint"]
    versions = checkpoint["channel_versions"]
    triggers = {c: _Sealed(versions.get(c), value) for c, value in parts["triggers"].items()}
    return _Opened(checkpoint, parts["metadata"], triggers)


def _metadata_of(
    serde: SerializerProtocol, stored: dict, opened: _Opened | None = None
) -> CheckpointMetadata:
    """The metadata of a checkpoint's record (``opened``: ``_open``'s of it, if made)."""
    if opened is None and _names.SEALED in stored:
        opened = _open(serde, stored)
    if opened is not None and opened.metadata is not None:
        return opened.metadata
    metadata: CheckpointMetadata = load_record(serde, stored["metadata"])
    return metadata


class _Read(NamedTuple):
    """What loading one checkpoint reads from its branch."""

    stored: dict  # its record (``CHECKPOINT_KEY``)
    opened: _Opened  # the record decoded
    blobs: dict[str, Any]  # channel -> its stored value at the checkpoint (or ``_Sealed``)


class _Listing:
    """What one ``list`` call reads once: branch views, the records and channel values of
    each batch of checkpoints, and the pending writes (events) of each branch.

    ``list`` goes from the newest checkpoint to the oldest, so the sequence a branch's
    writes are needed from only decreases: each batch reads just the events before the
    ones already read, instead of every event from the checkpoint on.
    """

    def __init__(self, saver: RewindSaver) -> None:
        self.db, self.serde = saver.db, saver.serde
        self.read: dict[str, tuple[int, dict[str, builtins.list[tuple[int, dict, str]]]]] = {}
        self.views: dict[str, rewinddb.BranchView] = {}
        self.reads: dict[tuple[str, int], _Read] = {}
        #: (branch, key, version) -> a pending write's value kept as a channel value.
        self.kept: dict[tuple[str, str, int], Any] = {}
        #: (branch, key) -> the most pairs an entry of it held in the batches read.
        self.pairs: dict[tuple[str, str], int] = {}
        #: branch -> the sequences of the write events read, and the newest of them.
        self.sequences: dict[str, set[int]] = {}
        self.newest: dict[str, int] = {}
        #: branch -> its log's length, read when no write event from a sequence on was.
        self.lengths: dict[str, int] = {}
        #: The index records the batches read, by key (``_parent_reads`` finds parents).
        self.entries: dict[str, dict] = {}
        #: index key -> whether the checkpoint's parent still reads (``_parent_reads``),
        #: and whether the events read hold all its pending writes (``writes_whole``).
        self.checked: dict[str, tuple[bool, bool]] = {}

    def _pairs(self, branch: str, key: str) -> int:
        """How many pairs to expect an entry of ``key`` to hold (few entries at first)."""
        return self.pairs.get((branch, key), _PAGE_PAIRS // 8)

    def view(self, branch: str) -> rewinddb.BranchView:
        view = self.views.get(branch)
        if view is None:
            view = self.views[branch] = self.db.at(branch)
        return view

    def read_batch(self, entries: Iterable[tuple[str, dict]]) -> None:
        """Read what loading these checkpoints (id, index entry) needs, together: the
        writes' events from the batch's first on, and per branch each key's entries
        down to the batch's oldest checkpoint on it (a statement or two a key)."""
        entries = builtins.list(entries)
        versions: dict[str, set[int]] = {}
        for _, entry in entries:
            versions.setdefault(entry["read"], set()).add(entry["version"])
        kept: dict[tuple[str, str], set[int]] = {}
        self.read_writes(entry for _, entry in entries)
        for checkpoint_id, entry in entries:
            for payload, stored in self.payloads(entry["branch"], entry["events"], checkpoint_id):
                place = _kept.kept_at(payload)
                if place is not None:  # (one out of shape: its checkpoint's load says so)
                    key, version = place
                    kept.setdefault((stored, key), set()).add(version)
        for (branch, key), found in kept.items():
            at = sorted(found)
            newest = _Newest(self.view(branch).kv, key, at, len(at), self._pairs(branch, key))
            self.pairs[(branch, key)] = newest.pairs
            self.kept.update(((branch, key, version), newest.at(version)) for version in at)
        for branch, found in versions.items():
            self._read_branch(branch, sorted(found))

    def read_writes(self, entries: Iterable[dict]) -> None:
        """Read the write events these checkpoints' (index entries) need: each branch's
        from the oldest of them on, in one read a branch, for ``payloads`` to share."""
        starts: dict[str, int] = {}
        for entry in entries:
            branch, start = entry["branch"], entry["events"]
            starts[branch] = min(starts.get(branch, start), start)
        for branch, start in starts.items():
            self._events_from(branch, start)

    def _read_branch(self, branch: str, versions: builtins.list[int]) -> None:
        kv = self.view(branch).kv
        records = _Newest(kv, _names.CHECKPOINT_KEY, versions, len(versions))
        loaded: dict[int, tuple[dict, _Opened]] = {}
        held: dict[str, set] = {}  # channel -> the versions of it the batch holds
        written = set(records.versions)
        for version in versions:
            stored = records.at(version)
            # (Its own record, written at its version: below a retention cut an older
            # one may stand there, and then the checkpoint's own read answers.)
            if stored is not _UNREAD and stored is not None and version in written:
                opened = _open(self.serde, stored)
                loaded[version] = (stored, opened)
                triggers = opened.triggers
                for channel, channel_version in opened.checkpoint["channel_versions"].items():
                    if triggers is None or not _names.is_trigger(channel):
                        held.setdefault(channel, set()).add(channel_version)
        # Each version of a channel a checkpoint holds was stored as one entry.
        newest = {}
        for channel in sorted(held):
            key = _names.channel_key(channel)
            newest[channel] = _Newest(
                kv, key, versions, len(held[channel]), self._pairs(branch, key)
            )
            self.pairs[(branch, key)] = newest[channel].pairs
        for version, (stored, opened) in loaded.items():
            triggers = opened.triggers
            blobs = {
                c: triggers.get(c)
                if triggers is not None and _names.is_trigger(c)
                else newest[c].at(version)
                for c in opened.checkpoint["channel_versions"]
            }
            unread = {_names.channel_key(c): c for c, blob in blobs.items() if blob is _UNREAD}
            if unread:
                try:
                    found = kv.get_many(builtins.list(unread), as_of=version)
                except rewinddb.HistoryUnavailableError:
                    continue  # below a retention cut: the checkpoint's own read answers
                blobs.update((channel, found.get(key)) for key, channel in unread.items())
            self.reads[(branch, version)] = _Read(stored, opened, blobs)

    def take(self, entry: dict) -> _Read | None:
        """What ``read_batch`` read for the checkpoint of ``entry`` (once: its objects go
        to one checkpoint tuple), or None."""
        return self.reads.pop((entry["read"], entry["version"]), None)

    def _events_from(
        self, branch: str, start: int
    ) -> dict[str, builtins.list[tuple[int, dict, str]]]:
        """The write events of ``branch`` from sequence ``start`` on (and any read already
        from an older one), grouped by checkpoint id."""
        known = self.read.get(branch)
        if known is None or start < known[0]:
            log = self.view(branch).events
            after = start - 1 if start else None
            events = None
            if known is not None:
                wanted = known[0] - start
                events = log.list(after=after, limit=wanted)
                if [item.event.sequence for item in events] != list(range(start, known[0])):
                    events = None  # not one contiguous run: read everything from start
            grouped: dict[str, builtins.list[tuple[int, dict, str]]] = {}
            if events is None:
                events = log.list(event_type=_names.WRITE_EVENT, after=after)
            elif known is not None:
                grouped = known[1]
            sequences = self.sequences.setdefault(branch, set())
            for item in events:
                event = item.event
                if event.event_type == _names.WRITE_EVENT:
                    grouped.setdefault(event.payload["checkpoint_id"], []).append(
                        (event.sequence, event.payload, event.branch)
                    )
                    sequences.add(event.sequence)
            self.newest[branch] = max(sequences, default=-1)
            known = self.read[branch] = (start, grouped)
        return known[1]

    def writes_whole(self, entry: dict) -> bool:
        """Whether the events read hold all of a checkpoint's pending writes: the one at
        its first sequence, or none from there on while the log is no longer (store
        retention removes a branch's oldest events). False for a gap: the checkpoint's
        own read then tells (``_read_point``)."""
        branch, start = entry["branch"], int(entry["events"])
        self._events_from(branch, start)
        if start in self.sequences[branch]:
            return True
        if self.newest[branch] > start:
            return False
        if branch not in self.lengths:
            self.lengths[branch] = self.view(branch).events.length()
        return self.lengths[branch] <= start

    def payloads(
        self, branch: str, start: int, checkpoint_id: str
    ) -> builtins.list[tuple[dict, str]]:
        """Payloads of the write events of ``checkpoint_id`` on ``branch`` from ``start``,
        each with the branch that stored it."""
        grouped = self._events_from(branch, start)
        writes = sorted(grouped.get(checkpoint_id, ()), key=lambda write: write[0])
        return [(payload, stored) for sequence, payload, stored in writes if sequence >= start]


class RewindSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on a rewinddb database.

    Each thread (and each subgraph namespace) is a branch ``lg/<thread_id>``
    (``lg/<thread_id>/<ns>``); each checkpoint is one version on it; pending writes are
    events on it. A checkpoint written from a parent that already has a child (time
    travel) starts a new branch ``<branch>~<id>`` forked at the parent's version.
    """

    def __init__(self, db: rewinddb.Database, *, serde: SerializerProtocol | None = None):
        super().__init__(serde=serde or JsonPlusSerializer())
        self.db = db
        self.index = Index(db)
        self.lock = threading.RLock()
        self._early_writes: dict[tuple[str, str, str], list[tuple[list[_Encoded], str, str]]] = {}

    @property
    def serde(self) -> SerializerProtocol:
        """The serializer of stored values. Setting it (as LangGraph's ``with_allowlist``
        does on a copy of the saver when strict msgpack is on) also gives the saver
        codecs that use it."""
        return self._serde

    @serde.setter
    def serde(self, serde: SerializerProtocol) -> None:
        self._serde = serde
        self._encoder = Encoder(serde)
        self._decoder = Decoder(serde)

    @classmethod
    @contextmanager
    def from_path(
        cls, path: str | Path, *, serde: SerializerProtocol | None = None
    ) -> Iterator[RewindSaver]:
        """Open (or create) the database at ``path`` and close it afterwards."""
        with rewinddb.open(path) as db:
            yield cls(db, serde=serde)

    # Reading ------------------------------------------------------------------------

    def _head_id(self, branch: str) -> str | None:
        """The newest checkpoint id written on (or inherited by) ``branch``."""
        record = self.db.at(branch).kv.get(_names.CHECKPOINT_KEY)
        return record["id"] if record else None

    def _namespace_head(
        self, thread_id: str, checkpoint_ns: str, namespace: dict | None
    ) -> str | None:
        """The newest checkpoint id of a namespace (None: it has none): its record's
        ``head``, or the newest checkpoint of the branch it names ``newest`` (where its
        checkpoints go, each then with no write of the record) when that is newer. A
        ``newest`` that is not one of the namespace's branches (gone, or edited by hand)
        names nothing."""
        if not namespace:
            return None
        head: str | None = namespace.get("head")
        newest = namespace.get("newest")
        if not isinstance(newest, str):
            return head
        parsed = _names.parse_branch(newest)
        if parsed is not None and _names.same_namespace(parsed[:2], thread_id, checkpoint_ns):
            try:
                on = self._head_id(newest)
            except rewinddb.NotFoundError:  # deleted by hand: the record's head stands
                on = None
            if on is not None and (head is None or on > head):
                head = on
        return head

    def _named(self, thread: str, checkpoint_ns: str) -> tuple[str, str]:
        """The thread id and namespace a key or branch name names (as parsed): each
        itself, or for a :class:`_names.Digest` what the namespace's record keeps
        (``thread``, ``ns``)."""
        if not isinstance(thread, _names.Digest) and not isinstance(checkpoint_ns, _names.Digest):
            return thread, checkpoint_ns
        record = self.index.get(_names.namespace_key(thread, checkpoint_ns))
        record = record if isinstance(record, dict) else {}
        kept_thread, kept_ns = record.get("thread", thread), record.get("ns", checkpoint_ns)
        return (
            kept_thread if isinstance(kept_thread, str) else thread,
            kept_ns if isinstance(kept_ns, str) else checkpoint_ns,
        )

    def _write_payloads(
        self, entry: dict, checkpoint_id: str, listing: _Listing | None = None
    ) -> builtins.list[tuple[dict, str]]:
        """The payloads of a checkpoint's pending writes, in LangGraph's order, each with
        the branch that stored it (a copied thread's checkpoint inherits writes its
        source stored)."""
        start = entry["events"]
        if listing is None:
            events = self.db.at(entry["branch"]).events.list(
                event_type=_names.WRITE_EVENT, after=start - 1 if start else None
            )
            payloads = [(item.event.payload, item.event.branch) for item in events]
        else:
            payloads = listing.payloads(entry["branch"], start, checkpoint_id)
        found: dict[tuple[str, int], tuple[dict, str]] = {}
        for payload, stored in payloads:
            if payload["checkpoint_id"] == checkpoint_id:
                found[(payload["task_id"], payload["idx"])] = (payload, stored)
        return sorted(
            found.values(),
            key=lambda w: writes_sort_key(w[0]["task_path"], w[0]["task_id"], w[0]["idx"]),
        )

    def _load(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        listing: _Listing | None = None,
        entry: dict | None = None,
    ) -> CheckpointTuple | None:
        """The checkpoint, read in one read transaction (``entry``: its index record, when
        the caller read it already; ``listing``: what a ``list`` read for it already)."""
        key = _names.checkpoint_key(thread_id, checkpoint_ns, checkpoint_id)
        read = None if listing is None or entry is None else listing.take(entry)
        checked = None if listing is None else listing.checked.pop(key, None)
        if read is not None and not (checked is not None and checked[1]):
            read = None  # some of its writes' events may be gone: its own read tells
        if read is not None and entry is not None:  # all read but what the listing holds
            stored, opened, blobs = read
            writes = self._write_payloads(entry, checkpoint_id, listing)
            kept = [self._kept_write(stored, p, listing) for p, stored in writes]
        else:
            with self.db.read():  # one consistent read; the decoding below holds no lock
                if entry is None:
                    key = _names.checkpoint_key(thread_id, checkpoint_ns, checkpoint_id)
                    entry = self.index.get(key)
                if entry is None:
                    return None
                view = self.db.at(entry["read"])
                point = self._read_point(view, entry, checkpoint_id)
                if point is None:
                    return None  # store retention removed what it read: as if pruned
                stored, at = point
                opened = _open(self.serde, stored)
                # The channels in one read (the newest of a key is known to the
                # connection, so the checkpoint just written reads no row).
                versions = opened.checkpoint["channel_versions"]
                triggers = opened.triggers
                channels = {
                    _names.channel_key(c): c
                    for c in versions
                    if triggers is None or not _names.is_trigger(c)
                }
                found = view.kv.get_many(list(channels), as_of=at)
                blobs = {channel: found.get(key) for key, channel in channels.items()}
                if triggers is not None:
                    blobs.update((c, triggers.get(c)) for c in versions if _names.is_trigger(c))
                writes = self._write_payloads(entry, checkpoint_id, listing)
                kept = [self._kept_write(stored, p, listing) for p, stored in writes]
        checkpoint = opened.checkpoint
        values: dict[str, Any] = {}
        for channel, version in checkpoint["channel_versions"].items():
            blob = blobs[channel]
            if type(blob) is _Sealed:
                if blob.version == version:
                    values[channel] = blob.value
            elif blob is not None and blob["version"] == version:
                values[channel] = self._decoder.channel(blob)
        if checked is None:
            known = None if listing is None else listing.entries
            with self.db.read():
                reads = self._parent_reads(key, entry, known)
        else:
            reads = checked[0]
        parent = entry["parent"] if reads else None
        return CheckpointTuple(
            config=_config(thread_id, checkpoint_ns, checkpoint_id),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=_metadata_of(self.serde, stored, opened),
            parent_config=_config(thread_id, checkpoint_ns, parent) if parent else None,
            pending_writes=[
                (
                    p["task_id"],
                    p["channel"],
                    self._decoder.item(p["value"]) if held is None else self._decoder.channel(held),
                )
                for (p, _), held in zip(writes, kept, strict=True)
            ],
        )

    def _read_point(
        self, view: rewinddb.BranchView, entry: dict, checkpoint_id: str
    ) -> tuple[dict, int] | None:
        """A checkpoint's record and the version its state is read as of: its own, or,
        when store retention (``db.retain``) cut its branch above it, the cut if its
        record is the newest one there (what it saw is what the branch holds at the
        cut); None when retention removed what it read (it then reads as pruned).
        Without retention this is the one read of the record it always was."""
        at = entry["version"]
        try:
            return view.kv.get(_names.CHECKPOINT_KEY, as_of=at), at
        except rewinddb.HistoryUnavailableError as error:
            cut = error.details.get("kept_from")
            if not isinstance(cut, int):
                raise  # not a retention cut (before a fork existed): as ever
        stored = view.kv.get(_names.CHECKPOINT_KEY, as_of=cut)
        if isinstance(stored, dict) and stored.get("id") == checkpoint_id:
            return None if self._writes_cut(entry) else (stored, cut)
        return None

    def _writes_cut(self, entry: dict) -> bool:
        """Whether store retention removed events logged after a checkpoint (from its
        sequence ``entry["events"]`` on): its branch's log holds no event there any
        more, but one after it, or is longer. Its pending writes may have been among
        them (a late write of an older checkpoint may be too: which, the cut does not
        say), and a checkpoint read without some would run a finished task again.
        Without retention, the event at that sequence is there (or none after it)."""
        start = int(entry["events"])
        log = self.db.at(entry["branch"]).events
        first = log.list(after=start - 1 if start else None, limit=1)
        following: int = first[0].event.sequence if first else log.length()
        return following > start

    def _parent_reads(
        self,
        key: str,
        entry: dict,
        known: dict | None = None,
        cuts: dict[str, int | None] | None = None,
    ) -> bool:
        """Whether a checkpoint's parent still reads (as ``get_tuple`` reads it): a
        checkpoint whose parent store retention removed has none, as ``prune`` leaves a
        kept one whose parent went. A parent is read only when its branch's history is
        cut above it (``db.branches.kept_from``); one whose index record went is named
        as before. ``key``: the checkpoint's index key; ``known``: index records read
        already, by key; ``cuts``: the ``kept_from`` of branches asked already in the
        caller's read transaction (filled in as asked)."""
        parent_id = entry.get("parent")
        if not parent_id:
            return True
        parent_key = f"{key.rpartition('/')[0]}/{parent_id}"  # (its thread's, its namespace's)
        parent = known.get(parent_key, _UNREAD) if known is not None else _UNREAD
        if parent is _UNREAD:
            parent = self.index.get(parent_key)
        if parent is None:
            return True
        branch = parent["read"]
        if cuts is not None and branch in cuts:
            kept_from = cuts[branch]
        else:
            try:
                kept_from = self.db.branches.kept_from(branch)
            except rewinddb.NotFoundError:
                return True
            if cuts is not None:
                cuts[branch] = kept_from
        if kept_from is None or parent["version"] >= kept_from:
            return True
        return self._read_point(self.db.at(parent["read"]), parent, parent_id) is not None

    def _kept_write(
        self, branch: str, payload: dict, listing: _Listing | None = None
    ) -> dict | None:
        """The stored value of a pending write kept as a channel value (``value_at``:
        its key and version on ``branch``, the branch that stored its event, read as
        ``_kept`` reads it), or None for one kept in its event."""
        if not _kept.kept(payload):
            return None
        at = _kept.kept_at(payload)
        blob: Any = None
        if at is not None:
            blob = listing.kept.get((branch, *at), _UNREAD) if listing else _UNREAD
            if blob is _UNREAD:
                blob = _kept.read_kept(self.db, branch, at)
        if not isinstance(blob, dict):
            named = payload[_kept.VALUE_AT]
            wrong = f"at {named!r}, where nothing is stored" if at else f"as {named!r}"
            raise rewinddb.CorruptDatabaseError(
                f"a pending write of checkpoint {payload.get('checkpoint_id')!r} on branch "
                f"{branch!r} names its value kept {wrong}, not a [key, version] of a "
                "stored value: the event or that key was edited by something other than "
                "RewindSaver",
                code="corrupt.events",
            )
        return blob

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint the config names, or the thread's newest (on any branch).
        Given a ``checkpoint_id``, the tuple's config is the caller's own config (with
        whatever else it holds, such as LangGraph's ``checkpoint_map``), as LangGraph's
        savers return it; else a config that names the thread's newest checkpoint."""
        thread_id, checkpoint_ns, checkpoint_id = _target(config, "get_tuple")
        with self.db.read():
            if checkpoint_id is None:
                namespace = self.index.get(_names.namespace_key(thread_id, checkpoint_ns))
                head = self._namespace_head(thread_id, checkpoint_ns, namespace)
                if head is None:
                    return None
                return self._load(thread_id, checkpoint_ns, head)
            found = self._load(thread_id, checkpoint_ns, checkpoint_id)
        return None if found is None else found._replace(config=config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, all branches interleaved."""
        if config is None:
            keys = self.index.keys("cp/")
            wanted_id = None
        else:
            thread_id, _, wanted_id = _target(config, "list")
            ns = config["configurable"].get("checkpoint_ns")
            keys = self.index.records(thread_id, None if ns is None else str(ns))
        before_id = _before_id(before)
        found = sorted(
            ((_names.parse_checkpoint_key(key), key) for key in keys), key=lambda f: f[0][2]
        )
        wanted = [
            (target, key)
            for target, key in reversed(found)
            if (not wanted_id or target[2] == wanted_id)
            and (not before_id or target[2] < before_id)
        ]
        count = 0
        listing = _Listing(self)
        names: dict[tuple[str, str], tuple[str, str]] = {}  # as parsed -> as named
        for start in range(0, len(wanted), _LISTED_TOGETHER):
            batch = wanted[start : start + _LISTED_TOGETHER]
            with self.db.read():
                entries = self.index.get_many([key for _, key in batch])
                listing.entries.update(entries)
                # Those the limit leaves to load, unless a filter may skip some.
                needed = [(target[2], entries[key]) for target, key in batch if key in entries]
                if limit is not None and not filter:
                    needed = needed[: limit - count]
                listing.read_batch(needed)
                loading = {id(entry) for _, entry in needed}
                cuts: dict[str, int | None] = {}  # (read in this transaction only)
                for _, key in batch:
                    if key in entries and id(entries[key]) in loading:
                        entry = entries[key]
                        listing.checked[key] = (
                            self._parent_reads(key, entry, listing.entries, cuts),
                            listing.writes_whole(entry),
                        )
            for (thread_id, checkpoint_ns, checkpoint_id), key in batch:
                if limit is not None and count >= limit:
                    return
                entry = entries.get(key)
                if entry is None:
                    continue
                if (thread_id, checkpoint_ns) not in names:
                    names[(thread_id, checkpoint_ns)] = self._named(thread_id, checkpoint_ns)
                thread_id, checkpoint_ns = names[(thread_id, checkpoint_ns)]
                loaded = self._load(thread_id, checkpoint_ns, checkpoint_id, listing, entry)
                if loaded is None:
                    continue
                if filter and any(loaded.metadata.get(k) != v for k, v in filter.items()):
                    continue
                count += 1
                yield loaded

    # Writing ------------------------------------------------------------------------

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One saver write: its checkpoint, events, forks and index entries commit
        together or not at all (``db.atomic()``), so a crash, or another process using
        the same database, never sees a checkpoint without its index entry. (No
        savepoints: the saver never goes on after a failed write, it lets it raise.)"""
        with self.lock, self.db.atomic(savepoints=False):
            yield

    def _free_name(self, name: str) -> str:
        candidate, n = name, 1
        while self.db.branches.exists(candidate):
            n += 1
            candidate = f"{name}-{n}"
        return candidate

    def _branch_for(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, parent_id: str | None
    ) -> _Placement:
        """Where a new checkpoint goes: its branch, forked from its parent's point when
        the parent already has a child there (or from nothing)."""
        ns_key = _names.namespace_key(thread_id, checkpoint_ns)
        namespace = self.index.get(ns_key)
        main = namespace["main"] if namespace else None
        parent = (
            self.index.get(_names.checkpoint_key(thread_id, checkpoint_ns, parent_id))
            if parent_id
            else None
        )
        point = None
        if parent is not None and parent_id is not None:
            if self._head_id(parent["branch"]) == parent_id:
                return _Placement(parent["branch"], {}, namespace, None)
            point = self._read_point(self.db.at(parent["read"]), parent, parent_id)
        if point is not None and parent is not None:
            # From where the parent is read: for a copied thread's checkpoint, the
            # source's branch (the copy's own fork starts later than the parent's
            # version); below a retention cut, the cut (``_read_point``).
            source, at = parent["read"], point[1]
        elif main is not None and self._head_id(main) is None:
            return _Placement(main, {}, namespace, None)
        else:
            source, at = "default", 0
        if main is None:
            name = _names.main_branch(thread_id, checkpoint_ns)
            if self.db.branches.exists(name):  # (held for a copy): a name of the thread
                name = self._free_name(_names.fork_branch(name, checkpoint_id))
        else:
            name = self._free_name(_names.fork_branch(main, checkpoint_id))
        self.db.branches.fork(source, name, at=at)
        own = _names.owned_key(thread_id, name)
        created: dict[str, Any] = {own: _names.branch_value(own, name)}
        if main is None:
            created[ns_key] = {"main": name, "head": None, **_names_of(thread_id, checkpoint_ns)}
        return _Placement(name, created, namespace, self._channel_versions(point))

    def _channel_versions(self, point: tuple[dict, int] | None) -> ChannelVersions:
        """The channel versions of the checkpoint a read point holds ({} for none)."""
        if point is None:
            return {}
        versions: ChannelVersions = _open(self.serde, point[0]).checkpoint["channel_versions"]
        return versions

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint as one version on its thread's branch (forking if needed).

        What it stores is encoded first, before the saver's lock or any read: LangGraph
        goes on running meanwhile (``durability="async"`` saves in the background) and
        changes some of those objects in place (``add_messages`` gives the input's
        messages ids), so the checkpoint is stored as it was when ``put`` was called,
        as LangGraph's own savers store it."""
        thread_id, checkpoint_ns, parent_id = _target(config, "put")
        checkpoint_id = _checkpoint_id(checkpoint["id"], "put")
        full_metadata = get_checkpoint_metadata(config, metadata)
        rest = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        values = checkpoint.get("channel_values", {})
        # The trigger channels the checkpoint holds are kept in its record: a step or
        # two each.
        versions = dict(checkpoint["channel_versions"])
        triggers = {
            channel: value
            for channel, value in values.items()
            if _names.is_trigger(channel) and channel in versions
        }
        record = {
            "id": checkpoint_id,
            "parent": parent_id,
            "ts": checkpoint.get("ts"),
            "source": full_metadata.get("source"),
            "step": full_metadata.get("step"),
            **self._record(rest, full_metadata, triggers, versions),
        }
        encoded = {
            channel: self._encoder.channel(values[channel], channel_version)
            for channel, channel_version in new_versions.items()
            if channel in values and not _names.is_trigger(channel)
        }
        new_versions = dict(new_versions)
        with self._writing():
            if self._is_removed(thread_id, checkpoint_ns, checkpoint_id, parent_id):
                # A late write of a deleted thread: it must not bring it back.
                self._early_writes.pop((thread_id, checkpoint_ns, checkpoint_id), None)
                return _config(thread_id, checkpoint_ns, checkpoint_id)
            placement = self._branch_for(thread_id, checkpoint_ns, checkpoint_id, parent_id)
            branch, index_puts, namespace = placement[:3]
            ns_key = _names.namespace_key(thread_id, checkpoint_ns)
            namespace = index_puts.get(ns_key) or namespace
            previous = self._namespace_head(thread_id, checkpoint_ns, namespace)  # before it
            if placement.fork_versions is not None:
                # (The channels a fork holds beyond ``new_versions`` are those the step
                # did not write: encoded here, the values are as LangGraph last left them.)
                checkpoint = {**checkpoint, "channel_versions": versions}
                new_versions = _versions_on_fork(checkpoint, placement.fork_versions, new_versions)
            view = self.db.at(branch)
            events = view.events.length()
            puts: dict[str, Any] = {_names.CHECKPOINT_KEY: record}
            gone = []
            for channel, channel_version in new_versions.items():
                if _names.is_trigger(channel):
                    continue  # in the record, above
                key = _names.channel_key(channel)
                if channel in encoded and encoded[channel]["version"] == channel_version:
                    puts[key] = encoded[channel]
                elif channel in values:
                    puts[key] = self._encoder.channel(values[channel], channel_version)
                else:
                    gone.append(key)
            with view.transaction(trigger="langgraph.checkpoint", message=checkpoint_id):
                version = view.kv.put_many(puts)
                for key in gone:
                    view.kv.delete(key)
            entry = {
                "branch": branch,
                "read": branch,
                "version": version,
                "events": events,
                "parent": parent_id,
                "run_id": full_metadata.get("run_id"),
            }
            self._index_checkpoint(
                thread_id, checkpoint_ns, checkpoint_id, index_puts, entry, namespace, previous
            )
            early_key = (thread_id, checkpoint_ns, checkpoint_id)
            for early, task_id, task_path in self._early_writes.get(early_key, ()):
                self._append_writes(entry, checkpoint_id, early, task_id, task_path)
            self._early_writes.pop(early_key, None)  # kept if anything above failed
        return _config(thread_id, checkpoint_ns, checkpoint_id)

    def _record(
        self,
        rest: dict[str, Any],
        metadata: CheckpointMetadata,
        triggers: dict[str, Any],
        versions: ChannelVersions,
    ) -> dict[str, Any]:
        """What a checkpoint's record holds besides its ids, time, source and step
        (which the saver finds and orders checkpoints by): LangGraph's bookkeeping
        (``rest``), its metadata and the trigger channels' values. With the stock
        serde each as ``dump_record`` or ``Encoder.channel`` stores it (plain JSON when
        it can be); with any other, all three as one output of the serde, the trigger
        channels' names beside it (as every other channel's is a key): one call of it,
        one ciphertext, for what the record holds, as ``SqliteSaver`` makes one of a
        whole checkpoint (see ``_open``)."""
        if not self._encoder.stock:
            parts = {"checkpoint": rest, "metadata": metadata, "triggers": triggers}
            return {
                _names.SEALED: dump_typed(self.serde, parts),
                _names.TRIGGERS: dict.fromkeys(triggers),
            }
        return {
            "checkpoint": _own(dump_record(self.serde, rest), rest),
            "metadata": _own(dump_record(self.serde, metadata), metadata),
            _names.TRIGGERS: {
                channel: self._encoder.channel(value, versions[channel])
                for channel, value in triggers.items()
            },
        }

    def _index_checkpoint(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        puts: dict,
        entry: dict,
        namespace: dict | None,
        previous: str | None,
    ) -> None:
        """Record a new checkpoint; ``namespace`` is its namespace's record as ``put``
        read it (under the lock, so nothing of this saver changed it since) and
        ``previous`` the namespace's newest checkpoint before this one. The record
        changes only when the namespace's newest checkpoint moves to another branch
        (or an older checkpoint lands on the branch it names)."""
        ns_key = _names.namespace_key(thread_id, checkpoint_ns)
        namespace = dict(namespace or self.index.get(ns_key))
        branch = entry["branch"]
        if previous is None or previous < checkpoint_id:  # the namespace's newest
            if namespace.get("newest") != branch or ns_key in puts:
                namespace.update(head=checkpoint_id, newest=branch)
                puts = {**puts, ns_key: namespace}
        elif namespace.get("newest") == branch:  # the branch's head is no longer newest
            namespace.pop("newest")
            puts = {**puts, ns_key: {**namespace, "head": previous}}
        puts[_names.checkpoint_key(thread_id, checkpoint_ns, checkpoint_id)] = entry
        if entry.get("run_id"):
            key = _names.run_key(str(entry["run_id"]), thread_id, checkpoint_ns, checkpoint_id)
            puts[key] = True
        self.index.write(puts)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Record a task's writes as events on the checkpoint's branch (one version).
        The values are encoded first, before the saver's lock (see ``put``)."""
        thread_id, checkpoint_ns, checkpoint_id = _target(config, "put_writes")
        if checkpoint_id is None:
            raise ValueError("put_writes: the config has no 'checkpoint_id' in 'configurable'")
        encoded = self._encode_writes(writes)
        with self._writing():
            entry = self.index.get(_names.checkpoint_key(thread_id, checkpoint_ns, checkpoint_id))
            if entry is None:
                gone = self.index.get(_names.gone_key(thread_id))
                if gone is not None and checkpoint_id <= gone["through"]:
                    return  # a late write of a checkpoint that was deleted or pruned
                # LangGraph may save a task's writes before (async) saving their
                # checkpoint: keep them until the checkpoint arrives.
                key = (thread_id, checkpoint_ns, checkpoint_id)
                self._early_writes.setdefault(key, []).append((encoded, task_id, task_path))
                return
            self._append_writes(entry, checkpoint_id, encoded, task_id, task_path)

    def _encode_writes(self, writes: Sequence[tuple[str, Any]]) -> builtins.list[_Encoded]:
        """A task's writes as they are stored: each value through the serde, or (a dict
        of many members) as a channel value is stored, to be kept beside its event."""
        encoded = []
        for position, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, position)
            if _kept_as_channel(value, self._encoder):
                encoded.append(_Encoded(channel, idx, None, self._encoder.channel(value, None)))
            else:
                encoded.append(_Encoded(channel, idx, dump_typed(self.serde, value), None))
        return encoded

    def _append_writes(
        self,
        entry: dict,
        checkpoint_id: str,
        writes: builtins.list[_Encoded],
        task_id: str,
        task_path: str,
    ) -> None:
        existing = self._write_keys(entry, checkpoint_id)
        view = self.db.at(entry["branch"])
        with view.transaction(trigger="langgraph.writes", message=task_id):
            for channel, idx, value, kept in writes:
                if idx >= 0 and (task_id, idx) in existing:
                    continue
                payload: dict[str, Any] = {
                    "checkpoint_id": checkpoint_id,
                    "task_id": task_id,
                    "task_path": task_path,
                    "idx": idx,
                    "channel": channel,
                }
                if kept is not None:
                    key = _names.write_key(channel, idx)
                    version = view.kv.put(key, kept)
                    payload[_kept.VALUE_AT] = _kept.place(key, version)
                else:
                    payload["value"] = value
                view.events.append(_names.WRITE_EVENT, payload)

    def _write_keys(self, entry: dict, checkpoint_id: str) -> frozenset[tuple[str, int]]:
        """``(task_id, idx)`` of the writes recorded for a checkpoint."""
        events = self.db.at(entry["branch"]).events.list(
            event_type=_names.WRITE_EVENT,
            after=entry["events"] - 1 if entry["events"] else None,
        )
        return frozenset(
            (item.event.payload["task_id"], item.event.payload["idx"])
            for item in events
            if item.event.payload["checkpoint_id"] == checkpoint_id
        )

    # Deleting and pruning ------------------------------------------------------------
    #
    # A thread's checkpoints go in one of three ways: all of them (``delete_thread``),
    # all but each namespace's newest (``prune``), or those of some runs
    # (``delete_for_runs``). Each is ``_retain``: the index records of the checkpoints
    # that go are deleted and erased, the branches no kept checkpoint reads are purged
    # (their entries, events and pending writes leave the file), the branches kept lose
    # their history before the oldest kept checkpoint (``db.prune``), and a tombstone
    # makes late writes of what went fail quietly instead of bringing it back.

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread for good: its branches are purged (unless a copied thread
        still reads them, see ``copy_thread``), its index records erased from every
        version, and a late write of one of its checkpoints is dropped. An unknown
        thread is a no-op."""
        thread_id = _thread_id(thread_id, "delete_thread")
        with self.lock:
            for key in [key for key in self._early_writes if key[0] == thread_id]:
                del self._early_writes[key]
        self._erasing([lambda: self._retain(thread_id, set, None, deleting=True)])

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete every checkpoint (and its pending writes) made by one of ``run_ids``.
        A branch none of the thread's other checkpoints reads is purged, and one whose
        oldest checkpoints went loses that history; the values of checkpoints deleted
        from the middle of a branch stay, as the later checkpoints on it read them."""
        if isinstance(run_ids, str):
            raise _bad_retention("delete_for_runs needs a list of run ids, not one string")
        runs = {str(run_id) for run_id in run_ids}
        threads: set[str] = set()
        with self.db.read():
            for run_id in runs:
                for prefix in _names.run_prefixes(run_id):
                    for key in self.index.keys(prefix):
                        threads.add(self._named(*_names.parse_run_key(key))[0])

        def of_runs(entries: dict[str, dict]) -> set[str]:
            return {
                key
                for key, entry in entries.items()
                if entry.get("run_id") is not None and str(entry["run_id"]) in runs
            }

        reason = "RewindSaver.delete_for_runs"
        self._erasing(
            [partial(self._retain, thread_id, of_runs, reason) for thread_id in sorted(threads)]
        )

    def prune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep: int | None = None,
    ) -> None:
        """Remove old checkpoints of these threads, and the space they took.

        - ``keep_latest`` (LangGraph's): keep each namespace's newest checkpoint, with
          its pending writes; a subgraph call's namespace goes with the root checkpoint
          it started from (a ``checkpointer=True`` subgraph keeps its newest). A kept
          checkpoint whose parent went is left with no parent.
        - ``keep_last`` (rewinddb's) with ``keep=N``: the same, keeping each
          namespace's newest N checkpoints.
        - ``delete``: ``delete_thread`` each thread.

        Nothing of a checkpoint that goes stays readable, on any branch at any version
        (its record, the channel values only it held, its pending writes), and after
        ``db.gc()`` none of it is in the file; each kept checkpoint reads as before.
        When the thread's kept checkpoints lie on its first branch (and a namespace's),
        that branch keeps its versions: ``as_of`` reads of what is kept answer as
        before, and a read before its oldest kept checkpoint raises
        ``history_unavailable`` naming this prune. Otherwise (a kept checkpoint on a
        time-travel fork, which reads what the branch it forked from held; a copy on
        either side; a pruned checkpoint's pending write kept beside a kept one) the
        kept checkpoints are written anew, each as it reads, on new branches that fork
        from nothing, and the thread's old branches are purged. Threads whose graph
        uses a ``DeltaChannel`` are refused (their state is rebuilt from older
        checkpoints), before anything is pruned. Unknown threads are skipped. Bad
        arguments: ``RewindError`` with code ``invalid.retention``.
        """
        if isinstance(thread_ids, str):
            raise _bad_retention("prune needs a list of thread ids, not one string")
        if strategy not in _STRATEGIES:
            raise _bad_retention(
                f"prune: unknown strategy {strategy!r}; use one of {', '.join(_STRATEGIES)}"
            )
        if strategy == "keep_last":
            if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
                raise _bad_retention(
                    f"prune(strategy='keep_last') needs keep= a number of checkpoints "
                    f"of at least 1, not {keep!r}"
                )
        elif keep is not None:
            raise _bad_retention(f"keep= goes with strategy='keep_last', not {strategy!r}")
        threads = list(dict.fromkeys(_thread_id(thread_id, "prune") for thread_id in thread_ids))
        if strategy == "delete":
            for thread_id in threads:
                self.delete_thread(thread_id)
            return
        count = 1 if keep is None else keep
        reason = (
            "RewindSaver.prune(strategy='keep_latest')"
            if strategy == "keep_latest"
            else f"RewindSaver.prune(strategy='keep_last', keep={count})"
        )
        with self.db.read():
            refused = [thread_id for thread_id in threads if self._uses_delta(thread_id)]
        if refused:
            raise _bad_retention(
                f"prune(strategy={strategy!r}) cannot prune threads that use a DeltaChannel "
                f"(their state is rebuilt from older checkpoints): {', '.join(refused)}"
            )

        def newest(thread_id: str) -> Callable[[dict[str, dict]], set[str]]:
            def drop(entries: dict[str, dict]) -> set[str]:
                if self._uses_delta(thread_id, entries):  # it started using one since
                    raise _bad_retention(
                        f"prune cannot prune thread {thread_id!r}: it uses a DeltaChannel"
                    )
                gone = self._unreadable(entries)  # store retention removed them
                readable = {key: entry for key, entry in entries.items() if key not in gone}
                return self._older_than_newest(thread_id, readable, count) | gone

            return drop

        self._erasing(
            [
                partial(self._retain, thread_id, newest(thread_id), reason, exact=True)
                for thread_id in threads
            ]
        )

    def _erasing(self, steps: Iterable[Callable[[], builtins.list[str]]]) -> None:
        """Run each step as one saver write: a step removes index records and returns their
        keys, which are erased in the same write (the store gives the space back and
        checkpoints its WAL when each write commits)."""
        for step in steps:
            with self._writing():
                removed = step()
                if removed:
                    self.index.erase(removed)

    def _retain(
        self,
        thread_id: str,
        choose: Callable[[dict[str, dict]], set[str]],
        reason: str | None,
        *,
        deleting: bool = False,
        exact: bool = False,
    ) -> builtins.list[str]:
        """Remove the checkpoints ``choose`` picks among the thread's (index records by
        key), and what only they needed; in the open saver write. ``reason`` names the
        prune in ``history_unavailable`` (None: nothing is kept, so no history is cut);
        ``deleting``: the whole thread goes (its tombstone then also drops late
        checkpoints); ``exact``: nothing of a checkpoint that goes may stay readable
        (``prune``): when cutting the branches' history would leave some of it, the
        kept checkpoints are written anew (``_rebuild``). Returns the index keys it
        removed, to be erased."""
        escaped = _names.thread_part(thread_id)
        entries: dict[str, dict] = self.index.get_many(self.index.records(thread_id))
        own_keys = self.index.keys(f"own/{escaped}/")
        ns_keys = self.index.keys(f"ns/{escaped}/")
        ref_keys = [key for key in self.index.keys("ref/") if key.endswith("/" + escaped)]
        dropped = choose(entries) & entries.keys()
        kept = {key: entry for key, entry in entries.items() if key not in dropped}
        if not (entries or own_keys or ns_keys or ref_keys) or (kept and not dropped):
            return []
        owned = {branch: key for key, branch in self.index.branches_of(own_keys).items()}
        needed = {entry["branch"] for entry in kept.values()}
        needed |= {entry["read"] for entry in kept.values()}
        removed = sorted(dropped)
        puts: dict[str, Any] = {}
        for key in removed[:]:
            _, ns, checkpoint_id = _names.parse_checkpoint_key(key)
            if entries[key].get("run_id"):
                run_id = str(entries[key]["run_id"])
                removed.append(_names.run_key(run_id, thread_id, ns, checkpoint_id))
        if dropped:
            gone = _names.gone_key(thread_id)
            newest = max(_names.parse_checkpoint_key(key)[2] for key in dropped)
            tombstone = dict(self.index.get(gone) or {})
            tombstone["through"] = max(tombstone.get("through", newest), newest)
            if deleting:
                tombstone["deleted"] = max(tombstone.get("deleted", newest), newest)
            puts[gone] = tombstone
        if exact and kept and dropped and self._leaves_behind(kept, dropped, entries, owned):
            return self._rebuild(thread_id, kept, owned, ns_keys, ref_keys, removed, puts)
        heads: dict[str, tuple[str, dict]] = {}
        for key, entry in kept.items():
            _, ns, checkpoint_id = _names.parse_checkpoint_key(key)
            if ns not in heads or heads[ns][0] < checkpoint_id:
                heads[ns] = (checkpoint_id, entry)
            parent = entry.get("parent")
            if parent and _names.checkpoint_key(thread_id, ns, parent) in dropped:
                puts[key] = {**entry, "parent": None}
        # Branches a kept branch forked from (their history up to the fork stays in
        # them, trimmed), so that nothing purged leaves rows its forks still read.
        below: set[str] = set()
        if any(branch not in needed for branch in owned):
            below = {up for branch in needed & owned.keys() for up in self._above(branch)}
        released = [branch for branch in owned if branch not in needed and branch not in below]
        trimmed = [branch for branch in owned if branch not in needed and branch in below]
        for ns_key in ns_keys:
            ns = _names.unescape(ns_key.split("/", 2)[2])
            if ns not in heads:
                removed.append(ns_key)
                continue
            record = self.index.get(ns_key)
            head_id, head = heads[ns]
            updated = {k: v for k, v in record.items() if k != "newest"} | {"head": head_id}
            if updated["main"] in released:
                updated["main"] = head["branch"]
            if updated != record:
                puts[ns_key] = updated
        removed += [owned[branch] for branch in released]
        reads = self.index.branches_of(ref_keys)
        unread = [key for key in ref_keys if reads[key] not in needed]
        removed += unread
        self.index.write(puts, removed)
        self._release(released)
        removed += self._unread({reads[key] for key in unread})
        if reason is not None:
            for branch in sorted(needed & owned.keys()):
                self._cut(branch, kept.values(), reason)
            for branch in trimmed:
                self._cut(branch, (), reason)
        return removed

    def _leaves_behind(
        self,
        kept: dict[str, dict],
        dropped: set[str],
        entries: dict[str, dict],
        owned: dict[str, str],
    ) -> bool:
        """Whether purging the branches no kept checkpoint reads and cutting the others'
        history before their oldest kept checkpoint would leave something of a dropped
        checkpoint readable. It does not for a thread whose every kept checkpoint lies on
        a branch of its own that forks from nothing (a thread's first branch, a
        namespace's), that no copy reads, on which each dropped checkpoint comes before
        every kept one, whose state at the cut is the oldest kept checkpoint's alone (no
        ``write/`` key of an older checkpoint's pending write) and whose events from the
        kept checkpoints' on are theirs (no late write of a dropped one). Any other thread
        (a time-travel fork that holds a kept checkpoint, a copy on either side) is
        written anew."""
        needed: dict[str, builtins.list[dict]] = {}
        for key, entry in kept.items():
            if entry["read"] != entry["branch"] or entry["branch"] not in owned:
                return True  # a copy's checkpoint: it reads its source's branch
            point = self._read_point(
                self.db.at(entry["read"]), entry, _names.parse_checkpoint_key(key)[2]
            )
            if point is None or point[1] != entry["version"]:
                return True  # read at a store retention cut: its versions are not its own
            needed.setdefault(entry["branch"], []).append(entry)
        dropped_ids = {_names.parse_checkpoint_key(key)[2] for key in dropped}
        for branch, on in needed.items():
            info = self.db.branches.get(branch)
            if info.parent != "default" or info.forked_at != 0:
                return True  # what it inherited would stay readable through it
            if self.index.readers(branch):
                return True  # a copy reads it: its history could not be cut
            cut = min(entry["version"] for entry in on)
            if any(
                entries[key]["read"] == branch and entries[key]["version"] >= cut for key in dropped
            ):
                return True
            view = self.db.at(branch)
            stored = view.kv.get(_names.CHECKPOINT_KEY, as_of=cut)
            versions = _open(self.serde, stored).checkpoint["channel_versions"]
            for key in view.kv.keys(_names.WRITE_PREFIX, as_of=cut):
                if view.kv.history(key, as_of=cut, limit=1)[0].version < cut:
                    return True  # an older checkpoint's pending write
            channels = view.kv.keys(_names.CHANNEL_PREFIX, as_of=cut)
            for key, blob in view.kv.get_many(channels, as_of=cut).items():
                channel = key[len(_names.CHANNEL_PREFIX) :]
                if not isinstance(blob, dict) or blob.get("version") != versions.get(channel):
                    return True  # a value the oldest kept checkpoint does not hold
            start = min(entry["events"] for entry in on)
            for item in view.events.list(
                event_type=_names.WRITE_EVENT, after=start - 1 if start else None
            ):
                payload = item.event.payload
                if not isinstance(payload, dict) or payload.get("checkpoint_id") in dropped_ids:
                    return True
        return False

    def _rebuild(
        self,
        thread_id: str,
        kept: dict[str, dict],
        owned: dict[str, str],
        ns_keys: builtins.list[str],
        ref_keys: builtins.list[str],
        removed: builtins.list[str],
        puts: dict[str, Any],
    ) -> builtins.list[str]:
        """Write the kept checkpoints anew, each as it reads (its record, the channel
        values it holds, its pending writes), on new branches of the thread that fork
        from nothing (and from each other where a kept checkpoint's kept parent already
        has a child, as ``put`` places them); then purge every branch the thread had
        (one a copy reads is held, see ``_release``). Nothing of the checkpoints that go
        stays: not what a fork inherited, nor a pending write stored late. ``removed``
        and ``puts``: the index changes ``_retain`` made so far (the dropped records,
        the tombstone). In the open saver write; returns the index keys to erase."""
        named: dict[str, str] = {}  # namespaces as parsed -> as named
        for key in kept:
            ns = _names.parse_checkpoint_key(key)[1]
            if ns not in named:
                named[ns] = self._named(thread_id, ns)[1]
        copies = self._kept_copies(thread_id, kept)
        self._release(builtins.list(owned))
        removed += owned.values()
        placed: dict[tuple[str, str], tuple[str, int, dict]] = {}  # (ns, id) -> where, channels
        heads: dict[str, str] = {}  # branch -> the id of its newest checkpoint
        mains: dict[str, str] = {}  # namespace -> its first branch
        newest: dict[str, tuple[str, str]] = {}  # namespace -> its newest id, its branch
        for copy in copies:
            ns, checkpoint_id, parent = copy.ns, copy.checkpoint_id, copy.parent
            base: dict[str, Any] = {}
            if parent is not None and (ns, parent) in placed:
                source, at, base = placed[(ns, parent)]
                if heads[source] == parent:
                    branch = source
                else:
                    branch = self._free_name(_names.fork_branch(mains[ns], checkpoint_id))
                    self.db.branches.fork(source, branch, at=at)
            else:
                if ns not in mains:
                    main = _names.main_branch(thread_id, ns)
                    if self.db.branches.exists(main):  # held for a copy that reads it
                        main = self._free_name(_names.fork_branch(main, checkpoint_id))
                    branch = mains[ns] = main
                else:
                    branch = self._free_name(_names.fork_branch(mains[ns], checkpoint_id))
                self.db.branches.fork("default", branch, at=0)
            own = _names.owned_key(thread_id, branch)
            puts[own] = _names.branch_value(own, branch)
            view = self.db.at(branch)
            events = view.events.length()
            values = copy.values
            changed = {k: blob for k, blob in values.items() if base.get(k) != blob}
            with view.transaction(trigger="langgraph.checkpoint", message=checkpoint_id):
                version = view.kv.put_many({_names.CHECKPOINT_KEY: copy.stored, **changed})
                for k in base.keys() - values.keys():
                    view.kv.delete(k)
            self._copy_writes(view, copy.writes)
            placed[(ns, checkpoint_id)] = (branch, version, values)
            heads[branch] = checkpoint_id
            newest[ns] = (checkpoint_id, branch)
            puts[copy.key] = {
                "branch": branch,
                "read": branch,
                "version": version,
                "events": events,
                "parent": parent,
                "run_id": copy.entry.get("run_id"),
            }
        for ns, (head, branch) in newest.items():
            puts[_names.namespace_key(thread_id, ns)] = {
                "main": mains[ns],
                "head": head,
                "newest": branch,
                **_names_of(thread_id, named[ns]),
            }
        removed += [key for key in ns_keys if key not in puts]
        removed += ref_keys
        removed = [key for key in dict.fromkeys(removed) if key not in puts]
        self.index.write(puts, removed)
        removed += self._unread(set(self.index.branches_of(ref_keys).values()))
        return removed

    def _kept_copies(self, thread_id: str, kept: dict[str, dict]) -> builtins.list[_Copy]:
        """Each kept checkpoint (index records by key) as ``_rebuild`` writes it anew,
        oldest first. Each branch's write events are read once (``_Listing``), so the
        rebuild reads what the thread holds about once, not a branch's events from
        each checkpoint on."""
        listing = _Listing(self)
        listing.read_writes(kept.values())
        copies = []
        for key in sorted(kept, key=lambda key: _names.parse_checkpoint_key(key)[2]):
            entry = kept[key]
            _, ns, checkpoint_id = _names.parse_checkpoint_key(key)
            view = listing.view(entry["read"])
            point = self._read_point(view, entry, checkpoint_id)
            if point is None:  # (``prune`` drops these first: ``_unreadable``)
                raise rewinddb.HistoryUnavailableError(
                    f"checkpoint {checkpoint_id!r} was removed by store retention",
                    branch=entry["read"],
                    as_of=entry["version"],
                )
            stored, at = point
            opened = _open(self.serde, stored)
            versions, triggers = opened.checkpoint["channel_versions"], opened.triggers
            channels = {
                _names.channel_key(c): version
                for c, version in versions.items()
                if triggers is None or not _names.is_trigger(c)
            }
            values = {
                k: blob
                for k, blob in view.kv.get_many(builtins.list(channels), as_of=at).items()
                if isinstance(blob, dict) and blob.get("version") == channels[k]
            }
            writes = [
                (payload, self._kept_write(branch, payload))
                for payload, branch in self._write_payloads(entry, checkpoint_id, listing)
            ]
            parent = entry.get("parent")
            if parent and _names.checkpoint_key(thread_id, ns, parent) not in kept:
                parent = None
            if stored.get("parent") != parent:
                stored = {**stored, "parent": parent}
            copies.append(_Copy(key, ns, checkpoint_id, entry, stored, values, writes, parent))
        return copies

    def _copy_writes(
        self, view: rewinddb.BranchView, writes: builtins.list[tuple[dict, dict | None]]
    ) -> None:
        """Append pending writes as stored (``_rebuild``), one version per task as
        ``put_writes`` stores them; a value kept as a channel value is stored again
        beside its event, which names where."""
        tasks: dict[str, builtins.list[tuple[dict, dict | None]]] = {}
        for payload, blob in writes:
            tasks.setdefault(payload["task_id"], []).append((payload, blob))
        for task_id, task in tasks.items():
            with view.transaction(trigger="langgraph.writes", message=task_id):
                for payload, blob in task:
                    at = _kept.kept_at(payload)
                    if blob is not None and at is not None:
                        version = view.kv.put(at[0], blob)
                        payload = {**payload, _kept.VALUE_AT: _kept.place(at[0], version)}
                    view.events.append(_names.WRITE_EVENT, payload)

    def _older_than_newest(self, thread_id: str, entries: dict[str, dict], count: int) -> set[str]:
        """The checkpoint keys ``prune`` removes: all but each namespace's ``count``
        newest, and every checkpoint of a subgraph call whose root checkpoint goes."""
        by_ns: dict[str, builtins.list[str]] = {}
        for key in entries:
            by_ns.setdefault(_names.parse_checkpoint_key(key)[1], []).append(key)
        dropped: set[str] = set()
        kept: dict[str, builtins.list[str]] = {}
        for ns, keys in by_ns.items():
            keys.sort(key=lambda key: _names.parse_checkpoint_key(key)[2], reverse=True)
            kept[ns], gone = keys[:count], keys[count:]
            dropped.update(gone)
        roots = {_names.parse_checkpoint_key(key)[2] for key in kept.get("", ())}
        saved = {_names.parse_checkpoint_key(key)[2] for key in by_ns.get("", ())}
        for ns, keys in kept.items():
            # A call's namespace ends with ":<task id>"; a checkpointer=True subgraph's
            # (its state outlives each call) does not. Runs save in the background, so
            # a call may be saved before its root: it goes only once the root is saved.
            if not keys or ":" not in self._named(thread_id, ns)[1]:
                continue
            root = self._metadata(keys[0], entries[keys[0]]).get("parents", {}).get("")
            if root and root in saved and root not in roots:
                dropped.update(keys)
        return dropped

    def _unreadable(self, entries: dict[str, dict]) -> set[str]:
        """The checkpoints (index keys) whose state store retention removed
        (``_read_point``): ``prune`` drops their index records too."""
        return {
            key
            for key, entry in entries.items()
            if self._read_point(
                self.db.at(entry["read"]), entry, _names.parse_checkpoint_key(key)[2]
            )
            is None
        }

    def _uses_delta(self, thread_id: str, entries: dict[str, dict] | None = None) -> bool:
        """Whether the thread's checkpoints show a ``DeltaChannel`` (its update counters
        in their metadata, as LangGraph's PostgresSaver checks before it prunes)."""
        if entries is None:
            entries = self.index.get_many(self.index.records(thread_id))
        return any(
            _DELTA_MARKS & self._metadata(key, entry).keys() for key, entry in entries.items()
        )

    def _metadata(self, key: str, entry: dict) -> dict[str, Any]:
        """The metadata of a checkpoint (its index key and record), {} when store
        retention removed what it read."""
        checkpoint_id = _names.parse_checkpoint_key(key)[2]
        point = self._read_point(self.db.at(entry["read"]), entry, checkpoint_id)
        if point is None:
            return {}
        metadata: dict[str, Any] = dict(_metadata_of(self.serde, point[0]))
        return metadata

    def _above(self, branch: str) -> builtins.list[str]:
        """The branches ``branch`` forked from, nearest first (up to ``default``)."""
        found: builtins.list[str] = []
        name = branch
        while True:
            try:
                parent = self.db.branches.get(name).parent
            except rewinddb.NotFoundError:
                return found
            if parent is None or parent in found:
                return found
            found.append(parent)
            name = parent

    def _deepest_first(self, branches: Iterable[str]) -> builtins.list[str]:
        """``branches`` with each after those forked from it (a purge then leaves no
        rows that only a fork purged after it read)."""
        branches = [branch for branch in branches if self.db.branches.exists(branch)]
        if len(branches) < 2:
            return branches
        return sorted(branches, key=lambda branch: len(self._above(branch)), reverse=True)

    def _release(self, branches: builtins.list[str]) -> None:
        """Purge the branches their thread no longer reads; one that a copied thread
        still reads is held instead (``held/``), until the last copy lets it go."""
        held: dict[str, Any] = {}
        for branch in self._deepest_first(branches):
            if self.index.readers(branch):
                held[_names.held_key(branch)] = True
            else:
                self.db.branches.delete(branch, purge=True)
        self.index.write(held)

    def _unread(self, branches: set[str]) -> builtins.list[str]:
        """Purge the held branches of ``branches`` that no thread reads any more;
        returns the ``held/`` keys removed."""
        free = [
            branch
            for branch in branches
            if not self.index.readers(branch) and self.index.get(_names.held_key(branch))
        ]
        for branch in self._deepest_first(free):
            self.db.branches.delete(branch, purge=True)
        keys = [_names.held_key(branch) for branch in free]
        self.index.write({}, keys)
        return keys

    def _cut(self, branch: str, kept: Iterable[dict], reason: str) -> None:
        """Remove ``branch``'s history before the oldest kept checkpoint it holds (the
        core keeps what its forks read, and the state as of the cut)."""
        if self.index.readers(branch):
            return  # a copied thread reads its checkpoints: they all stay
        versions = []
        for entry in kept:
            if entry["branch"] == branch and entry["read"] != branch:
                return  # a copy's checkpoint: its writes may predate every checkpoint here
            if entry["read"] == branch:
                versions.append(entry["version"])
        info = self.db.branches.get(branch)
        cut = min(versions) if versions else info.head
        if cut > info.forked_at:
            self.db.prune(branch, before=cut, reason=reason)

    def _is_removed(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, parent_id: str | None
    ) -> bool:
        """Whether ``put`` is a late write of a thread ``delete_thread`` deleted: its
        parent is gone, or it has none and is no newer than the newest checkpoint
        deleted. (After ``prune`` or ``delete_for_runs`` such a checkpoint is saved,
        as LangGraph's other savers save it.)"""
        if parent_id is not None:
            key = _names.checkpoint_key(thread_id, checkpoint_ns, parent_id)
            if self.index.get(key) is not None:
                return False
        gone = self.index.get(_names.gone_key(thread_id))
        if gone is None or "deleted" not in gone:
            return False
        return parent_id is not None or checkpoint_id <= gone["deleted"]

    # Copying ------------------------------------------------------------------------

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread: one O(1) fork per branch; the copy reads the source's history."""
        source = _thread_id(source_thread_id, "copy_thread")
        target = _thread_id(target_thread_id, "copy_thread")
        with self._writing():
            src = _names.thread_part(source)
            forks: dict[str, str] = {}
            puts: dict[str, Any] = {}
            for branch in self.index.branches_of(self.index.keys(f"own/{src}/")).values():
                parsed = _names.parse_branch(branch)
                if parsed is None:  # (not a name the saver gives: as it was named)
                    name = _names.PREFIX + _names.thread_part(target)
                else:
                    ns = self._named(*parsed[:2])[1]
                    name = _names.copy_branch(branch, target, ns)
                name = self._free_name(name)
                self.db.branches.fork(branch, name)
                forks[branch] = name
                key = _names.owned_key(target, name)
                puts[key] = _names.branch_value(key, name)
            for key in self.index.keys(f"ns/{src}/"):
                namespace = self.index.get(key)
                ns = self._named(source, _names.unescape(key.split("/", 2)[2]))[1]
                puts[_names.namespace_key(target, ns)] = {
                    "main": forks.get(namespace["main"], namespace["main"]),
                    "head": self._namespace_head(source, ns, namespace),
                    **_names_of(target, ns),
                }
            for key in self.index.records(source):
                _, part, checkpoint_id = _names.parse_checkpoint_key(key)
                ns = self._named(source, part)[1]
                entry = dict(self.index.get(key))
                if self._head_id(entry["branch"]) == checkpoint_id and entry["branch"] in forks:
                    entry["branch"] = forks[entry["branch"]]
                puts[_names.checkpoint_key(target, ns, checkpoint_id)] = entry
                if entry.get("run_id"):
                    puts[_names.run_key(str(entry["run_id"]), target, ns, checkpoint_id)] = True
                for branch in {entry["read"], entry["branch"]} - set(forks.values()):
                    key = _names.ref_key(branch, target)
                    puts[key] = _names.branch_value(key, branch)
            self.index.write(puts)

    def get_next_version(self, current: str | int | None, channel: None = None) -> str:
        """A monotonically increasing channel version: the next number, zero-padded so
        that versions compare as text in number order (as wide as ``current``'s, for
        the ``<32 digits>.<random>`` versions of LangGraph's savers and older threads).
        LangGraph's savers add the random part so that forks' values of a channel do not
        share a key in their blob tables; here each fork is a branch of its own."""
        if current is None:
            number, width = 0, _VERSION_DIGITS
        elif isinstance(current, int):
            number, width = current, _VERSION_DIGITS
        else:
            digits = str(current).partition(".")[0]
            number, width = int(digits), max(len(digits), _VERSION_DIGITS)
        return f"{number + 1:0{width}}"

    # Async twins ---------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep: int | None = None,
    ) -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy, keep=keep)
