"""One pass over a witness before its MSMs: the staging copy, the 0 / 1 / other counts and the
check that every value is below r, fused.

The MSM kernels read a scalar as its 256 bits, and the device converts witness values to
Montgomery form assuming they are below r: a value in [r, 2^256) gives a wrong proof, even
though it satisfies every constraint mod r. Files are checked when read (``read_wtns``), but
``Witness`` objects handed to the engine or to ``prove`` were not. This pass checks them where
every value is read anyway (prep_msm's staging copy and counts): block by block, so that a
block copied into the staging buffer is counted and checked while it is in cache, and the check
is one maximum of the top limb per block (only a block whose top limb reaches r's is compared
in full). bench/witness_scan.py measures what the check adds.
"""
from __future__ import annotations

import numpy as np

from ..backends.protocol import WitnessShape
from ..errors import BadInput
from ..formats.binfile import ROWS_PER_TASK, first_not_below, over_chunks
from ..formats.types import Witness

# 2 MiB of 4-limb values per block: copied, counted and checked while in cache. Each numpy call
# gives the GIL back and takes it again; beside a thread running Python (a streamed pass queueing
# its steps under the GPU lock) each retake can wait a whole switch interval (5 ms), so a block
# is ~10 such waits: 2^13-row blocks made a 2^23 scan take 6 s instead of 0.04 s beside a Python
# loop (dev box, bench/NOTES.md "GIL convoy"); 2^16 is 8x fewer waits and as fast alone.
BLOCK_ROWS = 1 << 16


class WitnessOutOfRange(BadInput):
    """A witness value is not below the scalar field's modulus r (named with its signal)."""


def scan_witness(values: np.ndarray, modulus: int | None, prefix_len: int, label: str,
                 out: np.ndarray | None = None) -> WitnessShape:
    """Count the 0 / 1 / other values of an (n, limbs) uint64 plain-form witness (``WitnessShape``;
    prefix: the constant and the public signals) and check each is below ``modulus`` (None: no
    check), copying the witness into ``out`` (same shape; the staging buffer) on the way.

    Raises ``WitnessOutOfRange`` naming ``label`` (the file or partition), the first signal at or
    above r and its value. Tasks of ``ROWS_PER_TASK`` rows run on the formats worker pool (numpy
    releases the GIL); blocking: run it off the event loop."""
    n, limbs = values.shape
    if out is not None and out.shape != values.shape:
        raise ValueError(f"staging buffer shape {out.shape} does not match the witness {values.shape}")
    top_of_r = None if modulus is None else np.uint64(modulus >> (64 * (limbs - 1)))

    def task(a: int, b: int) -> tuple[int, int, int | None]:
        high = np.empty(BLOCK_ROWS, dtype=np.uint64)  # OR of the limbs above the lowest
        scratch = np.empty(BLOCK_ROWS, dtype=np.uint64)
        n_one = n_other = 0
        for start in range(a, b, BLOCK_ROWS):
            stop = min(start + BLOCK_ROWS, b)
            rows = values[start:stop]
            if out is not None:
                out[start:stop] = rows
                rows = out[start:stop]  # the copy just written: in cache
            k = stop - start
            h, t = high[:k], scratch[:k]
            np.copyto(h, rows[:, 1])
            for i in range(2, limbs):
                np.bitwise_or(h, rows[:, i], out=h)
            np.right_shift(rows[:, 0], 1, out=t)
            n_other += int(np.count_nonzero(np.bitwise_or(t, h, out=t)))  # high limbs or low > 1
            np.bitwise_xor(rows[:, 0], 1, out=t)
            n_one += k - int(np.count_nonzero(np.bitwise_or(t, h, out=t)))  # exactly 1
            if top_of_r is not None and rows[:, limbs - 1].max() >= top_of_r:
                bad = first_not_below(rows, modulus)  # one block: compared in this thread
                if bad is not None:
                    return n_one, n_other, start + bad
        return n_one, n_other, None

    parts = over_chunks(n, ROWS_PER_TASK, task)
    bad = next((p[2] for p in parts if p[2] is not None), None)
    if bad is not None:
        raise out_of_range(label, values, bad, modulus)
    prefix = WitnessShape.of(values[:prefix_len], prefix_len)
    return WitnessShape(n, sum(p[0] for p in parts), sum(p[1] for p in parts), prefix_len, prefix.n_one,
                        prefix.n_other)



def check_below_r(witness: Witness) -> None:
    """The check alone, for a path that stages and counts nothing (``groth16.prove``): one
    vectorised pass (``formats.binfile.first_not_below``)."""
    modulus = witness.curve.fr.modulus
    bad = first_not_below(witness.values, modulus)
    if bad is not None:
        raise out_of_range(witness.path, witness.values, bad, modulus)


def out_of_range(label: str, values: np.ndarray, index: int, modulus: int) -> WitnessOutOfRange:
    value = int.from_bytes(np.ascontiguousarray(values[index], dtype="<u8").tobytes(), "little")
    return WitnessOutOfRange(f"{label}: signal {index} is {value}, not below the scalar field's modulus r = "
                             f"{modulus} (an MSM would read it as a {64 * values.shape[1]}-bit scalar: a wrong proof)")
