"""Seed-shaped circuits (pipeline.synth): generation time, file writing time and peak host
memory per size, one fresh process per (curve, size) so that each peak is its own.

    python3 -m bench.synth_circuit [--sizes 16-22] [--curves bls12381,bn128] [--public 8]
        [--dir /tmp/zkpipe-synth] [--no-write] [--check-up-to 18] [--results synth_circuit]

Writes bench/results/<results>.md with the shape used. Files are written to --dir (removed
after each size) when the disk has room, else the row says "in memory only". On the GPU host:
    python3 -m bench.synth_circuit --sizes 24-27 --curves bls12381 --results synth_circuit_h200
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.common import REPO, markdown_table, result_path, write_result

GIB = 2**30


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def child(log_constraints: int, curve: str, n_public: int, folder: str | None, check: bool) -> dict:
    """One size in this process: generate, optionally check, optionally write; timings and peaks."""
    from pipeline.formats.r1cs_writer import write_r1cs
    from pipeline.formats.wtns import write_wtns
    from pipeline.synth import circuit_stats, generate_circuit
    from pipeline.synth.check import first_unsatisfied

    base = peak_rss_bytes()
    t0 = time.perf_counter()
    r1cs, witness = generate_circuit(log_constraints, n_public, curve, seed=log_constraints)
    row = {"generate_s": time.perf_counter() - t0, "peak_generate": peak_rss_bytes(), "base": base}
    row.update(circuit_stats(r1cs, witness))
    if check:
        t0 = time.perf_counter()
        row["satisfied"] = first_unsatisfied(r1cs, witness) is None
        row["check_s"] = time.perf_counter() - t0
    if folder:
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        row["r1cs_bytes"] = write_r1cs(out / "circuit.r1cs", r1cs)
        row["write_r1cs_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        write_wtns(out / "witness.wtns", r1cs.curve, witness.values)
        row["write_wtns_s"] = time.perf_counter() - t0
        row["wtns_bytes"] = (out / "witness.wtns").stat().st_size
    row["peak_total"] = peak_rss_bytes()
    return row


def run_size(args, curve: str, k: int) -> dict:
    from pipeline.curves import curve_by_name
    from pipeline.formats.r1cs_writer import r1cs_file_bytes
    from pipeline.synth import CircuitShape, plan_rows
    from pipeline.synth.circuit import planned_terms

    c = curve_by_name(curve)
    plan = plan_rows(k, args.public, c, CircuitShape())
    need = r1cs_file_bytes(c.fr.n_bytes, plan.n_constraints, sum(planned_terms(plan, CircuitShape())),
                           plan.n_constraints + 1) + c.fr.n_bytes * (plan.n_constraints + 1)
    folder = Path(args.dir) / f"{curve}_2e{k}"
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    write = not args.no_write and need + (1 << 30) < shutil.disk_usage(args.dir).free
    cmd = [sys.executable, "-m", "bench.synth_circuit", "--child", str(k), curve, "--public", str(args.public)]
    if write:
        cmd += ["--write-to", str(folder)]
    if k <= args.check_up_to:
        cmd.append("--check")
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    shutil.rmtree(folder, ignore_errors=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table_row(curve: str, k: int, r: dict) -> list:
    if "error" in r:
        return [curve, f"2^{k}", "failed: " + r["error"]] + [""] * 10
    n = r["constraints"]
    wrote = "r1cs_bytes" in r
    write_s = r.get("write_r1cs_s", 0) + r.get("write_wtns_s", 0)
    file_gib = (r.get("r1cs_bytes", 0) + r.get("wtns_bytes", 0)) / GIB
    return [curve, f"2^{k}", n, f"{r['terms_a']:.2f} / {r['terms_b']:.2f} / {r['terms_c']:.2f}",
            f"{r['bit_fraction']:.3f}", f"{r['generate_s']:.2f}", f"{r['peak_generate'] / GIB:.2f}",
            f"{(r['peak_generate'] - r['base']) / n:.0f}",
            f"{file_gib:.2f}" if wrote else "in memory only",
            f"{write_s:.2f}" if wrote else "", f"{file_gib / write_s:.2f}" if wrote and write_s else "",
            f"{r['peak_total'] / GIB:.2f}",
            f"{r['check_s']:.1f}{'' if r['satisfied'] else ' UNSATISFIED'}" if "check_s" in r else ""]


def sizes(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--child", nargs=2, metavar=("K", "CURVE"), help=argparse.SUPPRESS)
    p.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--write-to", help=argparse.SUPPRESS)
    p.add_argument("--sizes", default="16-22")
    p.add_argument("--curves", default="bls12381,bn128")
    p.add_argument("--public", type=int, default=8)
    p.add_argument("--dir", default="/tmp/zkpipe-synth")
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--check-up-to", type=int, default=18, help="check the witness up to this size")
    p.add_argument("--results", default="synth_circuit")
    args = p.parse_args()
    if args.child:
        k, curve = args.child
        print(json.dumps(child(int(k), curve, args.public, args.write_to, args.check)))
        return

    from pipeline.synth import CircuitShape

    header = ["curve", "domain", "constraints", "terms/row A / B / C", "bits", "generate s", "peak GiB",
              "peak B/constraint", "files GiB", "write s", "write GiB/s", "peak GiB with write", "check s"]
    rows = []
    for curve in args.curves.split(","):
        for k in sizes(args.sizes):
            rows.append(table_row(curve, k, run_size(args, curve, k)))
            print(" | ".join(str(c) for c in rows[-1]), flush=True)
    table = markdown_table(header, rows)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    text = (f"# Seed-shaped circuits: generation, writing, peak memory\n\n"
            f"`python3 -m bench.synth_circuit --sizes {args.sizes} --curves {args.curves}`; {platform.node()}, "
            f"{os.cpu_count()} CPUs, {memory:.0f} GiB, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}."
            f"\n\nShape (pipeline.synth.CircuitShape defaults, {args.public} public inputs, seed = k): "
            f"{CircuitShape().describe()}.\n"
            f"Peak = the process's max RSS (one process per row); B/constraint = peak above the interpreter's own.\n"
            f"Files = circuit.r1cs + witness.wtns; check = synth.check.first_unsatisfied (numpy).\n\n{table}\n")
    out = result_path(f"{args.results}.md")
    write_result(out, text, show=f"wrote {out}")


if __name__ == "__main__":
    main()
