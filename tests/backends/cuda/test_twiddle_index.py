"""The one-table twiddle layout (ntt.twiddle_index, read by ntt_pass): every stage of every transform
size, both directions, reads w_{2h}^(+-j) from the forward table of a larger domain."""
from __future__ import annotations

import pytest

from pipeline.backends.cuda.ntt import table_bytes, twiddle_count, twiddle_index
from pipeline.curves import BLS12_381, BN254


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
@pytest.mark.parametrize("log_tw", [1, 2, 5, 9])
def test_every_stage_reads_its_root_power(curve, log_tw):
    fr, p = curve.fr, curve.fr.modulus
    w_t = fr.root_of_unity(log_tw)
    table = [pow(w_t, m, p) for m in range(twiddle_count(log_tw))]
    for log_h in range(log_tw):
        w = fr.root_of_unity(log_h + 1)
        for inverse in (False, True):
            for j in range(1 << log_h):
                index, negate = twiddle_index(j, log_h, log_tw, inverse)
                assert 0 <= index < len(table)
                got = (p - table[index]) % p if negate else table[index]
                assert got == pow(w, -j if inverse else j, p), (log_h, j, inverse)


def test_the_table_is_a_quarter_of_two_full_ones():
    # 2^26 BLS12-381: 1 GiB of twiddles (two full tables were 4 GiB) plus the coset's 2 x 2^13.
    assert table_bytes(26, 32) == (1 << 30) + 2 * (1 << 13) * 32
    assert twiddle_count(0) == 1 and twiddle_count(1) == 1
