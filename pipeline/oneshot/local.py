"""One proof in this process: the device is set up while the key and the witness are read.

    main thread                         "device" thread (started first)
    import numpy, the readers             ─┐ driver and context (bindings only), then the imports
                                           │  of cuda-python and the backend
    read the key's header (curve, size) ──┤→ the curve's kernel modules (prebuilt binaries,
    read the key or open its cache,       │  else the NVRTC cache, else compiled), NTT twiddles
    the witness (or compute it:           │
    fullprove), check it                  │
                    wait for the device ──┘
    upload the key, H, MSMs, assemble

The driver's calls and numpy's file reads release the GIL, so the two overlap.
"""
from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .timeline import Timeline


@dataclass
class LocalProof:
    zkey: Any  # formats.types.Groth16Zkey
    proof: Any  # groth16.prover.Proof
    backend_name: str  # the backend and why it was chosen: "cpu (auto: CUDA unavailable: ...)"
    kernel_origins: dict[str, str]  # unit -> "prebuilt" | "cache" | "nvrtc" (CUDA only)
    key_prepared: dict | None = None  # keycache.PreparedKey.summary(): from the key cache or not


class DeviceSetup:
    """The backend on a thread of its own, started before anything else: the import of cuda-python
    and the backend, then the driver and the context. Once the key's header names the curve and
    the domain, ``prepare`` hands them over and the thread sets up the kernel modules and tables.
    ``result()`` joins the thread and re-raises what it raised."""

    def __init__(self, backend_name: str, timeline: Timeline) -> None:
        self._name, self._timeline = backend_name, timeline
        self._backend = None
        self._error: BaseException | None = None
        self._target: queue.Queue = queue.Queue(maxsize=1)  # (curve, log_domain), or None: nothing
        self.kernel_origins: dict[str, str] = {}
        self._prepared = False
        self._thread = threading.Thread(target=self._run, name="device", daemon=True)
        self._thread.start()

    def prepare(self, curve, log_domain: int) -> None:
        self._prepared = True
        self._target.put((curve, log_domain))

    def abandon(self) -> None:
        """Called when the main thread is done with its part: if it stopped before ``prepare``
        (bad input), the thread ends without preparing anything."""
        if not self._prepared:
            self._prepared = True
            self._target.put(None)

    def _run(self) -> None:
        early = None
        try:
            if self._name in ("cuda", "auto"):
                with self._timeline.step("cuda: driver and context, before the imports"):
                    early = _EarlyContext.start()
                with self._timeline.step("import cuda-python and the CUDA backend"):
                    try:
                        from ..backends.cuda import backend as _cuda_backend  # noqa: F401
                    except ImportError:  # no cuda-python: create_backend says so, or falls back
                        pass
            with self._timeline.step(f"backend {self._name}: driver, context"):
                from ..backends import create_backend
                from ..config import cuda_options_from_env

                backend = create_backend(self._name, options=cuda_options_from_env())
            target = self._target.get()
            if target is not None:
                curve, log_domain = target
                with self._timeline.step(f"{backend.name}: prepare {curve.name}, 2^{log_domain} "
                                         "(kernel modules, tables)"):
                    self.kernel_origins = backend.prepare(curve, log_domain)
            self._backend = backend
        except BaseException as exc:  # handed to the main thread by result()
            self._error = exc
        finally:
            if early is not None:
                early.release()  # the backend holds its own reference by now (or failed on its own)

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._backend


class _EarlyContext:
    """The driver initialised and device 0's primary context retained first thing, from the
    driver's bindings alone: the ~0.2-0.3 s this takes on an H200 host then runs while numpy and
    the backend are imported (the driver's calls release the GIL). The backend later retains
    the same context (device 0, as ``create_backend`` picks) and finds the driver initialised.
    Any failure here is left for the backend to report in its own words."""

    def __init__(self, driver, device) -> None:
        self.driver, self.device = driver, device

    @classmethod
    def start(cls) -> "_EarlyContext | None":
        try:
            from cuda.bindings import driver

            ok = driver.CUresult.CUDA_SUCCESS
            if driver.cuInit(0)[0] != ok:
                return None
            err, device = driver.cuDeviceGet(0)
            if err != ok or driver.cuDevicePrimaryCtxRetain(device)[0] != ok:
                return None
        except Exception:  # no cuda-python, no driver library (it raises its own error types), ...
            return None
        return cls(driver, device)

    def release(self) -> None:
        self.driver.cuDevicePrimaryCtxRelease(self.device)


def wtns_file(path: str) -> Callable[[Timeline], Any]:
    """The witness of ``zkpipe prove``: a .wtns file."""
    def load(timeline: Timeline):
        from ..formats.wtns import read_wtns

        with timeline.step("read the witness"):
            return read_wtns(path)
    return load


def circuit_inputs(input_path: str, wasm_path: str) -> Callable[[Timeline], Any]:
    """The witness of ``zkpipe fullprove``: circuit inputs (JSON) run through circom's wasm."""
    def load(timeline: Timeline):
        from ..formats.snarkjs_json import load_json
        from ..witness.calculator import WitnessCalculator

        with timeline.step("load the circuit's wasm (wasmtime)"):
            calculator = WitnessCalculator(wasm_path)
        with timeline.step("compute the witness"):
            return calculator.calculate(load_json(input_path), label=input_path)
    return load


def prove_local(key_path: str, witness: Callable[[Timeline], Any], device: DeviceSetup,
                timeline: Timeline, key_cache=None) -> LocalProof:
    """Prove the witness ``witness(timeline)`` gives (``wtns_file``, ``circuit_inputs``) with
    ``key_path`` on the backend ``device`` is setting up (started by the caller, first thing).
    ``key_cache``: ``keycache.KeyCacheSettings``; None: as the environment says (on by default)."""
    try:
        with timeline.step("import readers (numpy, curves)"):
            from ..backends import describe_backend
            from ..formats.zkey import read_zkey_header
            from ..groth16.prover import check_witness, prove
            from ..keycache import prepare_key
        with timeline.step("read the key's header"):
            header = read_zkey_header(key_path)
        device.prepare(header.curve, header.domain_size.bit_length() - 1)
        if key_cache is None:
            from ..config import key_cache_settings_from_env

            key_cache = key_cache_settings_from_env()
        start = time.perf_counter()
        prepared = prepare_key(key_path, key_cache)
        zkey = prepared.zkey
        how = {"cache": " (from its cache)", "built": " (prepared and cached now)"}
        timeline.add(f"read the key{how.get(prepared.source, '')}", start, time.perf_counter())
        witness = witness(timeline)
        check_witness(zkey, witness)
    finally:
        device.abandon()
    with timeline.step("wait for the device"):
        backend = device.result()
    with timeline.step(f"load the key on {backend.name}"):
        key = backend.load_key(zkey)
    with timeline.step("prove (H, MSMs, assemble)"):
        proof = prove(backend, key, zkey, witness)
    return LocalProof(zkey, proof, describe_backend(backend), device.kernel_origins, prepared.summary())
