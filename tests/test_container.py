"""The container image, built from the Dockerfile and run: the CPU demo, and `zkpipe serve` + one job.

Builds with tools/container_build.sh (buildah from Debian's packages, vfs storage, chroot
isolation, as root; a debootstrap'd Debian base where no registry answers). Minutes, and it needs
Debian's mirror and PyPI, so it is not part of CI's run: ``python3 -m pytest -m container``.
``ZKPIPE_TEST_IMAGE=localhost/zkpipe:dev`` uses an image built before instead of building one.
Where no builder works here, every test skips with the reason.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO, snarkjs_verify
from tests.server.serve_process import free_port

pytestmark = pytest.mark.container
BUILDAH = ["buildah", "--storage-driver", "vfs"]
BASE = "localhost/zkpipe-base:bookworm"
TAG = "localhost/zkpipe:test"
BUILD_TIMEOUT_S = 45 * 60


def builder_problem() -> str | None:
    """Why no image can be built here, or None."""
    if not sys.platform.startswith("linux"):
        return f"container builds need Linux, this is {sys.platform}"
    if shutil.which("buildah") is None:
        return "buildah is not installed (apt-get install -y buildah debootstrap)"
    if os.geteuid() != 0:
        return f"buildah with vfs storage and chroot isolation runs as root here; this is uid {os.geteuid()}"
    info = subprocess.run([*BUILDAH, "info"], capture_output=True, text=True, timeout=120)
    if info.returncode != 0:
        return f"buildah does not work here: {(info.stderr.strip().splitlines() or ['?'])[-1]}"
    has_base = subprocess.run([*BUILDAH, "inspect", "--type", "image", BASE], capture_output=True).returncode == 0
    if not (os.environ.get("BASE_IMAGE") or has_base or shutil.which("debootstrap")):
        return "no base image: set BASE_IMAGE to a pullable Debian/Ubuntu image or install debootstrap"
    return None


@pytest.fixture(scope="module")
def image() -> str:
    given = os.environ.get("ZKPIPE_TEST_IMAGE")
    problem = builder_problem()
    if problem:
        pytest.skip(problem)
    if given:
        return given
    build = subprocess.run(["bash", str(REPO / "tools" / "container_build.sh"), TAG], cwd=REPO, capture_output=True,
                           text=True, timeout=BUILD_TIMEOUT_S)
    assert build.returncode == 0, f"the image did not build:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}"
    return TAG


@pytest.fixture
def container(image):
    made = subprocess.run([*BUILDAH, "from", "--pull-never", image], capture_output=True, text=True, check=True)
    name = made.stdout.strip().splitlines()[-1]
    yield name
    subprocess.run([*BUILDAH, "rm", name], capture_output=True)


def image_config(container: str) -> dict:
    out = subprocess.run([*BUILDAH, "inspect", "--type", "container", container], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def run_in(container: str, command: str, *options: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``command`` through sh in the container, as the image's user, on the host's network."""
    return subprocess.run([*BUILDAH, "run", "--isolation", "chroot", *options, container, "--", "sh", "-c", command],
                          capture_output=True, text=True, timeout=timeout)


def test_the_cpu_demo_runs_in_the_image_as_its_user(container):
    out = run_in(container, "id -un; zkpipe --version; zkpipe demo --curve bn128 --backend auto")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "zkpipe" and lines[1].startswith("zkpipe ")
    assert "bn128" in lines[2] and "proof VALID" in lines[2]
    assert "backend cpu (auto: CUDA unavailable" in lines[2] or "backend cuda (auto: a GPU answered" in lines[2]


SERVE_AND_ONE_JOB = """
set -u
{entrypoint} > /out/serve.log 2>&1 &
server=$!
python3 - <<'PY'
import time, urllib.request, os
url = f"http://127.0.0.1:{{os.environ['ZKPIPE_PORT']}}/healthz"
for _ in range(240):
    try:
        urllib.request.urlopen(url, timeout=2)
        break
    except OSError:
        time.sleep(0.5)
PY
{healthcheck}
echo "healthcheck $?"
zkpipe submit --url "http://127.0.0.1:$ZKPIPE_PORT" --key chain_bn128 --out /out/proofs \\
    /opt/zkpipe/src/pipeline/examples/chain_bn128/witness.wtns
echo "submit $?"
python3 -c "import os, urllib.request; open('/out/vk.json', 'wb').write(urllib.request.urlopen(
    f'http://127.0.0.1:{{os.environ[\\"ZKPIPE_PORT\\"]}}/v1/keys/chain_bn128/verification_key').read())"
kill -TERM $server
wait $server
echo "serve $?"
"""


def test_serve_in_the_image_proves_one_job_that_snarkjs_accepts(container, tmp_path):
    config = image_config(container)
    entrypoint = config["OCIv1"]["config"]["Entrypoint"]
    healthcheck = config["Docker"]["config"]["Healthcheck"]["Test"]
    assert healthcheck[0] == "CMD-SHELL" and entrypoint[-2:] == ["zkpipe", "serve"]
    tmp_path.chmod(0o777)  # the image's user writes here
    script = SERVE_AND_ONE_JOB.format(entrypoint=shlex.join(entrypoint), healthcheck=healthcheck[1])
    port = free_port()
    out = run_in(container, script, "--env", f"ZKPIPE_PORT={port}", "--env", "ZKPIPE_HOST=127.0.0.1",
                 "--env", "TINI_SUBREAPER=1", "-v", f"{tmp_path}:/out")
    serve_log = (tmp_path / "serve.log").read_text() if (tmp_path / "serve.log").exists() else "(no serve.log)"
    assert out.returncode == 0, out.stdout + out.stderr + serve_log
    lines = out.stdout.splitlines()
    assert "healthcheck 0" in lines and "submit 0" in lines, out.stdout + out.stderr + serve_log
    assert "serve 0" in lines, serve_log  # SIGTERM through tini: a clean stop
    assert f"listening on http://127.0.0.1:{port}" in serve_log and "job_done" not in serve_log
    assert " done: partitions=1" in serve_log  # the job's log line
    proofs = tmp_path / "proofs"
    assert snarkjs_verify(tmp_path / "vk.json", proofs / "public-000.json", proofs / "proof-000.json")
