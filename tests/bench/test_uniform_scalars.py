"""bench.common.uniform_below_modulus: the scalars that reach the MSM's fold (kernel_ab --uniform)."""
import numpy as np
import pytest

from bench.common import random_below, uniform_below_modulus
from pipeline.curves import curve_by_name


@pytest.mark.parametrize("name", ["bls12381", "bn128"])
def test_uniform_scalars_are_below_r_and_cover_its_upper_half(name):
    fr = curve_by_name(name).fr
    words = uniform_below_modulus(np.random.default_rng(5), 20000, fr)
    values = fr.ints_from_limbs(words)
    assert len(values) == 20000 and max(values) < fr.modulus
    upper = sum(v > (fr.modulus - 1) // 2 for v in values) / len(values)
    assert 0.47 < upper < 0.53  # uniform: half past (r - 1) / 2
    top = fr.modulus.bit_length() - 1
    assert sum(v >> top for v in values) / len(values) > 0.3  # the top bit is reached,
    bench_values = fr.ints_from_limbs(random_below(np.random.default_rng(5), 2000, fr.limbs, fr.bits))
    assert not any(v >> top for v in bench_values)  # which the benches' "random" scalars never reach


def test_uniform_scalars_reject_the_values_at_and_past_r():
    fr = curve_by_name("bls12381").fr

    class Draws:  # the first draws are r and 2^255 - 1 (past r), then small values
        def __init__(self):
            self.calls = 0

        def integers(self, lo, hi, size, dtype, endpoint):
            self.calls += 1
            out = np.ones(size, dtype=dtype)
            if self.calls == 1:
                out[0] = fr.limbs_from_ints([fr.modulus])[0]
                out[1] = fr.limbs_from_ints([2**255 - 1])[0]
            return out

    draws = Draws()
    values = fr.ints_from_limbs(uniform_below_modulus(draws, 3, fr))
    assert draws.calls == 2 and all(v < fr.modulus for v in values)
