"""The scalar model of a development key: Lagrange values, per-signal evaluations, and the H claim
(sum_i p(w'^(2i+1)) H_i = p(tau) / delta for a satisfying witness) checked in the field, no curve."""
from __future__ import annotations

import random

import pytest

from pipeline.backends.cpu.ntt import quotient_on_coset
from pipeline.curves import BN254
from pipeline.formats.wtns import read_wtns
from pipeline.setup.circuit import coefficient_ints, terms
from pipeline.setup.scalars import batch_inverse, key_scalars, lagrange_scale, lagrange_values
from tests.conftest import fixture_dir
from tests.setup.conftest import dev_key


@pytest.mark.parametrize("log_n", [0, 1, 3, 6])
def test_lagrange_basis_sums_to_one_and_interpolates_x(curve, log_n):
    fr, p = curve.fr, curve.fr.modulus
    tau = random.Random(log_n).randrange(2, p)
    values = lagrange_values(fr, log_n, tau, 1 << log_n)
    w = fr.root_of_unity(log_n)
    assert sum(values) % p == 1  # interpolates the constant 1
    assert sum(v * pow(w, k, p) for k, v in enumerate(values)) % p == (tau if log_n else 1)  # and x (n > 1)


def test_strided_values_are_the_subsequence_of_the_full_basis(curve):
    fr = curve.fr
    tau = 123456789
    full = lagrange_values(fr, 5, tau, 32)
    assert lagrange_values(fr, 5, tau, 16, start=1, stride=2) == full[1::2]
    assert lagrange_values(fr, 5, tau, 3, start=7, stride=5) == [full[7], full[12], full[17]]
    scale = 5 * lagrange_scale(fr, 5, tau)
    assert lagrange_values(fr, 5, tau, 4, scale=scale) == [5 * v % fr.modulus for v in full[:4]]


def test_batch_inverse_maps_zero_to_zero_and_inverts_the_rest():
    p = BN254.fr.modulus
    values = [0, 1, p - 1, 2, 0, 12345]
    assert batch_inverse(p, values) == [0, 1, p - 1, pow(2, -1, p), 0, pow(12345, -1, p)]


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
@pytest.mark.parametrize("name", ["multiplier", "chain_2e8"])
def test_h_scalars_turn_the_odd_coset_quotient_into_p_at_tau(curve_name, name):
    r1cs, secrets, _ = dev_key(curve_name, name)
    fr, p = r1cs.curve.fr, r1cs.curve.fr.modulus
    s = key_scalars(r1cs, secrets)
    w = fr.ints_from_limbs(read_wtns(str(fixture_dir(curve_name, name) / "witness.wtns")).values)
    # a, b, c on the domain, the way the prover computes them (c = C w for a satisfying witness)
    coefficients = coefficient_ints(r1cs)
    abc = []
    for m in r1cs.matrices:
        vals = [0] * r1cs.domain_size
        rows, signals, codes = terms(m)
        for row, sig, code in zip(rows.tolist(), signals.tolist(), codes.tolist()):
            vals[row] = (vals[row] + coefficients[code] * w[sig]) % p
        abc.append(vals)
    for j in range(r1cs.n_public + 1):  # the public rows of A
        abc[0][r1cs.n_constraints + j] = w[j]
    h = quotient_on_coset(fr, abc[0], abc[1], [x * y % p for x, y in zip(abc[0], abc[1])])
    # p(tau) from the per-signal evaluations: a(tau) = sum_j w_j u_j and so on
    first_private = r1cs.n_public + 1
    a_tau = sum(x * y for x, y in zip(w, s.a)) % p
    b_tau = sum(x * y for x, y in zip(w, s.b)) % p
    # sum_j w_j (beta u_j + alpha v_j + w_j): IC scaled by gamma, C by delta
    combo = (sum(x * y for x, y in zip(w[:first_private], s.ic)) * secrets.gamma
             + sum(x * y for x, y in zip(w[first_private:], s.c)) * secrets.delta) % p
    c_tau = (combo - secrets.beta * a_tau - secrets.alpha * b_tau) % p
    assert sum(x * y for x, y in zip(h, s.h)) * secrets.delta % p == (a_tau * b_tau - c_tau) % p


def test_key_scalars_of_a_fixture_have_the_key_sizes():
    r1cs, secrets, zkey = dev_key("bls12381", "chain_2e8")
    s = key_scalars(r1cs, secrets)
    assert (len(s.a), len(s.b), len(s.ic), len(s.c), len(s.h)) == (
        zkey.n_vars, zkey.n_vars, zkey.n_public + 1, zkey.n_vars - zkey.n_public - 1, zkey.domain_size)
