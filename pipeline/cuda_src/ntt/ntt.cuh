// Radix-2 NTT over any mont_t field F, several stages per launch: ntt_pass (the elements in shared memory,
// register groups of R stages) and ntt_pass_pairs (a butterfly pair a thread, traded between stages), on the
// same pass plan and twiddle tables; launch.NTT_PASS_KERNEL names the default. ntt_pass's REV form ends a
// DIF transform in natural order (the bit reversal in its stores: NttRunner.ntt), through a scratch array;
// ntt_pass_rev_in_place does it in place where the last pass has few enough stages.
//
// Index i of an n = 2^L transform is split, for one pass over bits [lo, lo + k), as
//   i = hi << (lo + k) | v << lo | lw,   v in [0, 2^k) the bits this pass transforms.
// A block holds 2^k values of v times 2^tl consecutive lw (coalesced loads of 2^tl elements)
// in shared memory and runs the k butterfly stages of those bits, up to R of them at a time in
// each thread's registers (ntt_group), synchronising between the groups.
//
// DIF (Gentleman-Sande): natural order in, bit-reversed out; stages from the top bit down.
// DIT (Cooley-Tukey): bit-reversed in, natural order out; stages from bit 0 up.
// Twiddles come from one forward table in one of two layouts, T = 2^log_tw >= n:
//   levels:  tw[h + j] = w_{2h}^j for every half-size h < T and j < h (T entries): each stage
//            reads a contiguous run (coalesced);
//   compact: tw[m] = w_T^m for m < T/2 (a quarter of two level tables): a stage of half-size h
//            reads w_{2h}^j = tw[j << (log_tw - 1 - log2 h)], strided below the top stage (about
//            9% slower at 2^26-27, measured); for keys whose budget is tight.
// The inverse reads the forward table: w_{2h}^-j = -w_{2h}^(h - j) for 0 < j < h (w_{2h}^h = -1),
// the sign folded into the butterfly.
#pragma once

// w_{2h}^j (h = 2^log_h) as a stage reads it from the table of 2^log_tw (levels or compact); for the inverse
// (`inverse`) w_{2h}^-j = -w_{2h}^(h - j) for j != 0, returned as w_{2h}^(h - j) with `neg` set (the sign is
// folded into the butterfly). I: the index type (32 bits in the pairs pass, which refuses n > 2^31).
template <class F, class I>
__device__ __forceinline__ F ntt_twiddle(const F* __restrict__ d_tw, I j, int log_h, int log_tw, int levels,
                                         bool inverse, bool& neg) {
    const I h = (I)1 << log_h;
    neg = inverse && j != 0;
    const I jj = neg ? h - j : j;
    return d_tw[levels ? h + jj : jj << (log_tw - 1 - log_h)];
}

// a if c else b, word by word: selects, where a ?: of two field expressions would branch (each side's
// arithmetic is asm volatile, which the compiler neither merges nor hoists) and diverge within a warp
template <class F>
__device__ __forceinline__ F ntt_select(bool c, const F& a, const F& b) {
    F r;
#pragma unroll
    for (int i = 0; i < F::N; i++) r.v[i] = c ? a.v[i] : b.v[i];
    return r;
}

// Butterfly for element pair (x, y) at half-size h with twiddle w = w^j:
//   DIF: x' = x + y, y' = (x - y) w^j;   DIT: x' = x + y w^j, y' = x - y w^j.
// With w^j = -w (the inverse's folded sign, neg): DIF y' = (y - x) w; DIT x' = x - y w, y' = x + y w.
// neg differs between the lanes of a warp (j = 0 in some), so the sign goes through selects: one product,
// no divergent second one (a branch on neg made the inverse DIF ~15% slower than the forward, session 25).
template <class F, bool DIT>
__device__ __forceinline__ void ntt_butterfly(F& x, F& y, const F& w, bool neg) {
    if (DIT) {
        const F yw = y * w;
        const F sum = x + yw, diff = x - yw;
        x = ntt_select(neg, diff, sum);
        y = ntt_select(neg, sum, diff);
    } else {
        const F x0 = x;
        x = x0 + y;
        y = (ntt_select(neg, y, x0) - ntt_select(neg, x0, y)) * w;
    }
}

// G consecutive stages of a pass in registers: stages on bits [t0, t0 + G) of v, DIF from the top
// bit of the group down, DIT from its bottom up. Each thread loads the 2^G elements that differ
// only in those bits (its other bits: u, and lt), runs the G x 2^(G-1) butterflies, stores them
// back: one shared-memory round trip and one barrier per G stages instead of per stage.
// ROWS: the 2^tl values of lt are rows of the transform (ntt_pass's REV), not low bits of the index: the
// twiddles leave them out. INV: the inverse (the twiddle's folded sign) as a template argument, so that the forward
// carries no sign selects (ntt_pass picks one of the two once per block). A twiddle's j < h <= n/2 indexes in 32
// bits: Fr's two-adicity (32 for BLS12-381, 28 for BN254) bounds n.
template <class F, bool DIT, int G, bool ROWS, bool INV>
__device__ __forceinline__ void ntt_group(F* s, const F* __restrict__ d_tw, int n_elems, int t0, int tl, int lo,
                                          uint64_t lw_base, int log_tw, int levels) {
    const uint32_t tl_mask = (1u << tl) - 1;
    for (int b = threadIdx.x; b < (n_elems >> G); b += blockDim.x) {
        const uint32_t lt = b & tl_mask;
        const uint32_t u = b >> tl;  // the k - G bits of v outside the group
        const uint32_t vbase = ((u >> t0) << (t0 + G)) | (u & ((1u << t0) - 1));
        F x[1 << G];
#pragma unroll
        for (int m = 0; m < (1 << G); m++) x[m] = s[((vbase | ((uint32_t)m << t0)) << tl) | lt];
#pragma unroll
        for (int st = 0; st < G; st++) {
            const int i = DIT ? st : G - 1 - st;  // bit of the group this stage pairs
            const int t = t0 + i;
#pragma unroll
            for (int q = 0; q < (1 << (G - 1)); q++) {
                const int m0 = ((q >> i) << (i + 1)) | (q & ((1 << i) - 1)), m1 = m0 | (1 << i);
                const uint32_t v0 = vbase | ((uint32_t)m0 << t0);
                const uint32_t j = ((v0 & ((1u << t) - 1)) << lo) | (ROWS ? 0u : (uint32_t)lw_base | lt);
                bool neg;
                const F w = ntt_twiddle(d_tw, j, lo + t, log_tw, levels, INV, neg);
                ntt_butterfly<F, DIT>(x[m0], x[m1], w, neg);
            }
        }
#pragma unroll
        for (int m = 0; m < (1 << G); m++) s[((vbase | ((uint32_t)m << t0)) << tl) | lt] = x[m];
    }
}

// A pass's k stages over the block's elements in shared memory, in register groups of up to R stages (ntt_group),
// a barrier after each: ntt_pass and ntt_pass_rev_in_place. The caller has loaded s and synchronised.
template <class F, bool DIT, int R, bool ROWS, bool INV>
__device__ __forceinline__ void ntt_stages_of(F* s, const F* __restrict__ d_tw, int n_elems, int k, int tl, int lo,
                                              uint64_t lw_base, int log_tw, int levels) {
    for (int done = 0; done < k;) {
        const int g = k - done < R ? k - done : R;
        const int t0 = DIT ? done : k - done - g;  // DIF: the top group first
        if (g >= 3 && R >= 3)
            ntt_group<F, DIT, (R >= 3 ? 3 : 1), ROWS, INV>(s, d_tw, n_elems, t0, tl, lo, lw_base, log_tw, levels);
        else if (g == 2 && R >= 2)
            ntt_group<F, DIT, (R >= 2 ? 2 : 1), ROWS, INV>(s, d_tw, n_elems, t0, tl, lo, lw_base, log_tw, levels);
        else
            ntt_group<F, DIT, 1, ROWS, INV>(s, d_tw, n_elems, t0, tl, lo, lw_base, log_tw, levels);
        done += g;
        __syncthreads();
    }
}

// The same with the direction from a kernel argument: one branch per block, uniform, to the forward's code or the
// inverse's (each compiled with its sign handling fixed: the forward's butterflies have no selects).
template <class F, bool DIT, int R, bool ROWS>
__device__ __forceinline__ void ntt_stages(F* s, const F* __restrict__ d_tw, int n_elems, int k, int tl, int lo,
                                           uint64_t lw_base, int log_tw, int inverse, int levels) {
    if (inverse)
        ntt_stages_of<F, DIT, R, ROWS, true>(s, d_tw, n_elems, k, tl, lo, lw_base, log_tw, levels);
    else
        ntt_stages_of<F, DIT, R, ROWS, false>(s, d_tw, n_elems, k, tl, lo, lw_base, log_tw, levels);
}

// Programmatic dependent launch (sm_90 and up; CurveKernels.launch's `dependent`, NttRunner.dependent_passes), where
// NTT_DEPENDENT_BUILT (launch.py): the stream's next kernel, launched as dependent, may place its blocks on the SMs
// this grid's last wave leaves free, and this grid, so launched, waits here until the kernel before it has finished
// and its writes are visible. A kernel launched the ordinary way passes straight through both.
// NTT_DEPENDENT_BUILT is a constexpr of the generated header, which a preprocessor #if would read as 0 (so it did until
// session 40): `if constexpr`.
__device__ __forceinline__ void ntt_after_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (NTT_DEPENDENT_BUILT != 0) {
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
        asm volatile("griddepcontrol.wait;" ::: "memory");
    }
#endif
}

__device__ __forceinline__ uint64_t bit_reverse(uint64_t i, int log_n) {
    return log_n == 0 ? 0 : (__brevll(i) >> (64 - log_n));
}

// One pass: k stages on bits [lo, lo + k), in groups of up to R stages held in registers (R = 1:
// one stage per barrier, the first version's structure; kept as a variant for the same-call
// comparison, bench/kernels_vs_sppark.py). Any block size works (the groups are grid-stride).
// Reads src, writes dst (the same array, or another: a block reads all its elements before it writes).
// REV (the last pass of a DIF transform, lo = 0): the pass that leaves the transform in natural order. Its
// block holds 2^tl rows, i = (r << (log_n - k - tl) | blockIdx.x) << k | v for r < 2^tl: rows whose reversed
// indices are consecutive, so that it stores element i at bit_reverse(i) (times `scale` if `scaled`) in runs
// of 2^tl, and reads runs of 2^k. src and dst must differ unless the block holds the whole transform.
template <class F, bool DIT, int R, bool REV>
__global__ void __launch_bounds__((1 << PASS_ELEMENTS_LOG) >> R, NTT_PASS_MIN_BLOCKS) ntt_pass(const F* src, F* dst, const F* __restrict__ d_tw, int lo, int k, int tl, int log_tw,
                         int inverse, int levels, int log_n, F scale, int scaled) {
    static_assert(!REV || !DIT, "the bit reversal rides on the last pass of a DIF transform");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    F* s = reinterpret_cast<F*>(smem_raw);
    const int n_elems = 1 << (k + tl);
    const uint32_t lw_blocks_log = REV ? 0 : lo - tl;  // REV: lo = 0, tl row bits
    const uint64_t hi = (uint64_t)blockIdx.x >> lw_blocks_log;
    const uint64_t lw_base = REV ? 0 : ((uint64_t)blockIdx.x & ((1ull << lw_blocks_log) - 1)) << tl;
    const uint32_t tl_mask = (1u << tl) - 1;
    auto global_index = [&](uint32_t e) -> uint64_t {
        const uint64_t v = e >> tl, lt = e & tl_mask;
        if (REV) return ((lt << (log_n - k - tl)) | blockIdx.x) << k | v;
        return (hi << (lo + k)) | (v << lo) | (lw_base | lt);
    };
    ntt_after_prior_grid();
    for (int e = threadIdx.x; e < n_elems; e += blockDim.x) s[e] = src[global_index(e)];
    __syncthreads();
    ntt_stages<F, DIT, R, REV>(s, d_tw, n_elems, k, tl, lo, lw_base, log_tw, inverse, levels);
    for (int e = threadIdx.x; e < n_elems; e += blockDim.x) {
        if (REV)
            dst[bit_reverse(global_index(e), log_n)] = scaled ? s[e] * scale : s[e];
        else
            dst[global_index(e)] = s[e];
    }
}


// The REV pass in place (NttRunner.ntt with natural_in_place): the last DIF pass, on the low k bits, of a
// transform of 2^log_n >= 2^2k. Index i = r << (log_n - k) | m << k | v, with r, v < 2^k and m the log_n - 2k
// middle bits, has bit_reverse(i) = rev(v) << (log_n - k) | rev(m) << k | rev(r): the 2^2k elements of middle m
// go to the places of those of rev(m). Block m holds both sets (one, where m is its own reverse; a block with
// rev(m) < m has nothing to do) as rows lt = set << k | r of 2^k values of v, runs the k stages on each row
// (ROWS: the rows are not low index bits, so the twiddles leave them out), and stores each element at its
// reversed index (times `scale` if `scaled`): every index a block writes is one it read, so the pass needs no
// scratch array, and the transform's working set stays its own 2^log_n elements (2^20 of them fit an H200's L2).
// Reads and writes are runs of 2^k elements. Shared memory: up to 2^(2k + 1) elements.
template <class F, int R>
__global__ void __launch_bounds__((1 << PASS_ELEMENTS_LOG) >> R, NTT_PASS_MIN_BLOCKS)
ntt_pass_rev_in_place(F* data, const F* __restrict__ d_tw, int k, int log_tw, int inverse, int levels, int log_n,
                      F scale, int scaled) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    F* s = reinterpret_cast<F*>(smem_raw);
    const int mid = log_n - 2 * k;
    const uint32_t m = blockIdx.x, mr = (uint32_t)bit_reverse(m, mid);
    if (mr < m) return;  // the block of mr holds both sets (uniform over the block: no barrier skipped)
    const int tl = k + (mr != m ? 1 : 0);  // row bits: the set and r
    const int n_elems = 1 << (k + tl);
    const uint32_t r_mask = (1u << k) - 1, tl_mask = (1u << tl) - 1;
    auto global_index = [&](uint32_t e) -> uint64_t {  // e = v << tl | lt, as ntt_group holds rows
        const uint64_t v = e >> tl, lt = e & tl_mask;
        return ((lt & r_mask) << (log_n - k)) | ((uint64_t)((lt >> k) ? mr : m) << k) | v;
    };
    for (int e = threadIdx.x; e < n_elems; e += blockDim.x) s[e] = data[global_index(e)];
    __syncthreads();
    ntt_stages<F, false, R, true>(s, d_tw, n_elems, k, tl, 0, 0, log_tw, inverse, levels);
    for (int e = threadIdx.x; e < n_elems; e += blockDim.x)
        data[bit_reverse(global_index(e), log_n)] = scaled ? s[e] * scale : s[e];
}

// The same pass with each thread's butterfly pair in registers for all k stages (NTT v3): between
// two stages a thread trades one element with a partner, by warp shuffle where the partner is in its
// warp (no barrier, no shared memory), else through shared memory (two buffers, one barrier a trade).
// ntt_pass moves both elements of every butterfly through shared memory each stage; sppark's passes
// trade this way. Same plan, grid and twiddles; blocks of 2^(k + tl - 1) threads.
// Thread b: bits [0, tl) are lt, bit tl + j (j < k - 1) a bit of v: before stage t, v_j for j < t and
// v_(j+1) for j >= t (DIF and DIT alike), so the pair differs in v_t and the twiddle's low t bits of v
// are (b >> tl) mod 2^t. DIF starts at t = k - 1, DIT at t = 0; going from stage t to the next, bit
// tl + min(t, next) of b changes meaning, and b trades with b ^ 2^(tl + min(t, next)): the thread with
// that bit 0 keeps x and takes its partner's x as y, the other keeps y and takes its partner's y as x.
template <class F>
__device__ __forceinline__ F ntt_trade(const F& send, int p, F* s, int& buf) {
    if (p < 5) {  // partner in this warp (a block under 32 threads: the lanes it has)
        const unsigned mask = blockDim.x >= 32 ? 0xffffffffu : (1u << blockDim.x) - 1;
        F r;
#pragma unroll
        for (int i = 0; i < F::N; i++) r.v[i] = __shfl_xor_sync(mask, send.v[i], 1 << p);
        return r;
    }
    F* sb = s + buf * blockDim.x;  // the other buffer was last read before the previous barrier
    sb[threadIdx.x] = send;
    __syncthreads();
    buf ^= 1;
    return sb[threadIdx.x ^ (1u << p)];
}

// INV: the inverse transform (the twiddle's folded sign, ntt_butterfly's neg) as a template argument, so the
// forward kernels carry no sign selects. Indices in 32 bits: transforms of up to 2^31 elements (NttRunner checks).
// FUSE (forward DIT only; flags NTT_FUSE_*, launch.py's IN_HEADER):
//   COSET: the transform evaluates on the odd coset g * domain (g = w_2n) with no elementwise scaling: split
//     F(c)[i] = sum_j c_j (s w_m^i)^j (a size-m block, shift s) into even and odd coefficients and the block's
//     butterfly takes the twiddle s w_m^i, its halves the shift s^2; at the block of 2h = m, s = g^(n/m) =
//     w_2m, so the stage of half-size h reads w_4h^(2j+1): the odd entries of the next level (levels layout:
//     tw[2h + 2j + 1]; compact: tw[(2j + 1) << (log_tw - 2 - log2 h)]), and the half-size-1 stage multiplies
//     by w_4 like the others. The top stage of a transform as large as the table (h = T/2) has no next level:
//     its twiddle is w_2h^j * w_2n (consts[2]). Every pass of such a transform carries the flag.
//   SCALE (with COSET): the half-size-1 stage also multiplies by n^-1 (x' = n^-1 x + n^-1 w_4 y, consts[0] and
//     consts[1]): the inverse before it is unscaled, so this gives the coset evaluations themselves.
//   QUOTIENT (with COSET, last pass): stores (q_a[i] q_b[i] - y_i) * consts[3] (the plain integer n^-1: the
//     Montgomery product leaves plain form) into q_a instead of y_i: snarkjs's quotient when q_a holds the
//     scaled coset of a and q_b, y the unscaled ones of b and c (n a b - n c, NttRunner.quotient).
// Each saves an elementwise pass over the array and the multiplications by g^j that one made.
// REVERSE (DIF, either direction; the natural-order transform's last pass, lo = 0, NttRunner.natural_kernel): as
//   ntt_pass's REV, the block holds 2^tl rows (bits [0, tl) of the thread), i = (lt << (log_n - k - tl) | blockIdx.x)
//   << k | v, whose reversed indices are consecutive; it reads q_b (the scratch array the pass before filled) and
//   stores each element at its bit-reversed index in d_data, times consts[0] (n^-1) with SCALE. log_n is
//   k + tl + log2 of the grid.
// Two blocks of 2^9 threads an SM (blocks of 2^10 elements): 64 registers at most.
template <class F, bool DIT, bool INV, int FUSE>
__global__ void __launch_bounds__(512, 2) ntt_pass_pairs(F* __restrict__ d_data, const F* __restrict__ d_tw, int lo, int k, int tl, int log_tw,
                               int levels, const F* __restrict__ consts, F* __restrict__ q_a, const F* __restrict__ q_b) {
    constexpr bool COSET = FUSE & NTT_FUSE_COSET, QUOTIENT = FUSE & NTT_FUSE_QUOTIENT, REVERSE = FUSE & NTT_FUSE_REVERSE;
    constexpr bool SCALE = (FUSE & NTT_FUSE_SCALE) && COSET, REVERSE_SCALE = (FUSE & NTT_FUSE_SCALE) && REVERSE;
    static_assert(FUSE == 0 || (DIT && !INV && COSET && !REVERSE) ||
                  (!DIT && REVERSE && (FUSE & ~(NTT_FUSE_REVERSE | NTT_FUSE_SCALE)) == 0),
                  "fusions of the forward DIT transform on the coset, or the DIF's store in natural order");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    F* s = reinterpret_cast<F*>(smem_raw);
    const uint32_t b = threadIdx.x, vb = b >> tl;
    const uint32_t lw_blocks_log = REVERSE ? 0 : lo - tl;  // REVERSE: lo = 0, tl row bits
    const uint32_t rows_log = REVERSE ? 31 - __clz(gridDim.x) : 0;  // log_n - k - tl
    const uint32_t hi = REVERSE ? ((b & ((1u << tl) - 1)) << rows_log) | blockIdx.x : blockIdx.x >> lw_blocks_log;
    // the twiddles' low bits (REVERSE: none, the rows are not index bits below the pass's)
    const uint32_t lw = REVERSE ? 0 : ((blockIdx.x & ((1u << lw_blocks_log) - 1)) << tl) | (b & ((1u << tl) - 1));
    const uint32_t base = (hi << (lo + k)) | lw;
    // DIF loads pairs that differ in v's top bit (b holds v_0..v_(k-2)), DIT pairs that differ in v_0
    const uint32_t in0 = base | ((DIT ? vb << 1 : vb) << lo);
    const uint32_t in1 = in0 | ((DIT ? 1u : 1u << (k - 1)) << lo);
    // a stage's twiddle, loaded one stage ahead: its latency (L2 or DRAM for the top stages' levels) hides
    // behind the trade and the butterfly before it, where a load at its own stage stalls every warp
    // of the block at once, right after the barrier
    auto twiddle = [&](int t, bool& neg) -> F {
        const int log_h = lo + t;
        const uint32_t j = ((vb & ((1u << t) - 1)) << lo) | lw;
        neg = false;
        if (SCALE && log_h == 0) return consts[1];  // n^-1 w_4 (a transform of 2^1 too: no product at use)
        if (!COSET || log_h + 2 > log_tw) return ntt_twiddle(d_tw, j, log_h, log_tw, levels, INV, neg);  // top: * w_2n at use
        return d_tw[levels ? (2u << log_h) + 2 * j + 1 : (2 * j + 1) << (log_tw - 2 - log_h)];
    };
    const int t_first = DIT ? 0 : k - 1;
    bool neg_next = false;
    F w_next = lo + t_first == 0 && !COSET ? F::one() : twiddle(t_first, neg_next);
    ntt_after_prior_grid();  // the twiddles and consts above are no earlier pass's output
    F x, y;
    if (DIT && tl == 0 && k > 1) {
        // no low bits to coalesce over (the bottom pass): adjacent pairs, so a warp's two loads would each span
        // twice the bytes it reads; load as DIF does (runs of consecutive elements) and hand the pairs out
        // through shared memory
        const uint32_t row = base | (b << lo);
        s[b] = d_data[row];
        s[b + blockDim.x] = d_data[row | (blockDim.x << lo)];
        __syncthreads();
        x = s[2 * b];
        y = s[2 * b + 1];
        __syncthreads();  // the trades' buffers are the staging's
    } else {
        const F* src = REVERSE ? q_b : d_data;
        x = src[in0];
        y = src[in1];
    }
    int buf = 0;
    for (int st = 0; st < k; st++) {
        const int t = DIT ? st : k - 1 - st;
        F w = w_next;
        const bool neg = neg_next;
        if (COSET && lo + t + 1 == log_tw && !(SCALE && lo + t == 0))
            w = w * consts[2];  // the coset's top stage: w_2h^j w_2n (no next level)
        if (st + 1 < k) {
            const int t_next = DIT ? t + 1 : t - 1;
            if (lo + t_next != 0 || COSET) w_next = twiddle(t_next, neg_next);
        }
        if (st > 0) {
            const int p = tl + (DIT ? t - 1 : t);
            const bool keeps_x = ((b >> p) & 1) == 0;
            // word selects: a ?: of references to x and y put both in local memory
            const F got = ntt_trade(ntt_select(keeps_x, y, x), p, s, buf);
            x = ntt_select(keeps_x, x, got);
            y = ntt_select(keeps_x, got, y);
        }
        if (lo + t == 0 && !COSET) {  // half-size 1: w = 1
            const F x0 = x;
            x = x0 + y;
            y = x0 - y;
        } else {
            if (SCALE && lo + t == 0) x = x * consts[0];
            ntt_butterfly<F, DIT>(x, y, w, INV && neg);
        }
    }
    // DIF ends on pairs that differ in v_0 (b holds v_1..v_(k-1)), DIT on pairs that differ in v's top bit
    const uint32_t out0 = base | ((DIT ? vb : vb << 1) << lo);
    const uint32_t out1 = out0 | ((DIT ? 1u << (k - 1) : 1u) << lo);
    if (QUOTIENT) {
        const F n_inv = consts[3];
        q_a[out0] = (q_a[out0] * q_b[out0] - x) * n_inv;
        q_a[out1] = (q_a[out1] * q_b[out1] - y) * n_inv;
    } else if (REVERSE) {
        const int log_n = k + tl + rows_log;
        d_data[bit_reverse(out0, log_n)] = REVERSE_SCALE ? x * consts[0] : x;
        d_data[bit_reverse(out1, log_n)] = REVERSE_SCALE ? y * consts[0] : y;
    } else {
        d_data[out0] = x;
        d_data[out1] = y;
    }
}

// In-place bit-reversal permutation, every element also multiplied by `scale` (Montgomery).
template <class F>
__global__ void ntt_bit_reverse(F* __restrict__ d_data, int log_n, F scale) {
    const uint64_t n = 1ull << log_n;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t j = bit_reverse(i, log_n);
        if (i < j) {
            const F a = d_data[i], b = d_data[j];
            d_data[i] = b * scale;
            d_data[j] = a * scale;
        } else if (i == j) {
            d_data[i] = d_data[i] * scale;
        }
    }
}

// The same permutation by tiles, for log_n >= 2 S (S = NTT_BR_TILE_LOG): index
// i = a << (log_n - S) | m << S | b (a, b < 2^S) goes to rev(b) << (log_n - S) | rev(m) << S | rev(a).
// Block m (the pair m, rev(m); the block with m > rev(m) has nothing to do) reads both tiles as rows
// of 2^S consecutive elements and writes each into the other's place, transposed through shared
// memory: every global access is a run of 2^S elements, where the element-wise kernel above reads
// one of its two elements scattered.
template <class F>
__global__ void ntt_bit_reverse_tiles(F* __restrict__ d_data, int log_n, F scale) {
    constexpr int S = NTT_BR_TILE_LOG, W = 1 << S, ROW = W + 1;  // a padded row: column reads spread over banks
    __shared__ __align__(16) unsigned char raw[2 * W * ROW * sizeof(F)];
    F* t0 = reinterpret_cast<F*>(raw);
    F* t1 = t0 + W * ROW;
    const uint64_t m = blockIdx.x, mr = bit_reverse(m, log_n - 2 * S);
    if (m > mr) return;
    const int hi_shift = log_n - S;
    for (int e = threadIdx.x; e < W * W; e += blockDim.x) {
        const int a = e >> S, b = e & (W - 1);
        t0[a * ROW + b] = d_data[((uint64_t)a << hi_shift) | (m << S) | b];
        if (mr != m) t1[a * ROW + b] = d_data[((uint64_t)a << hi_shift) | (mr << S) | b];
    }
    __syncthreads();
    for (int e = threadIdx.x; e < W * W; e += blockDim.x) {
        const int a2 = e >> S, b2 = e & (W - 1);  // destination row and column; the source is (rev b2, rev a2)
        const int src = (int)(__brev(b2) >> (32 - S)) * ROW + (int)(__brev(a2) >> (32 - S));
        d_data[((uint64_t)a2 << hi_shift) | (mr << S) | b2] = t0[src] * scale;
        if (mr != m) d_data[((uint64_t)a2 << hi_shift) | (m << S) | b2] = t1[src] * scale;
    }
}

// Coefficients in bit-reversed order (position pos holds coefficient rev(pos)) times n, after a
// DIF inverse pass: multiply by n^-1 g^rev(pos). g^j = g_lo[j mod 2^lo_bits] * g_hi[j >> lo_bits],
// n^-1 folded into g_lo (tables from the host, Montgomery form).
template <class F>
__global__ void ntt_coset_scale(F* __restrict__ d_data, int log_n, const F* __restrict__ d_g_lo,
                                const F* __restrict__ d_g_hi, int lo_bits) {
    const uint64_t n = 1ull << log_n;
    const uint64_t lo_mask = (1ull << lo_bits) - 1;
    for (uint64_t pos = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; pos < n; pos += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t j = bit_reverse(pos, log_n);
        d_data[pos] = d_data[pos] * (d_g_lo[j & lo_mask] * d_g_hi[j >> lo_bits]);
    }
}

// snarkjs's quotient on the odd coset, in place: a = A*B - C (Montgomery in), plain form out. In
// place so that H takes a's buffer: a partition's H phase holds three vectors of the domain, not four.
template <class F>
__global__ void ntt_quotient(F* __restrict__ d_a, const F* __restrict__ d_b, const F* __restrict__ d_c, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        d_a[i] = (d_a[i] * d_b[i] - d_c[i]).from_mont();
}

// The compact table, or the top level of a level table: tw[m] = w^m for m < count, w^m as the
// product of d_pow2[b] = w^(2^b) over m's set bits (no serial chain, every entry independent).
template <class F>
__global__ void ntt_twiddles(F* __restrict__ d_tw, uint64_t count, const F* __restrict__ d_pow2) {
    for (uint64_t m = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; m < count; m += (uint64_t)gridDim.x * blockDim.x) {
        F acc = F::one();
        for (int b = 0; (m >> b) != 0; b++)
            if ((m >> b) & 1) acc = acc * d_pow2[b];
        d_tw[m] = acc;
    }
}

// A level table's lower levels from its top one (h = 2^log_h): w_{2h'}^j = w_{2h}^(j h/h'), i.e.
// tw[h' + j] = tw[h + j h/h'].
template <class F>
__global__ void ntt_twiddle_lower(F* __restrict__ d_tw, int log_h) {
    const uint64_t h = 1ull << log_h;
    for (uint64_t t = 1 + blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; t < h; t += (uint64_t)gridDim.x * blockDim.x) {
        const int log_hl = 63 - __clzll(t);
        const uint64_t j = t - (1ull << log_hl);
        d_tw[t] = d_tw[h + (j << (log_h - log_hl))];
    }
}

// Elementwise conversions and products used around the transforms.
template <class F>
__global__ void ff_to_mont(F* __restrict__ d_out, const F* __restrict__ d_in, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        d_out[i] = d_in[i].to_mont();
}
template <class F>
__global__ void ff_from_mont(F* __restrict__ d_out, const F* __restrict__ d_in, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        d_out[i] = d_in[i].from_mont();
}

// snarkjs's c = a o b on the domain (Montgomery in and out), after the sparse products: the
// witness can leave the device before c's buffer is taken.
template <class F>
__global__ void ff_mul(F* __restrict__ d_out, const F* __restrict__ d_a, const F* __restrict__ d_b, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        d_out[i] = d_a[i] * d_b[i];
}
