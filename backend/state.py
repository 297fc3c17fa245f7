"""``view.state``: keyed state with triggers and a transition history.

The API agent frameworks know (``get``, ``set(key, value, trigger)``, ``set_many``,
``get_all``, ``reset``, ``history``, ``replay_to``, ``snapshot``/``restore``), on a branch
and versioned like everything else: every change is a version, ``as_of`` reads the past,
and going back (``replay_to``, ``restore``) writes a *new* version, so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from ._damage import guarded
from ._engine import MISSING, AsOf, check_count, check_name
from ._keyspace import KeySpace
from ._values import jsonable, validate
from .errors import InvalidInputError, NotFoundError


@dataclass(frozen=True)
class Transition:
    """One change of one state key: what it was, what it became, and why."""

    id: str
    """``"<version>:<key>"``: stable, and the same after export and import."""
    key: str
    previous_value: Any
    value: Any
    trigger: str | None
    version: int
    timestamp: datetime
    deleted: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["timestamp"] = self.timestamp.isoformat()
        data["value"] = jsonable(self.value)
        data["previous_value"] = jsonable(self.previous_value)
        return data


@guarded
class State(KeySpace):
    """Keyed state on one branch; ``trigger`` records what caused each change."""

    space = "state"

    def get(self, key: str, default: Any = None, *, as_of: AsOf = None) -> Any:
        """The value of ``key`` (at ``as_of``), or ``default``."""
        value = self._read(key, as_of)
        return default if value is MISSING else value

    def set(
        self, key: str, value: Any, trigger: str | None = None, *, message: str | None = None
    ) -> int:
        """Set one key; returns the new version."""
        check_name(key, "key")
        validate(value, allow_bytes=self.allows_bytes)
        return self._engine.put_value(
            self._branch, self.space, key, value, trigger, message, validated=True
        )

    def set_many(
        self, values: Mapping[str, Any], trigger: str | None = None, *, message: str | None = None
    ) -> int:
        """Set several keys atomically, as one version."""
        return self._write_many("set_many", values, "state", trigger, message)

    def get_all(self, *, as_of: AsOf = None) -> dict[str, Any]:
        """All state as a dict (at ``as_of``)."""
        return self.items(as_of=as_of)

    def reset(self, trigger: str | None = None, *, message: str | None = None) -> int | None:
        """Clear all state in one version; None if there was nothing to clear."""
        return self.restore({}, trigger, message=message)

    def history(self, key: str | None = None, limit: int | None = None) -> list[Transition]:
        """Transitions oldest first: of ``key``, or of every key; the last ``limit`` only."""
        if limit is not None:
            check_count(limit, "limit")
        previous: dict[str, Any] = {}
        transitions = []
        for entry in self._history(key, None):
            transitions.append(
                Transition(
                    id=f"{entry.version}:{entry.key}",
                    key=entry.key,
                    previous_value=previous.get(entry.key),
                    value=entry.value,
                    trigger=entry.trigger,
                    version=entry.version,
                    timestamp=entry.timestamp,
                    deleted=entry.deleted,
                )
            )
            previous[entry.key] = entry.value
        if limit is not None:
            transitions = transitions[len(transitions) - limit :] if limit else []
        return transitions

    def replay_to(
        self, transition_id: str, trigger: str | None = None, *, message: str | None = None
    ) -> int | None:
        """Make the state what it was right after that transition, as a new version.

        Nothing is lost: the history keeps every version, including the ones undone.
        """
        version = self._transition_version(transition_id)
        engine = self._engine
        with engine.conn.lock:
            record = engine.branch(self._branch)
            # An inherited transition is read where it happened (this branch inherited it).
            state = self._items_at(engine.owner_at(record, version), version)
            return self.restore(state, trigger, message=message)

    def snapshot(self, *, as_of: AsOf = None) -> dict[str, Any]:
        """All state as a plain dict (at ``as_of``): give it to ``restore`` later."""
        return self.get_all(as_of=as_of)

    def restore(
        self,
        snapshot: Mapping[str, Any],
        trigger: str | None = None,
        *,
        message: str | None = None,
    ) -> int | None:
        """Make the state equal to ``snapshot`` in one version; None if it already is."""
        values = self._checked(snapshot, "snapshot")
        with self._engine.writing(self._branch, trigger, message) as write:
            return write.version if self._replace_all(write, values) else None

    def _transition_version(self, transition_id: str) -> int:
        if not isinstance(transition_id, str) or ":" not in transition_id:
            raise InvalidInputError(
                f"{transition_id!r} is not a transition id (they look like '12:phase')",
                code="invalid.transition",
            )
        version_text, key = transition_id.split(":", 1)
        if not version_text.isdigit() or not key:
            raise InvalidInputError(
                f"{transition_id!r} is not a transition id (they look like '12:phase')",
                code="invalid.transition",
            )
        version = int(version_text)
        if not any(t.version == version for t in self.history(key)):
            raise NotFoundError(
                f"branch {self._branch!r} has no transition {transition_id!r}",
                code="not_found.transition",
            )
        return version
