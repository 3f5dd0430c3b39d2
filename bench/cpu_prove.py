"""The reference (CPU, Python-int) prover: time per step for fixture circuits, both curves.

    python3 -m bench.cpu_prove [FIXTURE_DIR ...]     (default: tests/fixtures/*/chain_2e*)

A fixture dir holds circuit_final.zkey and witness.wtns. Writes bench/results/cpu_prove.md.
"""
from __future__ import annotations

import os
import platform
import time

from bench.common import add_fixture_dirs, arg_parser, fixture_dirs, markdown_table, result_path, write_result
from pipeline import progress
from pipeline.backends.cpu import CpuBackend
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey
from pipeline.groth16 import prove


def main() -> None:
    parser = arg_parser(__doc__)
    add_fixture_dirs(parser)
    dirs = fixture_dirs(parser.parse_args().fixtures, "chain_2e*")
    rows = []
    for folder in progress.iterate(dirs, "fixtures proved"):
        t0 = time.perf_counter()
        zkey = read_zkey(folder / "circuit_final.zkey")
        witness = read_wtns(folder / "witness.wtns")
        t1 = time.perf_counter()
        backend = CpuBackend()
        key = backend.load_key(zkey)
        t2 = time.perf_counter()
        proof = prove(backend, key, zkey, witness)
        t3 = time.perf_counter()
        ms = proof.timings_ms
        rows.append([zkey.curve.name, folder.name, zkey.n_vars, f"2^{zkey.log_domain_size}", f"{(t1 - t0) * 1e3:.0f}",
                     f"{(t2 - t1) * 1e3:.0f}", f"{ms['h_ms']:.0f}", f"{ms['msm_ms']:.0f}", f"{ms['msm_b2_ms']:.0f}",
                     f"{(t3 - t2):.2f}"])
        print(rows[-1], flush=True)
    table = markdown_table(["curve", "circuit", "signals", "domain", "read ms", "decode key ms", "H ms",
                            "MSMs ms", "of which G2 ms", "prove s"], rows)
    text = (f"# Reference CPU prover\n\nOne proof each, pure Python ints (`pipeline/backends/cpu`), on "
            f"{platform.machine()} with {os.cpu_count()} cores ({platform.python_version()}).\n\n{table}\n")
    write_result(result_path("cpu_prove.md"), text, show=table)


if __name__ == "__main__":
    main()
