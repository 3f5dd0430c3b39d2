"""The GPU path of the development setup: the same key as ``cpu.dev_setup_cpu``, byte for byte,
computed with the project's kernels (pipeline/backends/cuda/setup_kernels.py) on a CudaBackend's
device, allocator and stream.

Phases (each timed with CUDA events; ``DevKey.timings_ms``):

    host_layout            the coefficient section's record order (numpy, host)
    lagrange               L_c(tau) on the n-point domain (batch inversion on the device)
    evaluations            per matrix: terms uploaded, grouped by signal, summed -> u, v, w per
                           signal; A and B terms also to the coefficient section (stored form)
    download_coefficients  that section to host memory
    combine                IC = (beta u + alpha v + w) / gamma, C = (...) / delta, in place over w
    h_scalars              L'_(2i+1)(tau) / delta on the 2n-point domain
    tables                 the fixed-base tables of the G1 and G2 generators (once per runner)
    points_<section>       one fixed-base pass per section (a, b1, b2, c, ic, h), affine stored form
    download_points        the point arrays to host memory (the Groth16Zkey's arrays), through
                           pinned staging (transfer.py): the coefficients too
    assemble, total        the vk points and the key object; everything from the first phase on

Device memory: the scalars of each section are freed as soon as its points exist, so the peak is
the point arrays (resident at the end: ``DevKey.d_points``) plus one section's scalars and scratch.
"""
from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field

import numpy as np

from ..backends.cuda.memory import DeviceBuffer
from ..backends.cuda.setup_kernels import CODE_BYTES, SetupKernels, SetupRunner
from ..backends.cuda.work import PhaseEvents
from ..formats.compact_r1cs import CompactR1cs
from ..formats.types import POINT_SECTIONS, Groth16Zkey, point_placeholders, point_row_shape
from .circuit import check_for_setup, log_domain_size, public_rows, table_with_one, terms
from .coefficients import record_layout
from .dev_secrets import DevSecrets
from .key import assemble_zkey
from .scalars import lagrange_scale
from .transfer import STAGING_BYTES, HostDownloader


@dataclass(eq=False)
class DevKey:
    """A development key in host memory (``zkey``) whose point arrays also stay on the device."""

    zkey: Groth16Zkey
    d_points: dict[str, DeviceBuffer]  # a, b1, b2, c, h: exactly zkey.points_<name>, on the device
    backend: object  # the CudaBackend whose allocator owns d_points
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def key_bytes(self) -> int:
        return self.zkey.host_bytes()

    def free(self) -> None:
        for buf in self.d_points.values():
            buf.free()
        self.d_points = {}


class GpuDevSetup:
    """Makes development keys on one CudaBackend's GPU (kernels built once per curve)."""

    def __init__(self, backend, kernel_cache_dir=None) -> None:
        self.backend = backend
        self.kernel_cache_dir = kernel_cache_dir if kernel_cache_dir is not None else backend.kernel_cache_dir
        self._runners: dict[str, SetupRunner] = {}

    def runner(self, curve) -> SetupRunner:
        b = self.backend
        b.device.activate()
        if curve.name not in self._runners:
            kernels = SetupKernels(b.device, curve, self.kernel_cache_dir)
            self._runners[curve.name] = SetupRunner(kernels, b.allocator, b.stream)
        return self._runners[curve.name]

    def close(self) -> None:
        for runner in self._runners.values():
            runner.close()
            runner.kernels.close()
        self._runners.clear()

    def run(self, r1cs: CompactR1cs, secrets: DevSecrets, path: str = "<development key>",
            download_points: bool = True) -> DevKey:
        """The key; ``download_points`` False leaves its points on the device alone (``Groth16Zkey.points_on_host``
        False: a 2^27 key's are 77 GB, more than a 128 GiB host holds beside the circuit and the rest of the
        key), for a key that is only adopted where it was made (``adopt_dev_key``)."""
        curve = r1cs.curve
        check_for_setup(r1cs, path)
        secrets.check(curve, r1cs.domain_size)
        rt = self.runner(curve)
        t0 = time.perf_counter()
        layout = record_layout(r1cs)
        timings = {"host_layout_ms": (time.perf_counter() - t0) * 1e3}
        clock = PhaseEvents(rt.stream)
        d_points: dict[str, DeviceBuffer] = {}
        with ExitStack() as scratch:
            scratch.callback(clock.close)
            largest = max(rt.fr_bytes * layout.n_records, rt.point_bytes(curve.g2) * r1cs.n_wires,
                          rt.point_bytes(curve.g1) * r1cs.domain_size)
            downloader = scratch.enter_context(HostDownloader(self.backend.device, rt.stream,
                                                              min(STAGING_BYTES, largest)))
            try:
                scalars, values = self._scalars(rt, r1cs, secrets, layout, clock, scratch, downloader)
                rt.generator_table(curve.g1)
                rt.generator_table(curve.g2)
                clock.mark("tables_ms")
                ic_stored = self._points(rt, r1cs, scalars, d_points, clock)
                clock.last.synchronize()
                timings.update(clock.elapsed_ms())
                t1 = time.perf_counter()
                points = self._download_points(r1cs, d_points, downloader if download_points else None)
                timings["download_points_ms"] = (time.perf_counter() - t1) * 1e3
            except BaseException:
                rt.stream.synchronize()  # nothing queued may still use a buffer we free
                for buf in d_points.values():
                    buf.free()
                raise
        t2 = time.perf_counter()
        zkey = assemble_zkey(r1cs, secrets, layout, values, points, ic_stored, path, points_on_host=download_points)
        timings["assemble_ms"] = (time.perf_counter() - t2) * 1e3
        timings["total_ms"] = (time.perf_counter() - t0) * 1e3
        return DevKey(zkey, d_points, self.backend, timings)

    def _scalars(self, rt: SetupRunner, r1cs: CompactR1cs, secrets: DevSecrets, layout, clock, scratch,
                 downloader: HostDownloader):
        """Every section's scalars on the device ({a, b, ic_c, h} buffers, owned by ``scratch``), and
        the coefficient section in host memory."""
        fr, alloc, fb = r1cs.curve.fr, rt.allocator, rt.fr_bytes
        p, n, log_n, n_vars = fr.modulus, r1cs.domain_size, log_domain_size(r1cs), r1cs.n_wires
        d_lagrange = scratch.enter_context(alloc.alloc(fb * n, "setup Lagrange values"))
        rt.lagrange(d_lagrange.ptr, n, log_n, secrets.tau, lagrange_scale(fr, log_n, secrets.tau))
        clock.mark("lagrange_ms")
        table, one_code = table_with_one(r1cs)
        publics = public_rows(r1cs, one_code)
        d_uvw = {}
        with alloc.upload(table, "setup coefficient table") as d_table, \
                alloc.alloc(fb * layout.n_records, "setup coefficient values") as d_coeff:
            for name, parts in (
                    ("u", [(*terms(r1cs.a), layout.positions_a),
                           (publics.rows, publics.signals, publics.codes, layout.positions_public)]),
                    ("v", [(*terms(r1cs.b), layout.positions_b)]), ("w", [(*terms(r1cs.c), None)])):
                d_uvw[name] = scratch.enter_context(alloc.alloc(fb * n_vars, f"setup {name} per signal"))
                self._evaluate_matrix(rt, parts, n_vars, d_table.ptr, d_lagrange.ptr, d_uvw[name].ptr, d_coeff.ptr)
            d_lagrange.free()
            clock.mark("evaluations_ms")
            values = downloader.download(d_coeff.ptr, np.empty((layout.n_records, fr.limbs), dtype=np.uint64))
        clock.mark("download_coefficients_ms")
        d_u, d_v, d_w = (d_uvw[k] for k in "uvw")
        first_private, off = r1cs.n_public + 1, (r1cs.n_public + 1) * fb
        delta_inv = pow(secrets.delta, -1, p)
        rt.combine(d_w.ptr, d_u.ptr, d_v.ptr, d_w.ptr, first_private, secrets.alpha, secrets.beta,
                   pow(secrets.gamma, -1, p))
        rt.combine(d_w.ptr + off, d_u.ptr + off, d_v.ptr + off, d_w.ptr + off, n_vars - first_private,
                   secrets.alpha, secrets.beta, delta_inv)
        clock.mark("combine_ms")
        d_h = scratch.enter_context(alloc.alloc(fb * n, "setup H scalars"))
        rt.lagrange(d_h.ptr, n, log_n + 1, secrets.tau, lagrange_scale(fr, log_n + 1, secrets.tau) * delta_inv % p,
                    start=1, stride=2)
        clock.mark("h_scalars_ms")
        return {"a": d_u, "b": d_v, "ic_c": d_w, "h": d_h}, values

    @staticmethod
    def _points(rt: SetupRunner, r1cs: CompactR1cs, scalars: dict, d_points: dict, clock) -> np.ndarray:
        """Every point section into ``d_points`` (IC into host memory instead); each section's
        scalars are freed after their last use."""
        curve, fb = r1cs.curve, rt.fr_bytes
        n_vars, first_private = r1cs.n_wires, r1cs.n_public + 1
        plan = (("a", curve.g1, scalars["a"], 0, n_vars, True), ("b1", curve.g1, scalars["b"], 0, n_vars, False),
                ("b2", curve.g2, scalars["b"], 0, n_vars, True),
                ("c", curve.g1, scalars["ic_c"], first_private, n_vars - first_private, False),
                ("ic", curve.g1, scalars["ic_c"], 0, first_private, True),
                ("h", curve.g1, scalars["h"], 0, r1cs.domain_size, True))
        with rt.allocator.alloc(rt.point_bytes(curve.g1) * first_private, "setup IC points") as d_ic:
            for name, group, d_scalars, first, count, last_use in plan:
                if name == "ic":
                    d_out = d_ic
                else:
                    d_out = d_points[name] = rt.allocator.alloc(rt.point_bytes(group) * count, f"dev key points {name}")
                rt.fixed_base(group, d_out.ptr, d_scalars.ptr + first * fb, count)
                if last_use:
                    d_scalars.free()
                clock.mark(f"points_{name}_ms")
            return d_ic.download(np.empty((first_private, 2, curve.fq.limbs), dtype=np.uint64), rt.stream)

    @staticmethod
    def _evaluate_matrix(rt: SetupRunner, parts: list[tuple], n_vars: int, d_table: int, d_lagrange: int,
                         d_out: int, d_coeff: int) -> None:
        """u (or v, w) of every signal from one matrix's terms, given as parts (rows, signals, codes,
        record positions or None) uploaded one after the other; records for parts with positions."""
        alloc = rt.allocator
        m = sum(part[0].shape[0] for part in parts)
        with alloc.alloc(4 * m, "setup term signals") as d_signals, alloc.alloc(4 * m, "setup term rows") as d_rows, \
                alloc.alloc(CODE_BYTES * m, "setup term codes") as d_codes:
            start = 0
            for rows, signals, codes, positions in parts:
                k = rows.shape[0]
                d_rows.upload(rows, rt.stream, offset=4 * start)
                d_signals.upload(signals, rt.stream, offset=4 * start)
                d_codes.upload(codes, rt.stream, offset=CODE_BYTES * start)
                if positions is not None:
                    with alloc.upload(positions, "setup record positions (uint32)", rt.stream) as d_pos:
                        rt.stored_coefficients(d_coeff, d_codes.ptr + CODE_BYTES * start, d_table, d_pos.ptr, k)
                start += k
            grouped = rt.group_by_signal(d_signals.ptr, d_rows.ptr, d_codes.ptr, m, n_vars)
            try:
                rt.evaluate(d_out, grouped, d_table, d_lagrange, n_vars)
            finally:
                for buf in grouped:
                    buf.free()

    @staticmethod
    def _download_points(r1cs: CompactR1cs, d_points: dict,
                         downloader: HostDownloader | None) -> dict[str, np.ndarray]:
        """Each section's points in host memory; without a ``downloader``, placeholders of their shapes."""
        shapes = {}
        for name in POINT_SECTIONS:
            shape = point_row_shape(r1cs.curve, name)
            shapes[name] = (d_points[name].nbytes // (8 * int(np.prod(shape))), *shape)
        if downloader is None:
            return point_placeholders(shapes)
        return {name: downloader.download(d_points[name].ptr, np.empty(shape, dtype=np.uint64))
                for name, shape in shapes.items()}
