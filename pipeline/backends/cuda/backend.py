"""``CudaBackend``: the ``Backend`` protocol (pipeline/groth16/backend.py) on one NVIDIA GPU.

``load_key`` uploads the proving key once (points, and the A/B coefficients as CSR by row);
``compute_h`` runs a, b, c = spmv, the coset NTTs and the quotient on the device and returns a
``DeviceH`` handle; ``msms`` runs the G1 (and G2) MSMs against the resident points. Per-call
scratch is allocated inside each call and freed before it returns (DESIGN rule 1).
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...curves import Curve
from ...formats.types import MATRIX_A, MATRIX_B, Groth16Zkey
from ...groth16.backend import MsmResults
from .device import CudaDevice
from .kernels import CurveKernels, build_units, grid_for
from .launch import SPMV_BLOCK
from .memory import DeviceAllocator, DeviceBuffer, PinnedHostBuffer
from .msm import MsmRunner
from .ntt import NttRunner
from .options import CudaOptions
from .streams import Stream


@dataclass
class CurveRuntime:
    kernels: CurveKernels
    ntt: NttRunner
    msm: MsmRunner


@dataclass(eq=False)
class CudaKey:
    zkey: Groth16Zkey
    runtime: CurveRuntime
    d_points: dict[str, DeviceBuffer]  # a, b1, b2, c, h: affine, Montgomery
    d_csr: dict[str, DeviceBuffer]  # {a,b}_{row_ptr,cols,vals_rr}
    resident_bytes: int = 0


@dataclass(eq=False)
class DeviceH:
    """H scalars on the device: (domain_size, 8) uint32 words, plain form. It also keeps the
    witness ``compute_h`` uploaded, so that ``msms`` of the same witness array does not upload
    it again. ``msms`` frees both (the handle is consumed); ``free`` is for callers that stop early."""

    buffer: DeviceBuffer
    n: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    d_witness: DeviceBuffer | None = None
    witness_host: np.ndarray | None = None  # the array d_witness was uploaded from (identity check)

    def free(self) -> None:
        self.buffer.free()
        if self.d_witness is not None:
            self.d_witness.free()
        self.witness_host = None


def csr_by_row(zkey: Groth16Zkey, matrix: int):
    """(row_ptr, cols, vals_rr) of one matrix, rows = constraints (domain_size of them)."""
    mask = zkey.coeff_matrix == matrix
    rows = zkey.coeff_constraint[mask].astype(np.int64)
    order = np.argsort(rows, kind="stable")
    row_ptr = np.zeros(zkey.domain_size + 1, dtype=np.uint32)
    np.cumsum(np.bincount(rows, minlength=zkey.domain_size), out=row_ptr[1:])
    cols = np.ascontiguousarray(zkey.coeff_signal[mask][order], dtype=np.uint32)
    vals = np.ascontiguousarray(zkey.coeff_values_stored[mask][order], dtype=np.uint64)
    return row_ptr, cols, vals


class CudaBackend:
    name = "cuda"

    def __init__(self, device_ordinal: int = 0, vram_budget_bytes: int | None = None,
                 options: CudaOptions = CudaOptions()) -> None:
        self.options = options
        self.device = CudaDevice(device_ordinal)
        budget = vram_budget_bytes if vram_budget_bytes is not None else int(self.device.free_bytes() * 0.9)
        self.stream = Stream(self.device)
        self.allocator = DeviceAllocator(self.device, budget, self.stream if options.stream_ordered_memory else None)
        self.kernel_cache_dir = Path(options.kernel_cache_dir).expanduser() if options.kernel_cache_dir else None
        self._runtimes: dict[str, CurveRuntime] = {}

    def prebuild(self, curves) -> dict[str, float]:
        """Compile every unit of ``curves`` at once (parallel processes) into the on-disk cache;
        returns the first-use compile seconds per (curve, unit), 0.0 for cache hits."""
        built = build_units(curves, self.device.arch, cache_dir=self.kernel_cache_dir)
        return {f"{c}/{u}": b.compile_s for (c, u), b in built.items()}

    def runtime(self, curve: Curve) -> CurveRuntime:
        """Kernels of ``curve`` (compiled or loaded from the cache on first use)."""
        self.device.activate()
        if curve.name not in self._runtimes:
            kernels = CurveKernels(self.device, curve, self.kernel_cache_dir, self.options.sync_after_launch)
            msm = MsmRunner(kernels, self.allocator, self.stream, self.options.msm_g1_min_blocks)
            self._runtimes[curve.name] = CurveRuntime(kernels, NttRunner(kernels, self.allocator, self.stream), msm)
        return self._runtimes[curve.name]

    # -- the key ---------------------------------------------------------------------------------
    def load_key(self, zkey: Groth16Zkey) -> CudaKey:
        rt = self.runtime(zkey.curve)
        up = self.allocator.upload
        d_points, d_csr = {}, {}
        try:
            for name in ("a", "b1", "b2", "c", "h"):
                d_points[name] = up(getattr(zkey, f"points_{name}"), f"key points {name}")
            for tag, matrix in (("a", MATRIX_A), ("b", MATRIX_B)):
                row_ptr, cols, vals = csr_by_row(zkey, matrix)
                d_csr[f"{tag}_row_ptr"] = up(row_ptr, f"key csr {tag} row_ptr")
                d_csr[f"{tag}_cols"] = up(cols, f"key csr {tag} cols")
                d_csr[f"{tag}_vals_rr"] = up(vals, f"key csr {tag} values")
            rt.ntt.ensure_twiddles(zkey.log_domain_size)
        except BaseException:
            for buf in (*d_points.values(), *d_csr.values()):
                buf.free()
            raise
        resident = sum(b.nbytes for b in (*d_points.values(), *d_csr.values()))
        return CudaKey(zkey, rt, d_points, d_csr, resident)

    def unload_key(self, key: CudaKey) -> None:
        for buf in (*key.d_points.values(), *key.d_csr.values()):
            buf.free()
        self.allocator.trim()  # an evicted key's memory goes back to the driver, not only to our pool

    # -- H -----------------------------------------------------------------------------------------
    def compute_h(self, key: CudaKey, witness: np.ndarray) -> DeviceH:
        self.device.activate()
        t0 = time.perf_counter()
        zkey, rt = key.zkey, key.runtime
        n, log_n = zkey.domain_size, zkey.log_domain_size
        elem = 8 * zkey.curve.fr.limbs
        d_h = self.allocator.alloc(n * elem, "H scalars")
        d_w = None
        try:
            d_w = self.allocator.upload(np.ascontiguousarray(witness, dtype=np.uint64), "witness")
            with self.allocator.alloc(n * elem, "a") as d_a, self.allocator.alloc(n * elem, "b") as d_b, \
                    self.allocator.alloc(n * elem, "c") as d_c:
                csr = key.d_csr
                rt.kernels.launch("spmv_abc<fr_t>", grid_for(n, SPMV_BLOCK), SPMV_BLOCK,
                                  (d_a.ptr, d_b.ptr, d_c.ptr, csr["a_row_ptr"].ptr, csr["a_cols"].ptr,
                                   csr["a_vals_rr"].ptr, csr["b_row_ptr"].ptr, csr["b_cols"].ptr,
                                   csr["b_vals_rr"].ptr, d_w.ptr, n), self.stream)
                rt.ntt.quotient(d_h.ptr, d_a.ptr, d_b.ptr, d_c.ptr, log_n)
                self.stream.synchronize()
        except BaseException:
            d_h.free()
            if d_w is not None:
                d_w.free()
            raise
        return DeviceH(d_h, n, {"compute_h_ms": (time.perf_counter() - t0) * 1e3}, d_w, witness)

    def h_to_host(self, h: DeviceH) -> np.ndarray:
        out = np.zeros((h.n, 4), dtype=np.uint64)
        return h.buffer.download(out, self.stream)

    # -- MSMs --------------------------------------------------------------------------------------
    def msms(self, key: CudaKey, witness: np.ndarray, h, with_b_g2: bool = True) -> MsmResults:
        """The five MSMs; a ``DeviceH`` from ``compute_h`` is consumed (freed, witness copy too)."""
        try:
            return self._msms(key, witness, h, with_b_g2)
        finally:
            if isinstance(h, DeviceH):
                h.free()

    def _msms(self, key: CudaKey, witness: np.ndarray, h, with_b_g2: bool) -> MsmResults:
        self.device.activate()
        zkey, msm, curve = key.zkey, key.runtime.msm, key.zkey.curve
        timings: dict[str, float] = {}
        elem = 8 * curve.fr.limbs
        first_private = zkey.n_public + 1

        def timed(name, group, points, d_scalars, n):
            t0 = time.perf_counter()
            out = msm.run(group, points, d_scalars, n)
            timings[name] = (time.perf_counter() - t0) * 1e3
            return out

        reuse = isinstance(h, DeviceH) and h.d_witness is not None and h.witness_host is witness
        with contextlib.nullcontext(h.d_witness) if reuse else \
                self.allocator.upload(np.ascontiguousarray(witness, dtype=np.uint64), "witness") as d_w:
            h_owned = None
            if not isinstance(h, DeviceH):
                h_owned = self.allocator.upload(np.ascontiguousarray(h, dtype=np.uint64), "H scalars")
            d_h = h.buffer if h_owned is None else h_owned
            try:
                p = key.d_points
                n_vars = zkey.n_vars
                a = timed("msm_a_ms", curve.g1, p["a"].ptr, d_w.ptr, n_vars)
                b1 = timed("msm_b1_ms", curve.g1, p["b1"].ptr, d_w.ptr, n_vars)
                b2 = timed("msm_b2_ms", curve.g2, p["b2"].ptr, d_w.ptr, n_vars) if with_b_g2 else None
                c = timed("msm_c_ms", curve.g1, p["c"].ptr, d_w.offset(first_private * elem), n_vars - first_private)
                hh = timed("msm_h_ms", curve.g1, p["h"].ptr, d_h.ptr, zkey.domain_size)
            finally:
                if h_owned is not None:
                    h_owned.free()
        return MsmResults(a_g1=a, b_g1=b1, b_g2=b2, c_g1=c, h_g1=hh, timings_ms=timings)

    def msm_b_g2(self, key: CudaKey, witness: np.ndarray) -> tuple:
        self.device.activate()
        with self.allocator.upload(np.ascontiguousarray(witness, dtype=np.uint64), "witness") as d_w:
            return key.runtime.msm.run(key.zkey.curve.g2, key.d_points["b2"].ptr, d_w.ptr, key.zkey.n_vars)

    # -- what the engine's budgets ask (optional Backend methods, see engine/devices.py) ------------
    def key_device_bytes(self, zkey: Groth16Zkey) -> int:
        """Device bytes ``load_key`` holds: the point arrays plus the two CSR matrices."""
        points = sum(getattr(zkey, f"points_{n}").nbytes for n in ("a", "b1", "b2", "c", "h"))
        csr = zkey.coeff_values_stored.nbytes + 4 * len(zkey.coeff_signal) + 8 * (zkey.domain_size + 1)
        return points + csr

    def scratch_bytes(self, key: CudaKey) -> int:
        """Upper estimate of one partition's device scratch: witness, a, b, c, H, and the MSM's
        digit entries (4 bytes per scalar per window, at most 32 windows) and partial sums (one
        G2 XYZZ point per 8 entries). The allocator's budget stays the hard limit."""
        zkey = key.zkey
        n = max(zkey.n_vars, zkey.domain_size)
        elem = 8 * zkey.curve.fr.limbs
        xyzz_g2 = 4 * 2 * 8 * zkey.curve.fq.limbs
        entries = 4 * n * 32
        return zkey.n_vars * elem + 4 * zkey.domain_size * elem + entries + (n * 32 // 8) * xyzz_g2

    def memory_budget_bytes(self) -> int:
        return self.allocator.budget_bytes

    def pinned_host_buffer(self, nbytes: int) -> PinnedHostBuffer:
        """Page-locked host memory for the engine's staging pool, pinned for every GPU's context."""
        return PinnedHostBuffer(self.device, nbytes, portable=True)

    @staticmethod
    def visible_devices() -> list[int]:
        from .device import device_count

        return list(range(device_count()))

    def close(self) -> None:
        for rt in self._runtimes.values():
            rt.ntt.close()
            rt.kernels.close()
        self._runtimes.clear()
        self.allocator.trim()
        self.stream.close()
