"""docs/openapi.yaml matches the application: the same routes, 401 on every route behind the token."""
from __future__ import annotations

import yaml

from pipeline.server import create_app
from tests.conftest import REPO
from tests.server.server_helpers import make_config

METHODS = {"get", "post", "put", "delete", "patch"}


def documented() -> dict[tuple[str, str], dict]:
    spec = yaml.safe_load((REPO / "docs" / "openapi.yaml").read_text())
    return {(method.upper(), path): op for path, item in spec["paths"].items()
            for method, op in item.items() if method in METHODS}


def test_every_route_of_the_app_is_documented_and_nothing_else(tmp_path):
    app = create_app(make_config(tmp_path))
    served = {(route.method, route.resource.canonical) for route in app.router.routes() if route.method != "HEAD"}
    assert served == set(documented())


def test_every_route_but_healthz_documents_401():
    for (method, path), op in documented().items():
        if op.get("security") == []:
            assert path == "/healthz"
            continue
        assert "401" in op["responses"], f"{method} {path} does not list 401"
