"""circom's wasm witness calculator, run with wasmtime (circom >= 2.0.7 protocol).

The protocol is circom_runtime's ``WitnessCalculatorCircom2`` (witness_calculator.js):

    init(sanity_check)
    for each input signal name, hash h = fnv1a_64(name) as (h_msb, h_lsb):
        getInputSignalSize(h_msb, h_lsb) -> number of field elements (< 0: not an input)
        for each flattened value i: writeSharedRWMemory(j, limb32_j) for j < n32,
                                    setInputSignal(h_msb, h_lsb, i)
    getInputSize() == number of values set, else some input is missing
    for i < getWitnessSize(): getWitness(i); value = readSharedRWMemory(0 .. n32-1)

Field elements cross the boundary as n32 little-endian 32-bit words in the "shared RW
memory". The prime comes the same way after ``getRawPrime()``. The runtime imports
``exceptionHandler(code)`` (the circuit failed: an assert, a missing signal ...),
``printErrorMessage`` and ``writeBufferMessage`` (text read with ``getMessageChar``) and
``showSharedRWMemory`` (a ``log()`` of a field element).

A compiled ``WitnessCalculator`` is shared (the wasmtime Module is thread-safe); every
``calculate`` makes its own Store and instance, so calls run in parallel threads (wasmtime
releases the GIL while wasm runs). A session's Store is closed when the call ends: its host
functions are bound to the session, and wasmtime-py keeps host functions in a registry until
their Store is deleted, so a Store left to the garbage collector would never be freed.

wasmtime is imported where a calculator is made or run, not with this module: proving from .wtns
files (``zkpipe prove``, a server's wtns jobs) never loads it.
"""
from __future__ import annotations

import atexit
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from ..curves import curve_by_scalar_prime
from ..formats.types import Witness
from .inputs import flatten, fnv1a_64, split_hash, to_field
from ..errors import BadInput

if TYPE_CHECKING:  # imported where a circuit is loaded: a wtns-only install lacks it
    import wasmtime

EXCEPTION_CODES = {
    1: "signal not found",
    2: "too many signals set",
    3: "signal already set",
    4: "assert failed",
    5: "not enough memory",
    6: "input signal array access exceeds the size",
}


class WitnessError(BadInput):
    """The inputs do not fit the circuit, or the circuit's own checks failed on them."""


class _CircuitTrap(Exception):
    """Raised from the runtime's exceptionHandler import; carries the circuit's message."""


_calculators: "weakref.WeakSet[WitnessCalculator]" = weakref.WeakSet()
_exit_hook_lock = threading.Lock()
_exit_hook = False


def _wasmtime():
    """The wasmtime module, imported on first use. Imported late, it is torn down early at
    interpreter exit (modules go in reverse import order), before the calculators that caches
    made earlier still hold: so at exit, before any teardown, every calculator lets its wasm
    objects go while wasmtime can still free them."""
    global _exit_hook
    import wasmtime

    with _exit_hook_lock:
        if not _exit_hook:
            atexit.register(_release_calculators)
            _exit_hook = True
    return wasmtime


def _release_calculators() -> None:
    for calculator in list(_calculators):
        calculator._module = calculator._engine = None


def _i32(u: int) -> int:
    """A u32 as the signed i32 wasmtime-py passes."""
    return u - (1 << 32) if u >= 1 << 31 else u


class _Session:
    """One instance of the circuit: its store, exports and collected messages."""

    def __init__(self, engine: wasmtime.Engine, module: wasmtime.Module) -> None:
        import wasmtime

        self.store = wasmtime.Store(engine)
        self.errors: list[str] = []
        self.logs: list[str] = []
        self._line: list[str] = []
        self.exports = None
        try:
            self._instantiate(engine, module)
        except BaseException:
            self.store.close()
            raise

    def _instantiate(self, engine: wasmtime.Engine, module: wasmtime.Module) -> None:
        import wasmtime

        linker = wasmtime.Linker(engine)
        void = wasmtime.FuncType([], [])
        linker.define_func("runtime", "exceptionHandler",
                           wasmtime.FuncType([wasmtime.ValType.i32()], []), self._on_exception)
        linker.define_func("runtime", "printErrorMessage", void, self._on_error_message)
        linker.define_func("runtime", "writeBufferMessage", void, self._on_buffer_message)
        linker.define_func("runtime", "showSharedRWMemory", void, self._on_show_memory)
        instance = linker.instantiate(self.store, module)
        self.exports = instance.exports(self.store)
        self.n32 = self.call("getFieldNumLen32")
        self.memory = self.exports["memory"]
        self.shared_start = self.call("getSharedRWMemoryStart")

    def close(self) -> None:
        """Free the Store (and with it the host functions that point back at this session)."""
        self.exports = None
        self.memory = None
        self.store.close()

    def __enter__(self) -> "_Session":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def call(self, name: str, *args: int) -> int:
        return self.exports[name](self.store, *args)

    def _message(self) -> str:
        chars = []
        while (c := self.call("getMessageChar")) != 0:
            chars.append(chr(c & 0xFF))
        return "".join(chars)

    def _on_exception(self, code: int) -> None:
        what = EXCEPTION_CODES.get(code, f"unknown error {code}")
        detail = " ".join(e.strip() for e in self.errors if e.strip())
        raise _CircuitTrap(f"{what}{': ' + detail if detail else ''}")

    def _on_error_message(self) -> None:
        self.errors.append(self._message())

    def _on_buffer_message(self) -> None:
        msg = self._message()
        if msg == "\n":
            self.logs.append(" ".join(self._line))
            self._line = []
        else:
            self._line.append(msg)

    def _on_show_memory(self) -> None:
        self._line.append(str(self.read_field()))

    def read_field(self) -> int:
        """The shared RW memory as one int (read from linear memory: one call, not n32)."""
        start = self.shared_start
        return int.from_bytes(self.memory.read(self.store, start, start + 4 * self.n32), "little")

    def write_field(self, value: int) -> None:
        for j in range(self.n32):
            self.call("writeSharedRWMemory", j, _i32((value >> (32 * j)) & 0xFFFFFFFF))


class WitnessCalculator:
    """A circuit's compiled witness calculator: ``calculate(inputs) -> Witness``."""

    def __init__(self, wasm_path: str | Path) -> None:
        self.path = str(wasm_path)
        try:
            wasmtime = _wasmtime()
        except ImportError as exc:
            raise WitnessError(f"{self.path}: witnesses from inputs need the wasmtime package ({exc})") from exc
        try:
            self._engine = wasmtime.Engine()
            self._module = wasmtime.Module.from_file(self._engine, self.path)
        except (OSError, wasmtime.WasmtimeError) as exc:
            raise WitnessError(f"{self.path}: cannot load the circuit's wasm: {str(exc).splitlines()[0]}") from exc
        with self._session() as probe:
            version = probe.call("getVersion")
            if version != 2:
                raise WitnessError(f"{self.path}: circom wasm version {version} is not supported (need 2)")
            probe.call("getRawPrime")
            self.prime = probe.read_field()
            self.n32 = probe.n32
            self.witness_size = probe.call("getWitnessSize")
            self.input_size = probe.call("getInputSize")
        curve = curve_by_scalar_prime(self.prime)
        if curve is None:
            raise WitnessError(f"{self.path}: the circuit's prime {self.prime} is not a supported curve's scalar field")
        self.curve = curve
        self._local = threading.local()
        _calculators.add(self)

    def _session(self) -> _Session:
        import wasmtime

        try:
            return _Session(self._engine, self._module)
        except wasmtime.WasmtimeError as exc:
            raise WitnessError(f"{self.path}: cannot instantiate the circuit's wasm: {exc}") from exc

    def input_problems(self, inputs: dict, signal_names: list[str] | None = None) -> list[str]:
        """What keeps ``inputs`` from fitting the circuit, found without running it (empty: they fit).

        Unknown signals, wrong value counts and non-integer values are named; missing ones are
        named when ``signal_names`` (the circuit's main-component signals, e.g. from its .sym
        file) are given, else counted. Messages name signals, never files.
        """
        with self._session() as s:
            s.call("init", 0)

            def size(name: str) -> int:
                msb, lsb = split_hash(fnv1a_64(name))
                return s.call("getInputSignalSize", _i32(msb), _i32(lsb))

            sizes = {name: size(name) for name in inputs}
            known = {name: size(name) for name in signal_names or [] if name not in sizes}
        problems, given = [], 0
        for name, raw in inputs.items():
            n, values = sizes[name], flatten(raw)
            if n <= 0:
                problems.append(f"{name!r} is not an input signal of the circuit")
                continue
            if len(values) != n:
                problems.append(f"input signal {name!r} takes {n} value(s), got {len(values)}")
            given += min(n, len(values))
            for value in values:
                try:
                    to_field(value, self.prime, name)
                except ValueError as exc:
                    problems.append(str(exc))
                    break
        if given < self.input_size and not problems:
            missing = [name for name, n in known.items() if n > 0]
            if missing:
                problems.append(f"missing input signal(s) {', '.join(map(repr, missing))}")
            else:
                problems.append(f"missing input values: the circuit takes {self.input_size}, these give {given} "
                                f"(signals given: {', '.join(map(repr, inputs)) or 'none'})")
        return problems

    def calculate_ints(self, inputs: dict, sanity_check: bool = False) -> list[int]:
        """The witness as ints (plain form), from ``{signal name: value or nested list}``."""
        if not isinstance(inputs, dict):
            raise WitnessError(f"{self.path}: circuit inputs must be a JSON object, got {type(inputs).__name__}")
        with self._session() as s:
            return self._run(s, inputs, sanity_check)

    def _run(self, s: _Session, inputs: dict, sanity_check: bool) -> list[int]:
        import wasmtime

        try:
            s.call("init", 1 if sanity_check else 0)
            n_set = 0
            for name, raw in inputs.items():
                msb, lsb = split_hash(fnv1a_64(name))
                values = flatten(raw)
                size = s.call("getInputSignalSize", _i32(msb), _i32(lsb))
                if size <= 0:
                    raise WitnessError(f"{self.path}: {name!r} is not an input signal of the circuit")
                if len(values) != size:
                    raise WitnessError(f"{self.path}: input signal {name!r} takes {size} values, got {len(values)}")
                for i, value in enumerate(values):
                    s.write_field(to_field(value, self.prime, name))
                    s.call("setInputSignal", _i32(msb), _i32(lsb), i)
                    n_set += 1
            if n_set < self.input_size:
                raise WitnessError(f"{self.path}: only {n_set} of the circuit's {self.input_size} input values were given")
            out = []
            for i in range(self.witness_size):
                s.call("getWitness", i)
                out.append(s.read_field())
            return out
        except wasmtime.Trap as exc:
            raise WitnessError(f"{self.path}: the circuit rejected the inputs: {_trap_reason(exc, s)}") from None
        except _CircuitTrap as exc:  # some wasmtime versions re-raise the host exception as is
            raise WitnessError(f"{self.path}: the circuit rejected the inputs: {exc}") from None
        except ValueError as exc:
            if isinstance(exc, WitnessError):
                raise
            raise WitnessError(f"{self.path}: {exc}") from None

    def calculate(self, inputs: dict, label: str = "<inputs>", sanity_check: bool = False) -> Witness:
        values = self.calculate_ints(inputs, sanity_check)
        return Witness(label, self.curve, self.curve.fr.limbs_from_ints(values))


def _trap_reason(exc: Exception, session: _Session) -> str:
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, _CircuitTrap):
        return str(cause)
    detail = " ".join(e.strip() for e in session.errors if e.strip())
    return detail or str(exc).splitlines()[0]
