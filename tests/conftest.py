"""Shared test fixtures: one table of curves, and the snarkjs fixture folders."""
from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from pipeline.curves import BLS12_381, BN254

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
CURVE_NAMES = ("bn128", "bls12381")
CIRCUITS = ("multiplier", "bits", "poseidon2", "chain_2e8", "chain_2e10")


@pytest.fixture(params=[BN254, BLS12_381], ids=lambda c: c.name)
def curve(request):
    return request.param


def enable_asyncio_debug() -> None:
    """STYLE: async tests run in debug mode (never-awaited coroutines, callbacks slower than 100 ms)."""
    loop = asyncio.get_running_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = 0.1


def fixture_dir(curve_name: str, circuit: str) -> Path:
    return FIXTURES / curve_name / circuit


def without_host_points(zkey):
    """``zkey`` as the GPU setup leaves it with ``download_points=False``: placeholders for its points
    (Groth16Zkey.points_on_host False)."""
    from dataclasses import replace

    from pipeline.formats.types import POINT_SECTIONS, point_placeholders

    placeholders = point_placeholders({name: getattr(zkey, f"points_{name}").shape for name in POINT_SECTIONS})
    return replace(zkey, points_on_host=False, **{f"points_{name}": a for name, a in placeholders.items()})


def snarkjs_verify(vk: Path, public: Path, proof: Path) -> bool:
    """The external verdict: snarkjs groth16 verify (through the project's fixture script)."""
    script = REPO / "tools" / "make_fixtures.sh"
    out = subprocess.run(["bash", str(script), "--verify", str(vk), str(public), str(proof)],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "NODE_NO_WARNINGS": "1"})
    return out.returncode == 0


# -- the project as a wheel (tests/wheel_helpers.py) -------------------------------------------------
SM90_COMPILE_IN_VENV = """
import json, os, pipeline
from pathlib import Path
from pipeline.curves import BN254, BLS12_381
from pipeline.backends.cuda.kernels import build_units
from pipeline.backends.cuda.kernel_sources import CUDA_SRC
built = build_units([BN254, BLS12_381], "sm_90", cache_dir=Path(os.environ["KERNEL_CACHE"]), prebuilt_dir=None)
print(json.dumps({"package": pipeline.__file__, "sources": str(CUDA_SRC),
                  "origins": {f"{c}/{u}": b.origin for (c, u), b in built.items()}}))
"""


def nvrtc_or_skip():
    try:
        from pipeline.backends.cuda.nvrtc_build import nvrtc_version

        return nvrtc_version()
    except Exception as exc:  # ImportError, or the shared library missing
        pytest.skip(f"NVRTC library cannot be loaded ({exc}): kernels not compiled")


@pytest.fixture(scope="session")
def sdist_tree(tmp_path_factory):
    """The checkout's sdist, unpacked (what pip builds a wheel from)."""
    from tests.wheel_helpers import build_sdist_tree

    return build_sdist_tree(tmp_path_factory.mktemp("sdist"))


@pytest.fixture(scope="session")
def sm90_kernel_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("kernel-cache")


@pytest.fixture(scope="session")
def wheel_compiled_kernels(sdist_tree, sm90_kernel_cache, tmp_path_factory):
    """A wheel without prebuilt kernels, installed in a fresh venv, compiles every unit of both
    curves for sm_90 through NVRTC from the sources it installed. This is the test session's one
    full compile: it fills ``sm90_kernel_cache``, which the in-process compile tests and the
    AOT wheel build then read."""
    nvrtc_or_skip()
    import json

    from tests.wheel_helpers import build_wheel, run_in, venv_with_wheel

    wheel = build_wheel(sdist_tree, tmp_path_factory.mktemp("wheel-plain"), "none", sm90_kernel_cache)
    python = venv_with_wheel(tmp_path_factory.mktemp("venv") / "plain", wheel)
    out = run_in(python, SM90_COMPILE_IN_VENV, cwd=tmp_path_factory.mktemp("cwd"),
                 env={"KERNEL_CACHE": str(sm90_kernel_cache)})
    return {"python": python, "wheel": wheel, **json.loads(out.strip().splitlines()[-1])}

def snarkjs_verify_many(items: list[tuple[Path, list, dict]]) -> list[bool]:
    """snarkjs's verdict on many (vk.json, public signals, proof) at once: one node process, one curve build."""
    import json
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json") as fh:
        json.dump([{"vk": str(vk), "public": public, "proof": proof} for vk, public, proof in items], fh)
        fh.flush()
        out = subprocess.run(["node", str(REPO / "tools" / "snarkjs_verify_many.mjs"), fh.name], cwd=REPO,
                             capture_output=True, text=True, timeout=300, env={**os.environ, "NODE_NO_WARNINGS": "1"})
    verdicts = out.stdout.split("\n")[:len(items)]
    if len(verdicts) != len(items):
        raise RuntimeError(f"snarkjs_verify_many: {out.stderr.strip()[-2000:]}")
    return [v == "ok" for v in verdicts]
