"""Branch names and index keys of the LangGraph saver.

A thread's root namespace lives on branch ``lg/<thread_id>``, a subgraph namespace on
``lg/<thread_id>/<checkpoint_ns>``, and a time-travel fork of either on
``<that name>~<short checkpoint id>``. Thread ids and namespaces are escaped so that
``/``, ``~`` and ``%`` in them cannot be confused with the separators.

A thread id that cannot stand as itself (the empty one) stands as a *digest*: ``#`` and
the first 40 hex digits of its sha256 (``#`` is escaped everywhere else, so the two never
meet). Parsing gives the digest back (a :class:`Digest`, which escapes as itself), so
keys built from a parsed name are the keys the saver wrote; the thread id itself is kept
in its namespaces' records (``thread``, see ``_index``).
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote, unquote

PREFIX = "lg/"
INDEX_BRANCH = "lg-index"
CHECKPOINT_KEY = "checkpoint"
CHANNEL_PREFIX = "channel/"
WRITE_PREFIX = "write/"
WRITE_EVENT = "langgraph.write"


#: What a digest starts with (escaped in every other name part).
DIGEST = "#"


class Digest(str):
    """A name part that stands for a text in its place (:func:`digest`): as parsed from a
    key or branch name, it escapes as itself."""

    __slots__ = ()


def digest(text: str) -> Digest:
    """The part that stands for ``text``: ``#`` and 40 hex digits of its sha256."""
    return Digest(DIGEST + hashlib.sha256(text.encode()).hexdigest()[:40])


def _quoted(text: str) -> str:
    return quote(text, safe=":|-_.@ ").replace("~", "%7E")


def escape(text: str) -> str:
    """``text`` with ``/``, ``~``, ``%`` (and ``#``) and other separators
    percent-encoded; a :class:`Digest` as itself."""
    return text if isinstance(text, Digest) else _quoted(text)


def unescape(text: str) -> str:
    """The inverse of :func:`escape` (a digest comes back as a :class:`Digest`)."""
    return Digest(text) if text.startswith(DIGEST) else unquote(text)


def thread_part(thread_id: str) -> str:
    """How a thread id stands in branch names and index keys: escaped, or (the empty
    id) as its digest."""
    if isinstance(thread_id, Digest):
        return thread_id
    return _quoted(thread_id) if thread_id else digest(thread_id)


def as_itself(thread_id: str) -> bool:
    """Whether the thread id stands as itself in names (else as its digest)."""
    return not isinstance(thread_part(thread_id), Digest)


def main_branch(thread_id: str, checkpoint_ns: str) -> str:
    """The branch a (thread, namespace) starts on."""
    name = PREFIX + thread_part(thread_id)
    return f"{name}/{escape(checkpoint_ns)}" if checkpoint_ns else name


def fork_branch(main: str, checkpoint_id: str) -> str:
    """The name of a fork of ``main`` that starts with ``checkpoint_id``."""
    return f"{main}~{checkpoint_id.replace('-', '')[-8:]}"


def channel_key(channel: str) -> str:
    return CHANNEL_PREFIX + channel


#: The record field that holds a checkpoint's trigger channels (see :func:`is_trigger`).
TRIGGERS = "triggers"
#: The record field that holds, with a serde that is not the stock one, LangGraph's
#: bookkeeping, the metadata and the trigger channels' values as one output of it.
SEALED = "sealed"


def is_trigger(channel: str) -> bool:
    """Whether ``channel`` is one of LangGraph's trigger channels: the graph's input
    (``__start__``) and the edges to each node (``branch:to:<node>``). Each holds a value
    for a step or two, so the saver keeps those present in the checkpoint's record
    (``TRIGGERS``) instead of writing a key for each, and deleting it a step later."""
    return channel.startswith("branch:to:") or channel == "__start__"


def write_key(channel: str, idx: int) -> str:
    """Where a pending write's value is kept when it is stored as a channel value is
    (a dict of many members: consecutive writes of it share what they have in common)."""
    return f"{WRITE_PREFIX}{idx}/{channel}"


# Keys on the index branch.


def thread_prefix(thread_id: str) -> str:
    return f"{thread_part(thread_id)}/"


def checkpoint_key(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    return f"cp/{thread_part(thread_id)}/{escape(checkpoint_ns)}/{checkpoint_id}"


def parse_checkpoint_key(key: str) -> tuple[str, str, str]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` of a key from :func:`checkpoint_key`
    (a thread id that stands as its digest comes back as that :class:`Digest`)."""
    _, thread, ns, checkpoint_id = key.split("/", 3)
    return unescape(thread), unescape(ns), checkpoint_id


def namespace_key(thread_id: str, checkpoint_ns: str) -> str:
    return f"ns/{thread_part(thread_id)}/{escape(checkpoint_ns)}"


def run_key(run_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    thread, ns = thread_part(thread_id), escape(checkpoint_ns)
    return f"run/{escape(run_id)}/{thread}/{ns}/{checkpoint_id}"


def parse_run_key(key: str) -> tuple[str, str]:
    """``(thread part, checkpoint_ns)`` of a key from :func:`run_key`, parsed (a digest
    stays one: see ``names``)."""
    _, _, thread, ns, _ = key.split("/", 4)
    return unescape(thread), unescape(ns)


def owned_key(thread_id: str, branch: str) -> str:
    return f"own/{thread_part(thread_id)}/{escape(branch)}"


def ref_key(branch: str, thread_id: str) -> str:
    return f"ref/{escape(branch)}/{thread_part(thread_id)}"


def held_key(branch: str) -> str:
    """Marks a branch kept after the thread that made it let it go, because a copied
    thread still reads it (see ``ref_key``); it is purged when the last reader goes."""
    return f"held/{escape(branch)}"


def gone_key(thread_id: str) -> str:
    """Where a thread's tombstone is kept (see ``_index``). The key holds a digest of
    the thread id, not the id itself."""
    return "gone/" + hashlib.sha256(thread_id.encode()).hexdigest()


#: The prefixes of every key the index holds (the keys ``Index.erase`` may erase).
INDEX_PREFIXES = ("cp/", "ns/", "run/", "own/", "ref/", "held/", "gone/")


def branch_of_key(key: str) -> str:
    """The branch an ``own/<thread>/<branch>``, ``ref/<branch>/<thread>`` or
    ``held/<branch>`` key names."""
    kind, _, rest = key.partition("/")
    if kind == "own":
        return unescape(rest.split("/", 1)[1])
    return unescape(rest.split("/", 1)[0])


def parse_branch(name: str) -> tuple[str, str, str | None] | None:
    """``(thread_id, checkpoint_ns, fork)`` of a branch the saver names (``fork``: the
    ``~...`` suffix of a time-travel fork, else None); None for any other name. A thread
    id that stands as its digest comes back as that :class:`Digest` (``checkpoint_key``
    and the others take it)."""
    if not name.startswith(PREFIX):
        return None
    base, tilde, fork = name[len(PREFIX) :].partition("~")
    thread, _, namespace = base.partition("/")
    if not thread:
        return None
    return unescape(thread), unescape(namespace), fork if tilde else None


def same_thread(part: str, thread_id: str) -> bool:
    """Whether a parsed thread id (of a key or branch name) is the one of ``thread_id``."""
    return thread_part(part) == thread_part(thread_id)
