"""A throwaway PostgreSQL server for tests and benchmarks of the PostgreSQL backend.

::

    from rewinddb.testing import PostgresServer

    with PostgresServer(settings={"fsync": "off"}) as server:
        url = server.new_schema()  # a new, empty schema: one fresh rewinddb database
        with rewinddb.open(url) as db:
            ...

``PostgresServer()`` runs ``initdb`` and ``pg_ctl`` from Debian's ``postgresql`` package
(``/usr/lib/postgresql/*/bin``, the newest version found) on a temporary directory, and
listens on 127.0.0.1 on a free port; ``close()`` stops it and removes the directory.
PostgreSQL refuses to run as root, so when run as root the server runs as the
``postgres`` user (``runuser -u postgres --``) on a directory it owns. With ``url=``
nothing is started: the given server is used, and ``close()`` drops the schemas made on
it. Either way every ``new_schema()`` is a new database for rewinddb.

The server keeps PostgreSQL's default durability unless ``settings`` say otherwise
(tests pass ``fsync=off`` and friends for speed). psycopg (the ``postgres`` extra) is
imported only when a schema is made.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .errors import RewindError

__all__ = ["BINARIES", "PostgresServer", "with_options"]

#: Where Debian's PostgreSQL packages put the server binaries, one folder per version.
BINARIES = "/usr/lib/postgresql/*/bin"


def with_options(url: str, *settings: str) -> str:
    """``url`` with server ``settings`` (``"name=value"``) for its connections, passed as
    libpq ``options`` (``-cname=value``)."""
    if not settings:
        return url
    encoded = quote(" ".join(f"-c{setting}" for setting in settings), safe="")
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={encoded}"


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as missing:  # pragma: no cover - depends on the installed extras
        raise RewindError(
            f'PostgreSQL needs its driver: pip install "rewinddb[postgres]" ({missing})',
            code="missing.dependency",
        ) from missing
    return psycopg


class PostgresServer:
    """A throwaway PostgreSQL cluster on 127.0.0.1, or the server ``url`` names.

    ``settings`` are server settings (``{"fsync": "off"}``) added to those it always
    sets (``listen_addresses``, ``max_connections=200``); they apply to a started
    cluster, not to a given ``url``. Raises ``RewindError`` (code
    ``missing.postgresql``) when PostgreSQL's binaries are not installed.
    """

    def __init__(
        self,
        *,
        url: str | None = None,
        settings: Mapping[str, str] | None = None,
        max_connections: int = 200,
    ) -> None:
        #: The given server's URL, or None for a cluster of our own.
        self.given = url
        #: The schemas ``new_schema`` made, oldest first.
        self.schemas: list[str] = []
        self.directory: Path | None = None
        self.settings = {"max_connections": str(max_connections), **(settings or {})}
        if url:
            #: A URL of the server's ``postgres`` database, as its superuser.
            self.base = url
            return
        found = sorted(glob.glob(f"{BINARIES}/pg_ctl"))
        if not found:
            raise RewindError(
                f"PostgreSQL's server is not installed (no {BINARIES}/pg_ctl): "
                "apt-get install postgresql, or give the URL of a server",
                code="missing.postgresql",
            )
        self.bin = Path(found[-1]).parent
        self.directory = Path(tempfile.mkdtemp(prefix="rewinddb-pg-"))
        try:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                self.port: int = sock.getsockname()[1]
            if os.geteuid() == 0:  # PostgreSQL refuses to run as root
                shutil.chown(self.directory, "postgres")
            # --no-sync only skips initdb's own final fsync; the server runs with `settings`.
            self._as_owner(
                str(self.bin / "initdb"),
                *("-D", str(self.directory / "data"), "-A", "trust", "-U", "rewind"),
                *("-E", "UTF8", "--no-sync"),
            )
            self.start()
        except BaseException:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        self.base = f"postgresql://rewind@127.0.0.1:{self.port}/postgres"

    def _as_owner(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        try:
            subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)
        except subprocess.CalledProcessError as failed:
            output = (failed.stderr or failed.stdout or b"").decode(errors="replace").strip()
            raise RewindError(
                f"{Path(command[0]).name} failed ({failed.returncode}): {output}",
                code="postgresql.failed",
            ) from failed

    def _own(self) -> Path:
        if self.directory is None:
            raise RewindError(
                "the server was given by URL: it is not ours to start, stop or restart",
                code="invalid.postgresql",
            )
        return self.directory

    def start(self) -> None:
        """Start the cluster (``__init__`` does; after ``stop()``, again)."""
        directory = self._own()
        options = " ".join(
            [
                f"-p {self.port} -k {directory} -c listen_addresses=127.0.0.1",
                *(f"-c {name}={value}" for name, value in self.settings.items()),
            ]
        )
        self._as_owner(
            str(self.bin / "pg_ctl"),
            *("-D", str(directory / "data"), "-o", options, "-l", str(directory / "log")),
            *("-w", "start"),
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the cluster: ``fast`` rolls back open transactions and drops connections."""
        directory = self._own()
        self._as_owner(
            str(self.bin / "pg_ctl"), "-D", str(directory / "data"), "-m", mode, "-w", "stop"
        )

    def restart(self) -> None:
        """Stop the server and start it again: open connections drop, transactions in
        progress are rolled back. (``fast``: a server run with ``fsync=off`` could lose
        committed work in an ``immediate`` stop.)"""
        self.stop("fast")
        self.start()

    def url_for(self, schema: str, *settings: str) -> str:
        """A URL whose connections use ``schema`` and the ``"name=value"`` settings."""
        return with_options(self.base, f"search_path={schema}", *settings)

    def new_schema(self, *settings: str) -> str:
        """A URL whose connections use a new, empty schema (and ``settings``, e.g.
        ``"synchronous_commit=off"``): a fresh database for ``rewinddb.open``."""
        schema = f"rewind_{uuid.uuid4().hex[:12]}"
        with _psycopg().connect(self.base, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        self.schemas.append(schema)
        return self.url_for(schema, *settings)

    def close(self) -> None:
        """Stop and remove the cluster; on a given server, drop the schemas made on it."""
        if self.directory is None:
            if self.schemas:
                # A schema still locked by a forgotten connection fails the drop, not hangs it.
                with _psycopg().connect(
                    with_options(self.base, "lock_timeout=10s"), autocommit=True
                ) as conn:
                    while self.schemas:
                        conn.execute(f"DROP SCHEMA IF EXISTS {self.schemas[-1]} CASCADE")
                        self.schemas.pop()
            return
        try:
            self.stop()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
            self.schemas.clear()  # gone with the cluster; a second close() does nothing

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
