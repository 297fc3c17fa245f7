"""schemathesis (all its default checks) against the JSON API's OpenAPI schema: no
input gives a 500, and every response matches the schema."""

from __future__ import annotations

import tempfile
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings

from rewinddb.demo import build_demo
from rewinddb.web import create_app

_DB = Path(tempfile.mkdtemp(prefix="rewinddb-fuzz-")) / "demo"
build_demo(_DB).close()
schema = schemathesis.openapi.from_asgi(
    "/api/openapi.json", create_app(_DB, allowed_hosts=["testserver"])
)  # its client's name


@schema.parametrize()
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_api_never_fails(case: schemathesis.Case) -> None:
    case.call_and_validate()  # every default check, not_a_server_error included
