"""Fixtures shared by every suite: a real rewinddb database in a temp directory, and a
real PostgreSQL server (started once per test session) for the PostgreSQL backend."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import rewinddb


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "agent"


@pytest.fixture
def db(db_path: Path) -> Iterator[rewinddb.Database]:
    with rewinddb.open(db_path) as database:
        yield database


# -- PostgreSQL ----------------------------------------------------------------------


class PostgresServer:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (Debian's binaries), or the server
    ``REWINDDB_TEST_POSTGRES_URL`` names. Each test gets its own schema."""

    def __init__(self) -> None:
        self.given = os.environ.get("REWINDDB_TEST_POSTGRES_URL")
        self.directory: Path | None = None
        self.bin: Path | None = None
        if self.given:
            self.base = self.given
            return
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not found:
            pytest.fail(
                "PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/pg_ctl): "
                "run .ci/run, which installs Debian's postgresql package, or set "
                "REWINDDB_TEST_POSTGRES_URL"
            )
        self.bin = Path(found[-1]).parent
        self.directory = Path(tempfile.mkdtemp(prefix="rewinddb-pg-"))
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            shutil.chown(self.directory, "postgres")
        self._as_owner(
            str(self.bin / "initdb"),
            "-D",
            str(self.directory / "data"),
            "-A",
            "trust",
            "-U",
            "rewind",
            "-E",
            "UTF8",
            "--no-sync",
        )
        self.start()
        self.base = f"postgresql://rewind@127.0.0.1:{self.port}/postgres"

    def _as_owner(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        assert self.bin is not None and self.directory is not None
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        self._as_owner(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.directory / "data"),
            "-o",
            options,
            "-l",
            str(self.directory / "log"),
            "-w",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        if self.bin is None or self.directory is None:
            return
        self._as_owner(
            str(self.bin / "pg_ctl"), "-D", str(self.directory / "data"), "-m", mode, "-w", "stop"
        )

    def restart(self) -> None:
        """Stop the server and start it again: open connections drop, transactions in
        progress are rolled back (``fast``: this test server runs without fsync, so an
        ``immediate`` stop could lose committed work, which is not what tests ask)."""
        self.stop("fast")
        self.start()

    def new_schema(self) -> str:
        """A URL whose connections use a new, empty schema."""
        import psycopg

        schema = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        separator = "&" if "?" in self.base else "?"
        return f"{self.base}{separator}options=-csearch_path%3D{schema}"

    def close(self) -> None:
        try:
            self.stop()
        finally:
            if self.directory is not None:
                shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> str:
    """A URL for a new, empty rewinddb database on the session's PostgreSQL server."""
    return postgres.new_schema()
