"""``view.kv``: a key -> value map (JSON or bytes) with a version per write."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._damage import guarded
from ._engine import MISSING, AsOf, check_name
from ._keyspace import KeySpace
from .models import HistoryEntry


@guarded
class KV(KeySpace):
    """Key-value pairs on one branch. Every ``put``/``delete`` is a version."""

    space = "kv"

    def put(
        self, key: str, value: Any, *, trigger: str | None = None, message: str | None = None
    ) -> int:
        """Store ``value`` (JSON or bytes) under ``key``; returns the new version."""
        check_name(key, "key")
        return self._engine.put_value(self._branch, self.space, key, value, trigger, message)

    def put_many(
        self,
        values: Mapping[str, Any],
        *,
        trigger: str | None = None,
        message: str | None = None,
    ) -> int:
        """Store several keys as one version; returns it."""
        return self._write_many("put_many", values, "kv", trigger, message)

    def get(self, key: str, default: Any = None, *, as_of: AsOf = None) -> Any:
        """The value of ``key`` at ``as_of`` (default: now), or ``default``."""
        value = self._engine.read_key(self._branch, "kv", check_name(key, "key"), as_of)
        return default if value is MISSING else value

    def get_many(self, keys: Iterable[str], *, as_of: AsOf = None) -> dict[str, Any]:
        """The values at ``as_of`` (default: now) of those of ``keys`` that exist, read
        together (one statement, where ``get`` of each would be one each)."""
        return self._read_many(keys, as_of)

    def delete(
        self, key: str, *, trigger: str | None = None, message: str | None = None
    ) -> int | None:
        """Delete ``key``; returns the new version, or None if there was nothing to delete."""
        check_name(key, "key")
        engine = self._engine
        with engine.writing(self._branch, trigger, message) as write:
            if not engine.exists_now(write.branch, self.space, key):
                return None
            return engine.write_value(write, self.space, key, MISSING)

    def history(
        self, key: str, *, as_of: AsOf = None, limit: int | None = None
    ) -> list[HistoryEntry]:
        """Every version of ``key`` this branch sees, oldest first (deletions included);
        with ``limit``, the newest ``limit`` only."""
        return self._history(key, as_of, limit)
