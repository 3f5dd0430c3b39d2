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


# -- input_problems: inputs checked against the circuit without running it ----------------------------------
@pytest.mark.parametrize("circuit", CIRCUITS)
def test_the_fixture_inputs_have_no_problems(circuit):
    d = fixture_dir("bn128", circuit)
    assert WitnessCalculator(d / "circuit.wasm").input_problems(json.loads((d / "input.json").read_text())) == []


def test_input_problems_name_unknown_signals_wrong_sizes_and_bad_values():
    bits = WitnessCalculator(fixture_dir("bn128", "bits") / "circuit.wasm")
    assert bits.input_problems({"x": ["1", "2"], "bound": "3", "extra": 1}) == [
        "input signal 'x' takes 3 value(s), got 2", "'extra' is not an input signal of the circuit"]
    assert bits.input_problems({"x": ["1", "2", "three"], "bound": "3"}) == [
        "input signal 'x': 'three' is not an integer"]


def test_missing_signals_are_named_with_the_sym_file_else_counted():
    from pipeline.witness.symbols import main_signal_names

    d = fixture_dir("bn128", "chain_2e8")
    chain = WitnessCalculator(d / "circuit.wasm")
    names = main_signal_names(d / "circuit.sym")
    assert names == ["out", "x0", "k", "c", "x", "sq"]
    assert chain.input_problems({"x0": "1"}, names) == ["missing input signal(s) 'k', 'c'"]
    assert chain.input_problems({"x0": "1"}) == [
        "missing input values: the circuit takes 3, these give 1 (signals given: 'x0')"]
    assert chain.input_problems({"x0": "1", "k": "2", "c": "3"}, names) == []
    assert "circuit.wasm" not in " ".join(chain.input_problems({"nope": 1}, names))  # no file names


def test_a_missing_or_foreign_sym_file_gives_no_names(tmp_path):
    from pipeline.witness.symbols import main_signal_names

    assert main_signal_names(tmp_path / "none.sym") == []
    (tmp_path / "odd.sym").write_text("garbage\n1,1,0,main.sub.inner\n2,2,0,main.a[3][1]\n")
    assert main_signal_names(tmp_path / "odd.sym") == ["a"]


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
        assert calc.input_problems({"nope": 1}) == ["'nope' is not an input signal of the circuit"]
    assert _live_sessions() == before


def test_the_service_and_the_witness_package_load_without_the_wasm_runtime():
    """wasmtime is imported when a calculator is made, not with the modules: a server proving
    .wtns jobs starts without it (and faster), and the input checks still name the calculator."""
    import subprocess
    import sys

    from tests.conftest import REPO

    code = "import sys, pipeline.server.app, pipeline.witness; print('wasmtime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"



def test_the_exit_hook_lets_every_live_calculators_wasm_objects_go():
    """wasmtime is imported late (on first use), so at interpreter exit it is torn down before
    modules that hold calculators (pytest's, the server's caches): the exit hook, registered once
    at the first import, drops every live calculator's wasm objects while wasmtime can free them
    (without it a whole-suite run ended with 12 'Exception ignored in Managed.__del__')."""
    from pipeline.witness import calculator as calc_module
    from tests.conftest import fixture_dir

    kept = calc_module.WitnessCalculator(fixture_dir("bn128", "multiplier") / "circuit.wasm")
    assert calc_module._exit_hook and kept in calc_module._calculators
    calc_module._release_calculators()
    assert kept._module is None and kept._engine is None
