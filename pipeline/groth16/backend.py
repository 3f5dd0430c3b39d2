"""The contract between the prover (and the engine) and a compute backend.

The prover never asks which backend it has. A backend does the heavy steps of one proof:
the quotient polynomial H (a, b, c from the key's coefficients, then NTTs on snarkjs's
coset) and the multi-scalar multiplications. Results come back as Jacobian points of
Python ints (``pipeline.curves.points``), so assembly is backend-independent.

``compute_h`` may return an opaque handle (device memory on the GPU); only ``msms`` of the
same backend consumes it, and ``h_to_host`` downloads it for tests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..formats.types import Groth16Zkey

JacobianPoint = tuple  # (X, Y, Z) over Fq or Fq2 ints, see curves.points


@dataclass(frozen=True)
class MsmResults:
    """The five MSMs of a Groth16 proof (before r, s blinding and the vk terms)."""

    a_g1: JacobianPoint  # sum w_i A_i, i over all signals
    b_g1: JacobianPoint  # sum w_i B1_i
    b_g2: JacobianPoint | None  # sum w_i B2_i; None when placed elsewhere (CPU G2 MSM)
    c_g1: JacobianPoint  # sum w_i C_i, i over private signals (the "L" query)
    h_g1: JacobianPoint  # sum h_i H_i
    timings_ms: dict[str, float] = field(default_factory=dict)


class Backend(Protocol):
    name: str

    def load_key(self, zkey: Groth16Zkey) -> Any:
        """Make the key resident for this backend (host arrays, or device upload); returns a handle."""

    def unload_key(self, key: Any) -> None:
        """Free what ``load_key`` took."""

    def compute_h(self, key: Any, witness: np.ndarray) -> Any:
        """Quotient evaluations on snarkjs's odd coset (domain_size scalars, plain form)."""

    def h_to_host(self, h: Any) -> np.ndarray:
        """(domain_size, fr_limbs) uint64 plain form, for checks."""

    def msms(self, key: Any, witness: np.ndarray, h: Any, with_b_g2: bool = True) -> MsmResults:
        """A, B1, (B2), C and H MSMs. ``witness``: (n_vars, fr_limbs) uint64 plain form."""

    def msm_b_g2(self, key: Any, witness: np.ndarray) -> JacobianPoint:
        """The G2 MSM of B alone (for placing it on another device or the CPU)."""
