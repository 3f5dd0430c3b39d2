"""Host side of the Fr transforms: twiddle tables, pass plans, and snarkjs's coset quotient.

Device arrays here are Fr elements in Montgomery form, natural order unless said. The pass
plan groups the log_n butterfly stages into launches of at most ``STAGES_PER_PASS`` stages
(bench/NOTES.md, NTT v1); blocks hold 2^``PASS_ELEMENTS_LOG`` elements in shared memory (launch.py).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...curves.field import ScalarField
from .graphs import GraphCache
from .kernels import CurveKernels, grid_for
from .launch import (BIT_REVERSE_BLOCK, ELEMENTWISE_BLOCK, NTT_BR_TILE_LOG, NTT_DEPENDENT_BUILT, NTT_DEPENDENT_PASSES,
                     NTT_FUSE_COSET, NTT_FUSE_QUOTIENT, NTT_FUSE_REVERSE, NTT_FUSE_SCALE, NTT_GRAPHS_KEPT,
                     NTT_NATURAL_GRAPH_MAX_LOG, NTT_NATURAL_IN_PLACE, NTT_NATURAL_KERNEL, NTT_NATURAL_KERNELS,
                     NTT_NATURAL_RADIX,
                     NTT_NATURAL_REV_ROWS_LOG, NTT_NATURAL_SHORT_PASS, NTT_PASS_KERNEL, NTT_PASS_KERNELS,
                     NTT_RADIX_BUILT, NTT_RADIX_LOG, NTT_RADIX_SHORT_PASS, NTT_REV_IN_PLACE_MIN_STAGES,
                     NTT_REV_IN_PLACE_STAGES, NTT_SHORT_LAST_MIN_STAGES, PASS_ELEMENTS_LOG, STAGES_PER_PASS)


SHORT_PASS_PLACES = ("top", "middle", "last")  # natural_plan's; pass_plan takes the first two


def pass_plan(log_n: int, dit: bool, stages: int = STAGES_PER_PASS, elements_log: int = PASS_ELEMENTS_LOG,
              short_pass: str = "top") -> list[tuple[int, int, int]]:
    """(lo, k, tl) per launch, in launch order: passes of ``stages`` stages (one shorter), each block
    2^elements_log elements where the bits allow; DIF runs top-down, DIT bottom-up. ``short_pass``, where the
    short one sits: "top" (the top bits, where there are many low bits to coalesce over), or "middle" (second
    from the top, where there are three passes or more: it still has low bits to coalesce over, and the top
    pass is a full one, whose work can hide the reads of the twiddle table's largest levels; the short top pass
    reads as many twiddle bytes as data and is bound by memory: session 38's ncu reading, bench/NOTES.md)."""
    if not 1 <= stages <= elements_log:
        raise ValueError(f"NTT pass of {stages} stages: 1 to {elements_log} (2^{elements_log} elements a block)")
    if short_pass not in SHORT_PASS_PLACES[:2]:
        raise ValueError(f"a radix plan's short pass sits at the top or in the middle, not {short_pass!r}")
    if log_n == 0:
        return []
    ks = [stages] * ((log_n - 1) // stages)
    short = log_n - sum(ks)  # 1..stages stages
    ks.insert(1 if short_pass == "middle" and len(ks) >= 2 else 0, short)
    plan = _top_down(log_n, ks, elements_log)
    return plan[::-1] if dit else plan


def _top_down(log_n: int, ks: list[int], elements_log: int) -> list[tuple[int, int, int]]:
    """(lo, k, tl) of passes of ``ks`` stages from the top bits down, each block 2^elements_log elements where the
    low bits allow."""
    plan, hi = [], log_n
    for k in ks:
        lo = hi - k
        plan.append((lo, k, min(lo, max(elements_log - k, 0))))
        hi = lo
    return plan


def natural_plan(log_n: int, stages: int = STAGES_PER_PASS, elements_log: int = PASS_ELEMENTS_LOG,
                 short_pass: str = "top",
                 rev_rows_log: int | None = NTT_NATURAL_REV_ROWS_LOG) -> list[tuple[int, int, int]]:
    """The DIF plan of ``pass_plan`` whose last pass (lo = 0) stores in natural order (ntt_pass's REV): its
    tl is the number of rows a block holds, 2^tl consecutive reversed indices to store in one run: as many as
    fill the block's 2^elements_log elements, or at most 2^``rev_rows_log`` (launch.NTT_NATURAL_REV_ROWS_LOG) where
    that pass has all ``stages`` (a short last pass keeps its blocks full: its rows are most of them).
    ``short_pass``: pass_plan's "top" or "middle", or "last", where the short pass has
    NTT_SHORT_LAST_MIN_STAGES stages or more (else "top"): a REV pass's rows keep its blocks full at any k,
    where a short radix pass at lo = 0 would have no low bits to coalesce over."""
    if short_pass not in SHORT_PASS_PLACES:
        raise ValueError(f"the natural plan's short pass sits at the top, in the middle or last, not {short_pass!r}")
    plan = pass_plan(log_n, False, stages, elements_log, "middle" if short_pass == "middle" else "top")
    if short_pass == "last" and len(plan) > 1 and NTT_SHORT_LAST_MIN_STAGES <= plan[0][1] < stages:
        plan = _top_down(log_n, [k for _, k, _ in plan[1:]] + [plan[0][1]], elements_log)
    if plan:
        _, k, _ = plan[-1]
        tl = min(elements_log - k, log_n - k)
        plan[-1] = (0, k, tl if rev_rows_log is None or k < stages else min(tl, rev_rows_log))
    return plan


def in_place_plan(log_n: int, stages: int = STAGES_PER_PASS, elements_log: int = PASS_ELEMENTS_LOG,
                  last_max: int = NTT_REV_IN_PLACE_STAGES,
                  last_min: int = NTT_REV_IN_PLACE_MIN_STAGES) -> tuple[list[tuple[int, int, int]], int] | None:
    """The natural-order plan whose last pass runs in place (ntt_pass_rev_in_place): (the DIF passes over bits
    [kr, log_n) in launch order, as ``pass_plan``'s (lo, k, tl), each block 2^elements_log elements where the bits
    allow; kr, the last pass's stages). pass_plan's short pass (its top one) moves to the bottom, so the launches
    are as many as ``natural_plan``'s; None where it has more than ``last_max`` stages (its block's two sets of
    2^2kr elements would not fit), fewer than ``last_min`` (blocks too small to fill an SM), or the transform is
    one pass (one block: in place already)."""
    if log_n <= stages:
        return None
    kr = log_n - stages * ((log_n - 1) // stages)  # pass_plan's top pass, 1..stages stages
    if not last_min <= kr <= last_max:
        return None
    upper = [(lo + kr, k, min(lo + kr, max(elements_log - k, 0)))
             for lo, k, _ in pass_plan(log_n - kr, False, stages, elements_log)]
    return upper, kr


def _check_pairs_size(log_n: int) -> None:
    """ntt_pass_pairs indexes in 32 bits: a transform past 2^31 elements is refused before any launch."""
    if log_n > 31:
        raise ValueError(f"the pairs pass indexes in 32 bits: 2^{log_n} elements is past 2^31")


def twiddle_count(log_n: int, compact: bool) -> int:
    """Entries of the twiddle table that serves transforms up to 2^log_n, both directions: the
    level table (every stage's powers contiguous) or the compact one (the top stage's only)."""
    return 1 << max(log_n - 1, 0) if compact else 1 << max(log_n, 1)


def twiddle_index(j: int, log_h: int, log_tw: int, inverse: bool, compact: bool) -> tuple[int, bool]:
    """(table index, negate) of w_{2h}^(+-j), h = 2^log_h, in the table of ``log_tw``: the host's
    statement of what ``ntt_pass`` reads (the layouts: cuda_src/ntt/ntt.cuh)."""
    negate = inverse and j != 0
    jj = (1 << log_h) - j if negate else j  # w^-j = -w^(h - j)
    return (jj << (log_tw - 1 - log_h) if compact else (1 << log_h) + jj), negate


def coset_twiddle_index(j: int, log_h: int, log_tw: int, compact: bool) -> int | None:
    """Table index of w_{4h}^(2j+1), the odd coset transform's twiddle at half-size h = 2^log_h (the next
    level's odd entries), or None for the top stage of a transform as large as the table (read as
    w_{2h}^j * w_{2n}): the host's statement of what ``ntt_pass_pairs`` reads with NTT_FUSE_COSET."""
    if log_h + 2 > log_tw:
        return None
    return (2 * j + 1) << (log_tw - 2 - log_h) if compact else (2 << log_h) + 2 * j + 1


COSET_CONSTS = 4  # n^-1, n^-1 w_4, w_2n (Montgomery) and n^-1 as a plain integer: ntt_pass_pairs's consts


def table_bytes(log_n: int, elem: int, compact: bool = False) -> int:
    """Device bytes the transforms of a 2^log_n domain keep resident: the twiddle table
    (``ensure_twiddles``), the odd coset's two tables and its constants (``_coset``)."""
    lo_bits = (log_n + 1) // 2
    return (twiddle_count(log_n, compact) + (1 << lo_bits) + (1 << (log_n - lo_bits)) + COSET_CONSTS) * elem


class CosetTables(NamedTuple):
    """The odd coset's device tables of one domain (``NttRunner._coset``)."""
    g_lo: object  # g^j, j < 2^lo_bits, times n^-1 (ntt_coset_scale)
    g_hi: object  # g^(j 2^lo_bits)
    lo_bits: int
    consts: object  # COSET_CONSTS elements (ntt_pass_pairs)


class NttRunner:
    """Transforms of one curve's Fr on one stream; twiddle tables grow on demand (resident)."""

    def __init__(self, kernels: CurveKernels, allocator, stream) -> None:
        self.kernels = kernels
        self.fr: ScalarField = kernels.curve.fr
        self.allocator = allocator
        self.stream = stream
        self.log_max = -1
        self.compact = False  # the table's layout (twiddle_count)
        self.d_tw = None  # the forward table; the inverse reads it too
        self._coset_tables: dict[int, CosetTables] = {}
        self.pass_kernel = NTT_PASS_KERNEL  # how a pass holds its elements (launch.py); benches compare
        self.radix_log = NTT_RADIX_LOG  # stages per register group of the "groups" pass (launch.py); benches compare
        self.stages_per_pass = STAGES_PER_PASS  # stages per launch (launch.py); benches compare
        self.tiled_bit_reverse = True  # False: the element-wise kernel at every size (benches compare)
        self.fused_reversal = True  # ntt(): the bit reversal in the last pass (False: a pass of its own)
        # ntt(): that last pass in place where in_place_plan has a plan (no scratch array); benches and tests set it
        self.natural_in_place = NTT_NATURAL_IN_PLACE
        # where the short pass sits (launch.py): ntt()'s natural_plan and radix_passes' pass_plan; benches compare
        self.natural_short_pass, self.radix_short_pass = NTT_NATURAL_SHORT_PASS, NTT_RADIX_SHORT_PASS
        self.natural_radix = NTT_NATURAL_RADIX  # ntt()'s register groups (launch.py); benches and tests vary it
        self.natural_rev_rows_log = NTT_NATURAL_REV_ROWS_LOG  # ntt()'s last pass's rows (launch.py); benches compare
        self.natural_kernel = NTT_NATURAL_KERNEL  # ntt()'s last pass's kernel (launch.py); benches and tests compare
        # a transform's passes after its first as dependent launches (launch.py's NTT_DEPENDENT_PASSES says why;
        # benches compare; only over kernels built with the wait, _dependent): the first waits for whatever came
        # before it the ordinary way
        self.dependent_passes = NTT_DEPENDENT_PASSES
        # ntt() up to 2^natural_graph_max_log replays a CUDA graph of its launches per buffer, size and direction
        # (launch.NTT_NATURAL_GRAPH_MAX_LOG says why; -1: never), its scratch array held per size meanwhile
        self.natural_graph_max_log = NTT_NATURAL_GRAPH_MAX_LOG
        self._graphs = GraphCache(NTT_GRAPHS_KEPT)
        self._graph_scratch: dict[int, object] = {}  # log2 n -> the scratch array the graphs of that size share
        self._fr_args: dict[int, bytes] = {}  # _fr_arg: the scales' limbs (0, 1, n^-1 per size)
        self._natural_plans: dict[tuple, tuple] = {}  # _natural_plan, per size and settings
        self._n_inverses: dict[int, int] = {}  # _n_inverse_mont, per log2 n

    @property
    def elem_bytes(self) -> int:
        return 8 * self.fr.limbs

    def to_mont_limbs(self, values) -> np.ndarray:
        fr = self.fr
        return fr.limbs_from_ints([fr.to_mont(v % fr.modulus) for v in values])

    def _launch(self, expr, n_threads, args, block=ELEMENTWISE_BLOCK, shared=0, grid=None):
        self.kernels.launch(expr, grid if grid is not None else grid_for(n_threads, block), block, args,
                            self.stream, shared)

    # -- twiddles --------------------------------------------------------------------------------
    def ensure_twiddles(self, log_n: int, compact: bool = False) -> None:
        """A twiddle table that serves every transform up to 2^log_n in both directions, in the
        layout asked for (compact: half the entries of the level table, for keys placed under a tight
        budget; H took the same time over either at 2^20-2^21 in session 38, where an early version
        measured ~9% slower transforms). A change of layout rebuilds it for the largest
        domain served so far; the last key loaded decides."""
        if log_n <= self.log_max and compact == self.compact:
            return
        log_n = max(log_n, self.log_max)
        fr, p = self.fr, self.fr.modulus
        count = twiddle_count(log_n, compact)
        top = twiddle_count(log_n, True)  # w_T^m, m < T/2: the compact table, or the level table's top level
        old = self.d_tw
        d_tw = self.allocator.alloc(count * self.elem_bytes, "ntt twiddles")
        w = fr.root_of_unity(log_n) if log_n >= 1 else 1
        pow2 = [pow(w, 1 << b, p) for b in range(max(log_n - 1, 1))]
        with self.allocator.upload(self.to_mont_limbs(pow2), "twiddle powers") as d_pow2:
            first = d_tw.ptr if compact else d_tw.ptr + (count - top) * self.elem_bytes
            self._launch("ntt_twiddles<fr_t>", top, (first, top, d_pow2.ptr))
            if not compact:
                self._launch("ntt_twiddle_lower<fr_t>", top, (d_tw.ptr, max(log_n, 1) - 1))
            self.stream.synchronize()
        self.d_tw = d_tw
        if old is not None:
            self._graphs.close()  # their launches read the old table
            old.free()
        self.log_max, self.compact = log_n, compact

    def ensure_tables(self, log_n: int, compact: bool = False) -> None:
        """Every table a key of a 2^log_n domain proves with (``table_bytes``), made at load time so
        that its first partition allocates none: the twiddles and the odd coset's g^j tables."""
        self.ensure_twiddles(log_n, compact)
        self._coset(log_n)

    # -- transforms ------------------------------------------------------------------------------
    def radix_passes(self, d_data: int, log_n: int, dit: bool, inverse: bool, coset: bool = False,
                     scale: bool = False, quotient: tuple[int, int] | None = None) -> None:
        """DIF (natural -> bit-reversed) or DIT (bit-reversed -> natural), unscaled. The forward DIT of the
        "pairs" kernel (``fusible``) evaluates on the odd coset (``coset``: coefficients in, bit-reversed,
        scaled by n: the unscaled inverse's output) and then can also scale by n^-1 (``scale``: the coset's
        evaluations themselves; else n times them) or store snarkjs's quotient (``quotient`` (d_a, d_b): the
        last pass stores (a b - y) / n, plain, into a, where y is this transform's output: ``quotient``)."""
        if self.pass_kernel not in NTT_PASS_KERNELS:
            raise ValueError(f"NttRunner.pass_kernel must be one of {NTT_PASS_KERNELS}, got {self.pass_kernel!r}")
        if self.radix_log not in NTT_RADIX_BUILT:
            raise ValueError(f"NttRunner.radix_log must be one of {NTT_RADIX_BUILT}, got {self.radix_log!r}")
        pairs = self.pass_kernel == "pairs"
        if pairs:
            _check_pairs_size(log_n)
        if (scale or quotient) and not coset or scale and quotient:
            raise ValueError("scale or quotient (one of them) rides on the coset transform")
        if coset and not (self.fusible(log_n) and dit and not inverse):
            raise ValueError("the coset transform is the forward DIT of the pairs kernel, 2^1 and up")
        self.ensure_twiddles(log_n)
        direction = 'true' if dit else 'false'
        n = 1 << log_n
        plan = pass_plan(log_n, dit, self.stages_per_pass, short_pass=self.radix_short_pass)
        consts = self._coset(log_n).consts.ptr if coset else 0
        dependent = self._dependent()
        for i, (lo, k, tl) in enumerate(plan):
            if pairs:
                elems = 1 << (k + tl)  # two trade buffers of elems / 2 (a thread a pair)
                fuse = (NTT_FUSE_COSET if coset else 0) | (NTT_FUSE_SCALE if scale and i == 0 else 0) | \
                    (NTT_FUSE_QUOTIENT if quotient and i == len(plan) - 1 else 0)
                expr = f"ntt_pass_pairs<fr_t, {direction}, {'true' if inverse else 'false'}, {fuse}>"
                args = (d_data, self.d_tw.ptr, lo, k, tl, self.log_max, int(not self.compact), consts,
                        *(quotient or (0, 0)))
                block = elems >> 1
                self.kernels.launch(expr, n // elems, block, args, self.stream, elems * self.elem_bytes,
                                    dependent=i > 0 and dependent)
            else:
                self._groups_pass(d_data, d_data, lo, k, tl, log_n, dit, inverse, self.radix_log,
                                  dependent=i > 0 and dependent)

    def _groups_pass(self, src: int, dst: int, lo: int, k: int, tl: int, log_n: int, dit: bool, inverse: bool,
                     radix_log: int, reversed_out: bool = False, scale_mont: int | None = None,
                     dependent: bool = False) -> None:
        """One launch of ntt_pass<fr_t, DIT, radix_log, REV> (ntt/ntt.cuh): src -> dst; ``reversed_out``: the
        DIF transform's last pass, storing in natural order (times ``scale_mont`` where given); ``dependent``:
        a dependent launch (a pass after the transform's first, where ``dependent_passes``)."""
        elems = 1 << (k + tl)
        scale = self._fr_arg(scale_mont or 0)
        expr = f"ntt_pass<fr_t, {'true' if dit else 'false'}, {radix_log}, {'true' if reversed_out else 'false'}>"
        args = (src, dst, self.d_tw.ptr, lo, k, tl, self.log_max, int(inverse), int(not self.compact), log_n, scale,
                int(scale_mont is not None))
        self.kernels.launch(expr, (1 << log_n) // elems, max(elems >> radix_log, 1), args, self.stream,
                            elems * self.elem_bytes, dependent=dependent)

    def _pairs_reversing_pass(self, src: int, dst: int, k: int, tl: int, log_n: int, inverse: bool,
                              dependent: bool) -> None:
        """The natural transform's last pass (lo = 0, 2^tl rows a block) on the pairs kernel (NTT_FUSE_REVERSE):
        src -> dst at bit-reversed indices; the inverse's n^-1 is the coset constants' first."""
        elems = 1 << (k + tl)
        fuse = NTT_FUSE_REVERSE | (NTT_FUSE_SCALE if inverse else 0)
        expr = f"ntt_pass_pairs<fr_t, false, {'true' if inverse else 'false'}, {fuse}>"
        consts = self._coset(log_n).consts.ptr if inverse else 0
        args = (dst, self.d_tw.ptr, 0, k, tl, self.log_max, int(not self.compact), consts, 0, src)
        self.kernels.launch(expr, (1 << log_n) // elems, max(elems >> 1, 1), args, self.stream,
                            elems * self.elem_bytes, dependent=dependent)

    def _dependent(self) -> bool:
        """``dependent_passes``, refused over kernels built without the wait (it would race the pass before)."""
        if self.dependent_passes and not NTT_DEPENDENT_BUILT:
            raise ValueError("NttRunner.dependent_passes needs the ntt kernels built with the wait "
                             "(launch.NTT_DEPENDENT_BUILT)")
        return self.dependent_passes

    def _fr_arg(self, value: int) -> bytes:
        """An Fr kernel argument's limbs as the packer takes them, kept per value: a transform of 2^20 takes ~0.3 ms
        on the device, and converting its scale for each of its launches took ~10 us of the host's time ahead of
        them."""
        limbs = self._fr_args.get(value)
        if limbs is None:
            limbs = self._fr_args[value] = self.fr.limbs_from_ints([value])[0].tobytes()
        return limbs

    def _natural_plan(self, log_n: int) -> tuple:
        """``natural_plan`` with this runner's settings, kept per size and settings: 2.4 us of the host's ~5 us ahead
        of a transform's first launch (session 45), which a lone 2^20 transform's latency counts."""
        key = (log_n, self.stages_per_pass, self.natural_short_pass, self.natural_rev_rows_log)
        plan = self._natural_plans.get(key)
        if plan is None:
            plan = self._natural_plans[key] = tuple(natural_plan(log_n, self.stages_per_pass, short_pass=key[2],
                                                                 rev_rows_log=key[3]))
        return plan

    def fusible(self, log_n: int) -> bool:
        """Whether the coset scaling and the quotient step ride in the transform's passes (the "pairs"
        kernel; a transform of 2^0 has no pass to carry them)."""
        return self.pass_kernel == "pairs" and log_n >= 1

    def bit_reverse(self, d_data: int, log_n: int, scale_mont: int) -> None:
        scale = self._fr_arg(scale_mont)
        if self.tiled_bit_reverse and log_n >= 2 * NTT_BR_TILE_LOG:
            self._launch("ntt_bit_reverse_tiles<fr_t>", 0, (d_data, log_n, scale), block=BIT_REVERSE_BLOCK,
                         grid=1 << (log_n - 2 * NTT_BR_TILE_LOG))
        else:
            self._launch("ntt_bit_reverse<fr_t>", 1 << log_n, (d_data, log_n, scale))

    def ntt(self, d_data: int, log_n: int, inverse: bool = False) -> None:
        """In place, natural order in and out; the inverse includes 1/n (ffjavascript's fft/ifft). Fused
        (``fused_reversal``, the default): DIF passes of the groups kernel (``natural_radix``), the last one
        storing each element at its bit-reversed index (on the pairs kernel where ``natural_kernel`` says so and
        the plan has two passes or more). That pass reads a scratch array of n elements
        (stream-ordered), which the pass before it fills; the passes before that run in place, so that with
        three passes or more the scratch array is allocated after the first launch (at 2^20 a transform takes
        ~0.3 ms, and the host's work ahead of its first launch counts in its latency). With ``natural_in_place``
        and a plan from ``in_place_plan``, every pass runs on the data and the last is ntt_pass_rev_in_place: no
        scratch array. Else the radix passes of ``pass_kernel`` and a bit-reversal pass. Up to
        2^``natural_graph_max_log`` the fused launches of a buffer are replayed from a CUDA graph from their second
        call on (``GraphCache``; not with the kernels' ``sync_after_launch``)."""
        fr = self.fr
        scale = self._n_inverse_mont(log_n) if inverse else None
        if not self.fused_reversal or log_n == 0:
            self.radix_passes(d_data, log_n, dit=False, inverse=inverse)
            self.bit_reverse(d_data, log_n, fr.to_mont(1) if scale is None else scale)
            return
        if self.natural_radix not in NTT_RADIX_BUILT:
            raise ValueError(f"NttRunner.natural_radix must be one of {NTT_RADIX_BUILT}, got {self.natural_radix!r}")
        if self.natural_kernel not in NTT_NATURAL_KERNELS:
            raise ValueError(f"NttRunner.natural_kernel must be one of {NTT_NATURAL_KERNELS}, "
                             f"got {self.natural_kernel!r}")
        if self.natural_kernel == "pairs":
            _check_pairs_size(log_n)  # before the first pass: the last one is the pairs kernel's
        self.ensure_twiddles(log_n)
        dependent = self._dependent()
        in_place = in_place_plan(log_n, self.stages_per_pass) if self.natural_in_place else None
        plan = None if in_place is not None else self._natural_plan(log_n)
        if log_n > self.natural_graph_max_log or self.kernels.sync_after_launch:
            self._natural_launches(d_data, log_n, inverse, scale, dependent, in_place, plan)
            return
        # a graph's launches keep their pointers: its scratch array is held, one per size
        scratch = self._held_scratch(log_n) if plan is not None and len(plan) > 1 else None
        key = (d_data, log_n, inverse, self.d_tw.ptr, self.log_max, self.compact, self.natural_radix,
               self.natural_kernel, dependent, in_place and (tuple(in_place[0]), in_place[1]), plan)
        self._graphs.run(key, self.stream,
                         lambda: self._natural_launches(d_data, log_n, inverse, scale, dependent, in_place, plan,
                                                        scratch))

    def _natural_launches(self, d_data: int, log_n: int, inverse: bool, scale_mont: int | None, dependent: bool,
                          in_place: tuple | None, plan: tuple | None, held_scratch=None) -> None:
        """ntt()'s launches: ``in_place``'s (in_place_plan) where given, else ``plan``'s (natural_plan) over
        ``held_scratch`` or a scratch array of their own (allocated after the first launch where there are three
        passes or more, freed in stream order after the last)."""
        if in_place is not None:
            self._natural_in_place(d_data, log_n, inverse, scale_mont, *in_place, dependent)
            return
        last = len(plan) - 1
        scratch = None
        try:
            for i, (lo, k, tl) in enumerate(plan):
                if i == last - 1 and held_scratch is None:  # the reversing pass reads what other blocks overwrite
                    # unless it reads another array, which this pass fills (a one-pass plan is one block: in place)
                    scratch = self.allocator.alloc((1 << log_n) * self.elem_bytes, "ntt natural order")
                buf = held_scratch if held_scratch is not None else scratch
                src = buf.ptr if i == last and last else d_data
                dst = buf.ptr if i == last - 1 else d_data
                if i == last and last and self.natural_kernel == "pairs":
                    self._pairs_reversing_pass(src, dst, k, tl, log_n, inverse, dependent)
                    continue
                self._groups_pass(src, dst, lo, k, tl, log_n, False, inverse, self.natural_radix,
                                  reversed_out=i == last, scale_mont=scale_mont if i == last else None,
                                  dependent=i > 0 and dependent)
        finally:
            if scratch is not None:
                scratch.free()  # stream-ordered: after the last pass

    def _held_scratch(self, log_n: int):
        """The scratch array of ntt()'s graphs of 2^log_n, allocated once (stream-ordered, as the graphs run)."""
        buf = self._graph_scratch.get(log_n)
        if buf is None:
            buf = self._graph_scratch[log_n] = self.allocator.alloc((1 << log_n) * self.elem_bytes,
                                                                    "ntt natural order (graphs)")
        return buf

    def _natural_in_place(self, d_data: int, log_n: int, inverse: bool, scale_mont: int | None,
                          upper: list[tuple[int, int, int]], kr: int, dependent: bool) -> None:
        """``in_place_plan``'s launches: the DIF passes over the upper bits in place, then ntt_pass_rev_in_place on
        the low kr bits (blocks of a middle value m and its reverse: 2^(2 kr + 1) elements, half of the blocks
        idle), storing in natural order, times ``scale_mont`` where given."""
        for i, (lo, k, tl) in enumerate(upper):
            self._groups_pass(d_data, d_data, lo, k, tl, log_n, False, inverse, self.natural_radix,
                              dependent=i > 0 and dependent)
        elems = 1 << (2 * kr + 1)
        scale = self._fr_arg(scale_mont or 0)
        args = (d_data, self.d_tw.ptr, kr, self.log_max, int(inverse), int(not self.compact), log_n, scale,
                int(scale_mont is not None))
        block = min(elems, 1 << PASS_ELEMENTS_LOG) >> self.natural_radix
        self.kernels.launch(f"ntt_pass_rev_in_place<fr_t, {self.natural_radix}>", 1 << (log_n - 2 * kr), max(block, 1),
                            args, self.stream, elems * self.elem_bytes)

    def _n_inverse_mont(self, log_n: int) -> int:
        """n^-1 in Montgomery form, kept per size (a modular inverse each call is host time at 2^20)."""
        value = self._n_inverses.get(log_n)
        if value is None:
            fr = self.fr
            value = self._n_inverses[log_n] = fr.to_mont(pow(1 << log_n, -1, fr.modulus))
        return value

    def _coset(self, log_n: int):
        """The odd coset's tables, g = w_{2n}: g^j low and high halves (n^-1 folded into the low one) for
        ``ntt_coset_scale``, and ``COSET_CONSTS`` for the pairs kernel's coset transform."""
        if log_n not in self._coset_tables:
            fr, p = self.fr, self.fr.modulus
            g = fr.root_of_unity(log_n + 1)
            lo_bits = (log_n + 1) // 2
            n_inv = pow(1 << log_n, -1, p)
            lo, acc = [], n_inv
            for _ in range(1 << lo_bits):
                lo.append(acc)
                acc = acc * g % p
            g_step, hi, acc = pow(g, 1 << lo_bits, p), [], 1
            for _ in range(1 << (log_n - lo_bits)):
                hi.append(acc)
                acc = acc * g_step % p
            w4 = fr.root_of_unity(2)
            consts = np.concatenate([self.to_mont_limbs([n_inv, n_inv * w4, g]), fr.limbs_from_ints([n_inv])])
            self._coset_tables[log_n] = CosetTables(self.allocator.upload(self.to_mont_limbs(lo), "coset g^j low"),
                                                    self.allocator.upload(self.to_mont_limbs(hi), "coset g^j high"),
                                                    lo_bits, self.allocator.upload(consts, "coset constants"))
        return self._coset_tables[log_n]

    def to_odd_coset(self, d_data: int, log_n: int) -> None:
        """Evaluations on the domain -> evaluations on g * domain, in place (ifft, then the coset's fft)."""
        self.radix_passes(d_data, log_n, dit=False, inverse=True)  # coefficients * n, bit-reversed
        if self.fusible(log_n):
            self.radix_passes(d_data, log_n, dit=True, inverse=False, coset=True, scale=True)
            return
        tables = self._coset(log_n)
        self._launch("ntt_coset_scale<fr_t>", 1 << log_n,
                     (d_data, log_n, tables.g_lo.ptr, tables.g_hi.ptr, tables.lo_bits))
        self.radix_passes(d_data, log_n, dit=True, inverse=False)  # natural order on the coset

    def quotient(self, d_a: int, d_b: int, d_c: int, log_n: int) -> None:
        """H = coset(a) * coset(b) - coset(c), plain form, into a's buffer; b and c (Montgomery) are
        overwritten. The pairs kernel scales a's coset alone (b's and c's come out n times theirs) and
        divides by n as it stores: (a * n b - n c) / n, no elementwise pass."""
        if not self.fusible(log_n):
            for d in (d_a, d_b, d_c):
                self.to_odd_coset(d, log_n)
            n = 1 << log_n
            self._launch("ntt_quotient<fr_t>", n, (d_a, d_b, d_c, n))
            return
        for d, fused in ((d_a, {"scale": True}), (d_b, {}), (d_c, {"quotient": (d_a, d_b)})):
            self.radix_passes(d, log_n, dit=False, inverse=True)
            self.radix_passes(d, log_n, dit=True, inverse=False, coset=True, **fused)

    def mul(self, d_out: int, d_a: int, d_b: int, n: int) -> None:
        """d_out = a o b, elementwise (Montgomery in and out)."""
        self._launch("ff_mul<fr_t>", n, (d_out, d_a, d_b, n))

    def to_mont(self, d_out: int, d_in: int, n: int) -> None:
        self._launch("ff_to_mont<fr_t>", n, (d_out, d_in, n))

    def from_mont(self, d_out: int, d_in: int, n: int) -> None:
        self._launch("ff_from_mont<fr_t>", n, (d_out, d_in, n))

    def close(self) -> None:
        self._graphs.close()
        for buf in self._graph_scratch.values():
            buf.free()
        self._graph_scratch.clear()
        if self.d_tw is not None:
            self.d_tw.free()
        for tables in self._coset_tables.values():
            for buf in (tables.g_lo, tables.g_hi, tables.consts):
                buf.free()
        self._coset_tables.clear()
        self.d_tw = None
        self.log_max = -1
