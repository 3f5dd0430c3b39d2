"""read_zkey: agrees with snarkjs's own JSON export, holds the documented forms, and turns every
kind of damage into a FormatError naming the section."""
from __future__ import annotations


import numpy as np
import pytest

from pipeline.curves import BLS12_381, BN254
from pipeline.formats.errors import FormatError
from pipeline.formats.r1cs import read_r1cs
from pipeline.formats.types import MATRIX_A, MATRIX_B
from pipeline.formats.zkey import read_zkey, read_zkey_header

from tests.formats.conftest import (CASE_IDS, CASES, CURVES, SMALL_CASES, cut_points, fixture_file, patch_sections,
                                    section, snarkjs_export, u32)

EXPORT_CASES = [(curve, name) for curve in CURVES for name in ("multiplier", "bits")]


def _ints(values) -> list[int]:
    return [int(v) for v in values]


def _g1_objects(zkey, arr) -> list:
    """Stored (Montgomery) G1 array -> snarkjs's JSON form."""
    fq = zkey.curve.fq
    flat = [fq.from_mont(v) for v in fq.ints_from_limbs(arr)]
    out = []
    for i in range(arr.shape[0]):
        x, y = flat[2 * i : 2 * i + 2]
        out.append(["0", "1", "0"] if arr[i].any() == 0 else [str(x), str(y), "1"])
    return out


def _g2_objects(zkey, arr) -> list:
    fq = zkey.curve.fq
    flat = [fq.from_mont(v) for v in fq.ints_from_limbs(arr)]
    out = []
    for i in range(arr.shape[0]):
        x0, x1, y0, y1 = (str(v) for v in flat[4 * i : 4 * i + 4])
        out.append([["0", "0"], ["1", "0"], ["0", "0"]] if arr[i].any() == 0 else [[x0, x1], [y0, y1], ["1", "0"]])
    return out


def _g1(p):
    return ["0", "1", "0"] if p is None else [str(p[0]), str(p[1]), "1"]


def _g2(p):
    return [["0", "0"], ["1", "0"], ["0", "0"]] if p is None else [[str(c) for c in xy] for xy in p] + [["1", "0"]]


@pytest.mark.parametrize("curve, name", EXPORT_CASES, ids=[f"{c}-{n}" for c, n in EXPORT_CASES])
def test_reader_agrees_with_snarkjs_zkey_export_json(request, curve, name):
    path = fixture_file(curve, name, "circuit_final.zkey")
    ref = snarkjs_export(request, "zkey", path)
    zkey = read_zkey(path, check_points=True)
    assert zkey.curve is CURVES[curve] and zkey.curve.name == curve
    assert (zkey.n_vars, zkey.n_public, zkey.domain_size) == (ref["nVars"], ref["nPublic"], ref["domainSize"])
    assert zkey.log_domain_size == ref["power"]
    for key, ours in (("vk_alpha_1", zkey.alpha1), ("vk_beta_1", zkey.beta1), ("vk_delta_1", zkey.delta1)):
        assert _g1(ours) == ref[key]
    for key, ours in (("vk_beta_2", zkey.beta2), ("vk_gamma_2", zkey.gamma2), ("vk_delta_2", zkey.delta2)):
        assert _g2(ours) == ref[key]
    assert [_g1(p) for p in zkey.ic] == ref["IC"]
    coefs = ref["ccoefs"]
    assert zkey.coeff_matrix.tolist() == [c["matrix"] for c in coefs]
    assert zkey.coeff_constraint.tolist() == [c["constraint"] for c in coefs]
    assert zkey.coeff_signal.tolist() == [c["signal"] for c in coefs]
    assert zkey.coeff_value_ints() == [int(c["value"]) for c in coefs]
    assert _g1_objects(zkey, zkey.points_a) == ref["A"]
    assert _g1_objects(zkey, zkey.points_b1) == ref["B1"]
    assert _g2_objects(zkey, zkey.points_b2) == ref["B2"]
    assert _g1_objects(zkey, zkey.points_c) == ref["C"][zkey.n_public + 1 :]
    assert _g1_objects(zkey, zkey.points_h) == ref["hExps"]


@pytest.mark.parametrize("curve, name", CASES, ids=CASE_IDS)
def test_stored_coefficients_are_r1cs_coefficients_times_r_squared(curve, name):
    """The convention the GPU spmv relies on: stored = c * R^2 mod r (R = 2^256 mod r), A and B
    only, plus one row per public signal i (constraint nConstraints + i, signal i, value 1) in A."""
    zkey = read_zkey(fixture_file(curve, name, "circuit_final.zkey"))
    r1cs = read_r1cs(fixture_file(curve, name, "circuit.r1cs"))
    fr = zkey.curve.fr
    r2 = fr.r_mont * fr.r_mont % fr.modulus
    expected = {}
    for row, (a, b, _) in enumerate(r1cs.constraints):
        for matrix, lc in ((MATRIX_A, a), (MATRIX_B, b)):
            for signal, value in zip(lc.signals.tolist(), fr.ints_from_limbs(lc.values)):
                expected[(matrix, row, signal)] = value * r2 % fr.modulus
    for i in range(zkey.n_public + 1):
        expected[(MATRIX_A, len(r1cs.constraints) + i, i)] = r2
    stored = dict(zip(zip(zkey.coeff_matrix.tolist(), zkey.coeff_constraint.tolist(), zkey.coeff_signal.tolist()),
                      fr.ints_from_limbs(zkey.coeff_values_stored)))
    assert len(stored) == len(zkey.coeff_matrix)  # no (matrix, row, signal) twice
    assert stored == expected


@pytest.mark.parametrize("curve, name", CASES, ids=CASE_IDS)
def test_arrays_have_documented_shapes_and_forms(curve, name):
    zkey = read_zkey(fixture_file(curve, name, "circuit_final.zkey"))
    fq_limbs, fr_limbs = zkey.curve.fq.limbs, zkey.curve.fr.limbs
    m = zkey.coeff_matrix.shape[0]
    assert zkey.coeff_values_stored.shape == (m, fr_limbs)
    assert zkey.points_a.shape == zkey.points_b1.shape == (zkey.n_vars, 2, fq_limbs)
    assert zkey.points_b2.shape == (zkey.n_vars, 2, 2, fq_limbs)
    assert zkey.points_c.shape == (zkey.n_vars - zkey.n_public - 1, 2, fq_limbs)
    assert zkey.points_h.shape == (zkey.domain_size, 2, fq_limbs)
    for arr in (zkey.coeff_values_stored, zkey.points_a, zkey.points_b2, zkey.points_h):
        assert arr.dtype == np.uint64 and arr.flags.c_contiguous and arr.ctypes.data % 8 == 0
    assert zkey.sections[1] == (24, 4)
    assert zkey.host_bytes() > zkey.points_h.nbytes


def _vk_point_on_curve_check(zkey):
    for p in (zkey.alpha1, zkey.beta1, zkey.delta1, *zkey.ic):
        assert zkey.curve.g1.is_on_curve(p)
    for p in (zkey.beta2, zkey.gamma2, zkey.delta2):
        assert zkey.curve.g2.is_in_subgroup(p)


@pytest.mark.parametrize("curve", list(CURVES))
def test_vk_points_are_plain_affine_ints(curve):
    zkey = read_zkey(fixture_file(curve, "multiplier", "circuit_final.zkey"))
    _vk_point_on_curve_check(zkey)
    assert zkey.gamma2 == zkey.curve.g2.generator  # snarkjs keeps gamma = 1
    assert zkey.verification_key().ic == zkey.ic


# -- damage ---------------------------------------------------------------------------------
@pytest.fixture(params=[c for c, _ in SMALL_CASES])
def small_zkey(request):
    return fixture_file(request.param, "multiplier", "circuit_final.zkey").read_bytes()


@pytest.mark.parametrize("protocol, name", [(2, "plonk"), (10, "fflonk")])
def test_zkey_of_another_protocol_is_rejected_by_name(small_zkey, write_tmp, protocol, name):
    path = write_tmp(patch_sections(small_zkey, {1: u32(protocol)}))
    with pytest.raises(FormatError, match=rf"section 1 \(header\): is a {name} zkey, expected groth16"):
        read_zkey(path)


def test_unknown_protocol_id_is_rejected(small_zkey, write_tmp):
    with pytest.raises(FormatError, match="unknown protocol id 7"):
        read_zkey(write_tmp(patch_sections(small_zkey, {1: u32(7)})))


def _patch_header(data: bytes, offset: int, new: bytes) -> bytes:
    header = bytearray(section(data, 2))
    header[offset : offset + len(new)] = new
    return patch_sections(data, {2: bytes(header)})


def test_unknown_primes_are_named(write_tmp):
    data = fixture_file("bn128", "multiplier", "circuit_final.zkey").read_bytes()
    q = BN254.fq.modulus + 2
    with pytest.raises(FormatError, match=rf"unknown curve \(q = {q}, r = {BN254.fr.modulus}\)"):
        read_zkey(write_tmp(_patch_header(data, 4, q.to_bytes(32, "little"))))


def test_mixed_curve_primes_are_rejected(write_tmp):
    data = fixture_file("bn128", "multiplier", "circuit_final.zkey").read_bytes()
    patched = _patch_header(data, 40, BLS12_381.fr.modulus.to_bytes(32, "little"))
    with pytest.raises(FormatError, match="q is bn128's base prime but r is bls12381's scalar prime"):
        read_zkey(write_tmp(patched))


@pytest.mark.parametrize("field_offset, value, message", [
    (72, 1, r"nPublic \(1\) \+ 1 exceeds nVars \(1\)"),  # header: n8q, q, n8r, r, then nVars at 72
    (80, 6, "domainSize must be a power of two, found 6"),
    (80, 0, "domainSize must be a power of two, found 0"),
    (0, 40, "n8q .* must be 32 or 48, found 40"),
    (36, 48, "n8r .* must be 32, found 48"),
])
def test_bad_header_numbers_are_rejected(write_tmp, field_offset, value, message):
    data = fixture_file("bn128", "multiplier", "circuit_final.zkey").read_bytes()
    with pytest.raises(FormatError, match=message):
        read_zkey(write_tmp(_patch_header(data, field_offset, u32(value))))


@pytest.mark.parametrize("section_id", range(2, 10))
@pytest.mark.parametrize("delta", [-1, +1, +64])
def test_sections_too_short_or_too_long_are_rejected(small_zkey, write_tmp, section_id, delta):
    body = section(small_zkey, section_id)
    body = body[:delta] if delta < 0 else body + bytes(delta)
    with pytest.raises(FormatError, match=rf"section {section_id} \("):
        read_zkey(write_tmp(patch_sections(small_zkey, {section_id: body})))


def test_missing_section_is_named(small_zkey, write_tmp):
    from tests.formats.conftest import join_binfile, split_binfile

    magic, version, sections = split_binfile(small_zkey)
    data = join_binfile(magic, version, [(sid, body) for sid, body in sections if sid != 9])
    with pytest.raises(FormatError, match=r"section 9 \(H points\) is missing"):
        read_zkey(write_tmp(data))


@pytest.mark.parametrize("field, offset, message", [
    ("matrix", 0, "coefficient 0: matrix must be 0 \\(A\\) or 1 \\(B\\), found 2"),
    ("constraint", 4, "coefficient 0: constraint must be below domainSize 4, found 4"),
    ("signal", 8, "coefficient 0: signal must be below nVars 4, found 4"),
])
def test_coefficient_indices_out_of_range_are_rejected(write_tmp, field, offset, message):
    data = fixture_file("bn128", "multiplier", "circuit_final.zkey").read_bytes()
    coefs = bytearray(section(data, 4))
    coefs[4 + offset : 8 + offset] = u32({"matrix": 2, "constraint": 4, "signal": 4}[field])
    with pytest.raises(FormatError, match=rf"section 4 \(coefficients\): {message}"):
        read_zkey(write_tmp(patch_sections(data, {4: bytes(coefs)})))


def test_coefficient_value_not_below_r_is_rejected(write_tmp):
    data = fixture_file("bn128", "multiplier", "circuit_final.zkey").read_bytes()
    coefs = bytearray(section(data, 4))
    record = 44
    coefs[4 + record + 12 : 4 + 2 * record] = BN254.fr.modulus.to_bytes(32, "little")
    with pytest.raises(FormatError, match="coefficient 1: value is not below r"):
        read_zkey(write_tmp(patch_sections(data, {4: bytes(coefs)})))


@pytest.mark.parametrize("curve", list(CURVES))
def test_vk_point_off_the_curve_is_rejected(curve, write_tmp):
    data = fixture_file(curve, "multiplier", "circuit_final.zkey").read_bytes()
    n8q = CURVES[curve].fq.n_bytes
    alpha_at = 4 + n8q + 4 + 32 + 12
    header = section(data, 2)
    y_stored = int.from_bytes(header[alpha_at + n8q : alpha_at + 2 * n8q], "little")
    patched = _patch_header(data, alpha_at + n8q, ((y_stored + 1) % CURVES[curve].fq.modulus).to_bytes(n8q, "little"))
    with pytest.raises(FormatError, match=r"section 2 \(groth16 header\): alpha1: not on the"):
        read_zkey(write_tmp(patched))


def test_ic_point_off_the_curve_is_rejected(write_tmp):
    data = fixture_file("bn128", "multiplier", "circuit_final.zkey").read_bytes()
    ic = bytearray(section(data, 3))
    ic[64] ^= 1
    with pytest.raises(FormatError, match=r"section 3 \(IC\): IC\[1\]"):
        read_zkey(write_tmp(patch_sections(data, {3: bytes(ic)})))


@pytest.mark.parametrize("section_id", [5, 7, 9])
def test_check_points_finds_a_damaged_array_point_that_the_default_skips(write_tmp, section_id):
    data = fixture_file("bn128", "multiplier", "circuit_final.zkey").read_bytes()
    body = bytearray(section(data, section_id))
    body[-1] ^= 0x01  # last point's last coordinate
    path = write_tmp(patch_sections(data, {section_id: bytes(body)}))
    read_zkey(path)  # not checked by default
    with pytest.raises(FormatError, match=rf"section {section_id} \(.*\): point \d+ is not on the"):
        read_zkey(path, check_points=True)


@pytest.mark.parametrize("curve", list(CURVES))
def test_truncated_zkey_is_rejected_at_many_cut_points(curve, write_tmp):
    data = fixture_file(curve, "multiplier", "circuit_final.zkey").read_bytes()
    for cut in cut_points(data, count=100):
        with pytest.raises(FormatError):
            read_zkey(write_tmp(data[:cut]))


def test_header_reader_reads_no_arrays(small_zkey, write_tmp):
    data = patch_sections(small_zkey, {9: b""})  # H broken: the header alone still reads
    header = read_zkey_header(write_tmp(data))
    assert header.n_private == header.n_vars - header.n_public - 1


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_the_verification_key_alone_matches_the_full_read(curve_name):
    from pipeline.formats.types import VerificationKey
    from pipeline.formats.zkey import read_zkey_verification_key

    path = fixture_file(curve_name, "poseidon2", "circuit_final.zkey")
    assert read_zkey_verification_key(path) == VerificationKey.from_zkey(read_zkey(path))


@pytest.mark.parametrize("curve, name", CASES, ids=CASE_IDS)
def test_mapped_points_equal_read_points_and_are_read_only(curve, name):
    path = fixture_file(curve, name, "circuit_final.zkey")
    read, mapped = read_zkey(path), read_zkey(path, map_points=True)
    for group in ("a", "b1", "b2", "c", "h"):
        got, want = getattr(mapped, f"points_{group}"), getattr(read, f"points_{group}")
        assert isinstance(got, np.memmap) and not got.flags.writeable
        assert got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)


def test_mapped_point_sections_are_size_checked_like_read_ones(small_zkey, write_tmp):
    path = write_tmp(patch_sections(small_zkey, {9: section(small_zkey, 9)[:-8]}))
    with pytest.raises(FormatError, match=r"section 9 \(H points\): expected \d+ bytes"):
        read_zkey(path, map_points=True)
