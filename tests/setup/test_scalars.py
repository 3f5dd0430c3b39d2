"""The scalar model of a development key: Lagrange values, per-signal evaluations, and the H claim
(sum_i p(w'^(2i+1)) H_i = p(tau) / delta for a satisfying witness) checked in the field, no curve."""
from __future__ import annotations

import random

import pytest

from pipeline.backends.cpu.ntt import quotient_on_coset
from pipeline.curves import BN254
from pipeline.formats.wtns import read_wtns
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
    circuit, secrets, _ = dev_key(curve_name, name)
    fr, p = circuit.curve.fr, circuit.curve.fr.modulus
    s = key_scalars(circuit, secrets)
    w = fr.ints_from_limbs(read_wtns(str(fixture_dir(curve_name, name) / "witness.wtns")).values)
    # a, b, c on the domain, the way the prover computes them (c = C w for a satisfying witness)
    n = circuit.domain_size
    abc = []
    for m, extra in ((circuit.a, True), (circuit.b, False), (circuit.c, False)):
        vals = [0] * n
        for row, sig, coef in zip(m.rows.tolist(), m.signals.tolist(), fr.ints_from_limbs(m.values)):
            vals[row] = (vals[row] + coef * w[sig]) % p
        if extra:
            for j in range(circuit.n_public + 1):
                vals[circuit.n_constraints + j] = (vals[circuit.n_constraints + j] + w[j]) % p
        abc.append(vals)
    h = quotient_on_coset(fr, abc[0], abc[1], [x * y % p for x, y in zip(abc[0], abc[1])])
    # p(tau) from the per-signal evaluations: a(tau) = sum_j w_j u_j and so on
    u, v = s.a, s.b
    first_private = circuit.n_public + 1
    a_tau = sum(x * y for x, y in zip(w, u)) % p
    b_tau = sum(x * y for x, y in zip(w, v)) % p
    # sum_j w_j (beta u_j + alpha v_j + w_j): IC scaled by gamma, C by delta
    combo = (sum(x * y for x, y in zip(w[:first_private], s.ic)) * secrets.gamma
             + sum(x * y for x, y in zip(w[first_private:], s.c)) * secrets.delta) % p
    c_tau = (combo - secrets.beta * a_tau - secrets.alpha * b_tau) % p
    assert sum(x * y for x, y in zip(h, s.h)) * secrets.delta % p == (a_tau * b_tau - c_tau) % p


def test_key_scalars_of_a_curve_fixture_have_the_key_sizes():
    circuit, secrets, zkey = dev_key("bls12381", "chain_2e8")
    s = key_scalars(circuit, secrets)
    assert (len(s.a), len(s.b), len(s.ic), len(s.c), len(s.h)) == (
        zkey.n_vars, zkey.n_vars, zkey.n_public + 1, zkey.n_vars - zkey.n_public - 1, zkey.domain_size)
