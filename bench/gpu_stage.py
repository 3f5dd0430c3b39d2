"""The whole GPU stage of one proof (spmv + coset NTTs + the five MSMs, G2 included) on the CUDA
backend, for keys of 2^k constraints made with random points (MSM cost does not depend on the
points' origin; see bench.common). Prints a markdown table and writes
bench/results/gpu_stage_<sizes>.md.

    python3 -m bench.gpu_stage [LOG_SIZES...]   e.g. 20 22   (both curves)
"""
from __future__ import annotations

import dataclasses
import statistics
import time

import numpy as np

from bench.common import add_log_sizes, arg_parser, bit_heavy, markdown_table, random_below, result_path, time_ms, write_result
from pipeline.backends.cuda import CudaBackend
from pipeline.backends.cuda.options import CudaOptions
from pipeline.backends.cuda.device import CudaDevice
from pipeline.backends.protocol import WitnessShape
from pipeline.backends.cuda.kernels import grid_for
from pipeline.backends.cuda.launch import LEVEL0_CHUNKED, SPMV_BLOCK, TABLE_SETS
from pipeline.curves import BLS12_381, BN254
from pipeline.formats.types import Groth16Zkey
from pipeline.formats.zkey_writer import random_limbs

REPEAT = 3
CURVES = (BN254, BLS12_381)


def stage_once(backend, key, witness, shape=None, prefetched: bool = False) -> dict[str, float]:
    """The engine's path: the partition's work queued at once, then waited for; the split into
    H and MSMs comes from CUDA events between the phases, the total is wall clock. With the
    witness's ``shape`` (prep_msm counts it in the engine, off the clock) the backend may split.
    ``prefetched``: the witness is on the device before the clock starts, as the engine's later
    partitions find it (their copy ran while the partition before held the GPU: witness_prefetch.py)."""
    if prefetched:
        if not backend.prefetch_witness(witness):
            raise RuntimeError("the witness prefetch did not start: CudaOptions.witness_prefetch is off, or "
                               "the VRAM budget has no room for the copy")
        backend.device.synchronize()  # the copy (on the backend's copy stream) done before the clock
    t0 = time.perf_counter()
    work = backend.start_partition(key, witness, True, shape)
    work.wait_blocking()
    msms = work.result()
    t2 = time.perf_counter()
    return {**msms.timings_ms, "total_ms": (t2 - t0) * 1e3}


def random_key(curve, log_n: int, rng) -> Groth16Zkey:
    """A key of 2^log_n constraints in memory: random coordinates, two A/B coefficients per row."""
    n = 1 << log_n
    n_vars, n_public = n - 8, 3
    q, limbs = curve.fq.modulus, curve.fq.limbs
    count = 4 * n
    g1, g2 = curve.g1.generator, curve.g2.generator
    return Groth16Zkey(
        path=f"<random 2^{log_n}>", curve=curve, n_vars=n_vars, n_public=n_public, domain_size=n,
        alpha1=g1, beta1=g1, beta2=g2, gamma2=g2, delta1=g1, delta2=g2, ic=(g1,) * (n_public + 1),
        coeff_matrix=rng.integers(0, 2, size=count, dtype=np.uint32),
        coeff_constraint=rng.integers(0, n, size=count, dtype=np.uint32),
        coeff_signal=rng.integers(0, n_vars, size=count, dtype=np.uint32),
        coeff_values_stored=random_limbs(rng, (count, curve.fr.limbs), curve.fr.modulus),
        points_a=random_limbs(rng, (n_vars, 2, limbs), q),
        points_b1=random_limbs(rng, (n_vars, 2, limbs), q),
        points_b2=random_limbs(rng, (n_vars, 2, 2, limbs), q),
        points_c=random_limbs(rng, (n_vars - n_public - 1, 2, limbs), q),
        points_h=random_limbs(rng, (n, 2, limbs), q))


def spmv_ms(backend, key, witness, block: int = SPMV_BLOCK) -> float:
    """The a, b kernel alone (CUDA events), the same launch compute_h makes (at ``block`` threads)."""
    n, elem, alloc, csr = key.zkey.domain_size, 32, backend.allocator, key.d_csr
    with alloc.upload(witness, "witness") as d_w, alloc.alloc(n * elem, "a") as d_a, \
            alloc.alloc(n * elem, "b") as d_b:
        args = (d_a.ptr, d_b.ptr, csr["a_row_ptr"].ptr, csr["a_cols"].ptr, csr["a_vals_rr"].ptr,
                csr["b_row_ptr"].ptr, csr["b_cols"].ptr, csr["b_vals_rr"].ptr, d_w.ptr, n)
        return time_ms(backend.stream, lambda: key.runtime.kernels.launch(
            "spmv_ab<fr_t>", grid_for(n, block), block, args, backend.stream))


def profile_text(backend, key, witness, shape, runs: int = 20, top: int = 30) -> str:
    """cProfile of ``runs`` stages (after the rows' warm-up): where the host's time goes, the
    part of a small proof's stage that no kernel accounts for."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        stage_once(backend, key, witness, shape)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def bench(curve, log_n: int, profiles: dict[str, str] | None = None, batched_windows: bool = False,
          shared_sort: bool = False, window_model: tuple[float, float] | None = None,
          fixed_base: bool = False, model_widths: bool = False, table_sets: tuple[tuple[int, ...], ...] = (),
          prefetched: bool = False, vram_free_share: float | None = None, level0: str | None = None,
          partial_tree: bool = False, bit_shares: tuple[float, ...] = (0.8, 0.95)) -> list[list]:
    t1 = time.perf_counter()
    zkey = random_key(curve, log_n, np.random.default_rng(log_n))
    t2 = time.perf_counter()
    backend = CudaBackend(options=CudaOptions() if vram_free_share is None
                          else CudaOptions(vram_free_share=vram_free_share))
    key = backend.load_key(zkey)
    t3 = time.perf_counter()
    rng = np.random.default_rng(log_n)
    rows = []
    random_witness = random_below(rng, zkey.n_vars, 4, curve.fr.bits)
    msm = backend.runtime(curve).msm
    defaults = {"batched": backend.batched_window_combination, "shared": msm.shared_sort, "model": msm.window_model,
                "measured": msm.measured_widths, "prefetched": False, "level0": None,
                "levels": msm.partial_levels}
    base = [("random", 0.0, False)]
    for share in bit_shares:  # each share plain and through the 0/1 split (CudaOptions.msm_split_min_bits)
        base += [(f"{share:.0%} {{0,1}}", share, False), (f"{share:.0%} {{0,1}}, split", share, True)]
    cases = [(label, bits, split, {}) for label, bits, split in base]
    # the same witnesses (random, and the split rows) once more with options set another way: (the options
    # and their values, what a row's label says of them)
    others = []
    if batched_windows:
        flip = not defaults["batched"]
        others.append(({"batched": flip}, "batched windows" if flip else "per-MSM window combination"))
    if shared_sort:
        flip = not defaults["shared"]
        others.append(({"shared": flip}, "one sort for A, B1, B2, C" if flip else "a sort per MSM"))
    if window_model is not None:  # the MSMs' window widths by another cost model (msm.plan_msm)
        others.append(({"model": window_model}, f"window model {window_model[0]:g}, {window_model[1]:g}"))
    if model_widths:  # the model's widths where msm.MEASURED_WIDTHS has others
        others.append(({"measured": False}, "the model's widths, not the measured ones"))
    if prefetched:  # the stage as the engine's later partitions hold the GPU lock for it: no upload inside
        others.append(({"prefetched": True}, "witness prefetched"))

    def also_prefetched(flipped: dict, says: str) -> None:  # a variant's rows, and with --prefetched as the engine runs it
        others.append((flipped, says))
        if prefetched:
            others.append(({**flipped, "prefetched": True}, f"{says}, witness prefetched"))

    if level0:  # level 0 flat in every MSM, or session 54's default: BLS12-381's G2 chunked (MsmRunner.level0_chunked)
        also_prefetched({"level0": level0}, f"level 0 {level0}")
    if partial_tree:  # level 0's pieces summed by the levels before session 56 (MsmRunner.partial_levels)
        also_prefetched({"levels": "tree"}, "partial tree")
    # last: the key reloaded with the tables place_key gives it under the whole budget, then with each table of
    # the first of the --fixed-base-sets counts that fits
    for sets in ([TABLE_SETS] if fixed_base else []) + list(table_sets):
        also_prefetched({"tables": sets}, "fixed-base tables")
    for flipped, says in others:
        cases += [(f"{label}, {says}", bits, split, flipped) for label, bits, split in base if split or not bits]
    load_s = t3 - t2
    loaded_sets = None  # the bucket sets the key's tables were chosen from (None: loaded plain)
    tableless = set()  # bucket-set choices that gave no table: their rows would repeat the plain ones
    for label, bits, split, flipped in cases:
        settings = {**defaults, **flipped}
        if settings.get("tables") in tableless:
            continue
        if settings.get("tables") and settings["tables"] != loaded_sets:
            backend.fixed_base = True
            backend.options = dataclasses.replace(backend.options, msm_fixed_base_sets=settings["tables"])
            placement = backend.place_key(zkey, backend.memory_budget_bytes())  # the budget's, not what is free
            if not placement.fixed_base:
                tableless.add(settings["tables"])
                print(f"  no table fits beside the key ({placement.device_bytes / 1e9:.1f} GB; refused: "
                      f"{'; '.join(placement.tables_refused) or 'none offered'}): its rows left out", flush=True)
                continue
            loaded_sets = settings["tables"]
            backend.unload_key(key)
            t4 = time.perf_counter()
            key = backend.load_key(zkey, placement)
            backend.stream.synchronize()
            load_s = time.perf_counter() - t4
            print(f"  tables for {placement.fixed_base}: key {placement.device_bytes / 1e9:.1f} GB, "
                  f"loaded in {load_s:.1f} s", flush=True)
        if settings.get("tables"):
            label = label.replace("fixed-base tables", "tables of " + ("+".join(
                s if t.plan.table_sets == 1 else f"{s}/{t.plan.table_sets}" for s, t in key.tables.items())
                or "none"))  # b2/2: B2's table of two bucket sets
        witness = bit_heavy(np.random.default_rng(log_n + int(100 * bits)), random_witness, bits)
        witness[0] = [1, 0, 0, 0]
        # staged in page-locked memory, as the engine's prep_msm stage hands it to the GPU stage
        staged = backend.pinned_host_buffer(witness.nbytes)
        pinned = staged.view(np.uint64, witness.shape)
        pinned[...] = witness
        witness = pinned
        shape = WitnessShape.of(witness, zkey.n_public + 1)
        backend.msm_split_min_bits = 0.0 if split else 2.0  # 2.0: never
        backend.batched_window_combination = settings["batched"]
        msm.shared_sort = settings["shared"]
        msm.window_model = settings["model"]
        msm.measured_widths = settings["measured"]
        msm.level0_flat = True if settings["level0"] == "flat" else None
        msm.level0_chunked = {("bls12381", "G2")} if settings["level0"] == "chunked" else set(LEVEL0_CHUNKED)
        msm.partial_levels = settings["levels"]
        stage_once(backend, key, witness, shape, settings["prefetched"])  # warm-up (kernel load, twiddles)
        spmv = spmv_ms(backend, key, witness)
        runs = [stage_once(backend, key, witness, shape, settings["prefetched"]) for _ in range(REPEAT)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append([curve.name, f"2^{log_n}", label, f"{med['total_ms']:.0f}", f"{med['upload_ms']:.1f}", f"{spmv:.2f}",
                     f"{med['h_ms']:.1f}",
                     f"{med['msm_a_ms']:.0f}", f"{med['msm_b1_ms']:.0f}", f"{med['msm_b2_ms']:.0f}",
                     f"{med['msm_c_ms']:.0f}", f"{med['msm_h_ms']:.0f}", f"{med.get('msm_combine_ms', 0.0):.2f}",
                     f"{load_s:.2f}"])
        print(rows[-1], flush=True)
        if profiles is not None and label == "random":
            profiles[f"{curve.name} 2^{log_n}, {label} witness"] = profile_text(backend, key, witness, shape)
        del witness, pinned
        staged.free()
    backend.unload_key(key)
    backend.close()
    print(f"  (random key made in {t2 - t1:.1f} s)", flush=True)
    return rows


def main() -> None:
    parser = arg_parser(__doc__)
    add_log_sizes(parser, [20], "log2 constraints")
    parser.add_argument("--cprofile", action="store_true",
                        help="append a cProfile of 20 stages per size and curve (random witness) to the result")
    parser.add_argument("--curves", nargs="+", choices=[c.name for c in CURVES], default=[c.name for c in CURVES])
    parser.add_argument("--batched-windows", action="store_true",
                        help="rows with CudaOptions.msm_batched_window_combination the other way beside the "
                             "default's (random, 80%% split, 95%% split)")
    parser.add_argument("--shared-sort", action="store_true",
                        help="the same rows with CudaOptions.msm_shared_sort the other way")
    parser.add_argument("--fixed-base", action="store_true",
                        help="the same rows once more with the key reloaded with the fixed-base tables place_key "
                             "gives it under the whole budget (CudaOptions.msm_fixed_base); left out, with the reason, where none fits")
    parser.add_argument("--fixed-base-sets", nargs="+", default=[], metavar="S,S",
                        help="after those rows, once more per value with each table of the first of those bucket-set "
                             "counts that fits (CudaOptions.msm_fixed_base_sets), e.g. 2 or 2,1; a row names a two-set "
                             "table b2/2")
    parser.add_argument("--window-model", type=lambda v: tuple(float(x) for x in v.split(",")), default=None,
                        metavar="SPREAD,BUCKET_COST",
                        help="the same rows with the MSMs' windows planned by this cost model (e.g. 2.2,6.5, the "
                             "model before session 19) beside the default's")
    parser.add_argument("--prefetched", action="store_true",
                        help="the same rows with the witness on the device before the clock starts, as the engine's "
                             "later partitions find it (CudaOptions.witness_prefetch: its copy runs while the "
                             "partition before holds the GPU)")
    parser.add_argument("--model-widths", action="store_true",
                        help="the same rows with the window model's widths where msm.MEASURED_WIDTHS has others")
    parser.add_argument("--level0", choices=["flat", "chunked"], default=None,
                        help="the same rows with level 0 of the bucket sums flat in every MSM, or with BLS12-381's G2 "
                             "chunked at 64 entries a thread (the default to session 54; launch.LEVEL0_CHUNKED)")
    parser.add_argument("--partial-tree", action="store_true",
                        help="the same rows with level 0's pieces summed by the levels of fresh buffers before session "
                             "56 (MsmRunner.partial_levels = 'tree'), not in place")
    parser.add_argument("--bit-shares", type=lambda v: tuple(float(x) for x in v.split(",")), default=(0.8, 0.95),
                        metavar="S,S",
                        help="the bit-heavy witnesses' shares of values in {0, 1}, each timed plain and through the "
                             "split (e.g. 0.8,0.85,0.9,0.95: where the split starts to pay, CudaOptions.msm_split_min_bits)")
    parser.add_argument("--vram-free-share", type=float, default=None, metavar="SHARE",
                        help="CudaOptions.vram_free_share for the budget the tables are placed under (docs/seed_scale.md "
                             "gives 0.965 for H's table beside a 2^26 key on an H200); the default's otherwise")
    args = parser.parse_args()
    sizes, profiles = args.log_sizes, ({} if args.cprofile else None)
    header = ["curve", "constraints", "witness", "stage ms", "upload ms", "spmv ms", "H ms (upload+spmv+NTTs)", "A ms", "B1 ms", "B2 (G2) ms", "C ms",
              "H-MSM ms", "batched window combination ms", "key upload s"]
    rows = []
    for log_n in sizes:
        for curve in (c for c in CURVES if c.name in args.curves):
            rows += bench(curve, log_n, profiles, args.batched_windows, args.shared_sort, args.window_model,
                          args.fixed_base, args.model_widths,
                          tuple(tuple(int(n) for n in v.split(",")) for v in args.fixed_base_sets), args.prefetched,
                          args.vram_free_share, args.level0, args.partial_tree, args.bit_shares)
            write_table(sizes, header, rows, profiles, CudaDevice().name)  # after every curve: a time limit keeps the rows so far


def write_table(sizes: list[int], header: list[str], rows: list, profiles: dict | None, device: str) -> None:
    table = markdown_table(header, rows)
    note = (f"\nWhole GPU stage of one proof (wall clock around `start_partition` + its wait + `result`, "
            f"the host-side conversions included; the phase split from CUDA events), median of {REPEAT} "
            f"after one warm-up; key resident, witness uploaded each call from page-locked memory (the engine's "
            f"prep_msm stage stages it there; before session 14 this bench uploaded from pageable memory, which "
            f"cost ~0.3 s of H at 2^26). Device: {device}.\n")
    profiled = "".join(f"\n## Host profile: {what}\n\n```\n{text.strip()}\n```\n" for what, text in (profiles or {}).items())
    write_result(result_path(f"gpu_stage_{'_'.join(map(str, sizes))}.md"),
                 "# GPU stage\n" + note + "\n" + table + "\n" + profiled, show=table)


if __name__ == "__main__":
    main()
