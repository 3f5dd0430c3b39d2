"""Launch geometry shared by the host code and the kernels: one table.

Every block size the runners launch with is here, with the evidence for its value. The ones a
kernel's code depends on (``IN_HEADER``), and the op codes of the test kernels, are written into
the generated header (``constants.curve_header``, so they are part of each unit's cache key):
``cuda_src/`` declares none of them itself. Python-only ones serve grid-stride kernels that
work with any block size. Importing this module needs nothing from cuda-python.
"""
from __future__ import annotations

# -- compiled into the kernels ------------------------------------------------------------------
# Exclusive scan of the MSM's digit counts (util/scan.cuh): a block of SCAN_THREADS threads scans
# SCAN_TILE counts and one block scans all tile sums, so n <= SCAN_TILE^2 (2^24) per scan. Not
# swept: the whole digit sort is 22 ms of a 186 ms G1 MSM at 2^24 (bench/NOTES.md, MSM v3,
# "Where the 2^24 BLS12-381 time goes now").
SCAN_THREADS = 1024
SCAN_PER_THREAD = 4
SCAN_TILE = SCAN_THREADS * SCAN_PER_THREAD
# Bucket accumulation (msm/pippenger.cuh, __launch_bounds__(MSM_ACC_THREADS, min_blocks)): the
# occupancy at this block size was measured, min_blocks 1/3/4/5 -> BLS12-381 2^24 197/186/185/191 ms
# (bench/NOTES.md, MSM v3; results/gpu_msm.md "G1 min_blocks=" rows); the block size itself is
# swept by bench/gpu_blocks.py only where it is a launch argument, so not here.
MSM_ACC_THREADS = 128
# Occupancy variants of msm_accumulate<fq_t, true, B> the msm_g1 unit instantiates (the same rows).
G1_MIN_BLOCKS_BUILT = (1, 3, 4, 5)
# G2's bucket kernels hold a point over two lanes (ff/fq2_pair.cuh, G2_FIELD); the occupancy variants of
# msm_accumulate<fq2_pair_t, true, B> built. ptxas (session 12, NVRTC 13.0, sm_90), registers and bytes
# spilled: BLS12-381 B = 1 232 / 0, 3 168 / 4, 4 128 / 616, 5 96 / 2412; BN254 1 174 / 0, 3 168 / 4,
# 4 128 / 4, 5 96 / 136. B = 1 (8 warps an SM) is left out: each variant costs the unit ~20 s of NVRTC.
# The default per curve (G2_MIN_BLOCKS) is the measured fastest (bench/kernels_vs_sppark.py G2 variant rows).
G2_MIN_BLOCKS_BUILT = (3, 4, 5)
G2_MIN_BLOCKS = {"bls12381": 3, "bn128": 4}
# The G2 MSM's field type: "fq2_pair_t" (two lanes a point) or "fq2_t" (one thread a point, 236
# registers and a 1.5 KB stack frame; kept built for the same-call comparison in bench/gpu_msm.py).
G2_FIELD = "fq2_pair_t"
G2_FIELDS_BUILT = ("fq2_pair_t", "fq2_t")
# (field, min_blocks) of every level-0 G2 bucket kernel built: the pair's occupancy variants, then the
# one-thread kernel (min_blocks 1). The tests run each; bench/kernels_vs_sppark.py times each.
G2_VARIANTS_BUILT = (*(("fq2_pair_t", b) for b in G2_MIN_BLOCKS_BUILT),
                     *((f, 1) for f in G2_FIELDS_BUILT if f != "fq2_pair_t"))

# Level 0 of the bucket sums (msm/pippenger.cuh): msm_accumulate_flat (every thread the same number of entries across
# bucket boundaries) is built for every variant above; the chunked msm_accumulate<F, true, B> (at most that many
# entries of one bucket a thread, the first scheme) for the curves' defaults, for the tests and the benches'
# comparison. Flat everywhere but for the (curve, group) pairs below (MsmRunner.level0_chunked). BLS12-381's G2 ran
# chunked from session 13 (flat 423.8 against chunked 408.8 ms at 2^24, its pair kernel spilling 76-112 bytes flat
# against 40) to session 54. Session 55 (H100, one call, results/gpu_msm_level0_s55.md, random scalars, ms):
# chunked at T = 64 / flat at T = 64 / flat at T = 128: 2^22 110.3 / 108.2 / 107.3, 2^24 380.2 / 381.0 / 373.4,
# 2^25 702.2 / 702.6 / 688.1, 2^26 1417.9 / 1325.1 / 1267.6. At 2^26 the partition's width (c = 20) leaves
# ~128 entries a bucket, and a warp of chunks waits for its longest: a bucket's last chunk holds lambda mod 64
# (session 36's G2 sweep divides out to 1.16-1.19 ns an addition at every width once that is counted). In the
# 2^26 stage (random witness): B2 1330 -> 1241 ms at flat T = 64 (results/gpu_stage_26_s55_h100_flat64.md) and
# -> 1182 at 128 (results/gpu_stage_26_s55_h100_level0.md), each against chunked in its own call.
# Session 13's same-call rows (results/gpu_msm_level0.md), flat against chunked: BN254 G1 2^20-2^26 7.55/8.51,
# 21.9/26.0, 74.9/79.4, 292/295; G2 2^20-2^24 18.5/19.2, 53.5/55.8, 189/197; BLS12-381 G1 16.7/18.6, 50.1/55.3,
# 154.4/151.9, 575/596.
G1_LEVEL0_CHUNKED_BUILT = (4, 5)
G2_LEVEL0_CHUNKED_BUILT = tuple(("fq2_pair_t", b) for b in sorted(set(G2_MIN_BLOCKS.values())))
LEVEL0_CHUNKED: frozenset[tuple[str, str]] = frozenset()

# The bucket sums (level 0 and the levels of partial sums) over the lazy form of Fq (ff/mont.cuh: values in
# [0, 2p), canonical when stored): the field type each plain one has beside it. Level 0 flat at the B below
# (G1: 3 too, for its registers: ptxas, BLS12-381 B = 4 spills 320 bytes lazy against 32 plain), chunked at
# the B the plain chunked kernels are built for. Where a runner's variant has no lazy build it runs plain
# (MsmRunner._sum_field). MsmRunner.lazy picks (bench/kernels_vs_sppark.py times both).
LAZY_FIELDS = {"fq_t": "fq_lazy_t", "fq2_pair_t": "fq2_pair_lazy_t"}
G1_LAZY_BUILT = (3, 4, 5)
G2_LAZY_BUILT = tuple(b for _, b in G2_LEVEL0_CHUNKED_BUILT)
# Lazy by default but for these (curve, group): same call (session 26, results/kernels_vs_sppark_s26_lazy.md),
# lazy against plain, random scalars, ms: BN254 G2 2^20-2^24 16.85/16.19, 54.0/51.6, 191.3/182.7 (its Fq has
# no room for the pair's dot4, so Y3 takes two products); BN254 G1 within 0.5% either way (kept lazy);
# BLS12-381 G2 37.9/38.6, 119.0/121.3, 384.3/391.9; BLS12-381 G1 at G1_MIN_BLOCKS below.
PLAIN_SUMS = {("bn128", "G2")}
# The G1 bucket kernels' register cap by curve (blocks of MSM_ACC_THREADS an SM). BLS12-381 3: lazy at 3
# against plain at 4 (the default before), same call, 2^20-2^26: 15.05/15.60, 41.67/43.44, 137.8/145.8,
# 474.2/496.2 ms (-3.5 to -5.5%); lazy at 4 spills 320 bytes (143.0 and 491.2 at 2^24 and 2^26), at 5 is
# slower still (151.9, 518.0). BN254 5 (96 registers; lazy at 3, 4 and 5 within 0.5%). MsmRunner's default.
G1_MIN_BLOCKS = {"bls12381": 3, "bn128": 5}

# Development setup's fixed-base multiplication (setup/fixed_base.cuh, __launch_bounds__(SETUP_MUL_THREADS, 2):
# registers capped at 128, the MSM's choice for its inlined mixed additions on BLS12-381, above).
# Not measured yet: bench/dev_setup.py times it per key section (bench/NOTES.md, development setup).
SETUP_MUL_THREADS = 256

# NTT bit reversal by tiles (ntt/ntt.cuh, ntt_bit_reverse_tiles): two tiles of 2^S x 2^S elements per
# block in static shared memory (S = 4: 2 x 16 x 17 x 32 bytes = 17 KiB; rows of 16 elements, 512 bytes,
# are whole 32-byte sectors). Transforms below 2^(2S) use the element-wise kernel.
NTT_BR_TILE_LOG = 4

IN_HEADER = {"SCAN_THREADS": SCAN_THREADS, "SCAN_PER_THREAD": SCAN_PER_THREAD, "SCAN_TILE": SCAN_TILE,
             "MSM_ACC_THREADS": MSM_ACC_THREADS, "SETUP_MUL_THREADS": SETUP_MUL_THREADS,
             "NTT_BR_TILE_LOG": NTT_BR_TILE_LOG}

# -- launch arguments only (grid-stride kernels) --------------------------------------------------
# Their sweep is `python3 -m bench.gpu_blocks` (bench/results/gpu_blocks_2e22.md), not yet run on
# the H200: until then these are unswept defaults, and what is measured is the kernels' share:
SPMV_BLOCK = 128  # spmv_ab: spmv_abc (which also wrote c) 3.9 / 4.2 ms at 2^24 BN254 / BLS12-381 (gpu_stage_24.md)
# spmv_long.py (CudaOptions.spmv_long_rows): rows of more than SPMV_LONG_ROW terms get a warp each
# (spmv_long_rows, SPMV_LONG_BLOCK threads a block); neither width swept. Session 16 (seed-shaped 2^26
# BLS12-381 key, 5% of A's rows 254 terms): spmv 66 -> 31 ms a partition against a thread a row.
SPMV_LONG_ROW = 16  # a SHA-256 packing row (32 terms) is long; a 12-term product row of the synth circuit is not
SPMV_LONG_BLOCK = 256
DIGIT_BLOCK = 256  # msm_count_digits, msm_scatter_digits: inside the 22 ms digit sort above
# An MSM's scalars from host memory (MsmRunner.sort's h_scalars) are copied in up to SCALAR_PIECES pieces of at
# least SCALAR_PIECE_MIN scalars, on a stream of their own, and each piece's digits are counted as soon as it has
# arrived, while the next is still in flight: the count then hides under the copy (~10 ms for 2^24 scalars over
# PCIe against a 4.6 ms count, BLS12-381 G2 c = 16, results/gpu_msm_g2_windows_s35_2e24.md) but for the last
# piece's. A piece's count is a launch of 2^20 scalars or more, enough to fill the GPU. Session 41 (H100, one process,
# against the whole copy; results/kernels_vs_sppark_s41_pieces_h100.md): G1 2^22-2^26 -2.6 to -5.6%, G2 2^24 -1.1%
# (BLS12-381) and -2.1% (BN254), 2^20 (one piece) unchanged.
SCALAR_PIECES = 16
SCALAR_PIECE_MIN = 1 << 20
# Bucket sets a section's fixed-base table may have (fixed_base.py), tried in this order while the room lasts, and
# each alone for every section where that saves more (fixed_base.choose_fixed_bases): one set (every window's
# entries in it) is the fastest, two halve the table (a 2^26 BLS12-381 key's H table, 13 windows of 6.4 GB, does
# not fit beside it; 7 do). CudaOptions.msm_fixed_base_sets may name others, up to
# MAX_TABLE_SETS (more sets: a smaller table, more bucket sums and a longer reduction).
TABLE_SETS = (1, 2)
MAX_TABLE_SETS = 4
# msm_place_digits (the binned sort's second pass): digits a block's tile (MSM_PLACE_TILE in
# pippenger.cuh: the two must agree) and its threads; not swept.
PLACE_TILE = 4096
PLACE_BLOCK = 256
CHUNK_COUNT_BLOCK = 256  # msm_chunk_counts: inside "partial combine 8-22 ms" (NOTES, MSM v3)
# The counting sort of buckets by their level-0 piece counts (msm_piece_class_counts, msm_piece_class_order): blocks of
# PIECE_CLASS_BLOCK threads, at most PIECE_CLASS_GRID blocks, so that the class counters take one global atomic a
# class per block (counts) or per block and tile (order): ~27K tiles at 2^26, c = 20. Not swept.
PIECE_CLASS_BLOCK = 256
PIECE_CLASS_GRID = 1024
REDUCE_BLOCK = 128  # msm_bucket_segments, msm_reduce_halves: running sums 13 ms at 2^24 (NOTES, MSM v3)
ELEMENTWISE_BLOCK = 256  # NTT helpers (bit reversal, coset scale, quotient, conversions): 1.5 of the
# 8.3 ms of an NTT at 2^24 are the bit-reversal pass (bench/NOTES.md, NTT v1).
# NTT radix passes: up to STAGES_PER_PASS butterfly stages per launch on 2^PASS_ELEMENTS_LOG
# elements in shared memory (32 KiB a block, 512 threads): bench/NOTES.md, NTT v1 (2^24 8.3 ms).
# Up to PASS_ELEMENTS_LOG stages fit a block (then each element is its own 32-byte sector: no
# coalescing over low bits); STAGES_PER_PASS_COMPARED are the plans bench/kernels_vs_sppark.py times
# beside the default (2^26: 8 -> 2+8+8+8, four passes over the array; 10 -> 6+10+10, three).
STAGES_PER_PASS = 8
STAGES_PER_PASS_COMPARED = (9, 10)
PASS_ELEMENTS_LOG = 10
# ntt_pass's launch bounds: blocks of up to 2^PASS_ELEMENTS_LOG >> R threads, NTT_PASS_MIN_BLOCKS of them an SM, so
# that ptxas keeps a pass within 65536 / (3 x 256) registers at R = 2 (session 28: its REV form's build took BN254's
# plain R = 2 pass from under 80 to 82 registers, 2 blocks an SM instead of 3, and its passes 11% slower)
NTT_PASS_MIN_BLOCKS = 3
IN_HEADER.update(PASS_ELEMENTS_LOG=PASS_ELEMENTS_LOG, NTT_PASS_MIN_BLOCKS=NTT_PASS_MIN_BLOCKS)
# Stages per group held in registers inside a pass (ntt_pass<F, DIT, R>): R = 1 is the first
# version (one stage per barrier, 2 elements a thread); 3 loads 8 elements a thread and runs 3
# stages per shared-memory round trip. The variants built, for the same-call comparison
# (bench/kernels_vs_sppark.py); the default is NTT_RADIX_LOG. Measured (session 11,
# results/kernels_vs_sppark_ntt_v2.md): R = 1 fastest, R = 2 +1-2%, R = 3 +4% at 2^24-2^27 on both
# curves; a block of 2^10 elements then has 128 threads, and 32 KiB of shared memory a block caps
# an SM at 7 blocks (896 threads, where R = 1 runs 2048): latency hiding lost beats barriers saved. Session 28
# (results/kernels_vs_sppark_s28_m0.md, BLS12-381's Fr reduction mended): R = 2 fastest on both curves, 0.92-0.97 of
# the pairs kernel's passes; the natural-order transform runs it (NTT_NATURAL_RADIX), this default stays the variant's.
NTT_RADIX_BUILT = (1, 2, 3)
NTT_RADIX_LOG = 1
# How a pass's threads hold its elements between stages (ntt/ntt.cuh): "pairs" (ntt_pass_pairs, NTT v3):
# a butterfly's pair in registers for the whole pass, one element traded a stage by warp shuffle or
# shared memory; "groups" (ntt_pass<F, DIT, NTT_RADIX_LOG>): every element back to shared memory every
# stage (or group). Both built for the same-call comparison; the default is NTT_PASS_KERNEL. Session 24, call 2
# (results/kernels_vs_sppark_s24_ntt_pairs_v2.md), pairs / groups: H (what a proof runs) BLS12-381 0.96-0.99 at
# 2^20-2^27 (2^26 154.8 -> 151.1 ms), BN254 0.98-1.01; radix passes 0.97-1.02 / 0.94-1.08.
NTT_PASS_KERNELS = ("pairs", "groups")
NTT_PASS_KERNEL = "pairs"
# The forward DIT pairs pass's fusions, its FUSE flags (ntt/ntt.cuh says what each does; in IN_HEADER): every pass of
# a transform onto the odd coset (its twiddles), the n^-1 scaling in its first, snarkjs's quotient in its last
NTT_FUSE_COSET, NTT_FUSE_SCALE, NTT_FUSE_QUOTIENT = 1, 2, 4
# The fused variants built (a forward DIT transform's first, middle and last passes; one pass does all it needs)
NTT_FUSED = (NTT_FUSE_COSET, NTT_FUSE_COSET | NTT_FUSE_SCALE, NTT_FUSE_COSET | NTT_FUSE_QUOTIENT)
# The DIF pairs pass's one fusion: the natural-order transform's last pass, storing at bit-reversed indices (with
# NTT_FUSE_SCALE: times n^-1, the inverse's); built as (inverse, FUSE) pairs: the forward's and the scaled inverse's
NTT_FUSE_REVERSE = 8
NTT_REVERSED = ((False, NTT_FUSE_REVERSE), (True, NTT_FUSE_REVERSE | NTT_FUSE_SCALE))
IN_HEADER.update(NTT_FUSE_COSET=NTT_FUSE_COSET, NTT_FUSE_SCALE=NTT_FUSE_SCALE, NTT_FUSE_QUOTIENT=NTT_FUSE_QUOTIENT,
                 NTT_FUSE_REVERSE=NTT_FUSE_REVERSE)
# Every pass built, as (NttRunner.pass_kernel, NttRunner.radix_log): the register-group sizes are the
# "groups" kernel's alone
NTT_PASS_VARIANTS = tuple((k, r) for k in NTT_PASS_KERNELS for r in (NTT_RADIX_BUILT if k == "groups" else (1,)))
# The natural-order transform (NttRunner.ntt): DIF "groups" passes of NTT_NATURAL_RADIX stages a register group, the
# last one storing each element at its bit-reversed index (ntt_pass's REV), through a scratch array of the
# transform's size. Session 28 (results/kernels_vs_sppark_s28_m0.md, BLS12-381's Fr reduction mended): radix passes
# alone, groups of 2 / pairs 0.92-0.97 at 2^20-2^27 on both curves; the pairs kernel stays H's (its fusions).
NTT_NATURAL_RADIX = 2
# The kernel of the natural transform's last pass (NttRunner.natural_kernel): "groups" (ntt_pass's REV, the passes
# before it's kernel) or "pairs" (ntt_pass_pairs with NTT_FUSE_REVERSE: a thread's pair in registers for the whole
# pass, as H's passes). Why "pairs" might win there: session 38's ncu reading (results/ntt_ncu_s38_h100.md) timed
# the pairs kernel's last radix pass at 2^20 at 89 us against the groups REV pass's 99 (45% of warps active against
# 33%), where the groups kernel's middle pass beat the pairs one's (100 against 108 us). "groups": session 45's
# alternating rounds on an H100 (bench.ntt_switch_ab, results/ntt_natural_kernel_ab_s45_h100.md; GPU-tested word for
# word against "groups") timed pairs / groups 0.998-1.004 at 2^20-2^21 and 1.010-1.013 at 2^22-2^24, both curves.
NTT_NATURAL_KERNELS = ("groups", "pairs")
NTT_NATURAL_KERNEL = "groups"
# ntt() as a CUDA graph (NttRunner.natural_graph_max_log, graphs.GraphCache): up to 2^NTT_NATURAL_GRAPH_MAX_LOG, the
# second call of a buffer, size and direction captures its launches, and the calls after it replay them in one
# driver call (-1: never). Why: a lone transform's CUDA events count the host's time ahead of and between its
# launches (Python packs each launch's arguments), and at 2^20 issue 16's cell against sppark moved 0.97-1.10 from
# one process to the next (session 45), while two transforms between one pair of events ran 0.94-1.00. A size's
# graphs share one scratch array, held until the runner closes (2^22 BLS12-381 Fr: 128 MB). 22: session 46's
# bench.ntt_latency on an H100, three processes (results/ntt_latency_s46_h100_p*.md, alternating rounds): the host's
# queueing of a lone transform 30-68 us plainly, 4-20 us from a graph; from a graph / plainly 0.947-0.966 at 2^20,
# 0.978-0.981 at 2^21, 0.983-0.990 at 2^22, both curves, every process; the graph's lone transform took the time the
# device's work alone takes (a transform queued ahead of the start event). The GPU test compares it word for word.
NTT_NATURAL_GRAPH_MAX_LOG = 22
NTT_GRAPHS_KEPT = 16
# Its last pass in place (ntt_pass_rev_in_place; NttRunner.natural_in_place, ntt.in_place_plan): no scratch array
# doubles the working set (2^20 Fr fit an H200's 50 MB L2; with a scratch array they do not). The plan's short pass
# moves to the bottom where it has 3 to 5 stages: a block holds two sets of 2^2k elements, 64 KiB at k = 5 for 32-byte
# Fr (past the default 48 KiB: CurveKernels.launch raises the kernel's limit), and below k = 3 blocks have under 32
# threads (2^25 would launch 2^23 blocks of 2). Off: session 37's same call (results/kernels_vs_sppark_s37_in_place.md,
# GPU-tested word for word against the scratch path) timed it slower or equal, in place / scratch ms, BLS12-381 2^19-2^21
# 0.149/0.145, 0.265/0.265, 0.533/0.521, BN254 0.144/0.144, 0.279/0.265, 0.529/0.514: the scratch array's L2 overflow
# was not the cost (its blocks of a value and its reverse leave half the grid idle). Kept for the comparison and the
# 4 GB a 2^27 transform saves.
NTT_REV_IN_PLACE_STAGES = 5
NTT_REV_IN_PLACE_MIN_STAGES = 3
NTT_NATURAL_IN_PLACE = False
# Where a transform's short pass sits (ntt.pass_plan and natural_plan's short_pass; NttRunner.natural_short_pass for
# ntt(), radix_short_pass for the radix passes, H's): "top" so far. At 2^20 (4 + 8 + 8) the short top pass reads its
# levels of the twiddle table, as many bytes as the data, in half the 8-stage passes' work and 58% of their time
# (session 38's ncu reading). "middle" (8 + 4 + 8) and, for the natural transform, "last" (8 + 8 + 4, the REV pass;
# where it has NTT_SHORT_LAST_MIN_STAGES or more) leave it no large level and give those reads to a full pass. The
# plans' kernels are the default's (any lo, k, tl). "top": session 40's H200 call (GPU-tested word for word; same call
# as sppark, results/kernels_vs_sppark_s40_switches*.md) timed BLS12-381's natural transform top / middle / last ms at
# 2^19 0.147/0.142/0.155, 2^20 0.264/0.275/0.280, 2^21 0.515/0.511/0.523, 2^27 37.77/37.72/39.14; H at 2^26 126.42 /
# 126.07 (middle): within +-1% past 2^20 and worse at 2^20, not the -5 to -15 us predicted.
NTT_NATURAL_SHORT_PASS = "top"
NTT_RADIX_SHORT_PASS = "top"
NTT_SHORT_LAST_MIN_STAGES = 3
# The REV pass's rows (natural_plan): a block of the last pass of ntt() holds at most 2^NTT_NATURAL_REV_ROWS_LOG rows
# whose reversed indices are consecutive, so it stores runs of that many elements (None: as many rows as fill the
# block's 2^PASS_ELEMENTS_LOG elements, tl = 2 at k = 8: 1024 blocks of 256 threads at 2^20, where the radix passes'
# last pass has 4096 blocks of 64). 1: session 44's alternating rounds in one process (bench.ntt_switch_ab, an H100,
# results/ntt_rev_rows_ab_s44_h100*.md; GPU-tested word for word against None) timed 2 rows / as many as fill
# 0.983-0.990 at 2^19-2^27, both curves, every round under 1 from 2^20 up; 1 row 0.99-1.007. Before it the natural
# transform ran 10-14 us behind the radix passes alone at 2^20-2^21 on both cards.
NTT_NATURAL_REV_ROWS_LOG = 1
# A transform's passes after its first as programmatic dependent launches (CurveKernels.launch's `dependent`): the
# next pass's blocks take the SMs that the last wave of the one before leaves idle, and its launch no longer waits
# for that pass to drain (session 38's ncu reading, results/ntt_ncu_s38_h100.md: 3 passes at 2^20, 2-4 waves each).
# NTT_DEPENDENT_BUILT compiles the wait into ntt_pass and ntt_pass_pairs (ntt.cuh's ntt_after_prior_grid; an
# ordinary launch passes through it); a dependent launch of a pass built without it would race the pass before, so
# NttRunner refuses that. Both off. Until session 40 ntt.cuh tested BUILT with a preprocessor #if, which reads the
# header's constexpr as 0, so no build ever held the wait: session 40's H200 rows "passes after the first dependent"
# (results/kernels_vs_sppark_s40_switches*.md) timed the launch attribute alone, +-3% with no direction (natural
# 2^20 0.271 against 0.264 ms). With the wait in (`if constexpr`, tests/backends/cuda/test_launch.py), session 41's
# H100 call (results/kernels_vs_sppark_s41_dependent_h100.md; word for word against ordinary launches in
# tests/gpu/test_ntt.py): H -5% at 2^19, -2% at 2^20, -0.3% at 2^22 (both curves); one natural transform within its
# spread either way (BLS12-381 2^20 0.275 -> 0.293 ms, BN254 0.290 -> 0.281). Off: the prover's H runs at 2^22 and up.
NTT_DEPENDENT_BUILT = False
NTT_DEPENDENT_PASSES = False
IN_HEADER.update(NTT_DEPENDENT_BUILT=int(NTT_DEPENDENT_BUILT))
BIT_REVERSE_BLOCK = 256  # ntt_bit_reverse_tiles: 256 elements a tile
SPLIT_BLOCK = 256  # msm_classify, msm_compact, gather_rows (split.py): not yet swept on the H200
BATCH_INVERSE_THREADS = 1 << 17  # threads of a batch inversion: enough to fill an H200, >= 8 elements each at 2^20
SETUP_BLOCK = 256  # every other setup kernel (a multiple of 32: the counting sort aggregates whole warps);
# unswept, their phases timed by bench/dev_setup.py

# -- op codes of the test kernels (testing/arith_kernels.cuh) --------------------------------------
FIELD_OPS = ("add", "sub", "mul", "sqr", "neg", "inv", "to_mont", "from_mont", "dbl", "dot")
POINT_OPS = ("add", "add_affine", "dbl", "neg", "mul_u32")


def field_op(name: str) -> int:
    return FIELD_OPS.index(name)


def point_op(name: str) -> int:
    return POINT_OPS.index(name)


def _enum(name: str, prefix: str, members: tuple[str, ...]) -> str:
    body = ", ".join(f"{prefix}{m.upper()} = {i}" for i, m in enumerate(members))
    return f"enum {name} : int {{ {body} }};"


def launch_header() -> str:
    """The launch constants and op codes as C++ (part of the generated header)."""
    return "\n".join([
        "// launch geometry and test op codes: pipeline/backends/cuda/launch.py",
        *(f"static constexpr int {name} = {value};" for name, value in IN_HEADER.items()),
        _enum("FieldOp", "OP_", FIELD_OPS),
        _enum("PointOp", "PT_", POINT_OPS),
    ])
