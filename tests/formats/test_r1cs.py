"""read_r1cs agrees with snarkjs's export; r1cs_is_satisfied finds the first broken constraint."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.curves import BN254
from pipeline.formats.errors import FormatError
from pipeline.formats.r1cs import read_r1cs
from pipeline.groth16.r1cs_check import r1cs_is_satisfied
from pipeline.formats.wtns import read_wtns

from tests.formats.conftest import (CASE_IDS, CASES, CURVES, cut_points, fixture_file, patch_sections, section,
                                    snarkjs_export, u32)

EXPORT_CASES = [(c, n) for c in CURVES for n in ("multiplier", "bits", "poseidon2")]


@pytest.mark.parametrize("curve, name", EXPORT_CASES, ids=[f"{c}-{n}" for c, n in EXPORT_CASES])
def test_reader_agrees_with_snarkjs_r1cs_export_json(request, curve, name):
    path = fixture_file(curve, name, "circuit.r1cs")
    ref = snarkjs_export(request, "r1cs", path)
    r1cs = read_r1cs(path)
    assert r1cs.curve is CURVES[curve] and str(r1cs.curve.fr.modulus) == ref["prime"]
    assert (r1cs.n_wires, r1cs.n_pub_out, r1cs.n_pub_in, r1cs.n_prv_in, r1cs.n_labels, len(r1cs.constraints)) == (
        ref["nVars"], ref["nOutputs"], ref["nPubInputs"], ref["nPrvInputs"], ref["nLabels"], ref["nConstraints"])
    fr = r1cs.curve.fr
    ours = [[{str(s): str(v) for s, v in zip(lc.signals.tolist(), fr.ints_from_limbs(lc.values))} for lc in c]
            for c in r1cs.constraints]
    assert ours == ref["constraints"]
    assert r1cs.n_public == ref["nOutputs"] + ref["nPubInputs"]


@pytest.mark.parametrize("curve, name", CASES, ids=CASE_IDS)
def test_fixture_witness_satisfies_its_r1cs(curve, name):
    r1cs = read_r1cs(fixture_file(curve, name, "circuit.r1cs"))
    witness = read_wtns(fixture_file(curve, name, "witness.wtns"))
    assert r1cs_is_satisfied(r1cs, witness) is None
    assert r1cs_is_satisfied(r1cs, witness.values) is None


def _brute_force_first_unsatisfied(r1cs, values):
    fr = r1cs.curve.fr
    w = fr.ints_from_limbs(values)
    for i, lcs in enumerate(r1cs.constraints):
        a, b, c = (sum(v * w[s] for s, v in zip(lc.signals.tolist(), fr.ints_from_limbs(lc.values))) % fr.modulus
                   for lc in lcs)
        if (a * b - c) % fr.modulus:
            return i
    return None


@pytest.mark.parametrize("curve", list(CURVES))
@pytest.mark.parametrize("wire", [1, 5, 100, 300])
def test_tampered_witness_reports_the_first_unsatisfied_constraint(curve, wire):
    r1cs = read_r1cs(fixture_file(curve, "bits", "circuit.r1cs"))
    values = read_wtns(fixture_file(curve, "bits", "witness.wtns")).values.copy()
    values[wire, 0] ^= 1
    expected = _brute_force_first_unsatisfied(r1cs, values)
    assert expected is not None
    assert r1cs_is_satisfied(r1cs, values) == expected


def test_witness_of_the_wrong_length_or_curve_is_refused():
    r1cs = read_r1cs(fixture_file("bn128", "multiplier", "circuit.r1cs"))
    with pytest.raises(ValueError, match="witness has 3 values, the r1cs 4 wires"):
        r1cs_is_satisfied(r1cs, np.zeros((3, 4), dtype=np.uint64))
    with pytest.raises(ValueError, match="witness is over bls12381"):
        r1cs_is_satisfied(r1cs, read_wtns(fixture_file("bls12381", "multiplier", "witness.wtns")))


def _multiplier():
    return fixture_file("bn128", "multiplier", "circuit.r1cs").read_bytes()


def test_wire_id_out_of_range_is_rejected(write_tmp):
    data = _multiplier()
    body = bytearray(section(data, 2))
    body[4:8] = u32(4)  # constraint 0, A, first term's wire := nWires
    with pytest.raises(FormatError, match=r"section 2 \(constraints\): constraint 0 A: wire 4 is not below nWires = 4"):
        read_r1cs(write_tmp(patch_sections(data, {2: bytes(body)})))


def test_coefficient_not_below_the_prime_is_rejected(write_tmp):
    data = _multiplier()
    body = bytearray(section(data, 2))
    # constraint 0: A (1 term, 40 bytes), then B's count and first term: wire at 44, value at 48
    body[48:80] = BN254.fr.modulus.to_bytes(32, "little")
    with pytest.raises(FormatError, match="constraint 0 B: a coefficient is not below the prime"):
        read_r1cs(write_tmp(patch_sections(data, {2: bytes(body)})))


@pytest.mark.parametrize("delta", [-1, +1, +36])
def test_constraints_section_of_the_wrong_size_is_rejected(write_tmp, delta):
    data = _multiplier()
    body = section(data, 2)
    body = body[:delta] if delta < 0 else body + bytes(delta)
    with pytest.raises(FormatError, match=r"section 2 \(constraints\)"):
        read_r1cs(write_tmp(patch_sections(data, {2: body})))


def test_huge_constraint_count_is_rejected_before_allocating(write_tmp):
    data = _multiplier()
    header = bytearray(section(data, 1))
    header[-4:] = u32(2**32 - 1)
    with pytest.raises(FormatError, match="4294967295 constraints need at least"):
        read_r1cs(write_tmp(patch_sections(data, {1: bytes(header)})))


def test_inconsistent_wire_counts_are_rejected(write_tmp):
    data = _multiplier()
    header = bytearray(section(data, 1))
    header[36:40] = u32(2)  # nWires := 2 < 1 + 1 + 0 + 2
    with pytest.raises(FormatError, match=r"1 \+ nPubOut \+ nPubIn \+ nPrvIn = 4 exceeds nWires = 2"):
        read_r1cs(write_tmp(patch_sections(data, {1: bytes(header)})))


def test_label_map_of_the_wrong_size_is_rejected(write_tmp):
    data = _multiplier()
    with pytest.raises(FormatError, match=r"section 3 \(wire to label map\): expected 32 bytes"):
        read_r1cs(write_tmp(patch_sections(data, {3: section(data, 3)[:-8]})))


def test_wrong_magic_is_rejected(write_tmp):
    with pytest.raises(FormatError, match="not a r1cs file"):
        read_r1cs(write_tmp(b"wtns" + _multiplier()[4:]))


@pytest.mark.parametrize("curve", list(CURVES))
def test_truncated_r1cs_is_rejected_at_many_cut_points(curve, write_tmp):
    data = fixture_file(curve, "bits", "circuit.r1cs").read_bytes()
    for cut in cut_points(data, count=100):
        with pytest.raises(FormatError):
            read_r1cs(write_tmp(data[:cut]))
