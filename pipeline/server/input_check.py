"""Circuit inputs checked at submit time against the circuit's input signals (422 before a job exists).

The key's circom wasm says which names are input signals and how many values each takes; its
``.sym`` file (when beside the key) supplies the names, so a missing signal is named, not counted.
One compiled witness calculator per wasm file version is kept (compiling costs ~0.1-1 s).
"""
from __future__ import annotations

import functools
import os

from ..witness import WitnessCalculator, WitnessError
from ..witness.symbols import main_signal_names
from .errors import ApiError
from .keys import KeyInfo
from .messages import public_message


@functools.lru_cache(maxsize=32)
def _calculator(wasm_path: str, mtime_ns: int) -> WitnessCalculator:
    return WitnessCalculator(wasm_path)


@functools.lru_cache(maxsize=32)
def _signal_names(sym_path: str, mtime_ns: int) -> tuple[str, ...]:
    return tuple(main_signal_names(sym_path))


def _mtime(path: str) -> int:
    return os.stat(path).st_mtime_ns


def check_circuit_inputs(key: KeyInfo, inputs: list[dict]) -> None:
    """Blocking (compiles the wasm once): raise a 422 naming every partition whose inputs do not fit."""
    try:
        calculator = _calculator(key.wasm_path, _mtime(key.wasm_path))
    except (OSError, WitnessError) as exc:
        raise ApiError(422, "bad_key", f"key {key.key_id!r}: its witness generator cannot be loaded: "
                       f"{public_message(str(exc))}") from exc
    names = list(_signal_names(key.sym_path, _mtime(key.sym_path))) if key.sym_path else None
    problems = [f"inputs[{index}]: {'; '.join(found)}"
                for index, item in enumerate(inputs) if (found := calculator.input_problems(item, names))]
    if problems:
        raise ApiError(422, "bad_circuit_inputs", f"the inputs do not fit key {key.key_id!r}'s circuit: "
                       + " | ".join(problems[:8]) + (f" | ... ({len(problems)} partitions)" if len(problems) > 8 else ""))
