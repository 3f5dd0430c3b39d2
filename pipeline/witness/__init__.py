"""Witness synthesis: circom's wasm witness calculator on wasmtime."""
from .calculator import WitnessCalculator, WitnessError
from .inputs import fnv1a_64

__all__ = ["WitnessCalculator", "WitnessError", "fnv1a_64"]
