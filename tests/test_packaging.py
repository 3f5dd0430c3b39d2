"""The container and CI install the project the same way, so CI tests the image's install step."""
from __future__ import annotations

from tests.conftest import REPO


def test_dockerfile_and_ci_share_the_install_script():
    dockerfile = (REPO / "Dockerfile").read_text()
    ci_run = (REPO / ".ci" / "run").read_text()
    assert "RUN bash .ci/install " in dockerfile
    assert "bash .ci/install " in ci_run


def test_dockerfile_runs_the_service_as_a_non_root_user_with_a_healthcheck():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "USER zkpipe" in dockerfile
    assert "HEALTHCHECK" in dockerfile and "/healthz" in dockerfile
    assert '"zkpipe", "serve"' in dockerfile


def test_readme_names_the_test_command_ci_runs():
    readme = (REPO / "README.md").read_text()
    assert "python3 -m pytest" in readme and "npm ci" in readme


def test_license_is_apache_2_in_the_pep_639_form():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"  # an SPDX expression, not the deprecated {text = ...} table
    assert project["license-files"] == ["LICENSE"]
    license_text = (REPO / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "COPY pyproject.toml README.md LICENSE" in (REPO / "Dockerfile").read_text()  # the build needs it
