"""The order a key's sections are offered fixed-base tables for its witnesses (placement.table_order): the most
milliseconds saved a byte first, from the witness's 0 / 1 / other counts."""
from __future__ import annotations

import pytest

from pipeline.backends.placement import (FIXED_BASE_ORDER, G2_TABLE_MS_A_BYTE, RANDOM_SCALAR_DIGITS, table_order,
                                         table_share)
from pipeline.backends.protocol import WitnessShape

N = 1 << 20
SEED = ("h", "b2", "a", "b1", "c")


def shape(ones: float, others: float) -> WitnessShape:
    return WitnessShape(N, int(N * ones), int(N * others), 4, 1, 3)


def test_no_witness_yet_and_a_random_one_keep_the_random_witness_order():
    assert table_order(None, split=False) == table_order(None, split=True) == FIXED_BASE_ORDER
    for split in (False, True):
        assert table_order(shape(0, 1), split) == FIXED_BASE_ORDER
    assert table_order(WitnessShape(0, 0, 0, 0, 0, 0), split=True) == FIXED_BASE_ORDER  # no signals: nothing known


def test_a_seed_witness_puts_h_first_split_or_not():
    """95% of the values in {0, 1}: with the split B2's table serves only its 5% of other values; without it a 1 is
    still one digit of Pippenger's, 1/13 of a random value's."""
    seed = shape(0.475, 0.05)
    assert table_share(seed, split=True) == pytest.approx(0.05, abs=1e-6)
    assert table_share(seed, split=False) == pytest.approx(0.05 + 0.475 / RANDOM_SCALAR_DIGITS, abs=1e-6)
    assert table_order(seed, split=True) == table_order(seed, split=False) == SEED


def test_b2_leads_while_its_share_of_pippenger_work_outweighs_h():
    """B2 before H exactly while G2_TABLE_MS_A_BYTE x the witness's Pippenger share exceeds H's 1; the G1 witness
    sections stay behind H (ties keep FIXED_BASE_ORDER)."""
    edge = 1 / G2_TABLE_MS_A_BYTE
    assert table_order(shape(0, edge + 0.01), split=True) == FIXED_BASE_ORDER
    assert table_order(shape(0, edge - 0.01), split=True) == SEED
    assert table_order(shape(0.2, 0.8), split=True)[:2] == ("b2", "h")
    assert table_order(shape(0.5, 0.0), split=True) == SEED  # all 0 or 1: only H's table pays
