"""A key's A/B coefficients as uint16 indices into a table of their distinct values
(formats/coeff_table.py): exact on every value, across matrices and worker chunks, for values the
sample misses and values seen once; None past the table's limit; an empty key; a real key's
coefficients."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.formats.zkey import read_zkey
from pipeline.formats import coeff_table
from pipeline.formats.coeff_table import MAX_TABLE, coefficient_table, fingerprint
from pipeline.keycache.csr import csr_matrices
from tests.conftest import fixture_dir


def distinct_values(rng, k: int, limbs: int = 4) -> np.ndarray:
    return np.unique(rng.integers(0, 2**63, size=(k, limbs), dtype=np.uint64), axis=0)


def assert_exact(result, matrices) -> None:
    assert result is not None
    assert len(result.indices) == len(matrices)
    for m, idx in zip(matrices, result.indices):
        assert idx.dtype == np.uint16 and idx.shape == (m.shape[0],)
        assert np.array_equal(result.table[idx], m)
    assert len(np.unique(result.table, axis=0)) == len(result.table)  # no value twice


def test_few_distinct_values_over_two_matrices_and_several_chunks(monkeypatch):
    monkeypatch.setattr(coeff_table, "CHUNK_ROWS", 1000)
    rng = np.random.default_rng(1)
    values = distinct_values(rng, 271)
    a = values[rng.integers(0, 271, size=5000)]
    b = values[rng.integers(0, 200, size=3333)]
    result = coefficient_table([a, b])
    assert_exact(result, [a, b])
    assert len(result.table) == len(np.unique(np.concatenate([a, b]), axis=0))


def test_values_the_sample_misses_and_values_seen_once_are_added(monkeypatch):
    monkeypatch.setattr(coeff_table, "SAMPLE_ROWS", 8)  # a stride of ~1000 rows: most values unsampled
    rng = np.random.default_rng(2)
    values = distinct_values(rng, 500)
    a = values[rng.integers(0, 3, size=9000)]
    a[[5, 777, 8998]] = values[[400, 401, 402]]  # once each, off the sample's stride
    result = coefficient_table([a])
    assert_exact(result, [a])
    assert len(result.table) == 6


def test_more_distinct_values_than_the_limit_give_none():
    rng = np.random.default_rng(3)
    values = distinct_values(rng, 40)
    assert coefficient_table([values], max_size=39) is None
    assert_exact(coefficient_table([values], max_size=40), [values])
    assert MAX_TABLE == 1 << 16  # the indices are uint16


def test_an_empty_key_and_an_empty_matrix():
    empty = np.zeros((0, 4), np.uint64)
    result = coefficient_table([empty, empty])
    assert result.table.shape == (0, 4) and [len(i) for i in result.indices] == [0, 0]
    one = np.ones((3, 4), np.uint64)
    assert_exact(coefficient_table([empty, one]), [empty, one])


def test_the_fingerprint_depends_on_every_limb():
    rows = np.zeros((5, 4), np.uint64)
    for i in range(4):
        rows[i + 1, i] = 1
    assert len(np.unique(fingerprint(rows))) == 5


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_a_real_keys_coefficients(curve_name):
    zkey = read_zkey(fixture_dir(curve_name, "chain_2e10") / "circuit_final.zkey")
    a, b = csr_matrices(zkey)
    result = coefficient_table([a.vals, b.vals])
    assert_exact(result, [a.vals, b.vals])
    assert result.nbytes < (a.vals.nbytes + b.vals.nbytes) / 4
