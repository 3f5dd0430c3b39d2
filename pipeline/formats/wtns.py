"""Witness files (.wtns, as circom's witness calculator and snarkjs write them).

Layout (binfile magic "wtns", version 2):

    1 header   u32 n8, prime (n8 bytes), u32 nWitness
    2 values   nWitness x n8 bytes, little-endian, plain form (not Montgomery)

The prime names the curve (it is the scalar field r). Values are read straight into an aligned
(n, limbs) uint64 array and checked below the prime with a vectorized limb compare.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Iterable

import numpy as np

from ..curves import Curve
from .binfile import FILE_HEADER, SECTION_HEADER, first_not_below, read_array, read_layout
from .errors import FormatError
from .types import Witness
from .zkey import read_scalar_field_header

SECTION_NAMES = {1: "header", 2: "values"}
WTNS_VERSION = 2


def read_wtns(path: str | os.PathLike) -> Witness:
    bf = read_layout(path, "wtns", WTNS_VERSION, SECTION_NAMES)
    path = bf.path
    cur = bf.cursor(1)
    n8, prime, curve = read_scalar_field_header(cur, path, "value")
    n_witness = cur.u32("nWitness")
    cur.expect_end("n8, prime, nWitness")
    bf.expect_size(2, n_witness * n8, f"nWitness = {n_witness} values of {n8} bytes")
    values = read_array(bf, 2, 0, "<u8", (n_witness, curve.fr.limbs))
    bad = first_not_below(values, prime)
    if bad is not None:
        raise FormatError(path, f"{bf.label(2)}: value {bad} is not below the prime ({curve.name}'s r)")
    return Witness(path=path, curve=curve, values=values)


def witness_limbs(curve: Curve, values: np.ndarray | Iterable[int]) -> np.ndarray:
    """Witness values as an (n, limbs) uint64 array, checked below r (ints or an array accepted)."""
    fr = curve.fr
    if isinstance(values, np.ndarray):
        if values.dtype != np.uint64 or values.ndim != 2 or values.shape[1] != fr.limbs:
            raise ValueError(f"witness array must be (n, {fr.limbs}) uint64, got {values.dtype} {values.shape}")
        arr = np.ascontiguousarray(values, dtype="<u8")
    else:
        ints = [int(v) for v in values]
        if any(not 0 <= v < fr.modulus for v in ints):
            raise ValueError(f"witness values must lie in [0, r) of {curve.name}")
        arr = fr.limbs_from_ints(ints)
    if first_not_below(arr, fr.modulus) is not None:
        raise ValueError(f"witness values must lie in [0, r) of {curve.name}")
    return arr


def write_wtns(path: str | os.PathLike, curve: Curve, values: np.ndarray | Iterable[int]) -> None:
    """Write a version-2 .wtns that snarkjs reads (values plain form, below r)."""
    arr = witness_limbs(curve, values)
    n8 = curve.fr.n_bytes
    header = struct.pack("<I", n8) + curve.fr.modulus.to_bytes(n8, "little") + struct.pack("<I", arr.shape[0])
    with open(path, "wb") as fh:
        fh.write(FILE_HEADER.pack(b"wtns", WTNS_VERSION, 2))
        fh.write(SECTION_HEADER.pack(1, len(header)))
        fh.write(header)
        fh.write(SECTION_HEADER.pack(2, arr.nbytes))
        fh.write(arr.reshape(-1).view(np.uint8).data)
