"""The fused witness pass (staging copy, 0 / 1 / other counts, below-r check) counts what
WitnessShape.of counts, copies exactly, and rejects every value at or above r with its signal
named, on both curves; the reference prover rejects such a witness too."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipeline.backends.cpu import CpuBackend
from pipeline.backends.protocol import WitnessShape
from pipeline.curves import curve_by_name
from pipeline.formats.binfile import ROWS_PER_TASK
from pipeline.formats.types import Witness
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey
from pipeline.groth16 import WitnessOutOfRange, prove
from pipeline.groth16.witness_scan import BLOCK_ROWS, check_below_r, scan_witness
from tests.conftest import CURVE_NAMES, fixture_dir


def limbs_of(value: int) -> np.ndarray:
    return np.array([(value >> (64 * i)) & (2**64 - 1) for i in range(4)], dtype=np.uint64)


def bit_heavy_witness(curve_name: str, n: int, seed: int = 1) -> np.ndarray:
    """Half zeros and ones, the rest full-width values below r (top limb up to r's: the slow path's edge)."""
    rng = np.random.default_rng(seed)
    r = curve_by_name(curve_name).fr.modulus
    w = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    w[:, 3] %= np.uint64(r >> 192)  # below r's top limb, so below r
    pick = rng.random(n)
    w[pick < 0.5] = 0
    w[pick < 0.25, 0] = 1
    w[0] = limbs_of(1)
    w[7] = limbs_of(r - 1)  # top limb equal to r's: compared in full, accepted
    return w


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
def test_counts_and_copy_match_the_plain_pass_across_blocks_and_tasks(curve_name):
    n = ROWS_PER_TASK + 3 * BLOCK_ROWS + 5  # two tasks, a partial last block
    w = bit_heavy_witness(curve_name, n)
    out = np.zeros_like(w)
    shape = scan_witness(w, curve_by_name(curve_name).fr.modulus, 3, "w.wtns", out=out)
    assert shape == WitnessShape.of(w, 3)
    assert np.array_equal(out, w)
    assert scan_witness(w, None, 3, "unchecked") == shape  # no modulus: counts only


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
@pytest.mark.parametrize("excess", [0, 1, "max"])
@pytest.mark.parametrize("index", [2, BLOCK_ROWS + 1, ROWS_PER_TASK + 9])
def test_values_at_or_above_r_are_rejected_with_signal_and_value(curve_name, excess, index):
    r = curve_by_name(curve_name).fr.modulus
    value = 2**256 - 1 if excess == "max" else r + excess
    w = bit_heavy_witness(curve_name, ROWS_PER_TASK + BLOCK_ROWS)
    w[index] = limbs_of(value)
    w[-1] = limbs_of(r)  # a later bad value: the first one is named
    with pytest.raises(WitnessOutOfRange, match=rf"^part 3/1: signal {index} is {value}, not below .* r = {r}"):
        scan_witness(w, r, 2, "part 3/1", out=np.empty_like(w))
    with pytest.raises(WitnessOutOfRange, match=rf"signal {index} is {value},"):
        check_below_r(Witness("w.wtns", curve_by_name(curve_name), w))


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
def test_r_minus_one_everywhere_is_accepted(curve_name):
    r = curve_by_name(curve_name).fr.modulus
    w = np.tile(limbs_of(r - 1), (BLOCK_ROWS + 3, 1))
    shape = scan_witness(w, r, 1, "w")
    assert (shape.n_one, shape.n_other, shape.prefix_other) == (0, BLOCK_ROWS + 3, 1)
    check_below_r(Witness("w", curve_by_name(curve_name), w))


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
def test_the_reference_prover_rejects_a_value_equal_to_r_before_any_work(curve_name):
    folder = fixture_dir(curve_name, "multiplier")
    zkey = read_zkey(str(folder / "circuit_final.zkey"))
    witness = read_wtns(str(folder / "witness.wtns"))
    values = witness.values.copy()
    values[2] = limbs_of(int.from_bytes(values[2].tobytes(), "little") + zkey.curve.fr.modulus)  # same residue
    bad = dataclasses.replace(witness, path="plus_r.wtns", values=values)
    backend = CpuBackend()
    with pytest.raises(WitnessOutOfRange, match="plus_r.wtns: signal 2 is"):
        prove(backend, backend.load_key(zkey), zkey, bad)
