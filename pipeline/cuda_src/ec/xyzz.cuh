// Short Weierstrass points y^2 = x^3 + b (a = 0), templated over the coordinate field
// (mont_t for G1, fq2_t or fq2_pair_t for G2).
//
// affine_t: the storage form of key points, as snarkjs stores them (Montgomery x, y); the
//   point at infinity is all-zero, (0, 0) being on neither curve.
// xyzz_t: the accumulator, x = X/ZZ, y = Y/ZZZ with ZZ^3 = ZZZ^2; infinity is ZZ = 0.
//   Formulas: https://hyperelliptic.org/EFD/g1p/auto-shortw-xyzz.html (a = 0).
//
// Inlining: add_stored and add_affine (the MSM's inner loop) are inlined; add and the doublings are calls,
// which keeps each build unit's NVRTC time in seconds (bench/NOTES.md, build times).
#pragma once

template <class F>
struct affine_t {
    typedef affine_t<typename F::mem_t> mem_t;  // the form in memory (F::LANES threads hold one point)
    F x, y;
    static __device__ __forceinline__ affine_t load(const mem_t& m) { return {F::load(m.x), F::load(m.y)}; }
    __device__ __forceinline__ bool is_inf() const { return x.is_zero() && y.is_zero(); }
    // A point as loaded: its coordinates are canonical (the key's reader refuses any not below q, and every
    // kernel's store makes them so), so infinity is all words zero: one compare a coordinate, not is_inf's two.
    __device__ __forceinline__ bool is_inf_stored() const { return x.is_zero_stored() && y.is_zero_stored(); }
    __device__ __forceinline__ affine_t neg() const { return {x, -y}; }
};

template <class F>
struct xyzz_t {
    typedef xyzz_t<typename F::mem_t> mem_t;
    F X, Y, ZZ, ZZZ;

    static __device__ __forceinline__ xyzz_t load(const mem_t& m) {
        return {F::load(m.X), F::load(m.Y), F::load(m.ZZ), F::load(m.ZZZ)};
    }
    __device__ __forceinline__ void store(mem_t& m) const {
        X.store(m.X);
        Y.store(m.Y);
        ZZ.store(m.ZZ);
        ZZZ.store(m.ZZZ);
    }

    static __device__ __forceinline__ xyzz_t inf() { return {F::zero(), F::zero(), F::zero(), F::zero()}; }
    __device__ __forceinline__ bool is_inf() const { return ZZ.is_zero(); }
    __device__ __forceinline__ xyzz_t neg() const { return {X, -Y, ZZ, ZZZ}; }

    // dbl-2008-s-1: 2M + 5S (+ 2M for ZZ3, ZZZ3). y = 0 would give V = 0, i.e. infinity.
    __device__ __noinline__ xyzz_t dbl() const {
        if (is_inf()) return *this;
        const F U = Y.dbl();           // U = 2*Y1
        const F V = U.sqr();           // V = U^2
        const F W = U * V;             // W = U*V
        const F S = X * V;             // S = X1*V
        const F XX = X.sqr();
        const F M = XX.dbl() + XX;     // M = 3*X1^2 (a = 0)
        xyzz_t r;
        r.X = M.sqr() - S.dbl();       // X3 = M^2 - 2*S
        r.Y = F::dot(M, S - r.X, -W, Y);  // Y3 = M*(S - X3) - W*Y1, one reduction (F::dot)
        r.ZZ = V * ZZ;                 // ZZ3 = V*ZZ1
        r.ZZZ = W * ZZZ;               // ZZZ3 = W*ZZZ1
        return r;
    }

    // mdbl-2008-s-1 for an affine input (ZZ1 = ZZZ1 = 1): 1M + 3S + 2M.
    static __device__ __noinline__ xyzz_t dbl_affine(const affine_t<F>& p) {
        const F U = p.y.dbl();
        const F V = U.sqr();
        const F W = U * V;
        const F S = p.x * V;
        const F XX = p.x.sqr();
        const F M = XX.dbl() + XX;
        xyzz_t r;
        r.X = M.sqr() - S.dbl();
        r.Y = F::dot(M, S - r.X, -W, p.y);
        r.ZZ = V;
        r.ZZZ = W;
        return r;
    }

    // 2 q for the point stored at m, negated if neg: add_stored's rare doubling. Loading q again here lets the
    // caller's q die after S2; kept for a call, it was spilled to the stack on every entry (NOTES, session 40).
    static __device__ __noinline__ xyzz_t dbl_stored(const typename affine_t<F>::mem_t& m, bool neg) {
        const typename affine_t<F>::mem_t* at = &m;
        asm("" : "+l"(at));  // an address the compiler cannot trace to the caller's load, so it cannot forward q
        const affine_t<F> q = affine_t<F>::load(*at);
        return dbl_affine(neg ? q.neg() : q);
    }

    // madd-2008-s: this + affine q, 8M + 2S. Handles infinity on either side, P == Q and P == -Q.
    __device__ __forceinline__ void add_affine(const affine_t<F>& q) {
        if (q.is_inf()) return;
        if (!add_finite_affine(q)) *this = dbl_affine(q);
    }

    // this += the point stored at m, negated if neg (the MSM's inner loop): infinity, tested on the stored words
    // (is_inf_stored), is skipped before any arithmetic.
    __device__ __forceinline__ void add_stored(const typename affine_t<F>::mem_t& m, bool neg) {
        const affine_t<F> q = affine_t<F>::load(m);
        if (q.is_inf_stored()) return;
        if (!add_finite_affine(neg ? q.neg() : q)) *this = dbl_stored(m, neg);
    }

    // this + q for a finite q. Where q == this it returns false and leaves this as it was: the caller doubles q.
    __device__ __forceinline__ bool add_finite_affine(const affine_t<F>& q) {
        if (is_inf()) {
            *this = {q.x, q.y, F::one(), F::one()};
            return true;
        }
        const F U2 = q.x * ZZ;        // U2 = X2*ZZ1
        const F S2 = q.y * ZZZ;       // S2 = Y2*ZZZ1
        const F P = U2 - X;           // P = U2 - X1
        const F R = S2 - Y;           // R = S2 - Y1
        if (P.is_zero()) {
            if (R.is_zero()) return false;
            *this = inf();            // q == -this
            return true;
        }
        const F PP = P.sqr();         // PP = P^2
        const F PPP = P * PP;         // PPP = P*PP
        const F Q = X * PP;           // Q = X1*PP
        X = R.sqr() - PPP - Q.dbl();  // X3 = R^2 - PPP - 2*Q
        Y = F::dot(R, Q - X, -Y, PPP);  // Y3 = R*(Q - X3) - Y1*PPP, one reduction (F::dot)
        ZZ = ZZ * PP;                 // ZZ3 = ZZ1*PP
        ZZZ = ZZZ * PPP;              // ZZZ3 = ZZZ1*PPP
        return true;
    }

    // add-2008-s: this + q, 12M + 2S. Handles infinity, P == Q and P == -Q.
    __device__ __noinline__ void add(const xyzz_t& q) {
        if (q.is_inf()) return;
        if (is_inf()) { *this = q; return; }
        const F U1 = X * q.ZZ;        // U1 = X1*ZZ2
        const F S1 = Y * q.ZZZ;       // S1 = Y1*ZZZ2
        const F U2 = q.X * ZZ;        // U2 = X2*ZZ1
        const F S2 = q.Y * ZZZ;       // S2 = Y2*ZZZ1
        const F P = U2 - U1;          // P = U2 - U1
        const F R = S2 - S1;          // R = S2 - S1
        if (P.is_zero()) {
            *this = R.is_zero() ? dbl() : inf();
            return;
        }
        const F PP = P.sqr();         // PP = P^2
        const F PPP = P * PP;         // PPP = P*PP
        const F Q = U1 * PP;          // Q = U1*PP
        X = R.sqr() - PPP - Q.dbl();  // X3 = R^2 - PPP - 2*Q
        Y = F::dot(R, Q - X, -S1, PPP);  // Y3 = R*(Q - X3) - S1*PPP, one reduction (F::dot)
        ZZ = ZZ * q.ZZ * PP;          // ZZ3 = ZZ1*ZZ2*PP
        ZZZ = ZZZ * q.ZZZ * PPP;      // ZZZ3 = ZZZ1*ZZZ2*PPP
    }

    // k * this for a small unsigned k (double-and-add, MSB first).
    __device__ xyzz_t mul_u32(uint32_t k) const {
        xyzz_t acc = inf();
        if (k == 0) return acc;
        for (int bit = 31 - __clz(k); bit >= 0; bit--) {
            acc = acc.dbl();
            if ((k >> bit) & 1) acc.add(*this);
        }
        return acc;
    }
};
