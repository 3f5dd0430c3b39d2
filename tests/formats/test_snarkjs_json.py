"""snarkjs JSON: our vk equals snarkjs's on every field (vk_alphabeta_12 included), proofs and
public signals round-trip, and malformed input is a FormatError naming the field."""
from __future__ import annotations

import copy
import json

import orjson
import pytest

from pipeline.curves import BLS12_381, BN254
from pipeline.formats.errors import FormatError
from pipeline.formats.snarkjs_json import (proof_from_json, proof_to_json, public_from_json, read_proof, read_public,
                                           read_verification_key, verification_key_from_json,
                                           verification_key_to_json, write_proof, write_public,
                                           write_verification_key)
from pipeline.formats.types import ProofPoints, VerificationKey
from pipeline.formats.zkey import read_zkey

from tests.formats.conftest import CASE_IDS, CASES, CURVES, fixture_file


@pytest.mark.parametrize("curve, name", CASES, ids=CASE_IDS)
def test_vk_json_from_the_zkey_equals_snarkjs_vk_json(curve, name, tmp_path):
    zkey = read_zkey(fixture_file(curve, name, "circuit_final.zkey"))
    expected = json.loads(fixture_file(curve, name, "vk.json").read_text())
    write_verification_key(tmp_path / "vk.json", VerificationKey.from_zkey(zkey))
    ours = json.loads((tmp_path / "vk.json").read_text())
    assert list(ours) == list(expected)  # same fields, same order
    for key in expected:
        assert ours[key] == expected[key], key


@pytest.mark.parametrize("curve", list(CURVES))
def test_vk_json_reads_back_to_the_zkey_vk(curve):
    path = fixture_file(curve, "bits", "vk.json")
    vk = read_verification_key(path, check_alphabeta=True)
    zkey = read_zkey(fixture_file(curve, "bits", "circuit_final.zkey"))
    assert vk == VerificationKey.from_zkey(zkey)
    assert verification_key_to_json(vk, with_alphabeta=False) == {
        k: v for k, v in json.loads(path.read_text()).items() if k != "vk_alphabeta_12"}


def test_wrong_alphabeta_is_caught_only_when_asked():
    obj = json.loads(fixture_file("bn128", "multiplier", "vk.json").read_text())
    obj["vk_alphabeta_12"][0][0][0] = str(int(obj["vk_alphabeta_12"][0][0][0]) + 1)
    verification_key_from_json(obj)
    with pytest.raises(FormatError, match="vk_alphabeta_12: is not e\\(vk_alpha_1, vk_beta_2\\)"):
        verification_key_from_json(obj, check_alphabeta=True)


@pytest.mark.parametrize("curve, name", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("proof_file", ["proof.json", "proof_bad.json"])
def test_snarkjs_proofs_read_and_write_back_identically(curve, name, proof_file, tmp_path):
    path = fixture_file(curve, name, proof_file)
    proof = read_proof(path)
    assert isinstance(proof, ProofPoints)
    pi_a, pi_b, pi_c = proof
    assert proof_to_json(CURVES[curve], pi_a, pi_b, pi_c) == json.loads(path.read_text())
    write_proof(tmp_path / "p.json", _ProofLike(curve, *proof))
    assert read_proof(tmp_path / "p.json", CURVES[curve]) == proof


class _ProofLike:
    def __init__(self, curve_name, pi_a, pi_b, pi_c):
        self.curve_name, self.pi_a, self.pi_b, self.pi_c = curve_name, pi_a, pi_b, pi_c


@pytest.mark.parametrize("curve, name", CASES, ids=CASE_IDS)
def test_public_signals_round_trip(curve, name, tmp_path):
    path = fixture_file(curve, name, "public.json")
    values = read_public(path, CURVES[curve])
    assert values == [int(v) for v in json.loads(path.read_text())]
    write_public(tmp_path / "pub.json", values)
    assert json.loads((tmp_path / "pub.json").read_text()) == json.loads(path.read_text())


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_infinity_is_written_and_read_in_snarkjs_form(curve):
    obj = proof_to_json(curve, None, None, None)
    assert obj["pi_a"] == ["0", "1", "0"] and obj["pi_b"] == [["0", "0"], ["1", "0"], ["0", "0"]]
    assert proof_from_json(obj) == ProofPoints(None, None, None)


# -- malformed input -------------------------------------------------------------------------
def _proof(curve="bn128"):
    return json.loads(fixture_file(curve, "multiplier", "proof.json").read_text())


@pytest.mark.parametrize("value, message", [
    ("0x1f", "expected a decimal string, found '0x1f'"),
    ("1" * 78, "value '1111.* is not below q"),
    ("-1", "expected a decimal string"),
    ("1.5", "expected a decimal string"),
    (" 1", "expected a decimal string"),
    ("", "expected a decimal string"),
    ("9" * 500, "expected a decimal string"),
    (5, "expected a decimal string, found int 5"),
    (None, "expected a decimal string, found NoneType None"),
    (str(BN254.fq.modulus), "value '2188.* is not below q"),
])
def test_bad_numbers_are_rejected_naming_the_field(value, message):
    obj = _proof()
    obj["pi_a"][0] = value
    with pytest.raises(FormatError, match=r"pi_a\[0\]: " + message):
        proof_from_json(obj, source="p.json")


@pytest.mark.parametrize("mutate, message", [
    (lambda o: o.__setitem__("pi_a", o["pi_a"][:2]), r"pi_a: expected a list of 3, found a list of 2"),
    (lambda o: o.__setitem__("pi_b", o["pi_b"][0]), r"pi_b: expected a list of 3, found a list of 2"),
    (lambda o: o["pi_b"].__setitem__(1, "7"), r"pi_b\[1\]: expected a list of 2, found str"),
    (lambda o: o.__delitem__("pi_c"), r"pi_c: missing"),
    (lambda o: o.__setitem__("protocol", "plonk"), r"protocol: expected \"groth16\", found 'plonk'"),
    (lambda o: o.__setitem__("curve", "secp256k1"), r"curve: unknown curve 'secp256k1'"),
    (lambda o: o["pi_a"].__setitem__(2, "2"), r"pi_a: expected an affine point \(z = \"1\"\), found z = 2"),
    (lambda o: o["pi_b"].__setitem__(2, ["1", "1"]), r"pi_b: expected an affine point"),
    (lambda o: o.__setitem__("pi_a", ["1", "0", "0"]), r"pi_a: a point with z = 0 must be the infinity"),
    (lambda o: o["pi_a"].__setitem__(1, str(int(o["pi_a"][1]) + 1)), r"pi_a: not on the bn128.G1 curve"),
    (lambda o: o["pi_b"][1].__setitem__(0, str(int(o["pi_b"][1][0]) + 1)), r"pi_b: not on the bn128.G2 curve"),
])
def test_malformed_proofs_are_rejected_naming_the_field(mutate, message):
    obj = _proof()
    mutate(obj)
    with pytest.raises(FormatError, match=message):
        proof_from_json(obj, source="p.json")


def test_proof_curve_must_match_the_given_curve():
    with pytest.raises(FormatError, match="curve: is bn128, expected bls12381"):
        proof_from_json(_proof(), BLS12_381)
    obj = _proof()
    del obj["curve"]
    assert proof_from_json(obj, BN254) == proof_from_json(_proof())
    with pytest.raises(FormatError, match="curve: missing, and no curve was given"):
        proof_from_json(obj)


def _sqrt_fq(a, q):
    root = pow(a, (q + 1) // 4, q)
    return root if root * root % q == a % q else None


def _sqrt_fq2(a, q):
    """Square root in Fq[u]/(u^2+1), q = 3 mod 4, or None."""
    a0, a1 = a
    s = _sqrt_fq((a0 * a0 + a1 * a1) % q, q)
    if s is None:
        return None
    inv2 = pow(2, -1, q)
    for delta in ((a0 + s) * inv2 % q, (a0 - s) * inv2 % q):
        x0 = _sqrt_fq(delta, q)
        if x0:
            x1 = a1 * pow(2 * x0, -1, q) % q
            if ((x0 * x0 - x1 * x1) % q, 2 * x0 * x1 % q) == (a0 % q, a1 % q):
                return (x0, x1)
    return None


def _point_outside_the_subgroup(group, q):
    f = group.ops
    for k in range(1, 1000):
        x = k if f.degree == 1 else (k, 1)
        rhs = f.add(f.mul(f.sqr(x), x), group.b)
        y = _sqrt_fq(rhs, q) if f.degree == 1 else _sqrt_fq2(rhs, q)
        if y is not None and not group.is_in_subgroup((x, y)):
            return (x, y)
    raise AssertionError("no point found")


def test_points_on_the_curve_but_outside_the_subgroup_are_rejected():
    q = BLS12_381.fq.modulus
    x, y = _point_outside_the_subgroup(BLS12_381.g1, q)
    obj = _proof("bls12381")
    obj["pi_c"] = [str(x), str(y), "1"]
    with pytest.raises(FormatError, match="pi_c: not in the prime-order subgroup of bls12381.G1"):
        proof_from_json(obj)
    (x0, x1), (y0, y1) = _point_outside_the_subgroup(BN254.g2, BN254.fq.modulus)
    obj = _proof("bn128")
    obj["pi_b"] = [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]]
    with pytest.raises(FormatError, match="pi_b: not in the prime-order subgroup of bn128.G2"):
        proof_from_json(obj)


def test_public_signals_are_checked_against_r():
    r = BN254.fr.modulus
    assert public_from_json([str(r - 1)], BN254) == [r - 1]
    with pytest.raises(FormatError, match=r"pub.json: \[1\]: value .* is not below r \(the scalar field modulus\)"):
        public_from_json(["1", str(r)], BN254, "pub.json")
    with pytest.raises(FormatError, match=r"\[0\]: expected a decimal string, found int 1"):
        public_from_json([1], BN254)
    with pytest.raises(FormatError, match="expected a JSON list of decimal strings, found dict"):
        public_from_json({"a": "1"}, BN254)


@pytest.mark.parametrize("mutate, message", [
    (lambda o: o.__setitem__("nPublic", "1"), "nPublic: expected a non-negative integer"),
    (lambda o: o.__setitem__("nPublic", True), "nPublic: expected a non-negative integer"),
    (lambda o: o.__setitem__("nPublic", 2), "IC: expected a list of 3, found a list of 2"),
    (lambda o: o.__delitem__("vk_gamma_2"), "vk_gamma_2: missing"),
    (lambda o: o.__delitem__("curve"), "curve: missing"),
    (lambda o: o["vk_alphabeta_12"].__setitem__(1, [["1", "2"]]), r"vk_alphabeta_12\[1\]: expected a list of 3"),
    (lambda o: o["IC"][1].__setitem__(0, "1"), r"IC\[1\]: not on the bn128.G1 curve"),
])
def test_malformed_verification_keys_are_rejected(mutate, message):
    obj = json.loads(fixture_file("bn128", "multiplier", "vk.json").read_text())
    mutate(obj)
    with pytest.raises(FormatError, match=message):
        verification_key_from_json(obj, "vk.json")


@pytest.mark.parametrize("content, message", [
    (b"{", "not valid JSON"),
    (b"", "not valid JSON"),
    (b"[1, 2", "not valid JSON"),
    (b'"a string"', "expected a JSON object \\(a proof\\), found str"),
])
def test_files_that_are_not_json_objects_are_rejected(write_tmp, content, message):
    path = write_tmp(content, "proof.json")
    with pytest.raises(FormatError, match=message) as err:
        read_proof(path, BN254)
    assert err.value.path == str(path)


def test_missing_file_is_a_format_error(tmp_path):
    with pytest.raises(FormatError, match="cannot read"):
        read_public(tmp_path / "none.json", BN254)


def test_written_files_are_plain_orjson(tmp_path):
    vk = read_verification_key(fixture_file("bls12381", "multiplier", "vk.json"))
    write_verification_key(tmp_path / "vk.json", vk, with_alphabeta=False)
    obj = orjson.loads((tmp_path / "vk.json").read_bytes())
    assert obj["curve"] == "bls12381" and "vk_alphabeta_12" not in obj
    assert verification_key_from_json(copy.deepcopy(obj)) == vk
