"""The twiddle layouts (ntt.twiddle_index, read by ntt_pass): every stage of every transform size,
both directions, reads w_{2h}^(+-j) from one forward table of a larger domain, level or compact; the
odd coset's transform (ntt.coset_twiddle_index) reads w_{4h}^(2j+1) from the same table."""
from __future__ import annotations

import pytest

from pipeline.backends.cuda.ntt import COSET_CONSTS, coset_twiddle_index, table_bytes, twiddle_count, twiddle_index
from pipeline.curves import BLS12_381, BN254
from tests.backends.cuda.test_ntt_pass_model import twiddle_table


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
@pytest.mark.parametrize("log_tw", [1, 2, 5, 9])
@pytest.mark.parametrize("compact", [False, True], ids=["levels", "compact"])
def test_every_stage_reads_its_root_power(curve, log_tw, compact):
    fr, p = curve.fr, curve.fr.modulus
    table = twiddle_table(fr, log_tw, compact)
    for log_h in range(log_tw):
        w = fr.root_of_unity(log_h + 1)
        for inverse in (False, True):
            for j in range(1 << log_h):
                index, negate = twiddle_index(j, log_h, log_tw, inverse, compact)
                assert 0 <= index < len(table)
                got = (p - table[index]) % p if negate else table[index]
                assert got == pow(w, -j if inverse else j, p), (log_h, j, inverse)


@pytest.mark.parametrize("log_tw", [1, 2, 5, 9])
@pytest.mark.parametrize("compact", [False, True], ids=["levels", "compact"])
def test_the_coset_stages_read_odd_powers_of_the_next_level(log_tw, compact):
    """Every stage but a table-sized transform's top one (None: its twiddle is a product)."""
    fr, p = BLS12_381.fr, BLS12_381.fr.modulus
    table = twiddle_table(fr, log_tw, compact)
    for log_h in range(log_tw):
        w = fr.root_of_unity(log_h + 2)
        for j in range(1 << log_h):
            index = coset_twiddle_index(j, log_h, log_tw, compact)
            if log_h == log_tw - 1:
                assert index is None
            else:
                assert 0 <= index < len(table) and table[index] == pow(w, 2 * j + 1, p), (log_h, j)


def test_the_tables_are_a_half_and_a_quarter_of_a_level_table_each_way():
    # 2^26 BLS12-381: 2 GiB (levels) or 1 GiB (compact) of twiddles, where a level table per
    # direction made 4 GiB; plus the coset's 2 x 2^13 entries and its constants.
    coset = (2 * (1 << 13) + COSET_CONSTS) * 32
    assert table_bytes(26, 32) == (2 << 30) + coset and table_bytes(26, 32, compact=True) == (1 << 30) + coset
    assert twiddle_count(0, True) == 1 and twiddle_count(1, True) == 1 and twiddle_count(0, False) == 2
