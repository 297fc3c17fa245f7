"""rewinddb.testing.PostgresServer: what the suite's fixture does not exercise itself."""

from __future__ import annotations

from pathlib import Path

import pytest

import rewinddb
from rewinddb import RewindError, testing
from rewinddb.testing import PostgresServer, with_options

pytest.importorskip("psycopg")


def test_missing_binaries_raise_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(testing, "BINARIES", str(tmp_path / "*" / "bin"))
    with pytest.raises(RewindError, match="apt-get install postgresql") as raised:
        PostgresServer()
    assert raised.value.code == "missing.postgresql"


def test_settings_are_passed_as_libpq_options() -> None:
    url = "postgresql://u@h/db"
    assert with_options(url) == url
    assert with_options(url, "search_path=s") == f"{url}?options=-csearch_path%3Ds"
    assert with_options(f"{url}?sslmode=disable", "a=1", "b=2") == (
        f"{url}?sslmode=disable&options=-ca%3D1%20-cb%3D2"
    )


def test_a_cluster_of_its_own_with_settings_is_removed_on_exit(
    postgres: PostgresServer,
) -> None:
    import psycopg

    if postgres.given:
        pytest.skip("the suite uses a given server (REWINDDB_TEST_POSTGRES_URL)")
    with PostgresServer(settings={"fsync": "off"}) as server:
        directory = server.directory
        assert directory is not None and directory.exists()
        url = server.new_schema("synchronous_commit=off")
        with psycopg.connect(url) as conn:
            assert conn.execute("SHOW fsync").fetchone() == ("off",)
            assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
            assert conn.execute("SHOW search_path").fetchone() == (server.schemas[-1],)
        with rewinddb.open(url) as db:
            db.kv.put("k", 1)
            assert db.kv.get("k") == 1
    assert not directory.exists()


def test_a_given_server_keeps_running_and_loses_only_its_schemas(
    postgres: PostgresServer,
) -> None:
    import psycopg

    given = PostgresServer(url=postgres.base)
    with given:
        with rewinddb.open(given.new_schema()) as db:
            db.kv.put("k", 1)
        schema = given.schemas[-1]
        with pytest.raises(RewindError, match="not ours"):
            given.restart()
    with psycopg.connect(postgres.base) as conn:
        found = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = %s", (schema,)
        ).fetchone()
    assert found == (0,)
