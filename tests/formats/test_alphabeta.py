"""alphabeta_12 reproduces snarkjs's vk_alphabeta_12 (power and tower layout)."""
from __future__ import annotations

import json

import pytest

from pipeline.formats.alphabeta import alphabeta_12
from pipeline.formats.snarkjs_json import read_verification_key

from tests.formats.conftest import CURVES, fixture_file


@pytest.mark.parametrize("curve", list(CURVES))
def test_matches_snarkjs_on_fixture_keys(curve):
    path = fixture_file(curve, "poseidon2", "vk.json")
    vk = read_verification_key(path)
    expected = json.loads(path.read_text())["vk_alphabeta_12"]
    assert [[[str(c) for c in fq2] for fq2 in fq6] for fq6 in alphabeta_12(vk.curve, vk.alpha1, vk.beta2)] == expected


def test_is_bilinear_in_snarkjs_layout(curve):
    """e(2P, Q) = e(P, 2Q): the conversion is a fixed map, so equal pairings stay equal."""
    g1, g2 = curve.g1, curve.g2
    p2 = g1.to_affine(g1.mul(g1.from_affine(g1.generator), 2))
    q2 = g2.to_affine(g2.mul(g2.from_affine(g2.generator), 2))
    assert alphabeta_12(curve, p2, g2.generator) == alphabeta_12(curve, g1.generator, q2)
    assert alphabeta_12(curve, None, g2.generator) == [[(1, 0), (0, 0), (0, 0)], [(0, 0), (0, 0), (0, 0)]]
