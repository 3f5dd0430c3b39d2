"""What each stage computes for one partition: blocking functions, run in executors.

    synthesize   source (.wtns path | Witness | circuit inputs) -> checked Witness
    prep_msm     Witness -> ScalarClasses (0 / 1 / other), the staged scalar buffer
    g2_msm_cpu   Σ w_i B2_i on the CPU (started by prep_msm, joined by the epilogue)
    gpu          Backend.start_partition, awaited (pipeline.py; the caller holds the GPU lock)
    epilogue     MSMs + blinding -> (pi_a, pi_b, pi_c), optional verification, snarkjs JSON

The data passed between stages are frozen dataclasses: ``Partition`` (admitted work),
``Synthesized`` (with its witness), ``Prepared`` (after prep_msm), ``DeviceResult`` (after the gpu stage). Nothing here touches
asyncio or knows which backend runs the gpu stage.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..formats.types import Witness
from ..backends.protocol import Backend, MsmResults, WitnessShape
from ..groth16.prover import Blinding, assemble, check_witness, public_signals
from ..groth16.witness_scan import scan_witness
from .jobs import Job, PartitionProof
from .keystore import HostKey
from .resources import PartitionResources
from ..errors import BadInput


class WitnessUnsatisfied(BadInput):
    """The witness breaks a constraint of the registered R1CS (named), so no proof is attempted."""


class MissingCircuit(BadInput):
    """Circuit inputs were given for a key registered without its circuit's wasm."""


@dataclass(frozen=True, eq=False)
class Partition:
    """One admitted partition: the job, its place in it, its source and its key's host data."""

    job: Job
    index: int
    source: Any  # str | Path (.wtns) | Witness | dict (circuit inputs)
    key: HostKey
    resources: PartitionResources  # slot, host bytes, key reference, staging buffer: one release
    timings_ms: dict[str, float] = field(default_factory=dict)
    marks: dict[str, float] = field(default_factory=dict)  # perf_counter() stamps, for queue waits

    @property
    def label(self) -> str:
        return f"{self.job.id[:8]}/{self.index}"


@dataclass(frozen=True, eq=False)
class Synthesized:
    partition: Partition
    witness: Witness


@dataclass(frozen=True)
class ScalarClasses:
    """The witness staged for the device, and its 0 / 1 / other counts (a backend splits its MSMs
    by them: bit-heavy witnesses make most MSM work plain additions)."""

    shape: WitnessShape
    staged: np.ndarray  # contiguous (n, limbs) uint64, plain form: the buffer handed to the backend

    @property
    def n_one(self) -> int:
        return self.shape.n_one

    @property
    def n_other(self) -> int:
        return self.shape.n_other

    @property
    def n_zero(self) -> int:
        return self.shape.n_vars - self.shape.n_one - self.shape.n_other


@dataclass(frozen=True, eq=False)
class Prepared:
    partition: Partition
    scalars: ScalarClasses
    g2_msm: Any = None  # the running CPU G2 MSM (cpu_workers.G2Msm), or None (G2 on the device)


@dataclass(frozen=True, eq=False)
class DeviceResult:
    prepared: Prepared
    msms: MsmResults
    device_index: int


def witness_nbytes(zkey) -> int:
    """A witness of the key in memory, (n_vars, limbs) uint64: the size of its pinned staged copy too."""
    return zkey.n_vars * zkey.curve.fr.limbs * 8


def partition_host_bytes(zkey, backend: Backend) -> int:
    """Host memory one partition holds while in flight: its witness and the staged copy, what
    the backend holds for it (``Backend.partition_host_bytes``), and slack."""
    return 2 * witness_nbytes(zkey) + backend.partition_host_bytes(zkey) + 4096


def synthesize(key: HostKey, source: Any, check_r1cs: bool) -> Witness:
    zkey = key.zkey
    if isinstance(source, Witness):
        witness = source
    elif isinstance(source, (str, Path)):
        from ..formats.wtns import read_wtns

        witness = read_wtns(source)
    elif isinstance(source, dict):
        if key.calculator is None:
            raise MissingCircuit(f"key {key.spec.key_id!r} was registered without wasm_path, so it takes "
                                 f"witnesses (.wtns or Witness), not circuit inputs")
        witness = key.calculator.calculate(source)
    else:
        raise TypeError(f"a partition is a .wtns path, a Witness or a dict of circuit inputs, "
                        f"not {type(source).__name__}")
    check_witness(zkey, witness)
    if check_r1cs and key.r1cs_checker is not None:
        failing = key.r1cs_checker.first_unsatisfied(witness)
        if failing is not None:
            raise WitnessUnsatisfied(f"{witness.path}: the witness does not satisfy constraint {failing} "
                                     f"of {key.r1cs.path}")
    return witness


def prep_msm(witness: Witness, staging: Any = None, prefix_len: int = 1) -> ScalarClasses:
    """Stage the scalars (into ``staging``, a pinned buffer, when given), count the 0 / 1 / other,
    over all signals and over the first ``prefix_len`` (the constant and the public signals), and
    check every value is below r, in one pass (``WitnessOutOfRange`` names the signal)."""
    if staging is not None:
        values = staging.view(np.uint64, witness.values.shape)
        source = witness.values
    else:
        values = source = np.ascontiguousarray(witness.values, dtype=np.uint64)
    shape = scan_witness(source, witness.curve.fr.modulus, prefix_len, witness.path,
                         out=values if staging is not None else None)
    return ScalarClasses(shape, values)


def g2_msm_cpu(key: HostKey, staged: np.ndarray) -> tuple[tuple, float, float]:
    """Σ w_i B2_i on the host backend (the key's ``host_g2`` handle); returns (point, start, end)
    in perf_counter seconds."""
    t0 = time.perf_counter()
    point = key.host_backend.msm_b_g2(key.host_g2, staged)
    return point, t0, time.perf_counter()


def gpu_timings(msms: MsmResults) -> dict[str, float]:
    """The backend's own split of a partition's device time, named for the engine's timings
    (``h_ms`` -> ``gpu_h_ms``, ``msm_a_ms`` -> ``gpu_msm_a_ms``, ...)."""
    return {k if k.startswith("gpu_") else f"gpu_{k}": v for k, v in msms.timings_ms.items()}


def epilogue(key: HostKey, result: DeviceResult, b_g2: Any, verify: bool) -> PartitionProof:
    from ..formats.snarkjs_json import proof_to_json, public_to_json

    zkey = key.zkey
    prepared = result.prepared
    blinding = Blinding.random(zkey.curve.fr.modulus)
    pi_a, pi_b, pi_c = assemble(zkey, result.msms, blinding, b_g2=b_g2, tables=key.delta_tables)
    public = public_signals(zkey, prepared.scalars.staged)
    verified = None
    if verify:
        from ..groth16.verifier import verify as verify_proof
        from ..formats.types import VerificationKey

        verdict = verify_proof(VerificationKey.from_zkey(zkey), public, pi_a, pi_b, pi_c)
        if not verdict:
            raise RuntimeError(f"partition {prepared.partition.index}: the proof does not verify ({verdict.reason}); "
                               f"the backend computed a wrong MSM or quotient")
        verified = True
    return PartitionProof(
        index=prepared.partition.index, curve_name=zkey.curve.name, pi_a=pi_a, pi_b=pi_b, pi_c=pi_c,
        public_signals=public, proof_json=proof_to_json(zkey.curve, pi_a, pi_b, pi_c),
        public_json=public_to_json(public), verified=verified)
