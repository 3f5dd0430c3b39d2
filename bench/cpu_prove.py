"""The reference (CPU, Python-int) prover: time per step for fixture circuits, both curves.

    python3 bench/cpu_prove.py [FIXTURE_DIR ...]     (default: tests/fixtures/*/chain_2e8, chain_2e10)

A fixture dir holds circuit_final.zkey and witness.wtns. Writes bench/results/cpu_prove.md.
"""
from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.gpu_common import markdown_table  # noqa: E402
from pipeline import progress  # noqa: E402
from pipeline.backends.cpu import CpuBackend  # noqa: E402
from pipeline.formats.wtns import read_wtns  # noqa: E402
from pipeline.formats.zkey import read_zkey  # noqa: E402
from pipeline.groth16 import prove  # noqa: E402


def main() -> None:
    dirs = [Path(a) for a in sys.argv[1:]] or sorted(
        d for c in ("bn128", "bls12381") for d in (REPO / "tests" / "fixtures" / c).glob("chain_2e*"))
    rows = []
    progress.enable()
    for folder in progress.iterate(dirs, "fixtures proved"):
        t0 = time.perf_counter()
        zkey = read_zkey(folder / "circuit_final.zkey")
        witness = read_wtns(folder / "witness.wtns")
        t1 = time.perf_counter()
        backend = CpuBackend()
        key = backend.load_key(zkey)
        t2 = time.perf_counter()
        proof = prove(backend, key, zkey, witness)
        t3 = time.perf_counter()
        ms = proof.timings_ms
        rows.append([zkey.curve.name, folder.name, zkey.n_vars, f"2^{zkey.log_domain_size}", f"{(t1 - t0) * 1e3:.0f}",
                     f"{(t2 - t1) * 1e3:.0f}", f"{ms['h_ms']:.0f}", f"{ms['msm_ms']:.0f}", f"{ms['msm_b2_ms']:.0f}",
                     f"{(t3 - t2):.2f}"])
        print(rows[-1], flush=True)
    table = markdown_table(["curve", "circuit", "signals", "domain", "read ms", "decode key ms", "H ms",
                            "MSMs ms", "of which G2 ms", "prove s"], rows)
    text = (f"# Reference CPU prover\n\nOne proof each, pure Python ints (`pipeline/backends/cpu`), on "
            f"{platform.machine()} with {__import__('os').cpu_count()} cores ({platform.python_version()}).\n\n{table}\n")
    (REPO / "bench" / "results" / "cpu_prove.md").write_text(text)
    print(table)


if __name__ == "__main__":
    main()
