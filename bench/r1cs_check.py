"""The synthesize stage's R1CS check: one-off (``r1cs_is_satisfied``: prepare + check) against
a checker prepared once per key (``R1csChecker``, what the engine keeps), in one run.

    python3 -m bench.r1cs_check [FIXTURE_DIR ...]    default: the committed chain_2e10 of both curves
Writes bench/results/r1cs_check.md.
"""
from __future__ import annotations

import platform
from pathlib import Path

from bench.common import add_fixture_dirs, arg_parser, Stopwatch, fixture_dirs, markdown_table, median_ms, result_path, write_result
from pipeline.formats.r1cs import read_r1cs
from pipeline.formats.wtns import read_wtns
from pipeline.groth16.r1cs_check import R1csChecker, r1cs_is_satisfied

REPEAT = 7


def row(folder: Path) -> list:
    r1cs, witness = read_r1cs(folder / "circuit.r1cs"), read_wtns(folder / "witness.wtns")
    with Stopwatch() as prepare:
        checker = R1csChecker(r1cs)
    assert checker.first_unsatisfied(witness) is None
    one_off = median_ms(lambda: r1cs_is_satisfied(r1cs, witness), REPEAT)
    prepared = median_ms(lambda: checker.first_unsatisfied(witness), REPEAT)
    return [f"{r1cs.curve.name}/{folder.name}", len(r1cs.constraints), checker.n_terms, f"{prepare.ms:.0f}",
            f"{one_off:.1f}", f"{prepared:.1f}", f"{one_off / prepared:.1f}"]


def main() -> None:
    parser = arg_parser(__doc__)
    add_fixture_dirs(parser)
    folders = fixture_dirs(parser.parse_args().fixtures, "chain_2e10")
    rows = [row(f) for f in folders]
    table = markdown_table(["circuit", "constraints", "terms", "prepare once ms", "one-off check ms",
                            "prepared check ms", "ratio"], rows)
    text = (f"# R1CS check per witness\n\nMedian of {REPEAT}; {platform.node()}, Python "
            f"{platform.python_version()}.\n\n{table}\n")
    write_result(result_path("r1cs_check.md"), text, show=table)


if __name__ == "__main__":
    main()
