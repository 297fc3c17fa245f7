"""What the schema's migrations and the hash chain need of a connection: statements to run.

``_connection.Connection`` is both of these (structurally); ``_migrations`` and
``_commit_hash`` are typed against them instead, so the connection, which migrates the
schema when it opens, sits above the code it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol


class Statements(Protocol):
    """Runs SQL with ``?`` placeholders (the hash chain reads and reseals commits)."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...


class Migrating(Statements, Protocol):
    """A connection a migration runs on: its statements, which server it talks to, and
    the write transaction the migrations run in."""

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        ...

    @property
    def location(self) -> str:
        """Where the database is, for messages."""
        ...

    @property
    def readonly(self) -> bool: ...

    def write(self) -> AbstractContextManager[None]: ...

    def install_routines(self) -> None:
        """Create the server-side routines in the open write transaction (PostgreSQL)."""
        ...

    def create_missing(self) -> None:
        """Create the schema's tables and indexes the database lacks."""
        ...
