"""Constraint systems (.r1cs, as circom writes them): ``read_r1cs``. The satisfaction check is
``groth16.r1cs_check``.

Layout (binfile magic "r1cs", version 1; sections may come in any order):

    1 header        u32 n8, prime, u32 nWires, u32 nPubOut, u32 nPubIn, u32 nPrvIn,
                    u64 nLabels, u32 nConstraints
    2 constraints   nConstraints x (A, B, C), each: u32 nTerms, nTerms x (u32 wire, n8-byte value)
    3 wire->label   nWires x u64 (size checked, not read)
    4, 5            custom gates (PLONK only: ignored)

Coefficients are plain form. Terms are variable-length, so one Python pass over the 3 x
nConstraints term counts finds where each linear combination lies; the terms themselves are
then pulled out with one mask and one structured view, with no Python work per term.
"""
from __future__ import annotations

import os

import numpy as np

from .binfile import first_not_below, read_array, read_layout
from .errors import FormatError
from .types import LinearCombination, R1cs
from .zkey import read_scalar_field_header

SECTION_NAMES = {1: "header", 2: "constraints", 3: "wire to label map", 4: "custom gates list",
                 5: "custom gates uses"}


def term_dtype(limbs: int) -> np.dtype:
    return np.dtype([("wire", "<u4"), ("value", "<u8", (limbs,))])


def read_r1cs(path: str | os.PathLike) -> R1cs:
    bf = read_layout(path, "r1cs", 1, SECTION_NAMES)
    path = bf.path
    cur = bf.cursor(1)
    n8, prime, curve = read_scalar_field_header(cur, path, "coefficient")
    n_wires = cur.u32("nWires")
    n_pub_out = cur.u32("nPubOut")
    n_pub_in = cur.u32("nPubIn")
    n_prv_in = cur.u32("nPrvIn")
    n_labels = cur.u64("nLabels")
    n_constraints = cur.u32("nConstraints")
    cur.expect_end("the r1cs header")
    if 1 + n_pub_out + n_pub_in + n_prv_in > n_wires:
        raise cur.fail(f"1 + nPubOut + nPubIn + nPrvIn = {1 + n_pub_out + n_pub_in + n_prv_in} exceeds "
                       f"nWires = {n_wires}")
    if 3 in bf.sections:
        bf.expect_size(3, 8 * n_wires, f"nWires = {n_wires} labels of 8 bytes")

    constraints = _read_constraints(bf, curve, n8, n_wires, n_constraints)
    return R1cs(path=path, curve=curve, n_wires=n_wires, n_pub_out=n_pub_out, n_pub_in=n_pub_in,
                n_prv_in=n_prv_in, n_labels=n_labels, constraints=constraints)


def _read_constraints(bf, curve, n8: int, n_wires: int, n_constraints: int):
    path, label = bf.path, bf.label(2)
    _, size = bf.require(2)
    if 12 * n_constraints > size:
        raise FormatError(path, f"{label}: too short: {n_constraints} constraints need at least "
                                f"{12 * n_constraints} bytes (three term counts each), found {size}")
    data = read_array(bf, 2, 0, np.uint8, (size,))
    record = 4 + n8
    # 1. Where each linear combination's count lies (Python, one step per LC).
    n_lcs = 3 * n_constraints
    count_offsets = np.empty(n_lcs, dtype=np.int64)
    counts = np.empty(n_lcs, dtype=np.int64)
    raw = data.tobytes()
    pos = 0
    for i in range(n_lcs):
        if pos + 4 > size:
            raise FormatError(path, f"{label}: too short: constraint {i // 3} {'ABC'[i % 3]} needs a term "
                                    f"count at offset {pos}, section is {size} bytes")
        n_terms = int.from_bytes(raw[pos : pos + 4], "little")
        count_offsets[i] = pos
        counts[i] = n_terms
        pos += 4 + n_terms * record
        if pos > size:
            raise FormatError(path, f"{label}: too short: constraint {i // 3} {'ABC'[i % 3]} has {n_terms} "
                                    f"terms, ending at offset {pos}, section is {size} bytes")
    if pos != size:
        raise FormatError(path, f"{label}: expected {pos} bytes for {n_constraints} constraints, found {size}")
    # 2. All terms at once: drop the 4-byte counts, view the rest as packed records.
    keep = np.ones(size, dtype=bool)
    if n_lcs:
        keep[(count_offsets[:, None] + np.arange(4)).reshape(-1)] = False
    terms = data[keep].view(term_dtype(curve.fr.limbs))
    wires = terms["wire"].copy()
    values = np.ascontiguousarray(terms["value"])
    bad = np.flatnonzero(wires >= n_wires)
    if bad.size:
        t = int(bad[0])
        i = int(np.searchsorted(np.cumsum(counts), t, side="right"))
        raise FormatError(path, f"{label}: constraint {i // 3} {'ABC'[i % 3]}: wire {int(wires[t])} is not below "
                                f"nWires = {n_wires}")
    bad_value = first_not_below(values, curve.fr.modulus)
    if bad_value is not None:
        i = int(np.searchsorted(np.cumsum(counts), bad_value, side="right"))
        raise FormatError(path, f"{label}: constraint {i // 3} {'ABC'[i % 3]}: a coefficient is not below "
                                f"the prime")
    # 3. One LinearCombination per (constraint, matrix): views into the flat arrays.
    ends = np.cumsum(counts).tolist()
    starts = [0] + ends[:-1]
    lcs = [LinearCombination(wires[s:e], values[s:e]) for s, e in zip(starts, ends)]
    return tuple(tuple(lcs[3 * c : 3 * c + 3]) for c in range(n_constraints))
