"""Fixtures of the server tests: a config over a keys folder of snarkjs fixtures, a test client."""
from __future__ import annotations

import os

import pytest
from aiohttp.test_utils import TestClient, TestServer

from pipeline.config import Config
from pipeline.server import create_app
from tests.server.server_helpers import make_config


@pytest.fixture
def config(tmp_path) -> Config:
    return make_config(tmp_path)


@pytest.fixture
async def client(config):
    async with TestClient(TestServer(create_app(config))) as test_client:
        yield test_client


@pytest.fixture(autouse=True)
def _dev_fake_engine(monkeypatch):
    """Until pipeline.engine.Engine exists: ZKPIPE_TEST_FAKE_ENGINE=path/to/fake_engine.py."""
    fake = os.environ.get("ZKPIPE_TEST_FAKE_ENGINE")
    if fake:
        import importlib.util

        spec = importlib.util.spec_from_file_location("fake_engine", fake)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        monkeypatch.setattr("pipeline.server.engine_adapter.engine_class", lambda: module.Engine)
