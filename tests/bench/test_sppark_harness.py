"""The rebuilt sppark harness's source patch (bench/sppark_harness.py): it rewrites exactly
the point kernel and its launch, and refuses a bench.cu it does not recognise."""
import pytest

from bench import sppark_harness as harness
from bench import sppark_g2_points

OLD_KERNEL = """// P_i = [k_i] G with 64-bit k_i: distinct points on the curve, made on the device.
template<class field_t, class xyzz, class aff_t>
__global__ void gen_points(aff_t* out, const uint64_t* k, size_t n, const uint32_t* gxy)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    out[i] = aff_t{xa * acc.X, ya * acc.Y};
}

"""
SOURCE = ("#include <ec/xyzz_t.hpp>\n" + OLD_KERNEL + harness.GEN_END + "(size_t n)\n{\n    "
          + harness.OLD_LAUNCH + "\n}\n// the rest\n")


def test_the_patch_replaces_the_point_kernel_and_its_launch_and_nothing_else():
    out = harness.patched_source(SOURCE)
    assert harness.NEW_GEN in out and harness.NEW_LAUNCH in out
    assert "ya * acc.Y" not in out and harness.OLD_LAUNCH not in out
    # a pair of lanes a point, through the field's memory form
    assert "/ field_t::degree" in out and "typename field_t::mem_t" in out
    assert out.startswith("#include <ec/xyzz_t.hpp>\n") and out.endswith("}\n// the rest\n")


@pytest.mark.parametrize("broken", [SOURCE.replace(harness.OLD_LAUNCH, "gen_points<<<1, 1>>>();"),
                                    SOURCE.replace(harness.GEN_START, "// another comment\n"),
                                    SOURCE + harness.GEN_END])
def test_a_changed_bench_cu_is_refused_by_name(broken):
    with pytest.raises(ValueError, match="bench.cu has changed"):
        harness.patched_source(broken)


@pytest.mark.skipif(not (harness.SHARED / "bench.cu").is_file(), reason="no shared/anchors/sppark here")
def test_the_shared_bench_cu_is_the_one_the_patch_knows():
    out = harness.patched_source((harness.SHARED / "bench.cu").read_text())
    assert out.count("__global__ void gen_points") == 1 and harness.NEW_LAUNCH in out


def test_the_check_lines_are_read_from_the_harness_output():
    text = ("check G1 2^10 vs host double-and-add: code 0 equal 1\n"
            "check G2 2^10 vs host double-and-add: code 0 equal 0\n")
    checks = {m["what"]: m["equal"] == "1" for m in sppark_g2_points.CHECK.finditer(text)}
    assert checks == {"G1": True, "G2": False}
