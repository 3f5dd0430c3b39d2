"""R1csChecker against a per-constraint loop, on synthetic systems with empty combinations,
repeated coefficients and a constraint that fails late."""
from __future__ import annotations

import random

import numpy as np
import pytest

from pipeline.curves import BLS12_381, BN254
from pipeline.formats.types import LinearCombination, R1cs
from pipeline.groth16.r1cs_check import R1csChecker


def loop_check(r1cs, w):
    p = r1cs.curve.fr.modulus
    for i, lcs in enumerate(r1cs.constraints):
        a, b, c = (sum(v * w[s] for s, v in zip(lc.signals.tolist(), r1cs.curve.fr.ints_from_limbs(lc.values))) % p
                   for lc in lcs)
        if (a * b - c) % p:
            return i
    return None


def lc(curve, terms):
    signals = np.array([s for s, _ in terms], dtype=np.uint32)
    values = curve.fr.limbs_from_ints([v for _, v in terms]) if terms else np.zeros((0, curve.fr.limbs), np.uint64)
    return LinearCombination(signals, values)


def synthetic(curve, rng, n_wires=40, n_constraints=60):
    """Constraints x_i * x_j = x_k made true for a random witness, some with empty sides."""
    p = curve.fr.modulus
    w = [1] + [rng.randrange(p) for _ in range(n_wires - 1)]
    coefs = [1, p - 1, 2, rng.randrange(p)]  # few distinct values, as in real circuits
    constraints = []
    for _ in range(n_constraints):
        kind = rng.randrange(3)
        if kind == 0:  # empty A: 0 * B = 0, so C must be empty too
            constraints.append((lc(curve, []), lc(curve, [(rng.randrange(n_wires), rng.choice(coefs))]), lc(curve, [])))
            continue
        a = [(rng.randrange(n_wires), rng.choice(coefs)) for _ in range(rng.randrange(1, 4))]
        b = [(rng.randrange(n_wires), rng.choice(coefs)) for _ in range(rng.randrange(1, 4))]
        av = sum(v * w[s] for s, v in a) % p
        bv = sum(v * w[s] for s, v in b) % p
        # C = one coefficient on wire 0 (the constant 1) chosen so that the constraint holds
        constraints.append((lc(curve, a), lc(curve, b), lc(curve, [(0, av * bv % p)])))
    r1cs = R1cs(path="<synthetic>", curve=curve, n_wires=n_wires, n_pub_out=1, n_pub_in=0, n_prv_in=0,
                n_labels=n_wires, constraints=tuple(constraints))
    return r1cs, w


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_checker_agrees_with_the_loop(curve):
    rng = random.Random(curve.name)
    r1cs, w = synthetic(curve, rng)
    checker = R1csChecker(r1cs)
    values = curve.fr.limbs_from_ints(w)
    assert loop_check(r1cs, w) is None and checker.first_unsatisfied(values) is None
    for _ in range(10):
        bad = list(w)
        bad[rng.randrange(1, len(w))] = rng.randrange(curve.fr.modulus)
        assert checker.first_unsatisfied(curve.fr.limbs_from_ints(bad)) == loop_check(r1cs, bad)
    last = r1cs.constraints[-1]
    broken = R1cs(**{**r1cs.__dict__, "constraints": r1cs.constraints[:-1] + ((last[0], last[1], lc(curve, [(0, 5)])),)})
    assert R1csChecker(broken).first_unsatisfied(values) == (len(r1cs.constraints) - 1 if loop_check(broken, w) else None)


def test_a_system_without_constraints_is_satisfied_by_any_witness():
    r1cs = R1cs(path="<empty>", curve=BN254, n_wires=3, n_pub_out=0, n_pub_in=0, n_prv_in=0, n_labels=3,
                constraints=())
    assert R1csChecker(r1cs).first_unsatisfied(np.zeros((3, 4), dtype=np.uint64)) is None
