// Pippenger bucket MSM, templated over the coordinate field F (G1: mont_t, G2: fq2_pair_t, two lanes a
// point, or fq2_t).
// sum_i s_i P_i, scalars plain form (Fr, 8 x 32-bit words), points affine_t<F> (Montgomery).
//
// Steps (each a kernel; the host sequences them, see pipeline/backends/cuda/msm.py):
//  1. msm_count_digits: signed c-bit digits d in [-2^(c-1), 2^(c-1)] of every scalar's least magnitude
//     (msm_least_magnitude: s mod r, or r - s and the point negated); the
//     count of each bucket (window w, |d|) by warp-aggregated atomics, and each digit's rank in
//     its bucket (the atomic's old value). Zero digits are skipped, so a zero scalar costs
//     nothing and a scalar 1 is one plain addition.
//  2. exclusive scan of the counts -> bucket offsets (util/scan.cuh).
//  3. msm_scatter_digits: point indices (sign in bit 31) grouped by bucket (a counting sort), each
//     at its bucket's offset plus its rank: one pass of atomics, not two (2^26, BLS12-381: the
//     sort 89 -> 78 ms, bench/NOTES.md session 13). From 2^29 digit slots the binned sort instead
//     (msm_bin_digits, msm_place_digits below: 78 -> 51 ms at 2^26).
//  4. msm_accumulate_flat: level 0 (affine points in): thread t sums entries [tT, (t+1)T) of the
//     sorted list, one XYZZ piece per bucket it touches, so every thread of a warp does T
//     additions whatever the bucket lengths (the chunked scheme, msm_accumulate<F, true, B>, T
//     entries of one bucket a thread, leaves the warp waiting for its longest bucket; it stays
//     where it measured faster, launch.LEVEL0_CHUNKED).
//     Then the pieces of each bucket are summed in place into its first (msm_sum_pieces: one item a
//     bucket of at most 16, the items in the order of their piece counts; a tree of chunks of 16 for
//     hotter ones, msm_sum_hot_chunks). The tree's levels follow from an upper bound (a bucket holds
//     at most n entries), so the host queues every launch without reading a count back. Fixed-size
//     chunks keep hot buckets (the 1s of a bit-heavy witness) from serialising one thread.
//  5. msm_bucket_segments: per window, sum_d d B_d by running sums over segments of L buckets,
//     plus (segment start) * (segment sum); msm_reduce_halves sums the segments.
//  6. msm_combine_windows: Horner over windows, c doublings each (one thread); or the window sums are
//     copied out and msm_combine_windows_batch combines up to four MSMs' at once (a warp each).
#pragma once

static constexpr uint32_t MSM_NEG_BIT = 0x80000000u;
static constexpr uint32_t MSM_NO_BUCKET = 0xffffffffu;

// Bits [off, off + c) of a 256-bit scalar (8 words), c <= 31; bits past 256 read as zero.
__device__ __forceinline__ uint32_t scalar_bits(const uint32_t* s, int off, int c) {
    const int w = off >> 5, sh = off & 31;
    uint64_t lo = w < 8 ? s[w] : 0, hi = w + 1 < 8 ? s[w + 1] : 0;
    return (uint32_t)(((hi << 32) | lo) >> sh) & ((1u << c) - 1);
}

// Bucket key of window `w` for the signed digit sequence; carries across windows in *carry.
__device__ __forceinline__ uint32_t signed_digit_key(const uint32_t* s, int w, int c, uint32_t* carry, bool* neg) {
    const uint32_t half = 1u << (c - 1);
    uint32_t raw = scalar_bits(s, w * c, c) + *carry;
    uint32_t mag;
    if (raw > half) {  // d = raw - 2^c < 0
        mag = (1u << c) - raw;
        *carry = 1;
        *neg = true;
    } else {
        mag = raw;
        *carry = 0;
        *neg = false;
    }
    return mag == 0 ? MSM_NO_BUCKET : (uint32_t)w * half + (mag - 1);
}

// out = a - b over a scalar's 8 words; the borrow out (1 where a < b).
__device__ __forceinline__ uint32_t scalar_sub(const uint32_t a[8], const uint32_t b[8], uint32_t out[8]) {
    uint32_t borrow = 0;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        const uint64_t x = (uint64_t)a[k] - b[k] - borrow;
        out[k] = (uint32_t)x;
        borrow = (uint32_t)(x >> 63);
    }
    return borrow;
}

// s -> its least magnitude mod r, in place; true where the point's sign flips. s (any 256-bit value) is first
// reduced below r (no subtraction for a reduced scalar: the kernels take unreduced input and still sum
// s mod r), then replaced by r - s where that is smaller (s > (r - 1) / 2; r is odd). Every magnitude is then
// at most (r - 1) / 2 < 2^(bits - 1), so where the windows below the plan's spare one hold `bits` bits (MsmPlan:
// ceil((bits + 1) / c) windows; BLS12-381 at c = 15 and 17) no carry reaches the spare window: for scalars
// uniform below r (H's coefficients, a witness's other values) ~45% of them carried into it there (r's top 15 /
// 17 bits are past half the window), ~0.45 n additions of ~17.5 n / ~15.5 n. (A plan with one window fewer,
// ceil(bits / c), ran no faster on the benches' scalars, which are below 2^(bits - 1) and never carried, and
// moved the model's widths: session 37, not kept.) sum s_i P_i is unchanged: (r - s) (-P) = s P in a group of
// order r.
__device__ __forceinline__ bool msm_least_magnitude(uint32_t s[8]) {
    uint32_t r[8], t[8], unused[8];
#pragma unroll
    for (int k = 0; k < 8; k++) r[k] = fr_params::mod(k);
    while (!scalar_sub(s, r, t)) {  // s -= r while s >= r
#pragma unroll
        for (int k = 0; k < 8; k++) s[k] = t[k];
    }
    scalar_sub(r, s, t);                       // t = r - s (s < r: no borrow)
    const bool flip = scalar_sub(t, s, unused) != 0;  // r - s < s
#pragma unroll
    for (int k = 0; k < 8; k++) s[k] = flip ? t[k] : s[k];
    return flip;
}

// Warp-aggregated atomicAdd(&d_ctr[key], 1): returns this lane's slot. All 32 lanes call it.
__device__ __forceinline__ uint32_t warp_aggregated_inc(uint32_t* d_ctr, uint32_t key) {
    const uint32_t group = __match_any_sync(0xffffffffu, key);
    const int lane = threadIdx.x & 31;
    const int leader = __ffs(group) - 1;
    uint32_t base = 0;
    if (key != MSM_NO_BUCKET && lane == leader) base = atomicAdd(&d_ctr[key], __popc(group));
    base = __shfl_sync(group, base, leader);
    return base + __popc(group & ((1u << lane) - 1));
}

// Every signed digit of scalars [0, n) (their least magnitudes), window by window, in a warp-uniform loop
// (warp_aggregated_inc needs every lane): digit(i, w, key, neg) for each, neg the sign of the term (the digit's
// and the fold's), key MSM_NO_BUCKET where the digit is zero or i >= n (a scalar read as zero). The counting
// and the binning passes walk the digits alike.
template <class Digit>
__device__ __forceinline__ void msm_each_digit(const uint32_t* __restrict__ d_scalars, uint32_t n, int c,
                                               int n_windows, Digit digit) {
    const uint32_t stride = gridDim.x * blockDim.x;
    for (uint32_t base = blockIdx.x * blockDim.x; base < n; base += stride) {  // warp-uniform trip count
        const uint32_t i = base + threadIdx.x;
        uint32_t s[8];
#pragma unroll
        for (int k = 0; k < 8; k++) s[k] = i < n ? d_scalars[8ull * i + k] : 0;
        const bool flip = msm_least_magnitude(s);
        uint32_t carry = 0;
        for (int w = 0; w < n_windows; w++) {
            bool neg;
            const uint32_t key = signed_digit_key(s, w, c, &carry, &neg);
            digit(i, w, key, neg != flip);
        }
    }
}

// Window w's bucket key -> its key over a fixed-base table of `sets` bucket sets (Fixed bases, below):
// bucket |d| - 1 of set w mod sets.
__device__ __forceinline__ uint32_t table_key(uint32_t key, int w, int c, int sets) {
    if (key == MSM_NO_BUCKET) return key;
    return key - ((uint32_t)(w - w % sets) << (c - 1));
}

// d_ranks[w ranks_stride + i]: the rank of scalar i's digit of window w in its bucket (unset for zero digits);
// a null d_ranks: the counts only (the binned sort below). `table_sets` > 0: the keys over a fixed-base
// table of that many bucket sets (table_key). The n scalars may be one piece of an MSM's (scalars arriving
// from the host piece by piece, msm.py's scalar_pieces): d_scalars and d_ranks then point at the piece's
// first, and ranks_stride is the whole MSM's count (n where they are all of it), so that every piece's
// ranks land where msm_scatter_digits reads them; the counts add up across the pieces.
__global__ void msm_count_digits(const uint32_t* __restrict__ d_scalars, uint32_t n, int c, int n_windows,
                                 uint32_t* __restrict__ d_counts, uint32_t* __restrict__ d_ranks, int table_sets,
                                 uint32_t ranks_stride) {
    msm_each_digit(d_scalars, n, c, n_windows, [&](uint32_t i, int w, uint32_t key, bool) {
        if (table_sets) key = table_key(key, w, c, table_sets);
        const uint32_t rank = warp_aggregated_inc(d_counts, key);
        if (key != MSM_NO_BUCKET && d_ranks != nullptr) d_ranks[(size_t)w * ranks_stride + i] = rank;  // set: i < n
    });
}

// d_point_index (may be null): the point of scalar i is d_point_index[i] (a tail MSM over the
// "other" scalars of a split witness); null: point i. table_sets > 0: a fixed-base table's keys (table_key)
// and entries, point (w / table_sets) table_stride + (d_point_index[i] or i) (the host keeps it below 2^31);
// 0: plain keys and entries (table_stride unused), as in msm_count_digits.
__global__ void msm_scatter_digits(const uint32_t* __restrict__ d_scalars, uint32_t n, int c, int n_windows,
                                   const uint32_t* __restrict__ d_offsets, const uint32_t* __restrict__ d_ranks,
                                   uint32_t* __restrict__ d_entries, const uint32_t* __restrict__ d_point_index,
                                   uint32_t table_stride, int table_sets) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        uint32_t s[8];
#pragma unroll
        for (int k = 0; k < 8; k++) s[k] = d_scalars[8ull * i + k];
        const bool flip = msm_least_magnitude(s);  // as msm_each_digit: the counts' digits
        const uint32_t point = d_point_index != nullptr ? d_point_index[i] : i;
        uint32_t carry = 0;
        for (int w = 0; w < n_windows; w++) {
            bool neg;
            uint32_t key = signed_digit_key(s, w, c, &carry, &neg);
            if (table_sets) key = table_key(key, w, c, table_sets);
            if (key != MSM_NO_BUCKET)
                d_entries[d_offsets[key] + d_ranks[(size_t)w * n + i]] =
                    (table_sets ? (uint32_t)(w / table_sets) * table_stride + point : point) |
                    (neg != flip ? MSM_NEG_BIT : 0u);
        }
    }
}

// The binned sort (steps 1-3 without the ranks; msm.py, MsmRunner.binned_sort): msm_scatter_digits
// writes 4 bytes a digit at random across the whole entry array, and at 2^26 (3.5 GB of entries) that
// took 62 ms of a 520 ms MSM (bench/results/gpu_msm_s15_sort_passes.md): each write dirties a part of a
// 32-byte sector that leaves L2 long before its neighbours arrive. Here the digits go there in two
// passes whose writes each land near the last ones: first into bins of 2^fb consecutive buckets (a
// bin's slots fill from its start, so the sectors being written are one a bin: ~200K bins at 2^26,
// a few MB, held in L2 until full), then from each bin to its buckets (a block's tile of the binned
// array spans few bins, so its writes stay within a few buckets' slots). A binned word packs the
// scalar's index (pb bits), the sign and the digit's low fb bucket bits: pb + 1 + fb <= 32.

// d_cursor[b] = d_offsets[b << fb]: where bin b's digits start.
__global__ void msm_bin_cursors(const uint32_t* __restrict__ d_offsets, uint32_t n_bins, int fb,
                                uint32_t* __restrict__ d_cursor) {
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < n_bins; b += gridDim.x * blockDim.x)
        d_cursor[b] = d_offsets[(size_t)b << fb];
}

// Pass 1: every nonzero digit, as (i | neg << pb | low fb bits of its bucket << (pb + 1)), into its bin.
__global__ void msm_bin_digits(const uint32_t* __restrict__ d_scalars, uint32_t n, int c, int n_windows, int pb,
                               int fb, uint32_t* __restrict__ d_cursor, uint32_t* __restrict__ d_binned) {
    const uint32_t fine_mask = (1u << fb) - 1;
    msm_each_digit(d_scalars, n, c, n_windows, [&](uint32_t i, int, uint32_t key, bool neg) {
        const uint32_t slot = warp_aggregated_inc(d_cursor, key == MSM_NO_BUCKET ? MSM_NO_BUCKET : key >> fb);
        if (key != MSM_NO_BUCKET) {
            const uint32_t fine = fb == 0 ? 0u : (key & fine_mask) << (pb + 1);
            d_binned[slot] = i | (neg ? 1u << pb : 0u) | fine;
        }
    });
}

// The last bin b in [lo, hi] whose digits start at or before position p (bins may be empty: the last
// of equal starts is the one p belongs to).
__device__ __forceinline__ uint32_t msm_bin_of(const uint32_t* __restrict__ d_offsets, int fb, uint32_t p,
                                               uint32_t lo, uint32_t hi) {
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo + 1) / 2;
        if (d_offsets[(size_t)mid << fb] <= p) lo = mid; else hi = mid - 1;
    }
    return lo;
}

// Pass 2: tiles of MSM_PLACE_TILE binned digits, each to its bucket's next slot (d_cursor: a copy of the
// bucket offsets, advanced by warp-aggregated atomics). The point of scalar i is d_point_index[i] when
// given. The binned array holds d_offsets[n_bins << fb] digits; the grid may cover more.
static constexpr uint32_t MSM_PLACE_TILE = 4096;
__global__ void msm_place_digits(const uint32_t* __restrict__ d_binned, const uint32_t* __restrict__ d_offsets,
                                 uint32_t n_bins, int pb, int fb, uint32_t* __restrict__ d_cursor,
                                 uint32_t* __restrict__ d_entries, const uint32_t* __restrict__ d_point_index) {
    __shared__ uint32_t range[2];
    const uint32_t total = d_offsets[(size_t)n_bins << fb];
    const uint32_t index_mask = pb >= 32 ? 0xffffffffu : (1u << pb) - 1;
    for (uint32_t tile = blockIdx.x * MSM_PLACE_TILE; tile < total; tile += gridDim.x * MSM_PLACE_TILE) {
        const uint32_t last = min(tile + MSM_PLACE_TILE, total) - 1;
        __syncthreads();  // the previous tile's range is read by every thread before it changes
        if (threadIdx.x == 0) {
            range[0] = msm_bin_of(d_offsets, fb, tile, 0, n_bins - 1);
            range[1] = msm_bin_of(d_offsets, fb, last, range[0], n_bins - 1);
        }
        __syncthreads();
        for (uint32_t k = threadIdx.x; k < MSM_PLACE_TILE; k += blockDim.x) {  // warp-uniform trip count
            const uint32_t p = tile + k;
            uint32_t key = MSM_NO_BUCKET, word = 0;
            if (p <= last) {
                word = d_binned[p];
                const uint32_t bin = msm_bin_of(d_offsets, fb, p, range[0], range[1]);
                key = (bin << fb) | (fb == 0 ? 0u : word >> (pb + 1));
            }
            const uint32_t slot = warp_aggregated_inc(d_cursor, key);
            if (key != MSM_NO_BUCKET) {
                const uint32_t i = word & index_mask;
                const uint32_t point = d_point_index != nullptr ? d_point_index[i] : i;
                d_entries[slot] = point | ((word >> pb) & 1u ? MSM_NEG_BIT : 0u);
            }
        }
    }
}

// Chunks of at most `chunk` entries per bucket: ceil(count / chunk).
__global__ void msm_chunk_counts(const uint32_t* __restrict__ d_offsets, uint32_t n_buckets, uint32_t chunk,
                                 uint32_t* __restrict__ d_chunk_counts) {
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < n_buckets; b += gridDim.x * blockDim.x)
        d_chunk_counts[b] = (d_offsets[b + 1] - d_offsets[b] + chunk - 1) / chunk;
}

// Flat level 0: the threads (T = `chunk` entries each) whose ranges meet bucket b, one piece each:
// (last entry) / T - (first entry) / T + 1, none for an empty bucket.
__global__ void msm_piece_counts(const uint32_t* __restrict__ d_offsets, uint32_t n_buckets, uint32_t chunk,
                                 uint32_t* __restrict__ d_piece_counts) {
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < n_buckets; b += gridDim.x * blockDim.x) {
        const uint32_t lo = d_offsets[b], hi = d_offsets[b + 1];
        d_piece_counts[b] = hi > lo ? (hi - 1) / chunk - lo / chunk + 1 : 0;
    }
}

// Largest b < n_buckets with d_off[b] <= x (d_off non-decreasing, d_off[0] = 0).
__device__ __forceinline__ uint32_t bucket_of(const uint32_t* __restrict__ d_off, uint32_t n_buckets, uint32_t x) {
    uint32_t lo = 0, hi = n_buckets;  // answer in [lo, hi)
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) >> 1;
        if (d_off[mid] <= x) lo = mid; else hi = mid;
    }
    return lo;
}

// Grid-stride loops over items run one item per F::LANES threads; the lanes of an item take the
// same trips.
template <class F>
struct msm_items {
    uint32_t first, step;
    __device__ __forceinline__ msm_items()
        : first((blockIdx.x * blockDim.x + threadIdx.x) / F::LANES), step(gridDim.x * blockDim.x / F::LANES) {}
};

// One item (F::LANES threads) per range of entries, its sums stored as pieces. AFFINE: entries index
// affine points (sign in bit 31); otherwise the entries are the XYZZ partials of the previous level,
// in order. FLAT (level 0, msm_accumulate_flat): item t takes entries [t chunk, (t + 1) chunk) across
// bucket boundaries, bucket b's piece from item t at d_chunk_off[b] + t - d_offsets[b] / chunk
// (msm_piece_counts); otherwise item t is chunk t of msm_chunk_counts' chunks (at most `chunk`
// entries of one bucket). Counts are read on the device (the entries' at d_offsets[n_buckets], the
// chunks' at *d_n_chunks): the host sizes the grid by an upper bound and never waits for a count
// (no mid-MSM host round trip). AFFINE entries of points below `skip_below` add nothing and are not
// read: C's MSM reads A's sorted digits over the whole witness from a base shifted back past the public
// signals, which it has no points for (CudaBackend._enqueue_msms).
template <class F, bool AFFINE, bool FLAT>
__device__ __forceinline__ void accumulate_items(typename xyzz_t<F>::mem_t* __restrict__ d_out,
                                                 const typename affine_t<F>::mem_t* __restrict__ d_points,
                                                 const uint32_t* __restrict__ d_entries,
                                                 const typename xyzz_t<F>::mem_t* __restrict__ d_partials_in,
                                                 const uint32_t* __restrict__ d_offsets,
                                                 const uint32_t* __restrict__ d_chunk_off, uint32_t n_buckets,
                                                 uint32_t chunk, const uint32_t* __restrict__ d_n_chunks,
                                                 uint32_t skip_below) {
    const uint32_t n_items = FLAT ? (d_offsets[n_buckets] + chunk - 1) / chunk : *d_n_chunks;
    const msm_items<F> items;
    for (uint32_t t = items.first; t < n_items; t += items.step) {
        uint32_t b, start, end, out;
        if (FLAT) {
            start = t * chunk;
            end = min(start + chunk, d_offsets[n_buckets]);
            b = bucket_of(d_offsets, n_buckets, start);
            out = d_chunk_off[b] + t - d_offsets[b] / chunk;
        } else {
            b = bucket_of(d_chunk_off, n_buckets, t);
            start = d_offsets[b] + (t - d_chunk_off[b]) * chunk;
            end = min(start + chunk, d_offsets[b + 1]);
            out = t;
        }
        // One loop over the entries, the piece's store inside it: a loop per piece (the bookkeeping out of
        // the additions' loop) let the lanes of a warp run their pieces' loops apart, and level 0 took 1.7x
        // as long (bench/NOTES.md, session 13).
        uint32_t piece_end = FLAT ? min(end, d_offsets[b + 1]) : end;
        xyzz_t<F> acc = xyzz_t<F>::inf();
        for (uint32_t e = start; e < end; e++) {
            if (AFFINE) {
                const uint32_t entry = d_entries[e], point = entry & ~MSM_NEG_BIT;
                if (point >= skip_below) acc.add_stored(d_points[point], entry & MSM_NEG_BIT);
            } else {
                acc.add(xyzz_t<F>::load(d_partials_in[e]));
            }
            if (FLAT && e + 1 == piece_end && e + 1 < end) {  // the next nonempty bucket starts at e + 1
                acc.store(d_out[out]);
                acc = xyzz_t<F>::inf();
                do piece_end = d_offsets[++b + 1]; while (piece_end == e + 1);
                piece_end = min(end, piece_end);
                out = d_chunk_off[b] + t - d_offsets[b] / chunk;
            }
        }
        acc.store(d_out[out]);
    }
}

// MIN_BLOCKS: blocks of MSM_ACC_THREADS per SM the register allocation must allow (occupancy).
// MSM_ACC_THREADS comes from the generated header (pipeline/backends/cuda/launch.py).
#define MSM_ACCUMULATE_PARAMS                                                                                  \
    typename xyzz_t<F>::mem_t *__restrict__ d_out, const typename affine_t<F>::mem_t *__restrict__ d_points, \
        const uint32_t *__restrict__ d_entries, const typename xyzz_t<F>::mem_t *__restrict__ d_partials_in,  \
        const uint32_t *__restrict__ d_offsets, const uint32_t *__restrict__ d_chunk_off, uint32_t n_buckets, \
        uint32_t chunk, const uint32_t *__restrict__ d_n_chunks, uint32_t skip_below
#define MSM_ACCUMULATE_ARGS \
    d_out, d_points, d_entries, d_partials_in, d_offsets, d_chunk_off, n_buckets, chunk, d_n_chunks, skip_below

template <class F, bool AFFINE, int MIN_BLOCKS>
__global__ void __launch_bounds__(MSM_ACC_THREADS, MIN_BLOCKS) msm_accumulate(MSM_ACCUMULATE_PARAMS) {
    accumulate_items<F, AFFINE, false>(MSM_ACCUMULATE_ARGS);
}

template <class F, int MIN_BLOCKS>
__global__ void __launch_bounds__(MSM_ACC_THREADS, MIN_BLOCKS) msm_accumulate_flat(MSM_ACCUMULATE_PARAMS) {
    accumulate_items<F, true, true>(MSM_ACCUMULATE_ARGS);
}

// The levels over level 0's pieces, in place (MsmRunner._sum_pieces): bucket b's P_b pieces lie at
// d_partials[d_piece_off[b] + i], i < P_b = d_piece_off[b + 1] - d_piece_off[b], and its sum ends in the first,
// where bucket_sum reads it, however many levels it took. At a partition's width a random witness leaves 2-3
// pieces a bucket (~128 entries, 128 a thread), so one item a bucket sums them (msm_sum_pieces): no search
// and no copy. The levels of msm_accumulate<F, false, 1> before (MsmRunner.partial_levels = "tree") ran a
// binary search a thread and, the host's bound being n entries a bucket, copied every bucket's one partial
// through four more levels. The items come in the order of their buckets' piece counts (a counting sort of
// the buckets by P, msm_piece_class_counts and msm_piece_class_order), so a warp's lanes do as many additions
// each: in bucket order a warp waited for its bucket of 3 pieces where most had 2, and for one of 2 where most
// of a bit-heavy witness's had 1 (ncu, 2^26 at c = 20, session 56: 9.2 and 3.9 ms of G1 in bucket order).
// Buckets of more than `hot` pieces (MSM_MAX_HOT at most; a bit-heavy witness's 1s) are summed by a tree
// instead, `fan` partials an item (msm_hot_chunk_counts, msm_sum_hot_chunks), so no item sums more than `hot`.
static constexpr uint32_t MSM_MAX_HOT = 32;

// d_counts[P] += the buckets of P pieces, 2 <= P <= hot (d_counts zeroed by the host, hot + 1 words).
__global__ void msm_piece_class_counts(const uint32_t* __restrict__ d_piece_off, uint32_t n_buckets, uint32_t hot,
                                       uint32_t* __restrict__ d_counts) {
    __shared__ uint32_t local[MSM_MAX_HOT + 1];
    for (uint32_t k = threadIdx.x; k <= hot; k += blockDim.x) local[k] = 0;
    __syncthreads();
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < n_buckets; b += gridDim.x * blockDim.x) {
        const uint32_t pieces = d_piece_off[b + 1] - d_piece_off[b];
        if (pieces >= 2 && pieces <= hot) atomicAdd(&local[pieces], 1u);
    }
    __syncthreads();
    for (uint32_t k = threadIdx.x; k <= hot; k += blockDim.x)
        if (local[k]) atomicAdd(&d_counts[k], local[k]);
}

// d_list: the buckets of 2..hot pieces, those of 2 first, then 3, ...: class P from the sum of the counts below
// it, a block's buckets of one class at a slot taken from d_cursor[P] (zeroed by the host) by one atomic a block
// and tile, each at its rank within the block's (a shared atomic). The order within a class does not matter.
__global__ void msm_piece_class_order(const uint32_t* __restrict__ d_piece_off, uint32_t n_buckets, uint32_t hot,
                                      const uint32_t* __restrict__ d_counts, uint32_t* __restrict__ d_cursor,
                                      uint32_t* __restrict__ d_list) {
    __shared__ uint32_t start[MSM_MAX_HOT + 1], local[MSM_MAX_HOT + 1], base[MSM_MAX_HOT + 1];
    if (threadIdx.x == 0) {
        uint32_t at = 0;
        for (uint32_t k = 2; k <= hot; k++) {
            start[k] = at;
            at += d_counts[k];
        }
    }
    for (uint32_t tile = blockIdx.x * blockDim.x; tile < n_buckets; tile += gridDim.x * blockDim.x) {
        for (uint32_t k = threadIdx.x; k <= hot; k += blockDim.x) local[k] = 0;
        __syncthreads();  // also: start[] written, the previous tile's base[] read
        const uint32_t b = tile + threadIdx.x;
        const uint32_t pieces = b < n_buckets ? d_piece_off[b + 1] - d_piece_off[b] : 0;
        const bool listed = pieces >= 2 && pieces <= hot;
        const uint32_t rank = listed ? atomicAdd(&local[pieces], 1u) : 0;
        __syncthreads();
        for (uint32_t k = threadIdx.x; k <= hot; k += blockDim.x)
            if (local[k]) base[k] = atomicAdd(&d_cursor[k], local[k]);
        __syncthreads();
        if (listed) d_list[start[pieces] + base[pieces] + rank] = b;
    }
}

// Item t sums the pieces of bucket d_list[t] into its first; the list's length is the counts' sum.
template <class F>
__global__ void __launch_bounds__(MSM_ACC_THREADS, 1)
    msm_sum_pieces(typename xyzz_t<F>::mem_t* __restrict__ d_partials, const uint32_t* __restrict__ d_piece_off,
                   const uint32_t* __restrict__ d_list, const uint32_t* __restrict__ d_counts, uint32_t hot) {
    uint32_t n_items = 0;
    for (uint32_t k = 2; k <= hot; k++) n_items += d_counts[k];
    const msm_items<F> items;
    for (uint32_t t = items.first; t < n_items; t += items.step) {
        const uint32_t b = d_list[t], lo = d_piece_off[b], hi = d_piece_off[b + 1];
        xyzz_t<F> acc = xyzz_t<F>::load(d_partials[lo]);
        for (uint32_t e = lo + 1; e < hi; e++) acc.add(xyzz_t<F>::load(d_partials[e]));
        acc.store(d_partials[lo]);
    }
}

// The tree's level at `stride` (fan^(level - 1)): a hot bucket's partials so far are its pieces `stride` apart,
// ceil(P_b / stride) of them; where more than one is left, ceil(that / fan) chunks of `fan`, else none.
__global__ void msm_hot_chunk_counts(const uint32_t* __restrict__ d_piece_off, uint32_t n_buckets, uint32_t hot,
                                     uint32_t stride, uint32_t fan, uint32_t* __restrict__ d_counts) {
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < n_buckets; b += gridDim.x * blockDim.x) {
        const uint32_t pieces = d_piece_off[b + 1] - d_piece_off[b], left = (pieces - 1) / stride + 1;
        d_counts[b] = pieces > hot && left > 1 ? (left - 1) / fan + 1 : 0;
    }
}

// Chunk t of the level (d_chunk_off: msm_hot_chunk_counts' offsets, their count at index n_buckets), chunk j of
// bucket b: its partials j fan .. j fan + fan - 1 (`stride` pieces apart) into the first of them. Each item
// writes only the slot it reads first, so the level reads and writes one buffer.
template <class F>
__global__ void __launch_bounds__(MSM_ACC_THREADS, 1)
    msm_sum_hot_chunks(typename xyzz_t<F>::mem_t* __restrict__ d_partials, const uint32_t* __restrict__ d_piece_off,
                       const uint32_t* __restrict__ d_chunk_off, uint32_t n_buckets, uint32_t stride, uint32_t fan) {
    const uint32_t n_items = d_chunk_off[n_buckets];
    const msm_items<F> items;
    for (uint32_t t = items.first; t < n_items; t += items.step) {
        const uint32_t b = bucket_of(d_chunk_off, n_buckets, t);
        const uint32_t lo = d_piece_off[b], left = (d_piece_off[b + 1] - lo - 1) / stride + 1;
        const uint32_t first = (t - d_chunk_off[b]) * fan, last = min(first + fan, left);
        xyzz_t<F> acc = xyzz_t<F>::load(d_partials[lo + first * stride]);
        for (uint32_t i = first + 1; i < last; i++) acc.add(xyzz_t<F>::load(d_partials[lo + i * stride]));
        acc.store(d_partials[lo + first * stride]);
    }
}

template <class F>
__device__ __forceinline__ xyzz_t<F> bucket_sum(const typename xyzz_t<F>::mem_t* d_partials, const uint32_t* d_chunk_off,
                                                uint32_t b) {
    return d_chunk_off[b + 1] > d_chunk_off[b] ? xyzz_t<F>::load(d_partials[d_chunk_off[b]]) : xyzz_t<F>::inf();
}

// Thread (w, s): sum over digits d in segment s of window w of d * B_d, with
//   sum_d d B_d = sum_d (d - s L) B_d + s L sum_d B_d   (running sums give the first term).
template <class F>
__global__ void msm_bucket_segments(typename xyzz_t<F>::mem_t* __restrict__ d_seg,
                                    const typename xyzz_t<F>::mem_t* __restrict__ d_partials,
                                    const uint32_t* __restrict__ d_chunk_off, uint32_t buckets_per_window,
                                    uint32_t seg_len, uint32_t n_windows) {
    const uint32_t segs = buckets_per_window / seg_len;
    const msm_items<F> items;
    for (uint32_t t = items.first; t < n_windows * segs; t += items.step) {
        const uint32_t w = t / segs, s = t % segs;
        const uint32_t first = w * buckets_per_window + s * seg_len;  // bucket of digit s L + 1
        xyzz_t<F> running = xyzz_t<F>::inf(), acc = xyzz_t<F>::inf();
        for (int i = seg_len - 1; i >= 0; i--) {
            running.add(bucket_sum<F>(d_partials, d_chunk_off, first + i));
            acc.add(running);
        }
        acc.add(running.mul_u32(s * seg_len));
        acc.store(d_seg[t]);
    }
}

// An MSM whose points come in pieces (a streamed key section): bucket b's sum of this piece, when it has
// one, is added to its total so far (d_buckets, kept across the pieces; all infinity at first).
template <class F>
__global__ void msm_merge_buckets(typename xyzz_t<F>::mem_t* __restrict__ d_buckets,
                                  const typename xyzz_t<F>::mem_t* __restrict__ d_partials,
                                  const uint32_t* __restrict__ d_chunk_off, uint32_t n_buckets) {
    const msm_items<F> items;
    for (uint32_t b = items.first; b < n_buckets; b += items.step) {
        if (d_chunk_off[b + 1] == d_chunk_off[b]) continue;  // no digit of this piece in bucket b
        xyzz_t<F> total = xyzz_t<F>::load(d_buckets[b]);
        total.add(xyzz_t<F>::load(d_partials[d_chunk_off[b]]));
        total.store(d_buckets[b]);
    }
}

// d[i] = i, i < n: the offsets of buckets that are all there (msm_bucket_segments over merged totals).
__global__ void msm_iota(uint32_t* __restrict__ d, uint32_t n) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) d[i] = i;
}

// d[g * len + i] += d[g * len + i + half] for every group g, i < half.
template <class F>
__global__ void msm_reduce_halves(typename xyzz_t<F>::mem_t* __restrict__ d_seg, uint32_t n_groups, uint32_t len,
                                  uint32_t half) {
    const msm_items<F> items;
    for (uint32_t t = items.first; t < n_groups * half; t += items.step) {
        const uint32_t g = t / half, i = t % half;
        xyzz_t<F> a = xyzz_t<F>::load(d_seg[g * len + i]);
        a.add(xyzz_t<F>::load(d_seg[g * len + i + half]));
        a.store(d_seg[g * len + i]);
    }
}

// sum_w 2^(c w) W_w, window w's sum at d_win[w * stride] (Horner from the top window). One thread
// (F::LANES) does all of it: each window waits for c doublings of the one above, so more threads do not
// shorten it (~2.6 ms for BLS12-381 G1: half of a 2^16 MSM).
template <class F>
__device__ __forceinline__ xyzz_t<F> combine_windows(const typename xyzz_t<F>::mem_t* __restrict__ d_win, uint32_t stride,
                                                     uint32_t n_windows, int c) {
    xyzz_t<F> total = xyzz_t<F>::inf();
    for (int w = n_windows - 1; w >= 0; w--) {
        for (int i = 0; i < c; i++) total = total.dbl();
        total.add(xyzz_t<F>::load(d_win[(uint32_t)w * stride]));
    }
    return total;
}

// One MSM's windows: d_out[0] = combine_windows(segment sums of each window, `len` apart).
template <class F>
__global__ void msm_combine_windows(typename xyzz_t<F>::mem_t* __restrict__ d_out,
                                    const typename xyzz_t<F>::mem_t* __restrict__ d_seg,
                                    uint32_t len, uint32_t n_windows, int c) {
    if (blockIdx.x != 0 || threadIdx.x >= F::LANES) return;
    combine_windows<F>(d_seg, len, n_windows, c).store(d_out[0]);
}

// Up to four MSMs' windows at once, one warp each (its first F::LANES threads), so that a partition pays
// one combination's latency for its G1 MSMs, not four: items of different widths in one warp would
// leave their doubling loops at different trips and run apart. Item k's window sums are contiguous at
// win_k, its width and count packed in meta_k = n_windows | c << 16, its result to out_k.
template <class F>
__global__ void msm_combine_windows_batch(typename xyzz_t<F>::mem_t* out0, typename xyzz_t<F>::mem_t* out1,
                                          typename xyzz_t<F>::mem_t* out2, typename xyzz_t<F>::mem_t* out3,
                                          const typename xyzz_t<F>::mem_t* win0, const typename xyzz_t<F>::mem_t* win1,
                                          const typename xyzz_t<F>::mem_t* win2, const typename xyzz_t<F>::mem_t* win3,
                                          uint32_t meta0, uint32_t meta1, uint32_t meta2, uint32_t meta3,
                                          uint32_t count) {
    const uint32_t k = threadIdx.x / 32;
    if (blockIdx.x != 0 || k >= count || k >= 4 || (threadIdx.x & 31) >= F::LANES) return;
    typename xyzz_t<F>::mem_t* out = k == 0 ? out0 : k == 1 ? out1 : k == 2 ? out2 : out3;
    const typename xyzz_t<F>::mem_t* win = k == 0 ? win0 : k == 1 ? win1 : k == 2 ? win2 : win3;
    const uint32_t meta = k == 0 ? meta0 : k == 1 ? meta1 : k == 2 ? meta2 : meta3;
    combine_windows<F>(win, 1, meta & 0xffffu, (int)(meta >> 16)).store(*out);
}

// -- Fixed bases (a key's points never change) ------------------------------------------------------
// A table T[j stride + i] = 2^(c S j) P_i (affine, ceil(W / S) table windows) lets the W digit windows
// share S sets of buckets: the digit d of window w = j S + s of scalar i adds sign(d) T[j stride + i] to
// bucket |d| of set s. The additions at level 0 are the same n W; the partial sums, running sums and the
// window combination run over S sets as a plain MSM's over S windows. S = 1: every window shares one set
// (13-16 x the points' VRAM); S = 2 halves the table (a 2^26 key's H table fits beside it, session 27).
// The keys are set-major, (w mod S) 2^(c-1) + |d| - 1 (msm_count_digits and msm_scatter_digits with their
// table arguments), so the sorted offsets are the S sets' buckets as a plain MSM's over S windows; a
// counter a window and bucket instead measured slower (the scatter 62 against 39 ms at 2^26, S = 1).

// One step of a table: d_out[i] = 2^c d_in[i] (XYZZ out, affine in; setup_xyzz_to_affine makes the next
// window's affine points of it).
template <class F>
__global__ void msm_table_step(typename xyzz_t<F>::mem_t* __restrict__ d_out,
                               const typename affine_t<F>::mem_t* __restrict__ d_in, uint32_t n, int c) {
    const msm_items<F> items;
    for (uint32_t i = items.first; i < n; i += items.step) {
        xyzz_t<F> acc = xyzz_t<F>::inf();
        acc.add_stored(d_in[i], false);
        for (int k = 0; k < c; k++) acc = acc.dbl();
        acc.store(d_out[i]);
    }
}
