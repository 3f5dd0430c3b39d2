"""A PoRep-shaped circuit of exactly 2^k domain rows with a satisfying witness, made with numpy
at any size (2^27 in well under a minute): the stand-in the dev-setup benchmark uses until the
seed-shaped generator (pipeline/synth) lands.

Shape: blocks of 64 bits b_i with b * (1 - b) = 0 each, packed into a 64-bit word x by one row
(sum 2^i b_i) * 1 = x; multiplication gates x_2k * x_2k+1 = z_k (one per two blocks); n_public
rows p_j * 1 = x_j binding the public signals; filler bit rows up to the domain. About 97% of
the witness is bits (64 of every 65.5 signals), half of them ones; A holds 2 terms per row on
average, B 2, C 0.02. Signals: 0 the constant, 1..n_public public, then bits, words, products.
"""
from __future__ import annotations

import numpy as np

from pipeline.curves import Curve
from pipeline.setup.circuit import CircuitMatrices, SparseMatrix

BITS = 64  # bits per packed word
ROWS_PER_BLOCK = BITS + 1


def _matrix(curve: Curve, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> SparseMatrix:
    """Concatenate (rows, signals, value ints as uint64 or 'r-1' markers) parts given in row order."""
    fr = curve.fr
    rows = np.concatenate([p[0] for p in parts]).astype(np.uint32)
    signals = np.concatenate([p[1] for p in parts]).astype(np.uint32)
    small = np.concatenate([p[2] for p in parts])  # uint64 value, or 0 meaning r - 1
    minus_one = (small == 0)[:, None]
    r_minus_one = fr.limbs_from_ints([fr.modulus - 1])
    values = np.zeros((rows.shape[0], fr.limbs), dtype=np.uint64)
    values[:, :1] = small[:, None]
    np.copyto(values, r_minus_one, where=minus_one)
    return SparseMatrix(rows, signals, values)


def standin_circuit(curve: Curve, log_domain: int, n_public: int = 4, seed: int = 0):
    """(CircuitMatrices, witness (n_vars, fr_limbs) uint64 plain) filling a 2^log_domain domain."""
    n_rows = (1 << log_domain) - n_public - 1  # with the public rows and the constant: the whole domain
    nb = max(n_public, (n_rows - n_public) * 2 // (2 * ROWS_PER_BLOCK + 1))
    nm = nb // 2
    nf = n_rows - ROWS_PER_BLOCK * nb - nm - n_public
    if nf < 0:
        raise ValueError(f"2^{log_domain} rows are too few for {n_public} public signals")
    first_bit = n_public + 1
    first_word = first_bit + BITS * nb
    first_product = first_word + nb
    first_filler = first_product + nm
    n_vars = first_filler + nf
    row_mul = ROWS_PER_BLOCK * nb
    row_pub, row_fill = row_mul + nm, row_mul + nm + n_public

    bit_sig = (first_bit + np.arange(nb * BITS, dtype=np.int64)).reshape(nb, BITS)
    bit_row = (ROWS_PER_BLOCK * np.arange(nb, dtype=np.int64))[:, None] + np.arange(BITS)
    pack_row = ROWS_PER_BLOCK * np.arange(nb, dtype=np.int64) + BITS
    words = first_word + np.arange(nb, dtype=np.int64)
    ones = np.ones
    k, j, f = np.arange(nm), np.arange(n_public), np.arange(nf)
    fill_sig = first_filler + f

    # A: per block, its 64 bit rows (b) then its packing row (sum 2^i b_i); then gates, publics, fillers
    a_block_rows = np.concatenate([bit_row, np.repeat(pack_row[:, None], BITS, 1)], axis=1).reshape(-1)
    a_block_sigs = np.concatenate([bit_sig, bit_sig], axis=1).reshape(-1)
    a_block_vals = np.concatenate([ones((nb, BITS), np.uint64), np.tile(np.uint64(1) << np.arange(BITS, dtype=np.uint64),
                                                                        (nb, 1))], axis=1).reshape(-1)
    a = _matrix(curve, [(a_block_rows, a_block_sigs, a_block_vals), (row_mul + k, words[2 * k], ones(nm, np.uint64)),
                        (row_pub + j, 1 + j, ones(n_public, np.uint64)), (row_fill + f, fill_sig, ones(nf, np.uint64))])
    # B: bit rows (1 - b): the constant and -b; packing rows 1; gates x_2k+1; publics 1; fillers (1 - b)
    b_bit_rows = np.repeat(bit_row[:, :, None], 2, axis=2).reshape(nb, -1)
    b_bit_sigs = np.stack([np.zeros_like(bit_sig), bit_sig], axis=2).reshape(nb, -1)
    b_bit_vals = np.tile(np.array([1, 0], dtype=np.uint64), (nb, BITS))  # 0 marks r - 1
    b_block = (np.concatenate([b_bit_rows, pack_row[:, None]], axis=1).reshape(-1),
               np.concatenate([b_bit_sigs, np.zeros((nb, 1), np.int64)], axis=1).reshape(-1),
               np.concatenate([b_bit_vals, ones((nb, 1), np.uint64)], axis=1).reshape(-1))
    b = _matrix(curve, [b_block, (row_mul + k, words[2 * k + 1], ones(nm, np.uint64)),
                        (row_pub + j, np.zeros(n_public, np.int64), ones(n_public, np.uint64)),
                        (np.repeat(row_fill + f, 2), np.stack([np.zeros(nf, np.int64), fill_sig], 1).reshape(-1),
                         np.tile(np.array([1, 0], dtype=np.uint64), nf))])
    # C: packing rows x, gates z, publics x_j
    c = _matrix(curve, [(pack_row, words, ones(nb, np.uint64)), (row_mul + k, first_product + k, ones(nm, np.uint64)),
                        (row_pub + j, words[j], ones(n_public, np.uint64))])
    circuit = CircuitMatrices(f"<stand-in circuit 2^{log_domain}>", curve, n_vars, n_public, n_rows, a, b, c)
    return circuit, _witness(curve, n_vars, nb, nm, nf, n_public, first_bit, first_word, first_product, first_filler,
                             np.random.default_rng(seed))


def _witness(curve, n_vars, nb, nm, nf, n_public, first_bit, first_word, first_product, first_filler, rng):
    fr = curve.fr
    w = np.zeros((n_vars, fr.limbs), dtype=np.uint64)
    w[0, 0] = 1
    bits = rng.integers(0, 2, size=(nb, BITS), dtype=np.uint64)
    w[first_bit:first_word, 0] = bits.reshape(-1)
    x = (bits << np.arange(BITS, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
    w[first_word:first_product, 0] = x
    # z = x_2k * x_2k+1 < 2^128: 32-bit halves, schoolbook, carried into two limbs
    lo_mask = np.uint64(0xFFFFFFFF)
    a_, b_ = x[0:2 * nm:2], x[1:2 * nm:2]
    a0, a1, b0, b1 = a_ & lo_mask, a_ >> np.uint64(32), b_ & lo_mask, b_ >> np.uint64(32)
    low, mid1, mid2, high = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (low >> np.uint64(32)) + (mid1 & lo_mask) + (mid2 & lo_mask)  # < 3 * 2^32
    w[first_product:first_filler, 0] = (low & lo_mask) | ((mid & lo_mask) << np.uint64(32))
    w[first_product:first_filler, 1] = high + (mid1 >> np.uint64(32)) + (mid2 >> np.uint64(32)) + (mid >> np.uint64(32))
    w[first_filler:, 0] = rng.integers(0, 2, size=nf, dtype=np.uint64)
    w[1:n_public + 1] = w[first_word:first_word + n_public]
    return w
