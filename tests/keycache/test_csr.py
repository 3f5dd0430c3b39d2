"""The parallel counting sort gives exactly the CSR of the old single-threaded argsort."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pipeline.formats.types import MATRIX_A, MATRIX_B
from pipeline.formats.zkey import read_zkey
from pipeline.keycache import csr as csr_module
from pipeline.keycache.csr import coefficient_order, csr_matrices, non_decreasing, row_order
from bench.key_prepare import argsort_csr  # the implementation this module replaced: the oracle and the baseline
from tests.conftest import CIRCUITS, fixture_dir


def random_coefficients(rng, domain_size: int, count: int, sorted_per_matrix: bool = False, limbs: int = 4):
    matrix = rng.integers(0, 2, size=count, dtype=np.uint32)
    # few distinct rows near the ends and many repeats: empty rows, long rows, duplicate (row, col) pairs
    constraint = rng.choice(np.array([0, 1, domain_size // 2, domain_size - 1], dtype=np.uint32), size=count)
    constraint[: count // 2] = rng.integers(0, domain_size, size=count // 2, dtype=np.uint32)
    signal = rng.integers(0, 7, size=count, dtype=np.uint32)
    if sorted_per_matrix:
        constraint = np.sort(constraint)
    return SimpleNamespace(domain_size=domain_size, coeff_matrix=matrix, coeff_constraint=constraint,
                           coeff_signal=signal, csr=None,
                           coeff_values_stored=rng.integers(0, 2**64, size=(count, limbs), dtype=np.uint64))


def assert_same_csr(zkey) -> None:
    for matrix, got in zip((MATRIX_A, MATRIX_B), csr_matrices(zkey)):
        row_ptr, cols, vals = argsort_csr(zkey, matrix)
        assert got.row_ptr.dtype == np.uint32 and got.cols.dtype == np.uint32 and got.vals.dtype == np.uint64
        assert np.array_equal(got.row_ptr, row_ptr)
        assert np.array_equal(got.cols, cols)
        assert np.array_equal(got.vals, vals)


@pytest.mark.parametrize("domain_size, count", [(4, 0), (4, 1), (8, 50), (1 << 16, 5000), (1 << 17, 200_000),
                                                 (1 << 18, 3000)])
@pytest.mark.parametrize("sorted_per_matrix", [False, True], ids=["any order", "snarkjs order"])
def test_csr_equals_the_argsort_csr_on_random_coefficients(domain_size, count, sorted_per_matrix):
    rng = np.random.default_rng(domain_size * 7 + count)
    assert_same_csr(random_coefficients(rng, domain_size, count, sorted_per_matrix))


def test_csr_equals_the_argsort_csr_across_many_chunks_and_buckets(monkeypatch):
    monkeypatch.setattr(csr_module, "CHUNK_ENTRIES", 1000)  # dozens of chunks and bucket groups
    rng = np.random.default_rng(3)
    assert_same_csr(random_coefficients(rng, 1 << 19, 60_000))


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
@pytest.mark.parametrize("circuit", CIRCUITS)
def test_csr_equals_the_argsort_csr_on_snarkjs_keys(curve_name, circuit):
    assert_same_csr(read_zkey(fixture_dir(curve_name, circuit) / "circuit_final.zkey"))


def test_row_order_is_a_stable_sort_with_row_pointers():
    rng = np.random.default_rng(5)
    for n_rows, n in [(1, 5), (3, 0), (1 << 16, 10_000), ((1 << 16) + 1, 70_000), (5 << 16, 100_000)]:
        rows = rng.integers(0, n_rows, size=n, dtype=np.uint32)
        order, row_ptr = row_order(rows, n_rows)
        assert np.array_equal(order, np.argsort(rows, kind="stable"))
        assert np.array_equal(np.diff(row_ptr), np.bincount(rows, minlength=n_rows))


def test_snarkjs_order_takes_the_split_only_path_and_random_order_the_sort(monkeypatch):
    calls = []
    monkeypatch.setattr(csr_module, "row_order", lambda *a: calls.append(a) or row_order(*a))
    rng = np.random.default_rng(9)
    for sorted_per_matrix in (True, False):
        key = random_coefficients(rng, 1 << 10, 5000, sorted_per_matrix)
        coefficient_order(key.coeff_matrix, key.coeff_constraint, key.domain_size)
        assert len(calls) == (0 if sorted_per_matrix else 1)


def test_non_decreasing_sees_a_drop_at_a_chunk_boundary(monkeypatch):
    monkeypatch.setattr(csr_module, "CHUNK_ENTRIES", 4)
    values = np.arange(12, dtype=np.uint32)
    assert non_decreasing(values)
    values[4] = 2  # first entry of the second chunk is below the last of the first
    assert not non_decreasing(values)


def test_prepared_csr_is_returned_as_is():
    prepared = (object(), object())
    assert csr_matrices(SimpleNamespace(csr=prepared)) is prepared
