"""Build the sppark harness of shared/anchors/sppark with its G2 points made right.

    python3 -m bench.sppark_harness --sppark DIR --blst DIR [--nvcc PATH] [--out .anchors]

The shared harness (`bench.cu`) makes its points with one thread a point. On the device sppark's Fq2
(`fp2_t`) is held by two lanes, c0 on the even one and c1 on the odd one, and `sizeof(fp2_t)` there is
one Fq: so for G2 the kernel read the generator's x.c0 and x.c1 as "x" and "y", paired lanes of two
different points, and stored device-sized points (96 bytes for BLS12-381) into a buffer of host-sized
ones (192 bytes). The host saw only the first half of its points written (not on the curve), and the
rest as whatever the fresh allocation held: zeros, which sppark's mixed addition skips as infinity.
So the G2 row at the harness's largest G2 size timed about half the additions, and its 2^10 check
printed `equal 0` (bench/NOTES.md, session 35).

This script rewrites that one kernel and its launch (a pair of lanes a point for a field of degree 2,
the generator read and the point written in the field's memory form, the buffer's layout on both
sides) and builds the harness as its README says. Everything else in `bench.cu` is unchanged. The
G1 points were right already (one Fq a lane on both sides); the rewritten kernel makes them the same.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "anchors" / "sppark"
CURVES = {"bls12381": "FEATURE_BLS12_381", "bn254": "FEATURE_BN254"}

GEN_START = "// P_i = [k_i] G with 64-bit k_i: distinct points on the curve, made on the device.\n"
GEN_END = "template<class field_t, class xyzz, class aff_t>\nstatic std::vector<aff_t> make_points("
NEW_GEN = """// P_i = [k_i] G with 64-bit k_i: distinct points on the curve, made on the device.
// sppark's device Fq2 spans two lanes (degree 2): a pair of threads makes one point (both lanes
// share i, so they leave and branch together), and the generator and the result go through the
// field's memory form (both lanes' words), whose layout is the host's. xyzz_t keeps X, Y, ZZZ, ZZ
// private, in that order (sppark 17278d7, ec/xyzz_t.hpp): read here by position.
template<class field_t, class xyzz, class aff_t>
__global__ void gen_points(aff_t* out, const uint64_t* k, size_t n, const uint32_t* gxy)
{
#ifdef __CUDA_ARCH__
    typedef typename field_t::mem_t field_m;
    size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / field_t::degree;
    if (i >= n) return;
    const field_m* g = reinterpret_cast<const field_m*>(gxy);
    aff_t G((field_t)g[0], (field_t)g[1]);
    xyzz acc; acc.inf();
    uint64_t e = k[i];
    for (int b = 63; b >= 0; b--) {
        xyzz twice = acc; acc.add(twice);
        if ((e >> b) & 1) acc.add(G);
    }
    const field_t* xyzz_words = reinterpret_cast<const field_t*>(&acc);  // X, Y, ZZZ, ZZ
    field_t ya = 1 / xyzz_words[2];
    field_t xa = ya * xyzz_words[3];
    xa = xa^2;
    field_m* o = reinterpret_cast<field_m*>(out) + 2 * i;
    o[0] = xa * xyzz_words[0];
    o[1] = ya * xyzz_words[1];
#endif
}

"""
OLD_LAUNCH = "gen_points<field_t, xyzz, aff_t><<<(n + 255) / 256, 256>>>(d_p, d_k, n, d_g);"
NEW_LAUNCH = "gen_points<field_t, xyzz, aff_t><<<(n * xyzz::degree + 255) / 256, 256>>>(d_p, d_k, n, d_g);"


def patched_source(text: str) -> str:
    """``bench.cu`` with the point kernel rewritten (ValueError if the text it replaces is not there)."""
    if text.count(GEN_START) != 1 or text.count(GEN_END) != 1 or text.count(OLD_LAUNCH) != 1:
        raise ValueError("bench.cu has changed: its gen_points kernel or launch is not where this patch expects")
    head, rest = text.split(GEN_START)
    _, tail = rest.split(GEN_END)
    return (head + NEW_GEN + GEN_END + tail).replace(OLD_LAUNCH, NEW_LAUNCH)


def build(sppark: Path, blst: Path, nvcc: str, out: Path, source: Path = SHARED) -> list[Path]:
    """The patched harness for both curves under ``out`` (blst's libblst.a built first if missing)."""
    work = out / "harness-src"
    work.mkdir(parents=True, exist_ok=True)
    (work / "bench.cu").write_text(patched_source((source / "bench.cu").read_text()))
    shutil.copy(source / "gens.h", work / "gens.h")
    if not (blst / "libblst.a").is_file():
        subprocess.run(["./build.sh"], cwd=blst, check=True)
    built = []
    for curve, feature in CURVES.items():
        binary = out / f"bench_{curve}"
        subprocess.run([nvcc, "-O3", "-std=c++17", "-arch=sm_90", f"-D{feature}", "-D__ADX__", "-I", str(sppark),
                        "-I", str(blst / "src"), "-I", str(work), str(work / "bench.cu"), str(blst / "libblst.a"),
                        "-o", str(binary)], check=True)
        built.append(binary)
    return built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sppark", type=Path, required=True, help="sppark's tree (17278d7, as the shared harness)")
    parser.add_argument("--blst", type=Path, required=True, help="blst's tree")
    parser.add_argument("--nvcc", default="nvcc")
    parser.add_argument("--out", type=Path, default=REPO / ".anchors")
    parser.add_argument("--source", type=Path, default=SHARED, help="the folder of the shared bench.cu and gens.h")
    args = parser.parse_args()
    for path in build(args.sppark, args.blst, args.nvcc, args.out, args.source):
        print(path)


if __name__ == "__main__":
    main()
