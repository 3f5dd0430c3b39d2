"""The epilogue's proof assembly (blinding terms, pure Python) with and without the per-key
fixed-base tables of δ1 / δ2 (``DeltaTables``), in one run, on the committed fixtures' keys.

    python3 -m bench.epilogue_assemble          writes bench/results/epilogue_assemble.md
"""
from __future__ import annotations

import platform
import statistics

from bench.common import FIXTURES, Stopwatch, markdown_table, result_path, write_result
from pipeline.backends.cpu.backend import CpuBackend
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey
from pipeline.groth16.prover import Blinding, DeltaTables, assemble

REPEAT = 30


def measure(curve_name: str) -> list:
    folder = FIXTURES / curve_name / "multiplier"
    zkey, witness = read_zkey(folder / "circuit_final.zkey"), read_wtns(folder / "witness.wtns")
    cpu = CpuBackend()
    key = cpu.load_key(zkey)
    msms = cpu.msms(key, witness.values, cpu.compute_h(key, witness.values))
    with Stopwatch() as build:
        tables = DeltaTables.for_key(zkey)
    samples: dict[str, list[float]] = {"plain": [], "tables": []}
    for _ in range(REPEAT):  # interleaved
        blinding = Blinding.random(zkey.curve.fr.modulus)
        for name, tab in (("plain", None), ("tables", tables)):
            with Stopwatch() as t:
                assemble(zkey, msms, blinding, tables=tab)
            samples[name].append(t.ms)
    plain, fast = statistics.median(samples["plain"]), statistics.median(samples["tables"])
    return [curve_name, f"{plain:.1f}", f"{fast:.1f}", f"{plain / fast:.2f}", f"{build.ms:.0f}"]


def main() -> None:
    rows = [measure(c) for c in ("bn128", "bls12381")]
    table = markdown_table(["curve", "assemble ms, plain", "assemble ms, with δ tables", "ratio",
                            "tables built once per key, ms"], rows)
    text = (f"# Epilogue: proof assembly\n\nMedian of {REPEAT} interleaved runs, fresh r, s each; "
            f"{platform.node()}, Python {platform.python_version()}.\n\n{table}\n")
    write_result(result_path("epilogue_assemble.md"), text, show=table)


if __name__ == "__main__":
    main()
