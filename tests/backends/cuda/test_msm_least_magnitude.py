"""The digit kernels' scalar fold (msm/pippenger.cuh, msm_least_magnitude), modelled word for word on the
CPU: any 256-bit scalar becomes its least magnitude mod r and a sign, and the plan's spare window
(ceil((bits + 1) / c) windows) then never takes a carry. The GPU tests check the kernels against the
reference (tests/gpu/test_msm.py, unreduced scalars)."""
from __future__ import annotations

import random

import pytest

from pipeline.backends.cuda.msm import plan_msm
from pipeline.curves import BLS12_381, BN254

from tests.backends.cuda.test_msm_binned_sort import NO_BUCKET, signed_keys

MASK = (1 << 32) - 1


def least_magnitude(s: int, r: int) -> tuple[int, bool]:
    """msm_least_magnitude over 8 words: subtract r while s >= r, then r - s where that is smaller."""
    words = [(s >> (32 * k)) & MASK for k in range(8)]
    mod = [(r >> (32 * k)) & MASK for k in range(8)]

    def sub(a, b):  # (a - b word by word, the borrow out)
        out, borrow = [], 0
        for x, y in zip(a, b):
            t = x - y - borrow
            out.append(t & MASK)
            borrow = 1 if t < 0 else 0
        return out, borrow

    while True:
        t, borrow = sub(words, mod)
        if borrow:
            break
        words = t
    d, _ = sub(mod, words)
    _, flip = sub(d, words)
    words = d if flip else words
    return sum(w << (32 * k) for k, w in enumerate(words)), bool(flip)


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=["bn128", "bls12381"])
def test_the_fold_keeps_the_residue_and_leaves_the_spare_window_empty(curve):
    r, bits = curve.fr.modulus, curve.fr.bits
    rng = random.Random(curve.name)
    edges = [0, 1, (r - 1) // 2, (r + 1) // 2, r - 1, r, r + 1, 2 * r - 1, 2**255, 2**256 - 1]
    for s in edges + [rng.randrange(2**256) for _ in range(300)] + [rng.randrange(r) for _ in range(300)]:
        mag, flip = least_magnitude(s, r)
        assert mag <= (r - 1) // 2 and (-mag if flip else mag) % r == s % r
        assert flip == (s % r > (r - 1) // 2)
        for c in range(2, 23):
            n_windows = plan_msm(1 << 10, bits, c=c).n_windows
            keys = signed_keys(mag, c, n_windows)
            if (n_windows - 1) * c >= bits:  # the windows below the spare one hold a magnitude and its carry
                assert keys[-1][0] == NO_BUCKET
            value = sum((-1 if neg else 1) * ((key % (1 << (c - 1))) + 1) << (w * c)
                        for w, (key, neg) in enumerate(keys) if key != NO_BUCKET)
            assert value == mag


def test_uniform_scalars_carried_into_bls12381s_spare_window_at_c_15_and_17():
    """Why the fold pays: without it a scalar's top window at c = 15 or 17 holds r's top bits (past half the
    window), and ~45% of uniform scalars carried into the spare window, one addition more each."""
    r, bits = BLS12_381.fr.modulus, BLS12_381.fr.bits
    rng = random.Random(7)
    scalars = [rng.randrange(r) for _ in range(2000)]
    for c in (15, 17):
        n_windows = plan_msm(1 << 10, bits, c=c).n_windows
        unfolded = sum(signed_keys(s, c, n_windows)[-1][0] != NO_BUCKET for s in scalars) / len(scalars)
        folded = sum(signed_keys(least_magnitude(s, r)[0], c, n_windows)[-1][0] != NO_BUCKET for s in scalars)
        assert 0.35 < unfolded < 0.55 and folded == 0
