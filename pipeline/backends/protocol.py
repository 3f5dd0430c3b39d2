"""The contract between the prover (and the engine) and a compute backend.

The prover and the engine never ask which backend they have: they call the members below and
nothing else. A backend does the heavy steps of one proof, the quotient H (a, b, c from the key's
coefficients, then NTTs on snarkjs's odd coset) and the multi-scalar multiplications; proof
assembly (blinding, vk terms) is backend-independent (``groth16.prover.assemble``).

Buffers and forms, for every member:

- ``witness`` (host): a C-contiguous ``(n_vars, fr_limbs)`` uint64 array, plain (not Montgomery)
  form, little-endian limbs; element 0 is the constant 1. It may live in pinned host memory (the
  engine's staging pool): a backend may then copy from it asynchronously, and the caller keeps it
  alive and unchanged until the call's work has completed (``PartitionWork.wait``).
- key handles: whatever ``load_key`` returns; opaque to the caller, owned by the caller, freed
  only through ``unload_key``. The CUDA backend keeps the key's points on the device (affine,
  Montgomery form, as the zkey stores them) and its coefficients as CSR rows; a key larger than
  the device budget keeps some point sections in host memory instead and streams them through
  the device once per batch of partitions (``place_key``, ``start_batch``; placement.py, batch.py).
- H handles: whatever ``compute_h`` returns; opaque. Only ``msms`` of the same backend consumes
  one (and frees it); ``h_to_host`` copies it out for checks without consuming it.
- results: points cross the boundary as ``G1Jacobian`` / ``G2Jacobian``: Jacobian coordinates,
  plain-form Python ints (``pipeline.curves.points``); Z = 0 is the point at infinity.

Errors: bad input is the caller's fault and was checked before (``groth16.check_witness``); a
backend raises ``errors.InternalError`` subclasses for failures of its own (a failed kernel:
``CudaError`` naming it) and ``errors.Unavailable`` subclasses when a resource runs out
(``DeviceBudgetError``). After an exception the call's scratch is freed; the key stays usable.

Threads: a backend instance serves one device; its blocking members run in the device's worker
threads (the engine's GPU lock serialises partitions), never on the event loop.
"""
from __future__ import annotations

import abc
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, Protocol

import numpy as np

from ..curves import Curve
from ..errors import Unavailable
from ..formats.types import Groth16Zkey
from .batch import BatchItem, BatchWork, SequentialBatch
from .placement import KeyPlacement, classify_scalars


class G1Jacobian(NamedTuple):
    """A G1 point: Jacobian (X, Y, Z) over Fq, plain-form ints; x = X/Z^2, y = Y/Z^3; Z = 0 is infinity."""

    x: int
    y: int
    z: int


class G2Jacobian(NamedTuple):
    """A G2 point: Jacobian (X, Y, Z) over Fq2 (each an (c0, c1) pair of plain-form ints)."""

    x: tuple[int, int]
    y: tuple[int, int]
    z: tuple[int, int]


@dataclass(frozen=True)
class MsmResults:
    """The five MSMs of a Groth16 proof (before r, s blinding and the vk terms)."""

    a_g1: G1Jacobian  # sum w_i A_i, i over all signals
    b_g1: G1Jacobian  # sum w_i B1_i
    b_g2: G2Jacobian | None  # sum w_i B2_i; None when placed elsewhere (the CPU G2 MSM)
    c_g1: G1Jacobian  # sum w_i C_i, i over private signals (the "L" query)
    h_g1: G1Jacobian  # sum h_i H_i
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class WitnessShape:
    """How many witness values are 1 and how many are neither 0 nor 1 (prep_msm counts them on
    the host, off the GPU lock), over all signals and over the first ``prefix_len`` (the constant
    and the public signals, which the C MSM leaves out). A backend may split its MSMs by it."""

    n_vars: int
    n_one: int
    n_other: int
    prefix_len: int
    prefix_one: int
    prefix_other: int

    @classmethod
    def of(cls, witness: np.ndarray, prefix_len: int) -> "WitnessShape":
        """Count a (n_vars, limbs) uint64 plain-form witness (a pass over it: run it off the loop)."""
        is_one, is_other = classify_scalars(witness)
        return cls(len(witness), int(is_one.sum()), int(is_other.sum()), prefix_len,
                   int(is_one[:prefix_len].sum()), int(is_other[:prefix_len].sum()))


class PartitionWork(Protocol):
    """The device work of one partition, enqueued by ``Backend.start_partition``.

    ``wait`` completes when the work is done, without blocking the event loop (CUDA: an event
    polled from the loop); ``result`` then returns the MSMs (a few points converted on the host)
    and gives back what the work held; ``close`` gives it back without a result (an error or a
    cancellation after the work was enqueued: it first lets the device finish with the buffers)."""

    def done(self) -> bool: ...

    async def wait(self) -> None: ...

    def result(self) -> MsmResults: ...

    def close(self) -> None: ...


@dataclass
class CompletedWork:
    """``PartitionWork`` for a backend that computed everything inside ``start_partition``."""

    msms: MsmResults

    def done(self) -> bool:
        return True

    async def wait(self) -> None:
        return None

    def result(self) -> MsmResults:
        return self.msms

    def close(self) -> None:
        return None


class HostBuffer(Protocol):
    """Host memory a backend hands out for staging (pinned where the backend can): ``nbytes``,
    a numpy ``view(dtype, shape)`` of its start, and ``free()`` (idempotent)."""

    nbytes: int

    def view(self, dtype, shape) -> np.ndarray: ...

    def free(self) -> None: ...


class Backend(abc.ABC):
    """One compute device. Abstract members are the proof's steps; the rest are capabilities the
    engine uses for budgets and placement, declared here with the defaults of a backend that has
    no device memory of its own (the CPU backend)."""

    name: ClassVar[str]
    pins_host_memory: ClassVar[bool] = False  # offers ``pinned_host_buffer`` (for the staging pool)
    device_ordinal: int | None = None  # the device this instance drives; None: the host

    # -- the key -----------------------------------------------------------------------------
    def prepare(self, curve: Curve, log_domain: int) -> dict[str, str]:
        """Set up, ahead of ``load_key``, what keys of ``curve`` and domain 2^``log_domain`` will
        need (kernels, tables), so that a caller can do it while it reads the key (``zkpipe
        prove``). Returns where each kernel unit came from ({} for none). Idempotent."""
        return {}

    def place_key(self, zkey: Groth16Zkey, budget_bytes: int | None, room_bytes: int | None = None,
                  witness: WitnessShape | None = None) -> KeyPlacement:
        """Where ``load_key`` would keep the key's points on a device with ``budget_bytes`` of
        memory (None: unbounded) so that a partition's scratch fits next to it: every section
        resident when it fits, else some streamed from host memory (``placement.py``). What only
        speeds a key up (fixed-base tables, ``KeyPlacement.fixed_base``) is taken only where it fits
        ``room_bytes`` too (the budget no other key holds; None: ``budget_bytes``), and may be chosen
        for witnesses shaped like ``witness`` (the key's last one; None: none seen). The default:
        everything resident, ``key_device_bytes(zkey)`` bytes."""
        return KeyPlacement(device_bytes=self.key_device_bytes(zkey))

    def add_fixed_bases(self, key: Any, placement: KeyPlacement) -> None:
        """Build the fixed-base tables ``placement`` names (``place_key``'s choice) onto a loaded key whose
        placement has none (a copy made outside ``load_key``, such as a development key adopted from the
        setup)."""
        raise NotImplementedError(f"backend {self.name!r} keeps no fixed-base tables")

    def drop_fixed_bases(self, key: Any) -> int:
        """The key's fixed-base tables freed, its sections back to plain points; returns the device bytes
        given back, as ``place_key`` counted them. Only for a key that has some; the caller guarantees no
        work on the key is running."""
        raise NotImplementedError(f"backend {self.name!r} keeps no fixed-base tables")

    @abc.abstractmethod
    def load_key(self, zkey: Groth16Zkey, placement: KeyPlacement | None = None) -> Any:
        """Make the key usable for this backend as ``placement`` says (None: all resident);
        returns the handle the other members take. Raises ``Unavailable`` (``DeviceBudgetError``)
        when it does not fit; frees what it took."""

    @abc.abstractmethod
    def unload_key(self, key: Any) -> None:
        """Free everything ``load_key`` took. The caller guarantees no work on the key is running."""

    # -- the proof's steps (blocking; each returns when its result is usable) -----------------
    @abc.abstractmethod
    def compute_h(self, key: Any, witness: np.ndarray) -> Any:
        """Quotient evaluations on snarkjs's odd coset: domain_size scalars. Returns an H handle
        (host array on the CPU, device buffer on the GPU) that ``msms`` consumes."""

    @abc.abstractmethod
    def h_to_host(self, h: Any) -> np.ndarray:
        """(domain_size, fr_limbs) uint64, plain form, for checks; ``h`` stays valid."""

    @abc.abstractmethod
    def msms(self, key: Any, witness: np.ndarray, h: Any, with_b_g2: bool = True) -> MsmResults:
        """A, B1, (B2), C and H MSMs; consumes ``h`` (also on error). ``with_b_g2=False`` leaves
        ``b_g2`` None (the engine placed that MSM on the host)."""

    @abc.abstractmethod
    def msm_b_g2(self, key: Any, witness: np.ndarray) -> G2Jacobian:
        """The G2 MSM of B alone: sum w_i B2_i over all signals (for the host placement)."""

    # -- the engine's path: enqueue, then await --------------------------------------------
    def start_partition(self, key: Any, witness: np.ndarray, with_b_g2: bool,
                        shape: WitnessShape | None = None) -> PartitionWork:
        """H and the MSMs of one partition, enqueued; the caller awaits ``wait()`` then takes
        ``result()``. ``shape`` (optional) describes the witness's 0 / 1 / other counts, which a
        backend may use to split its MSMs; it must describe ``witness`` exactly.
        The default computes everything before returning (``CompletedWork``).
        Result timings: ``h_ms``, ``msm_ms`` and whatever finer split the backend measures."""
        t0 = time.perf_counter()
        h = self.compute_h(key, witness)
        t1 = time.perf_counter()
        msms = self.msms(key, witness, h, with_b_g2)
        t2 = time.perf_counter()
        timings = {**msms.timings_ms, "h_ms": (t1 - t0) * 1e3, "msm_ms": (t2 - t1) * 1e3}
        return CompletedWork(dataclasses.replace(msms, timings_ms=timings))

    # -- a witness on the device before its partition takes the GPU lock ----------------------
    prefetches_witness: bool = False  # offers ``prefetch_witness`` (the engine asks only where True)

    def prefetch_witness(self, witness: np.ndarray) -> int:
        """Start copying the staged ``witness`` to the device while another partition holds the GPU
        lock, for the ``start_partition`` that will be given this same array (it then skips its
        upload). Returns the device bytes now held for it (0: nothing started). A prefetch that no
        ``start_partition`` takes must go back through ``drop_prefetch``."""
        return 0

    def drop_prefetch(self, witness: np.ndarray) -> None:
        """Give back ``witness``'s prefetch if ``start_partition`` did not take it (no-op otherwise)."""
        return None

    def start_batch(self, key: Any, items: list[BatchItem], with_b_g2: bool) -> BatchWork:
        """Several partitions of one key in one pass (``batch.py``: the engine queues it step by
        step and awaits it). The default runs them one after the other (``start_partition``)."""
        return SequentialBatch(self, key, items, with_b_g2)

    def max_batch(self, key: Any) -> int:
        """How many partitions one pass over ``key`` may take (1: batching gains nothing, as for
        a key whose points are all resident)."""
        return 1

    # -- capabilities for the engine's budgets and placement --------------------------------
    def key_device_bytes(self, zkey: Groth16Zkey) -> int:
        """Device memory ``load_key(zkey)`` will hold with every section resident (0: none of a
        device's own)."""
        return 0

    def partition_host_bytes(self, zkey: Groth16Zkey) -> int:
        """Upper bound of the host memory the backend holds for one partition, beyond the
        engine's witness and its staged copy. Default: a backend that computes H on the host (the
        scalars as it computes them, then H and the transform's scratch: n_vars + 2 domain Fr
        values)."""
        fr = zkey.curve.fr.n_bytes
        return zkey.n_vars * fr + 2 * zkey.domain_size * fr

    def scratch_bytes(self, key: Any, batch: int = 1) -> int:
        """Upper bound of the device memory a pass of ``batch`` partitions takes beyond its key,
        from the moment it takes the GPU lock until it gives it back (0: none)."""
        return 0

    def memory_budget_bytes(self) -> int | None:
        """The default VRAM budget when the config sets none (None: unbounded, no device memory)."""
        return None

    def visible_devices(self) -> list[int]:
        """Device ordinals this kind of backend can drive on this host."""
        return [0]

    def pinned_host_buffer(self, nbytes: int) -> HostBuffer:
        """Page-locked host memory for the engine's staging pool (only where ``pins_host_memory``)."""
        raise Unavailable(f"the {self.name} backend has no pinned host memory")

    def close(self) -> None:
        """Free the backend's own resources (kernels, streams, pools). Keys must be unloaded first."""
        return None
