"""How fast ``read_zkey`` loads a key: synthetic BN254/BLS12-381 zkeys of 2^k variables and constraints.

    python3 -m bench.zkey_load [--log-sizes 16 18 20] [--curves bn128 bls12381] [--repeat 3] [--dir DIR]

The key is written with ``write_random_zkey`` (real vk points, random point arrays), so it sits
in the page cache when read: the numbers are warm-cache load speed (parsing + copying into
aligned numpy arrays), not disk speed. ``raw read`` is the same bytes in one ``readinto`` into
a numpy buffer, the floor our reader is compared with. Writes bench/results/zkey_load.md (--out).
"""
from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import RESULTS, add_curves, arg_parser, best_of_s, write_result
from pipeline.curves import curve_by_name
from pipeline.formats.zkey import read_zkey
from pipeline.formats.zkey_writer import write_random_zkey

OUT = RESULTS / "zkey_load.md"


def raw_read_seconds(path: str) -> float:
    size = os.path.getsize(path)
    buf = np.empty(size, dtype=np.uint8)
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        view, done = memoryview(buf), 0
        while done < size:
            done += fh.readinto(view[done:])
    return time.perf_counter() - t0


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--log-sizes", type=int, nargs="+", default=[16, 18, 20])
    add_curves(parser)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write the synthetic keys (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"markdown result file (default {OUT})")
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for curve_name in args.curves:
            curve = curve_by_name(curve_name)
            for log_n in args.log_sizes:
                n = 1 << log_n
                path = os.path.join(tmp, f"{curve.name}_{log_n}.zkey")
                t0 = time.perf_counter()
                write_random_zkey(path, curve, n_vars=n, domain_size=n, n_public=1, seed=log_n)
                write_s = time.perf_counter() - t0
                size = os.path.getsize(path)
                read_zkey(path)  # warm the page cache and imports
                load_s = best_of_s(args.repeat, lambda: read_zkey(path))
                raw_s = min(raw_read_seconds(path) for _ in range(args.repeat))
                rows.append((curve.name, log_n, size / 2**20, load_s, size / load_s / 1e9, raw_s, size / raw_s / 1e9,
                             write_s))
                print(f"{curve.name} 2^{log_n}: {size / 2**20:.0f} MiB, read_zkey {load_s * 1e3:.1f} ms "
                      f"({size / load_s / 1e9:.2f} GB/s), raw read {size / raw_s / 1e9:.2f} GB/s", file=sys.stderr)
                os.remove(path)

    lines = [
        "# zkey load speed (`read_zkey`, warm page cache)",
        "",
        f"Host: {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, numpy {np.__version__}. "
        f"Keys: `write_random_zkey`, nVars = domainSize = 2^k, nPublic = 1, 2 coefficients per constraint. "
        f"Best of {args.repeat}. GB = 1e9 bytes.",
        "",
        "`raw read`: the same bytes in one single-threaded `readinto`. `read_zkey` reads in 32 MiB pieces on up to "
        "8 threads and unpacks/checks coefficients in blocks on them too, which is how it passes `raw read` on big "
        "keys. Its fixed cost (tens of ms) is the vk checks: three G2 subgroup checks in pure Python.",
        "",
        "| curve | k | file MiB | read_zkey ms | read_zkey GB/s | raw read ms | raw read GB/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for curve_name, log_n, mib, load_s, load_gbs, raw_s, raw_gbs, _ in rows:
        lines.append(f"| {curve_name} | {log_n} | {mib:.0f} | {load_s * 1e3:.1f} | {load_gbs:.2f} | "
                     f"{raw_s * 1e3:.1f} | {raw_gbs:.2f} |")
    write_result(args.out, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
