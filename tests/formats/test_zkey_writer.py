"""write_zkey reproduces snarkjs's bytes; write_random_zkey makes well-formed keys of any size."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.curves import BLS12_381, BN254
from pipeline.formats.binfile import read_layout
from pipeline.formats.zkey import read_zkey
from pipeline.formats.zkey_writer import random_limbs, write_random_zkey, write_zkey

from tests.formats.conftest import CASE_IDS, CASES, fixture_file


@pytest.mark.parametrize("curve, name", CASES, ids=CASE_IDS)
def test_read_then_write_is_byte_identical(curve, name, tmp_path):
    path = fixture_file(curve, name, "circuit_final.zkey")
    zkey = read_zkey(path)
    contributions = read_layout(path, "zkey", 1).read_bytes(10)
    write_zkey(tmp_path / "k.zkey", zkey, contributions)
    assert (tmp_path / "k.zkey").read_bytes() == path.read_bytes()


def test_written_key_without_transcript_reads_back_equal(tmp_path):
    zkey = read_zkey(fixture_file("bls12381", "bits", "circuit_final.zkey"))
    write_zkey(tmp_path / "k.zkey", zkey)
    again = read_zkey(tmp_path / "k.zkey")
    for name in ("coeff_matrix", "coeff_constraint", "coeff_signal", "coeff_values_stored", "points_a",
                 "points_b1", "points_b2", "points_c", "points_h"):
        np.testing.assert_array_equal(getattr(again, name), getattr(zkey, name))
    assert again.ic == zkey.ic and again.delta2 == zkey.delta2


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_random_key_is_well_formed(curve, tmp_path):
    write_random_zkey(tmp_path / "r.zkey", curve, n_vars=100, domain_size=128, n_public=3, seed=1)
    zkey = read_zkey(tmp_path / "r.zkey")
    assert (zkey.curve, zkey.n_vars, zkey.n_public, zkey.domain_size) == (curve, 100, 3, 128)
    assert zkey.coeff_matrix.shape == (2 * (128 - 4),)
    assert zkey.points_c.shape[0] == 96 and zkey.points_b2.shape == (100, 2, 2, curve.fq.limbs)


def test_random_key_rejects_impossible_sizes(tmp_path):
    with pytest.raises(ValueError):
        write_random_zkey(tmp_path / "r.zkey", BN254, n_vars=10, domain_size=12)
    with pytest.raises(ValueError):
        write_random_zkey(tmp_path / "r.zkey", BN254, n_vars=1, domain_size=16, n_public=1)


def test_random_limbs_are_below_the_modulus():
    q = BLS12_381.fq.modulus
    arr = random_limbs(np.random.default_rng(0), (1000, BLS12_381.fq.limbs), q)
    assert max(BLS12_381.fq.ints_from_limbs(arr)) < q
