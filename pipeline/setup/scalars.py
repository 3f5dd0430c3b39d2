"""What every point of a development key holds, as scalars (Python ints): the golden model.

With L_k the Lagrange basis of the n-point domain (n = domain_size, w its generator),

    L_k(tau) = (tau^n - 1) / n * w^k / (tau - w^k)

and for each signal j (the public rows (n_constraints + j, j, 1) added to A for j <= n_public):

    u_j = sum_c A[c][j] L_c(tau),   v_j = sum_c B[c][j] L_c(tau),   w_j = sum_c C[c][j] L_c(tau)

the key's sections hold, times the generator of their group:

    A_j = u_j            B1_j = v_j (G1)        B2_j = v_j (G2)
    IC_j = (beta u_j + alpha v_j + w_j) / gamma      j = 0 .. n_public
    C_j  = (beta u_j + alpha v_j + w_j) / delta      j = n_public + 1 .. n_vars - 1
    H_i  = L'_(2i+1)(tau) / delta                    i = 0 .. n - 1

where L' is the Lagrange basis of the 2n-point domain (generator w' = w_2n, w'^2 = w). Why H is
that: snarkjs's prover evaluates p = a*b - c (degree <= 2n - 2) on the odd 2n-th roots
w'^(2i+1) and takes sum_i p(w'^(2i+1)) H_i, with no division by the vanishing polynomial Z.
Interpolating p on the 2n-point domain, p(tau) = sum_k p(w'^k) L'_k(tau); for a satisfying
witness p vanishes on the even roots w'^(2i) = w^i (the n-point domain), so
p(tau) = sum_i p(w'^(2i+1)) L'_(2i+1)(tau), and sum_i p_i H_i = p(tau) / delta = h(tau) Z(tau) / delta,
which is exactly the H term of Groth16's C. snarkjs's ``zkey new`` copies these points from the
ptau's Lagrange section for 2n at odd indices; its contributions divide them by delta.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..curves.field import ScalarField
from ..formats.compact_r1cs import CompactR1cs
from .circuit import coefficient_ints, log_domain_size, terms
from .dev_secrets import DevSecrets


@dataclass(frozen=True)
class KeyScalars:
    a: list[int]  # n_vars
    b: list[int]  # n_vars (B1 and B2)
    ic: list[int]  # n_public + 1
    c: list[int]  # n_vars - n_public - 1
    h: list[int]  # domain_size


def batch_inverse(p: int, values: list[int]) -> list[int]:
    """Inverses with one modular inversion (Montgomery's trick); zero maps to zero."""
    prefix, acc = [], 1
    for v in values:
        prefix.append(acc)
        if v:
            acc = acc * v % p
    inv = pow(acc, -1, p)
    out = [0] * len(values)
    for i in range(len(values) - 1, -1, -1):
        v = values[i]
        if v:
            out[i] = inv * prefix[i] % p
            inv = inv * v % p
    return out


def lagrange_scale(fr: ScalarField, log_size: int, tau: int) -> int:
    """(tau^N - 1) / N for the domain of N = 2^log_size points."""
    p, size = fr.modulus, 1 << log_size
    return (pow(tau, size, p) - 1) * pow(size, -1, p) % p


def lagrange_values(fr: ScalarField, log_size: int, tau: int, count: int, start: int = 0, stride: int = 1,
                    scale: int | None = None) -> list[int]:
    """scale * w^k / (tau - w^k) for k = start + stride * i, i < count (w generating 2^log_size points).
    ``scale`` defaults to ``lagrange_scale`` (then these are L_k(tau)); a zero denominator gives 0."""
    p = fr.modulus
    if scale is None:
        scale = lagrange_scale(fr, log_size, tau)
    w = fr.root_of_unity(log_size)
    step, wk = pow(w, stride, p), pow(w, start, p)
    powers = []
    for _ in range(count):
        powers.append(wk)
        wk = wk * step % p
    inverses = batch_inverse(p, [(tau - x) % p for x in powers])
    return [scale * x % p * inv % p for x, inv in zip(powers, inverses)]


def evaluate_signals(r1cs: CompactR1cs, lagrange: list[int]) -> tuple[list[int], list[int], list[int]]:
    """u, v, w of every signal (u with the public rows)."""
    p = r1cs.curve.fr.modulus
    coefficients = coefficient_ints(r1cs)
    out = []
    for m in r1cs.matrices:
        acc = [0] * r1cs.n_wires
        rows, signals, codes = terms(m)
        for row, signal, code in zip(rows.tolist(), signals.tolist(), codes.tolist()):
            acc[signal] = (acc[signal] + coefficients[code] * lagrange[row]) % p
        out.append(acc)
    for j in range(r1cs.n_public + 1):  # the public rows (n_constraints + j, j, 1) of A
        out[0][j] = (out[0][j] + lagrange[r1cs.n_constraints + j]) % p
    return out[0], out[1], out[2]


def combine(p: int, u: list[int], v: list[int], w: list[int], alpha: int, beta: int, scale: int) -> list[int]:
    """(beta u + alpha v + w) * scale, elementwise."""
    return [(beta * x + alpha * y + z) % p * scale % p for x, y, z in zip(u, v, w)]


def key_scalars(r1cs: CompactR1cs, secrets: DevSecrets) -> KeyScalars:
    fr = r1cs.curve.fr
    p, n, log_n = fr.modulus, r1cs.domain_size, log_domain_size(r1cs)
    secrets.check(r1cs.curve, n)
    lagrange = lagrange_values(fr, log_n, secrets.tau, n)
    u, v, w = evaluate_signals(r1cs, lagrange)
    first_private = r1cs.n_public + 1
    gamma_inv, delta_inv = pow(secrets.gamma, -1, p), pow(secrets.delta, -1, p)
    ic = combine(p, u[:first_private], v[:first_private], w[:first_private], secrets.alpha, secrets.beta, gamma_inv)
    c = combine(p, u[first_private:], v[first_private:], w[first_private:], secrets.alpha, secrets.beta, delta_inv)
    h_scale = lagrange_scale(fr, log_n + 1, secrets.tau) * delta_inv % p
    h = lagrange_values(fr, log_n + 1, secrets.tau, n, start=1, stride=2, scale=h_scale)
    return KeyScalars(a=u, b=v, ic=ic, c=c, h=h)
