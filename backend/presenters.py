"""How the front ends tell a branch's story: descriptions, presenters and their registry.

The core knows branches, versions, keys and events; it does not know what a chat message,
a tool call or a LangGraph node is. An integration that records a framework's runs also
says how to show them: it registers a :class:`Presenter` that describes the branches it
wrote in the agent's words (a :class:`Summary` for the overview, :class:`Step` records
for its history, a transcript of :class:`Message` records, which diff paths are
bookkeeping). The web explorer and the notebook widget render those records and hold no
framework knowledge; every other branch gets this module's generic presenter, whose
steps are the branch's commits, labelled by the events they appended.

Presenters are found through the ``rewinddb.presenters`` entry point group (each entry
names a presenter class or instance) and :func:`register`; an entry whose module cannot
be imported (its framework is not installed) is skipped, and its branches are shown by
the generic presenter. Stored state is untrusted: a presenter decodes data and never
constructs objects, and the front ends escape everything it returns.

How a presenter decodes values (``display``, ``value_text``, ``encoded``) and the
registry that :func:`readable` asks live in ``_decoding``, below the database, where the
diff engine and the HTML renderings use them; this module adds what needs a database.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import orjson

from . import _decoding
from ._decoding import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
from ._decoding import Decoder
from ._decoding import encoded as encoded
from ._decoding import readable as readable
from ._decoding import value_text as value_text
from ._engine import MISSING, check_count
from ._values import dumps, jsonable, same
from .errors import InvalidInputError, NotFoundError
from .models import Change, ChangeKind

if TYPE_CHECKING:
    from .database import Database
    from .models import Branch, Commit, Point

#: Steps on one page of a branch's story.
STEPS_PAGE = 50
#: The most keys of each space a step's state shows (a state of 100,000 keys is a page of
#: them, not all: the rest are read by key or in the branch's key history).
STATE_KEYS = 200
#: Characters of an outcome or a label shown in a list (the step page shows all).
SHORT_TEXT = 200

Status = Literal["finished", "interrupted", "failed", "open", "empty"]


@dataclass(frozen=True)
class ToolCall:
    """A call an AI message asked for: the tool, its arguments and, once it answered,
    the result (the text of the tool message with the same ``id``)."""

    name: str
    arguments: Any
    id: str | None = None
    result: str | None = None


@dataclass(frozen=True)
class Message:
    """One message of a conversation. ``role`` is ``human``, ``ai``, ``tool``,
    ``system`` or whatever the framework calls it; ``text`` is what a person reads."""

    role: str
    text: str
    id: str | None = None
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    step: int | None = None
    """The version of the step that added it, when known (a step is found by version)."""


@dataclass(frozen=True)
class Interrupt:
    """An agent stopped to ask: the question, the node that asked, and the answer it
    was resumed with (``resumed`` tells an answer of None from no answer yet)."""

    question: Any
    node: str | None = None
    resume: Any = None
    resumed: bool = False
    step: int | None = None
    """The version of the checkpoint it was raised at. Once answered, the step after it
    (what the asking node did when resumed) shows it; until then, that checkpoint's."""
    text: str | None = None
    """The question as a person reads it, when it has text: the value itself, or its
    ``question``/``message``/``text``/``prompt`` field."""


@dataclass(frozen=True)
class Step:
    """One step of a branch's story: a LangGraph checkpoint, or a commit elsewhere.

    A step is the state as of ``version``; it was written on ``branch`` (an ancestor's
    name for an ``inherited`` step, which happened before this branch's fork point).
    ``number`` is the framework's step number (LangGraph's superstep) or the commit's
    position in the branch's history; ``label`` names what ran, in the framework's
    words (the nodes, the event types, the commit message)."""

    version: int
    branch: str
    number: int
    label: str
    timestamp: datetime
    inherited: bool = False
    source: str | None = None
    """How the step came to be, as the framework says it (``input``, ``loop``,
    ``update``, ``fork``), or None."""
    nodes: tuple[str, ...] = ()
    id: str | None = None
    """The framework's id of the step (a checkpoint id), when it has one."""
    writes: tuple[str, ...] = ()
    """What it wrote: channels, keys or event types."""
    messages: tuple[Message, ...] = ()
    """The messages it added."""
    interrupts: tuple[Interrupt, ...] = ()
    events: tuple[int, ...] = ()
    """Sequences of the events it appended (to the branch that wrote it)."""
    parent_cut: bool = False
    """The step listed before it is not the one it came from: retention removed that
    one, so its changes since the step before are more than its own."""


@dataclass(frozen=True)
class Fork:
    """Where a branch came from, as a person says it: ``label`` is "edit of step 3 of
    lg/alice", "replay from step 3 of ...", or "fork of run-1 at version 12"."""

    parent: str
    version: int
    kind: Literal["edit", "replay", "fork"]
    label: str
    step: int | None = None
    """The parent's step it continues from (its version), when known."""


@dataclass(frozen=True)
class Summary:
    """What the overview shows of a branch: what kind of attempt it is, how it ended."""

    branch: str
    presenter: str
    kind: str
    """``thread``, ``attempt``, ``branch`` or what the presenter calls its branches."""
    title: str
    status: Status
    outcome: str | None = None
    """The final answer (last AI message), or the last end event's payload, as text."""
    waiting_on: str | None = None
    """The node an interrupted branch waits on."""
    internal: bool = False
    """Bookkeeping of an integration, or an empty ``default``: hidden unless asked for."""
    fork: Fork | None = None
    current: str | None = None
    """Of a thread told in several attempts (forks, time travel), the branch the
    framework continues it on now (LangGraph's ``get_state``): this one or another; None
    when the thread has one attempt or the presenter cannot say."""


@dataclass(frozen=True)
class StepPage:
    """Up to ``limit`` steps before (or after) a cursor, oldest first; ``older`` is the
    cursor (a version) of the page before, or None when this page reaches the start, and
    ``newer`` the cursor of the page after, or None when it reaches the newest step. An
    empty page read with ``before`` (nothing there before its cursor) has a ``newer``
    too when steps follow it: where it was read from."""

    steps: tuple[Step, ...]
    older: int | None
    total: int
    newer: int | None = None


@dataclass(frozen=True)
class Transcript:
    """A branch's conversation as of a version: ``messages`` are the newest page,
    oldest first, starting at position ``start`` of ``total``."""

    messages: tuple[Message, ...]
    start: int
    total: int
    interrupts: tuple[Interrupt, ...] = ()


@dataclass(frozen=True)
class DiffRow:
    """One row of a diff as people read it, and the store's change behind it.

    ``change`` is the store's own change (its key, its path in the stored form, its
    values as the diff gave them). ``label`` is what a person calls the key, ``path``
    where the row is in the value as the framework shows it (``notes["tokyo"]``,
    ``messages[2].content``; the stored path for a plain branch), and ``kind``, ``old``
    and ``new`` the change there, decoded; ``hidden`` marks bookkeeping. A presenter may
    tell one stored
    change as several rows, or several as one (then ``change`` is the one it was read
    from); what no row tells stays a row of its own, hidden, so the stored diff is all
    there."""

    change: Change
    label: str
    hidden: bool
    path: str
    kind: ChangeKind
    old: Any = None
    new: Any = None

    @classmethod
    def of(cls, change: Change, label: str, hidden: bool) -> DiffRow:
        """The row of a store change as it is (the generic presenter's rows)."""
        return cls(change, label, hidden, change.path, change.kind, change.old, change.new)


@dataclass(frozen=True)
class Wrote:
    """Something the tasks that made a step wrote, in the agent's words: ``text`` ("node
    agent wrote channel messages"), the value written (decoded), and the event that
    holds it (``sequence`` of ``branch``'s log, where the raw write is)."""

    text: str
    value: Any
    sequence: int
    branch: str
    node: str | None = None
    channel: str | None = None


#: A value that is not there (one side of an added or removed change).
ABSENT: Any = MISSING


class Field(str):
    """A step into a decoded object's field (a dict with ``__class__``, as ``readable``
    decodes a model): ``.content`` rather than a dict's ``["content"]``."""

    __slots__ = ()


Token = int | str


@dataclass(frozen=True)
class ValueChange:
    """One change inside a decoded value: where (``steps``: list indexes, dict keys and
    object fields, ``Field``), its kind, and the old and new values there."""

    steps: tuple[Token, ...]
    kind: ChangeKind
    old: Any = None
    new: Any = None


def value_changes(old: Any, new: Any, steps: tuple[Token, ...] = ()) -> list[ValueChange]:
    """The structural changes from ``old`` to ``new`` (decoded JSON; either may be
    ``ABSENT``), found below ``steps``: dicts member by member (the new value's order,
    then the members it lost), lists item by item, other values by what they are as
    JSON (``1`` is not ``1.0``)."""
    found: list[ValueChange] = []
    _value_walk(old, new, steps, found)
    return found


def _value_walk(old: Any, new: Any, steps: tuple[Token, ...], out: list[ValueChange]) -> None:
    if old is new:
        return
    if old is ABSENT:
        out.append(ValueChange(steps, "added", None, new))
        return
    if new is ABSENT:
        out.append(ValueChange(steps, "removed", old, None))
        return
    if type(old) is dict and type(new) is dict:
        if old == new and same(old, new):
            return
        step: type[str] = Field if "__class__" in new or "__class__" in old else str
        names = [*new, *(name for name in old if name not in new)]
        for name in names:
            token = step(name) if isinstance(name, str) else name
            _value_walk(old.get(name, ABSENT), new.get(name, ABSENT), (*steps, token), out)
        return
    if type(old) is list and type(new) is list:
        if old == new and same(old, new):
            return
        for index in range(max(len(old), len(new))):
            _value_walk(
                old[index] if index < len(old) else ABSENT,
                new[index] if index < len(new) else ABSENT,
                (*steps, index),
                out,
            )
        return
    if not same(old, new):
        out.append(ValueChange(steps, "changed", old, new))


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def shaped_path(name: str, steps: Iterable[Token]) -> str:
    """Where ``steps`` lead in the value called ``name``, written as the value's own
    shape: ``messages[2]``, ``notes["tokyo"]``, ``messages[2].content`` (a dict's keys
    as JSON strings, an object's fields after a dot when they are names)."""
    parts = [name]
    for token in steps:
        if isinstance(token, int):
            parts.append(f"[{token}]")
        elif isinstance(token, Field) and _NAME.fullmatch(token):
            parts.append(f".{token}")
        else:
            parts.append(f"[{orjson.dumps(str(token)).decode()}]")
    return "".join(parts)


def to_dict(record: Any) -> dict[str, Any]:
    """A presenter record (any of the above) as JSON-able data, for the ``.json`` twins."""
    data: dict[str, Any] = orjson.loads(orjson.dumps(asdict(record), default=_blob))
    return data


def _blob(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(value)} bytes>"
    raise TypeError(f"{type(value).__name__} is not JSON")


class Presenter(Decoder):
    """Describes branches for the front ends. This base class is the generic presenter
    (steps are commits); an integration subclasses it and overrides what it knows,
    including how its values read (``display``, ``value_text``, ``encoded``: a
    presenter is a ``Decoder``)."""

    name = "generic"

    def claims(self, branch: Branch) -> bool:
        """Whether this presenter describes ``branch`` (decided from its record alone)."""
        return True

    # -- the overview ------------------------------------------------------------

    def summary(self, db: Database, branch: Branch, *, as_of: int | None = None) -> Summary:
        """Kind, status and outcome of ``branch`` as of ``as_of`` (None: now): a few
        reads, for the overview's rows and a comparison's sides."""
        view = db.at(branch.name)
        internal = branch.name == "default" and branch.head == 0 and branch.events == 0
        fork = self.fork(db, branch)
        events = branch.events if as_of is None else view.events.length(as_of=as_of)
        if events == 0:
            head = branch.head if as_of is None else min(branch.head, as_of)
            status: Status = "empty" if head == 0 else "open"
            return Summary(
                branch.name, self.name, "branch", branch.name, status, None, None, internal, fork
            )
        # The last event (retention may have removed it: then the branch reads as open).
        found = view.events.list(as_of=as_of, after=events - 2 if events > 1 else None, limit=1)
        if not found:
            return Summary(
                branch.name, self.name, "attempt", branch.name, "open", None, None, internal, fork
            )
        last = found[0].event
        status = _status_of(last.event_type)
        outcome = short(payload_text(last.payload)) if status != "open" else None
        return Summary(
            branch.name, self.name, "attempt", branch.name, status, outcome, None, internal, fork
        )

    def fork(self, db: Database, branch: Branch) -> Fork | None:
        if branch.parent is None:
            return None
        return Fork(
            branch.parent,
            branch.forked_at,
            "fork",
            f"fork of {branch.parent} at version {branch.forked_at}",
        )

    # -- steps -------------------------------------------------------------------

    def steps(
        self,
        db: Database,
        branch: str,
        *,
        before: int | None = None,
        after: int | None = None,
        limit: int = STEPS_PAGE,
    ) -> StepPage:
        """The newest ``limit`` steps of ``branch`` older than version ``before`` (None:
        the newest), oldest first; with ``after``, the oldest ``limit`` newer than version
        ``after`` (a page read forwards). Inherited steps are included, marked
        ``inherited``."""
        view = db.at(branch)
        with db.read():
            commits = view.commits(before=before, after=after, limit=limit + 1)
            total = view.commit_count()
            # Newest first: the extra commit read is the oldest, or with ``after`` the newest.
            page = commits[:limit] if after is None else commits[max(len(commits) - limit, 0) :]
            # A step's number is how many commits the branch sees before it.
            first = view.commit_count(before=page[-1].version) if page else 0
            steps = [
                self._commit_step(db, branch, commit, first + index)
                for index, commit in enumerate(reversed(page))
            ]
            older = page[-1].version if first else None
            newer = page[0].version if page and first + len(page) < total else None
            if not page and before is not None:
                # No step between the cursors: the steps after this page, if any, begin
                # where it was read from (``after=newer`` reads them).
                cursor = max(before - 1, after or 0)
                newer = cursor if view.commits(after=cursor, limit=1) else None
            return StepPage(tuple(steps), older, total, newer)

    def step(self, db: Database, branch: str, version: int) -> Step:
        """The step of ``branch`` at ``version`` (a ``not_found.step`` error if no step
        of its history was written at that version)."""
        view = db.at(branch)
        with db.read():
            found = view.commits(before=check_count(version, "version") + 1, limit=1)
            if not found or found[0].version != version:
                raise StepNotFound(branch, version)
            number = view.commit_count(before=version)
            return self._commit_step(db, branch, found[0], number)

    def step_by_id(self, db: Database, branch: str, step_id: str) -> Step:
        """The step of ``branch`` whose framework id (``Step.id``, a checkpoint id) is
        ``step_id``; plain branches' steps have no ids, so here it is never found."""
        db.branches.get(branch)  # an unknown branch is not_found.engine.branch
        raise NotFoundError(
            f"branch {branch!r} has no step with id {step_id!r}: its steps are found by version",
            code="not_found.step",
        )

    def _commit_step(self, db: Database, branch: str, commit: Commit, number: int) -> Step:
        written = db.at(branch).written(commit.version)
        types = sorted({event.event_type for event in written.events})
        keys = tuple(f"{space}:{key}" for space, key in written.keys)
        if types:
            label = ", ".join(types)
        elif commit.merged_from:
            label = f"merge from {commit.merged_from}"
        else:
            label = commit.message or commit.trigger or _keys_label(written.keys)
        return Step(
            version=commit.version,
            branch=commit.branch,
            number=number,
            label=short(label),
            timestamp=commit.timestamp,
            inherited=commit.branch != branch,
            writes=keys + tuple(types),
            events=tuple(event.sequence for event in written.events),
        )

    def fingerprint(self, db: Database, step: Step) -> str:
        """What ``step`` did, as a digest that is equal for two steps that did the same
        thing at other versions or on other branches (comparisons use it to find where
        two attempts part): here, the values it wrote and the events it appended."""
        if not db.branches.exists(step.branch):  # an ancestor deleted since: its labels
            return hashlib.sha256(dumps([step.label, list(step.writes)])).hexdigest()
        view = db.at(step.branch)
        written = view.written(step.version)
        getters: dict[str, Callable[..., Any]] = {
            "kv": view.kv.get,
            "json": view.json.get,
            "state": view.state.get,
        }
        digest = hashlib.sha256()
        missing = object()
        for space, key in written.keys:
            value = getters[space](key, default=missing, as_of=step.version)
            shown = "<deleted>" if value is missing else value
            digest.update(dumps([space, key, jsonable(shown)]))
        for event in written.events:
            digest.update(dumps([event.event_type, jsonable(event.payload)]))
        return digest.hexdigest()

    # -- state -------------------------------------------------------------------

    def transcript(
        self,
        db: Database,
        branch: str,
        *,
        as_of: int | None = None,
        before: int | None = None,
        limit: int = STEPS_PAGE,
    ) -> Transcript | None:
        """The conversation of ``branch`` as of ``as_of`` (None: now), the newest
        ``limit`` messages before position ``before``; None for a branch that holds
        no conversation (a plain branch)."""
        return None

    def state(self, db: Database, step: Step) -> dict[str, Any]:
        """The state as of ``step``, named and decoded as a person reads it
        (``{name: value}``); here, the first ``STATE_KEYS`` keys of each space, as
        ``space:key``, through ``display``."""
        snapshot = db.at(step.branch).snapshot(as_of=step.version, limit=STATE_KEYS)
        memo: dict[Any, Any] = {}
        return {
            f"{space}:{key}": self.display(value, memo)
            for space in ("kv", "json", "state")
            for key, value in snapshot[space].items()
        }

    def hidden(self, change: Change) -> bool:
        """Whether a diff row is bookkeeping, hidden by default (generic: none is)."""
        return False

    def key_label(self, primitive: str, key: str) -> str:
        """What a person calls a stored key (a LangGraph channel's name, ...)."""
        return key

    def diff_rows(
        self, db: Database, a: Point, b: Point, changes: Sequence[Change]
    ) -> list[DiffRow]:
        """The rows people read of ``changes``, the store's diff from point ``a`` to
        point ``b`` (values decoded or as stored). Here, one row per change, as it is;
        a presenter whose values are stored in a form of its own (a LangGraph channel)
        tells them in the value's own shape (see ``DiffRow``)."""
        return self.value_rows("", "", ABSENT, ABSENT, changes)

    def value_rows(
        self, primitive: str, key: str, old: Any, new: Any, changes: Sequence[Change]
    ) -> list[DiffRow]:
        """The rows people read of ``changes`` of one key, whose stored value went from
        ``old`` to ``new`` (``ABSENT`` where there was none): a key's history page
        tells each of its versions so. Here, one row per change, as it is."""
        return [
            DiffRow.of(change, self.key_label(change.primitive, change.key), self.hidden(change))
            for change in changes
        ]

    def wrote(self, db: Database, step: Step) -> tuple[Wrote, ...]:
        """What the tasks that made ``step`` wrote, as people read it (a step page lists
        it, the raw events behind a toggle); here nothing: a plain branch's events are
        what it appended."""
        return ()

    def key_title(self, db: Database, branch: str, primitive: str, key: str) -> str | None:
        """What a key's history page is called when the key is something a person names
        (``channel notes of thread t``); None: the stored key (``kv key ...``)."""
        return None


class StepNotFound(NotFoundError):
    """No step of a branch's history was written at the version asked for."""

    def __init__(self, branch: str, version: int) -> None:
        super().__init__(
            f"branch {branch!r} has no step at version {version}: its steps are listed by "
            "rewinddb.story.branch_story (and on its page in the explorer)",
            code="not_found.step",
        )


def hidden_by_patterns(change: Change, patterns: Iterable[str]) -> bool:
    """Whether ``primitive:key:path`` of ``change`` matches one of the ``fnmatch``
    ``patterns`` (for presenters whose bookkeeping is a set of paths)."""
    name = f"{change.primitive}:{change.key}:{change.path}"
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def short(text: str, limit: int = SHORT_TEXT) -> str:
    """``text`` cut at a word boundary near ``limit`` characters, with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", limit // 2, limit)
    return text[: cut if cut > 0 else limit].rstrip() + "…"


def payload_text(payload: Any) -> str:
    """An event payload as one line of text: a string as is, a dict's ``answer``,
    ``result``, ``output``, ``outcome`` or ``text`` field when it has one, else JSON."""
    if isinstance(payload, str):
        return payload
    if isinstance(payload, dict):
        for name in ("answer", "result", "output", "outcome", "text", "message"):
            if isinstance(payload.get(name), str):
                return str(payload[name])
    if isinstance(payload, (bytes, bytearray)):
        return f"<{len(payload)} bytes>"
    return dumps(payload).decode()


_END = ("end", "ended", "done", "finished", "complete", "completed", "succeeded", "success")
_FAILED = ("error", "failed", "failure", "crashed", "aborted")


def _status_of(event_type: str) -> Status:
    last = event_type.rsplit(".", 1)[-1].lower()
    if last in _END:
        return "finished"
    if last in _FAILED:
        return "failed"
    return "open"


def _keys_label(keys: tuple[tuple[str, str], ...]) -> str:
    if not keys:
        return "commit"
    names = ", ".join(key for _, key in keys[:3])
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    return f"wrote {names}{more}"


# -- the registry (``_decoding`` holds it; these ask it for presenters) ----------------

_GENERIC = Presenter()


def register(presenter: Presenter) -> Presenter:
    """Add ``presenter`` (it is asked before the ones registered earlier); returns it."""
    if not isinstance(presenter, Presenter):
        raise InvalidInputError(
            f"register takes a rewinddb.presenters.Presenter, not {presenter!r}",
            code="invalid.presenter",
        )
    _decoding.add(presenter)
    return presenter


def unregister(presenter: Presenter) -> None:
    """Remove a presenter added with :func:`register` (or found as an entry point)."""
    _decoding.remove(presenter)


def registered() -> tuple[Presenter, ...]:
    """The presenters in the order they are asked, the entry points' loaded on first use."""
    return tuple(p for p in _decoding.registered() if isinstance(p, Presenter))


def presenter_for(branch: Branch) -> Presenter:
    """The presenter that describes ``branch``: the first registered one that claims it,
    else the generic one."""
    for presenter in registered():
        if presenter.claims(branch):
            return presenter
    return _GENERIC


def generic() -> Presenter:
    """The presenter of plain branches."""
    return _GENERIC
