"""Branch names and index keys of the LangGraph saver.

A thread's root namespace lives on branch ``lg/<thread_id>``, a subgraph namespace on
``lg/<thread_id>/<checkpoint_ns>``, and a time-travel fork of either on
``<that name>~<short checkpoint id>``. Thread ids and namespaces are escaped so that
``/``, ``~`` and ``%`` in them cannot be confused with the separators.

The store takes names and keys of at most 1,024 characters, and a key holds a thread id
with its namespace, or a branch name that holds them: a part that cannot stand as itself
there stands as its *digest*, ``#`` and the first 40 hex digits of its sha256 (``#`` is
escaped everywhere else, so the two never meet):

- a thread id whose escaped form is empty or longer than ``THREAD_PART`` characters (the
  longest the earlier layout took, which names as before);
- a namespace whose escaped form, with the thread's part, is longer than ``NS_ROOM``;
- in one key, a run id or a branch name that would make it longer than the store takes
  (found under both forms: see ``run_prefixes`` and ``ref_prefixes``).

Parsing gives a digest back (a :class:`Digest`, which escapes as itself), so keys built
from a parsed name are the keys the saver wrote; the thread id and namespace themselves
are kept in the namespace's record (``thread``, ``ns``), and a branch name in the value of
the key that holds its digest (see ``_index``). Names that fit stand as themselves, as in
the earlier layout, so its databases read as they did.
"""

from __future__ import annotations

import functools
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


#: The length of a digest: ``#`` and 40 hex digits.
DIGEST_LENGTH = 41


def digest(text: str) -> Digest:
    """The part that stands for ``text``: ``#`` and 40 hex digits of its sha256."""
    return Digest(DIGEST + hashlib.sha256(text.encode()).hexdigest()[: DIGEST_LENGTH - 1])


@functools.lru_cache(maxsize=4096, typed=True)
def _quoted(text: str) -> str:
    return quote(text, safe=":|-_.@ ").replace("~", "%7E")


def escape(text: str) -> str:
    """``text`` with ``/``, ``~``, ``%`` (and ``#``) and other separators
    percent-encoded; a :class:`Digest` as itself."""
    return text if isinstance(text, Digest) else _quoted(text)


def unescape(text: str) -> str:
    """The inverse of :func:`escape` (a digest comes back as a :class:`Digest`)."""
    return Digest(text) if text.startswith(DIGEST) else unquote(text)


#: The store's longest key and branch name.
KEY_LIMIT = 1024
#: The longest escaped thread id that stands as itself: the earlier layout's longest (it
#: held a thread id twice in one key, ``own/<thread>/<lg%2F<thread>>``).
THREAD_PART = 507
#: The most characters a thread's part and a namespace's (escaped) stand as themselves
#: in: so that its longest key, a run's (``run/<digest of the run id>/<thread>/<ns>/<id>``),
#: fits with a checkpoint id of ``CHECKPOINT_ID`` characters.
CHECKPOINT_ID = 64
NS_ROOM = KEY_LIMIT - len("run/") - DIGEST_LENGTH - len("///") - CHECKPOINT_ID


def thread_part(thread_id: str) -> str:
    """How a thread id stands in branch names and index keys: escaped, or as its digest
    (the empty id, and one escaped to more than ``THREAD_PART`` characters)."""
    if isinstance(thread_id, Digest):
        return thread_id
    quoted = _quoted(thread_id)
    return quoted if 0 < len(quoted) <= THREAD_PART else digest(thread_id)


def ns_part(thread: str, checkpoint_ns: str) -> str:
    """How a namespace stands beside ``thread`` (a :func:`thread_part`): escaped, or as
    its digest when the two would be longer than ``NS_ROOM``."""
    if isinstance(checkpoint_ns, Digest):
        return checkpoint_ns
    quoted = _quoted(checkpoint_ns)
    return quoted if len(thread) + len(quoted) <= NS_ROOM else digest(checkpoint_ns)


def kept_names(thread_id: str, checkpoint_ns: str) -> dict[str, str]:
    """What a namespace's record keeps of the names it holds digests of: ``thread`` and
    ``ns``, each when it stands as its digest ({} for most)."""
    thread = thread_part(thread_id)
    kept = {} if not isinstance(thread, Digest) else {"thread": thread_id}
    if isinstance(ns_part(thread, checkpoint_ns), Digest):
        kept["ns"] = checkpoint_ns
    return kept


def main_branch(thread_id: str, checkpoint_ns: str) -> str:
    """The branch a (thread, namespace) starts on."""
    thread = thread_part(thread_id)
    name = PREFIX + thread
    return f"{name}/{ns_part(thread, checkpoint_ns)}" if checkpoint_ns else name


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


def _parts(thread_id: str, checkpoint_ns: str) -> str:
    """``<thread>/<ns>`` as keys hold them."""
    thread = thread_part(thread_id)
    return f"{thread}/{ns_part(thread, checkpoint_ns)}"


def checkpoint_key(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    return f"cp/{_parts(thread_id, checkpoint_ns)}/{checkpoint_id}"


def parse_checkpoint_key(key: str) -> tuple[str, str, str]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` of a key from :func:`checkpoint_key`
    (a thread id that stands as its digest comes back as that :class:`Digest`)."""
    _, thread, ns, checkpoint_id = key.split("/", 3)
    return unescape(thread), unescape(ns), checkpoint_id


def namespace_key(thread_id: str, checkpoint_ns: str) -> str:
    return f"ns/{_parts(thread_id, checkpoint_ns)}"


def _fitting(text: str, around: int) -> str:
    """``text`` escaped when a key with ``around`` other characters holds it, else its
    digest."""
    quoted = _quoted(text)
    return quoted if around + len(quoted) <= KEY_LIMIT else digest(text)


def run_key(run_id: str, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    rest = f"/{_parts(thread_id, checkpoint_ns)}/{checkpoint_id}"
    return f"run/{_fitting(run_id, len('run/') + len(rest))}{rest}"


def run_prefixes(run_id: str) -> list[str]:
    """The prefixes of a run's keys (:func:`run_key`): its run id escaped or digested."""
    return _prefixes("run/", run_id)


def _prefixes(kind: str, text: str) -> list[str]:
    prefixes = [f"{kind}{_quoted(text)}/", f"{kind}{digest(text)}/"]
    return [prefix for prefix in prefixes if len(prefix) <= KEY_LIMIT]


def parse_run_key(key: str) -> tuple[str, str]:
    """``(thread part, checkpoint_ns)`` of a key from :func:`run_key`, parsed (a digest
    stays one: see ``names``)."""
    _, _, thread, ns, _ = key.split("/", 4)
    return unescape(thread), unescape(ns)


def owned_key(thread_id: str, branch: str) -> str:
    """A branch the thread created; a branch name its digest stands for is the key's
    value (:func:`names_branch`)."""
    prefix = f"own/{thread_part(thread_id)}/"
    return prefix + _fitting(branch, len(prefix))


def ref_key(branch: str, thread_id: str) -> str:
    """A branch a copied thread reads (its value as :func:`owned_key`'s)."""
    suffix = f"/{thread_part(thread_id)}"
    return f"ref/{_fitting(branch, len('ref/') + len(suffix))}{suffix}"


def ref_prefixes(branch: str) -> list[str]:
    """The prefixes of the ``ref`` keys of the threads that read ``branch``."""
    return _prefixes("ref/", branch)


def names_branch(key: str) -> bool:
    """Whether an ``own`` or ``ref`` key holds the digest of its branch's name (which is
    then the key's value)."""
    return isinstance(branch_of_key(key), Digest)


def branch_value(key: str, branch: str) -> object:
    """The value of an ``own`` or ``ref`` key of ``branch``: True, or the branch's name
    when the key holds its digest."""
    return branch if names_branch(key) else True


def copy_branch(branch: str, thread_id: str, checkpoint_ns: str) -> str:
    """The name of the fork of ``branch`` (a branch of a thread's namespace) that a copy
    of the thread, ``thread_id``, gets (before a free one is found)."""
    parsed = parse_branch(branch)
    fork = parsed[2] if parsed is not None else None
    name = main_branch(thread_id, checkpoint_ns)
    return name if fork is None else f"{name}~{fork}"


def held_key(branch: str) -> str:
    """Marks a branch kept after the thread that made it let it go, because a copied
    thread still reads it (see ``ref_key``); it is purged when the last reader goes."""
    return "held/" + _fitting(branch, len("held/"))


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


def same_namespace(parsed: tuple[str, str], thread_id: str, checkpoint_ns: str) -> bool:
    """Whether a parsed (thread id, namespace) of a key or branch name names this one."""
    return _parts(*parsed) == _parts(thread_id, checkpoint_ns)
