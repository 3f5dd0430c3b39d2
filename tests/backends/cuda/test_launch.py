"""Launch constants and test op codes have one source, pipeline/backends/cuda/launch.py: the
generated header carries exactly its values, cuda_src/ declares none of them, the compiled C++
sees the same numbers (static_asserts through NVRTC; no GPU needed), and the header is part
of every unit's cache key. That every kernel still compiles is test_compile.py."""
from __future__ import annotations

import re

import pytest

from pipeline.backends.cuda import kernel_sources, launch
from pipeline.backends.cuda.constants import HEADER_NAME, curve_header
from pipeline.curves import BLS12_381, BN254
from tests.conftest import nvrtc_or_skip

CUDA_SRC = kernel_sources.CUDA_SRC
ENUMS = {"FieldOp": ("OP_", launch.FIELD_OPS), "PointOp": ("PT_", launch.POINT_OPS)}


def expected_values() -> dict[str, int]:
    values = dict(launch.IN_HEADER)
    for prefix, members in ENUMS.values():
        values.update({f"{prefix}{m.upper()}": i for i, m in enumerate(members)})
    return values


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_the_generated_header_carries_the_python_values(curve):
    header = curve_header(curve)
    consts = {m[1]: int(m[2]) for m in re.finditer(r"^static constexpr int (\w+) = (\d+);", header, re.M)}
    assert consts == launch.IN_HEADER
    for name, (prefix, members) in ENUMS.items():
        body = re.search(rf"enum {name} : int {{(.*?)}};", header)[1]
        assert [tuple(x.strip().split(" = ")) for x in body.split(",")] == \
            [(f"{prefix}{m.upper()}", str(i)) for i, m in enumerate(members)]
    assert launch.SCAN_TILE == launch.SCAN_THREADS * launch.SCAN_PER_THREAD


def test_cuda_src_declares_none_of_them():
    names = [*launch.IN_HEADER, *ENUMS]
    pattern = re.compile(rf"(constexpr\s+\w+\s+|#define\s+|enum\s+)({'|'.join(names)})\b")
    found = [f"{p.relative_to(CUDA_SRC)}: {m[0]}" for p in CUDA_SRC.rglob("*.cu*")
             for m in pattern.finditer(p.read_text())]
    assert found == []


def test_no_preprocessor_directive_reads_them():
    """They are constexpr ints, not macros: an #if naming one reads 0 whatever its value (session 40 found the NTT's
    dependent wait, behind `#if NTT_DEPENDENT_BUILT`, never compiled in)."""
    pattern = re.compile(rf"^\s*#\s*(if|elif)\b.*\b({'|'.join(launch.IN_HEADER)})\b", re.M)
    found = [f"{p.relative_to(CUDA_SRC)}: {m[0].strip()}" for p in CUDA_SRC.rglob("*.cu*")
             for m in pattern.finditer(p.read_text())]
    assert found == []


def _ptx(program: str, header: str) -> str:
    """``program`` compiled by NVRTC to sm_90 PTX, with the real headers and ``header`` as the generated one."""
    from pipeline.backends.cuda import nvrtc_build
    from pipeline.backends.cuda.errors import check

    nvrtc = nvrtc_build.nvrtc_module()
    prog = check(nvrtc.nvrtcCreateProgram(program.encode(), b"probe.cu", 1, [header.encode()], [HEADER_NAME.encode()]),
                 "nvrtcCreateProgram")
    try:
        opts = ["--gpu-architecture=compute_90", f"--include-path={CUDA_SRC}", *nvrtc_build.DEFAULT_OPTIONS]
        check(nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts]), "nvrtcCompileProgram")
        buf = bytearray(check(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize"))
        check(nvrtc.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf.rstrip(b"\0").decode()


@pytest.mark.parametrize("built", [0, 1])
def test_the_ntt_passes_wait_for_the_grid_before_exactly_when_built(built):
    """ntt_after_prior_grid (the head of ntt_pass and ntt_pass_pairs) holds griddepcontrol's trigger and wait when
    launch.NTT_DEPENDENT_BUILT is set, and nothing otherwise."""
    nvrtc_or_skip()
    name = "NTT_DEPENDENT_BUILT"
    header = curve_header(BN254).replace(f"{name} = {launch.IN_HEADER[name]};", f"{name} = {built};")
    assert f"{name} = {built};" in header
    ptx = _ptx('#include "curve_types.cuh"\n#include "ntt/ntt.cuh"\n'
               'extern "C" __global__ void probe() { ntt_after_prior_grid(); }\n', header)
    assert ptx.count("griddepcontrol.wait") == built
    assert ptx.count("griddepcontrol.launch_dependents") == built


def test_the_header_is_part_of_the_cache_key():
    from pipeline.backends.cuda.nvrtc_build import cache_key

    exprs, header = ("scan_apply",), curve_header(BN254)
    changed = header.replace(f"SCAN_THREADS = {launch.SCAN_THREADS};", "SCAN_THREADS = 512;")
    assert changed != header
    try:
        keys = {cache_key("msm_g1", {HEADER_NAME: h}, (), "sm_90", exprs) for h in (header, changed)}
    except Exception as exc:  # cache_key asks NVRTC for its version
        pytest.skip(f"NVRTC library cannot be loaded ({exc})")
    assert len(keys) == 2


def test_nvrtc_compiles_the_python_values(tmp_path):
    """A program that includes the real headers and static_asserts every Python value."""
    nvrtc_or_skip()
    from pipeline.backends.cuda import nvrtc_build

    asserts = "\n".join(f'static_assert({name} == {value}, "{name}");' for name, value in expected_values().items())
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / "agree.cu").write_text('#include "curve_types.cuh"\n#include "testing/arith_kernels.cuh"\n'
                                       f'{asserts}\n__global__ void agree() {{}}\n')
    source = nvrtc_build.CUDA_SRC
    try:
        nvrtc_build.CUDA_SRC = tmp_path  # the program from here; the headers from the real tree
        built = nvrtc_build.compile_unit("agree", {HEADER_NAME: curve_header(BN254)}, ("agree",),
                                         options=(*nvrtc_build.DEFAULT_OPTIONS, f"--include-path={source}"),
                                         cache_dir=tmp_path / "cache")
    finally:
        nvrtc_build.CUDA_SRC = source
    assert built.cubin[:4] == b"\x7fELF" and not built.from_cache


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_the_reductions_m0_is_minus_p_inverse_and_hidden_from_ptxas_where_it_is_all_ones(curve):
    # all ones (BLS12-381's Fr) as a literal made ptxas build a slower reduction (constants.m0_word)
    header = curve_header(curve)
    for tag, field in (("FR", curve.fr), ("FQ", curve.fq)):
        m0 = (-pow(field.modulus, -1, 1 << 32)) % (1 << 32)
        decl = re.search(rf"^(.*)uint32_t {tag}_M0 = 0x([0-9a-f]{{8}})u;", header, re.M)
        assert decl is not None and int(decl[2], 16) == m0
        if m0 == 0xffffffff:
            assert decl[1] == "__device__ __constant__ "
        else:
            assert decl[1] == "constexpr "
    assert (curve is BLS12_381) == ("__constant__ uint32_t FR_M0" in header)
