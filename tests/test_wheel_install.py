"""The project as a user installs it: a wheel built from the sdist, in a fresh venv.

The kernel sources ship inside the package (issue 14.1) and every kernel compiles from an
installed wheel; a wheel built with its ahead-of-time kernels (setup.py, aot_build) ships a
binary for every unit and curve, each recording the digest of the sources it was built from,
and the run-time loader takes them without starting a compiler (issue 17.1).
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

CHECK_PREBUILT_IN_VENV = """
import hashlib, json, os
from pathlib import Path
import pipeline
from pipeline.curves import CURVES
from pipeline.backends.cuda import kernels
from pipeline.backends.cuda.kernel_binaries import PREBUILT_DIR, find_prebuilt, read_manifest
from pipeline.backends.cuda.kernel_sources import CUDA_SRC, DEFAULT_OPTIONS, source_digest

def no_compiler(*args, **kwargs):
    raise AssertionError("a compiler was asked for although prebuilt kernels fit sm_90")

kernels.compile_jobs = no_compiler
manifest = read_manifest()
digests = {(c.name, u): source_digest(u, kernels.unit_headers(c), DEFAULT_OPTIONS, exprs)
           for c in CURVES for u, exprs in kernels.UNITS.items()}
built = kernels.build_units(CURVES, "sm_90", cache_dir=Path(os.environ["EMPTY_CACHE"]))
names_in_cubins = all(b.lowered[e].encode() in b.cubin for (_, u), b in built.items() for e in kernels.UNITS[u])
print(json.dumps({
    "package": pipeline.__file__, "prebuilt_dir": str(PREBUILT_DIR), "sources": str(CUDA_SRC),
    "shipped": sorted([e["curve"], e["unit"], e["arch"]] for e in manifest["binaries"]),
    "digests_match": all(e["source_sha256"] == digests[(e["curve"], e["unit"])] for e in manifest["binaries"]),
    "cubins_match": all(hashlib.sha256((PREBUILT_DIR / e["file"]).read_bytes()).hexdigest() == e["cubin_sha256"]
                        for e in manifest["binaries"]),
    "origins": sorted({b.origin for b in built.values()}),
    "names_in_cubins": names_in_cubins,
    "sm_89_binary": find_prebuilt("bn128", "ntt", kernels.unit_headers(CURVES[0]), kernels.UNITS["ntt"], "sm_89")
                    is not None,
}))
"""


def test_an_installed_wheel_compiles_every_kernel_from_its_own_sources(wheel_compiled_kernels):
    venv = wheel_compiled_kernels["python"].parents[1]
    assert Path(wheel_compiled_kernels["package"]).is_relative_to(venv)
    sources = Path(wheel_compiled_kernels["sources"])
    assert sources.is_relative_to(venv) and (sources / "programs" / "msm_g1.cu").is_file()
    assert not Path(wheel_compiled_kernels["package"]).is_relative_to(REPO)
    origins = wheel_compiled_kernels["origins"]
    assert len(origins) == 8 and set(origins.values()) == {"nvrtc"}, origins


def test_the_sdist_and_the_wheel_carry_the_kernel_sources(sdist_tree, wheel_compiled_kernels):
    from pipeline.backends.cuda.kernel_sources import CUDA_SRC

    ours = sorted(p.relative_to(CUDA_SRC).as_posix() for p in CUDA_SRC.rglob("*.cu*"))
    assert ours and all((sdist_tree / "pipeline" / "cuda_src" / name).is_file() for name in ours)
    with zipfile.ZipFile(wheel_compiled_kernels["wheel"]) as whl:
        names = set(whl.namelist())
    assert all(f"pipeline/cuda_src/{name}" in names for name in ours)
    assert not any("/prebuilt/" in n for n in names), "ZKPIPE_KERNEL_ARCHS=none must ship no binaries"


def test_the_wheel_ships_prebuilt_kernels_that_load_without_a_compiler(
        sdist_tree, sm90_kernel_cache, wheel_compiled_kernels, tmp_path):
    from pipeline.backends.cuda.kernels import UNITS
    from tests.wheel_helpers import build_wheel, run_in, venv_with_wheel

    # Built through the NVRTC cache the plain wheel's venv filled: same sources, nothing recompiled.
    wheel = build_wheel(sdist_tree, tmp_path / "wheel", "sm_90", sm90_kernel_cache)
    with zipfile.ZipFile(wheel) as whl:
        manifest = json.loads(whl.read("pipeline/backends/cuda/prebuilt/manifest.json"))
        assert all(f"pipeline/backends/cuda/prebuilt/{e['file']}" in whl.namelist() for e in manifest["binaries"])
    python = venv_with_wheel(tmp_path / "venv", wheel)
    (tmp_path / "empty-cache").mkdir()
    report = json.loads(run_in(python, CHECK_PREBUILT_IN_VENV, cwd=tmp_path,
                               env={"EMPTY_CACHE": str(tmp_path / "empty-cache")}).strip().splitlines()[-1])
    assert Path(report["prebuilt_dir"]).is_relative_to(tmp_path / "venv")
    expected = sorted([c, u, "sm_90"] for c in ("bn128", "bls12381") for u in UNITS)
    assert report["shipped"] == expected
    assert report["digests_match"] and report["cubins_match"] and report["names_in_cubins"]
    assert report["origins"] == ["prebuilt"]
    assert not report["sm_89_binary"], "an sm_90 cubin must not be offered to an sm_89 GPU"
    assert not any((tmp_path / "empty-cache").iterdir()), "loading prebuilt kernels wrote the NVRTC cache"
