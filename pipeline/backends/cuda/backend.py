"""``CudaBackend``: the ``Backend`` protocol (pipeline/backends/protocol.py) on one NVIDIA GPU.

``load_key`` uploads the proving key once (points, and the A/B coefficients as CSR by row).
``start_partition`` (the engine's path) queues a partition's whole device work on the stream:
the witness upload, a, b, c = spmv, the coset NTTs and the quotient, the five MSMs and the copy
of their results into pinned memory; it returns a ``CudaPartitionWork`` the engine awaits
through a CUDA event, so no thread waits on the device and no count is read back mid-run.
``compute_h`` / ``msms`` are the same steps one at a time (the reference prover, the tests).
Scratch is allocated inside each call and freed in stream order (DESIGN rule 1: the engine
holds the GPU lock until the work has completed).
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...curves import CURVES, Curve
from ...formats.types import Groth16Zkey
from ...formats.coeff_table import CoefficientTable, coefficient_table
from ...keycache.csr import csr_matrices
from ..placement import SECTIONS, WITNESS_SECTIONS, KeyPlacement, table_order, table_share
from ..protocol import Backend, G2Jacobian, MsmResults, WitnessShape
from ._bindings import driver
from .device import CudaDevice
from .csr_stream import enqueue_spmv_chunks, launch_resident_spmv
from .errors import check
from .kernels import CurveKernels, build_units
from .memory import DeviceAllocator, DeviceBuffer, PinnedHostBuffer
from .msm import MsmRunner
from .ntt import NttRunner, table_bytes as ntt_table_bytes
from .options import CudaOptions
from .streams import Event, Stream
from .spmv_long import long_rows_bytes_bound
from .split import DeviceSplit, enqueue_split, split_scratch_bytes, split_worth_it
from .device_key import CudaKey, CurveRuntime, load_device_key, unload_device_key
from .fixed_base import build_tables, choose_fixed_bases, plain_points, table_build_bytes, tables_extra_bytes
from .staged_upload import staged_upload
from .witness_prefetch import WitnessPrefetches
from .streamed import CudaStreamedPass, pass_scratch_bytes, place_streamed, prologue_scratch_bytes, witness_bytes
from .work import MSM_SLOTS, ONES_SUFFIX, CudaPartitionWork, PhaseEvents, PinnedResultPool, h_time_ms, results_bytes


@dataclass(eq=False)
class DeviceH:
    """H scalars on the device: (domain_size, 8) uint32 words, plain form. It also keeps the
    witness ``compute_h`` uploaded, so that ``msms`` of the same witness array does not upload
    it again. ``msms`` frees both (the handle is consumed); ``free`` is for callers that stop early.
    ``events`` time its phases on the device (H_PHASES): ``compute_h`` returns before they run, so only
    ``msms``, after its own wait, can read them."""

    buffer: DeviceBuffer
    n: int
    events: PhaseEvents
    d_witness: DeviceBuffer | None = None
    witness_host: np.ndarray | None = None  # the array d_witness was uploaded from (identity check)

    def free(self) -> None:
        self.buffer.free()
        if self.d_witness is not None:
            self.d_witness.free()
        self.witness_host = None
        self.events.close()


class WindowSums:
    """One partition's MSM window sums, combined after its MSMs (``CudaOptions.msm_batched_window_combination``):
    a slot of G2's size per MSM, in the order of the result slots (work.MSM_SLOTS). The witness MSMs'
    windows are combined on side streams, one a group, while the main stream runs the MSMs after them
    and H (``combine_beside``), so only H's combination (one Horner chain, ~2.6 ms for BLS12-381) is
    certain to be on the partition's path."""
    MSMS = MSM_SLOTS[:5]  # a, b1, b2, c, h

    def __init__(self, msm, allocator, stream: Stream, sides: dict[bool, Stream]) -> None:
        self.msm, self.stream, self.sides = msm, stream, sides  # sides: a stream per group (g2 or not)
        self.buffer = allocator.alloc(self.nbytes(msm), "msm window sums")
        self.deferred: list = []
        self._side_done: list[Event] = []

    @classmethod
    def nbytes(cls, msm) -> int:
        return len(cls.MSMS) * msm.window_sums_bytes(True)

    def slot(self, name: str) -> int:
        return self.buffer.ptr + self.MSMS.index(name) * self.msm.window_sums_bytes(True)

    def combine_beside(self, g2: bool) -> None:
        """The group's windows deferred so far, combined on its side stream once the main stream's work
        queued so far is done."""
        group = [d for d in self.deferred if d is not None and d.g2 == g2]
        if not group:
            return
        side = self.sides[g2]
        with Event(timing=False) as queued:
            side.wait(queued.record(self.stream))
        self.msm.enqueue_combine(group, side)
        self._side_done.append(Event(timing=False).record(side))
        self.deferred = [d for d in self.deferred if d is not None and d.g2 != g2]

    def combine(self) -> None:
        """The rest on the main stream; the main stream then waits for the side streams' combinations."""
        self.msm.enqueue_combine(self.deferred)
        self.deferred = []
        self._join()

    def _join(self) -> None:
        for done in self._side_done:
            self.stream.wait(done)
            done.close()  # the wait is queued: destroying the event now is allowed
        self._side_done = []

    def free(self) -> None:
        self._join()  # the buffer goes back in the main stream's order: after the side streams read it
        self.buffer.free()


class CudaBackend(Backend):
    name = "cuda"
    pins_host_memory = True

    def __init__(self, device_ordinal: int = 0, vram_budget_bytes: int | None = None,
                 options: CudaOptions = CudaOptions()) -> None:
        self.options = options
        self.device = CudaDevice(device_ordinal)
        budget = (vram_budget_bytes if vram_budget_bytes is not None
                  else int(self.device.free_bytes() * options.vram_free_share))
        self.stream = Stream(self.device)
        self.allocator = DeviceAllocator(self.device, budget, self.stream if options.stream_ordered_memory else None)
        self.kernel_cache_dir = Path(options.kernel_cache_dir).expanduser() if options.kernel_cache_dir else None
        self.device_ordinal = device_ordinal
        self._runtimes: dict[str, CurveRuntime] = {}
        max_fq_limbs = max(c.fq.limbs for c in CURVES)  # one slot fits a G2 XYZZ point of any curve
        self._results = PinnedResultPool(self.device, results_bytes(4 * 2 * 8 * max_fq_limbs))
        self.msm_split_min_bits = options.msm_split_min_bits  # an attribute too: benches and tests flip it
        self.stream_split_min_bits = options.stream_split_min_bits  # likewise
        self.stream_tails = options.stream_tails  # likewise
        self.stream_h = options.stream_h  # likewise (read when a key is placed)
        self.stream_queue_depth = options.stream_queue_depth  # likewise
        self._copy_streams: dict[int | str, Stream] = {}  # streams beside the kernels' (copy_stream)
        self._pinned_pools: dict[int, PinnedResultPool] = {}  # streamed passes' H buffers, by size
        self.csr_value_table = options.csr_value_table  # an attribute too: tests flip it
        self.spmv_long_rows = options.spmv_long_rows  # likewise (read at key load)
        self.batched_window_combination = options.msm_batched_window_combination  # likewise
        self.prefetches_witness = options.witness_prefetch  # Backend.prefetch_witness offered (the engine asks)
        self.fixed_base = options.msm_fixed_base  # likewise (read when a key is placed)
        self._prefetches: WitnessPrefetches | None = None  # made on first use (its copy stream)
        self._coeff_tables: dict[int, tuple[weakref.ref, CoefficientTable | None]] = {}  # by id(zkey)

    def pinned_pool(self, nbytes: int) -> PinnedResultPool:
        """Page-locked host buffers of ``nbytes`` kept for reuse (pinning GBs per pass would cost
        a noticeable part of it)."""
        if nbytes not in self._pinned_pools:
            self._pinned_pools[nbytes] = PinnedResultPool(self.device, nbytes)
        return self._pinned_pools[nbytes]

    def copy_stream(self, index: int | str = 0) -> Stream:
        """Streams beside the kernels' (a streamed pass's copies: 0 its points, 1 its chunk scalars; the
        window combinations by name), made on first use."""
        if index not in self._copy_streams:
            self._copy_streams[index] = Stream(self.device)
        return self._copy_streams[index]

    def _side_streams(self) -> dict[bool, Stream]:
        """Streams for the witness MSMs' window combinations beside the main stream, one a group
        (``WindowSums``), made on first use."""
        return {g2: self.copy_stream(f"window combination, {'G2' if g2 else 'G1'}") for g2 in (False, True)}

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
            msm.shared_sort = self.options.msm_shared_sort  # benches and tests flip it on the runner
            msm.copy_stream = self.copy_stream("msm scalars")  # host scalars in pieces (MsmRunner.sort)
            self._runtimes[curve.name] = CurveRuntime(kernels, NttRunner(kernels, self.allocator, self.stream), msm)
        return self._runtimes[curve.name]


    def prepare(self, curve: Curve, log_domain: int) -> dict[str, str]:
        """The curve's kernel modules and the NTT twiddles of the domain; where each unit came
        from ("prebuilt", "cache" or "nvrtc")."""
        rt = self.runtime(curve)
        rt.ntt.ensure_twiddles(log_domain)
        return {unit: built.origin for unit, built in rt.kernels.built.items()}
    # -- the key ---------------------------------------------------------------------------------
    def place_key(self, zkey: Groth16Zkey, budget_bytes: int | None, room_bytes: int | None = None,
                  witness: WitnessShape | None = None) -> KeyPlacement:
        """Every section resident when key + one partition's scratch fit ``budget_bytes``, with the
        fixed-base tables (``fixed_base``) that fit ``room_bytes`` too (``_with_fixed_bases``, in the order
        ``table_order`` gives for witnesses shaped like ``witness``); else the hot sections that fit, the
        others streamed (streamed.py)."""
        full = self.key_device_bytes(zkey)
        if budget_bytes is None and room_bytes is None:
            return KeyPlacement(device_bytes=full)
        msm = self.runtime(zkey.curve).msm
        if budget_bytes is None or full + self._resident_scratch_bytes(zkey, msm) <= budget_bytes:
            room = min(b for b in (budget_bytes, room_bytes) if b is not None)
            if not self.fixed_base:
                return KeyPlacement(device_bytes=full)
            return self._with_fixed_bases(zkey, msm, full, room, witness)
        table = self.coefficient_table(zkey)
        return place_streamed(msm, zkey, budget_bytes, self._csr_device_bytes(zkey), self.options.stream_chunk_bytes,
                              0 if table is None else table.table.nbytes, self._ntt_table_bytes(zkey, compact=True),
                              self.options.stream_chunk_max_bytes or None, h_per_partition=self.stream_h == "prologue")

    def fixed_base_order(self, witness: WitnessShape | None) -> tuple[str, ...]:
        """The sections in the order they get fixed-base tables: ``CudaOptions.msm_fixed_base_order``, or for
        "auto" the most milliseconds saved a byte first for witnesses shaped like ``witness``
        (``placement.table_order``; None: none seen yet, the random witness's order)."""
        order = self.options.msm_fixed_base_order
        if order != "auto":
            return order
        return table_order(witness, split_worth_it(witness, self.msm_split_min_bits))

    def _with_fixed_bases(self, zkey: Groth16Zkey, msm: MsmRunner, full: int, room: int,
                          witness: WitnessShape | None = None) -> KeyPlacement:
        """All resident, with the tables (sections in ``fixed_base_order``'s order) that save the most
        (``choose_fixed_bases``, for the share of the witness sections' rows that witnesses shaped like
        ``witness`` leave to Pippenger; None: a random witness's) among those for which the key, its tables, a
        partition's scratch (or a table's build) and a prefetched witness fit ``room``."""
        order = self.fixed_base_order(witness)
        share = table_share(witness, split_worth_it(witness, self.msm_split_min_bits))
        def need(fixed: dict[str, int]) -> int:
            scratch = max([self._resident_scratch_bytes(zkey, msm, fixed)]
                          + [table_build_bytes(msm, zkey, s) for s in fixed])
            return full + tables_extra_bytes(msm, zkey, fixed) + scratch + witness_bytes(zkey)

        def refusal(tables: dict[str, int]) -> str:  # the candidate is the last section of ``tables``
            section, sets = list(tables.items())[-1]
            return (f"{section} ({sets} set{'s' if sets > 1 else ''}): {need(tables) / 2**30:.1f} of "
                    f"{room / 2**30:.1f} GiB")

        fixed, refused = choose_fixed_bases(msm, zkey, lambda tables: need(tables) <= room, order,
                                            self.options.msm_fixed_base_sets, share)
        return KeyPlacement(device_bytes=full + tables_extra_bytes(msm, zkey, fixed), fixed_base=tuple(fixed),
                            fixed_base_sets=tuple(fixed.values()), tables_refused=tuple(map(refusal, refused)),
                            fixed_base_order=order)

    def add_fixed_bases(self, key: CudaKey, placement: KeyPlacement) -> None:
        """The tables ``placement`` chose (``place_key``) built from the key's resident points (which they
        replace)."""
        if key.tables or key.placement.mode != "resident":
            raise ValueError(f"tables are added only to a wholly resident key without any ({key.placement.mode}, "
                             f"tables of {sorted(key.tables)})")
        self.device.activate()
        sets = placement.tables
        key.tables = build_tables(key.runtime.msm, key.zkey, key.d_points, sets)
        extra = tables_extra_bytes(key.runtime.msm, key.zkey, sets)
        key.placement = dataclasses.replace(key.placement, fixed_base=tuple(sets), fixed_base_sets=tuple(sets.values()),
                                            device_bytes=key.placement.device_bytes + extra)
        key.scratch_by_batch.clear()

    def drop_fixed_bases(self, key: CudaKey) -> int:
        """The key's tables back to plain points (window 0 of each, copied out), the tables freed; the
        bytes they held beyond the points."""
        if not key.tables:
            raise ValueError("this key keeps no fixed-base tables")
        self.device.activate()
        zkey = key.zkey
        for section in list(key.tables):
            key.d_points[section] = plain_points(self.allocator, self.stream, zkey, key.tables[section], section)
            key.tables.pop(section).free()  # stream-ordered: after the copy read it
        self.stream.synchronize()
        self.allocator.trim()  # the tables' memory back to the driver, for whoever needed the room
        extra = tables_extra_bytes(key.runtime.msm, zkey, key.placement.tables)
        key.placement = key.placement.without_tables(extra)
        key.scratch_by_batch.clear()
        return extra

    def coefficient_table(self, zkey: Groth16Zkey) -> CoefficientTable | None:
        """The key's A/B coefficients as indices into a table of their values, when
        ``csr_value_table`` is on and they have at most 2^16 values (else None: the values
        themselves); the one the key cache prepared (``zkey.coeff_table_prepared``), else
        computed from the CSR, once per key object, as placing and loading both need it."""
        if not self.csr_value_table:
            return None
        ref_and_table = self._coeff_tables.get(id(zkey))
        if ref_and_table is None or ref_and_table[0]() is not zkey:
            if zkey.coeff_table_prepared:
                table = zkey.coeff_table
            else:
                a, b = csr_matrices(zkey)
                table = coefficient_table([a.vals, b.vals])
            ref_and_table = (weakref.ref(zkey), table)
            self._coeff_tables[id(zkey)] = ref_and_table
        return ref_and_table[1]

    def load_key(self, zkey: Groth16Zkey, placement: KeyPlacement | None = None) -> CudaKey:
        return load_device_key(self.runtime(zkey.curve), zkey, placement or KeyPlacement(), self.upload_key_array,
                               self.device, self.coefficient_table(zkey), self.spmv_long_rows)

    def upload_key_array(self, h_array: np.ndarray, what: str) -> DeviceBuffer:
        """A key array in a new device buffer, staged through pinned pieces filled on all cores (a
        key mapped from its files pages in in parallel: staged_upload.py)."""
        return staged_upload(self.allocator, self.stream, h_array, what)

    def unload_key(self, key: CudaKey) -> None:
        unload_device_key(key, self.stream)
        self._coeff_tables.pop(id(key.zkey), None)  # its indices are host memory as large as the key's columns / 2
        self.allocator.trim()  # an evicted key's memory goes back to the driver, not only to our pool

    # -- H and the MSMs: everything queued on the stream, nothing waited for -----------------------
    def _upload_witness(self, witness: np.ndarray):
        """The witness on the device, copied in stream order (asynchronously from pinned staging)."""
        h_w = np.ascontiguousarray(witness, dtype=np.uint64)
        d_w = self.allocator.alloc(h_w.nbytes, "witness")
        try:
            d_w.upload(h_w, self.stream)
        except BaseException:
            d_w.free()
            raise
        return d_w

    def _enqueue_h(self, key: CudaKey, d_w, events: PhaseEvents | None = None, release_witness: bool = False):
        """spmv (a, b), snarkjs's c = a o b and the quotient on the odd coset, queued; returns the H
        buffer (a's: the quotient runs in place). ``release_witness``: ``d_w`` is freed (stream
        order) once the sparse products have read it, before c's buffer is taken, so the H phase
        holds the witness, a and b, then a, b and c (``prologue_scratch_bytes``), never four vectors."""
        zkey, rt = key.zkey, key.runtime
        n, log_n = zkey.domain_size, zkey.log_domain_size
        elem = 8 * zkey.curve.fr.limbs
        d_h = self.allocator.alloc(n * elem, "H scalars")  # a, then H
        try:
            with self.allocator.alloc(n * elem, "b") as d_b:
                csr = key.d_csr
                if key.csr_chunks is not None:
                    with self.allocator.alloc(key.csr_chunk_max, "streamed CSR chunk") as d_buf:
                        enqueue_spmv_chunks(rt.kernels, self.stream, key.csr_chunks, key.host_csr, csr, d_buf.ptr,
                                            d_w.ptr, d_h.ptr, d_b.ptr, elem)
                else:
                    launch_resident_spmv(rt.kernels, self.stream, csr, (d_h.ptr, d_b.ptr), d_w.ptr, n, elem)
                if events is not None:
                    events.mark("spmv_ms")
                if release_witness:
                    d_w.free()
                with self.allocator.alloc(n * elem, "c") as d_c:
                    rt.ntt.mul(d_c.ptr, d_h.ptr, d_b.ptr, n)
                    rt.ntt.quotient(d_h.ptr, d_b.ptr, d_c.ptr, log_n)
                if events is not None:
                    events.mark("ntt_ms")
        except BaseException:
            d_h.free()
            raise
        return d_h

    def _enqueue_msms(self, key: CudaKey, d_w, d_h, d_results, with_b_g2: bool, events: PhaseEvents | None,
                      split: DeviceSplit | None = None, sections: tuple[str, ...] = SECTIONS,
                      windows: WindowSums | None = None) -> None:
        """The five MSMs, queued; slot MSM_SLOTS.index(name) of ``d_results`` gets each (XYZZ
        words). With ``split``, A, B1, B2 and C are a batch sum of the ones' points (slot
        name_ones) plus a tail MSM over the other scalars (slot name). With ``windows``, each MSM
        leaves its window sums there, combined later (``WindowSums.combine``)."""
        zkey, msm, tables = key.zkey, key.runtime.msm, key.tables
        elem = 8 * zkey.curve.fr.limbs
        slot = msm.xyzz_bytes(True)
        first_private = zkey.n_public + 1
        p = key.d_points
        witness_msms = {"a": (False, 0), "b1": (False, 0), "b2": (True, 0), "c": (False, first_private)}
        names = [n for n in SECTIONS if n in sections and (n != "b2" or with_b_g2)]
        # A, B1, B2 and C take the same scalars (the whole witness, or the split's others; C skips the public
        # signals): one digit sort for the plain ones and one for those over tables of one plan (bucket sets
        # included), each freed after its last MSM (CudaOptions.msm_shared_sort). A table is indexed by signal
        # (C's rows below its points are infinity), so the MSMs over tables all read the whole scalar vector.
        # The MSMs over tables first, a sort's group together: a sort is freed before the next one is made.
        def sort_of(n: str):  # the digits an MSM reads: sorted for its table's plan and stride, or plain
            return (tables[n].plan, tables[n].n) if n in tables else None
        sorts = list(dict.fromkeys(map(sort_of, names)))
        names.sort(key=lambda n: (n == "h", n not in tables, sorts.index(sort_of(n))))
        groups = [[n for n in names if n in witness_msms and sort_of(n) == key] for key in sorts]
        groups = [g for g in groups if len(g) > 1] if msm.shared_sort else []
        sharing, last_of_group = {n for g in groups for n in g}, {g[-1] for g in groups}
        digits = None
        try:
            for name in names:
                out = d_results.ptr + MSM_SLOTS.index(name) * slot
                d_windows = windows.slot(name) if windows is not None else 0
                table = tables.get(name)
                deferred = None
                if name == "h":
                    if table is not None:
                        msm.enqueue_fixed(table, d_h.ptr, zkey.domain_size, out)
                    else:
                        deferred = msm.enqueue(False, p["h"].ptr, d_h.ptr, zkey.domain_size, out, d_windows=d_windows)
                else:
                    g2, first = witness_msms[name]
                    row = (4 if g2 else 2) * 8 * zkey.curve.fq.limbs
                    # point k of this section is signal first + k; a table's row k is signal k
                    base = p[name].ptr - first * row if table is None else table.d_table.ptr
                    shared = name in sharing
                    skip = 0 if shared or table is not None else first  # else C skips its points (skip_below)
                    if split is None:
                        n, d_scalars, d_index = zkey.n_vars - skip, d_w.ptr + skip * elem, 0
                        base += skip * row  # scalar k is signal skip + k
                    else:  # indexed by signal
                        shape = split.shape
                        skip_one = shape.prefix_one if first else 0
                        skip_other = shape.prefix_other if skip else 0
                        msm.enqueue_point_sum(g2, base, split.d_one_idx.ptr + 4 * skip_one, shape.n_one - skip_one,
                                              d_results.ptr + MSM_SLOTS.index(f"{name}_ones") * slot)
                        if events is not None:
                            events.mark(f"msm_{name}{ONES_SUFFIX}")  # a part of msm_{name}_ms (work.partition_timings)
                        n, d_scalars = shape.n_other - skip_other, split.d_other_scalars.ptr + 32 * skip_other
                        d_index = split.d_other_idx.ptr + 4 * skip_other
                    if shared and digits is None and n:
                        digits = msm.sort(d_scalars, n, d_index) if table is None else \
                            msm.sort_fixed(table.plan, table.n, d_scalars, n, d_index)
                    if table is not None:
                        msm.enqueue_fixed(table, d_scalars, n, out, d_point_index=d_index,
                                          digits=digits if shared else None)
                    else:
                        deferred = msm.enqueue(g2, base, d_scalars, n, out, d_point_index=d_index, d_windows=d_windows,
                                               digits=digits if shared else None, skip_below=first if shared else 0)
                if digits is not None and name in last_of_group:
                    digits.free()  # stream-ordered: after the last MSM of its group that reads it
                    digits = None
                if windows is not None:
                    windows.deferred.append(deferred)
                    if name == "b2":
                        windows.combine_beside(g2=True)  # beside C's MSM and H
                if events is not None:
                    events.mark(f"msm_{name}_ms")
        finally:
            if digits is not None:
                digits.free()

    def start_batch(self, key: CudaKey, items, with_b_g2: bool):
        """A resident key: one partition after another (``SequentialBatch``); a streamed key: one
        pass of its streamed points for every partition of the batch (``CudaStreamedPass``)."""
        if key.placement.mode == "resident":
            return super().start_batch(key, items, with_b_g2)
        self.device.activate()
        return CudaStreamedPass(self, key, items, with_b_g2)

    def max_batch(self, key: CudaKey) -> int:
        return 64 if key.placement.streamed else 1

    def prefetch_witness(self, witness: np.ndarray) -> int:
        """The witness onto the device on a copy stream, for the ``start_partition`` of the same array
        (witness_prefetch.py); 0 where the option is off."""
        if not self.prefetches_witness:
            return 0
        self.device.activate()
        if self._prefetches is None:
            self._prefetches = WitnessPrefetches(self.allocator, self.copy_stream("witness prefetch"))
        return self._prefetches.start(witness)

    def drop_prefetch(self, witness: np.ndarray) -> None:
        if self._prefetches is not None:
            self.device.activate()
            self._prefetches.drop(witness)

    def _witness_on_device(self, witness: np.ndarray):
        """The prefetched copy of ``witness`` if there is one (the stream waits for it), else an upload."""
        d_w = self._prefetches.take(witness) if self._prefetches is not None else None
        return d_w if d_w is not None else self._upload_witness(witness)

    def start_partition(self, key: CudaKey, witness: np.ndarray, with_b_g2: bool = True,
                        shape: WitnessShape | None = None) -> CudaPartitionWork:
        """Queue the whole device work of one partition and return without waiting: the witness's
        upload, its 0 / 1 split when it is bit-heavy enough and the four witness MSMs, then H (the
        witness leaves the device once the sparse products have read it) and its MSM, then the
        results' copy into pinned memory. Scratch goes back in stream order. In this order a
        partition's peak is three vectors of the domain, not the witness, H, a, b and c together
        (``prologue_scratch_bytes``)."""
        self.device.activate()
        rt = key.runtime
        slot = rt.msm.xyzz_bytes(True)
        events = PhaseEvents(self.stream)
        h_results = self._results.take()
        d_w = d_h = d_results = split = windows = None
        try:
            d_w = self._witness_on_device(witness)
            events.mark("upload_ms")  # a prefetched witness: the wait for its copy
            if self.batched_window_combination:
                windows = WindowSums(rt.msm, self.allocator, self.stream, self._side_streams())
            d_results = self.allocator.alloc(results_bytes(slot), "msm results")
            d_results.memset32(0, self.stream)  # a skipped slot (b2 on the host, no split) reads as infinity
            if split_worth_it(shape, self.msm_split_min_bits):
                split = enqueue_split(rt.msm, d_w.ptr, shape)
                check(driver.cuMemcpyDtoDAsync(d_results.ptr + len(MSM_SLOTS) * slot, split.d_counts.ptr, 8,
                                               self.stream.handle), "cuMemcpyDtoDAsync")
                events.mark("split_ms")
            self._enqueue_msms(key, d_w, None, d_results, with_b_g2, events, split, sections=WITNESS_SECTIONS,
                               windows=windows)
            if split is not None:
                split.free()  # stream-ordered, before H's buffers are taken
            if windows is not None:
                windows.combine_beside(g2=False)  # a, b1, c: beside H (b2's went after its MSM)
            d_h = self._enqueue_h(key, d_w, events, release_witness=True)
            self._enqueue_msms(key, None, d_h, d_results, with_b_g2, events, sections=("h",), windows=windows)
            if windows is not None:
                windows.combine()
                events.mark("msm_combine_ms")
            check(driver.cuMemcpyDtoHAsync(h_results.ptr, d_results.ptr, results_bytes(slot), self.stream.handle),
                  "cuMemcpyDtoHAsync")
            events.mark("download_ms")
        except BaseException:
            self.stream.synchronize()  # let queued work finish with the buffers before they go back
            self._results.give_back(h_results)
            events.close()
            raise
        finally:
            for buf in (d_w, d_h, d_results, split, windows):
                if buf is not None:
                    buf.free()  # stream-ordered: after the work queued above
        counts = (shape.n_one, shape.n_other) if split is not None else None
        return CudaPartitionWork(key.zkey.curve, self.device, events, h_results, self._results, slot, with_b_g2,
                                 keep_alive=(witness,), expected_counts=counts)

    # -- the step-by-step API (the reference prover and the tests) ---------------------------------
    def compute_h(self, key: CudaKey, witness: np.ndarray) -> DeviceH:
        self.device.activate()
        events, d_w = PhaseEvents(self.stream), None
        try:
            d_w = self._upload_witness(witness)
            events.mark("upload_ms")
            d_h = self._enqueue_h(key, d_w, events)
        except BaseException:
            if d_w is not None:
                d_w.free()
            events.close()
            raise
        return DeviceH(d_h, key.zkey.domain_size, events, d_w, witness)

    def h_to_host(self, h: DeviceH) -> np.ndarray:
        out = np.zeros((h.n, 4), dtype=np.uint64)
        return h.buffer.download(out, self.stream)

    def msms(self, key: CudaKey, witness: np.ndarray, h, with_b_g2: bool = True) -> MsmResults:
        """The five MSMs, blocking; a ``DeviceH`` from ``compute_h`` is consumed (freed, witness copy too)."""
        try:
            return self._msms(key, witness, h, with_b_g2)
        finally:
            if isinstance(h, DeviceH):
                h.free()

    def _msms(self, key: CudaKey, witness: np.ndarray, h, with_b_g2: bool) -> MsmResults:
        self.device.activate()
        slot = key.runtime.msm.xyzz_bytes(True)
        reuse = isinstance(h, DeviceH) and h.d_witness is not None and h.witness_host is witness
        events = PhaseEvents(self.stream)
        h_results = self._results.take()
        with contextlib.nullcontext(h.d_witness) if reuse else self._upload_witness(witness) as d_w, \
                contextlib.nullcontext(h.buffer) if isinstance(h, DeviceH) else \
                self.allocator.upload(np.ascontiguousarray(h, dtype=np.uint64), "H scalars") as d_h, \
                self.allocator.alloc(results_bytes(slot), "msm results") as d_results:
            try:
                d_results.memset32(0, self.stream)
                self._enqueue_msms(key, d_w, d_h, d_results, with_b_g2, events)
                check(driver.cuMemcpyDtoHAsync(h_results.ptr, d_results.ptr, results_bytes(slot),
                                               self.stream.handle), "cuMemcpyDtoHAsync")
                events.mark("download_ms")
            except BaseException:
                self.stream.synchronize()
                self._results.give_back(h_results)
                events.close()
                raise
        results = CudaPartitionWork(key.zkey.curve, self.device, events, h_results, self._results, slot,
                                    with_b_g2, keep_alive=(witness,)).result()
        if isinstance(h, DeviceH):  # its work ran before this call's: its events have fired
            h_phases = h.events.elapsed_ms()
            results.timings_ms.update(h_phases, h_ms=h_time_ms(h_phases))
        return results

    def msm_b_g2(self, key: CudaKey, witness: np.ndarray) -> G2Jacobian:
        self.device.activate()
        with self._upload_witness(witness) as d_w:
            table = key.tables.get("b2")
            if table is not None:
                return G2Jacobian(*key.runtime.msm.run_fixed(key.zkey.curve.g2, table, d_w.ptr, key.zkey.n_vars))
            return G2Jacobian(*key.runtime.msm.run(key.zkey.curve.g2, key.d_points["b2"].ptr, d_w.ptr,
                                                   key.zkey.n_vars))

    # -- what the engine's budgets ask (optional Backend methods, see engine/devices.py) ------------
    def key_device_bytes(self, zkey: Groth16Zkey) -> int:
        """Device bytes ``load_key`` holds: the point arrays, the two CSR matrices and the NTT's
        tables of the key's domain (shared by the keys of a curve, counted by each: an overestimate
        only with several keys of one curve on a device)."""
        points = sum(getattr(zkey, f"points_{n}").nbytes for n in SECTIONS)
        return points + self._csr_device_bytes(zkey) + self._ntt_table_bytes(zkey)

    def _csr_device_bytes(self, zkey: Groth16Zkey) -> int:
        """The two CSR matrices on the device: values (or table indices and the table), columns and
        row pointers (and the long rows' lists, ``spmv_long_rows``)."""
        table = self.coefficient_table(zkey)
        values = zkey.coeff_values_stored.nbytes if table is None else table.nbytes
        lists = long_rows_bytes_bound(len(zkey.coeff_signal)) if self.spmv_long_rows else 0
        return values + 4 * len(zkey.coeff_signal) + 8 * (zkey.domain_size + 1) + lists

    @staticmethod
    def _ntt_table_bytes(zkey: Groth16Zkey, compact: bool = False) -> int:
        """The NTT's tables: the level twiddle table for a resident key, the compact one (half
        the bytes, ~9% slower transforms) for a streamed key (``device_key``)."""
        return ntt_table_bytes(zkey.log_domain_size, zkey.curve.fr.n_bytes, compact)

    def partition_host_bytes(self, zkey: Groth16Zkey) -> int:
        """H stays on the device, except in a streamed pass: there a pinned copy of H and the host
        0/1 split (indices of ones and others, 4 bytes each, and the other values, at most a share
        1 - ``stream_split_min_bits`` of them: the pass splits only at or above that share of bits).
        Counted whatever the placement, which is per device and unknown when a partition is admitted."""
        fr = zkey.curve.fr.n_bytes
        other_share = max(0.0, 1.0 - self.stream_split_min_bits)  # the option is validated >= 0; above 1: never splits
        return zkey.domain_size * fr + zkey.n_vars * 4 + math.ceil(zkey.n_vars * fr * other_share)

    def scratch_bytes(self, key: CudaKey, batch: int = 1) -> int:
        """Upper bound of a pass's device scratch, from the bounds the kernels are sized by. The
        allocator's budget stays the hard limit."""
        if batch not in key.scratch_by_batch:  # the engine asks on the loop, several times a pass: once each
            key.scratch_by_batch[batch] = (
                pass_scratch_bytes(key.runtime.msm, key.zkey, key.placement, batch, key.csr_chunk_max)
                if key.placement.mode != "resident"
                else self._resident_scratch_bytes(key.zkey, key.runtime.msm,
                                                  {s: t.plan.table_sets for s, t in key.tables.items()}))
        return key.scratch_by_batch[batch]

    def _resident_scratch_bytes(self, zkey: Groth16Zkey, msm: MsmRunner, fixed: dict[str, int] | None = None) -> int:
        """One partition of a resident key: the prologue of a pass with every section resident
        (``fixed``: those with a fixed-base table, and its bucket sets), plus the split's scratch, the result
        slots and the window sums beside its MSMs."""
        held = results_bytes(msm.xyzz_bytes(True)) + WindowSums.nbytes(msm)  # counted batched or not: ~250 KB
        return prologue_scratch_bytes(msm, zkey, SECTIONS, witness_extra=split_scratch_bytes(zkey.n_vars),
                                      held_extra=held, fixed=fixed)

    def memory_budget_bytes(self) -> int:
        return self.allocator.budget_bytes

    def pinned_host_buffer(self, nbytes: int) -> PinnedHostBuffer:
        """Page-locked host memory for the engine's staging pool, pinned for every GPU's context."""
        return PinnedHostBuffer(self.device, nbytes, portable=True)

    def visible_devices(self) -> list[int]:
        from .device import device_count

        return list(range(device_count()))

    def close(self) -> None:
        if self._prefetches is not None:
            self._prefetches.close()
            self._prefetches = None
        for stream in self._copy_streams.values():
            stream.close()
        self._copy_streams = {}
        for rt in self._runtimes.values():
            rt.ntt.close()
            rt.kernels.close()
        self._runtimes.clear()
        self.allocator.trim()
        self.stream.close()
        self._results.close()
        for pool in self._pinned_pools.values():
            pool.close()
        self._pinned_pools.clear()
