"""One NttRunner setting against others in one process, in alternating rounds (issue 16's NTT cells).

A row of bench.kernels_vs_sppark times each setting once, one after the other, so a setting's row also carries
where it sits in the call (the first row of a size ran 2-4 us behind the same transform timed later, session 44).
Here every round times each value of the attribute in turn (median of ``--repeat`` transforms between CUDA
events), and the rounds rotate which value goes first; the table gives each value's median over the rounds and
its ratio to the first value's, round by round. The data is resident; the transform is ``NttRunner.ntt``
(natural order in and out), forward.

    python3 -m bench.ntt_switch_ab --attribute natural_rev_rows_log --values None 1 0 --sizes 20 21 22
"""
from __future__ import annotations

import argparse
import ast
import statistics
from pathlib import Path

import numpy as np

from bench.common import add_curves, random_below, result_path, time_ms


def parse_value(text: str):
    """A setting's value as Python reads it (None, 0, "top"), else the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def rounds_for(backend, curve: str, attribute: str, values: list, sizes: list[int], rounds: int,
               repeat: int) -> dict[int, list[list[float]]]:
    """{log n: per round, ms of each value in ``values`` order}; the attribute is put back after."""
    from pipeline.curves import curve_by_name

    ntt = backend.runtime(curve_by_name(curve)).ntt
    ntt.ensure_twiddles(max(sizes))
    fr = ntt.fr
    words = random_below(np.random.default_rng(44), 1 << max(sizes), fr.limbs, fr.modulus.bit_length())
    buf = backend.allocator.upload(words, "ntt switch a/b")
    original = getattr(ntt, attribute)
    out: dict[int, list[list[float]]] = {}
    try:
        for log_n in sizes:
            per_round = []
            for r in range(rounds):
                order = [(i + r) % len(values) for i in range(len(values))]
                ms = [0.0] * len(values)
                for i in order:
                    setattr(ntt, attribute, values[i])
                    ms[i] = time_ms(backend.stream, lambda: ntt.ntt(buf.ptr, log_n), repeat=repeat)
                per_round.append(ms)
            out[log_n] = per_round
    finally:
        setattr(ntt, attribute, original)
        buf.free()
    return out


def markdown(device: str, attribute: str, values: list, results: dict[str, dict[int, list[list[float]]]],
             rounds: int, repeat: int) -> str:
    lines = [f"# NttRunner.{attribute}: {', '.join(map(repr, values))} in alternating rounds ({device})", "",
             f"{rounds} rounds, each value once a round (the first value of a round rotates); a value's time in a "
             f"round is the median of {repeat} forward natural-order transforms between CUDA events. ms: the median "
             f"over the rounds; ratio: the median over the rounds of that round's time ÷ the first value's; "
             f"range: the rounds' smallest and largest ratio.", "",
             "| curve | n | " + " | ".join(f"{v!r} ms" for v in values) + " | "
             + " | ".join(f"{v!r} ratio (range)" for v in values[1:]) + " |",
             "|---|---|" + "---|" * (2 * len(values) - 1)]
    for curve, by_size in results.items():
        for log_n, per_round in by_size.items():
            ms = [statistics.median(r[i] for r in per_round) for i in range(len(values))]
            cells = []
            for i in range(1, len(values)):
                ratios = [r[i] / r[0] for r in per_round]
                cells.append(f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
            lines.append(f"| {curve} | 2^{log_n} | " + " | ".join(f"{m:.4f}" for m in ms) + " | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attribute", required=True, help="an NttRunner attribute, e.g. natural_rev_rows_log")
    parser.add_argument("--values", nargs="+", required=True, type=parse_value, help="the first is the baseline")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 21, 22])
    add_curves(parser)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--out", type=Path, default=result_path("ntt_switch_ab.md"))
    args = parser.parse_args()
    if len(args.values) < 2:
        parser.error("--values needs a baseline and at least one other value")
    from pipeline.backends import create_backend

    backend = create_backend("cuda")
    results = {c: rounds_for(backend, c, args.attribute, args.values, args.sizes, args.rounds, args.repeat)
               for c in args.curves}
    text = markdown(getattr(backend.device, "name", "cuda"), args.attribute, args.values, results, args.rounds,
                    args.repeat)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
