"""A real PostgreSQL server for the cluster tests: one per session, in a temporary folder, on a free port.

It is skipped (with the reason) only where no PostgreSQL binaries exist; CI installs them
(.ci/run) and sets ZKPIPE_REQUIRE_POSTGRES=1, which turns a missing server into a failure.
Every test gets its own empty database.
"""
from __future__ import annotations

import os
import uuid

import pytest

from pipeline.server.cluster.local_postgres import LocalPostgres, PostgresNotFound, find_bin_dir


@pytest.fixture(scope="session")
def postgres_server():
    try:
        bin_dir = find_bin_dir()
    except PostgresNotFound as exc:
        if os.environ.get("ZKPIPE_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"ZKPIPE_REQUIRE_POSTGRES=1 but {exc}")
        pytest.skip(str(exc))
    server = LocalPostgres.start(bin_dir)
    yield server
    server.stop()


@pytest.fixture
def pg_url(postgres_server) -> str:
    return postgres_server.create_database(f"t_{uuid.uuid4().hex[:12]}")
