"""What the readers return: plain frozen dataclasses over numpy arrays.

Forms (know them for every buffer):
- curve points in ``Groth16Zkey.points_*`` are affine, coordinates in **Montgomery form**
  exactly as snarkjs stores them; the point at infinity is all-zero limbs.
  G1: shape (n, 2, fq_limbs) as (x, y). G2: shape (n, 2, 2, fq_limbs) as ((x.c0, x.c1), (y.c0, y.c1)).
- ``Groth16Zkey.coeff_values_stored``: the A/B matrix coefficients as snarkjs stores them,
  value * R^2 mod r ("Montgomery twice", R = 2^256 mod r on both curves), so that one
  Montgomery product with a plain witness value gives the Montgomery form of
  coefficient * witness. ``coeff_value_ints`` gives the true values. The records are the r1cs
  A and B terms (C is not stored) plus, for each i in 0..n_public, one extra row in A:
  (constraint n_constraints + i, signal i, value 1). Checked on every fixture against the
  .r1cs (tests/formats/test_zkey.py).
- vk points (``alpha1`` ... ``ic``) are decoded: affine tuples of Python ints in plain form,
  ``None`` for infinity.
- witness values (``Witness.values``) are plain form, shape (n, fr_limbs), as in ``.wtns``.
- ``Groth16Zkey.csr``: A and B by row (``CsrMatrix``), present when the key came prepared
  (``pipeline.keycache``); then the coefficient arrays are in that order too (A's rows, then B's).
  Arrays may be read-only maps of the key's or the cache's files (``np.memmap``), possibly
  unaligned (a zkey section starts at any multiple of 4 bytes).
- ``Groth16Zkey.points_on_host`` False: the ``points_*`` arrays are placeholders of the points' shapes (their
  sizes are right, their contents are not the points), made by ``point_placeholders``; the points live
  only on the device where the GPU development setup left them. Whoever reads points from host memory
  goes through ``Groth16Zkey.host_points``, which refuses such a key by name (``PointsNotOnHost``).
- ``Groth16Zkey.coeff_table``: with ``coeff_table_prepared``, the coefficient table of the CSR
  values (``CoefficientTable``: indices of A's then B's values, in the order of ``csr``) as the
  key cache stored it, or None when the key has more than 2^16 distinct values; without it, not
  known (whoever needs one computes it from the CSR).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..curves import Curve
from ..errors import BadInput
from .coeff_table import CoefficientTable

G1Affine = tuple[int, int] | None
G2Affine = tuple[tuple[int, int], tuple[int, int]] | None

MATRIX_A = 0
MATRIX_B = 1
POINT_SECTIONS = ("a", "b1", "b2", "c", "h")  # Groth16Zkey.points_<name>: zkey sections 5..9, in file order


def point_row_shape(curve: Curve, section: str) -> tuple[int, ...]:
    """The uint64 shape of one stored point of ``section``: (x, y) over Fq, or over Fq2 for B2."""
    return (2, 2, curve.fq.limbs) if section == "b2" else (2, curve.fq.limbs)


class PointsNotOnHost(BadInput):
    """A key whose points are only on a device (``Groth16Zkey.points_on_host`` False) was asked for them in
    host memory: to upload it again, stream it, write it or prove with it on the CPU."""


def point_placeholders(shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """uint64 arrays of these shapes that take no memory (every element reads the same zero word, and
    they are read-only): the ``points_*`` of a key whose points stay on the device."""
    zero = np.zeros(1, dtype=np.uint64)
    return {name: np.lib.stride_tricks.as_strided(zero, shape, (0,) * len(shape), writeable=False)
            for name, shape in shapes.items()}


@dataclass(frozen=True, eq=False)
class CsrMatrix:
    """One coefficient matrix by row: row r's terms are ``cols[row_ptr[r]:row_ptr[r + 1]]`` and the
    same rows of ``vals``, in the order the zkey lists them (a stable sort by row)."""

    row_ptr: np.ndarray  # (domain_size + 1,) uint32
    cols: np.ndarray  # (nnz,) uint32 signal index
    vals: np.ndarray  # (nnz, fr_limbs) uint64, stored form (value * R^2 mod r)


@dataclass(frozen=True, eq=False)
class Groth16Zkey:
    path: str
    curve: Curve
    n_vars: int  # witness length, including the constant 1 at index 0
    n_public: int  # public signals (outputs + public inputs), witness[1 .. n_public]
    domain_size: int  # power of two >= constraints + n_public + 1
    alpha1: G1Affine
    beta1: G1Affine
    beta2: G2Affine
    gamma2: G2Affine
    delta1: G1Affine
    delta2: G2Affine
    ic: tuple[G1Affine, ...]  # n_public + 1 points
    coeff_matrix: np.ndarray  # (m,) uint32: MATRIX_A or MATRIX_B
    coeff_constraint: np.ndarray  # (m,) uint32 row, < domain_size
    coeff_signal: np.ndarray  # (m,) uint32 column, < n_vars
    coeff_values_stored: np.ndarray  # (m, fr_limbs) uint64, value*R^2 mod r
    points_a: np.ndarray  # (n_vars, 2, fq_limbs) Montgomery
    points_b1: np.ndarray  # (n_vars, 2, fq_limbs) Montgomery
    points_b2: np.ndarray  # (n_vars, 2, 2, fq_limbs) Montgomery
    points_c: np.ndarray  # (n_vars - n_public - 1, 2, fq_limbs) Montgomery, for private signals
    points_h: np.ndarray  # (domain_size, 2, fq_limbs) Montgomery
    sections: dict[int, tuple[int, int]] = field(default_factory=dict)  # id -> (offset, size)
    csr: tuple[CsrMatrix, CsrMatrix] | None = None  # (A, B) by row when prepared (pipeline.keycache)
    coeff_table: CoefficientTable | None = None  # the CSR values' table when prepared (None: > 2^16 values)
    coeff_table_prepared: bool = False  # whether coeff_table says it; else nobody looked
    points_on_host: bool = True  # False: points_* are placeholders (point_placeholders), the points on a device

    @property
    def log_domain_size(self) -> int:
        return self.domain_size.bit_length() - 1

    def coeff_value_ints(self) -> list[int]:
        """True coefficient values (stored * R^-2 mod r)."""
        fr = self.curve.fr
        r_inv2 = fr.r_mont_inv * fr.r_mont_inv % fr.modulus
        return [v * r_inv2 % fr.modulus for v in fr.ints_from_limbs(self.coeff_values_stored)]

    def verification_key(self) -> "VerificationKey":
        return VerificationKey.from_zkey(self)

    def host_points(self, section: str) -> np.ndarray:
        """The point array of ``section`` (a, b1, b2, c, h) in host memory; ``PointsNotOnHost`` for a key
        whose points are only on a device."""
        if not self.points_on_host:
            raise PointsNotOnHost(f"{self.path}: the key's points ({section} asked for) are only on the device the "
                                  f"development setup made them on; they cannot be read from host memory (to upload "
                                  f"the key again, stream it, write it or prove on the CPU)")
        return getattr(self, f"points_{section}")

    def host_bytes(self) -> int:
        points = [getattr(self, f"points_{name}") for name in POINT_SECTIONS] if self.points_on_host else []
        arrays = (self.coeff_matrix, self.coeff_constraint, self.coeff_signal, self.coeff_values_stored, *points)
        row_ptrs = sum(m.row_ptr.nbytes for m in self.csr) if self.csr else 0  # cols and vals are the coefficients
        table = self.coeff_table.nbytes if self.coeff_table is not None else 0
        return sum(a.nbytes for a in arrays) + row_ptrs + table


@dataclass(frozen=True)
class VerificationKey:
    """What ``verification_key.json`` holds (vk_alphabeta_12 is derived, not stored)."""

    curve: Curve
    n_public: int
    alpha1: G1Affine
    beta2: G2Affine
    gamma2: G2Affine
    delta2: G2Affine
    ic: tuple[G1Affine, ...]  # n_public + 1 points

    @classmethod
    def from_zkey(cls, zkey: "Groth16Zkey") -> "VerificationKey":
        return cls(zkey.curve, zkey.n_public, zkey.alpha1, zkey.beta2, zkey.gamma2, zkey.delta2, zkey.ic)


class ProofPoints(NamedTuple):
    """A proof as read from proof.json: affine points in plain form (``None`` = infinity)."""

    pi_a: G1Affine
    pi_b: G2Affine
    pi_c: G1Affine


@dataclass(frozen=True, eq=False)
class Witness:
    path: str
    curve: Curve
    values: np.ndarray  # (n, fr_limbs) uint64, plain form

    def __len__(self) -> int:
        return self.values.shape[0]


@dataclass(frozen=True)
class LinearCombination:
    signals: np.ndarray  # (k,) uint32
    values: np.ndarray  # (k, fr_limbs) uint64, plain form


@dataclass(frozen=True, eq=False)
class R1cs:
    path: str
    curve: Curve
    n_wires: int
    n_pub_out: int
    n_pub_in: int
    n_prv_in: int
    n_labels: int
    constraints: tuple[tuple[LinearCombination, LinearCombination, LinearCombination], ...]

    @property
    def n_public(self) -> int:
        return self.n_pub_out + self.n_pub_in

