"""Web fixtures: the demo database and FastAPI TestClients on it (read-only, and with
writes allowed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from rewinddb.demo import build_demo
from rewinddb.web import create_app


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("web") / "demo"
    build_demo(path).close()
    return path


@pytest.fixture(scope="module")
def client(demo_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(demo_path), base_url="http://localhost") as test_client:
        yield test_client


@pytest.fixture
def writable(tmp_path: Path) -> Iterator[TestClient]:
    path = tmp_path / "demo"
    build_demo(path).close()
    with TestClient(
        create_app(path, allow_writes=True), base_url="http://localhost"
    ) as test_client:
        yield test_client
