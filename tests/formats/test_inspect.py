"""inspect_file describes each kind of file from its headers, as JSON-ready data."""
from __future__ import annotations

import orjson
import pytest

from pipeline.formats.errors import FormatError
from pipeline.formats.inspect import inspect_file

from tests.formats.conftest import CURVES, fixture_file, patch_sections, u32


@pytest.mark.parametrize("curve", list(CURVES))
def test_zkey_is_described_with_sizes_and_sections(curve):
    info = inspect_file(fixture_file(curve, "bits", "circuit_final.zkey"))
    assert info["kind"] == "zkey" and info["protocol"] == "groth16" and info["curve"] == curve
    assert (info["n_vars"], info["n_public"], info["domain_size"], info["log_domain_size"]) == (463, 3, 512, 9)
    assert info["n_coefficients"] == 1359
    assert [s["id"] for s in info["sections"]] == list(range(1, 11))
    assert info["sections"][8]["name"] == "H points"
    orjson.dumps(info)  # serialisable as is


@pytest.mark.parametrize("curve", list(CURVES))
def test_wtns_r1cs_and_json_files_are_described(curve):
    wtns = inspect_file(fixture_file(curve, "bits", "witness.wtns"))
    assert (wtns["kind"], wtns["curve"], wtns["n_witness"]) == ("wtns", curve, 463)
    r1cs = inspect_file(fixture_file(curve, "bits", "circuit.r1cs"))
    assert (r1cs["kind"], r1cs["n_constraints"], r1cs["n_wires"]) == ("r1cs", 465, 463)
    assert r1cs["n_terms"] > r1cs["n_constraints"]
    assert inspect_file(fixture_file(curve, "bits", "vk.json"))["n_public"] == 3
    assert inspect_file(fixture_file(curve, "bits", "proof.json"))["curve"] == curve
    assert inspect_file(fixture_file(curve, "bits", "public.json"))["n_public"] == 3
    for info in (wtns, r1cs):
        orjson.dumps(info)


def test_plonk_zkey_is_described_by_protocol_only(write_tmp):
    data = fixture_file("bn128", "multiplier", "circuit_final.zkey").read_bytes()
    info = inspect_file(write_tmp(patch_sections(data, {1: u32(2)})))
    assert info["protocol"] == "plonk" and "curve" not in info


@pytest.mark.parametrize("content, message", [
    (b"PK\x03\x04....", "unknown file type"),
    (b"", "unknown file type"),
    (b'{"hello": 1}', "neither a snarkjs proof"),
    (b"zkey\x05", "truncated"),
])
def test_unknown_or_broken_files_are_format_errors(write_tmp, content, message):
    with pytest.raises(FormatError, match=message):
        inspect_file(write_tmp(content))
