"""What the below-r check of witness values costs (issue 16): prep_msm's pass over a witness
(staging copy + 0 / 1 / other counts) as it was, the fused blocked pass without and with the
check, and the check alone (the reference prover's path), interleaved in one run.

    python3 -m bench.witness_scan [LOG_SIZE...]      default 20 24; writes bench/results/witness_scan.md

Witness: 95% of values in {0, 1} (half each), the rest random below r (the seed's shape; the
check's cost does not depend on it: one maximum of the top limb per block).
"""
from __future__ import annotations

import os
import platform
import statistics

import numpy as np

from bench.common import Stopwatch, add_curves, add_log_sizes, arg_parser, bit_heavy, markdown_table, random_below, \
    result_path, write_result
from pipeline.backends.protocol import WitnessShape
from pipeline.curves import curve_by_name
from pipeline.formats.types import Witness
from pipeline.groth16.witness_scan import check_below_r, scan_witness

REPEAT = 9


def measure(curve_name: str, log_n: int) -> list:
    curve = curve_by_name(curve_name)
    rng = np.random.default_rng(log_n)
    values = bit_heavy(rng, random_below(rng, 1 << log_n, curve.fr.limbs, curve.fr.bits), 0.95)
    staged = np.zeros_like(values)  # stands for the pinned staging buffer (touched once, as pinned memory is)
    r, prefix = curve.fr.modulus, 9
    passes = {
        "before": lambda: (np.copyto(staged, values), WitnessShape.of(staged, prefix)),
        "fused": lambda: scan_witness(values, None, prefix, "bench", out=staged),
        "fused + check": lambda: scan_witness(values, r, prefix, "bench", out=staged),
        "check alone": lambda: check_below_r(Witness("bench", curve, values)),
    }
    samples: dict[str, list[float]] = {name: [] for name in passes}
    for _ in range(REPEAT):  # interleaved: the shared host's noise falls on every pass alike
        for name, run in passes.items():
            with Stopwatch() as t:
                run()
            samples[name].append(t.ms)
    ms = {name: statistics.median(s) for name, s in samples.items()}
    assert scan_witness(values, r, prefix, "bench", out=staged) == WitnessShape.of(values, prefix)
    return [curve_name, f"2^{log_n}", f"{ms['before']:.1f}", f"{ms['fused']:.1f}", f"{ms['fused + check']:.1f}",
            f"{ms['fused + check'] - ms['fused']:+.1f}", f"{ms['fused + check'] / ms['fused']:.2f}",
            f"{ms['fused + check'] / ms['before']:.2f}", f"{ms['check alone']:.1f}"]


def main() -> None:
    parser = arg_parser(__doc__)
    add_log_sizes(parser, [20, 24])
    add_curves(parser, ("bls12381",))
    args = parser.parse_args()
    rows = [measure(c, k) for k in args.log_sizes for c in args.curves]
    table = markdown_table(["curve", "values", "before: copy + counts ms", "fused pass ms", "fused pass + check ms",
                            "check adds ms", "ratio with / without check", "ratio fused + check / before",
                            "check alone ms (prove's path)"], rows)
    text = (f"# Witness pass of prep_msm, with the below-r check\n\nMedian of {REPEAT} interleaved runs; "
            f"{platform.node()} ({os.cpu_count()} cores), Python {platform.python_version()}, numpy "
            f"{np.__version__}. 'before' is np.copyto into the staging array then WitnessShape.of (the pass "
            f"prep_msm ran until now); 'fused' is pipeline/groth16/witness_scan.py's blocked pass (copy, counts) "
            f"without the check, then with it; 'check alone' is check_below_r, which groth16.prove runs (it stages "
            f"nothing).\n\n{table}\n")
    write_result(result_path("witness_scan.md"), text, show=table)


if __name__ == "__main__":
    main()
