"""Does the sppark harness's G2 row depend on which size is its largest? The shared harness against
the one `bench.sppark_harness` builds with its G2 points made over lane pairs.

    python3 -m bench.sppark_g2_points --binaries .anchors/shared .anchors --tops 22 24     (GPU host)

Each binary folder holds `bench_bls12381` and `bench_bn254`. Each is run once per G2 top size T
(`bench_<curve> LO LO 0 T`: G1 at 2^LO only, no NTT, G2 at the even sizes LO..T), so the same G2 size
is timed once as the largest of its run and once below it. If the shared harness stores only the
first half of its G2 points (bench/sppark_harness.py says why), its row at the top size is
the one that shrinks, and its 2^10 G2 check fails; the rebuilt harness's rows do not depend on T and
its check passes. Writes bench/results/sppark_g2_points.md.
"""
from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from bench import sppark_stage
from bench.common import RESULTS, arg_parser, markdown_table, write_result

CHECK = re.compile(r"^check (?P<what>G[12]) 2\^10 vs host double-and-add: code (?P<code>\d+) equal (?P<equal>\d)", re.M)


def run(binary: Path, lo: int, top: int, timeout_s: float) -> tuple[dict, dict, float]:
    """(G2 rows {(what, log): ms}, checks {"G1"/"G2": equal}, seconds) of one harness call."""
    t0 = time.perf_counter()
    out = sppark_stage.harness_output(binary, [lo, lo, 0, top], timeout_s)
    seconds = time.perf_counter() - t0
    print(out, flush=True)
    rows = {(m["what"], int(m["log"])): float(m["ms"]) for m in sppark_stage.ROW.finditer(out)
            if m["what"].startswith("G2")}
    checks = {m["what"]: m["equal"] == "1" and m["code"] == "0" for m in CHECK.finditer(out)}
    return rows, checks, seconds


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--binaries", type=Path, nargs="+", required=True, help="folders of bench_<curve>")
    parser.add_argument("--tops", type=int, nargs="+", default=[22, 24], help="the G2 top sizes of the runs")
    parser.add_argument("--lo", type=int, default=20)
    parser.add_argument("--curves", nargs="+", choices=sorted(sppark_stage.HARNESS),
                        default=sorted(sppark_stage.HARNESS))
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "sppark_g2_points.md")
    args = parser.parse_args()
    table, notes = [], []
    for folder in args.binaries:
        for curve in args.curves:
            binary = folder / sppark_stage.HARNESS[curve]
            for top in args.tops:
                try:
                    rows, checks, seconds = run(binary, args.lo, top, args.timeout)
                except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
                    notes.append(f"{binary} top 2^{top}: not run ({type(exc).__name__}: {exc})")
                    continue
                notes.append(f"{binary} top 2^{top}: {seconds:.0f} s; 2^10 checks: "
                             + ", ".join(f"{g} {'equal' if ok else 'NOT equal'}" for g, ok in sorted(checks.items())))
                for (what, log), ms in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
                    table.append([str(folder), curve, what, f"2^{log}", f"2^{top}", "yes" if log == top else "",
                                  f"{ms:.3f}"])
    header = ["harness", "curve", "row", "n", "run's G2 top", "row is the top", "median ms"]
    text = (f"# sppark's G2 rows against the run's largest G2 size\n\n{__doc__}\n"
            + "".join(f"- {n}\n" for n in notes) + "\n" + markdown_table(header, table) + "\n")
    write_result(args.out, text, show=markdown_table(header, table))


if __name__ == "__main__":
    main()
