"""The circom wasm witness calculator reproduces snarkjs's witness for every fixture, both curves."""
from __future__ import annotations

import gc
import json

import numpy as np
import pytest

from pipeline.formats.wtns import read_wtns
from pipeline.witness import WitnessCalculator, WitnessError, fnv1a_64
from pipeline.witness.calculator import _Session
from tests.conftest import CIRCUITS, CURVE_NAMES, fixture_dir


def test_fnv1a_64_matches_the_published_test_vectors():
    assert fnv1a_64("") == 0xCBF29CE484222325
    assert fnv1a_64("a") == 0xAF63DC4C8601EC8C
    assert fnv1a_64("foobar") == 0x85944171F73967E8


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
@pytest.mark.parametrize("circuit", CIRCUITS)
def test_witness_from_inputs_equals_the_snarkjs_witness(curve_name, circuit):
    d = fixture_dir(curve_name, circuit)
    calc = WitnessCalculator(d / "circuit.wasm")
    witness = calc.calculate(json.loads((d / "input.json").read_text()))
    expected = read_wtns(d / "witness.wtns")
    assert witness.curve is expected.curve
    assert np.array_equal(witness.values, expected.values)


@pytest.fixture(scope="module")
def multiplier():
    return WitnessCalculator(fixture_dir("bn128", "multiplier") / "circuit.wasm")


@pytest.mark.parametrize("inputs, message", [
    ({"a": 3}, "only 1 of the circuit's 2 input values"),
    ({"a": 3, "b": 4, "c": 5}, "'c' is not an input signal"),
    ({"a": [1, 2], "b": 3}, "'a' takes 1 values, got 2"),
    ({"a": "x", "b": 1}, "'x' is not an integer"),
    ([1, 2], "must be a JSON object"),
])
def test_bad_inputs_are_rejected_with_the_signal_named(multiplier, inputs, message):
    with pytest.raises(WitnessError, match=message):
        multiplier.calculate(inputs)


def test_values_are_reduced_like_circom_runtime(multiplier):
    p = multiplier.prime
    w = multiplier.calculate_ints({"a": -1, "b": "0x10"})
    assert w[2:4] == [p - 1, 16] and w[1] == (p - 16) % p


def test_a_failing_circuit_assert_names_the_template():
    calc = WitnessCalculator(fixture_dir("bn128", "bits") / "circuit.wasm")
    with pytest.raises(WitnessError, match="assert failed.*Num2Bits"):
        calc.calculate({"x": ["1", "2", str(2**70)], "bound": "1"})


def test_a_file_that_is_not_wasm_is_a_clear_error():
    with pytest.raises(WitnessError, match="cannot load the circuit's wasm"):
        WitnessCalculator(fixture_dir("bn128", "bits") / "input.json")


def _live_sessions() -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if isinstance(obj, _Session))


def test_no_wasmtime_store_outlives_its_call_whether_it_succeeds_or_fails():
    """Each call's Store (and the host functions bound to its session) is freed when the call ends."""
    d = fixture_dir("bn128", "bits")
    inputs = json.loads((d / "input.json").read_text())
    before = _live_sessions()
    calc = WitnessCalculator(d / "circuit.wasm")
    for _ in range(10):
        calc.calculate(inputs)
        with pytest.raises(WitnessError, match="assert failed"):  # the circuit traps
            calc.calculate({"x": ["1", "2", str(2**70)], "bound": "1"})
        with pytest.raises(WitnessError, match="not an input signal"):  # refused before the wasm runs
            calc.calculate({"nope": 1})
    assert _live_sessions() == before
