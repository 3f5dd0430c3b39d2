"""The four kinds of constraint rows of a seed-shaped circuit, written many rows at a time.

Every row defines one wire (row i defines wire i + 1; wire 0 is the constant 1):

    BOOL    free bit b          b * (1 - b) = 0                A [b]      B [1, -b]       C []
    SELECT  bit o = s ? a : c   (a - c) * s = o - c            A [a, -c]  B [s]           C [o, -c]
    PACK    x = sum 2^i b_i     (sum_i 2^i b_i) * 1 = x        A [b_i]    B [1]           C [x]
    MUL     z = (sum x + k)(sum y + k')   (x_1 + .. + x_t + k)(y_1 + .. + y_t + k') = z
            A, B: t wires and the constant wire times a full-width "round constant" k; C [z]

The witness is built in dependency order, one vectorized step per kind: free bits are drawn,
SELECT reads free bits, PACK reads any bits, MUL at depth d reads full-width values of depth
< d (PACK outputs are depth 0). Operands lie near the row that uses them (within
``operand_window`` places of the operand list, scaled to the row's position), as gadgets'
wires do in allocation order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..formats.binfile import over_chunks
from . import field_vec

BOOL, SELECT, PACK, MUL = 0, 1, 2, 3
ONE, MINUS_ONE = 0, 1  # coefficient codes; code 1 + i is 2^i for i >= 1 (2^0 is ONE); then constants
CODE_DTYPE = np.uint16
PLUS_MINUS = np.array([ONE, MINUS_ONE], dtype=CODE_DTYPE)
MUL_ROWS_PER_TASK = 1 << 14


def coefficient_table(modulus: int, pack_bits: int, constants: list[int]) -> np.ndarray:
    """Plain-form coefficients by code: 1, r - 1, 2^1 .. 2^(pack_bits - 1), then ``constants``."""
    limbs = (modulus.bit_length() + 63) // 64
    values = [1, modulus - 1] + [1 << i for i in range(1, pack_bits)] + constants
    raw = b"".join(v.to_bytes(8 * limbs, "little") for v in values)
    return np.frombuffer(raw, dtype="<u8").reshape(-1, limbs).copy()


def first_constant_code(pack_bits: int) -> int:
    return pack_bits + 1


def power_codes(n_bits: int) -> np.ndarray:
    """The code of 2^i for i in [0, n_bits)."""
    codes = np.arange(1, n_bits + 1, dtype=CODE_DTYPE)
    codes[0] = ONE
    return codes


@dataclass
class Matrix:
    """One matrix under construction: row starts fixed, terms filled kind by kind."""

    starts: np.ndarray  # (n_rows + 1,) int64
    signals: np.ndarray  # (terms,) uint32
    coeffs: np.ndarray  # (terms,) uint16 codes

    @classmethod
    def with_lengths(cls, lengths: np.ndarray) -> "Matrix":
        starts = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        n = int(starts[-1])
        return cls(starts, np.zeros(n, dtype=np.uint32), np.zeros(n, dtype=CODE_DTYPE))

    def put(self, rows: np.ndarray, signals: np.ndarray, codes) -> None:
        """Terms of ``rows`` (k,): signals (k, t) and codes (t,) or (k, t), in row order."""
        t = signals.shape[1]
        at = self.starts[rows][:, None] + np.arange(t)
        self.signals[at] = signals
        self.coeffs[at] = codes


def near(rng: np.random.Generator, wires: np.ndarray, n_wires: int, pool_size: int, width: int,
         window: int) -> np.ndarray:
    """Start of a run of ``width`` operands in a pool of ``pool_size``, near each row's place
    (wrapping around the pool's ends, so that small pools are still drawn from evenly)."""
    place = wires.astype(np.int64) * pool_size // n_wires - width // 2
    place += rng.integers(-window, window + 1, size=wires.shape[0])
    return place % (pool_size - width + 1)


class RowFiller:
    """Writes rows of each kind into the three matrices and their wires into the witness."""

    def __init__(self, matrices: tuple[Matrix, Matrix, Matrix], witness: np.ndarray, rng: np.random.Generator,
                 window: int, modulus: int, table: np.ndarray) -> None:
        self.a, self.b, self.c = matrices
        self.witness, self.rng, self.window = witness, rng, window
        self.modulus, self.table = modulus, table
        self.n_wires = witness.shape[0]

    def _near(self, wires: np.ndarray, pool: np.ndarray, width: int) -> np.ndarray:
        """(k, width) runs of neighbouring pool entries, one near each row's wire."""
        first = near(self.rng, wires, self.n_wires, pool.shape[0], width, self.window)
        return pool[first[:, None] + np.arange(width)]

    def _bits(self, wires: np.ndarray) -> np.ndarray:
        return self.witness[wires, 0]

    def bool_rows(self, rows: np.ndarray) -> None:
        wires = (rows + 1).astype(np.uint32)
        self.a.put(rows, wires[:, None], ONE)
        self.b.put(rows, np.stack([np.zeros_like(wires), wires], axis=1), PLUS_MINUS)

    def select_rows(self, rows: np.ndarray, free: np.ndarray) -> None:
        """o = s ? x : y over three neighbouring free bits (x, y, s)."""
        wires = (rows + 1).astype(np.uint32)
        x, y, s = self._near(wires, free, 3).T
        self.a.put(rows, np.stack([x, y], axis=1), PLUS_MINUS)
        self.b.put(rows, s[:, None], ONE)
        self.c.put(rows, np.stack([wires, y], axis=1), PLUS_MINUS)
        self.witness[wires, 0] = np.where(self._bits(s) != 0, self._bits(x), self._bits(y))

    def pack_rows(self, rows: np.ndarray, bits: np.ndarray, pack_bits: int) -> None:
        """x = sum 2^i b_i over ``pack_bits`` neighbouring bits (x < 2^pack_bits < r)."""
        wires = (rows + 1).astype(np.uint32)
        operands = self._near(wires, bits, pack_bits)
        self.a.put(rows, operands, power_codes(pack_bits))
        self.b.put(rows, np.zeros((rows.shape[0], 1), dtype=np.uint32), ONE)
        self.c.put(rows, wires[:, None], ONE)
        packed = np.packbits(self._bits(operands).astype(np.uint8), axis=1, bitorder="little")
        padded = np.zeros((rows.shape[0], 8 * self.witness.shape[1]), dtype=np.uint8)
        padded[:, : packed.shape[1]] = packed
        self.witness[wires] = padded.view("<u8")

    def mul_rows(self, rows: np.ndarray, pool: np.ndarray, terms: int, constant_codes: np.ndarray) -> None:
        """z = (sum of ``terms`` pool values near the row + k) * (sum of another run + k'), the
        constants k, k' drawn from ``constant_codes`` (no constant term if it is empty)."""
        wires = (rows + 1).astype(np.uint32)
        sides = []
        for matrix in (self.a, self.b):
            ops = self._near(wires, pool, terms)
            codes = np.zeros(ops.shape, dtype=CODE_DTYPE)
            if constant_codes.shape[0]:
                ops = np.concatenate([ops, np.zeros_like(ops[:, :1])], axis=1)  # wire 0, the constant 1
                codes = np.concatenate([codes, self.rng.choice(constant_codes, size=(rows.shape[0], 1))], axis=1)
            matrix.put(rows, ops, codes)
            sides.append((ops, codes))
        self.c.put(rows, wires[:, None], ONE)

        def side_sum(ops: np.ndarray, codes: np.ndarray, lo: int, hi: int) -> np.ndarray:
            values = self.witness[ops[lo:hi]]
            if constant_codes.shape[0]:
                values[:, -1] = self.table[codes[lo:hi, -1]]  # the last term: k times wire 0 (= 1)
            return field_vec.sum_of_limbs(values)

        def products(lo: int, hi: int) -> None:
            x, y = (side_sum(ops, codes, lo, hi) for ops, codes in sides)
            self.witness[wires[lo:hi]] = field_vec.digits_to_limbs(field_vec.mul_mod(x, y, self.modulus))

        over_chunks(rows.shape[0], MUL_ROWS_PER_TASK, products)
