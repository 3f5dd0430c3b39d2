"""One NttRunner setting against others in one process, in alternating rounds (issue 16's NTT cells).

A row of bench.kernels_vs_sppark times each setting once, one after the other, so a setting's row also carries
where it sits in the call (the first row of a size ran 2-4 us behind the same transform timed later, session 44).
Here every round times each value of the attribute in turn (median of ``--repeat`` transforms between CUDA
events), and the rounds rotate which value goes first (common.alternating_rounds); the table gives each value's
median over the rounds and its ratio to the first value's, round by round. The data is resident; the transform
is ``NttRunner.ntt`` (natural order in and out), forward.

    python3 -m bench.ntt_switch_ab --attribute natural_rev_rows_log --values None 1 0 --sizes 20 21 22
"""
from __future__ import annotations

import ast
import statistics
from pathlib import Path

import numpy as np

from bench.common import (add_curves, alternating_rounds, arg_parser, markdown_table, random_below, ratio_cell,
                          result_path, time_ms, write_result)


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
    original = getattr(ntt, attribute)
    with backend.allocator.upload(words, "ntt switch a/b") as buf:
        try:
            def timed(log_n: int, i: int) -> float:
                setattr(ntt, attribute, values[i])
                return time_ms(backend.stream, lambda: ntt.ntt(buf.ptr, log_n), repeat=repeat)
            return {log_n: alternating_rounds(len(values), rounds, lambda i: timed(log_n, i)) for log_n in sizes}
        finally:
            setattr(ntt, attribute, original)


def markdown(device: str, attribute: str, values: list, results: dict[str, dict[int, list[list[float]]]],
             rounds: int, repeat: int) -> str:
    header = ["curve", "n", *(f"{v!r} ms" for v in values), *(f"{v!r} ratio (range)" for v in values[1:])]
    rows = []
    for curve, by_size in results.items():
        for log_n, per_round in by_size.items():
            ms = [f"{statistics.median(r[i] for r in per_round):.4f}" for i in range(len(values))]
            rows.append([curve, f"2^{log_n}", *ms, *(ratio_cell(per_round, i) for i in range(1, len(values)))])
    return (f"# NttRunner.{attribute}: {', '.join(map(repr, values))} in alternating rounds ({device})\n\n"
            f"{rounds} rounds, each value once a round (the first value of a round rotates); a value's time in a "
            f"round is the median of {repeat} forward natural-order transforms between CUDA events. ms: the median "
            f"over the rounds; ratio: the median over the rounds of that round's time ÷ the first value's; "
            f"range: the rounds' smallest and largest ratio.\n\n{markdown_table(header, rows)}\n")


def main() -> None:
    parser = arg_parser(__doc__)
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
    write_result(args.out, markdown(getattr(backend.device, "name", "cuda"), args.attribute, args.values, results,
                                    args.rounds, args.repeat))


if __name__ == "__main__":
    main()
