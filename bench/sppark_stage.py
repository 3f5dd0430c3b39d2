"""sppark's MSMs and NTTs at the sizes of one Groth16 GPU stage, timed by the harness of
shared/anchors/sppark (carried to the GPU host as .anchors/bench_bls12381 and .anchors/bench_bn254,
run as a subprocess), and the "sppark-built stage" they add up to. Use the harness as
`bench.sppark_harness` rebuilds it: the shared binary's G2 row at its largest size (here
always the stage's size) timed an MSM whose upper half of points was never written, ~60% of the
additions (bench/results/sppark_g2_points.md).

    python3 -m bench.sppark_stage --sizes 24 26 --curve bls12381        (GPU host; prints the table)

A stage of a 2^k-constraint seed circuit (n_vars ~ domain = 2^k) runs four G1 MSMs of 2^k
(A, B1, C over the signals, H over the domain), one G2 MSM of 2^k (B2) and six Fr NTTs of 2^k
(three inverse, three forward on the coset). sppark's stage is the sum of those from the harness
(one call per size, `bench_<curve> k k k k`): its random-scalar rows, or its 80% {0,1} rows for the
witness MSMs of a bit-heavy witness (H's scalars are full-width either way); its NTT row is the
NR transform (natural in, bit-reversed out), cheaper than a natural-order one. Spmv, uploads and
the 0/1 split have no sppark counterpart.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.common import REPO, arg_parser, markdown_table

HARNESS = {"bls12381": "bench_bls12381", "bn128": "bench_bn254"}
ROW = re.compile(r"^sppark (?P<what>.+?) (?:bls12-381|bn254) 2\^(?P<log>\d+): median (?P<ms>[\d.]+) ms", re.M)
G1_MSMS, G2_MSMS, NTTS = 4, 1, 6


@dataclass(frozen=True)
class SpparkStage:
    """The harness's medians at 2^log_n (ms) and the stage they add up to."""

    log_n: int
    g1_ms: float
    g1_bits_ms: float  # 80% of scalars in {0, 1}
    g2_ms: float
    g2_bits_ms: float
    ntt_ms: float

    def msm_ms(self, bit_heavy: bool) -> float:
        """A, B1, C and B2 with the witness's scalars (the 80% {0,1} rows if ``bit_heavy``), H random."""
        g1, g2 = (self.g1_bits_ms, self.g2_bits_ms) if bit_heavy else (self.g1_ms, self.g2_ms)
        return (G1_MSMS - 1) * g1 + self.g1_ms + G2_MSMS * g2

    def ntts_ms(self) -> float:
        return NTTS * self.ntt_ms

    def stage_ms(self, bit_heavy: bool) -> float:
        return self.msm_ms(bit_heavy) + self.ntts_ms()


def harness(curve_name: str, anchors: Path) -> Path | None:
    """The harness binary for the curve under ``anchors``, or None if it is not there."""
    path = anchors / HARNESS[curve_name]
    return path if path.is_file() else None


def parse(text: str, log_n: int) -> SpparkStage:
    """The rows of size 2^log_n from the harness's output (``ValueError`` naming a missing row)."""
    rows = {m["what"]: float(m["ms"]) for m in ROW.finditer(text) if int(m["log"]) == log_n}
    names = {"g1_ms": "G1 MSM", "g1_bits_ms": "G1 MSM 80%{0,1}", "g2_ms": "G2 MSM", "g2_bits_ms": "G2 MSM 80%{0,1}",
             "ntt_ms": "NTT Fr (NR)"}
    missing = [row for row in names.values() if row not in rows]
    if missing:
        raise ValueError(f"the sppark harness printed no {', '.join(missing)} row at 2^{log_n}; its output ends: "
                         f"{text[-400:]!r}")
    return SpparkStage(log_n, **{field: rows[row] for field, row in names.items()})


class HarnessFailed(RuntimeError):
    """The harness exited with ``returncode``; ``output``: its stderr, or its stdout where stderr is empty."""

    def __init__(self, binary: Path, returncode: int, output: str) -> None:
        super().__init__(f"{binary.name} exited with {returncode}: {output[-400:]}")
        self.returncode, self.output = returncode, output


def harness_output(binary: Path, args: list[int], timeout_s: float) -> str:
    """The harness's stdout for one call (``HarnessFailed`` if it exits nonzero)."""
    done = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise HarnessFailed(binary, done.returncode, done.stderr or done.stdout)
    return done.stdout


def run(binary: Path, log_n: int, timeout_s: float) -> SpparkStage:
    """One harness call for 2^log_n: G1 and G2 MSMs of that size, NTTs up to it."""
    try:
        return parse(harness_output(binary, [log_n] * 4, timeout_s), log_n)
    except HarnessFailed as exc:
        raise RuntimeError(f"{binary.name} {log_n} exited with {exc.returncode}: {exc.output[-400:]}") from None


def measure(curve_name: str, sizes: list[int], anchors: Path, timeout_s: float) -> dict[int, SpparkStage | str]:
    """Per size the harness's stage, or why it was not run (no binary, or its error)."""
    binary = harness(curve_name, anchors)
    if binary is None:
        return {k: f"not run (no {anchors / HARNESS[curve_name]})" for k in sizes}
    out: dict[int, SpparkStage | str] = {}
    for k in sizes:
        try:
            out[k] = run(binary, k, timeout_s)
        except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
            out[k] = f"not run ({type(exc).__name__}: {exc})"
        print(f"sppark 2^{k}: {out[k]}", flush=True)
    return out


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[24])
    parser.add_argument("--curve", choices=sorted(HARNESS), default="bls12381")
    parser.add_argument("--anchors", type=Path, default=REPO / ".anchors")
    parser.add_argument("--timeout", type=float, default=400.0, help="seconds per harness call")
    args = parser.parse_args()
    rows = []
    for k, stage in measure(args.curve, args.sizes, args.anchors, args.timeout).items():
        if isinstance(stage, str):
            rows.append([f"2^{k}", stage, "", "", "", "", "", ""])
            continue
        rows.append([f"2^{k}", f"{stage.g1_ms:.1f}", f"{stage.g1_bits_ms:.1f}", f"{stage.g2_ms:.1f}",
                     f"{stage.g2_bits_ms:.1f}", f"{stage.ntt_ms:.2f}", f"{stage.stage_ms(False):.0f}",
                     f"{stage.stage_ms(True):.0f}"])
    print(markdown_table(["size", "G1 ms", "G1 80% {0,1} ms", "G2 ms", "G2 80% {0,1} ms", "NTT ms",
                          "stage ms (random)", "stage ms (bit-heavy)"], rows))


if __name__ == "__main__":
    main()
