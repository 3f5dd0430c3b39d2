"""The synthesize stage's R1CS check: one-off (``r1cs_is_satisfied``: prepare + check) against
a checker prepared once per key (``R1csChecker``, what the engine keeps), in one run.

    python3 bench/r1cs_check.py [FIXTURE_DIR ...]    default: the committed chain_2e10 of both curves
Writes bench/results/r1cs_check.md.
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
from pipeline.formats.r1cs import read_r1cs  # noqa: E402
from pipeline.formats.wtns import read_wtns  # noqa: E402
from pipeline.groth16.r1cs_check import R1csChecker, r1cs_is_satisfied  # noqa: E402

REPEAT = 7


def median_ms(fn) -> float:
    samples = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def row(folder: Path) -> list:
    r1cs, witness = read_r1cs(folder / "circuit.r1cs"), read_wtns(folder / "witness.wtns")
    t0 = time.perf_counter()
    checker = R1csChecker(r1cs)
    prepare_ms = (time.perf_counter() - t0) * 1e3
    assert checker.first_unsatisfied(witness) is None
    one_off = median_ms(lambda: r1cs_is_satisfied(r1cs, witness))
    prepared = median_ms(lambda: checker.first_unsatisfied(witness))
    return [f"{r1cs.curve.name}/{folder.name}", len(r1cs.constraints), checker.n_terms, f"{prepare_ms:.0f}",
            f"{one_off:.1f}", f"{prepared:.1f}", f"{one_off / prepared:.1f}"]


def main() -> None:
    folders = [Path(a) for a in sys.argv[1:]] or [REPO / "tests" / "fixtures" / c / "chain_2e10"
                                                  for c in ("bn128", "bls12381")]
    rows = [row(f) for f in folders]
    table = markdown_table(["circuit", "constraints", "terms", "prepare once ms", "one-off check ms",
                            "prepared check ms", "ratio"], rows)
    text = (f"# R1CS check per witness\n\nMedian of {REPEAT}; {platform.node()}, Python "
            f"{platform.python_version()}.\n\n{table}\n")
    (REPO / "bench" / "results" / "r1cs_check.md").write_text(text)
    print(table)


if __name__ == "__main__":
    main()
