"""read_wtns / write_wtns: agree with snarkjs, round-trip byte for byte, reject bad files."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.curves import BLS12_381, BN254
from pipeline.formats.errors import FormatError
from pipeline.formats.wtns import read_wtns, write_wtns

from tests.formats.conftest import (CASE_IDS, CASES, CURVES, cut_points, fixture_file, join_binfile, patch_sections,
                                    section, snarkjs_export, u32)


@pytest.mark.parametrize("curve, name", [(c, n) for c in CURVES for n in ("multiplier", "bits")],
                         ids=[f"{c}-{n}" for c in CURVES for n in ("multiplier", "bits")])
def test_reader_agrees_with_snarkjs_wtns_export_json(request, curve, name):
    path = fixture_file(curve, name, "witness.wtns")
    witness = read_wtns(path)
    assert witness.curve is CURVES[curve]
    assert witness.curve.fr.ints_from_limbs(witness.values) == [int(v) for v in snarkjs_export(request, "wtns", path)]


@pytest.mark.parametrize("curve, name", CASES, ids=CASE_IDS)
def test_write_of_a_read_witness_is_byte_identical(curve, name, tmp_path):
    path = fixture_file(curve, name, "witness.wtns")
    witness = read_wtns(path)
    assert witness.values.shape == (len(witness), witness.curve.fr.limbs) and witness.values.dtype == np.uint64
    assert witness.values[0].tolist() == [1, 0, 0, 0]
    write_wtns(tmp_path / "w.wtns", witness.curve, witness.values)
    assert (tmp_path / "w.wtns").read_bytes() == path.read_bytes()


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_write_accepts_ints_and_reads_back(curve, tmp_path):
    values = [1, 0, curve.fr.modulus - 1, 2**200 + 5]
    write_wtns(tmp_path / "w.wtns", curve, values)
    witness = read_wtns(tmp_path / "w.wtns")
    assert witness.curve is curve and curve.fr.ints_from_limbs(witness.values) == values


def test_write_rejects_values_not_below_r(tmp_path):
    with pytest.raises(ValueError, match=r"\[0, r\)"):
        write_wtns(tmp_path / "w.wtns", BN254, [1, BN254.fr.modulus])
    with pytest.raises(ValueError, match=r"\[0, r\)"):
        write_wtns(tmp_path / "w.wtns", BN254, BN254.fr.limbs_from_ints([1, BN254.fr.modulus]))


def test_empty_witness_round_trips(tmp_path):
    write_wtns(tmp_path / "w.wtns", BN254, [])
    assert len(read_wtns(tmp_path / "w.wtns")) == 0


def _header(prime: int, n: int, n8: int = 32) -> bytes:
    return u32(n8) + prime.to_bytes(n8, "little") + u32(n)


def test_the_other_curves_prime_selects_the_other_curve(write_tmp):
    """A BN254 witness relabelled with BLS12-381's r reads as a BLS12-381 witness (its values are
    all below that r): the mismatch with a key is caught when the two meet (check_witness)."""
    data = fixture_file("bn128", "multiplier", "witness.wtns").read_bytes()
    witness = read_wtns(write_tmp(patch_sections(data, {1: _header(BLS12_381.fr.modulus, 4)})))
    assert witness.curve is BLS12_381


def test_value_not_below_the_other_curves_prime_is_rejected(write_tmp):
    data = fixture_file("bls12381", "multiplier", "witness.wtns").read_bytes()
    values = bytearray(section(data, 2))
    values[32:64] = (BN254.fr.modulus + 7).to_bytes(32, "little")  # fine for BLS12-381's r ...
    relabelled = patch_sections(data, {1: _header(BN254.fr.modulus, 4), 2: bytes(values)})
    with pytest.raises(FormatError, match=r"section 2 \(values\): value 1 is not below the prime \(bn128's r\)"):
        read_wtns(write_tmp(relabelled))  # ... not for BN254's


@pytest.mark.parametrize("index", [0, 3])
def test_value_equal_to_the_prime_is_rejected(write_tmp, index):
    data = fixture_file("bn128", "multiplier", "witness.wtns").read_bytes()
    values = bytearray(section(data, 2))
    values[32 * index : 32 * index + 32] = BN254.fr.modulus.to_bytes(32, "little")
    with pytest.raises(FormatError, match=f"value {index} is not below the prime"):
        read_wtns(write_tmp(patch_sections(data, {2: bytes(values)})))


def test_unknown_prime_is_named(write_tmp):
    q = BN254.fq.modulus  # the base field prime is not a witness prime
    with pytest.raises(FormatError, match=f"unknown curve \\(r = {q}\\)"):
        read_wtns(write_tmp(join_binfile(b"wtns", 2, [(1, _header(q, 0)), (2, b"")])))


def test_48_byte_values_are_rejected(write_tmp):
    data = join_binfile(b"wtns", 2, [(1, _header(BLS12_381.fq.modulus, 0, n8=48)), (2, b"")])
    with pytest.raises(FormatError, match="n8 .* must be 32, found 48"):
        read_wtns(write_tmp(data))


def test_wrong_magic_and_version_are_rejected(write_tmp):
    data = fixture_file("bn128", "multiplier", "witness.wtns").read_bytes()
    with pytest.raises(FormatError, match="not a wtns file"):
        read_wtns(write_tmp(b"zkey" + data[4:]))
    with pytest.raises(FormatError, match="unsupported wtns version: expected 2, found 1"):
        read_wtns(write_tmp(data[:4] + u32(1) + data[8:]))


@pytest.mark.parametrize("delta", [-32, -1, +1, +32])
def test_values_section_of_the_wrong_size_is_rejected(write_tmp, delta):
    data = fixture_file("bn128", "multiplier", "witness.wtns").read_bytes()
    body = section(data, 2)
    body = body[:delta] if delta < 0 else body + bytes(delta)
    with pytest.raises(FormatError, match=r"section 2 \(values\): expected 128 bytes for nWitness = 4"):
        read_wtns(write_tmp(patch_sections(data, {2: body})))


def test_header_section_of_the_wrong_size_is_rejected(write_tmp):
    data = fixture_file("bn128", "multiplier", "witness.wtns").read_bytes()
    with pytest.raises(FormatError, match=r"section 1 \(header\): expected 40 bytes"):
        read_wtns(write_tmp(patch_sections(data, {1: section(data, 1) + b"\0"})))
    with pytest.raises(FormatError, match=r"section 1 \(header\): too short: nWitness"):
        read_wtns(write_tmp(patch_sections(data, {1: section(data, 1)[:-2]})))


@pytest.mark.parametrize("curve", list(CURVES))
def test_truncated_wtns_is_rejected_at_many_cuts(curve, write_tmp):
    data = fixture_file(curve, "bits", "witness.wtns").read_bytes()
    for cut in cut_points(data, count=100):
        with pytest.raises(FormatError):
            read_wtns(write_tmp(data[:cut]))
