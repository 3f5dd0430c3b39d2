"""generate_circuit: witnesses that satisfy every constraint, a domain of exactly 2^k, the shape
asked for, the same circuit for the same seed, and a clear error for each bad parameter."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.curves import BLS12_381, BN254
from pipeline.errors import BadInput
from pipeline.groth16.r1cs_check import R1csChecker
from pipeline.synth import CircuitShape, circuit_stats, generate_circuit
from pipeline.synth.check import first_unsatisfied

SHAPES = {
    "default": {},
    "no-round-constants": {"round_constants": 0},
    "all-free-bits": {"select_fraction": 0.0},
    "all-packed": {"pack_fraction": 1.0, "pack_bits": 32},
    "deep-narrow": {"mul_depth": 16, "mul_terms": 2, "operand_window": 0},
    "bit-light": {"bit_fraction": 0.5, "one_fraction": 0.9},
}


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_witness_satisfies_every_constraint(curve, shape):
    r1cs, witness = generate_circuit(10, 3, curve, seed=11, **shape)
    assert first_unsatisfied(r1cs, witness) is None
    assert R1csChecker(r1cs.to_r1cs()).first_unsatisfied(witness) is None


@pytest.mark.parametrize("log_constraints,n_public", [(10, 0), (10, 1), (12, 40), (13, 7)])
def test_domain_is_exactly_two_to_the_k(log_constraints, n_public):
    r1cs, witness = generate_circuit(log_constraints, n_public, "bn128")
    assert r1cs.n_constraints + r1cs.n_public + 1 == 1 << log_constraints
    assert r1cs.domain_size == 1 << log_constraints
    assert (r1cs.n_pub_out, r1cs.n_pub_in, r1cs.n_wires) == (0, n_public, r1cs.n_constraints + 1)
    assert len(witness) == r1cs.n_wires and witness.values[0].tolist() == [1, 0, 0, 0]


def test_public_inputs_are_full_width_packings(curve):
    r1cs, witness = generate_circuit(12, 5, curve, seed=3)
    pack_bits = curve.fr.modulus.bit_length() - 1
    assert r1cs.a.row_lengths(0, 5).tolist() == [pack_bits] * 5  # rows 0..4 define wires 1..5
    assert r1cs.c.signals[r1cs.c.starts[:5]].tolist() == [1, 2, 3, 4, 5]
    assert witness.values[1:6, 1:].any(axis=1).all()  # not bits


def test_default_shape_is_poreplike_within_tolerance(curve):
    r1cs, witness = generate_circuit(15, 4, curve, seed=1)
    stats = circuit_stats(r1cs, witness)
    assert stats["bit_fraction"] == pytest.approx(0.95, abs=0.002)
    assert stats["one_fraction_of_bits"] == pytest.approx(0.5, abs=0.02)
    assert 2.0 <= stats["terms_a"] <= 3.0 and 2.0 <= stats["terms_b"] <= 3.0
    assert stats["terms_c"] == pytest.approx(1.0, abs=0.01)


def test_shape_fractions_follow_the_parameters():
    r1cs, witness = generate_circuit(14, 1, "bls12381", seed=2, bit_fraction=0.8, one_fraction=0.25,
                                     select_fraction=0.0)
    stats = circuit_stats(r1cs, witness)
    assert stats["bit_fraction"] == pytest.approx(0.8, abs=0.003)
    assert stats["one_fraction_of_bits"] == pytest.approx(0.25, abs=0.02)


def test_same_seed_same_circuit_other_seed_another():
    first = generate_circuit(11, 2, "bls12381", seed=7)
    again = generate_circuit(11, 2, "bls12381", seed=7)
    other = generate_circuit(11, 2, "bls12381", seed=8)

    def arrays(circuit):
        r1cs, witness = circuit
        return [r1cs.coeff_table, witness.values] + [a for m in r1cs.matrices for a in (m.starts, m.signals, m.coeffs)]

    assert all(np.array_equal(x, y) for x, y in zip(arrays(first), arrays(again)))
    assert not np.array_equal(first[1].values, other[1].values)


def test_shape_object_and_keyword_fields_combine():
    shape = CircuitShape(mul_terms=3)
    r1cs, _ = generate_circuit(10, 1, BN254, shape, round_constants=0)
    mul_rows = np.flatnonzero((r1cs.c.row_lengths() == 1) & (r1cs.b.row_lengths() == 3))
    assert mul_rows.shape[0] > 0
    assert "mul_terms=3" in shape.describe()


@pytest.mark.parametrize("args,fields,message", [
    ((9, 1), {}, "log_constraints must be an integer in \\[10, 28\\], got 9"),
    ((29, 1), {}, "log_constraints must be an integer"),
    ((10, -1), {}, "n_public must lie in \\[0, "),
    ((10, 400), {}, "n_public must lie in \\[0, 256\\] for 2\\^10 constraints, got 400"),
    ((10, 200), {}, "leaves 41 full-width wires; the 200 public input"),
    ((10, 1), {"bit_fraction": 1.5}, "bit_fraction must lie in \\[0, 1\\], got 1.5"),
    ((10, 1), {"one_fraction": -0.1}, "one_fraction must lie in"),
    ((10, 1), {"bit_fraction": 1.0}, "leaves 0 full-width wires"),
    ((10, 1), {"bit_fraction": 0.1}, "fewer than one packing"),
    ((10, 1), {"select_fraction": 1.0}, "leaves 0 free bits"),
    ((10, 1), {"pack_bits": 0}, "pack_bits must lie in \\[1, 253\\] on bn128"),
    ((10, 1), {"pack_bits": 254}, "pack_bits must lie in \\[1, 253\\]"),
    ((10, 1), {"mul_terms": 0}, "mul_terms must lie in \\[1, 255\\]"),
    ((10, 1), {"mul_depth": 0}, "mul_depth must lie in"),
    ((10, 1), {"round_constants": -1}, "round_constants must lie in"),
    ((10, 1), {"operand_window": -5}, "operand_window must be >= 0"),
])
def test_bad_parameters_are_rejected_by_name(args, fields, message):
    with pytest.raises(BadInput, match=message):
        generate_circuit(*args, "bn128", **fields)


def test_unknown_curve_and_unknown_shape_field_are_rejected():
    with pytest.raises(BadInput, match="unknown curve 'bn256'"):
        generate_circuit(10, 1, "bn256")
    with pytest.raises(TypeError, match="bit_fractoin"):
        generate_circuit(10, 1, "bn128", bit_fractoin=0.9)


def test_bls12381_packs_one_bit_more_than_bn254():
    assert CircuitShape().pack_bits_for(BLS12_381) == 254 and CircuitShape().pack_bits_for(BN254) == 253


def test_widest_mul_rows_keep_their_length_and_hold(curve):
    r1cs, witness = generate_circuit(13, 1, curve, seed=12, mul_terms=255, pack_fraction=0.9, mul_depth=1)
    assert r1cs.a.row_lengths().max() == 256 and r1cs.b.row_lengths().max() == 256  # 255 wires + constant
    assert first_unsatisfied(r1cs, witness) is None
