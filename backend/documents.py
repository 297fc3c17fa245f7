"""``view.json``: JSON documents read and written by JSONPath."""

from __future__ import annotations

from typing import Any

from . import jsonpath
from ._damage import guarded
from ._engine import MISSING, AsOf, check_name
from ._keyspace import KeySpace
from ._values import validate
from .models import HistoryEntry


@guarded
class Documents(KeySpace):
    """JSON documents on one branch; ``set`` at a path writes a new version of the whole."""

    space = "json"
    allows_bytes = False

    def set(
        self,
        key: str,
        path: str,
        value: Any,
        *,
        trigger: str | None = None,
        message: str | None = None,
    ) -> int:
        """Set the value at ``path`` of document ``key`` (created if missing); new version."""
        check_name(key, "key")
        tokens = jsonpath.parse(path)
        validate(value, allow_bytes=False, depth=len(tokens))
        engine = self._engine
        if not tokens:  # the whole document
            return engine.put_value(
                self._branch, self.space, key, value, trigger, message, validated=True
            )
        with engine.writing(self._branch, trigger, message) as write:
            current = engine.read_value(write.branch, engine.clock(), self.space, key)
            document = jsonpath.set_value(current, tokens, value, path)
            return engine.write_value(write, self.space, key, document, validated=True)

    def get(self, key: str, path: str = "$", *, as_of: AsOf = None, default: Any = None) -> Any:
        """The value at ``path`` of document ``key`` at ``as_of``, or ``default``."""
        tokens = jsonpath.parse(path)
        value = jsonpath.get(self._read(key, as_of), tokens)
        return default if value is MISSING else value

    def delete(
        self,
        key: str,
        path: str = "$",
        *,
        trigger: str | None = None,
        message: str | None = None,
    ) -> int | None:
        """Delete the document (``$``) or the value at ``path``; None if nothing was there."""
        check_name(key, "key")
        tokens = jsonpath.parse(path)
        engine = self._engine
        with engine.writing(self._branch, trigger, message) as write:
            current = engine.read_value(write.branch, engine.clock(), self.space, key)
            document, removed = jsonpath.delete_value(current, tokens)
            if not removed:
                return None
            return engine.write_value(write, self.space, key, document, validated=True)

    def history(
        self, key: str, *, as_of: AsOf = None, limit: int | None = None
    ) -> list[HistoryEntry]:
        """Every version of ``key`` this branch sees, oldest first (deletions included);
        with ``limit``, the newest ``limit`` only."""
        return self._history(key, as_of, limit)
