"""Cluster settings are checked before a worker starts; the one-host default never loads the cluster code."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipeline.config import ConfigError, ServerConfig, load_config
from pipeline.engine.config import EngineConfig
from pipeline.server.cluster.lifecycle import stable_worker_id, worker_settings
from pipeline.server.store_api import is_shared_store
from tests.conftest import REPO
from tests.server.serve_process import free_port
from tests.server.server_helpers import build_keys_dir


def test_store_url_comes_from_the_file_the_environment_or_the_flag(tmp_path):
    path = tmp_path / "z.toml"
    path.write_text('[server]\nstore_url = "postgresql://a@h/db"\nlease_s = 12\n')
    assert load_config(path, env={}).server.store_url == "postgresql://a@h/db"
    assert load_config(path, env={"ZKPIPE_STORE_URL": "postgres://b@h/db"}).server.store_url == "postgres://b@h/db"
    assert load_config(path, env={}, overrides={"store_url": "postgresql://c@h/db"}).server.store_url.startswith(
        "postgresql://c")
    assert load_config(path, env={}).server.lease_s == 12.0


def test_only_postgresql_urls_make_a_cluster():
    assert is_shared_store("postgresql://u@h:5432/zk") and is_shared_store("postgres://u@h/zk")
    assert not is_shared_store("") and not is_shared_store("/var/lib/zkpipe/jobs.sqlite3")


def test_worker_settings_take_the_engine_depth_unless_set():
    engine = EngineConfig(backend="cpu", max_partitions_in_flight=6)
    assert worker_settings(ServerConfig(), engine, "x").max_partitions == 6
    assert worker_settings(ServerConfig(worker_max_partitions=2), engine, "x").max_partitions == 2


@pytest.mark.parametrize("settings, named", [
    ({"heartbeat_interval_s": 20.0, "lease_s": 30.0}, "heartbeat_interval_s"),
    ({"lease_s": 0.0}, "lease_s"),
    ({"claim_poll_interval_s": -1.0}, "claim_poll_interval_s"),
    ({"max_partition_attempts": 0}, "max_partition_attempts"),
    ({"max_db_partition_bytes": 0}, "max_db_partition_bytes"),
    ({"worker_max_partitions": -1}, "worker_max_partitions"),
])
def test_bad_cluster_settings_are_refused_by_name(settings, named):
    with pytest.raises(ConfigError, match=named):
        worker_settings(ServerConfig(**settings), EngineConfig(backend="cpu"), "zkpipe.toml")


def test_a_worker_keeps_its_id_across_restarts(tmp_path):
    first = stable_worker_id(tmp_path)
    assert stable_worker_id(tmp_path) == first and first.count("-") >= 1
    other = tmp_path / "other"
    other.mkdir()
    assert stable_worker_id(other) != first  # another state folder is another worker


def test_the_sqlite_server_starts_and_stops_without_loading_the_cluster_code(tmp_path):
    code = f"""
import asyncio, sys
from aiohttp import web
from pipeline.server import create_app
from tests.server.server_helpers import make_config

async def main():
    runner = web.AppRunner(create_app(make_config(__import__("pathlib").Path({str(tmp_path)!r}))))
    await runner.setup()
    await runner.cleanup()
    loaded = sorted(m for m in sys.modules if m == "asyncpg" or m.startswith("pipeline.server.cluster"))
    print("loaded:", loaded)

asyncio.run(main())
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "loaded: []" in out.stdout
    assert (tmp_path / "state" / "jobs.sqlite3").is_file()


def test_serve_with_an_unreachable_store_exits_with_a_clear_message(tmp_path):
    keys = build_keys_dir(tmp_path / "keys")
    url = f"postgresql://zkpipe@127.0.0.1:{free_port()}/nowhere"  # nothing listens there
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "serve", "--store", url, "--keys-dir", str(keys),
                          "--state-dir", str(tmp_path / "state"), "--port", "0"], cwd=REPO, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "ZKPIPE_ENGINE_BACKEND": "cpu"})
    assert out.returncode == 2, out.stderr[-2000:]
    assert "cannot open the job store postgresql://…@127.0.0.1" in out.stderr and "Traceback" not in out.stderr
