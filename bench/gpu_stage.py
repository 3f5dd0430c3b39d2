"""The whole GPU stage of one proof (spmv + coset NTTs + the five MSMs, G2 included) on the CUDA
backend, for keys of 2^k constraints made with random points (MSM cost does not depend on the
points' origin; see gpu_common). Prints a markdown table and writes bench/results/gpu_stage.md.

    python3 bench/gpu_stage.py [LOG_SIZES...]   e.g. 20 22   (both curves)
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.gpu_common import bit_heavy, markdown_table, random_below  # noqa: E402
from pipeline.backends.cuda import CudaBackend  # noqa: E402
from pipeline.curves import BLS12_381, BN254  # noqa: E402
from pipeline.formats.zkey import read_zkey  # noqa: E402
from pipeline.formats.zkey_writer import write_random_zkey  # noqa: E402

REPEAT = 3


def stage_once(backend, key, witness) -> dict[str, float]:
    t0 = time.perf_counter()
    h = backend.compute_h(key, witness)
    t1 = time.perf_counter()
    msms = backend.msms(key, witness, h)
    t2 = time.perf_counter()
    h.free()
    return {"h_ms": (t1 - t0) * 1e3, "msm_ms": (t2 - t1) * 1e3, "total_ms": (t2 - t0) * 1e3, **msms.timings_ms}


def bench(curve, log_n: int, workdir: Path) -> list[list]:
    n = 1 << log_n
    path = workdir / f"random_{curve.name}_{log_n}.zkey"
    t0 = time.perf_counter()
    write_random_zkey(path, curve, n_vars=n - 8, domain_size=n, n_public=3)
    t1 = time.perf_counter()
    zkey = read_zkey(path)
    t2 = time.perf_counter()
    backend = CudaBackend()
    key = backend.load_key(zkey)
    t3 = time.perf_counter()
    rng = np.random.default_rng(log_n)
    rows = []
    for label, witness in (("random", random_below(rng, zkey.n_vars, 4, curve.fr.bits)),
                           ("80% {0,1}", None)):
        if witness is None:
            witness = bit_heavy(rng, random_below(rng, zkey.n_vars, 4, curve.fr.bits))
        witness[0] = [1, 0, 0, 0]
        stage_once(backend, key, witness)  # warm-up (kernel load, twiddles)
        runs = [stage_once(backend, key, witness) for _ in range(REPEAT)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append([curve.name, f"2^{log_n}", label, f"{med['total_ms']:.0f}", f"{med['h_ms']:.1f}",
                     f"{med['msm_a_ms']:.0f}", f"{med['msm_b1_ms']:.0f}", f"{med['msm_b2_ms']:.0f}",
                     f"{med['msm_c_ms']:.0f}", f"{med['msm_h_ms']:.0f}",
                     f"{(t2 - t1):.2f}", f"{(t3 - t2):.2f}"])
        print(rows[-1], flush=True)
    backend.unload_key(key)
    backend.close()
    path.unlink()
    print(f"  (random key written in {t1 - t0:.1f} s)", flush=True)
    return rows


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [20]
    header = ["curve", "constraints", "witness", "stage ms", "H ms", "A ms", "B1 ms", "B2 (G2) ms", "C ms",
              "H-MSM ms", "read key s", "upload key s"]
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("ZKPIPE_BENCH_TMP")) as tmp:
        for log_n in sizes:
            for curve in (BN254, BLS12_381):
                rows += bench(curve, log_n, Path(tmp))
    table = markdown_table(header, rows)
    note = (f"\nWhole GPU stage of one proof (wall clock around `compute_h` + `msms`, the host-side "
            f"conversions included), median of {REPEAT} after one warm-up; key resident, witness "
            f"uploaded each call. Machine: one H200.\n")
    Path(__file__).with_name("results").joinpath("gpu_stage.md").write_text("# GPU stage\n" + note + "\n" + table + "\n")
    print(table)


if __name__ == "__main__":
    main()
