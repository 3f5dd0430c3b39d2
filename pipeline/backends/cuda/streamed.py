"""Keys larger than the VRAM budget: point sections streamed from page-locked host memory.

``place_streamed`` decides which sections stay on the device (hot ones first: H, then A, B1, C,
B2) and the chunk sizes, so that the CSR matrices, the resident sections and one pass's scratch
fit the budget. ``CudaStreamedPass`` runs a pass (batch.py's ``StreamedPass``) for several
partitions at once:

- prologue, per partition, in the resident partition's order (backend.start_partition): witness
  upload, the MSMs of resident witness sections and the 0 / 1 split, then H (spmv, NTTs; the
  witness leaves the device once spmv has read it), H's MSM when its section is resident or when
  its points come through the prologue (``KeyPlacement.h_per_partition``: in pieces, copy stream
  and compute stream taking turns on two buffers, into one MSM's bucket sums), else H copied to
  pinned host memory for the chunks; H then leaves the device.
- chunks, in order: the copy stream fills one of two device buffers with the chunk's points
  (host -> device, from the registered key arrays) while the compute stream runs the previous
  chunk's MSMs; for every partition still in the pass, its scalars of the chunk are copied in
  and one MSM per section slice writes a partial sum into the partition's result slots. A
  bit-heavy witness (``HostSplit``, built in its prologue) instead has per slice a sum of the
  points of its ones and a tail MSM over its other values; with ``stream_tails="prologue"`` the
  tails run once per section in the prologue, over points gathered on the host, when they fit.
- results: the slots come back in one copy; partial sums are added on the host.

Buffers cross streams only through events: the copy stream waits for ``freed[b]`` (the compute
stream is done with buffer b) before refilling it, the compute stream waits for ``copied[b]``; a
partition's chunk scalars go the same way through ``SCALAR_BUFFERS`` buffers on a third stream.
The H section's chunk scalars are copied from pinned host memory rather than kept on the device.
Where the time goes, measured: bench/results/streamed_profile_*.md.
"""
from __future__ import annotations

import time

import numpy as np

from ...curves import Curve
from ..batch import StreamedPass
from ..placement import (SECTIONS, WITNESS_SECTIONS, Chunk, HostSplit, KeyPlacement, is_g2, plan_chunks, point_bytes,
                         section_bytes, section_span)
from ._bindings import driver
from .errors import DeviceBudgetError, check
from .memory import ADDRESS_MASK, DeviceAddress, HostRegistration, PinnedHostBuffer
from .msm import SCALAR_BYTES, PairTables, PointSum, xyzz_to_jacobian
from .split import enqueue_gather_rows, enqueue_split, split_scratch_bytes, split_worth_it
from .streams import Event, PhaseClock, Stream, event_ready
from .work import MSM_SLOTS, results_bytes

HOT_ORDER = ("h", "a", "b1", "c", "b2")  # which sections stay on the device first when some must go


# A partition's gathered tail points go through page-locked staging (an asynchronous copy at the
# pinned rate; from pageable memory the copy ran at ~6 GB/s and held the host until the stream reached
# it: 256 ms a partition at 2^26, bench/results/streamed_profile_bls12381_2e26.md). Staging sizes come
# in steps of TAIL_STAGE_STEP (few pools); at most TAIL_STAGES_IN_FLIGHT per pass, each at most
# TAIL_STAGE_MAX bytes (larger tails: the pageable copy, slower but bounded in host memory).
TAIL_STAGE_STEP = 64 << 20
TAIL_STAGE_MAX = 2 << 30
TAIL_STAGES_IN_FLIGHT = 2
# A partition's chunk scalars (and split indices) go through SCALAR_BUFFERS device buffers filled
# on a stream of their own, a partition or more ahead of the kernels. Copied on the compute stream
# they waited behind the copy engine's next chunk of points however it was cut (37 ms a chunk: 2^26,
# batch 1, 706 ms of a 2.55 s partition, bench/results/streamed_profile_bls12381_2e26.md).
SCALAR_BUFFERS = 2
PAIR_TABLE_BYTES = 512  # a group's level tables: up to 3 sums (A, B1, C) of <= 10 levels, 8 bytes a level, aligned
MIN_CHUNK_BYTES = 64 << 10  # the smallest chunk tried when a budget is tight (small MSMs: slow, but it proves)
MIN_CHUNK_POINTS = 64
MAX_CHUNKS = 1024
PLACED_FOR_BATCH = 10  # the result slots of this many partitions are kept room for: a pass shares its points


def chunk_sizes(zkey, streamed: tuple[str, ...], chunk_bytes: int) -> tuple[int, int]:
    """(signals per chunk, H points per chunk) so that one chunk's points are about ``chunk_bytes``."""
    per_signal = sum(point_bytes(zkey.curve, s) for s in WITNESS_SECTIONS if s in streamed)
    signals = max(MIN_CHUNK_POINTS, chunk_bytes // per_signal) if per_signal else 0
    h = max(MIN_CHUNK_POINTS, chunk_bytes // point_bytes(zkey.curve, "h")) if "h" in streamed else 0
    return min(signals, zkey.n_vars), min(h, zkey.domain_size)


def chunk_candidates(chunk_bytes: int, whole: int | None = None) -> list[int]:
    """``chunk_bytes``, then halves of it down to ``MIN_CHUNK_BYTES`` or to 1/``MAX_CHUNKS`` of
    ``whole`` (the streamed bytes; more chunks would cost more in fixed MSM costs than a pass is
    worth, and a plan of them is slow to walk): the first that fits is taken."""
    floor = max(MIN_CHUNK_BYTES, (whole or 0) // MAX_CHUNKS)
    sizes = [max(chunk_bytes, floor)]
    while sizes[-1] // 2 >= floor:
        sizes.append(sizes[-1] // 2)
    return sizes


def resident_slots_bytes(slot: int) -> int:
    """The resident MSMs' result slots (work.py's layout), padded to whole slots so that every
    chunk slice's slot after them is aligned like the first."""
    return -(-results_bytes(slot) // slot) * slot


def slot_block_bytes(slot: int, chunks: list[Chunk]) -> int:
    """Result bytes per partition of a pass: the resident MSMs' slots, then two per chunk slice
    (the batch sum of a split witness's ones, and the MSM of the other scalars)."""
    return resident_slots_bytes(slot) + 2 * slot * sum(len(c.slices) for c in chunks)


def prologue_scratch_bytes(msm, zkey, resident: tuple[str, ...], csr_chunk: int = 0, witness_extra: int = 0,
                           held_extra: int = 0, h_pieces: int = 0, fixed: dict[str, int] | None = None) -> int:
    """One partition's device work before any streamed points (a resident key's whole partition)
    at its largest, in the order it is queued:
    - the witness, the largest resident witness section's MSM scratch and ``witness_extra`` (a
      resident partition's 0 / 1 split);
    - the sparse products: the witness, a and b (and a chunk of the CSR when it streams);
    - the quotient: a, b and c, the witness gone (H is written over a);
    - H and its MSM's scratch when the H section is resident, or when its points come in pieces of
      ``h_pieces`` (two piece buffers, the MSM's bucket sums and one piece's scratch; the first
      buffer is filled during the sparse products and the quotient).
    ``held_extra`` is held throughout (a resident partition's result slots); ``fixed``: the resident
    sections whose MSMs run over fixed-base tables, with their bucket sets (their witness MSMs' shared sort
    is freed before the others sort theirs). The NTT's twiddles belong to the key's bytes
    (``ntt.table_bytes``)."""
    fixed = fixed or {}
    vector = zkey.domain_size * SCALAR_BYTES
    witness_msm = max([msm.scratch_bytes(zkey.n_vars, is_g2(s), held_digits=msm.shared_sort, fixed=s in fixed,
                                         table_sets=fixed.get(s, 1)) for s in resident if s != "h"], default=0)
    if h_pieces:
        h_buf = min(h_pieces, zkey.domain_size) * point_bytes(zkey.curve, "h")  # the first is taken before spmv
        h_msm = 2 * h_buf + msm.piece_scratch_bytes(zkey.domain_size, h_pieces, False)
    else:
        h_buf = 0
        h_msm = msm.scratch_bytes(zkey.domain_size, False, fixed="h" in fixed,
                                  table_sets=fixed.get("h", 1)) if "h" in resident else 0
    return held_extra + max(witness_bytes(zkey) + witness_extra + witness_msm,
                            witness_bytes(zkey) + 2 * vector + csr_chunk + h_buf, 3 * vector + h_buf, vector + h_msm)


def witness_bytes(zkey) -> int:
    """A partition's witness on the device (its prologue's first phases)."""
    return zkey.n_vars * SCALAR_BYTES


def pass_scratch_bytes(msm, zkey, placement: KeyPlacement, batch: int, csr_chunk: int | None = None) -> int:
    """A whole pass of ``batch`` partitions: result slots throughout, and the larger of one
    prologue and the chunk phase (two point buffers, SCALAR_BUFFERS of a chunk's scalars and split
    indices, one chunk MSM).
    ``csr_chunk``: the loaded key's largest CSR chunk (default: the placement's target)."""
    chunks = plan_chunks(zkey, placement)
    slot = msm.xyzz_bytes(True)
    point_buf = max((chunk_point_bytes(zkey.curve, c) for c in chunks), default=0)
    scalars = max(((c.hi - c.lo) * SCALAR_BYTES for c in chunks), default=0)
    h_chunk = placement.chunk_h if placement.h_in_chunks else 0
    chunk_msm = max([msm.scratch_bytes(placement.chunk_signals, is_g2(s)) for s in placement.streamed if s != "h"]
                    + [msm.scratch_bytes(h_chunk, False) if h_chunk else 0])
    split_idx = 2 * 4 * max(placement.chunk_signals, h_chunk)  # a chunk's one and other indices
    chunk_phase = 2 * point_buf + SCALAR_BUFFERS * (scalars + split_idx) + chunk_msm
    csr = placement.csr_chunk_bytes if csr_chunk is None else csr_chunk
    h_pieces = placement.chunk_h if placement.h_in_prologues else 0
    return batch * slot_block_bytes(slot, chunks) + max(
        prologue_scratch_bytes(msm, zkey, placement.resident, csr, h_pieces=h_pieces), chunk_phase)


def chunk_point_bytes(curve: Curve, chunk: Chunk) -> int:
    return sum(s.count * point_bytes(curve, s.section) for s in chunk.slices)


def place_streamed(msm, zkey, budget: int, csr_bytes: int, chunk_bytes: int, table_bytes: int = 0,
                   fixed_bytes: int = 0, max_chunk_bytes: int | None = None,
                   h_per_partition: bool = False) -> KeyPlacement:
    """The most sections resident (hot first) such that the CSR (resident if it fits, else
    streamed: its row pointers stay), the resident points and a pass of one partition fit
    ``budget`` (with the result slots of a batch of ``PLACED_FOR_BATCH``). The sections are chosen
    with chunks of ``chunk_bytes`` (the largest half of it that fits, when the budget is tight);
    the chunks then double while they fit. ``DeviceBudgetError`` if not even a key with
    everything streamed in the smallest chunks fits. ``table_bytes``: the coefficient table a
    streamed CSR keeps on the device beside its row pointers (0: none); ``fixed_bytes``: what the
    key keeps on the device whatever its placement (the NTT's tables); ``max_chunk_bytes``: how
    far the chunks may grow (None: while they fit); ``h_per_partition``: a streamed H goes through
    each partition's prologue in pieces of ``chunk_h`` points (KeyPlacement.h_per_partition)."""
    row_ptr_bytes = 2 * 4 * (zkey.domain_size + 1) + table_bytes

    def placement(resident: list[str], csr_streamed: bool, chunk: int, csr_chunk: int | None = None) -> KeyPlacement:
        kept = tuple(s for s in SECTIONS if s in resident)
        streamed = tuple(s for s in SECTIONS if s not in kept)
        signals, h = chunk_sizes(zkey, streamed, chunk)
        csr = row_ptr_bytes if csr_streamed else csr_bytes
        return KeyPlacement(kept, signals, h, fixed_bytes + csr + sum(section_bytes(zkey, s) for s in kept),
                            min(chunk if csr_chunk is None else csr_chunk, csr_bytes) if csr_streamed else 0,
                            h_per_partition and "h" in streamed)  # the flag only where H streams

    def need(p: KeyPlacement) -> int:  # a batch's result slots are small next to the rest: keep room for them
        return p.device_bytes + pass_scratch_bytes(msm, zkey, p, PLACED_FOR_BATCH)

    whole = max(sum(section_bytes(zkey, s) for s in WITNESS_SECTIONS), section_bytes(zkey, "h"))
    least = None
    for chunk in chunk_candidates(chunk_bytes, whole):
        for csr_streamed in (False, True):
            chosen: list[str] = []
            for section in HOT_ORDER:
                if need(placement(chosen + [section], csr_streamed, chunk)) <= budget:
                    chosen.append(section)
            best = placement(chosen, csr_streamed, chunk)
            if need(best) > budget:
                least = min(least or need(best), need(best))
                continue
            # Then chunks as large as the room left allows: every chunk costs each partition a
            # few MSMs whose fixed cost (bucket sums) does not shrink with the chunk. Doubling
            # first, then steps of a half, a quarter and an eighth of the size reached, so that
            # the room a doubling would overfill is still used. The CSR's chunks stay: they share
            # the prologue with the quotient's buffers.
            grown, cap = chunk, max(chunk, max_chunk_bytes) if max_chunk_bytes else float("inf")
            while 2 * grown <= cap and grown < whole and \
                    need(bigger := placement(chosen, csr_streamed, 2 * grown, chunk)) <= budget:
                best, grown = bigger, 2 * grown
            for step in (grown // 2, grown // 4, grown // 8):
                if grown + step <= cap and grown < whole and \
                        need(bigger := placement(chosen, csr_streamed, grown + step, chunk)) <= budget:
                    best, grown = bigger, grown + step
            return best
    raise DeviceBudgetError(f"a {zkey.curve.name} key of 2^{zkey.log_domain_size} constraints needs at least {least} "
                            f"bytes of device memory even with every point streamed, its CSR too, in chunks of "
                            f"{chunk} bytes (one partition's witness, quotient and NTT buffers, and a "
                            f"chunk); the budget is {budget}")


class CudaStreamedPass(StreamedPass):
    lock_split_arrays = True  # page-lock each host 0/1 split (False: bench/streamed_profile.py's comparison row)
    device_tails = True  # split on the device and gather tails there when it can (False: the host does both)
    profile_phases = False  # device time per phase in pass_timings (bench/streamed_profile.py sets it)

    def __init__(self, backend, key, items, with_b_g2: bool) -> None:
        zkey = key.zkey
        super().__init__(zkey.curve, len(items), plan_chunks(zkey, key.placement), with_b_g2)
        self.backend, self.key, self.items = backend, key, list(items)
        self.depth = backend.stream_queue_depth
        self.msm = key.runtime.msm
        self.stream: Stream = backend.stream
        self.copy_stream: Stream = backend.copy_stream()
        self.scalar_stream: Stream = backend.copy_stream(1)
        self.slot = self.msm.xyzz_bytes(True)
        self.block = slot_block_bytes(self.slot, self.chunks)
        self.slice_slot: dict[tuple[int, int], int] = {}  # (chunk, slice) -> slot after the resident ones
        for j, chunk in enumerate(self.chunks):
            for k in range(len(chunk.slices)):
                self.slice_slot[j, k] = len(self.slice_slot)
        self.step_events: list[Event] = []
        self.h_host: list[PinnedHostBuffer | None] = [None] * len(items)
        self.h_pool = backend.pinned_pool(zkey.domain_size * SCALAR_BYTES)
        # the 0 / 1 split of each bit-heavy witness, on the host (None: plain MSMs over its scalars)
        self.splits: list[HostSplit | None] = [None] * len(items)
        self.split_locks: list[HostRegistration] = []
        self.tails_done = [False] * len(items)  # the split's tail MSMs ran in the prologue (stream_tails)
        self.split_lists: list[_SplitLists | None] = [None] * len(items)  # a device split's lists, downloaded
        self.tail_stages: list[tuple[PinnedHostBuffer, Event, object]] = []  # (staging, uploaded, its pool)
        self.scalar_bufs: list[_ScalarBuffer] = []  # a partition's chunk scalars, filled on scalar_stream
        self.scalar_turn = 0
        self.buffers: list = []
        self.pair_tables: PairTables | None = None  # the chunks' ones sums' level tables, page-locked
        self.copied = [Event(timing=False), Event(timing=False)]
        self.freed = [Event(timing=False), Event(timing=False)]
        self.h_copied = [Event(timing=False), Event(timing=False)]  # H's piece buffers (h_per_partition)
        self.h_freed = [Event(timing=False), Event(timing=False)]
        self.d_results = None
        self._chunk_index = {id(c): j for j, c in enumerate(self.chunks)}
        self.copy_marks: list[tuple[Event, Event]] = []  # around each chunk's host-to-device copies
        self.streamed_bytes = 0
        backend.device.activate()
        self.clock = PhaseClock(self.stream, self.profile_phases)
        self.started = Event().record(self.stream)
        self.d_results = backend.allocator.alloc(self.block * len(items), "streamed pass results")
        self.d_results.memset32(0, self.stream)  # a slot never written reads as infinity

    # -- steps ---------------------------------------------------------------------------------
    def _prologue(self, index: int) -> None:
        b, key, clock = self.backend, self.key, self.clock
        b.device.activate()
        witness = self.items[index][0]
        d_w = d_h = None
        h_bufs: list = []  # H's piece buffers (h_per_partition)
        try:
            with clock.phase("prologue: witness upload"):
                d_w = b._upload_witness(witness)
            resident = tuple(s for s in key.placement.resident if s != "b2" or self.with_b_g2)
            results = DeviceAddress(self.d_results.ptr + index * self.block)
            with clock.phase("prologue: resident MSMs"):
                b._enqueue_msms(key, d_w, None, results, self.with_b_g2, None,
                                sections=tuple(s for s in resident if s != "h"))
            bit_heavy = split_worth_it(self.items[index][1], b.stream_split_min_bits) and \
                any(s in key.placement.streamed for s in WITNESS_SECTIONS)
            on_device = bit_heavy and self._device_tails_fit(index)
            if on_device:  # before H, which frees the witness
                self._device_split(index, d_w)
            if key.placement.h_in_prologues:
                h_bufs = self._h_first_piece()
            with clock.phase("prologue: H"):
                d_h = b._enqueue_h(key, d_w, release_witness=True)
            if "h" in resident:
                with clock.phase("prologue: resident MSMs"):
                    b._enqueue_msms(key, None, d_h, results, self.with_b_g2, None, sections=("h",))
            if key.placement.h_in_prologues:
                with clock.phase("prologue: H MSM, points in pieces"):
                    self._h_msm_in_pieces(index, d_h, h_bufs)
            elif key.placement.h_in_chunks:
                n = key.zkey.domain_size
                self.h_host[index] = self.h_pool.take()
                with clock.phase("prologue: H to host"):
                    check(driver.cuMemcpyDtoHAsync(self.h_host[index].ptr, d_h.ptr, n * SCALAR_BYTES,
                                                   self.stream.handle), "cuMemcpyDtoHAsync")
            if bit_heavy and not on_device:
                split = self.splits[index] = HostSplit(witness)  # host work while the device runs H
                # Page-locked, so that a chunk's copies of them are asynchronous: a copy from pageable
                # memory first waits for the whole stream, and the device would idle while the host
                # queues the next MSMs (bench/results/streamed_profile_*.md: host time per chunk ~ device time).
                # (Small arrays stay pageable: they may share a page with another registration.)
                if self.lock_split_arrays:
                    self.split_locks += [HostRegistration(b.device, a) for a in
                                         (split.ones, split.others, split.other_scalars) if a.nbytes >= 1 << 20]
        finally:
            for buf in (d_w, d_h, *h_bufs):
                if buf is not None:
                    buf.free()  # stream-ordered: after the work queued above (the copies into H's
                    # piece buffers: the kernels that read them waited for them)
        if self.splits[index] is not None and b.stream_tails == "prologue" and not self.tails_done[index]:
            self.tails_done[index] = self._prologue_tails(index)
        self._step_done()

    def _h_first_piece(self) -> list:
        """H's first piece buffer, its copy queued now, before H: it runs beside H's sparse products
        and transforms, where after them the compute stream waited for it (~57 ms a 2^26 partition,
        pieces of 2^24.9 points: bench/NOTES.md, session 20). The list of piece buffers goes on to
        ``_h_msm_in_pieces``; its caller frees them."""
        piece, n = self.key.placement.chunk_h, self.key.zkey.domain_size
        buf = self.backend.allocator.alloc(min(piece, n) * point_bytes(self.curve, "h"), "streamed H points (buffer 0)")
        self.h_freed[0].record(self.stream)  # the buffer exists in the compute stream's order: its copy starts after
        self._copy_h_piece(buf, 0, 0)
        return [buf]

    def _copy_h_piece(self, buf, k: int, lo: int) -> None:
        """Queue H's points [lo, lo + chunk_h) into piece buffer ``k`` (``_copy_points``, through
        ``h_freed[k]`` and ``h_copied[k]``)."""
        n, piece, pb = self.key.zkey.domain_size, self.key.placement.chunk_h, point_bytes(self.curve, "h")
        self._copy_points([(buf.ptr, self.key.host_points["h"].ptr + lo * pb, (min(lo + piece, n) - lo) * pb)],
                          self.h_freed[k], self.h_copied[k])

    def _copy_points(self, copies: list[tuple[int, int, int]], freed: Event, copied: Event) -> None:
        """Queue host-to-device copies (device address, host address, bytes) of key points on the copy
        stream once ``freed`` has happened (the compute stream is done with their buffer), then record
        ``copied``; timed (``copy_marks``) and counted (``streamed_bytes``) for the pass's H2D rate."""
        check(driver.cuStreamWaitEvent(self.copy_stream.handle, freed.handle, 0), "cuStreamWaitEvent")
        copy_start = Event().record(self.copy_stream)
        for dst, src, nbytes in copies:
            check(driver.cuMemcpyHtoDAsync(dst, src, nbytes, self.copy_stream.handle), "cuMemcpyHtoDAsync")
            self.streamed_bytes += nbytes
        copied.record(self.copy_stream)
        self.copy_marks.append((copy_start, Event().record(self.copy_stream)))

    def _h_msm_in_pieces(self, index: int, d_h, bufs: list) -> None:
        """Partition ``index``'s H MSM over H's points brought from host memory in pieces of
        ``chunk_h`` (the first already on its way into ``bufs[0]``: ``_h_first_piece``): the copy
        stream fills one of two buffers while the compute stream sorts and sums the other's digits
        into the MSM's bucket sums (its windows are the whole domain's: one MSM's additions, where a
        chunk's own MSM pays its own windows and bucket sums), then its result to H's own slot. H's
        points cross PCIe once per partition (~1/4 of its MSM's time at 2^26 on the H200's link),
        its scalars never leave the device. A second buffer joins ``bufs`` (its caller frees them)."""
        zkey, msm = self.key.zkey, self.msm
        n, piece = zkey.domain_size, self.key.placement.chunk_h
        starts = range(0, n, piece)
        if len(starts) > 1:
            bufs.append(self.backend.allocator.alloc(bufs[0].nbytes, "streamed H points (buffer 1)"))
            self.h_freed[1].record(self.stream)
        sums = msm.start_buckets(False, n)
        try:
            for j, lo in enumerate(starts):
                k = j % len(bufs)
                if j:
                    self._copy_h_piece(bufs[k], k, lo)
                check(driver.cuStreamWaitEvent(self.stream.handle, self.h_copied[k].handle, 0), "cuStreamWaitEvent")
                msm.add_piece(sums, bufs[k].ptr, d_h.ptr + lo * SCALAR_BYTES, min(lo + piece, n) - lo)
                self.h_freed[k].record(self.stream)
        except BaseException:
            sums.free()  # stream-ordered; finish_buckets frees them otherwise
            raise
        msm.finish_buckets(sums, self.d_results.ptr + index * self.block + MSM_SLOTS.index("h") * self.slot)

    # -- a bit-heavy witness split on the device, its tails gathered there -----------------------
    def _tail_sections(self) -> list[str]:
        return [s for s in WITNESS_SECTIONS if s in self.key.placement.streamed and (s != "b2" or self.with_b_g2)]

    def _device_tails_fit(self, index: int) -> bool:
        """Whether partition ``index``'s split and tail MSMs can run on the device in its prologue:
        tails in the prologue, every streamed witness section mapped for kernels (page-locked with
        a device address), each section's others a suffix of the lists (sections start at signal 0
        or after the public signals), and the lists, one gathered section and its MSM fitting the
        room the quotient's buffers had."""
        zkey, msm = self.key.zkey, self.msm
        shape = self.items[index][1]
        if not self.device_tails or self.backend.stream_tails != "prologue":
            return False
        need = 0
        for s in self._tail_sections():
            reg = self.key.host_points.get(s)
            first, count = section_span(zkey, s)
            if reg is None or reg.device_ptr is None or first not in (0, shape.prefix_len) or first + count != zkey.n_vars:
                return False
            _, _, n = self._tail_span(shape, s)
            need = max(need, n * point_bytes(self.curve, s) + msm.scratch_bytes(n, is_g2(s)))
        # before H: the witness is on the device; one section's gathered tail and its MSM at a time
        return witness_bytes(zkey) + split_scratch_bytes(zkey.n_vars) + need <= self._prologue_room()

    def _prologue_room(self) -> int:
        """Device bytes a partition's prologue may use: the pass's scratch beyond its result slots,
        the larger of a prologue and the chunk phase, whose buffers are taken only after the
        prologues. (The prologue's own peak alone, three vectors at 2^26, was too small for the
        device split beside the witness: the host split it instead, ~620 ms of host time a
        partition, bench/results/streamed_profile_bls12381_2e26.md, session 9.)"""
        return self.backend.scratch_bytes(self.key, 0)  # a pass of no partitions: no result slots

    def _tail_span(self, shape, section: str) -> tuple[int, int, int]:
        """(first signal of ``section``, position of its first other value in the split's lists,
        how many): a section's others are a suffix of the lists (it starts at signal 0 or after the
        public signals)."""
        first, _ = section_span(self.key.zkey, section)
        t0 = shape.prefix_other if first else 0
        return first, t0, shape.n_other - t0

    def _device_split(self, index: int, d_w) -> None:
        """Split the uploaded witness on the device (split.py), download its lists into page-locked
        memory for the chunks' copies (read on the host once ``_lists_ready``), and run each streamed
        section's tail MSM over its other points gathered on the device from the mapped key: no
        host pass over the witness or the points under the GPU lock."""
        shape, clock, msm = self.items[index][1], self.clock, self.msm
        with clock.phase("prologue: device split"):
            dsplit = enqueue_split(msm, d_w.ptr, shape)
        try:
            self.splits[index] = self._download_lists(index, dsplit).split
            for s in self._tail_sections():  # one section at a time: the room check counts one
                first, t0, n = self._tail_span(shape, s)
                if n == 0:
                    continue  # the slot stays infinity
                pb = point_bytes(self.curve, s)
                with self.backend.allocator.alloc(n * pb, f"tail points {s}") as d_points:  # freed stream-ordered
                    with clock.phase("prologue: tail gathers"):
                        enqueue_gather_rows(msm.kernels, self.stream, d_points.ptr,
                                            self.key.host_points[s].device_ptr, dsplit.d_other_idx.ptr + 4 * t0,
                                            n, pb, first)
                    with clock.phase("prologue: tail MSMs"):
                        out = self.d_results.ptr + index * self.block + MSM_SLOTS.index(s) * self.slot
                        msm.enqueue(is_g2(s), d_points.ptr, dsplit.d_other_scalars.ptr + SCALAR_BYTES * t0, n, out)
            self.tails_done[index] = True
        finally:
            dsplit.free()  # stream-ordered

    def _download_lists(self, index: int, dsplit) -> "_SplitLists":
        shape = dsplit.shape
        sizes = (SCALAR_BYTES * shape.n_other, 4 * shape.n_one, 4 * shape.n_other, 8)
        pool = self._staging_pool(sum(sizes))
        buf = pool.take()
        views = []
        for nbytes in sizes:
            at = sum(v.nbytes for v in views)
            views.append(buf.array[at:at + nbytes])
        lists = self.split_lists[index] = _SplitLists(  # given back by close, whatever happens next
            buf, pool, Event(timing=False),
            HostSplit.of_lists(views[1].view(np.uint32), views[2].view(np.uint32),
                               views[0].view(np.uint64).reshape(shape.n_other, SCALAR_BYTES // 8)),
            views[3].view(np.uint32), (shape.n_one, shape.n_other))
        for view, d_src in zip(views, (dsplit.d_other_scalars, dsplit.d_one_idx, dsplit.d_other_idx, dsplit.d_counts)):
            if view.nbytes:
                check(driver.cuMemcpyDtoHAsync(view.ctypes.data, d_src.ptr, view.nbytes, self.stream.handle),
                      "cuMemcpyDtoHAsync")
        lists.ready.record(self.stream)
        return lists

    def _lists_ready(self, index: int) -> None:
        """Wait (this thread, once) until partition ``index``'s downloaded split lists are there, and
        check the device counted what prep_msm counted (else the MSMs would be wrong)."""
        lists = self.split_lists[index]
        if lists is None or lists.checked:
            return
        self._wait(lists.ready)
        got = (int(lists.counts[0]), int(lists.counts[1]))
        if got != lists.expected:
            raise RuntimeError(f"streamed pass, partition {index}: the device split counted (ones, others) = {got}, "
                               f"prep_msm counted {lists.expected}")
        lists.checked = True

    def _prologue_tails(self, index: int) -> bool:
        """Each streamed witness section's tail MSM of partition ``index`` in one piece, over its
        other points gathered on the host, written to the section's own result slot; False (the
        chunks then run them) when one does not fit the room the prologue's quotient buffers had."""
        zkey, msm = self.key.zkey, self.msm
        split = self.splits[index]
        room = self._prologue_room()
        tails = []
        for s in self._tail_sections():
            first, count = section_span(zkey, s)
            _, (t0, t1) = split.ranges(first, first + count)
            n = t1 - t0
            if n * (point_bytes(self.curve, s) + SCALAR_BYTES) + msm.scratch_bytes(n, is_g2(s)) > room:
                return False
            tails.append((s, first, count, n))
        need = sum(n * point_bytes(self.curve, s) for s, _, _, n in tails)
        stage, pool = self._tail_stage(need) if 0 < need <= TAIL_STAGE_MAX else (None, None)
        try:
            self._enqueue_tails(index, tails, stage)
        finally:
            if stage is not None:  # given back to its pool once these uploads are done
                self.tail_stages.append((stage, Event(timing=False).record(self.stream), pool))
        return True

    def _enqueue_tails(self, index: int, tails: list, stage: PinnedHostBuffer | None) -> None:
        b, split, msm = self.backend, self.splits[index], self.msm
        at = 0
        for s, first, count, n in tails:
            if n == 0:
                continue  # the slot stays infinity
            host = self.key.host_points[s].array
            staged = None
            if stage is not None:  # this section's rows of the staging buffer
                nbytes = n * point_bytes(self.curve, s)
                staged = stage.array[at:at + nbytes].view(host.dtype).reshape(n, *host.shape[1:])
                at += nbytes
            points, scalars = split.others_of(host, first, count, out=staged)
            d_points = b.allocator.alloc(points.nbytes, f"tail points {s}")
            d_scalars = b.allocator.alloc(scalars.nbytes, f"tail scalars {s}")
            try:
                with self.clock.phase("prologue: tail uploads"):
                    d_points.upload(points, self.stream)
                    d_scalars.upload(scalars, self.stream)
                out = self.d_results.ptr + index * self.block + MSM_SLOTS.index(s) * self.slot
                with self.clock.phase("prologue: tail MSMs"):
                    msm.enqueue(is_g2(s), d_points.ptr, d_scalars.ptr, n, out)
            finally:
                d_points.free()  # stream-ordered: after the MSM
                d_scalars.free()

    def _tail_stage(self, nbytes: int) -> tuple[PinnedHostBuffer, object]:
        """(page-locked staging of at least ``nbytes`` for one partition's gathered tails, the pool
        it goes back to), once fewer than TAIL_STAGES_IN_FLIGHT earlier ones wait for their uploads
        (the oldest is waited for: queued a prologue or more ago, stream order has usually finished it)."""
        self._release_tail_stages(wait=False)
        if len(self.tail_stages) >= TAIL_STAGES_IN_FLIGHT:
            self._release_tail_stages(wait=True, count=len(self.tail_stages) - TAIL_STAGES_IN_FLIGHT + 1)
        pool = self._staging_pool(nbytes)
        return pool.take(), pool

    def _staging_pool(self, nbytes: int):
        """Page-locked buffers of at least ``nbytes``, pooled in steps of TAIL_STAGE_STEP (few pools)."""
        return self.backend.pinned_pool(-(-nbytes // TAIL_STAGE_STEP) * TAIL_STAGE_STEP)

    def _wait(self, event: Event) -> None:
        """This thread waits for ``event``: time counted apart from queueing (``blocked_s``)."""
        t0 = time.perf_counter()
        event.synchronize()
        self.blocked_s += time.perf_counter() - t0

    def _release_tail_stages(self, wait: bool, count: int | None = None) -> None:
        """Give the stagings whose uploads are done back to their pools (``wait``: the oldest
        ``count`` of them, or all, waited for first)."""
        kept = []
        for k, (stage, uploaded, pool) in enumerate(self.tail_stages):
            if wait and (count is None or k < count):
                self._wait(uploaded)
            if uploaded.query():
                uploaded.close()
                pool.give_back(stage)
            else:
                kept.append((stage, uploaded, pool))
        self.tail_stages = kept

    def _chunk(self, chunk: Chunk, live: list[int]) -> None:
        b, curve, clock = self.backend, self.curve, self.clock
        b.device.activate()
        j = self._chunk_index[id(chunk)]
        if not self.buffers:
            self._allocate_chunk_buffers()
        which = j % 2
        buf = self.buffers[which]
        # copy stream: once the compute stream is done with this buffer, refill it slice by slice
        offsets, copies, at = [], [], 0
        for s in chunk.slices:
            pb = point_bytes(curve, s.section)
            copies.append((buf.ptr + at, self.key.host_points[s.section].ptr + s.point_lo * pb, s.count * pb))
            offsets.append(at)
            at += s.count * pb
        self._copy_points(copies, self.freed[which], self.copied[which])
        check(driver.cuStreamWaitEvent(self.stream.handle, self.copied[which].handle, 0), "cuStreamWaitEvent")
        for i in live:
            split = self.splits[i] if chunk.scalars == "witness" else None
            if split is not None:
                self._lists_ready(i)
            sb = self.scalar_bufs[self.scalar_turn % SCALAR_BUFFERS]
            self.scalar_turn += 1
            # scalar stream: once the kernels are done with this buffer, fill it with partition i's chunk
            check(driver.cuStreamWaitEvent(self.scalar_stream.handle, sb.freed.handle, 0), "cuStreamWaitEvent")
            if split is None:
                self._upload(sb.scalars.ptr, self._scalars_ptr(i, chunk.scalars) + chunk.lo * SCALAR_BYTES,
                             (chunk.hi - chunk.lo) * SCALAR_BYTES)
            else:
                (o0, o1), (t0, t1) = split.ranges(chunk.lo, chunk.hi)
                self._upload(sb.one_idx.ptr, split.ones[o0:o1].ctypes.data, 4 * (o1 - o0))
                if not self.tails_done[i]:
                    self._upload(sb.other_idx.ptr, split.others[t0:t1].ctypes.data, 4 * (t1 - t0))
                    self._upload(sb.scalars.ptr, split.other_scalars[t0:t1].ctypes.data, SCALAR_BYTES * (t1 - t0))
            sb.copied.record(self.scalar_stream)
            with clock.phase("chunk: waits for scalars"):
                check(driver.cuStreamWaitEvent(self.stream.handle, sb.copied.handle, 0), "cuStreamWaitEvent")
            ones: dict[bool, list[PointSum]] = {False: [], True: []}  # a split's ones sums, per group
            for k, (s, off) in enumerate(zip(chunk.slices, offsets)):
                if s.section == "b2" and not self.with_b_g2:
                    continue
                g2, n = is_g2(s.section), self.slice_slot[j, k]
                out = self.d_results.ptr + i * self.block + self.slice_offset(2 * n)
                if split is None:
                    with clock.phase(f"chunk: {s.section} MSMs"):
                        self.msm.enqueue(g2, buf.ptr + off, sb.scalars.ptr + s.scalar_offset * SCALAR_BYTES,
                                         s.count, out)
                    continue
                lo, hi = split.slice_signals(chunk, s)
                (so0, so1), (st0, st1) = split.ranges(lo, hi)
                # indices are signals: the point of signal x is at base + x * (point bytes), modulo 2^64
                base = (buf.ptr + off - lo * point_bytes(curve, s.section)) & ADDRESS_MASK
                ones[g2].append(PointSum(base, sb.one_idx.ptr + 4 * (so0 - o0), so1 - so0, out))
                if self.tails_done[i]:
                    continue  # its tail is in the section's slot already (prologue)
                with clock.phase(f"chunk: {s.section} tail MSMs"):
                    self.msm.enqueue(g2, base, sb.scalars.ptr + SCALAR_BYTES * (st0 - t0), st1 - st0,
                                     out + self.slot, d_point_index=sb.other_idx.ptr + 4 * (st0 - t0))
            for g2, sums in ones.items():
                if sums:
                    with clock.phase(f"chunk: {'G2' if g2 else 'G1'} ones sums"):
                        self.msm.enqueue_point_sums(g2, sums, self.pair_tables)
            sb.freed.record(self.stream)
        self.freed[which].record(self.stream)
        self._step_done()

    def _upload(self, d_dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            check(driver.cuMemcpyHtoDAsync(d_dst, src, nbytes, self.scalar_stream.handle), "cuMemcpyHtoDAsync")

    def slice_offset(self, n: int) -> int:
        """Byte offset, in a partition's result block, of the n-th chunk slice's partial sum."""
        return resident_slots_bytes(self.slot) + n * self.slot

    def _scalars_ptr(self, index: int, scalars: str) -> int:
        if scalars == "h":
            return self.h_host[index].ptr
        return int(self.items[index][0].ctypes.data)

    def _allocate_chunk_buffers(self) -> None:
        alloc = self.backend.allocator
        size = max(chunk_point_bytes(self.curve, c) for c in self.chunks)
        self.buffers = [alloc.alloc(size, f"streamed points (buffer {b})") for b in (0, 1)]
        widest = max((c.hi - c.lo) for c in self.chunks)
        for k in range(SCALAR_BUFFERS):
            self.scalar_bufs.append(_ScalarBuffer(alloc.alloc(widest * SCALAR_BYTES, f"streamed chunk scalars {k}"),
                                                  alloc.alloc(4 * widest, f"streamed chunk one indices {k}"),
                                                  alloc.alloc(4 * widest, f"streamed chunk other indices {k}")))
        # a table a group of ones sums, a group per section kind, partition and chunk (more: memsets)
        self.pair_tables = PairTables(self.backend.device, 2 * len(self.chunks) * self.n_items * PAIR_TABLE_BYTES)
        # the buffers exist in the compute stream's order: the copy and scalar streams start after
        for ev in (*self.freed, *(sb.freed for sb in self.scalar_bufs)):
            ev.record(self.stream)

    def _step_done(self) -> None:
        self.step_events.append(Event().record(self.stream))

    def pass_timings(self) -> dict[str, float]:
        """The pass as a whole (every partition of the batch shares it): device time, time the
        copy stream spent copying points, and the rate of those copies."""
        pass_ms = self.step_events[-1].elapsed_ms(self.started) if self.step_events else 0.0
        copy_ms = sum(end.elapsed_ms(start) for start, end in self.copy_marks)
        gbps = self.streamed_bytes / copy_ms / 1e6 if copy_ms else 0.0
        phases = {f"phase {name} ms": ms for name, ms in self.clock.totals_ms().items()}  # empty unless profiling
        return {"stream_pass_ms": pass_ms, "stream_copy_ms": copy_ms, "stream_bytes": float(self.streamed_bytes),
                "stream_h2d_gbps": gbps, "stream_host_ms": 1e3 * self.host_s,
                "stream_blocked_ms": 1e3 * self.blocked_s, "msm_ms": pass_ms, **phases}

    # -- awaiting and results ------------------------------------------------------------------
    def query(self) -> bool:
        self.backend.device.activate()
        return not self.step_events or self.step_events[-1].query()

    async def wait_for_room(self) -> None:
        if len(self.step_events) > self.depth:
            await event_ready(_OnDevice(self.backend.device, self.step_events[-self.depth - 1]))

    async def wait(self) -> None:
        await event_ready(self)

    def results(self):
        try:
            self.backend.device.activate()
            words = np.zeros(self.block * self.n_items // 4, dtype=np.uint32)
            self.d_results.download(words, self.stream)  # after every step (stream order)
            per_item = self.block // 4
            g1_words = self.slot // 8
            partials: list = []
            for i in range(self.n_items):
                if self.left[i]:
                    partials.append(None)
                    continue
                block = words[i * per_item:(i + 1) * per_item]

                def point(offset: int, section: str):
                    raw = block[offset // 4:(offset + self.slot) // 4]
                    if is_g2(section):
                        return xyzz_to_jacobian(self.curve.g2, self.curve.fq, raw.copy())
                    return xyzz_to_jacobian(self.curve.g1, self.curve.fq, raw[:g1_words].copy())

                # a section's own slot: a resident section's MSM, a streamed one's tail when it ran
                # in the prologue (stream_tails), H's MSM when its points came through the prologue
                placement = self.key.placement
                own = [s for s in SECTIONS if s in placement.resident or self.tails_done[i]
                       or (s == "h" and placement.h_in_prologues)]
                sums: dict[str, list] = {s: [point(MSM_SLOTS.index(s) * self.slot, s)] for s in own}
                for (j, k), n in self.slice_slot.items():
                    section = self.chunks[j].slices[k].section
                    for half in (2 * n, 2 * n + 1):  # ones (infinity when not split), then the rest
                        sums.setdefault(section, []).append(point(self.slice_offset(half), section))
                partials.append(sums)
            timings = self.pass_timings()
            return self.combine(partials, [dict(timings) for _ in range(self.n_items)])
        finally:
            self.close()

    def close(self) -> None:
        self.backend.device.activate()
        self.copy_stream.synchronize()  # no copy still reads the key or fills a buffer
        self.scalar_stream.synchronize()
        self.stream.synchronize()  # the device is done with every buffer (pinned H included)
        for buf in (*self.buffers, *(b for sb in self.scalar_bufs for b in sb.buffers()), self.d_results):
            if buf is not None:
                buf.free()
        for sb in self.scalar_bufs:
            sb.close_events()
        self.buffers, self.scalar_bufs, self.d_results = [], [], None
        if self.pair_tables is not None:
            self.pair_tables.close()  # the copies from it are done (synchronised above)
            self.pair_tables = None
        for lock in self.split_locks:
            lock.close()  # after the synchronisations above: no copy reads them any more
        for stage, uploaded, pool in self.tail_stages:  # their copies are done (synchronised above)
            uploaded.close()
            pool.give_back(stage)
        self.tail_stages = []
        for lists in self.split_lists:  # their copies are done (synchronised above)
            if lists is not None:
                lists.ready.close()
                lists.pool.give_back(lists.buffer)
        self.split_lists = [None] * self.n_items
        self.splits, self.split_locks = [None] * self.n_items, []
        for i, h in enumerate(self.h_host):
            if h is not None:
                self.h_pool.give_back(h)  # the device is done with it (synchronised above)
                self.h_host[i] = None
        for ev in (*self.step_events, *self.copied, *self.freed, *self.h_copied, *self.h_freed, self.started,
                   *(e for pair in self.copy_marks for e in pair)):
            ev.close()
        self.clock.close()
        self.step_events, self.copy_marks = [], []


class _SplitLists:
    """A device split's lists in one page-locked buffer of a pool: other scalars, one indices,
    other indices, the device's two counts; usable on the host once ``ready`` has happened."""

    def __init__(self, buffer, pool, ready: Event, split: HostSplit, counts: np.ndarray,
                 expected: tuple[int, int]) -> None:
        self.buffer, self.pool, self.ready, self.split = buffer, pool, ready, split
        self.counts, self.expected, self.checked = counts, expected, False


class _ScalarBuffer:
    """One partition's scalars and split indices of a chunk on the device, with the events that
    pass it between the scalar stream (fills it) and the compute stream (reads it)."""

    def __init__(self, scalars, one_idx, other_idx) -> None:
        self.scalars, self.one_idx, self.other_idx = scalars, one_idx, other_idx
        self.copied, self.freed = Event(timing=False), Event(timing=False)

    def buffers(self) -> tuple:
        return self.scalars, self.one_idx, self.other_idx

    def close_events(self) -> None:
        self.copied.close()
        self.freed.close()


class _OnDevice:
    """An event polled from the loop's thread, with the device's context made current first."""

    def __init__(self, device, event: Event) -> None:
        self.device, self.event = device, event

    def query(self) -> bool:
        self.device.activate()
        return self.event.query()
