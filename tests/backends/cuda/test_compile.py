"""CI without a GPU: every kernel instantiation compiles through NVRTC for sm_90, both curves.

The compile itself runs once per session in a fresh venv from the installed wheel
(``wheel_compiled_kernels``); here its cubins load back from the NVRTC disk cache in process.
Skipped only where the NVRTC library (cuda-python + nvidia-cuda-nvrtc) cannot be loaded.
"""
from __future__ import annotations

import pytest

from pipeline.curves import BLS12_381, BN254
from tests.conftest import nvrtc_or_skip


@pytest.fixture(scope="module")
def kernel_cache(wheel_compiled_kernels, sm90_kernel_cache):
    """Every unit compiled once per session, from the installed wheel (tests/conftest.py)."""
    return sm90_kernel_cache


@pytest.fixture(scope="module")
def built(kernel_cache):
    from pipeline.backends.cuda.kernels import build_units

    return build_units([BN254, BLS12_381], "sm_90", cache_dir=kernel_cache, prebuilt_dir=None)


def test_a_second_build_loads_every_unit_from_the_cache_in_process(built, kernel_cache, monkeypatch):
    from pipeline.backends.cuda import kernels

    def no_pool(*args, **kwargs):
        raise AssertionError("a build with every unit cached started compiler threads")

    monkeypatch.setattr(kernels, "ThreadPoolExecutor", no_pool)
    again = kernels.build_units([BN254, BLS12_381], "sm_90", cache_dir=kernel_cache, prebuilt_dir=None)
    assert again.keys() == built.keys()
    assert all(b.from_cache and b.cubin == built[k].cubin for k, b in again.items())


def assert_every_expression_compiled(built: dict, curve_name: str, units: dict) -> None:
    """Each unit of ``units`` is a cubin holding each of its name expressions' kernels."""
    for unit, exprs in units.items():
        b = built[(curve_name, unit)]
        assert b.cubin[:4] == b"\x7fELF", f"{unit}: not a cubin"
        for expr in exprs:
            assert b.lowered[expr].encode() in b.cubin, f"{unit}: {expr} missing from the cubin"


@pytest.mark.parametrize("curve_name", [BN254.name, BLS12_381.name])
def test_every_kernel_compiles_for_sm90(built, curve_name):
    from pipeline.backends.cuda.kernels import UNITS

    assert_every_expression_compiled(built, curve_name, UNITS)


def test_compile_error_raises_with_nvrtc_log(tmp_path, monkeypatch):
    nvrtc_or_skip()
    from pipeline.backends.cuda import nvrtc_build
    from pipeline.backends.cuda.errors import CompileError

    (tmp_path / "programs").mkdir()
    (tmp_path / "programs" / "broken.cu").write_text("__global__ void k() { this is not C++; }\n")
    monkeypatch.setattr(nvrtc_build, "CUDA_SRC", tmp_path)
    with pytest.raises(CompileError, match="error"):
        nvrtc_build.compile_unit("broken", {}, ("k",), cache_dir=tmp_path / "cache")


def test_generated_header_rejects_nothing_and_names_both_fields():
    from pipeline.backends.cuda.constants import curve_header

    for curve in (BN254, BLS12_381):
        text = curve_header(curve)
        assert "struct fr_params" in text and "struct fq_params" in text
        assert f"static constexpr int N = {2 * curve.fq.limbs};" in text


def test_a_unit_compiles_from_another_source_tree_and_is_cached_apart(tmp_path):
    """bench/kernel_ab.py's earlier kernels: ``root`` names the tree; the cache keys on its contents."""
    nvrtc_or_skip()
    from pipeline.backends.cuda import nvrtc_build

    for name, value in (("before", 1), ("after", 2)):
        (tmp_path / name / "programs").mkdir(parents=True)
        (tmp_path / name / "programs" / "tiny.cu").write_text(f"__global__ void k(int* x) {{ *x = {value}; }}\n")
    cache = tmp_path / "cache"
    before = nvrtc_build.compile_unit("tiny", {}, ("k",), cache_dir=cache, root=tmp_path / "before")
    after = nvrtc_build.compile_unit("tiny", {}, ("k",), cache_dir=cache, root=tmp_path / "after")
    assert not before.from_cache and not after.from_cache and before.cubin != after.cubin
    again = nvrtc_build.load_cached_unit("tiny", {}, ("k",), cache_dir=cache, root=tmp_path / "before")
    assert again is not None and again.from_cache and again.cubin == before.cubin


def test_units_of_another_source_tree_never_come_from_the_shipped_binaries(tmp_path, monkeypatch):
    from pipeline.backends.cuda import kernels

    def shipped(*args, **kwargs):
        raise AssertionError("the shipped binaries are the package's own sources")

    roots = []
    monkeypatch.setattr(kernels, "find_prebuilt", shipped)
    monkeypatch.setattr(kernels, "compile_jobs",
                        lambda jobs, cache_dir, parallel, root: roots.append(root) or {key: key for key in jobs})
    built = kernels.build_units(BN254, units=("msm_g1",), source_root=tmp_path)
    assert roots == [tmp_path] and list(built) == [("bn128", "msm_g1")]
