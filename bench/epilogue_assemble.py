"""The epilogue's proof assembly (blinding terms, pure Python) with and without the per-key
fixed-base tables of δ1 / δ2 (``DeltaTables``), in one run, on the committed fixtures' keys.

    python3 bench/epilogue_assemble.py          writes bench/results/epilogue_assemble.md
"""
from __future__ import annotations

import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.gpu_common import markdown_table  # noqa: E402
from pipeline.backends.cpu.backend import CpuBackend  # noqa: E402
from pipeline.formats.wtns import read_wtns  # noqa: E402
from pipeline.formats.zkey import read_zkey  # noqa: E402
from pipeline.groth16.prover import Blinding, DeltaTables, assemble  # noqa: E402

REPEAT = 30


def measure(curve_name: str) -> list:
    folder = REPO / "tests" / "fixtures" / curve_name / "multiplier"
    zkey, witness = read_zkey(folder / "circuit_final.zkey"), read_wtns(folder / "witness.wtns")
    cpu = CpuBackend()
    key = cpu.load_key(zkey)
    msms = cpu.msms(key, witness.values, cpu.compute_h(key, witness.values))
    t0 = time.perf_counter()
    tables = DeltaTables.for_key(zkey)
    build_ms = (time.perf_counter() - t0) * 1e3
    samples: dict[str, list[float]] = {"plain": [], "tables": []}
    for _ in range(REPEAT):  # interleaved
        blinding = Blinding.random(zkey.curve.fr.modulus)
        for name, tab in (("plain", None), ("tables", tables)):
            t0 = time.perf_counter()
            assemble(zkey, msms, blinding, tables=tab)
            samples[name].append((time.perf_counter() - t0) * 1e3)
    plain, fast = statistics.median(samples["plain"]), statistics.median(samples["tables"])
    return [curve_name, f"{plain:.1f}", f"{fast:.1f}", f"{plain / fast:.2f}", f"{build_ms:.0f}"]


def main() -> None:
    rows = [measure(c) for c in ("bn128", "bls12381")]
    table = markdown_table(["curve", "assemble ms, plain", "assemble ms, with δ tables", "ratio",
                            "tables built once per key, ms"], rows)
    text = (f"# Epilogue: proof assembly\n\nMedian of {REPEAT} interleaved runs, fresh r, s each; "
            f"{platform.node()}, Python {platform.python_version()}.\n\n{table}\n")
    (REPO / "bench" / "results" / "epilogue_assemble.md").write_text(text)
    print(table)


if __name__ == "__main__":
    main()
