"""``CudaOptions``: the CUDA backend's settings, given to its constructor.

The engine holds them as ``EngineConfig.cuda`` (``EngineConfig.from_dict`` reads the
``[engine.cuda]`` table of ``zkpipe.toml`` (environment: ``ZKPIPE_ENGINE_CUDA_<FIELD>``, see ``pipeline/config.py``). The
backend reads no environment variable: what it does is what its options say. Importing this
module needs nothing from cuda-python, so a CPU-only install can still read the config.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..placement import SECTIONS
from .launch import G1_MIN_BLOCKS_BUILT, MAX_TABLE_SETS, TABLE_SETS


@dataclass(frozen=True)
class CudaOptions:
    # Scratch buffers from the device's stream-ordered pool (cuMemAllocAsync), freed in stream
    # order. False: cuMemAlloc and a context-wide sync before each free, kept for comparisons
    # (bench/gpu_memory_modes.py: the pool saves fixed cost per proof at small sizes).
    stream_ordered_memory: bool = True
    # Synchronise the stream after every launch, so that a fault names its kernel (debugging;
    # it serialises the host with the device).
    sync_after_launch: bool = False
    # Blocks per SM the G1 bucket kernel's registers must allow, one of G1_MIN_BLOCKS_BUILT.
    # None: per curve, the fastest measured (BLS12-381 4, BN254 5; bench/NOTES.md, MSM v3).
    msm_g1_min_blocks: int | None = None
    # Where compiled kernels are cached on disk; None: ~/.cache/zkpipe/kernels.
    kernel_cache_dir: str | None = None
    # Split A, B1, B2 and C into a batch sum of the ones and a tail MSM when at least this share of
    # the witness is 0 or 1 (split.py); above 1: never. Swept in one call (H100, 2^26 BLS12-381 GPU stage,
    # bench/results/gpu_stage_26_s57_h100_bit_shares.md), plain against split: 80% 1196 / 1229 ms, 85% 1085 /
    # 1109, 90% 978 / 977, 95% 873 / 844; at 2^24 the two are within 1-3 ms at 80% and 95% (session 56).
    msm_split_min_bits: float = 0.9
    # The same for a key that streams (streamed.py): there the split also decides where the tails run
    # (stream_tails) and spares each chunk a Pippenger MSM. 0.5 was chosen, not swept.
    stream_split_min_bits: float = 0.5
    # A key larger than the VRAM budget streams its points through two device buffers of about
    # this many bytes each (streamed.py): larger chunks mean fewer launches per pass, more VRAM.
    stream_chunk_bytes: int = 1 << 30
    # The chunks then grow while the pass still fits the budget, up to this many bytes (0: no
    # limit): fewer chunks cost each partition fewer MSM fixed costs, larger ones fill and drain
    # the pass's pipeline in coarser steps (bench.streamed_keys --chunk-max-gib compares).
    stream_chunk_max_bytes: int = 0
    # Where a streamed pass runs a bit-heavy witness's tail MSMs (its values other than 0 and 1):
    # "prologue", one per section per partition over points gathered on the host, in the room the
    # quotient's buffers leave; "chunks", one per section per chunk. Same call, H200: 2^24 under
    # 5 GiB 771 vs 1015 ms/partition (batch 4); 2^26 under 16 GiB 3.79 vs 3.64 s (bench/NOTES.md).
    stream_tails: str = "prologue"
    # Where a streamed pass takes a streamed H section's points: "prologue", once per partition, in
    # pieces through one MSM's bucket sums (msm.MsmRunner.start_buckets: the additions of one MSM of
    # the domain's size, no H round trip to the host); "chunks", once per pass in its chunks, an MSM of
    # each chunk's own windows per partition (H's points cross PCIe once per batch, not per partition:
    # the choice where the link, not the device, is what a pass waits for). bench/NOTES.md, session 20.
    stream_h: str = "prologue"
    # Hold the A/B coefficients as uint16 indices into a table of the key's distinct values
    # (formats/coeff_table.py) when it has at most 2^16: 2 bytes a coefficient on the device and
    # across PCIe instead of 32 (a 2^26 seed-shaped key: 11 GB of CSR values -> ~1.8 GB of indices).
    # The key cache prepares the table with the key. Same call, 2^26 seed-shaped BLS12-381 key, 20
    # partitions through the engine (bench/results/streamed_keys_bls12381_2e26_s20_resident_table.md):
    # resident 1.14 -> 1.13 s/partition, VRAM peak 74.9 -> 65.4 GB, key load 7.7 -> 6.7 s; under 16 GiB
    # the CSR then stays resident, where its 1 GiB chunks crossed PCIe in every partition's H (2^26
    # streamed pass alone, batch 10: 1486 -> 1239 ms/partition, session 20). Keys with more than 2^16
    # distinct coefficients keep their values.
    csr_value_table: bool = True
    # Rows of A or B with more than launch.SPMV_LONG_ROW terms computed a warp a row (spmv_long.py), listed
    # at key load (4 bytes a listed row on the device). Session 16, same call, seed-shaped 2^26 BLS12-381
    # key (bench/results/seed_scale_cuda_bls12381_26_circuit{,_spmv_long_rows}_s16.md): spmv 66 -> 31 ms a
    # partition, GPU stage 1046 -> 1011 ms, 10.60 -> 10.25 s/proof, proofs verify. Keys without long rows
    # list none and run the short kernel alone (one comparison a row more).
    spmv_long_rows: bool = True
    # Steps of a streamed pass (a prologue, or a chunk for every partition) queued ahead of the
    # device: the host thread queues a step while the device runs the ones before it. 2 was never
    # swept; a witness chunk of a large batch takes the host about as long to queue as the device
    # to run (bench/NOTES.md, session 9), so a deeper queue may keep the device busier. A deeper
    # queue also means a cancelled partition leaves the pass that many steps later.
    stream_queue_depth: int = 2
    # A partition's MSMs leave their window sums on the device and one launch per group combines them
    # (msm_combine_windows_batch: the G1 MSMs on a warp each), the witness MSMs' on a side stream while
    # H runs, instead of a one-thread Horner chain after each MSM (~2.6 ms each for BLS12-381 G1, 3.4 for
    # G2). Session 15, same process against the per-MSM chain (bench/results/gpu_stage_14_20_s15.md,
    # gpu_stage_14_s15_repeat.md): BLS12-381 2^14 26 -> 13-14 ms a partition, 2^20 106 -> 94; BN254 2^14
    # 12-13 -> 6-7, 2^20 48 -> 43.
    msm_batched_window_combination: bool = True
    # A resident partition's witness copied to the device while it waits for the GPU lock (the engine asks,
    # witness_prefetch.py): its upload (~40 ms of a 2^26 seed partition, bench/NOTES.md session 16) leaves
    # the lock. Its GPU test and the whole suite passed with it on (session 17); the seed rows: NOTES.
    witness_prefetch: bool = True
    # A, B1, B2 and C take the same scalars (C's points start past the public signals: it skips their digits):
    # one digit sort for the four MSMs (msm.MsmRunner.sort), kept until C's MSM has read it. Saves three sorts a
    # partition (C's since session 18; A, B1, B2's measured in session 17, same call
    # (bench/results/gpu_stage_24_s17.md), random witness at 2^24: BLS12-381 1014 -> 981 ms, BN254 485 -> 448;
    # the whole GPU suite passed with it on. Costs +4 bytes a digit slot while held (scratch_bytes).
    msm_shared_sort: bool = True
    # A resident key's sections also kept as fixed-base tables (2^(c S j) P for its windows j, fixed_base.py)
    # where the VRAM no other key holds has room for them beside the key, a partition's scratch and a
    # prefetched witness; the key store drops them back to plain points before it evicts a key for room.
    # 13-16x a section's points with one bucket set, about half with two (msm_fixed_base_sets below: which sets
    # a table may have); built at load (a 2^24 BLS12-381 key: 5.1 -> 16.2 s). Session 23, same call as sppark
    # (bench/results/gpu_stage_24_s23_fixed_base.md), 2^24 random witness, all five tables: BLS12-381 914 -> 784 ms,
    # BN254 414 -> 369 ms; the seed-shaped 2^24 stream 2.81 -> 2.69 s/proof.
    msm_fixed_base: bool = True
    # The sections in the order they get a table while the room lasts; sections left out get none (an empty
    # list: no tables). "auto" (the default): the most milliseconds saved a byte first for the key's witnesses as
    # measured so far (placement.table_order: placement.FIXED_BASE_ORDER, b2 first, for a random witness or before
    # any is seen; h first for a bit-heavy one, whose B2 is mostly a sum of ones that a table does not speed up).
    # A listed section still gets none where the cost model says its table does not pay (fixed_base.table_pays):
    # over a seed witness's 5% tail at 2^24 only H's does, in either order (session 51).
    msm_fixed_base_order: tuple[str, ...] | str = "auto"
    # The bucket sets a section's table may have, tried in this order for each section while the room lasts
    # (launch.TABLE_SETS: one set, the fastest, then two, half its bytes); fixed_base.choose_fixed_bases also
    # fills the room with each count alone and keeps the fill its cost model says saves the most. On a GPU too
    # small for every section's one-set table that is two sets each (a 2^24 BLS12-381 key on an H100: all five
    # at two sets 778-780 ms a stage, against 802 with B2 and H at one set; session 49).
    msm_fixed_base_sets: tuple[int, ...] = TABLE_SETS
    # With no explicit VRAM budget (the backend's ``vram_budget_bytes``), the device allocator's budget is
    # this share of the device's free memory when the backend starts; the rest is left to the driver, the
    # kernels' modules and other processes. A seed-shaped 2^26 BLS12-381 key with H's one-set table: place_key
    # counts 132.9 GiB (the key, the table, a partition's scratch bound, a prefetched witness) of an H200's
    # ~139 GiB free; 0.965 fits it (peak in use 122.8 GiB, stage 830 -> 811 ms; bench/NOTES.md, session 29).
    vram_free_share: float = 0.9

    def __post_init__(self) -> None:
        for name in ("stream_ordered_memory", "sync_after_launch", "csr_value_table", "msm_batched_window_combination",
                     "spmv_long_rows", "witness_prefetch", "msm_shared_sort", "msm_fixed_base"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"CudaOptions.{name} must be true or false, got {getattr(self, name)!r}")
        blocks = self.msm_g1_min_blocks
        if blocks is not None and (isinstance(blocks, bool) or blocks not in G1_MIN_BLOCKS_BUILT):
            raise ValueError(f"CudaOptions.msm_g1_min_blocks must be one of {G1_MIN_BLOCKS_BUILT} "
                             f"(the variants built), got {blocks!r}")
        for name in ("msm_split_min_bits", "stream_split_min_bits"):
            share = getattr(self, name)
            if isinstance(share, bool) or not isinstance(share, (int, float)) or share < 0:
                raise ValueError(f"CudaOptions.{name} must be a share >= 0 (above 1: never split), got {share!r}")
        if isinstance(self.stream_chunk_bytes, bool) or not isinstance(self.stream_chunk_bytes, int) \
                or self.stream_chunk_bytes < (1 << 20):
            raise ValueError(f"CudaOptions.stream_chunk_bytes must be an integer of at least 1 MiB, "
                             f"got {self.stream_chunk_bytes!r}")
        cap = self.stream_chunk_max_bytes
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise ValueError(f"CudaOptions.stream_chunk_max_bytes must be an integer >= 0 (0: no limit), got {cap!r}")
        depth = self.stream_queue_depth
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 64:
            raise ValueError(f"CudaOptions.stream_queue_depth must be an integer from 1 to 64, got {depth!r}")
        if self.stream_tails not in ("chunks", "prologue"):
            raise ValueError(f"CudaOptions.stream_tails must be 'chunks' or 'prologue', got {self.stream_tails!r}")
        if self.stream_h not in ("chunks", "prologue"):
            raise ValueError(f"CudaOptions.stream_h must be 'chunks' or 'prologue', got {self.stream_h!r}")
        order = self.msm_fixed_base_order
        if order != "auto":
            if not isinstance(order, (tuple, list)) or not all(isinstance(s, str) for s in order) \
                    or not set(order) <= set(SECTIONS) or len(set(order)) != len(order):
                raise ValueError(f"CudaOptions.msm_fixed_base_order must be \"auto\" or list distinct key sections "
                                 f"of {SECTIONS}, got {order!r}")
            object.__setattr__(self, "msm_fixed_base_order", tuple(order))  # a TOML list
        sets = self.msm_fixed_base_sets
        if not isinstance(sets, (tuple, list)) or not sets or len(set(sets)) != len(sets) \
                or not all(isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_TABLE_SETS for n in sets):
            raise ValueError(f"CudaOptions.msm_fixed_base_sets must list distinct bucket-set counts from 1 to "
                             f"{MAX_TABLE_SETS}, tried in that order, got {sets!r}")
        object.__setattr__(self, "msm_fixed_base_sets", tuple(sets))  # a TOML list
        share = self.vram_free_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise ValueError(f"CudaOptions.vram_free_share must be a share of the free VRAM in (0, 1], got {share!r}")
        if self.kernel_cache_dir is not None and (not isinstance(self.kernel_cache_dir, str) or not self.kernel_cache_dir):
            raise ValueError(f"CudaOptions.kernel_cache_dir must be a folder path, got {self.kernel_cache_dir!r}")
