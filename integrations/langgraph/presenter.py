"""How the explorer shows what ``RewindSaver`` recorded: threads as conversations, one
step per checkpoint, the saver's bookkeeping hidden. Needs no LangGraph import: stored
values are decoded as data (``readable``), never constructed.

What it reads, and why it stays cheap on long threads:

- a step is one version of the ``checkpoint`` key (the saver's record: id, parent,
  source, LangGraph's step number); a page reads only its own records, newest first;
- what ran to make a checkpoint is the pending writes (``langgraph.write`` events) of its
  parent: the node is in each write's ``task_path``, the messages it added are its writes
  to the ``messages`` channel. A page reads the events from its oldest parent's on, and
  stops at the first write of a checkpoint newer than its newest step;
- an interrupt is a ``__interrupt__`` write of a checkpoint, answered by its
  ``__resume__`` writes (shown on the step the answered node made; until then on that
  checkpoint's), and a task that failed there is its ``__error__`` write (shown on that
  checkpoint's step); the transcript is the ``messages`` channel as of a version;
- which branch of a thread is current (the one LangGraph's ``get_state`` reads) is the
  saver's index record of the namespace: one or two reads;
- a write whose value the saver kept as a channel value (a dict of many members: its
  event names the key and version, ``value_at``) is read there only when it is shown;
- a diff (``diff_rows``) reads each changed channel's stored value at both points and
  decodes only the items, members or value whose stored forms differ: a list that grew
  by one message decodes that message alone. A list's old and new items are aligned on
  their stored forms (common start and end, then ``SequenceMatcher`` on what is left,
  a long rest first cut at the items found once in each list, its work bounded;
  messages by id where they differ), so one message removed early in a long thread is
  one removed row, not every message after it changed.

``StepPage.total`` counts steps by LangGraph's step numbers (each checkpoint of a run is
numbered one more than its parent; a thread starts at -1), so it costs one record; it
is exact once a page reaches the start of the history.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from datetime import datetime
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import rewinddb
from rewinddb import jsonpath
from rewinddb.presenters import (
    ABSENT,
    STEPS_PAGE,
    DiffRow,
    Fork,
    Interrupt,
    Message,
    Presenter,
    Status,
    Step,
    StepNotFound,
    StepPage,
    Summary,
    ToolCall,
    Transcript,
    ValueChange,
    Wrote,
    hidden_by_patterns,
    shaped_path,
    short,
    value_changes,
)

from . import _kept, _names
from .readable import (
    as_text,
    is_encoded,
    message,
    message_likes,
    question_text,
    readable,
    said,
    undecodable,
    written_messages,
)

if TYPE_CHECKING:
    from rewinddb.models import Change, Event, EventItem, HistoryEntry, Point

#: The channel a conversation lives in (``MessagesState``, ``create_react_agent``).
MESSAGES = "messages"
START, INTERRUPT, RESUME, ERROR = "__start__", "__interrupt__", "__resume__", "__error__"
#: The sources of checkpoints no task made (the input; ``update_state``; a copy of a
#: checkpoint, as ``invoke(None, config)`` of a past one makes): what ran from their
#: parent is not what they did.
_NOT_RUN = frozenset(("input", "update", "fork"))
#: LangGraph's task channel (a topic of ``Send`` packets).
_TASKS = "__pregel_tasks"
#: Events read at a time while looking for pending writes, and at most per question.
_CHUNK = 64
#: Where LangChain's message classes live (``readable`` names a message by its class).
_MESSAGE_CLASSES = "langchain_core.messages."
_MAX_EVENTS = 4096
#: Forks of forks a transcript looks up for the late writes of inherited checkpoints.
_MAX_LINEAGE = 16
#: Events read from the end of a branch for its last answer (the overview's outcome).
_RECENT = 16
#: Messages a transcript decodes after its page, looking for the results of its calls.
_RESULTS_AHEAD = 64
#: Checkpoint metadata that is LangGraph's own (the step shows it) rather than the user's.
_INTERNAL_METADATA = frozenset(
    ("source", "step", "parents", "run_id", "thread_id", "checkpoint_ns", "checkpoint_id")
)
_HIDDEN_KEYS = (
    "kv:channel/branch:to:*",
    "kv:channel/__pregel_*",
    "kv:channel/__start__:*",
    "kv:channel/*:$.version",
    "kv:channel/*:$.plain",
    "kv:write/*",
)
#: An interrupt's id (LangGraph's ``xxh3_128`` hex digest).
_INTERRUPT_ID = re.compile(r"[0-9a-f]{32}")
_METADATA_PATH = re.compile(r"\$\.metadata(?:\.([A-Za-z_][A-Za-z0-9_]*)|\['((?:[^'\\]|\\.)*)'\])")


class CheckpointNotFound(rewinddb.NotFoundError):
    """No checkpoint with that id is in a branch's history."""

    def __init__(self, branch: str, checkpoint_id: str, elsewhere: str | None = None) -> None:
        where = f" (it is on {elsewhere!r})" if elsewhere and elsewhere != branch else ""
        super().__init__(
            f"branch {branch!r} has no checkpoint {checkpoint_id!r} in its history{where}: "
            "open the branch's page for the checkpoints it has",
            code="not_found.checkpoint",
        )


@dataclass(frozen=True)
class _Record:
    """The saver's record of one checkpoint, as far as it could be read."""

    version: int
    branch: str
    timestamp: datetime
    id: str | None
    parent: str | None
    source: str | None
    number: int
    stored: dict[str, Any]


#: What a kept write's value is until it is read (``_Kept``).
_UNREAD: Any = object()


class _Kept:
    """Where the saver kept a pending write's value instead of in its event: a dict of
    many members (``KEPT_MEMBERS`` in saver.py) is stored as a channel value, at the key
    and version the event's ``value_at`` names, on the branch that stored the event
    (read as the saver reads it: ``_kept``). Read when first shown: most writes' values
    are never shown."""

    __slots__ = ("_blob", "_db", "_place", "at", "branch")

    def __init__(self, db: rewinddb.Database, branch: str, payload: dict[str, Any]) -> None:
        self._db, self.branch = db, branch
        self.at = payload[_kept.VALUE_AT]  # as stored (shown when it cannot be read)
        self._place = _kept.kept_at(payload)
        self._blob: Any = _UNREAD

    def blob(self) -> Any:
        """The stored channel value (``Encoder.channel``'s form), or None when it cannot
        be read (a damaged ``value_at``, its branch deleted, its history pruned)."""
        if self._blob is _UNREAD:
            self._blob = None
            if self._place is not None:
                with contextlib.suppress(rewinddb.RewindError):
                    self._blob = _kept.read_kept(self._db, self.branch, self._place)
        return self._blob


@dataclass(frozen=True)
class _Write:
    """One pending write (a ``langgraph.write`` event): which checkpoint it belongs to,
    the task and node that made it, the channel and the stored value (None when the
    saver kept it as a channel value: ``kept`` says where; ``_shown`` reads either)."""

    sequence: int
    version: int
    checkpoint: str
    task: str
    node: str | None
    channel: str
    value: Any
    kept: _Kept | None = dataclass_field(default=None, compare=False)
    branch: str = dataclass_field(default="", compare=False)
    """The branch whose log holds the event."""
    push: int | None = dataclass_field(default=None, compare=False)
    """Of a ``Send`` task: its packet's index in the checkpoint's task channel (the
    packet names the node; ``_sent_nodes``)."""
    caller: str | None = dataclass_field(default=None, compare=False)
    """Of a functional-API ``@task`` call: the entrypoint (node) that called it."""
    calls: frozenset[str] = dataclass_field(default=frozenset(), compare=False)
    """Of a ``Send`` task: the tool-call ids its packet's argument carries (a ``{"id":
    ..., "name": ..., "args": ...}`` tool call in it): the calls its error fails."""


class _TextRole:
    """The role a bare string written to the ``messages`` channel takes: ``human`` where
    the channel holds LangChain messages (``add_messages`` makes a string a
    ``HumanMessage``), else ``message`` (a plain list of texts, shown as written). Read
    once, when first asked, from the channel's newest item as of ``as_of``."""

    __slots__ = ("_as_of", "_memo", "_role", "_view")

    def __init__(self, view: rewinddb.BranchView, as_of: int | None, memo: dict[Any, Any]) -> None:
        self._view, self._as_of, self._memo = view, as_of, memo
        self._role: str | None = None

    def __call__(self) -> str:
        if self._role is None:
            self._role = "message"
            items = _items(_kept_get(self._view, _names.channel_key(MESSAGES), self._as_of))
            if items is not None and not items.plain and items.stored:
                newest, _ = items.decoded(items.stored[-1], self._memo)
                kind = newest.get("__class__") if isinstance(newest, dict) else None
                if isinstance(kind, str) and kind.startswith(_MESSAGE_CLASSES):
                    self._role = "human"
        return self._role


def _kept_get(view: rewinddb.BranchView, key: str, version: int | None, until: int = -1) -> Any:
    """``key`` as of ``version`` (None: now); where retention cut the branch's history
    above ``version``, as of the cut (the entries visible there are kept) when that
    still tells ``version``'s value: ``until`` < 0 (``version`` is a kept entry's own),
    or the cut is below ``until`` (the next checkpoint: nothing is written between).
    Else None (nothing known)."""
    try:
        return view.kv.get(key, as_of=version)
    except rewinddb.HistoryUnavailableError as error:
        cut = error.details.get("kept_from")
        if not isinstance(cut, int) or 0 <= until <= cut:
            return None
        return view.kv.get(key, as_of=cut)


class _Before:
    """The messages (decoded, by id) the ``messages`` channel held at a step's parent
    checkpoint (``_kept_get``: none known when retention cut it); read once, when first
    asked."""

    __slots__ = ("_db", "_memo", "_parent", "_read", "_step")

    def __init__(
        self, db: rewinddb.Database, parent: _Record | None, step: int, memo: dict[Any, Any]
    ) -> None:
        self._db, self._parent, self._step, self._memo = db, parent, step, memo
        self._read: dict[str, Any] | None = None

    def __call__(self) -> dict[str, Any]:
        if self._read is None:
            self._read = {}
            if self._parent is not None:
                view = self._db.at(self._parent.branch)
                key = _names.channel_key(MESSAGES)
                items = _items(_kept_get(view, key, self._parent.version, self._step))
                if items is not None:
                    for stored in items.stored:
                        value, _ = items.decoded(stored, self._memo)
                        if (mid := _id_of(value)) is not None:
                            self._read[mid] = value
        return self._read


def _is_parent(earlier: _Record | None, record: _Record) -> bool:
    """Whether the checkpoint listed before ``record`` is its parent (or may be: either
    id unknown); not when retention removed the parent and kept an older one."""
    if earlier is None or earlier.id is None or record.parent is None:
        return True
    return earlier.id == record.parent


def _record(entry: HistoryEntry) -> _Record | None:
    if entry.deleted:
        return None
    stored = entry.value if isinstance(entry.value, dict) else {}

    def text(name: str) -> str | None:
        value = stored.get(name)
        return value if isinstance(value, str) else None

    step = stored.get("step")
    number = step if type(step) is int else -1
    return _Record(
        entry.version,
        entry.branch,
        entry.timestamp,
        text("id"),
        text("parent"),
        text("source"),
        number,
        stored,
    )


def _node(task_path: Any) -> str | None:
    """The node of a task path (``~__pregel_pull, agent`` -> ``agent``); None for the
    null task (a resume, an update). A ``Send`` task's path names no node (``send``
    until its packet is read: ``_sent_nodes``)."""
    if not isinstance(task_path, str) or not task_path:
        return None
    parts = [part.strip() for part in task_path.lstrip("~").split(",")]
    if parts[0] == "__pregel_pull" and len(parts) > 1 and parts[1]:
        return parts[1]
    if parts[0] == "__pregel_push":
        return _called(parts) or "send"
    return parts[0] or None


def _called(parts: list[str]) -> str | None:
    """The name of a functional-API ``@task`` call's task from its path's parts
    (``__pregel_push, ~__pregel_pull, trip, 0000000001, 0000000001``: LangGraph's
    ``(PUSH, parent path, call index, True)``): ``task 2 of trip``, the entrypoint's
    second call. LangGraph gives a checkpointer no task function's name (it is only
    in the task id's hash), so the call is named by its place. None for a ``Send``."""
    if len(parts) < 5 or not parts[1].startswith("~__pregel_"):
        return None
    index = parts[-2]
    pulls = [i for i, part in enumerate(parts) if part == "~__pregel_pull"]
    if not index.isdigit() or not pulls or pulls[0] + 1 >= len(parts) - 2:
        return None
    return f"task {int(index) + 1} of {parts[pulls[0] + 1]}"


def _caller(task_path: Any) -> str | None:
    """The entrypoint a functional-API ``@task`` call's path names (``_called``)."""
    if not isinstance(task_path, str):
        return None
    parts = [part.strip() for part in task_path.lstrip("~").split(",")]
    named = _called(parts) if parts[0] == "__pregel_push" else None
    return None if named is None else named.rsplit(" of ", 1)[1]


def _call_ids(value: Any, depth: int = 0) -> set[str]:
    """The ids of the tool calls (dicts with ``id``, ``name`` and ``args``) in a decoded
    ``Send`` argument."""
    found: set[str] = set()
    if depth > 4:
        return found
    if isinstance(value, dict):
        if isinstance(value.get("id"), str) and "name" in value and "args" in value:
            found.add(value["id"])
        for member in value.values():
            found |= _call_ids(member, depth + 1)
    elif isinstance(value, list):
        for member in value[:64]:
            found |= _call_ids(member, depth + 1)
    return found


def _push_index(task_path: Any) -> int | None:
    """The packet index of a ``Send`` task's path (``~__pregel_push, 0000000001,
    0000000000``: LangGraph's ``(PUSH, index, False)``); None for any other task."""
    if not isinstance(task_path, str):
        return None
    parts = [part.strip() for part in task_path.lstrip("~").split(",")]
    if parts[0] != "__pregel_push" or len(parts) not in (2, 3) or not parts[1].isdigit():
        return None
    return int(parts[1])


def _packet_node(packet: Any) -> str | None:
    """The node a decoded ``Send`` packet goes to (``Send(node, arg)``)."""
    if not isinstance(packet, dict) or not str(packet.get("__class__", "")).endswith("Send"):
        return None
    value = packet.get("value")
    node = value[0] if isinstance(value, list) and value else packet.get("node")
    return node if isinstance(node, str) and node else None


def _sent_nodes(
    db: rewinddb.Database, branch: str, version: int, writes: list[_Write], memo: dict[Any, Any]
) -> list[_Write]:
    """One checkpoint's ``writes`` (on ``branch`` at ``version``) with each ``Send``
    task named after its node, as LangGraph names the task (``get_state(...).tasks``):
    the node of the packet its path indexes in that checkpoint's task channel."""
    wanted = {write.push for write in writes if write.push is not None}
    if not wanted:
        return writes
    try:
        items = _items(db.at(branch).kv.get(_names.channel_key(_TASKS), as_of=version))
    except rewinddb.RewindError:  # (its history pruned, the branch gone)
        items = None
    if items is None:
        return writes
    nodes: dict[int, tuple[str, frozenset[str]]] = {}
    for index in wanted:
        if index >= len(items.stored):
            continue
        packet = items.decoded(items.stored[index], memo)[0]
        node = _packet_node(packet)
        if node is not None:
            value = packet.get("value") if isinstance(packet, dict) else None
            arg = value[1:] if isinstance(value, list) else packet.get("arg")
            nodes[index] = (node, frozenset(_call_ids(arg)))
    return [
        replace(write, node=nodes[write.push][0], calls=nodes[write.push][1])
        if write.push in nodes
        else write
        for write in writes
    ]


def _write(event: Event, db: rewinddb.Database) -> _Write | None:
    if event.event_type != _names.WRITE_EVENT or not isinstance(event.payload, dict):
        return None
    payload = event.payload
    checkpoint, channel = payload.get("checkpoint_id"), payload.get("channel")
    if not isinstance(checkpoint, str) or not isinstance(channel, str):
        return None
    return _Write(
        event.sequence,
        event.version,
        checkpoint,
        str(payload.get("task_id")),
        _node(payload.get("task_path")),
        channel,
        payload.get("value"),
        _Kept(db, event.branch, payload) if _kept.kept(payload) else None,
        event.branch,
        _push_index(payload.get("task_path")),
        _caller(payload.get("task_path")),
    )


def _shown(write: _Write, memo: dict[Any, Any]) -> tuple[Any, Any]:
    """(a write's value decoded for display, what it was decoded from): the same object
    twice when it could not be decoded (another serde's, damaged, a kept value that
    cannot be read: then its ``value_at``)."""
    if write.kept is None:
        return readable(write.value, memo=memo), write.value
    blob = write.kept.blob()
    if not isinstance(blob, dict) or blob.get("type") not in ("list", "dict", "value"):
        stored = write.kept.at if blob is None else blob
        return stored, stored
    return _channel_value(blob, memo), blob


def _bookkeeping(channel: str) -> bool:
    """LangGraph's own channels (routing, the input, tasks, interrupts)."""
    return channel.startswith(("branch:to:", "__"))


# -- the presenter --------------------------------------------------------------------


class LangGraphPresenter(Presenter):
    """Describes the branches ``RewindSaver`` writes (``lg/...`` and its index)."""

    name = "langgraph"

    def claims(self, branch: rewinddb.Branch) -> bool:
        return branch.name.startswith(_names.PREFIX) or branch.name == _names.INDEX_BRANCH

    def display(self, value: Any, memo: dict[Any, Any] | None = None) -> Any:
        """Serde encodings decoded; what the saver stores as itself (a plain channel
        value, the checkpoint record's JSON fields) shown as stored: user text that
        merely looks like an encoding ("json:...") must not be decoded."""
        if _plain_blob(value):
            return value
        if _checkpoint_record(value):
            shown = {
                name: readable(field, memo=memo) if is_encoded(field) else field
                for name, field in value.items()
            }
            triggers = value.get(_names.TRIGGERS)
            if isinstance(triggers, dict):  # channel values, each shown as one is
                shown[_names.TRIGGERS] = {
                    channel: self.display(blob, memo) for channel, blob in triggers.items()
                }
            return shown
        return readable(value, memo=memo)

    def encoded(self, value: Any) -> bool:
        """A serde encoding, or a value ``display`` shows as a whole (so a readable diff
        compares what it shows, not what a walk into it would decode)."""
        return is_encoded(value) or _plain_blob(value) or _checkpoint_record(value)

    def value_text(self, value: Any) -> str | None:
        """A LangChain message (as ``readable`` decodes it) reads as ``role: what it says``."""
        if not isinstance(value, dict):
            return None
        kind = value.get("__class__")
        if not isinstance(kind, str) or not kind.startswith(_MESSAGE_CLASSES):
            return None
        shown = message(value)
        return short(f"{shown.role}: {said(shown)}")

    # -- the overview ------------------------------------------------------------

    def summary(
        self, db: rewinddb.Database, branch: rewinddb.Branch, *, as_of: int | None = None
    ) -> Summary:
        """A thread's status (finished, interrupted and on which node, open, failed,
        empty) and its last answer as of ``as_of`` (None: now), from its newest
        checkpoint and newest events then. Of a thread (or subgraph) that has forks,
        ``current`` names the branch LangGraph's ``get_state`` continues on now (the one
        that holds the newest checkpoint). A branch the saver keeps only because a copy
        of its thread still reads it (``held/`` in the saver's index: its thread deleted
        or pruned it) is no attempt of a thread LangGraph has: it is internal."""
        if branch.name == _names.INDEX_BRANCH:
            return Summary(
                branch.name, self.name, "internal", "LangGraph saver index", "open", internal=True
            )
        parsed = _names.parse_branch(branch.name)
        if parsed is None:
            return super().summary(db, branch, as_of=as_of)
        thread_id, namespace, _ = parsed
        kind = "subgraph" if namespace else "thread"
        title = self._title(branch.name, db)  # a fork keeps its ~suffix: two attempts, two names
        with db.read():
            if namespace and parsed[2] is None:
                title = self._title(branch.name, db, self._ran_in(db, branch.name, thread_id))
            fork = self.fork(db, branch)
            told = self._told(db, branch.name, branch.events, as_of)
            held = self._held(db, branch.name)
            current = None
            if not held and as_of is None and self._forked(db, thread_id, namespace, branch.name):
                current = self._current(db, thread_id, namespace)
            if told is None:
                return Summary(
                    branch.name,
                    self.name,
                    kind,
                    title,
                    "empty",
                    internal=held,
                    fork=fork,
                    current=current,
                )
        status, waiting, outcome = told
        return Summary(
            branch.name,
            self.name,
            kind,
            title,
            status,
            None if outcome is None else short(outcome),
            waiting,
            internal=held,
            fork=fork,
            current=current,
        )

    def _held(self, db: rewinddb.Database, branch: str) -> bool:
        """Whether the saver keeps ``branch`` only for the copies that read it."""
        if not db.branches.exists(_names.INDEX_BRANCH):
            return False
        return bool(db.at(_names.INDEX_BRANCH).kv.get(_names.held_key(branch)))

    def _told(
        self, db: rewinddb.Database, branch: str, events: int, as_of: int | None
    ) -> tuple[Status, str | None, str | None] | None:
        """(status, the node it waits on, the outcome) of ``branch`` (which holds
        ``events`` events now) as of ``as_of``; None when it has no checkpoint then."""
        view = db.at(branch)
        head = self._newest(view, as_of)
        if head is None:
            return None
        memo: dict[Any, Any] = {}
        length = events if as_of is None else view.events.length(as_of=as_of)
        recent = self._recent_writes(db, view, length, as_of)
        own = [write for write in recent if write.checkpoint == head.id]
        own = _sent_nodes(db, head.branch, head.version, own, memo)
        status, waiting, failure = self._status(view, head, own, memo, as_of)
        texts = _TextRole(view, as_of, memo)
        outcome = failure or self._last_answer(view, head, recent, memo, texts, as_of)
        return status, waiting, outcome

    def _forked(self, db: rewinddb.Database, thread_id: str, namespace: str, branch: str) -> bool:
        """Whether the namespace has a live branch other than ``branch`` (the saver's
        index lists the branches each thread owns: in its ``own/`` keys, or as the value
        of a key that holds the digest of the branch's name)."""
        index = db.at(_names.INDEX_BRANCH).kv
        keys = index.keys(f"own/{_names.escape(thread_id)}/")
        named = index.get_many([key for key in keys if _names.names_branch(key)])
        for key in keys:
            other = named.get(key, _names.branch_of_key(key))  # a digest's branch: its value
            if not isinstance(other, str):
                continue
            parsed = _names.parse_branch(other)
            same = parsed is not None and parsed[:2] == (thread_id, namespace)
            if other != branch and same and db.branches.exists(other):
                return True
        return False

    def _current(self, db: rewinddb.Database, thread_id: str, namespace: str) -> str | None:
        """The branch that holds a namespace's newest checkpoint, the one LangGraph's
        ``get_state`` (a config without a checkpoint id) reads, as the saver's index
        names it (the saver finds it so): the branch its record names ``newest`` when
        that branch's head is newer than the record's ``head``, else the branch that
        ``head`` was written on. None when the index cannot say."""
        if not db.branches.exists(_names.INDEX_BRANCH):
            return None
        index = db.at(_names.INDEX_BRANCH)
        record = index.kv.get(_names.namespace_key(thread_id, namespace))
        if not isinstance(record, dict):
            return None
        head, newest = record.get("head"), record.get("newest")
        if isinstance(newest, str) and db.branches.exists(newest):
            parsed = _names.parse_branch(newest)
            on = (
                self._newest(db.at(newest))
                if parsed and parsed[:2] == (thread_id, namespace)
                else None
            )
            if on is not None and on.id is not None and (not isinstance(head, str) or on.id > head):
                return newest
        if not isinstance(head, str):
            return None
        entry = index.kv.get(_names.checkpoint_key(thread_id, namespace, head))
        found = entry.get("branch") if isinstance(entry, dict) else None
        return found if isinstance(found, str) and db.branches.exists(found) else None

    def _newest(self, view: rewinddb.BranchView, as_of: int | None = None) -> _Record | None:
        for entry in reversed(view.kv.history(_names.CHECKPOINT_KEY, as_of=as_of, limit=1)):
            return _record(entry)
        return None

    def _recent_writes(
        self,
        db: rewinddb.Database,
        view: rewinddb.BranchView,
        length: int,
        as_of: int | None = None,
    ) -> list[_Write]:
        start = max(length - _RECENT, 0)
        after = start - 1 if start else None
        items = view.events.list(after=after, limit=_RECENT, as_of=as_of)
        return [write for item in items if (write := _write(item.event, db)) is not None]

    def _status(
        self,
        view: rewinddb.BranchView,
        head: _Record,
        own: list[_Write],
        memo: dict[Any, Any],
        as_of: int | None = None,
    ) -> tuple[Status, str | None, str | None]:
        """(status, the node it waits on, the error it failed with) of a head checkpoint
        with pending writes ``own``."""
        for interrupt in self._interrupts(own, None, memo):
            if not interrupt.resumed:
                return "interrupted", interrupt.node, None
        for write in own:
            if write.channel == ERROR:
                return "failed", None, _error_text(write, memo)
        if self._work_left(view, head, as_of):
            return "open", None, None
        return "finished", None, None

    def _work_left(self, view: rewinddb.BranchView, head: _Record, as_of: int | None) -> bool:
        """Whether LangGraph has a task to run from ``head`` (its ``next`` is not empty):
        a trigger channel (the input, an edge to a node) holds a value the node it
        triggers has not seen, or the task channel holds ``Send`` packets. The record
        holds the triggers (older records left them as keys, as every channel); the task
        channel (a topic) stays once used, empty after its packets ran."""
        triggers = head.stored.get(_names.TRIGGERS)
        keys = view.kv.keys(_names.CHANNEL_PREFIX, as_of=as_of)
        present = [key[len(_names.CHANNEL_PREFIX) :] for key in keys]
        if isinstance(triggers, dict):
            present = [c for c in present if not _names.is_trigger(c)] + list(triggers)
        checkpoint = _checkpoint(head)
        versions = checkpoint.get("channel_versions")
        seen = checkpoint.get("versions_seen")
        for channel in present:
            if _names.is_trigger(channel):
                node = channel.removeprefix("branch:to:") if channel != START else START
                if _unseen(channel, node, versions, seen):
                    return True
            elif channel.startswith(_TASKS):
                items = _items(view.kv.get(_names.channel_key(channel), as_of=as_of))
                if items is None or items.stored:
                    return True
        return False

    def _last_answer(
        self,
        view: rewinddb.BranchView,
        head: _Record,
        recent: list[_Write],
        memo: dict[Any, Any],
        texts: _TextRole,
        as_of: int | None = None,
    ) -> str | None:
        """The text of the newest AI message (or plain-text message): from the newest
        writes, else (an edited head, a long tool run) from the channel itself."""
        if head.source != "update":
            for write in reversed(recent):
                if write.channel == MESSAGES and write.node != START:
                    for found in reversed(self._written(write, memo, texts)):
                        if found.role in ("ai", "message"):
                            return said(found)
        blob = view.kv.get(_names.channel_key(MESSAGES), as_of=as_of)
        items = _items(blob)
        if items is None:
            return None
        for stored in reversed(items.stored[-_RECENT:]):
            found = message(*items.decoded(stored, memo))
            if found.role in ("ai", "message"):
                return said(found)
        return None

    def fork(self, db: rewinddb.Database, branch: rewinddb.Branch) -> Fork | None:
        """An ``lg/...~`` branch as the edit, replay or copy of its parent's step.

        Time travel from a past checkpoint is an edit (``update_state``: "edit of step 4
        of t"), new input (``invoke`` with input, its first checkpoint's source
        ``input``: "new input at step 1 of t") or a replay (``invoke(None, ...)``:
        "replay from step 1 of t"); new input is of kind ``replay`` too (a run from a
        past step, compared with its parent's as a replay is).

        A branch of one thread forked from another's is a copy (``copy_thread``: "copy
        of t at step 7", each fork of the thread copied as its own branch: "copy of
        t~1f2e3d4c at step 6") when the copy's index puts the checkpoint it forked at on
        it; otherwise it is time travel in the copy from a checkpoint the copy reads on
        the source's branch, told from the copy's branch that holds that checkpoint
        ("replay from step 1 of t2").

        A copy of a copy whose thread was deleted (its branch purged: the copy's parent
        is no branch of the saver's) is told from the branch that wrote the checkpoint
        it forked at, when that one is left ("copy of t at step 7", as a copy of a
        deleted t is).

        A subgraph's branch is a root branch of its own; one that ran in a time-travel
        fork of its thread (``_ran_in``) comes from that attempt: "ran in t~1f2e3d4c at
        step 7 (edit of step 5 of t)", its version the attempt's fork point and its step
        the attempt's checkpoint the subgraph ran from (its root checkpoint)."""
        if branch.parent is None:
            return self._subgraph_fork(db, branch)
        parent_branch, forked_at = branch.parent, branch.forked_at
        if not parent_branch.startswith(_names.PREFIX):
            found = self._copied_from(db, branch)
            if found is None:
                return self._subgraph_fork(db, branch)
            parent_branch, forked_at = found
        at = db.at(parent_branch).kv.history(_names.CHECKPOINT_KEY, as_of=forked_at, limit=1)
        point = _record(at[-1]) if at else None
        if point is None:
            parent = self._title(parent_branch, db)
            return Fork(parent_branch, forked_at, "fork", f"fork of {parent}")
        mine, theirs = _names.parse_branch(branch.name), _names.parse_branch(parent_branch)
        copied = mine is not None and theirs is not None and mine[0] != theirs[0]
        if copied and mine is not None and point.id is not None:
            holder = self._holder(db, mine[0], mine[1], point.id)
            if holder is not None and holder != branch.name:  # time travel in the copy
                copied = False
                parent_branch = self._copy_of(db, holder, mine[0], mine[1], point.version)
        parent = self._title(parent_branch, db, self._attempt_of(db, parent_branch))
        first = self._first_own(db, branch)
        source = first.source if first else None
        step = point.number
        kind: Literal["edit", "replay", "fork"] = "replay"
        label = f"replay from step {step} of {parent}"
        if copied:  # copy_thread: a new thread reading this one's history
            kind, label = "fork", f"copy of {parent} at step {step}"
        elif source == "update":
            kind, label = "edit", f"edit of step {step} of {parent}"
        elif source == "input":  # invoke with new input from a past checkpoint
            label = f"new input at step {step} of {parent}"
        elif source == "fork" and first is not None and first == self._newest(db.at(branch.name)):
            kind, label = "fork", f"fork of step {step} of {parent}"  # a copy, not run yet
        return Fork(parent_branch, forked_at, kind, label, step=point.version)

    def _copied_from(
        self, db: rewinddb.Database, branch: rewinddb.Branch
    ) -> tuple[str, int] | None:
        """(the live branch of another thread that wrote the checkpoint ``branch`` sees
        at its fork point, that checkpoint's version), or None (also when retention cut
        the branch's history above its fork point: what it saw there is not kept)."""
        mine = _names.parse_branch(branch.name)
        if mine is None or branch.forked_at == 0:  # (forked from nothing: not a copy)
            return None
        view = db.at(branch.name)
        try:
            at = view.kv.history(_names.CHECKPOINT_KEY, as_of=branch.forked_at, limit=1)
        except rewinddb.HistoryUnavailableError:
            return None
        if not at:
            return None
        writer = at[-1].branch
        theirs = _names.parse_branch(writer)
        if theirs is None or theirs[0] == mine[0] or not db.branches.exists(writer):
            return None
        return writer, at[-1].version

    def _copy_of(
        self, db: rewinddb.Database, source: str, thread_id: str, namespace: str, version: int
    ) -> str:
        """The branch of thread ``thread_id`` that copies ``source`` (``copy_thread``
        names it from the thread's own names) and reads its checkpoint at ``version``
        there, or ``source`` when there is none. A copy of a copy is forked from the
        first copy's branch (or, that thread deleted, from what is left of it), not from
        ``source``: whether it sees ``source`` up to the point tells, not its parent."""
        copy = _names.copy_branch(source, thread_id, namespace)
        if copy == source or not db.branches.exists(copy):
            return source
        shared = db.common_point(copy, source, as_of_b=version)
        return copy if (shared.branch, shared.version) == (source, version) else source

    def _attempt_of(self, db: rewinddb.Database, branch: str) -> str | None:
        """The attempt of its thread a subgraph's first branch ran in (``_ran_in``), for
        its title; None for any other branch."""
        parsed = _names.parse_branch(branch)
        if parsed is None or not parsed[1] or parsed[2] is not None:
            return None
        return self._ran_in(db, branch, parsed[0])

    def _holder(
        self, db: rewinddb.Database, thread_id: str, namespace: str, checkpoint_id: str
    ) -> str | None:
        """The live branch the saver's index puts a thread's checkpoint on, if any."""
        if not db.branches.exists(_names.INDEX_BRANCH):
            return None
        key = _names.checkpoint_key(thread_id, namespace, checkpoint_id)
        entry = db.at(_names.INDEX_BRANCH).kv.get(key)
        found = entry.get("branch") if isinstance(entry, dict) else None
        return found if isinstance(found, str) and db.branches.exists(found) else None

    def _ran_in(self, db: rewinddb.Database, branch: str, thread_id: str) -> str | None:
        """The attempt of its thread (a time-travel fork: ``t~1f2e3d4c``) a subgraph's
        branch ran in: the branch the saver's index puts its root checkpoint on (its
        checkpoints' ``parents`` metadata names it); None for the thread's main line. A
        copy's index keeps the source's branch for a checkpoint it copied: that is told
        as the copy's own branch that reads it (``_copy_of``, as ``fork`` does), so a
        copy's subgraph is titled under the copy's fork, not the source's."""
        found = self._root_of(db, branch, thread_id)
        return found[0] if found is not None else None

    def _root_of(
        self, db: rewinddb.Database, branch: str, thread_id: str
    ) -> tuple[str, int | None] | None:
        """(the attempt a subgraph's branch ran in, as ``_ran_in`` finds it, and the
        version of its root checkpoint there when the index keeps it), or None."""
        head = self._newest(db.at(branch))
        metadata = head.stored.get("metadata") if head is not None else None
        parents = metadata.get("parents") if isinstance(metadata, dict) else None
        root = parents.get("") if isinstance(parents, dict) else None
        if not isinstance(root, str) or not db.branches.exists(_names.INDEX_BRANCH):
            return None
        key = _names.checkpoint_key(thread_id, "", root)
        entry = db.at(_names.INDEX_BRANCH).kv.get(key)
        holder = entry.get("branch") if isinstance(entry, dict) else None
        if not isinstance(holder, str) or not db.branches.exists(holder):
            return None
        version = entry.get("version") if isinstance(entry, dict) else None
        version = version if type(version) is int and version >= 0 else None
        parsed = _names.parse_branch(holder)
        if parsed is not None and parsed[0] != thread_id and version is not None:
            # a copy's entry keeps the source's branch: the copy's own fork reads it
            holder = self._copy_of(db, holder, thread_id, "", version)
            parsed = _names.parse_branch(holder)
        if parsed is None or parsed[2] is None:
            return None
        return holder, version

    def _subgraph_fork(self, db: rewinddb.Database, branch: rewinddb.Branch) -> Fork | None:
        """The fork of a subgraph's branch that ran in a time-travel fork of its thread
        (see ``fork``); None for one that ran on the thread's main line, or any other
        branch."""
        parsed = _names.parse_branch(branch.name)
        if parsed is None or not parsed[1] or parsed[2] is not None:
            return None
        found = self._root_of(db, branch.name, parsed[0])
        if found is None:
            return None
        holder, root = found
        attempt = db.branches.get(holder)
        label = f"ran in {self._title(holder, db)}"
        step = None
        if root is not None:
            try:
                at = db.at(holder).kv.history(_names.CHECKPOINT_KEY, as_of=root, limit=1)
            except rewinddb.HistoryUnavailableError:  # (retention cut it: no step to open)
                at = []
            point = _record(at[-1]) if at else None
            if point is not None and point.version == root:
                step = root
                label += f" at step {point.number}"
        how = self.fork(db, attempt)
        if how is not None:
            label += f" ({how.label})"
        return Fork(holder, attempt.forked_at, "fork", label, step=step)

    def _title(
        self, name: str, db: rewinddb.Database | None = None, attempt: str | None = None
    ) -> str:
        """A branch as people name its thread (``t``, ``t / ns``, ``t~1f2e3d4c``): a
        thread id or namespace that stands as its digest in the name by the one the
        namespace's record in the saver's index keeps (``thread``, ``ns``), and the
        namespace's first branch by the thread alone (a pruned thread's kept checkpoints
        written anew stand on a ``~`` branch that is now its main line). A subgraph that
        ran in an ``attempt`` of its thread (a fork) is named under that attempt's title
        (``t~1f2e3d4c / ns``)."""
        parsed = _names.parse_branch(name)
        if parsed is None:
            return name
        thread, namespace, fork = parsed
        digested = isinstance(thread, _names.Digest) or isinstance(namespace, _names.Digest)
        if (
            (digested or fork is not None)
            and db is not None
            and db.branches.exists(_names.INDEX_BRANCH)
        ):
            record = db.at(_names.INDEX_BRANCH).kv.get(_names.namespace_key(thread, namespace))
            if isinstance(record, dict):
                kept_thread, kept_ns = record.get("thread"), record.get("ns")
                thread = kept_thread if isinstance(kept_thread, str) else thread
                namespace = kept_ns if isinstance(kept_ns, str) else namespace
                if record.get("main") == name:
                    fork = None
        if attempt is not None and namespace and fork is None:
            return f"{self._title(attempt, db)} / {namespace}"
        title = f"{thread} / {namespace}" if namespace else thread
        return f"{title}~{fork}" if fork is not None else title

    def _first_own(self, db: rewinddb.Database, branch: rewinddb.Branch) -> _Record | None:
        """The first checkpoint ``branch`` wrote itself: its own commits are few for
        most forks (read them), else it is found by halving the versions it wrote at."""
        view = db.at(branch.name)
        if branch.commits <= _CHUNK:
            commits = view.commits(limit=branch.commits)
            own = [c for c in commits if c.branch == branch.name and c.version > branch.forked_at]
            for commit in reversed(own):
                if commit.trigger == "langgraph.checkpoint":
                    found = view.kv.history(_names.CHECKPOINT_KEY, as_of=commit.version, limit=1)
                    return _record(found[-1]) if found else None
            return None
        low, high, first = branch.forked_at + 1, branch.head, None
        while low <= high:
            middle = (low + high) // 2
            found = view.kv.history(_names.CHECKPOINT_KEY, as_of=middle, limit=1)
            if found and found[-1].branch == branch.name:
                first, high = found[-1], found[-1].version - 1
            else:
                low = middle + 1
        return _record(first) if first is not None else None

    # -- steps -------------------------------------------------------------------

    def steps(
        self,
        db: rewinddb.Database,
        branch: str,
        *,
        before: int | None = None,
        after: int | None = None,
        limit: int = STEPS_PAGE,
    ) -> StepPage:
        """One step per checkpoint, the newest ``limit`` older than version ``before``
        (with ``after``, the oldest ``limit`` newer than version ``after``)."""
        if branch == _names.INDEX_BRANCH:
            return super().steps(db, branch, before=before, after=after, limit=limit)
        _check_count(limit, "limit", minimum=1)
        if before is not None:
            _check_count(before, "before")
        if after is not None:
            _check_count(after, "after")
        view = db.at(branch)
        with db.read():
            parent, page = self._page(view, before, after, limit)
            if not page and parent is None and not self._has_checkpoints(view):
                return super().steps(db, branch, before=before, after=after, limit=limit)
            writes = self._writes(db, parent or (page[0] if page else None), page)
            memo: dict[Any, Any] = {}
            texts = _TextRole(view, page[-1].version if page else None, memo)
            steps = []
            previous = parent
            for record in page:
                steps.append(self._step(db, branch, record, previous, writes, memo, texts))
                previous = record
            older = page[0].version if parent is not None else None
            head = page[-1] if page and before is None and after is None else self._newest(view)
            total = len(steps) if page or head is None else head.number + 2  # (from -1)
            if head is not None and page:
                newer = max(head.number - page[-1].number, 0)
                first = page[0].number if older is None else -1
                total = max(head.number - first + 1, len(steps) + newer + (older is not None))
            later = (
                page[-1].version
                if page and head is not None and head.version > page[-1].version
                else None
            )
            if not page and before is not None and head is not None:
                # No step between the cursors: those after this page begin where it was
                # read from (``after=newer`` reads them), as the generic presenter says.
                cursor = max(before - 1, after or 0)
                later = cursor if head.version > cursor else None
            return StepPage(tuple(steps), older, total, later)

    def _page(
        self, view: rewinddb.BranchView, before: int | None, after: int | None, limit: int
    ) -> tuple[_Record | None, list[_Record]]:
        """The checkpoints of one page of ``steps`` (oldest first) and the one before it."""
        if after is not None:
            found = view.key_history(
                "kv", _names.CHECKPOINT_KEY, limit=limit, before=before, after=after
            )
            page = [record for item in found if (record := _record(item.entry)) is not None]
            if not page:
                return None, []
            earlier = view.key_history("kv", _names.CHECKPOINT_KEY, limit=1, before=page[0].version)
            parents = [record for item in earlier if (record := _record(item.entry)) is not None]
            return (parents[-1] if parents else None), page
        if before is None:
            entries = view.kv.history(_names.CHECKPOINT_KEY, limit=limit + 1)
        else:
            found = view.key_history("kv", _names.CHECKPOINT_KEY, limit=limit + 1, before=before)
            entries = [version.entry for version in found]
        records = [record for entry in entries if (record := _record(entry)) is not None]
        return (records[0], records[1:]) if len(records) > limit else (None, records)

    def _has_checkpoints(self, view: rewinddb.BranchView) -> bool:
        return bool(view.kv.history(_names.CHECKPOINT_KEY, limit=1))

    def step(self, db: rewinddb.Database, branch: str, version: int) -> Step:
        """The step (checkpoint) of ``branch`` written at ``version``."""
        if branch == _names.INDEX_BRANCH:
            return super().step(db, branch, version)
        _check_count(version, "version")
        view = db.at(branch)
        with db.read():
            found = view.key_history("kv", _names.CHECKPOINT_KEY, limit=2, before=version + 1)
            records = [record for item in found if (record := _record(item.entry)) is not None]
            if not records or records[-1].version != version:
                if not records and not self._has_checkpoints(view):
                    return super().step(db, branch, version)
                raise StepNotFound(branch, version)
            record = records[-1]
            parent = records[-2] if len(records) > 1 else None
            writes = self._writes(db, parent or record, [record])
            memo: dict[Any, Any] = {}
            texts = _TextRole(view, version, memo)
            return self._step(db, branch, record, parent, writes, memo, texts)

    def step_by_id(self, db: rewinddb.Database, branch: str, checkpoint_id: str) -> Step:
        """The step of ``branch`` that is checkpoint ``checkpoint_id`` (found through the
        saver's index; ``not_found.checkpoint`` when its history has no such checkpoint)."""
        if not isinstance(checkpoint_id, str) or not 0 < len(checkpoint_id) <= 200:
            raise rewinddb.InvalidInputError(
                f"a checkpoint id is a string like '1ef…', not {checkpoint_id!r}",
                code="invalid.checkpoint",
            )
        parsed = _names.parse_branch(branch)
        if parsed is None:
            db.branches.get(branch)  # an unknown branch says so
            raise CheckpointNotFound(branch, checkpoint_id)
        thread, namespace, _ = parsed
        with db.read():
            if not db.branches.exists(branch):
                db.branches.get(branch)  # raises the branch's not_found error
            entry = None
            if db.branches.exists(_names.INDEX_BRANCH):
                key = _names.checkpoint_key(thread, namespace, checkpoint_id)
                entry = db.at(_names.INDEX_BRANCH).kv.get(key)
            version = entry.get("version") if isinstance(entry, dict) else None
            if type(version) is not int or version < 0:
                raise CheckpointNotFound(branch, checkpoint_id)
            try:
                found = self.step(db, branch, version)
            except StepNotFound:
                elsewhere = entry.get("branch") if isinstance(entry, dict) else None
                raise CheckpointNotFound(branch, checkpoint_id, elsewhere) from None
            if found.id != checkpoint_id:
                raise CheckpointNotFound(branch, checkpoint_id)
            return found

    def _writes(
        self, db: rewinddb.Database, first: _Record | None, page: Sequence[_Record]
    ) -> dict[str, list[_Write]]:
        """The pending writes of the checkpoints from ``first`` to the newest of ``page``,
        by checkpoint id. A checkpoint's writes are events of the branch that wrote it
        (its ancestors' may be saved after a fork saw them: LangGraph saves writes in
        the background), so each branch's are read there: from its oldest checkpoint's
        on, up to the first write of a checkpoint newer than its newest (checkpoint ids
        grow with time)."""
        if first is None or not page:
            return {}
        by_branch: dict[str, list[_Record]] = {}
        for record in (first, *page):
            by_branch.setdefault(record.branch, []).append(record)
        grouped: dict[str, list[_Write]] = {}
        for branch, records in by_branch.items():
            oldest = min(records, key=lambda record: record.version)
            newest = max(records, key=lambda record: record.version)
            self._read_writes(db, db.at(branch), oldest, newest.id, grouped)
        memo: dict[Any, Any] = {}
        for record in (first, *page):
            if record.id in grouped:
                grouped[record.id] = _sent_nodes(
                    db, record.branch, record.version, grouped[record.id], memo
                )
        return grouped

    def _read_writes(
        self,
        db: rewinddb.Database,
        view: rewinddb.BranchView,
        oldest: _Record,
        newest: str | None,
        grouped: dict[str, list[_Write]],
    ) -> None:
        try:
            after = view.events.length(as_of=oldest.version) - 1
        except rewinddb.HistoryUnavailableError:  # (below a retention cut: its log starts
            after = -1  # at the cut, so every write it keeps is read from its start)
        read = 0
        while read < _MAX_EVENTS:
            items = view.events.list(after=after if after >= 0 else None, limit=_CHUNK)
            done = len(items) < _CHUNK
            for item in items:
                write = _write(item.event, db)
                if write is None:
                    continue
                if newest is not None and write.checkpoint > newest:
                    done = True  # the rest of this chunk still: writes are saved late
                else:
                    grouped.setdefault(write.checkpoint, []).append(write)
            if done:
                break
            after = items[-1].event.sequence
            read += len(items)

    def _step(
        self,
        db: rewinddb.Database,
        branch: str,
        record: _Record,
        parent: _Record | None,
        writes: dict[str, list[_Write]],
        memo: dict[Any, Any],
        texts: _TextRole,
    ) -> Step:
        own = writes.get(record.id, []) if record.id else []
        parent_cut = not _is_parent(parent, record)
        if parent_cut:  # (retention removed its parent: not known)
            parent = None
        ran = writes.get(parent.id, []) if parent is not None and parent.id else []
        nodes: tuple[str, ...] = ()
        added: tuple[Message, ...] = ()
        channels: tuple[str, ...] = ()
        events: tuple[int, ...] = ()  # the writes that made it (its diff's events)
        if record.source == "input":  # the input is in __start__; the next step applies it
            label = "input"
        elif record.source in ("update", "fork"):
            label = record.source
            added = self._edited(db, record, parent, memo)
            channels = self._changed_channels(record, parent)
        else:
            made = [w for w in ran if w.node is not None]
            nodes = tuple(dict.fromkeys(str(w.node) for w in made))
            if not nodes and parent is None and record.source == "loop":
                nodes = _recorded_nodes(record)  # (its parent's writes are not kept)
            retried = {w.node for w in _retried(ran)}
            label = ", ".join(
                ("start" if n == START else n) + (" (retried)" if n in retried else "")
                for n in nodes
            )
            label = label or record.source or "checkpoint"
            added = self._messages(made, memo, texts, _Before(db, parent, record.version, memo))
            events = tuple(write.sequence for write in ran)
            channels = tuple(dict.fromkeys(w.channel for w in made if not _bookkeeping(w.channel)))
        if not record.stored:
            label = "undecodable"
        added = self._with_failures(added, own, memo, texts)
        return Step(
            version=record.version,
            branch=record.branch,
            number=record.number,
            label=short(label),
            timestamp=record.timestamp,
            inherited=record.branch != branch,
            source=record.source,
            nodes=nodes,
            id=record.id,
            writes=channels,
            messages=tuple(replace(m, step=record.version) for m in added),
            interrupts=self._asked(
                [] if record.source in _NOT_RUN else ran,
                None if parent is None else parent.version,
                own,
                record.version,
                memo,
            ),
            events=events,
            parent_cut=parent_cut,
        )

    def _with_failures(
        self,
        added: tuple[Message, ...],
        own: Sequence[_Write],
        memo: dict[Any, Any],
        texts: _TextRole,
    ) -> tuple[Message, ...]:
        """A step's messages with the tasks that ran from it and failed (LangGraph keeps
        each error as the checkpoint's ``__error__`` write, and ``get_state_history``
        reports it as that checkpoint's task's ``error``): each is an ``error`` message
        named after its node, saying whether the task ran again. Until one that failed
        runs again, no later step answers the tool calls the step asked for: those a
        task that succeeded there answered (its pending writes) have that result, the
        others the error."""
        errors = _raised(own, memo)
        if not errors:
            return added
        again = {write.task for write in _retried(own)}
        failures = []
        for write in errors:
            error = _error_text(write, memo)
            text = f"{error} (it ran again)" if write.task in again else error
            failures.append(Message("error", text, name=write.node))
        stuck = [write for write in errors if write.task not in again]
        if stuck:
            failing = {write.task for write in stuck}
            answered = _answers(
                self._messages([w for w in own if w.task not in failing], memo, texts)
            )
            failed = {
                call.id: f"failed: {_call_error(stuck, call.id, memo)}"
                for m in added
                for call in m.tool_calls
            }
            added = tuple(
                _with_results(
                    _with_results(m, answered, missing_only=True), failed, missing_only=True
                )
                for m in added
            )
        return (*added, *failures)

    def _messages(
        self,
        writes: Iterable[_Write],
        memo: dict[Any, Any],
        texts: _TextRole,
        before: _Before | None = None,
    ) -> tuple[Message, ...]:
        """The messages ``writes`` put in the ``messages`` channel. A write of several
        messages with ids (a subgraph's whole state, a node that returns the whole list)
        may hold messages the channel had already, unchanged: ``add_messages`` keeps
        them as they were, and they are not shown as added again (``before``: the
        channel as the step began)."""
        found: list[Message] = []
        for write in writes:
            if write.channel != MESSAGES:
                continue
            value, stored = _shown(write, memo)
            likes = message_likes(value) if value is not stored else []
            if before is None or sum(_id_of(like) is not None for like in likes) < 2:
                found.extend(self._written(write, memo, texts))
                continue
            had = before()
            for like in likes:
                mid = _id_of(like)
                if mid is None or had.get(mid, _UNREAD) != like:
                    found.extend(written_messages([like], texts))
        return tuple(found)

    def _written(self, write: _Write, memo: dict[Any, Any], texts: _TextRole) -> list[Message]:
        """The messages a write to the ``messages`` channel stands for (LangChain's
        message-likes read as messages: ``written_messages``)."""
        value, stored = _shown(write, memo)
        if value is stored:  # left as stored: another serde's, or damaged
            return [undecodable(stored)]
        return written_messages(value, texts)

    def _edited(
        self,
        db: rewinddb.Database,
        record: _Record,
        parent: _Record | None,
        memo: dict[Any, Any],
    ) -> tuple[Message, ...]:
        """The messages an ``update_state`` added or changed: the ``messages`` channel's
        items that differ from the parent's, the lists aligned (``_item_pairs``: a
        removed message changes no other), compared as stored, decoded when shown."""
        key = _names.channel_key(MESSAGES)
        now = _items(_kept_get(db.at(record.branch), key, record.version))
        if now is None:
            return ()
        earlier = None
        if parent is not None:
            earlier = _items(_kept_get(db.at(parent.branch), key, parent.version, record.version))
        before = earlier if earlier is not None else _Items([], now.plain)
        pairs = _stored_item_pairs(before.stored, now.stored, before.plain, now.plain, memo)
        changed = [now.stored[index] for _, index in pairs if index is not None]
        return tuple(message(*now.decoded(stored, memo)) for stored in changed)

    def _changed_channels(self, record: _Record, parent: _Record | None) -> tuple[str, ...]:
        """Channels whose version an update moved (from the decoded checkpoints)."""
        mine = _channel_versions(record)
        theirs = _channel_versions(parent) if parent is not None else {}
        return tuple(
            channel
            for channel, version in mine.items()
            if theirs.get(channel) != version and not _bookkeeping(channel)
        )

    def _asked(
        self,
        ran: Sequence[_Write],
        asked_at: int | None,
        own: Sequence[_Write],
        version: int,
        memo: dict[Any, Any],
    ) -> tuple[Interrupt, ...]:
        """The interrupts a step shows: those answered by the tasks that made it (the
        node that asked ran again once resumed, and this step is what it did; each keeps
        the version of the checkpoint it was raised at, ``asked_at``), and those still
        waiting at it (no step after it yet)."""
        answered = [i for i in self._interrupts(ran, asked_at, memo) if i.resumed]
        waiting = [i for i in self._interrupts(own, version, memo) if not i.resumed]
        return (*answered, *waiting)

    def _interrupts(
        self, own: Sequence[_Write], version: int | None, memo: dict[Any, Any]
    ) -> list[Interrupt]:
        """The interrupts among a checkpoint's writes, each with the answer it got: the
        asking task's own ``__resume__`` write (its answers in order), else the null
        task's (``Command(resume=...)``: one value, or a map by interrupt id)."""
        by_task: dict[str, list[Any]] = {}
        answers: list[Any] = []
        for write in own:
            if write.channel == RESUME:
                value, decoded = _decoded(write, memo)
                if write.node is None:
                    answers.append(value)
                else:
                    many = decoded and isinstance(value, list)
                    by_task.setdefault(write.task, []).extend(value if many else [value])
        found = []
        for write in own:
            if write.channel != INTERRUPT:
                continue
            value, decoded = _decoded(write, memo)
            items = value if decoded and isinstance(value, list) else [value]
            for index, item in enumerate(items):
                question, interrupt_id = item, None
                if isinstance(item, dict) and str(item.get("__class__", "")).endswith("Interrupt"):
                    question, interrupt_id = item.get("value"), item.get("id")
                resumed, resume = _answer(by_task.get(write.task, []), index, answers, interrupt_id)
                text = question_text(question) if decoded else "undecodable"
                found.append(Interrupt(question, write.node, resume, resumed, version, text=text))
        return found

    def fingerprint(self, db: rewinddb.Database, step: Step) -> str:
        """What a step did, equal across attempts that did the same: how it came to be,
        the nodes that ran, the channels they wrote, the messages they added (by role,
        text and calls; ids differ between runs) and the interrupts."""
        did = [
            step.source,
            step.label,
            list(step.writes),
            [
                [m.role, m.text, m.name, [[c.name, c.arguments] for c in m.tool_calls]]
                for m in step.messages
            ],
            [[i.question, i.resume, i.resumed] for i in step.interrupts],
        ]
        return hashlib.sha256(as_text(did).encode()).hexdigest()

    # -- state -------------------------------------------------------------------

    def transcript(
        self,
        db: rewinddb.Database,
        branch: str,
        *,
        as_of: int | None = None,
        before: int | None = None,
        limit: int = STEPS_PAGE,
    ) -> Transcript | None:
        """The ``messages`` channel as of ``as_of``: the newest ``limit`` messages before
        position ``before``, calls paired with their results, and the thread's interrupts.
        None when the branch holds no ``messages`` channel."""
        if branch == _names.INDEX_BRANCH or _names.parse_branch(branch) is None:
            return super().transcript(db, branch, as_of=as_of, before=before, limit=limit)
        _check_count(limit, "limit", minimum=1)
        for value, what in ((as_of, "as_of"), (before, "before")):
            if value is not None:
                _check_count(value, what)
        key = _names.channel_key(MESSAGES)
        with db.read():
            reader = self._reader(db, branch, as_of)
            view = db.at(reader)
            items = _items(view.kv.get(key, as_of=as_of))
            if items is None:
                if not db.at(branch).kv.keys(key):
                    return None
                items = _Items([], False)
            total = len(items.stored)
            end = total if before is None else min(before, total)
            start = max(end - limit, 0)
            memo: dict[Any, Any] = {}
            shown = [items.decoded(stored, memo) for stored in items.stored[start:end]]
            steps = self._message_steps(db, view, as_of, [value for value, _ in shown], memo)
            page = [
                message(value, stored, steps.get(_id_of(value) or "")) for value, stored in shown
            ]
            results: dict[str | None, str] = {
                m.tool_call_id: m.text for m in page if m.tool_call_id
            }
            wanted = {c.id for m in page for c in m.tool_calls if c.id and c.id not in results}
            for stored in items.stored[end : end + _RESULTS_AHEAD] if wanted else ():
                later = message(*items.decoded(stored, memo))
                if later.tool_call_id in wanted:
                    results[later.tool_call_id] = later.text
            texts = _TextRole(view, as_of, memo)
            interrupts, failures = self._thread_writes(db, view, branch, as_of, memo, texts)
            page = [_with_results(m, results) for m in page]
            page = [_failed_calls(m, failures) for m in page]
        return Transcript(tuple(page), start, total, tuple(interrupts))

    def _reader(self, db: rewinddb.Database, branch: str, version: int | None) -> str:
        """The branch of ``branch``'s lineage that can be read as of ``version`` (an
        ancestor, for a version from before ``branch`` was forked)."""
        if version is None:
            return branch
        record = db.branches.get(branch)
        while version < record.forked_at and record.parent is not None:
            record = db.branches.get(record.parent)
        return record.name

    def _message_steps(
        self,
        db: rewinddb.Database,
        view: rewinddb.BranchView,
        as_of: int | None,
        decoded: list[Any],
        memo: dict[Any, Any],
    ) -> dict[str, int]:
        """The step that added each message (by id), from the newest writes: read back
        from ``as_of`` for a few events per message, so older pages may get none. A
        write may hold a message before ``add_messages`` gave it its id (LangGraph saves
        writes in the background while the reducer sets ids on the same objects): such
        a message is known by everything but its id. So is one whose id is another's: a
        task that ran again from a checkpoint (a fork's ``Command(resume=...)``, a
        replay) made its messages anew, with new ids, but the saver keeps the writes the
        task made there first (``put_writes`` keeps a task's first write of each index),
        and those hold the first run's ids or none, as the background save happened to
        see them; a message found so is only the one not found by its id yet (the
        newest write holding it, its step the child of that write's checkpoint on this
        branch's line, whichever timing). A message-like that has no id (a
        ``("user", "...")`` tuple, a string, a dict: ``add_messages`` made the message
        and its id) is known by its role and text."""
        wanted = {mid: value for value in decoded if (mid := _id_of(value)) is not None}
        if not wanted:
            return {}
        unnamed = {_without_id(value): mid for mid, value in wanted.items()}
        by_text: dict[tuple[str, str], list[str]] = {}
        for mid, value in wanted.items():
            shown = message(value)
            by_text.setdefault((shown.role, shown.text), []).append(mid)
        # The writes that hold each message as it is now, newest first: the oldest made
        # it (a subgraph, or a node that returns the whole list, writes again what was
        # there before it ran); a write that held it otherwise ends the search for it.
        found: dict[str, list[_Write]] = {}
        edited: set[str] = set()
        settled: set[str] = set()
        doubtful: set[str] = set()  # found in a write that held other messages too

        def like(written: Any) -> str | None:
            """The wanted message an id-less message-like stands for: the newest of
            those with its role and text not found yet, else the newest still open."""
            (shown,) = written_messages(written, "human")
            candidates = by_text.get((shown.role, shown.text), [])
            for mid in reversed(candidates):
                if mid not in found:
                    return mid
            for mid in reversed(candidates):
                if mid not in settled:
                    return mid
            return None

        def consider(write: _Write | None, inherited: set[str] | None = None) -> None:
            if write is None or write.channel != MESSAGES:
                return
            if inherited is not None and write.checkpoint not in inherited:
                return
            value, _ = _shown(write, memo)
            likes = message_likes(value)
            for written in likes:
                mid = _id_of(written)
                if mid not in wanted and isinstance(written, dict):
                    other = unnamed.get(_without_id(written))
                    if other is not None and (mid is None or other not in found):
                        mid, written = other, {**written, "id": other}
                if mid is None:
                    mid = like(written)
                    if mid is not None:  # as the channel holds it (it has no other form)
                        written = wanted[mid]
                if mid not in wanted or mid in settled:
                    continue
                if mid not in found:
                    found[mid] = [write]
                    if written != wanted[mid]:  # changed since it was written
                        edited.add(mid)
                        settled.add(mid)
                elif written == wanted[mid]:
                    found[mid].append(write)
                else:  # the newer write changed it: that one made it as it is
                    settled.add(mid)
                if len(likes) > 1 and mid not in settled:
                    doubtful.add(mid)
                else:
                    doubtful.discard(mid)

        end = view.events.length(as_of=as_of)
        budget = read = 4 * len(wanted) + _CHUNK
        # Once each is found, one chunk more, for what a write held again (its origin
        # is most often just before: the input of the subgraph that wrote it again).
        again = _CHUNK
        while end > 0 and budget > 0 and again > 0:
            if len(found) == len(wanted) and not doubtful:
                break
            complete = len(found) == len(wanted)
            start = max(end - _CHUNK, 0)
            after = start - 1 if start else None
            items = view.events.list(as_of=as_of, after=after, limit=end - start)
            for item in reversed(items):
                consider(_write(item.event, db))
            budget -= end - start
            if complete:
                again -= end - start
            end = start
        # The checkpoints the writes made are among as many as were read. (A write is
        # saved in the background, maybe after the next checkpoint: its checkpoint's
        # child is the step it made, whatever version the write itself has.)
        entries = view.kv.history(_names.CHECKPOINT_KEY, as_of=as_of, limit=read - budget + _CHUNK)
        records = [record for entry in entries if (record := _record(entry)) is not None]
        if len(found) < len(wanted) or doubtful:
            # A fork's parent may have saved a write of an inherited checkpoint after the
            # fork point (in the background): it is the fork's history too.
            info = view.info()
            if info.parent is not None and db.branches.exists(info.parent):
                inherited = {r.id for r in records if r.id and r.version <= info.forked_at}
                parent = db.at(info.parent)
                start = parent.events.length(as_of=info.forked_at)
                later = parent.events.list(after=start - 1 if start else None, limit=read)
                for item in reversed(later):
                    consider(_write(item.event, db), inherited)
        if not found:
            return {}
        made_by = {record.parent: index for index, record in enumerate(records) if record.parent}
        steps: dict[str, int] = {}
        for mid, writes in found.items():
            known = [
                made for write in writes if (made := made_by.get(write.checkpoint)) is not None
            ]
            if not known:
                continue
            made = min(known, key=lambda index: records[index].version)
            if mid not in edited:
                steps[mid] = records[made].version
                continue
            for record in records[made:]:  # changed since it was written: by an update
                if record.source == "update":
                    steps[mid] = record.version
                    break
        return steps

    def _thread_writes(
        self,
        db: rewinddb.Database,
        view: rewinddb.BranchView,
        branch: str,
        as_of: int | None,
        memo: dict[Any, Any],
        texts: _TextRole,
    ) -> tuple[list[Interrupt], dict[int, _Failure]]:
        """Every interrupt of the branch's history as of ``as_of``, with its answer, and
        the checkpoints (by version) a task failed at and did not run again from, with
        the error and the calls the tasks that succeeded there answered."""
        items = view.events.list(as_of=as_of, event_type=_names.WRITE_EVENT, search='"channel":"__')
        seen = {(item.event.branch, item.event.sequence) for item in items}
        for item in self._inherited_writes(db, branch, as_of):
            if (item.event.branch, item.event.sequence) not in seen:
                items.append(item)
        grouped: dict[str, list[_Write]] = {}
        for item in items:
            write = _write(item.event, db)
            if write is not None and write.channel in (INTERRUPT, RESUME, ERROR):
                grouped.setdefault(write.checkpoint, []).append(write)
        parsed = _names.parse_branch(branch)
        index = db.at(_names.INDEX_BRANCH) if db.branches.exists(_names.INDEX_BRANCH) else None
        found: list[Interrupt] = []
        failures: dict[int, _Failure] = {}
        for checkpoint_id, writes in grouped.items():
            version = None
            if index is not None and parsed is not None:
                entry = index.kv.get(_names.checkpoint_key(parsed[0], parsed[1], checkpoint_id))
                if isinstance(entry, dict) and type(entry.get("version")) is int:
                    version = entry["version"]
                    holder = entry.get("branch")
                    if isinstance(holder, str):
                        writes = _sent_nodes(db, holder, version, writes, memo)
            found.extend(self._interrupts(writes, version, memo))
            again = {write.task for write in _retried(writes)}
            stuck = [w for w in _raised(writes, memo) if w.task not in again]
            if stuck and version is not None:
                answered = self._answered(db, checkpoint_id, stuck, as_of, memo, texts)
                errors = {call: _error_text(write, memo) for write in stuck for call in write.calls}
                failures[version] = _Failure(_error_text(stuck[0], memo), answered, errors)
        return found, failures

    def _answered(
        self,
        db: rewinddb.Database,
        checkpoint_id: str,
        stuck: Sequence[_Write],
        as_of: int | None,
        memo: dict[Any, Any],
        texts: _TextRole,
    ) -> dict[str | None, str]:
        """The results (by call id) of the tool calls that the tasks which did not fail
        at a checkpoint answered in its pending writes (``stuck``: its errors; the
        messages channel never got them, as that step never completed)."""
        failing = {write.task for write in stuck}
        items = db.at(stuck[0].branch).events.list(
            as_of=as_of,
            event_type=_names.WRITE_EVENT,
            search=f'"checkpoint_id":"{checkpoint_id}"',
        )
        writes = [
            write
            for item in items
            if (write := _write(item.event, db)) is not None
            and write.checkpoint == checkpoint_id
            and write.task not in failing
        ]
        return _answers(self._messages(writes, memo, texts))

    def _inherited_writes(
        self, db: rewinddb.Database, branch: str, as_of: int | None
    ) -> list[EventItem]:
        """The pending writes of the checkpoint a fork's first own step was made from
        (inherited: ``Command(resume=...)`` or new input on a past checkpoint) that the
        branch holding it saved after the fork point, so the fork's history cannot read
        them: they made the fork's step. Up the forks' lineage; none for a fork whose
        first step no task made (an edit, a copy)."""
        if not db.branches.exists(_names.INDEX_BRANCH):
            return []
        index = db.at(_names.INDEX_BRANCH)
        found: list[EventItem] = []
        record = db.branches.get(branch)
        for _ in range(_MAX_LINEAGE):
            parent = record.parent
            parsed = _names.parse_branch(record.name)
            if parent is None or parsed is None or _names.parse_branch(parent) is None:
                break  # a thread begun on ``default``: no fork
            if not db.branches.exists(parent):
                break
            first = self._first_own(db, record)
            if first is not None and first.source not in _NOT_RUN and first.parent is not None:
                key = _names.checkpoint_key(parsed[0], parsed[1], first.parent)
                entry = index.kv.get(key)
                holder = entry.get("branch") if isinstance(entry, dict) else None
                version = entry.get("version") if isinstance(entry, dict) else None
                if (
                    isinstance(holder, str)
                    and type(version) is int
                    and version <= record.forked_at
                    and db.branches.exists(holder)
                ):
                    found += db.at(holder).events.list(
                        as_of=as_of,
                        event_type=_names.WRITE_EVENT,
                        search=f'"checkpoint_id":"{first.parent}"',
                    )
            record = db.branches.get(parent)
        return found

    def state(self, db: rewinddb.Database, step: Step) -> dict[str, Any]:
        """Channel name -> value as of ``step``, decoded; LangGraph's routing, input and
        task channels and the checkpoint record left out (the step shows them)."""
        if _names.parse_branch(step.branch) is None:
            return super().state(db, step)
        stored = db.at(step.branch).kv.items(as_of=step.version)
        memo: dict[Any, Any] = {}
        state: dict[str, Any] = {}
        for key, value in stored.items():
            if key == _names.CHECKPOINT_KEY or key.startswith(_names.WRITE_PREFIX):
                continue
            if key.startswith(_names.CHANNEL_PREFIX):
                channel = key[len(_names.CHANNEL_PREFIX) :]
                if not _bookkeeping(channel):
                    state[channel] = _channel_value(value, memo)
            else:
                state[key] = readable(value, memo=memo)
        return state

    def hidden(self, change: Change) -> bool:
        """The saver's bookkeeping: the checkpoint record (ids, timestamps, channel
        versions, what each node has seen, LangGraph's metadata; the user's own metadata
        stays), routing and task channels, the version of every channel value, and the
        pending writes (each step shows its own)."""
        if change.primitive == "events":
            body = change.new if change.new is not None else change.old
            return isinstance(body, dict) and body.get("event_type") == _names.WRITE_EVENT
        if change.primitive == "kv" and change.key == _names.CHECKPOINT_KEY:
            found = _METADATA_PATH.match(change.path)
            if found is None:
                return True
            name = found.group(1) or found.group(2)
            return name in _INTERNAL_METADATA or name.startswith(("langgraph_", "__"))
        return hidden_by_patterns(change, _HIDDEN_KEYS)

    # -- diffs as people read them -----------------------------------------------

    def diff_rows(
        self, db: rewinddb.Database, a: Point, b: Point, changes: Sequence[Change]
    ) -> list[DiffRow]:
        """A diff of a thread's branch in LangGraph's words: each channel's value as
        LangGraph shows it (decoded), compared member by member and item by item
        (``notes["tokyo"]``, ``messages[2]``; a first write is the value, not the
        stored wrapper). Each row keeps the stored change it was read from; stored
        changes no row tells (a channel's version, its stored form) stay rows of their
        own, hidden."""
        if _names.parse_branch(b.branch) is None:
            return super().diff_rows(db, a, b, changes)
        memo: dict[Any, Any] = {}
        rows: list[DiffRow] = []
        for (primitive, key), group in _by_key(changes).items():
            if primitive == "kv" and self._told_as_channel(key, group):
                try:
                    old = db.at(a.branch).kv.get(key, default=ABSENT, as_of=a.version)
                    new = db.at(b.branch).kv.get(key, default=ABSENT, as_of=b.version)
                except rewinddb.RewindError:  # a point no longer readable: as stored
                    rows += super().value_rows(primitive, key, ABSENT, ABSENT, group)
                    continue
                rows += _channel_rows(key, old, new, group, memo, split=True)
            else:
                rows += super().value_rows(primitive, key, ABSENT, ABSENT, group)
        return rows

    def value_rows(
        self, primitive: str, key: str, old: Any, new: Any, changes: Sequence[Change]
    ) -> list[DiffRow]:
        """A channel's version (a key page's) as LangGraph shows it, as ``diff_rows``."""
        if primitive == "kv" and self._told_as_channel(key, changes):
            return _channel_rows(key, old, new, changes, {})
        return super().value_rows(primitive, key, old, new, changes)

    def _told_as_channel(self, key: str, changes: Sequence[Change]) -> bool:
        """Whether ``key`` is a state channel (not LangGraph's routing or tasks) with a
        change people read (not only its version)."""
        if not key.startswith(_names.CHANNEL_PREFIX):
            return False
        if _bookkeeping(key[len(_names.CHANNEL_PREFIX) :]):
            return False
        return any(not self.hidden(change) for change in changes)

    def wrote(self, db: rewinddb.Database, step: Step) -> tuple[Wrote, ...]:
        """The pending writes of the tasks that made ``step`` (its parent checkpoint's
        writes: what ran from it) to the state's channels, each as "node agent wrote
        channel messages" with the value, decoded. None for a step no task made (the
        input, an update, a copy) and for LangGraph's own channels (routing, tasks)."""
        if _names.parse_branch(step.branch) is None or step.source in _NOT_RUN:
            return super().wrote(db, step)
        view = db.at(step.branch)
        with db.read():
            found = view.key_history("kv", _names.CHECKPOINT_KEY, limit=2, before=step.version + 1)
            records = [record for item in found if (record := _record(item.entry)) is not None]
            parent = records[-2] if len(records) > 1 else None
            if parent is None or parent.id is None or records[-1].version != step.version:
                return ()
            if not _is_parent(parent, records[-1]):
                return ()
            ran = self._writes(db, parent, [records[-1]]).get(parent.id, [])
            memo: dict[Any, Any] = {}
            told = []
            for write in ran:
                if write.node is None or _bookkeeping(write.channel):
                    continue
                value, _ = _shown(write, memo)
                who = "the input" if write.node == START else f"node {write.node}"
                told.append(
                    Wrote(
                        f"{who} wrote channel {write.channel}",
                        value,
                        write.sequence,
                        write.branch,
                        write.node,
                        write.channel,
                    )
                )
        return tuple(told)

    def key_title(self, db: rewinddb.Database, branch: str, primitive: str, key: str) -> str | None:
        """A state channel's history is "channel notes of thread t" (of a subgraph: "of
        subgraph t / ns")."""
        parsed = _names.parse_branch(branch)
        if parsed is None or primitive != "kv" or not key.startswith(_names.CHANNEL_PREFIX):
            return None
        channel = key[len(_names.CHANNEL_PREFIX) :]
        if _bookkeeping(channel):
            return None
        kind = "subgraph" if parsed[1] else "thread"
        return f"channel {channel} of {kind} {self._title(branch, db)}"

    def key_label(self, primitive: str, key: str) -> str:
        if primitive == "kv" and key.startswith(_names.CHANNEL_PREFIX):
            return key[len(_names.CHANNEL_PREFIX) :]
        if primitive == "kv" and key == _names.CHECKPOINT_KEY:
            return "checkpoint record"
        if primitive == "kv" and key.startswith(_names.WRITE_PREFIX):
            return "pending write to " + key.split("/", 2)[-1]
        return key


def _by_key(changes: Iterable[Change]) -> dict[tuple[str, str], list[Change]]:
    """``changes`` by (space, key), in the order the keys first come."""
    grouped: dict[tuple[str, str], list[Change]] = {}
    for change in changes:
        grouped.setdefault((change.primitive, change.key), []).append(change)
    return grouped


class _Part(NamedTuple):
    """One change of a channel's value as LangGraph shows it: ``change`` (where in the
    value, the decoded old and new), where it is in the stored form (``stored``), and
    the stored part that holds it (``anchor``: an item, a pair, the value)."""

    change: ValueChange
    stored: tuple[Any, ...]
    anchor: tuple[Any, ...]


def _shape(blob: Any) -> str | None:
    """How the saver's codec stored a channel value (``list``, ``dict``, ``value``);
    None when absent or not a form it writes."""
    if not isinstance(blob, dict):
        return None
    kind = blob.get("type")
    if kind == "list" and isinstance(blob.get("items"), list):
        return "list"
    if kind == "dict" and isinstance(blob.get("pairs"), list):
        return "dict"
    if kind == "value" and "value" in blob:
        return "value"
    return None


def _holds_parts(blob: Any) -> bool:
    """A stored list or dict channel value with at least one item or member."""
    shape = _shape(blob)
    return shape is not None and shape != "value" and len(blob[_PARTS[shape]]) > 0


_PARTS = {"list": "items", "dict": "pairs"}


def _emptied(blob: dict[str, Any]) -> dict[str, Any]:
    """A stored list or dict channel value of ``blob``'s form with nothing in it."""
    return {**blob, _PARTS[blob["type"]]: []}


def _member(stored: Any, plain: bool, memo: dict[Any, Any]) -> Any:
    """A stored item, member or value decoded (as stored when the codec kept it plain)."""
    if stored is ABSENT or plain:
        return stored
    return readable(stored, memo=memo)


def _pairs(blob: dict[str, Any], start: int, end: int) -> dict[str, tuple[int, Any]]:
    """A stored dict's members by key among its pairs ``start`` to ``end``, with their
    place among the pairs."""
    found: dict[str, tuple[int, Any]] = {}
    pairs = blob["pairs"]
    for index in range(start, end):
        pair = pairs[index]
        if isinstance(pair, list) and len(pair) == 2:
            found.setdefault(str(pair[0]), (index, pair[1]))
    return found


def _same_ends(old: list[Any], new: list[Any]) -> tuple[int, int, int]:
    """(start, old end, new end): the stored items or pairs between are the ones that
    are not the same at both ends (``_same_stored``), so a dict that gained a member is
    compared at that member alone."""
    start, end_old, end_new = 0, len(old), len(new)
    while start < end_old and start < end_new and _same_stored(old[start], new[start]):
        start += 1
    while end_old > start and end_new > start and _same_stored(old[end_old - 1], new[end_new - 1]):
        end_old, end_new = end_old - 1, end_new - 1
    return start, end_old, end_new


def _channel_parts(old: Any, new: Any, memo: dict[Any, Any], *, split: bool = False) -> list[_Part]:
    """The changes from stored channel value ``old`` to ``new`` (either ``ABSENT``) as
    LangGraph shows them. Items, members and values whose stored forms are equal are
    skipped unread; the rest are decoded and compared structurally, so a list that grew
    by one message decodes that message alone. With ``split``, a list or dict channel
    that appears (or goes) with something in it is told item by item (member by member),
    as if it had been empty (a diff's rows); else, and when empty, whole (a value)."""
    if split and old is ABSENT and _holds_parts(new):
        old = _emptied(new)
    elif split and new is ABSENT and _holds_parts(old):
        new = _emptied(old)
    shape = _shape(old)
    if shape is None or shape != _shape(new):
        shown_old = ABSENT if old is ABSENT else _channel_value(old, memo)
        shown_new = ABSENT if new is ABSENT else _channel_value(new, memo)
        return [_Part(change, (), ()) for change in value_changes(shown_old, shown_new)]
    plain_old, plain_new = old.get("plain") is True, new.get("plain") is True
    parts: list[_Part] = []

    def compare(stored_old: Any, stored_new: Any, name: Any) -> list[ValueChange]:
        if (
            stored_old is not ABSENT
            and stored_new is not ABSENT
            and plain_old == plain_new
            and _same_stored(stored_old, stored_new)
        ):
            return []
        shown_old = _member(stored_old, plain_old, memo)
        shown_new = _member(stored_new, plain_new, memo)
        return value_changes(shown_old, shown_new, () if name is ABSENT else (name,))

    if shape == "list":
        items_old, items_new = old["items"], new["items"]
        for at_old, at_new in _stored_item_pairs(items_old, items_new, plain_old, plain_new, memo):
            before = ABSENT if at_old is None else items_old[at_old]
            after = ABSENT if at_new is None else items_new[at_new]
            index = at_old if at_new is None else at_new
            for change in compare(before, after, index):
                stored = ("items", index, *change.steps[1:])
                parts.append(_Part(change, stored, ("items", index)))
    elif shape == "dict":
        start, end_old, end_new = 0, len(old["pairs"]), len(new["pairs"])
        if plain_old == plain_new:
            start, end_old, end_new = _same_ends(old["pairs"], new["pairs"])
        pairs_old, pairs_new = _pairs(old, start, end_old), _pairs(new, start, end_new)
        for name in [*pairs_new, *(name for name in pairs_old if name not in pairs_new)]:
            at_old, before = pairs_old.get(name, (None, ABSENT))
            at_new, after = pairs_new.get(name, (None, ABSENT))
            place = at_new if at_new is not None else at_old
            for change in compare(before, after, name):
                anchor: tuple[Any, ...] = ("pairs", place)
                stored = anchor  # added, removed, or moved among the pairs
                if at_old == at_new:
                    stored = (*anchor, 1, *change.steps[1:])
                parts.append(_Part(change, stored, anchor))
    else:
        for change in _value_parts(old["value"], new["value"], plain_old, plain_new, memo):
            parts.append(_Part(change, ("value", *change.steps), ("value",)))
    return parts


def _value_parts(
    stored_old: Any, stored_new: Any, plain_old: bool, plain_new: bool, memo: dict[Any, Any]
) -> list[ValueChange]:
    """The changes of a channel stored as one value; a list (a serde that stores it
    whole) is compared item by item as aligned (``_item_pairs``)."""
    if plain_old == plain_new and _same_stored(stored_old, stored_new):
        return []
    shown_old = _member(stored_old, plain_old, memo)
    shown_new = _member(stored_new, plain_new, memo)
    if type(shown_old) is not list or type(shown_new) is not list:
        return value_changes(shown_old, shown_new)
    keys_old, keys_new = [_item_key(item) for item in shown_old], [_item_key(i) for i in shown_new]
    found: list[ValueChange] = []
    for at_old, at_new in _item_pairs(keys_old, keys_new, shown_old, shown_new):
        before = ABSENT if at_old is None else shown_old[at_old]
        after = ABSENT if at_new is None else shown_new[at_new]
        at = at_old if at_new is None else at_new
        assert at is not None  # (a pair names an item on one side at least)
        found += value_changes(before, after, (at,))
    return found


def _same_stored(stored_old: Any, stored_new: Any) -> bool:
    """Whether two stored items are the same (``1`` is not ``1.0`` nor ``True``)."""
    return stored_old == stored_new and (
        type(stored_old) is str or as_text(stored_old) == as_text(stored_new)
    )


def _item_key(item: Any) -> Any:
    """A stored or decoded item as a key that is equal exactly when the items are."""
    return item if type(item) is str else (as_text(item),)


def _stored_item_pairs(
    items_old: list[Any],
    items_new: list[Any],
    plain_old: bool,
    plain_new: bool,
    memo: dict[Any, Any],
) -> list[tuple[int | None, int | None]]:
    """``_item_pairs`` of two stored lists: compared as stored (decoded only where they
    differ, for the ids), or decoded when one is stored plain and the other not."""
    if not plain_old and not plain_new and items_new[: len(items_old)] == items_old:
        # A list that only grew (its items: encoded strings, compared in one pass in C).
        return [(None, index) for index in range(len(items_old), len(items_new))]
    if plain_old == plain_new:
        keys_old, keys_new = [_item_key(i) for i in items_old], [_item_key(i) for i in items_new]
    else:
        keys_old = [_item_key(_member(item, plain_old, memo)) for item in items_old]
        keys_new = [_item_key(_member(item, plain_new, memo)) for item in items_new]
    return _item_pairs(
        keys_old,
        keys_new,
        _Lazy(items_old, plain_old, memo),
        _Lazy(items_new, plain_new, memo),
    )


class _Lazy:
    """Stored items, each decoded when it is first read (``_item_pairs`` reads only the
    ones that differ)."""

    def __init__(self, stored: list[Any], plain: bool, memo: dict[Any, Any]) -> None:
        self.stored, self.plain, self.memo = stored, plain, memo

    def __getitem__(self, index: int) -> Any:
        return _member(self.stored[index], self.plain, self.memo)


#: The work the matchers of one alignment may take, as ``SequenceMatcher``'s worst case
#: counted beforehand: for each run it compares, the pairs of equal items times the
#: shorter side (each pass over the run reads each pair once, and a run reordered
#: throughout takes a pass per matching block). Past it, the runs left are compared by
#: their place.
_ALIGN_BUDGET = 2_000_000
#: A differing run longer than this is first cut at its anchors (``_anchored``).
_ANCHOR_PAST = 1_000


def _item_pairs(
    keys_old: Sequence[Any], keys_new: Sequence[Any], shown_old: Any, shown_new: Any
) -> list[tuple[int | None, int | None]]:
    """Which items of an old list became which of a new one, for the items that differ
    (``keys``: equal exactly when the items are; ``shown``: the items decoded, read only
    where they differ): ``(old index, new index)`` for a changed item, ``(i, None)`` for
    one removed, ``(None, j)`` for one added. The lists are aligned on their equal items
    (a longest matching, after the common start and end), so a removed or inserted
    message is one item, not every item after it; among the items that differ between
    two equal runs, messages with the same id are one changed item, the others are
    paired by place when neither has an id."""
    start, end_old, end_new = 0, len(keys_old), len(keys_new)
    while start < end_old and start < end_new and keys_old[start] == keys_new[start]:
        start += 1
    while end_old > start and end_new > start and keys_old[end_old - 1] == keys_new[end_new - 1]:
        end_old, end_new = end_old - 1, end_new - 1
    if start in (end_old, end_new):
        blocks = [(start, end_old, start, end_new)]
    else:
        blocks = _differing_runs(keys_old, keys_new, start, end_old, end_new)
    pairs: list[tuple[int | None, int | None]] = []
    for old_from, old_to, new_from, new_to in blocks:
        pairs += _run_pairs(range(old_from, old_to), range(new_from, new_to), shown_old, shown_new)
    return pairs


def _differing_runs(
    keys_old: Sequence[Any], keys_new: Sequence[Any], start: int, end_old: int, end_new: int
) -> list[tuple[int, int, int, int]]:
    """The runs ``(old from, old to, new from, new to)`` of items that differ between
    ``keys_old[start:end_old]`` and ``keys_new[start:end_new]``: cut at their anchors
    when long, each piece as ``SequenceMatcher`` aligns it while the work stays within
    ``_ALIGN_BUDGET`` (past it, a piece is one run, compared by place)."""
    runs: list[tuple[int, int, int, int]] = []
    work = 0
    for old_from, old_to, new_from, new_to in _anchored(
        keys_old, keys_new, (start, end_old, start, end_new)
    ):
        middle_old, middle_new = keys_old[old_from:old_to], keys_new[new_from:new_to]
        counts = Counter(middle_new)
        matches = sum(counts.get(key, 0) for key in middle_old)
        cost = matches * min(len(middle_old), len(middle_new))
        if not matches or work + cost > _ALIGN_BUDGET:
            runs.append((old_from, old_to, new_from, new_to))
            continue
        work += cost
        matcher = SequenceMatcher(None, middle_old, middle_new, autojunk=False)
        runs += [
            (old_from + i1, old_from + i2, new_from + j1, new_from + j2)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
            if tag != "equal"
        ]
    return runs


def _anchored(
    keys_old: Sequence[Any], keys_new: Sequence[Any], run: tuple[int, int, int, int]
) -> list[tuple[int, int, int, int]]:
    """A long run cut into the pieces between its anchors (as patience diff does): the
    items found once on each side, the longest chain of them in the same order on both.
    A run of at most ``_ANCHOR_PAST`` items a side is left whole."""
    old_from, old_to, new_from, new_to = run
    if max(old_to - old_from, new_to - new_from) <= _ANCHOR_PAST:
        return [run]
    once_old = Counter(keys_old[old_from:old_to])
    once_new = Counter(keys_new[new_from:new_to])
    where_new = {keys_new[j]: j for j in range(new_from, new_to) if once_new[keys_new[j]] == 1}
    unique = [
        (i, where_new[key])
        for i in range(old_from, old_to)
        if once_old[key := keys_old[i]] == 1 and key in where_new
    ]
    pieces = []
    i, j = old_from, new_from
    for anchor_old, anchor_new in _longest_chain(unique):
        if (i, j) != (anchor_old, anchor_new):
            pieces.append((i, anchor_old, j, anchor_new))
        i, j = anchor_old + 1, anchor_new + 1
    if (i, j) != (old_to, new_to):
        pieces.append((i, old_to, j, new_to))
    return pieces


def _longest_chain(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (in order of their first) whose seconds increase
    too (patience sorting, ``O(n log n)``)."""
    tails: list[int] = []  # tails[k]: the index in pairs ending the best chain of k + 1
    ends: list[int] = []  # ends[k]: that pair's second
    before: list[int] = []  # before[n]: the pair ahead of pairs[n] in its chain (-1: none)
    for n, (_, second) in enumerate(pairs):
        k = bisect_left(ends, second)
        before.append(tails[k - 1] if k else -1)
        if k == len(tails):
            tails.append(n)
            ends.append(second)
        else:
            tails[k], ends[k] = n, second
    chain: list[tuple[int, int]] = []
    n = tails[-1] if tails else -1
    while n >= 0:
        chain.append(pairs[n])
        n = before[n]
    return chain[::-1]


def _run_pairs(
    olds: range, news: range, shown_old: Any, shown_new: Any
) -> list[tuple[int | None, int | None]]:
    """The pairs of one run of differing items (see ``_item_pairs``), as a unified diff
    orders a hunk: the old items no new item took (removed), then the new items in their
    order (changed or added)."""
    if not olds or not news:
        return [(i, None) for i in olds] + [(None, j) for j in news]
    ids_old = {i: _id_of(shown_old[i]) for i in olds}
    ids_new = {j: _id_of(shown_new[j]) for j in news}
    by_id = {mid: i for i, mid in reversed(ids_old.items()) if mid is not None}
    unnamed = iter([i for i in olds if ids_old[i] is None])
    taken: set[int] = set()
    pairs: list[tuple[int | None, int | None]] = []
    for j in news:
        mid = ids_new[j]
        i = by_id.pop(mid, None) if mid is not None else next(unnamed, None)
        if i is not None:
            taken.add(i)
        pairs.append((i, j))
    return [(i, None) for i in olds if i not in taken] + pairs


def _stored_part(blob: Any, tokens: tuple[Any, ...]) -> Any:
    """The part of a stored value at ``tokens`` (``ABSENT`` where there is none)."""
    for token in tokens:
        if isinstance(token, int):
            if not isinstance(blob, list) or token >= len(blob):
                return ABSENT
        elif not isinstance(blob, dict) or token not in blob:
            return ABSENT
        blob = blob[token]
    return blob


def _channel_rows(
    key: str,
    old: Any,
    new: Any,
    changes: Sequence[Change],
    memo: dict[Any, Any],
    *,
    split: bool = False,
) -> list[DiffRow]:
    """A channel's rows (see ``LangGraphPresenter.diff_rows``; ``split``: as a diff tells
    a channel that appears or goes): each of ``_channel_parts``
    with the stored change at its place in the stored form (else the nearest one that
    holds it, else a change of the stored part that holds it), then the stored changes
    no row tells, hidden."""
    channel = key[len(_names.CHANNEL_PREFIX) :]
    by_path = {change.path: change for change in changes}
    told: set[str] = set()
    rows: list[DiffRow] = []
    for part in _channel_parts(old, new, memo, split=split):
        behind = None
        for length in range(len(part.stored), -1, -1):
            path = jsonpath.format_path(part.stored[:length])
            if path in by_path:
                behind = by_path[path]
                told.add(path)
                break
        if behind is None:
            behind = _anchor_change(key, old, new, part.anchor, memo)
        shown = part.change
        rows.append(
            DiffRow(
                behind,
                channel,
                False,
                shaped_path(channel, shown.steps),
                shown.kind,
                shown.old,
                shown.new,
            )
        )
    for change in changes:
        if change.path not in told:
            rows.append(DiffRow.of(change, channel, True))
    return rows


def _anchor_change(
    key: str, old: Any, new: Any, anchor: tuple[Any, ...], memo: dict[Any, Any]
) -> Change:
    """The change of the stored part at ``anchor`` (a pair that moved among the pairs:
    the store's own diff of it is of its key and member apart)."""
    before, after = _stored_part(old, anchor), _stored_part(new, anchor)
    plain_old = isinstance(old, dict) and old.get("plain") is True
    plain_new = isinstance(new, dict) and new.get("plain") is True
    kind: Literal["added", "removed", "changed"] = (
        "added" if before is ABSENT else "removed" if after is ABSENT else "changed"
    )
    return rewinddb.Change(
        "kv",
        key,
        jsonpath.format_path(anchor),
        kind,
        None if before is ABSENT else _member(before, plain_old, memo),
        None if after is ABSENT else _member(after, plain_new, memo),
    )


def _check_count(value: Any, what: str, *, minimum: int = 0) -> None:
    if type(value) is not int or not minimum <= value < 2**63:
        raise rewinddb.InvalidInputError(
            f"{what} must be an int of at least {minimum}, not {value!r}", code=f"invalid.{what}"
        )


def _plain_blob(value: Any) -> bool:
    """A channel value the codec stored as itself (``"plain": true``)."""
    return type(value) is dict and value.get("plain") is True and "type" in value


def _checkpoint_record(value: Any) -> bool:
    """The saver's checkpoint record (``CHECKPOINT_KEY``): its id, parent, bookkeeping
    and metadata, the last two plain JSON or (older records) serde pairs, or (another
    serde's) sealed with the trigger channels' values as one output of that serde."""
    if type(value) is not dict or "id" not in value:
        return False
    return {"checkpoint", "metadata"} <= value.keys() or _names.SEALED in value


class _Items(NamedTuple):
    """The stored items of a list channel value."""

    stored: list[Any]
    plain: bool  # stored as themselves (``_codec``'s plain values): nothing to decode

    def decoded(self, stored: Any, memo: dict[Any, Any]) -> tuple[Any, Any]:
        """(the item decoded, what it was decoded from: None for a plain one), as
        ``message`` takes them."""
        return (stored, None) if self.plain else (readable(stored, memo=memo), stored)


def _items(blob: Any) -> _Items | None:
    """The stored items of a channel value (a list stored item by item, or one value
    holding a list); None when there is no such channel or it is not a list. A value
    that cannot be decoded (another serde's, which stores a list whole: how many items
    it holds is not known) is one item, which reads as undecodable."""
    if not isinstance(blob, dict):
        return None
    plain = blob.get("plain") is True
    if blob.get("type") == "list" and isinstance(blob.get("items"), list):
        return _Items(list(blob["items"]), plain)
    if blob.get("type") == "value":
        stored = blob.get("value")
        value = stored if plain else readable(stored)
        if isinstance(value, list):
            return _Items(value, True)
        if not plain and value is stored and isinstance(stored, str):
            return _Items([stored], False)
    return None


def _channel_value(blob: Any, memo: dict[Any, Any]) -> Any:
    """A channel's value as stored by the saver's codec, decoded (else as stored)."""
    kind = blob.get("type") if isinstance(blob, dict) else None
    # A plain value (``_codec``: texts, numbers) is stored as itself: nothing to decode.
    plain = isinstance(blob, dict) and blob.get("plain") is True
    shown = _as_stored if plain else readable
    if kind == "list" and isinstance(blob["items"], list):
        return [shown(item, memo=memo) for item in blob["items"]]
    if kind == "dict" and isinstance(blob.get("pairs"), list):
        return {
            str(pair[0]): shown(pair[1], memo=memo)
            for pair in blob["pairs"]
            if isinstance(pair, list) and len(pair) == 2
        }
    if kind == "value" and "value" in blob:
        return shown(blob["value"], memo=memo)
    return readable(blob, memo=memo)


def _as_stored(value: Any, memo: dict[Any, Any] | None = None) -> Any:
    return value


def _checkpoint(record: _Record) -> dict[str, Any]:
    """LangGraph's bookkeeping of a checkpoint (channel versions, versions seen), decoded."""
    stored = record.stored.get("checkpoint")
    checkpoint = readable(stored) if is_encoded(stored) else stored  # (older records)
    return checkpoint if isinstance(checkpoint, dict) else {}


def _channel_versions(record: _Record) -> dict[str, Any]:
    versions = _checkpoint(record).get("channel_versions")
    return versions if isinstance(versions, dict) else {}


def _recorded_nodes(record: _Record) -> tuple[str, ...]:
    """The nodes that ran to make a ``loop`` checkpoint, as its record alone tells them
    (for one whose parent retention removed, with the parent's pending writes): the
    ``writes`` metadata older LangGraph versions kept, else the nodes whose versions
    seen are the step before's. LangGraph gives every channel a step writes the next
    version after the checkpoint's newest, so the nodes that ran saw the newest but
    one. A step made by ``Send`` tasks alone (which see no versions), or by a deferred
    node that waited, names none: it stays ``loop``."""
    metadata = record.stored.get("metadata")
    writes = metadata.get("writes") if isinstance(metadata, dict) else None
    if isinstance(writes, dict) and writes:
        return tuple(node for node in writes if isinstance(node, str) and node)
    checkpoint = _checkpoint(record)
    newest = _version_number(checkpoint.get("channel_versions"))
    seen = checkpoint.get("versions_seen")
    if newest is None or newest < 1 or not isinstance(seen, dict):
        return ()
    return tuple(
        node
        for node, versions in seen.items()
        if isinstance(node, str)
        and (node == START or not node.startswith("__"))
        and _version_number(versions) == newest - 1
    )


def _version_number(versions: Any) -> int | None:
    """The newest of channel versions (``{channel: version}``) as a number (a version is
    a number, or digits with a ``.<random>`` suffix); None when there is none."""
    if not isinstance(versions, dict):
        return None
    numbers = []
    for version in versions.values():
        if type(version) is int:
            numbers.append(version)
        elif isinstance(version, str) and (digits := version.partition(".")[0]).isdigit():
            numbers.append(int(digits))
        elif type(version) is float and version.is_integer():
            numbers.append(int(version))
    return max(numbers) if numbers else None


def _unseen(channel: str, node: str, versions: Any, seen: Any) -> bool:
    """Whether ``node`` has not seen ``channel``'s version yet (LangGraph's test for a
    trigger; a version that cannot be compared counts as unseen: the work is left)."""
    version = versions.get(channel) if isinstance(versions, dict) else None
    by_node = seen.get(node) if isinstance(seen, dict) else None
    known = by_node.get(channel) if isinstance(by_node, dict) else None
    if version is None or known is None:
        return True
    try:
        return bool(version > known)
    except TypeError:
        return True


def _id_of(value: Any) -> str | None:
    found = value.get("id") if isinstance(value, dict) else None
    return found if isinstance(found, str) else None


def _with_results(
    found: Message, results: dict[str | None, str], *, missing_only: bool = False
) -> Message:
    """``found`` with its calls' results from ``results`` (by call id); with
    ``missing_only``, only calls that have none yet get one."""

    def gets(call: ToolCall) -> bool:
        return call.id in results and not (missing_only and call.result is not None)

    if not any(gets(call) for call in found.tool_calls):
        return found
    calls = tuple(
        replace(call, result=results[call.id]) if gets(call) else call for call in found.tool_calls
    )
    return replace(found, tool_calls=calls)


class _Failure(NamedTuple):
    """A task's error at a checkpoint it did not run again from, and the results (by
    call id) of the tool calls the tasks that succeeded there answered."""

    error: str
    answered: dict[str | None, str]
    errors: dict[str, str] = {}  # noqa: RUF012 (never changed)
    """A failed ``Send`` task's error by the id of the tool call its packet carried."""


def _answers(messages: Iterable[Message]) -> dict[str | None, str]:
    """The results among ``messages``, by the id of the call each answers."""
    return {m.tool_call_id: m.text for m in messages if m.tool_call_id}


def _failed_calls(found: Message, failures: dict[int, _Failure]) -> Message:
    """``found`` with its calls' results where a task failed at the step that added it
    (``failures``: by the step's version) and did not run again: those the other tasks
    answered there have that result, the calls no result answered the error."""
    failure = failures.get(found.step) if found.step is not None else None
    if failure is None or not found.tool_calls:
        return found
    found = _with_results(found, failure.answered, missing_only=True)
    failed = {
        call.id: f"failed: {failure.errors.get(call.id or '', failure.error)}"
        for call in found.tool_calls
    }
    return _with_results(found, failed, missing_only=True)


def _call_error(stuck: Sequence[_Write], call_id: str | None, memo: dict[Any, Any]) -> str:
    """The error of the failed task whose ``Send`` packet carried the tool call
    ``call_id``; else the first failed task's."""
    for write in stuck:
        if call_id is not None and call_id in write.calls:
            return _error_text(write, memo)
    return _error_text(stuck[0], memo)


def _raised(writes: Sequence[_Write], memo: dict[Any, Any]) -> list[_Write]:
    """The ``__error__`` writes among ``writes``, less an entrypoint's that only passes
    on the error of a ``@task`` it called (the same error, written by a task whose path
    it heads): the failure is told once, by the task that raised it."""
    errors = [write for write in writes if write.channel == ERROR]
    called = {(w.caller, _error_text(w, memo)) for w in errors if w.caller is not None}
    if not called:
        return errors
    return [
        write
        for write in errors
        if write.caller is not None or (write.node, _error_text(write, memo)) not in called
    ]


def _retried(writes: Sequence[_Write]) -> list[_Write]:
    """The ``__error__`` writes among ``writes`` whose task wrote something else too: it
    ran again from the same checkpoint (``invoke(None, ...)``), the error kept."""
    errors = [write for write in writes if write.channel == ERROR]
    if not errors:
        return []
    others = {write.task for write in writes if write.channel != ERROR}
    return [write for write in errors if write.task in others]


def _error_text(write: _Write, memo: dict[Any, Any]) -> str:
    error, _ = _shown(write, memo)
    return error if isinstance(error, str) else as_text(error)


def _decoded(write: _Write, memo: dict[Any, Any]) -> tuple[Any, bool]:
    """A write's value decoded, and whether it could be (else it is as stored)."""
    value, stored = _shown(write, memo)
    return value, value is not stored or not isinstance(stored, (str, list))


def _answer(own: list[Any], index: int, answers: list[Any], interrupt_id: Any) -> tuple[bool, Any]:
    """(resumed, the answer) of the ``index``-th interrupt of a task."""
    if index < len(own):
        return True, own[index]
    for answer in answers:
        if not _by_interrupt_id(answer) or not isinstance(interrupt_id, str):
            return True, answer
        if interrupt_id in answer:
            return True, answer[interrupt_id]
    return False, None


def _by_interrupt_id(answer: Any) -> bool:
    """Whether a ``Command(resume=...)`` value answers interrupts by their ids: as
    LangGraph reads it, a dict whose every key is an interrupt id (32 hex digits). Any
    other value, a dict of the user's own included, is the answer itself."""
    return isinstance(answer, dict) and all(
        isinstance(key, str) and _INTERRUPT_ID.fullmatch(key) is not None for key in answer
    )


def _without_id(message: Any) -> str:
    """A decoded message, its id left out, as text to compare."""
    if isinstance(message, dict):
        return as_text({key: value for key, value in message.items() if key != "id"})
    return as_text(message)
