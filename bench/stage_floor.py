"""The arithmetic floor of a seed partition's GPU stage: the field products its algorithms need, at the
product rate the card was measured to sustain (bench.pipe_rates), part by part, beside a measured stage.

A floor, not a model: every part is counted at the fewest products its algorithm can take, with nothing for
memory, the digit sorts, the spmv, the split or a launch. So no kernel of these algorithms can run a part in
less time, and a stage target below the floor's sum needs fewer products (another algorithm), not faster
kernels.

    python3 -m bench.stage_floor --log 26 --measured bench/results/seed_scale_cuda_bls12381_26_circuit_s59_h100.md

Counted:
- MSM additions: every (point, window) pair one mixed XYZZ addition, at the widths the engine plans (plan_msm),
  over the windows a folded scalar fills (FOLDED_BITS), plus each window's running sums (two full additions a
  bucket). The witness MSMs are the 0/1 split's: the ones summed (one addition a one) and a tail MSM over the
  other values. Only finite points count (an algorithm can leave a key's infinity points out): their shares
  per section are read from the seed-shaped generator (finite_shares; --all-finite counts every point).
- Product-equivalents (a Montgomery product is about half multiplication, half reduction): a square at least
  0.75 of a product (it halves the cross products only), a dot product of two terms 1.5 (one reduction), an
  Fq2 product 2.5 (Karatsuba's three multiplications, two reductions), an Fq2 square 2. madd-2008-s (8M + 2S,
  Y3 one dot): 6 + 2 x 0.75 + 1.5 = 9 over Fq; add-2008-s (12M + 2S): 13.
- NTTs: one Fr product a radix-2 butterfly (n/2 log n a transform, twiddles free), six transforms (three
  inverse, three coset), one product an element for each coset scale and two for the quotient.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bench.common import arg_parser, markdown_table, write_result

SQUARE, DOT = 0.75, 1.5  # in Montgomery products (above)
FQ2_MUL, FQ2_SQR, FQ2_DOT = 2.5, 2.0, 4.0  # Fq2 dot: four Fq2 multiplications' six products, two reductions
# Mixed (madd-2008-s) and full (add-2008-s) XYZZ additions, in base-field product-equivalents.
G1_MADD = 6 + 2 * SQUARE + DOT
G1_ADD = 10 + 2 * SQUARE + DOT
G2_MADD = 6 * FQ2_MUL + 2 * FQ2_SQR + FQ2_DOT
G2_ADD = 10 * FQ2_MUL + 2 * FQ2_SQR + FQ2_DOT
# Products a clock an SM, BLS12-381 (results/pipe_rates_s44_h200.md, "ours" at full occupancy): Fq 0.1035,
# Fr 0.2312, on 132 SMs at 1980 MHz (the H100 SXM's SM and clock are the same: session 44).
FQ_RATE, FR_RATE, SMS, MHZ = 0.1035, 0.2312, 132, 1980
SCALAR_BITS = 255
# The digit kernels fold each scalar to its least magnitude mod r (session 37): below r / 2 < 2^254, so the
# windows with a digit are signed_windows(254, c): 17 at c = 15 (the plan's 18th stays empty), 13 at c = 20.
FOLDED_BITS = SCALAR_BITS - 1


@dataclass(frozen=True)
class Part:
    name: str
    count: str  # what was counted, in words
    products: float  # product-equivalents
    field: str  # "fq" or "fr"
    measured: tuple[str, ...]  # the seed_scale columns whose medians it is compared with, summed
    less: tuple[str, ...] = ()  # columns taken off that sum (a section's ones, from the section)


def msm_products(n: int, madd: float, add: float, finite: int | None = None) -> tuple[float, int, int]:
    """(products, windows, width) of a plain MSM of n full-width scalars at the engine's width for n, of whose
    points ``finite`` (default all) are not infinity: those alone cost an addition a window."""
    from pipeline.backends.cuda.msm import plan_msm, signed_windows

    plan = plan_msm(n, SCALAR_BITS)
    windows = signed_windows(FOLDED_BITS, plan.c)
    additions = (n if finite is None else finite) * windows
    running_sums = 2 * windows * plan.buckets_per_window
    return additions * madd + running_sums * add, windows, plan.c


# Sections of a key whose points are summed with the witness: A, B (B1 in G1 and B2 in G2 share its columns) and
# C, the key's L section ((beta A_i + alpha B_i + C_i) / delta: finite wherever a wire is in any matrix).
SECTIONS = ("a", "b", "c")
ALL_FINITE = {s: (1.0, 1.0) for s in SECTIONS}


def section_masks(log_n: int = 16, bit_share: float = 0.95, one_share: float = 0.5):
    """(ones, others, finite) over the wires of the seed-shaped generator (pipeline.synth) at 2^log_n: the witness's
    ones and other values (boolean masks), and per section the wires whose key point is finite (the wire is in the
    section's matrix; L, the C section: in any)."""
    import numpy as np

    from bench.seed_scale import N_PUBLIC
    from pipeline.backends.placement import classify_scalars
    from pipeline.curves import curve_by_name
    from pipeline.synth import CircuitShape, generate_circuit

    shape = CircuitShape(bit_fraction=bit_share, one_fraction=one_share)
    r1cs, witness = generate_circuit(log_n, N_PUBLIC, curve_by_name("bls12381"), shape=shape, seed=log_n)
    ones, others = classify_scalars(witness.values)
    finite = {}
    for s in SECTIONS:
        finite[s] = np.zeros(witness.values.shape[0], dtype=bool)
        finite[s][np.asarray(getattr(r1cs, s).signals)] = True
    finite["c"] = finite["a"] | finite["b"] | finite["c"]  # the L section
    return ones, others, finite


def finite_shares(log_n: int = 16, bit_share: float = 0.95, one_share: float = 0.5) -> dict[str, tuple[float, float]]:
    """Per section, the shares of the witness's ones and of its other values whose key point is finite
    (``section_masks``): they hold from 2^16 to 2^20 within 0.3% (A 0.74 / 0.75, B 0.50 / 0.76, L 1 / 1)."""
    ones, others, finite = section_masks(log_n, bit_share, one_share)
    return {s: (float((finite[s] & ones).sum() / ones.sum()), float((finite[s] & others).sum() / others.sum()))
            for s in SECTIONS}


def stage_parts(log_n: int, bit_share: float, one_share: float,
                finite: dict[str, tuple[float, float]] = ALL_FINITE) -> list[Part]:
    """A seed partition's parts at 2^log_n with that share of witness values in {0, 1}, ``one_share`` of
    those ones, and per section the shares of ones and other values whose points are finite (``finite_shares``).
    The witness MSMs' plans are the split's: one width for the tails' shared digit sort."""
    n = 1 << log_n
    ones = round(n * bit_share * one_share)
    others = n - round(n * bit_share)
    ones_of = {s: round(ones * finite[s][0]) for s in SECTIONS}
    others_of = {s: round(others * finite[s][1]) for s in SECTIONS}
    h_products, h_windows, h_c = msm_products(n, G1_MADD, G1_ADD)
    t1_products = sum(msm_products(others, G1_MADD, G1_ADD, others_of[s])[0] for s in SECTIONS)
    t2_products, t_windows, t_c = msm_products(others, G2_MADD, G2_ADD, others_of["b"])
    g1_ones = sum(ones_of.values())
    ntt = 6 * (n // 2) * log_n + 3 * n + 2 * n
    return [
        Part("H-MSM", f"2^{log_n} x {h_windows} windows (c = {h_c})", h_products, "fq", ("H-MSM",)),
        Part("A, B1, C: ones (G1)", f"{g1_ones / 1e6:.1f}M finite of 3 x {ones / 1e6:.1f}M ones", g1_ones * G1_MADD,
             "fq", ("A: ones", "B1: ones", "C: ones")),
        Part("A, B1, C: tails (G1)", f"{sum(others_of.values()) / 1e6:.2f}M finite of 3 x {others / 1e6:.2f}M, "
             f"{t_windows} windows (c = {t_c})", t1_products, "fq",
             ("A", "B1", "C"), ("A: ones", "B1: ones", "C: ones")),
        Part("B2: ones (G2)", f"{ones_of['b'] / 1e6:.1f}M finite of {ones / 1e6:.1f}M ones", ones_of["b"] * G2_MADD,
             "fq", ("B2: ones",)),
        Part("B2: tail (G2)", f"{others_of['b'] / 1e6:.2f}M finite of {others / 1e6:.2f}M, {t_windows} windows",
             t2_products, "fq", ("B2 (G2)",), ("B2: ones",)),
        Part("NTTs", f"6 x 2^{log_n - 1} x {log_n} butterflies + scales", ntt, "fr", ("NTTs",)),
    ]


def floor_ms(products: float, field: str, fq_rate: float, fr_rate: float, sms: int, mhz: float) -> float:
    rate = (fq_rate if field == "fq" else fr_rate) * sms * mhz * 1e6  # products a second
    return 1e3 * products / rate


def measured_medians(path: Path, log_n: int) -> dict[str, float]:
    """The 'all' row (medians over every partition) of a bench.seed_scale table at 2^log_n, by column."""
    text = path.read_text()
    section = text.split(f"## 2^{log_n}: per partition", 1)
    if len(section) < 2:
        raise ValueError(f"{path}: no per-partition table at 2^{log_n}")
    header, values = None, None
    for line in section[1].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None and cells and cells[0] == "partition":
            header = cells
        elif header is not None and cells and cells[0] == "all":
            values = cells
            break
    if header is None or values is None:
        raise ValueError(f"{path}: the 2^{log_n} table has no 'all' row")
    return {h: float(v) for h, v in zip(header, values) if re.fullmatch(r"[0-9.]+", v)}


def measured_ms(part: Part, medians: dict[str, float]) -> float | None:
    """The part's measured time: its columns summed, less its ``less`` columns; None where one is missing."""
    if any(col not in medians for col in part.measured + part.less):
        return None
    return sum(medians[col] for col in part.measured) - sum(medians[col] for col in part.less)


def main() -> None:
    p = arg_parser(__doc__)
    p.add_argument("--log", type=int, nargs="+", default=[26], help="log2 of the partition's constraints")
    p.add_argument("--bit-share", type=float, default=0.95, help="witness values in {0, 1}")
    p.add_argument("--one-share", type=float, default=0.5, help="of those, the ones")
    p.add_argument("--fq-rate", type=float, default=FQ_RATE, help="Fq products a clock an SM")
    p.add_argument("--fr-rate", type=float, default=FR_RATE, help="Fr products a clock an SM")
    p.add_argument("--sms", type=int, default=SMS)
    p.add_argument("--mhz", type=float, default=MHZ)
    p.add_argument("--measured", type=Path, nargs="*", default=[],
                   help="bench.seed_scale result files (one a --log size, in order) to set beside the floor")
    p.add_argument("--target-ms", type=float, nargs="*", default=[],
                   help="the stage a target needs, one a --log size (e.g. 590 for 6 s/proof of 10 partitions)")
    p.add_argument("--finite-log", type=int, default=16,
                   help="log2 size of the seed-shaped circuit the sections' finite shares are read from")
    p.add_argument("--all-finite", action="store_true", help="count every point of every section finite")
    p.add_argument("--out", default="bench/results/stage_floor.md")
    args = p.parse_args()
    finite = ALL_FINITE if args.all_finite else finite_shares(args.finite_log, args.bit_share, args.one_share)

    lines = ["# The arithmetic floor of a seed partition's GPU stage (BLS12-381)", "",
             f"Products at {args.fq_rate} Fq / {args.fr_rate} Fr products a clock an SM, {args.sms} SMs at "
             f"{args.mhz:.0f} MHz; witness {args.bit_share:.0%} in {{0, 1}}, {args.one_share:.0%} of those ones. "
             "What is counted, and what is not: the docstring of bench/stage_floor.py.", "",
             "Points counted: " + ("every point finite." if args.all_finite else
                                  f"the finite ones, by section (share of the ones, of the other values) on the seed-"
                                  f"shaped generator at 2^{args.finite_log}: "
                                  + ", ".join(f"{s.upper() if s != 'c' else 'C (L)'} {f[0]:.3f} / {f[1]:.3f}"
                                              for s, f in finite.items())
                                  + ". The kernels run every entry of a list, finite or not (a lane whose point is "
                                    "infinity waits for its warp's additions), so their measured times are for every "
                                    "entry."), ""]
    for i, log_n in enumerate(args.log):
        medians = measured_medians(args.measured[i], log_n) if i < len(args.measured) else {}
        rows, floor_sum, measured_sum = [], 0.0, 0.0
        for part in stage_parts(log_n, args.bit_share, args.one_share, finite):
            fl = floor_ms(part.products, part.field, args.fq_rate, args.fr_rate, args.sms, args.mhz)
            got = measured_ms(part, medians)
            floor_sum += fl
            measured_sum += got or 0.0
            rows.append([part.name, part.count, f"{part.products / 1e9:.2f}", f"{fl:.0f}",
                         "-" if got is None else f"{got:.0f}", "-" if not got else f"{fl / got:.2f}"])
        stage = medians.get("gpu")
        rows.append(["**counted parts**", "", "", f"**{floor_sum:.0f}**",
                     f"{measured_sum:.0f}" if medians else "-",
                     f"{floor_sum / measured_sum:.2f}" if measured_sum else "-"])
        if stage is not None:
            rows.append(["the whole stage (spmv, sorts, split, upload: no floor counted)", "", "", "",
                         f"{stage:.0f}", f"{floor_sum / stage:.2f}"])
        lines += [f"## 2^{log_n}", ""]
        if i < len(args.measured):
            lines += [f"Measured: medians of `{args.measured[i]}`.", ""]
        lines += [markdown_table(["part", "counted", "G products", "floor ms", "measured ms", "floor / measured"],
                                 rows), ""]
        lines.append(f"Ten partitions at the floor: **{10 * floor_sum / 1e3:.2f} s/proof** of GPU time.")
        if i < len(args.target_ms):
            need = args.target_ms[i]
            verdict = "below the floor: unreachable with these algorithms" if need < floor_sum else \
                f"{need - floor_sum:.0f} ms above the floor for everything not counted"
            lines.append(f"A target stage of {need:.0f} ms is {verdict}.")
        lines.append("")
    write_result(args.out, "\n".join(lines))


if __name__ == "__main__":
    main()
