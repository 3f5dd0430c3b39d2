"""On the GPU: prebuilt kernels load on the device, and ``zkpipe prove --backend cuda`` in a new
process gives proofs the verifier accepts, saying which kernels it used and where time went."""
from __future__ import annotations

import subprocess
import sys

import pytest

from pipeline.curves import BLS12_381, BN254
from tests.conftest import REPO, fixture_dir

pytestmark = pytest.mark.gpu


def test_prebuilt_cubins_for_this_gpu_load_on_it_without_a_compiler(cuda_backend, tmp_path, monkeypatch):
    from pipeline.backends.cuda import kernels
    from pipeline.backends.cuda._bindings import driver
    from pipeline.backends.cuda.aot_build import build_prebuilt
    from pipeline.backends.cuda.errors import check

    from pipeline.backends.cuda.kernel_binaries import PREBUILT_DIR, read_manifest

    arch = cuda_backend.device.arch
    # The binaries carried to the GPU host come from the same build_prebuilt on the dev box (the
    # wheel's): test those. Building them here instead costs ~135 s of NVRTC (session 17).
    shipped = read_manifest(PREBUILT_DIR)
    prebuilt = PREBUILT_DIR if shipped and arch in shipped["archs"] else tmp_path / "prebuilt"
    if prebuilt != PREBUILT_DIR:
        build_prebuilt(prebuilt, (arch,), cache_dir=cuda_backend.kernel_cache_dir)

    def no_compiler(*args, **kwargs):
        raise AssertionError("compiler asked for although this GPU's kernels are prebuilt")

    monkeypatch.setattr(kernels, "compile_jobs", no_compiler)
    built = kernels.build_units([BN254, BLS12_381], arch, prebuilt_dir=prebuilt)
    cuda_backend.device.activate()
    for (curve, unit), b in built.items():
        assert b.origin == "prebuilt", (curve, unit)
        module = check(driver.cuModuleLoadData(b.cubin), "cuModuleLoadData", unit)
        try:
            for expr, lowered in b.lowered.items():
                check(driver.cuModuleGetFunction(module, lowered.encode()), "cuModuleGetFunction", expr)
        finally:
            driver.cuModuleUnload(module)


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_prove_on_cuda_in_a_new_process_verifies(cuda_backend, tmp_path, curve_name):
    folder = fixture_dir(curve_name, "chain_2e10")
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    out = subprocess.run([sys.executable, "-m", "pipeline", "prove", str(folder / "circuit_final.zkey"),
                          str(folder / "witness.wtns"), str(proof), str(public), "--backend", "cuda", "--timings"],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert " on cuda" in out.stderr and "(kernels: " in out.stderr and "total, process start to exit" in out.stderr
    print(out.stderr)  # the --timings table, for the GPU run's log
    verdict = subprocess.run([sys.executable, "-m", "pipeline", "verify", str(folder / "vk.json"), str(public),
                              str(proof)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert verdict.returncode == 0, verdict.stdout + verdict.stderr
