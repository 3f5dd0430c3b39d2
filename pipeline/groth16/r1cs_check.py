"""Does a witness satisfy a circuit's R1CS? <A_i,w>·<B_i,w> = <C_i,w> (mod r) for every i.

A Groth16 proof of a witness that breaks a constraint is made without complaint and then
fails verification; checking first lets the service name the broken constraint instead.
``R1csChecker`` prepares what depends only on the circuit once (term signals, linear
combination bounds, and the coefficients as Python ints, deduplicated: circuits use few
distinct values), so each witness costs a handful of object-array passes in C loops.
"""
from __future__ import annotations

import numpy as np

from ..formats.types import R1cs, Witness


class R1csChecker:
    def __init__(self, r1cs: R1cs) -> None:
        self.r1cs = r1cs
        fr = r1cs.curve.fr
        lcs = [lc for constraint in r1cs.constraints for lc in constraint]  # a0, b0, c0, a1, ...
        lengths = np.array([lc.signals.shape[0] for lc in lcs], dtype=np.int64)
        self._signals = (np.concatenate([lc.signals for lc in lcs]).astype(np.intp) if lcs
                         else np.zeros(0, dtype=np.intp))
        values = (np.concatenate([lc.values for lc in lcs]).reshape(-1, fr.limbs) if lcs
                  else np.zeros((0, fr.limbs), dtype=np.uint64))
        distinct, which = np.unique(values, axis=0, return_inverse=True)
        self._coefficients = np.array(fr.ints_from_limbs(distinct), dtype=object)[which.reshape(-1)]
        starts = (np.cumsum(lengths) - lengths).astype(np.intp)
        self._nonempty = lengths > 0
        self._starts = starts[self._nonempty]
        self._n_lcs = len(lcs)

    @property
    def n_terms(self) -> int:
        return int(self._signals.shape[0])

    def first_unsatisfied(self, witness: Witness | np.ndarray) -> int | None:
        """Index of the first constraint that does not hold, or None if all do."""
        r1cs, fr = self.r1cs, self.r1cs.curve.fr
        if isinstance(witness, Witness):
            if witness.curve is not r1cs.curve:
                raise ValueError(f"witness is over {witness.curve.name} but the r1cs over {r1cs.curve.name}")
            values = witness.values
        else:
            values = witness
        if values.shape[0] != r1cs.n_wires:
            raise ValueError(f"witness has {values.shape[0]} values, the r1cs {r1cs.n_wires} wires")
        if self._n_lcs == 0:
            return None
        w = np.array(fr.ints_from_limbs(values), dtype=object)
        products = self._coefficients * w[self._signals]
        sums = np.zeros(self._n_lcs, dtype=object)  # an empty combination is 0 (reduceat would not say so)
        if products.shape[0]:
            sums[self._nonempty] = np.add.reduceat(products, self._starts)
        failing = np.flatnonzero((sums[0::3] * sums[1::3] - sums[2::3]) % fr.modulus)
        return int(failing[0]) if failing.shape[0] else None


def r1cs_is_satisfied(r1cs: R1cs, witness: Witness | np.ndarray) -> int | None:
    """One-off check: index of the first unsatisfied constraint, or None if all hold."""
    return R1csChecker(r1cs).first_unsatisfied(witness)
