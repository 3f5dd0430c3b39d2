"""Key preparation: the old parse + argsort CSR against the key cache's first and next starts.

    python3 -m bench.key_prepare [LOG_SIZE...] [--curves bls12381] [--order random|snarkjs] [--cold]
                                 [--upload] [--repeat 1] [--dir DIR] [--out FILE]

Per size, a random zkey of 2^k variables and constraints (2 coefficients per constraint,
``write_random_zkey``: random order, or snarkjs's constraint-by-constraint order) and, timed:

- old: ``read_zkey`` + the argsort CSR that ``CudaBackend.load_key`` ran before the key cache;
- no cache: ``read_zkey`` + the counting-sort CSR (``keycache.csr_matrices``);
- first start: ``prepare_key`` with no cache (hash, parse, sort, write the cache folder; the
  points are mapped, not read: "+ read" below reads them);
- next start: ``prepare_key`` opening the cache (hash sections 1-4, check the cache's checksums,
  map); "+ read" also reads every byte the backend uploads (points and CSR), in 64 MiB pieces on
  the worker threads, the host side of a load;
- with ``--upload`` (GPU host): the same three ways into ``CudaBackend.load_key``, the key on the
  GPU at the end.

GB/s is the zkey file's size over the time. Without ``--cold`` the key sits in the page cache
(just written), so the numbers are CPU and memory speed; ``--cold`` evicts the key's and the
cache's pages (``posix_fadvise(DONTNEED)``) before every timing: disk speed.
Writes bench/results/key_prepare_<curve>_<sizes>[_snarkjs][_cold][_upload].md (or --out).
"""
from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import RESULTS, add_curves, add_log_sizes, arg_parser, markdown_table, write_result
from pipeline.curves import curve_by_name
from pipeline.formats.binfile import over_chunks
from pipeline.formats.types import MATRIX_A, MATRIX_B
from pipeline.formats.zkey import read_zkey
from pipeline.formats.zkey_writer import write_random_zkey
from pipeline.keycache import KeyCacheSettings, csr_matrices, prepare_key

PIECE = 64 << 20


def argsort_csr(zkey, matrix: int):
    """The CSR build this project used before the key cache (single-threaded stable argsort): the baseline."""
    mask = zkey.coeff_matrix == matrix
    rows = zkey.coeff_constraint[mask].astype(np.int64)
    order = np.argsort(rows, kind="stable")
    row_ptr = np.zeros(zkey.domain_size + 1, dtype=np.uint32)
    np.cumsum(np.bincount(rows, minlength=zkey.domain_size), out=row_ptr[1:])
    cols = np.ascontiguousarray(zkey.coeff_signal[mask][order], dtype=np.uint32)
    vals = np.ascontiguousarray(zkey.coeff_values_stored[mask][order], dtype=np.uint64)
    return row_ptr, cols, vals


def upload_arrays(zkey) -> list[np.ndarray]:
    arrays = [getattr(zkey, f"points_{n}") for n in ("a", "b1", "b2", "c", "h")]
    return arrays + [a for m in csr_matrices(zkey) for a in (m.row_ptr, m.cols, m.vals)]


def read_through(arrays: list[np.ndarray]) -> None:
    """Every byte copied once into a per-piece scratch buffer, on the worker threads (as into pinned staging)."""
    for arr in arrays:
        flat = np.asarray(arr).reshape(-1).view(np.uint8)
        over_chunks(flat.shape[0], PIECE, lambda a, b: np.copyto(np.empty(b - a, np.uint8), flat[a:b]))


def evict(paths: list[Path]) -> None:
    """Drop these files' clean pages from the page cache (the next read comes from the disk)."""
    for path in paths:
        for f in ([path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]):
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def timed(fn, repeat: int, before=lambda: None) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        before()
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def measure(path: Path, cache: Path, repeat: int, cold: bool, backend) -> dict[str, float]:
    settings = KeyCacheSettings(cache_dir=str(cache))
    fresh = lambda: shutil.rmtree(cache, ignore_errors=True) or (evict([path]) if cold else None)  # noqa: E731
    warm = lambda: evict([path, cache]) if cold else None  # noqa: E731
    t = {}
    t["old"], _ = timed(lambda: [argsort_csr(z, m) for z in [read_zkey(path)] for m in (MATRIX_A, MATRIX_B)],
                        repeat, fresh)
    t["no cache"], _ = timed(lambda: csr_matrices(read_zkey(path)), repeat, fresh)
    t["first start"], first = timed(lambda: prepare_key(path, settings), repeat, fresh)
    assert first.source == "built", first.reason
    t["first start + read"], _ = timed(lambda: read_through(upload_arrays(prepare_key(path, settings).zkey)), repeat,
                                       fresh)
    t["next start"], hit = timed(lambda: prepare_key(path, settings), repeat, warm)
    assert hit.source == "cache", hit.reason
    t["next start + read"], _ = timed(lambda: read_through(upload_arrays(prepare_key(path, settings).zkey)), repeat,
                                      warm)
    if backend is not None:
        def to_gpu(zkey):
            backend.unload_key(backend.load_key(zkey))  # the upload included, the memory given back

        t["gpu: no cache"], _ = timed(lambda: to_gpu(read_zkey(path)), repeat, fresh)
        t["gpu: first start"], _ = timed(lambda: to_gpu(prepare_key(path, settings).zkey), repeat, fresh)
        t["gpu: next start"], _ = timed(lambda: to_gpu(prepare_key(path, settings).zkey), repeat, warm)
    return t


def main() -> None:
    parser = arg_parser(__doc__)
    add_log_sizes(parser, [18, 20, 22])
    add_curves(parser, ("bls12381",))
    parser.add_argument("--order", choices=("random", "snarkjs"), default="random",
                        help="coefficient order in the key (snarkjs: constraint by constraint)")
    parser.add_argument("--cold", action="store_true", help="evict the files from the page cache before each timing")
    parser.add_argument("--upload", action="store_true", help="also time CudaBackend.load_key (GPU host)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--dir", default=None, help="where the keys and caches go (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    backend = None
    if args.upload:
        from pipeline.backends.cuda.backend import CudaBackend

        backend = CudaBackend()
        for curve_name in args.curves:
            backend.prepare(curve_by_name(curve_name), max(args.log_sizes))  # kernels and twiddles not timed

    rows, columns = [], None
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for curve_name in args.curves:
            curve = curve_by_name(curve_name)
            for log_n in args.log_sizes:
                path = Path(tmp) / f"{curve.name}_{log_n}.zkey"
                write_random_zkey(path, curve, n_vars=1 << log_n, domain_size=1 << log_n, n_public=1, seed=log_n,
                                  snarkjs_order=args.order == "snarkjs")
                size = path.stat().st_size
                t = measure(path, Path(tmp) / "cache", args.repeat, args.cold, backend)
                columns = list(t)
                rows.append([curve.name, log_n, f"{size / 1e9:.2f}"] +
                            [f"{t[c]:.2f} s, {size / t[c] / 1e9:.2f} GB/s" for c in columns] +
                            [f"{t['old'] / t['first start + read']:.1f}x", f"{t['old'] / t['next start + read']:.1f}x"])
                print(f"{curve.name} 2^{log_n}: " + ", ".join(f"{c} {t[c]:.2f} s" for c in columns), flush=True)
                path.unlink()
                shutil.rmtree(Path(tmp) / "cache", ignore_errors=True)
    if backend is not None:
        backend.close()

    sizes = "_".join(str(k) for k in args.log_sizes)
    variant = "".join(f"_{name}" for name, on in (("snarkjs", args.order == "snarkjs"), ("cold", args.cold),
                                                   ("upload", args.upload)) if on)
    out = args.out or RESULTS / f"key_prepare_{'_'.join(args.curves)}_{sizes}{variant}.md"
    text = "\n".join([
        "# Key preparation: old parse + argsort CSR vs the key cache (bench/key_prepare.py)",
        "",
        f"Host: {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, numpy {np.__version__}. "
        f"Keys: `write_random_zkey`, nVars = domainSize = 2^k, 2 coefficients per constraint in {args.order} order. "
        f"{'Cold: key and cache evicted from the page cache before each timing' if args.cold else 'Warm page cache'}; "
        f"best of {args.repeat}. GB = 1e9 bytes of zkey file; GB/s = zkey bytes / time.",
        "",
        "old = `read_zkey` + argsort CSR (before); no cache = `read_zkey` + counting-sort CSR; first start = "
        "`prepare_key` building the cache; next start = `prepare_key` opening it (+ read: every byte the backend "
        "uploads read once, which old and no cache did while parsing); gpu: into `CudaBackend.load_key`, upload "
        "included. Ratios: old over first start + read, old over next start + read.",
        "",
        markdown_table(["curve", "k", "key GB", *columns, "old / first+read", "old / next+read"], rows),
        "",
    ])
    write_result(out, text)


if __name__ == "__main__":
    main()
