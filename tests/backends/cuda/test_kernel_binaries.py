"""The prebuilt-kernel loader (no compiler, no GPU): which shipped binary a GPU gets, and when
none is taken (sources changed since the build, a damaged file, another generation).

The binaries here are stand-in bytes with real manifests: the loader never looks inside a cubin,
only at its recorded digests. Real cubins are checked in tests/test_wheel_install.py.
"""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from pipeline.backends.cuda import kernels
from pipeline.backends.cuda.kernel_binaries import (MANIFEST_FORMAT, MANIFEST_NAME, binary_name, find_prebuilt,
                                                    runs_on)
from pipeline.backends.cuda.kernel_sources import CUDA_SRC, DEFAULT_OPTIONS, source_digest
from pipeline.curves import BLS12_381, BN254, CURVES


def write_prebuilt(directory, archs, curves=CURVES, sources=CUDA_SRC):
    """A manifest as aot_build writes it, over stand-in cubins (their names and digests real)."""
    directory.mkdir(parents=True, exist_ok=True)
    entries = []
    for arch in archs:
        for curve in curves:
            for unit, exprs in kernels.UNITS.items():
                name = binary_name(curve.name, unit, arch)
                blob = f"cubin {name}".encode()
                (directory / name).write_bytes(blob)
                entries.append({"curve": curve.name, "unit": unit, "arch": arch, "file": name,
                                "source_sha256": source_digest(unit, kernels.unit_headers(curve), DEFAULT_OPTIONS,
                                                               exprs, sources),
                                "cubin_sha256": hashlib.sha256(blob).hexdigest(),
                                "lowered": {e: f"_Z{i}" for i, e in enumerate(exprs)}, "compile_s": 1.0})
    (directory / MANIFEST_NAME).write_text(json.dumps({"format": MANIFEST_FORMAT, "binaries": entries}))
    return directory


def find(directory, device_arch, curve=BN254, unit="msm_g1", sources=CUDA_SRC):
    return find_prebuilt(curve.name, unit, kernels.unit_headers(curve), kernels.UNITS[unit], device_arch,
                         directory=directory, sources=sources)


@pytest.mark.parametrize("binary, device, ok", [
    ("sm_80", "sm_80", True), ("sm_80", "sm_86", True), ("sm_80", "sm_89", True), ("sm_86", "sm_80", False),
    ("sm_90", "sm_90", True), ("sm_80", "sm_90", False), ("sm_90", "sm_100", False), ("sm_100", "sm_103", True),
    ("sm_120", "sm_121", True), ("sm_100", "sm_120", False),
])
def test_a_cubin_runs_on_its_own_major_generation_at_its_minor_or_later(binary, device, ok):
    assert runs_on(binary, device) is ok


def test_each_gpu_gets_its_own_or_the_nearest_compatible_binary(tmp_path):
    prebuilt = write_prebuilt(tmp_path / "prebuilt", ("sm_80", "sm_86", "sm_90"))
    assert find(prebuilt, "sm_90").arch == "sm_90"
    assert find(prebuilt, "sm_89").arch == "sm_86"
    assert find(prebuilt, "sm_80").arch == "sm_80"
    assert find(prebuilt, "sm_75") is None and find(prebuilt, "sm_120") is None
    got = find(prebuilt, "sm_90", BLS12_381, "ntt")
    assert got.origin == "prebuilt" and got.from_cache and got.compile_s == 0.0
    assert got.cubin == b"cubin bls12381-ntt-sm_90.cubin" and set(got.lowered) == set(kernels.UNITS["ntt"])


def test_a_binary_of_other_sources_or_damaged_is_not_taken(tmp_path):
    prebuilt = write_prebuilt(tmp_path / "prebuilt", ("sm_90",))
    edited = tmp_path / "cuda_src"
    shutil.copytree(CUDA_SRC, edited)
    assert find(prebuilt, "sm_90", sources=edited) is not None  # a copy of the same sources
    with open(edited / "msm" / "pippenger.cuh", "a") as fh:
        fh.write("\n// edited after the build\n")
    assert find(prebuilt, "sm_90", sources=edited) is None
    (prebuilt / binary_name("bn128", "msm_g1", "sm_90")).write_bytes(b"truncated")
    assert find(prebuilt, "sm_90") is None
    assert find(prebuilt, "sm_90", unit="ntt") is not None
    assert find(tmp_path / "no-such-folder", "sm_90") is None


def test_build_units_takes_prebuilt_binaries_without_a_compiler(tmp_path, monkeypatch):
    prebuilt = write_prebuilt(tmp_path / "prebuilt", ("sm_90",))

    def no_compiler(*args, **kwargs):
        raise AssertionError("compiler asked for although every unit is prebuilt")

    monkeypatch.setattr(kernels, "compile_jobs", no_compiler)
    built = kernels.build_units(CURVES, "sm_90", cache_dir=tmp_path / "cache", prebuilt_dir=prebuilt)
    assert {b.origin for b in built.values()} == {"prebuilt"} and len(built) == 2 * len(kernels.UNITS)
    assert not (tmp_path / "cache").exists()


def test_build_units_compiles_only_what_no_binary_covers(tmp_path, monkeypatch):
    prebuilt = write_prebuilt(tmp_path / "prebuilt", ("sm_90",), curves=(BN254,))
    asked = {}

    def fake_compile(jobs, cache_dir=None, parallel=True, root=None):
        asked.update(jobs)
        return {key: kernels.BuiltUnit(unit, arch, b"", {}, 0.5, False, "") for key, (unit, _, _, arch) in jobs.items()}

    monkeypatch.setattr(kernels, "compile_jobs", fake_compile)
    built = kernels.build_units(CURVES, "sm_90", prebuilt_dir=prebuilt)
    assert sorted(asked) == sorted(("bls12381", u) for u in kernels.UNITS)
    assert {built[("bn128", u)].origin for u in kernels.UNITS} == {"prebuilt"}
    assert {built[("bls12381", u)].origin for u in kernels.UNITS} == {"nvrtc"}


def test_the_ahead_of_time_build_writes_what_the_loader_takes(tmp_path, monkeypatch):
    """aot_build's manifest, over a stand-in compiler: every unit, curve and arch, found again."""
    from pipeline.backends.cuda import aot_build, nvrtc_build

    def fake_compile(jobs, cache_dir=None, parallel=True, root=None):
        return {key: kernels.BuiltUnit(unit, arch, f"{key}".encode(), {e: f"_Z{e}" for e in exprs}, 0.0, True, "")
                for key, (unit, exprs, _, arch) in jobs.items()}

    monkeypatch.setattr(kernels, "compile_jobs", fake_compile)
    monkeypatch.setattr(nvrtc_build, "nvrtc_version", lambda: (13, 0))
    manifest = aot_build.build_prebuilt(tmp_path / "prebuilt", ("sm_80", "sm_90"))
    assert len(manifest["binaries"]) == 2 * 2 * len(kernels.UNITS)
    for curve in CURVES:
        for unit in kernels.UNITS:
            got = find(tmp_path / "prebuilt", "sm_90", curve, unit)
            assert got.cubin == f"{(curve.name, unit, 'sm_90')}".encode() and got.origin == "prebuilt"
            assert find(tmp_path / "prebuilt", "sm_86", curve, unit).arch == "sm_80"
    assert aot_build.archs_from("none") == () and aot_build.archs_from("sm_90, sm_100") == ("sm_90", "sm_100")
