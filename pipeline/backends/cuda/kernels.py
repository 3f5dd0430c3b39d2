"""The build units, their kernel instantiations, and typed launches.

Each unit in ``UNITS`` is ``cuda_src/programs/<unit>.cu``; its kernels are bound to a curve by
name expressions over the typedefs of ``cuda_src/curve_types.cuh`` (fr_t, fq_t, fq2_t, fq2_pair_t).
``SIGNATURES`` gives each kernel's parameter types, so a launch converts Python ints to the
exact C types (a wrong argument count is a Python error, not a garbled launch).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ... import progress
from ...curves import Curve
from ._bindings import driver
from .constants import HEADER_NAME, curve_header
from .errors import CudaError, check
from .kernel_binaries import PREBUILT_DIR, find_prebuilt
from .launch_args import I32, PTR, U32, U64, ArgLayout
from .launch import (G1_LAZY_BUILT, G1_LEVEL0_CHUNKED_BUILT, G1_MIN_BLOCKS_BUILT, G2_FIELDS_BUILT, G2_LAZY_BUILT,
                     G2_LEVEL0_CHUNKED_BUILT, G2_VARIANTS_BUILT, LAZY_FIELDS, NTT_FUSED, NTT_RADIX_BUILT,
                     NTT_REVERSED)
from .nvrtc_build import BuiltUnit, compile_unit, load_cached_unit


UNITS: dict[str, tuple[str, ...]] = {
    "arith": (
        "test_field_op<fr_t>", "test_field_op<fq_t>", "test_field_op<fq2_t>", "test_field_op<fq2_pair_t>",
        "test_point_op<fq_t>", "test_point_op<fq2_t>", "test_point_op<fq2_pair_t>", "test_spin",
        *(f"test_{op}_op<{f}>" for op in ("field", "point") for f in LAZY_FIELDS.values()),
    ),
    "ntt": (
        *(f"ntt_pass<fr_t, {d}, {r}, false>" for d in ("false", "true") for r in NTT_RADIX_BUILT),
        *(f"ntt_pass<fr_t, false, {r}, true>" for r in NTT_RADIX_BUILT),
        *(f"ntt_pass_rev_in_place<fr_t, {r}>" for r in NTT_RADIX_BUILT),
        *(f"ntt_pass_pairs<fr_t, {d}, {i}, 0>" for d in ("false", "true") for i in ("false", "true")),
        *(f"ntt_pass_pairs<fr_t, true, false, {fuse}>" for fuse in NTT_FUSED),
        *(f"ntt_pass_pairs<fr_t, false, {'true' if inv else 'false'}, {fuse}>" for inv, fuse in NTT_REVERSED),
        "ntt_bit_reverse<fr_t>", "ntt_bit_reverse_tiles<fr_t>", "ntt_coset_scale<fr_t>",
        "ntt_quotient<fr_t>", "ntt_twiddles<fr_t>", "ntt_twiddle_lower<fr_t>",
        "ff_to_mont<fr_t>", "ff_from_mont<fr_t>", "ff_mul<fr_t>", "spmv_ab<fr_t>", "spmv_ab_table<fr_t>",
        "spmv_ab_short<fr_t>", "spmv_ab_table_short<fr_t>", "spmv_long_rows<fr_t>",
    ),
    "msm_g1": (
        "scan_tile_sums", "scan_tile_offsets", "scan_apply",
        "msm_count_digits", "msm_scatter_digits", "msm_bin_cursors", "msm_bin_digits", "msm_place_digits",
        "msm_chunk_counts", "msm_piece_counts", "msm_hot_chunk_counts",
        "msm_piece_class_counts", "msm_piece_class_order", "msm_classify", "msm_compact",
        "gather_rows", *(f"msm_accumulate_flat<fq_t, {b}>" for b in G1_MIN_BLOCKS_BUILT),
        *(f"msm_accumulate<fq_t, true, {b}>" for b in G1_LEVEL0_CHUNKED_BUILT),
        "msm_accumulate<fq_t, false, 1>", "msm_bucket_segments<fq_t>",
        *(f"msm_accumulate_flat<fq_lazy_t, {b}>" for b in G1_LAZY_BUILT),
        *(f"msm_accumulate<fq_lazy_t, true, {b}>" for b in G1_LEVEL0_CHUNKED_BUILT),
        "msm_accumulate<fq_lazy_t, false, 1>",
        *(f"{k}<{f}>" for f in ("fq_t", "fq_lazy_t") for k in ("msm_sum_pieces", "msm_sum_hot_chunks")),
        "msm_reduce_halves<fq_t>", "msm_combine_windows<fq_t>", "msm_combine_windows_batch<fq_t>",
        "msm_merge_buckets<fq_t>", "msm_iota",
        "msm_table_step<fq_t>",
        "setup_xyzz_to_affine<fq_t>",
    ),
    "msm_g2": (
        *(f"msm_accumulate_flat<{f}, {b}>" for f, b in G2_VARIANTS_BUILT),
        *(f"msm_accumulate<{f}, true, {b}>" for f, b in G2_LEVEL0_CHUNKED_BUILT),
        *(f"{k}<{f}>" for f in G2_FIELDS_BUILT for k in ("msm_bucket_segments", "msm_reduce_halves",
                                                          "msm_combine_windows", "msm_combine_windows_batch",
                                                          "msm_merge_buckets", "msm_table_step")),
        *(f"msm_accumulate<{f}, false, 1>" for f in G2_FIELDS_BUILT),
        *(f"msm_accumulate_flat<fq2_pair_lazy_t, {b}>" for b in G2_LAZY_BUILT),
        *(f"msm_accumulate<fq2_pair_lazy_t, true, {b}>" for b in G2_LAZY_BUILT), "msm_accumulate<fq2_pair_lazy_t, false, 1>",
        *(f"{k}<{f}>" for f in (*G2_FIELDS_BUILT, "fq2_pair_lazy_t") for k in ("msm_sum_pieces", "msm_sum_hot_chunks")),
        "setup_xyzz_to_affine<fq2_t>",
    ),
}

DEFAULT_SHARED_BYTES = 48 << 10  # dynamic shared memory a launch may ask for without raising the kernel's limit
BUILT_KERNELS = frozenset(e for exprs in UNITS.values() for e in exprs)  # every name expression some unit builds

# Parameter types by kernel (template arguments stripped); "fr" is an Fr element by value.
SIGNATURES: dict[str, tuple[str, ...]] = {
    "test_field_op": (PTR, PTR, PTR, I32, U32),
    "test_point_op": (PTR, PTR, PTR, PTR, PTR, I32, U32),
    "test_spin": (U64, PTR),
    "ntt_pass": (PTR, PTR, PTR, I32, I32, I32, I32, I32, I32, I32, "fr", I32),
    "ntt_pass_pairs": (PTR, PTR, I32, I32, I32, I32, I32, PTR, PTR, PTR),
    "ntt_pass_rev_in_place": (PTR, PTR, I32, I32, I32, I32, I32, "fr", I32),
    "ntt_bit_reverse": (PTR, I32, "fr"),
    "ntt_bit_reverse_tiles": (PTR, I32, "fr"),
    "ntt_coset_scale": (PTR, I32, PTR, PTR, I32),
    "ntt_quotient": (PTR, PTR, PTR, U64),
    "ntt_twiddles": (PTR, U64, PTR),
    "ntt_twiddle_lower": (PTR, I32),
    "ff_to_mont": (PTR, PTR, U64),
    "ff_from_mont": (PTR, PTR, U64),
    "ff_mul": (PTR, PTR, PTR, U64),
    "spmv_ab": (PTR, PTR, PTR, PTR, PTR, PTR, PTR, PTR, PTR, U32),
    "spmv_ab_table": (PTR, PTR, PTR, PTR, PTR, PTR, PTR, PTR, PTR, PTR, U32),
    "spmv_ab_short": (PTR, PTR, PTR, PTR, PTR, PTR, PTR, PTR, PTR, U32, U32),
    "spmv_ab_table_short": (PTR, PTR, PTR, PTR, PTR, PTR, PTR, PTR, PTR, PTR, U32, U32),
    "spmv_long_rows": (PTR, PTR, U32, PTR, PTR, PTR, PTR, PTR),
    "scan_tile_sums": (PTR, U64, PTR),
    "scan_tile_offsets": (PTR, U32),
    "scan_apply": (PTR, U64, PTR, PTR),
    "msm_count_digits": (PTR, U32, I32, I32, PTR, PTR, I32, U32),
    "msm_scatter_digits": (PTR, U32, I32, I32, PTR, PTR, PTR, PTR, U32, I32),
    "msm_bin_cursors": (PTR, U32, I32, PTR),
    "msm_bin_digits": (PTR, U32, I32, I32, I32, I32, PTR, PTR),
    "msm_place_digits": (PTR, PTR, U32, I32, I32, PTR, PTR, PTR),
    "msm_classify": (PTR, U64, PTR, PTR),
    "msm_compact": (PTR, U64, PTR, PTR, PTR, PTR, PTR, U32, U32),
    "gather_rows": (PTR, PTR, PTR, U64, U32, U32),
    "msm_chunk_counts": (PTR, U32, U32, PTR),
    "msm_piece_counts": (PTR, U32, U32, PTR),
    "msm_hot_chunk_counts": (PTR, U32, U32, U32, U32, PTR),
    "msm_piece_class_counts": (PTR, U32, U32, PTR),
    "msm_piece_class_order": (PTR, U32, U32, PTR, PTR, PTR),
    "msm_sum_pieces": (PTR, PTR, PTR, PTR, U32),
    "msm_sum_hot_chunks": (PTR, PTR, PTR, U32, U32, U32),
    "msm_accumulate": (PTR, PTR, PTR, PTR, PTR, PTR, U32, U32, PTR, U32),
    "msm_accumulate_flat": (PTR, PTR, PTR, PTR, PTR, PTR, U32, U32, PTR, U32),
    "msm_bucket_segments": (PTR, PTR, PTR, U32, U32, U32),
    "msm_reduce_halves": (PTR, U32, U32, U32),
    "msm_merge_buckets": (PTR, PTR, PTR, U32),
    "msm_iota": (PTR, U32),
    "msm_table_step": (PTR, PTR, U32, I32),
    "setup_xyzz_to_affine": (PTR, PTR, U64),
    "msm_combine_windows": (PTR, PTR, U32, U32, I32),
    "msm_combine_windows_batch": (PTR, PTR, PTR, PTR, PTR, PTR, PTR, PTR, U32, U32, U32, U32, U32),
}


def base_name(expr: str) -> str:
    return expr.split("<", 1)[0]


def _compile_one(job: tuple) -> BuiltUnit:
    unit, exprs, headers, arch, cache_dir, root = job
    return compile_unit(unit, headers, exprs, arch=arch, cache_dir=cache_dir, root=root)


def unit_headers(curve: Curve) -> dict[str, str]:
    """The in-memory headers every unit of ``curve`` is compiled with."""
    return {HEADER_NAME: curve_header(curve)}


def compile_jobs(jobs: dict, cache_dir=None, parallel: bool = True, root: Path | None = None) -> dict:
    """{key: (unit, name expressions, headers, arch)} -> {key: BuiltUnit}, from the NVRTC disk
    cache or compiled now, from the source tree ``root`` (None: the package's ``cuda_src``).

    Cached units load, and the others compile, in this process, on threads: cuda-bindings >= 13.0
    releases the GIL around every NVRTC call and NVRTC compiles distinct programs concurrently, so
    the units build in parallel. No worker process: spawned ones must re-import the host program's
    ``__main__``, which fails under ``python3 -`` (BrokenProcessPool), and forking a process that
    runs the driver's and the engine's threads may deadlock the child (bench/kernel_build.py).
    """
    built = {}
    for key, (unit, exprs, headers, arch) in jobs.items():
        cached = load_cached_unit(unit, headers, exprs, arch, cache_dir=cache_dir, root=root)
        if cached is not None:
            built[key] = cached
    missing = [key for key in jobs if key not in built]
    if not missing:
        return {key: built[key] for key in jobs}
    args = {key: (*jobs[key], cache_dir, root) for key in missing}
    what = ", ".join(sorted({str(key[0]) for key in missing}))
    with progress.bar(f"compiling CUDA kernels for {what} (first use; cached after)", total=len(missing),
                      unit="unit") as bar:
        if not parallel or len(missing) <= 1:
            for key in missing:
                built[key] = _compile_one(args[key])
                bar.update()
        else:
            workers = min(len(missing), os.cpu_count() or 1)
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="zkpipe-nvrtc") as pool:
                for key, unit in zip(missing, pool.map(_compile_one, [args[key] for key in missing])):
                    built[key] = unit
                    bar.update()
    return {key: built[key] for key in jobs}


def build_units(curves, arch: str = "sm_90", units=None, cache_dir=None, parallel: bool = True,
                prebuilt_dir=PREBUILT_DIR, table: dict[str, tuple[str, ...]] | None = None,
                source_root: Path | None = None) -> dict:
    """The units of one or more curves for a device of ``arch`` -> {(curve name, unit): BuiltUnit}:
    the binaries shipped with the package where one fits ``arch`` and was built from these very
    sources (no compiler runs), else the NVRTC disk cache, else compiled now.
    ``prebuilt_dir=None`` skips the shipped binaries (the ahead-of-time build itself); ``table``
    (default ``UNITS``) maps each unit to its name expressions; ``source_root`` compiles another
    source tree than the package's (never the shipped binaries: they are the package's)."""
    curves = [curves] if isinstance(curves, Curve) else list(curves)
    table = UNITS if table is None else table
    jobs = {(c.name, u): (u, table[u], unit_headers(c), arch) for c in curves for u in (units or table)}
    built = {}
    if prebuilt_dir is not None and source_root is None:
        for key, (unit, exprs, headers, _) in jobs.items():
            found = find_prebuilt(key[0], unit, headers, exprs, arch, directory=prebuilt_dir)
            if found is not None:
                built[key] = found
    rest = {key: job for key, job in jobs.items() if key not in built}
    if rest:
        built.update(compile_jobs(rest, cache_dir, parallel, source_root))
    return {key: built[key] for key in jobs}


# The units a proof launches, loaded when a curve's kernels are set up; "arith" holds the field and
# point test kernels (tests/gpu), loaded on the first launch of one of them.
PROVER_UNITS = ("ntt", "msm_g1", "msm_g2")


class CurveKernels:
    """The loaded modules of one curve on one device; ``launch`` by name expression. A subclass
    may bring its own build units and signatures (pipeline/backends/cuda/setup_kernels.py);
    ``default_units`` load at once, the others at the first launch of one of their kernels."""

    units: dict[str, tuple[str, ...]] = UNITS
    signatures: dict[str, tuple[str, ...]] = SIGNATURES
    default_units: tuple[str, ...] | None = PROVER_UNITS  # None: every unit of ``units``

    def __init__(self, device, curve: Curve, cache_dir=None, sync_after_launch: bool = False,
                 source_root: Path | None = None) -> None:
        self.device = device
        self.curve = curve
        self.cache_dir = cache_dir
        self.source_root = source_root  # None: the package's kernels (build_units)
        self.built: dict[str, BuiltUnit] = {}
        self.compile_s: dict[str, float] = {}
        self._functions = {}
        self._layouts: dict[str, ArgLayout] = {}  # per name expression: its kernel's parameters' packing
        self._shared_limits: dict[str, int] = {}  # per name expression: dynamic shared memory raised to (launch)
        self._dependent_configs: dict[tuple, object] = {}  # launch(dependent=True): per shape and stream
        self._modules = []
        self._unit_of = {expr: unit for unit, exprs in self.units.items() for expr in exprs}
        self._load(self.default_units or tuple(self.units))
        self.sync_after_launch = sync_after_launch  # CudaOptions.sync_after_launch

    def _load(self, units) -> None:
        self.device.activate()
        for (_, unit), built in build_units(self.curve, self.device.arch, units, self.cache_dir,
                                            table=self.units, source_root=self.source_root).items():
            module = check(driver.cuModuleLoadData(built.cubin), "cuModuleLoadData", unit)
            self._modules.append(module)
            for expr, lowered in built.lowered.items():
                self._functions[expr] = check(driver.cuModuleGetFunction(module, lowered.encode()),
                                              "cuModuleGetFunction", expr)
            self.built[unit] = built
            self.compile_s[unit] = built.compile_s

    def _function(self, expr: str):
        if expr not in self._functions:
            self._load((self._unit_of[expr],))
        return self._functions[expr]

    def launch(self, expr: str, grid: int, block: int, args: tuple, stream, shared_bytes: int = 0,
               dependent: bool = False) -> None:
        """Launch ``expr`` on ``stream``; the launch status is checked, and with
        ``sync_after_launch`` the stream is synchronised too so a fault names this kernel. ``dependent``: a
        programmatic dependent launch (sm_90 and up), for kernels that wait in the kernel for the one before
        them (ntt.cuh's ntt_after_prior_grid) and read nothing it writes before that wait: its blocks may take
        the SMs the previous kernel's last wave leaves free, instead of starting after it has drained."""
        layout = self._layouts.get(expr)  # by name expression: no template arguments parsed per launch
        if layout is None:
            name = base_name(expr)
            layout = self._layouts[expr] = ArgLayout(self.signatures[name], 8 * self.curve.fr.limbs)
        try:
            params = layout.pack(args)
        except TypeError as exc:
            raise TypeError(f"{expr}: {exc}") from None
        grid = max(int(grid), 1)
        function = self._function(expr)
        if shared_bytes > self._shared_limits.get(expr, DEFAULT_SHARED_BYTES):
            # past the default a kernel's limit must be raised first (ntt_pass_rev_in_place at k = 5: 64 KiB)
            check(driver.cuFuncSetAttribute(
                function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                int(shared_bytes)), "cuFuncSetAttribute", expr)
            self._shared_limits[expr] = int(shared_bytes)
        if dependent:
            config = self._dependent_config(function, grid, int(block), int(shared_bytes), stream.handle)
            check(driver.cuLaunchKernelEx(config, function, params, 0), "cuLaunchKernelEx", expr)
        else:
            check(driver.cuLaunchKernel(function, grid, 1, 1, int(block), 1, 1, int(shared_bytes),
                                        stream.handle, params, 0), "cuLaunchKernel", expr)
        stream.note_launch(expr)
        if self.sync_after_launch:
            try:
                check(driver.cuStreamSynchronize(stream.handle), "cuStreamSynchronize", expr)
            except CudaError:
                raise
            stream.recent_kernels.clear()

    def _dependent_config(self, function, grid: int, block: int, shared_bytes: int, stream_handle):
        """A dependent launch's configuration, kept per shape and stream (building one takes the host longer
        than the launch itself)."""
        key = (id(function), grid, block, shared_bytes, stream_handle)
        config = self._dependent_configs.get(key)
        if config is None:
            attribute = driver.CUlaunchAttribute()
            attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            attribute.value.programmaticStreamSerializationAllowed = 1
            config = driver.CUlaunchConfig()
            config.gridDimX, config.gridDimY, config.gridDimZ = grid, 1, 1
            config.blockDimX, config.blockDimY, config.blockDimZ = block, 1, 1
            config.sharedMemBytes, config.hStream = shared_bytes, stream_handle
            config.attrs, config.numAttrs = [attribute], 1
            self._dependent_configs[key] = config
        return config

    def launch_copy(self, d_dst: int, d_src: int, nbytes: int, stream) -> None:
        """Device-to-device copy on ``stream``."""
        if nbytes:
            check(driver.cuMemcpyDtoDAsync(d_dst, d_src, nbytes, stream.handle), "cuMemcpyDtoDAsync")

    def close(self) -> None:
        for module in self._modules:
            driver.cuModuleUnload(module)
        self._modules.clear()
        self._functions.clear()


def grid_for(n: int, block: int, cap: int = 1 << 20) -> int:
    """Blocks for n threads of ``block``, capped (kernels loop grid-stride beyond it)."""
    return max(1, min((int(n) + block - 1) // block, cap))
