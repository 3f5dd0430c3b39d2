"""Fixtures of the server tests: a config over a keys folder of snarkjs fixtures, a test client."""
from __future__ import annotations


import pytest
from aiohttp.test_utils import TestClient, TestServer

from pipeline.config import Config
from pipeline.server import create_app
from tests.conftest import enable_asyncio_debug
from tests.server.server_helpers import make_config


@pytest.fixture
def config(tmp_path) -> Config:
    return make_config(tmp_path)


@pytest.fixture
async def client(config):
    async with TestClient(TestServer(create_app(config))) as test_client:
        yield test_client


@pytest.fixture(autouse=True)
async def asyncio_debug_mode():
    enable_asyncio_debug()
    yield
