"""The CPU path of the development setup (Python ints; for circuits up to ~2^12 constraints).

Each point section is the generator times the scalars of ``scalars.key_scalars``, computed with
one fixed-base table per group (``curves.scalar_mul.FixedBaseTable``: one mixed addition per
window, no doublings) and turned affine with one inversion per section. This path is the
reference the GPU path is compared with byte for byte.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..curves.encoding import encode_g1_mont, encode_g2_mont
from ..curves.points import CurveGroup
from ..curves.scalar_mul import FixedBaseTable, batch_to_affine
from ..formats.types import Groth16Zkey
from ..formats.compact_r1cs import CompactR1cs
from .circuit import check_for_setup
from .coefficients import record_layout, stored_values_cpu
from .dev_secrets import DevSecrets
from .key import assemble_zkey
from .scalars import key_scalars


TABLE_ENTRY_COST = 2.5  # a table entry (full addition + its share of the affine conversion) in mixed additions


def table_window(count: int, bits: int) -> int:
    """Window minimising table building plus products (measured on chain_2e8: w = 6 for ~1000 products)."""
    return min(range(2, 13), key=lambda w: math.ceil(bits / w) * (TABLE_ENTRY_COST * ((1 << w) - 1) + count))


@functools.lru_cache(maxsize=8)
def generator_table(group: CurveGroup, bits: int, window: int) -> FixedBaseTable:
    """Tables depend only on the group and the window: kept for the next key of the process."""
    return FixedBaseTable(group, group.generator, bits, window)


def generator_multiples(group: CurveGroup, scalars: list[int], bits: int) -> list:
    """k * generator for every k, affine (``None`` for k = 0 mod r)."""
    table = generator_table(group, bits, table_window(len(scalars), bits))
    products = [table.mul(k) for k in scalars]
    finite = [i for i, p in enumerate(products) if not group.ops.is_zero(p[2])]
    out: list = [None] * len(scalars)
    for i, point in zip(finite, batch_to_affine(group, [products[i] for i in finite])):
        out[i] = point
    return out


def dev_setup_cpu(r1cs: CompactR1cs, secrets: DevSecrets, path: str = "<development key>") -> Groth16Zkey:
    check_for_setup(r1cs, path)
    curve = r1cs.curve
    bits = curve.fr.bits
    scalars = key_scalars(r1cs, secrets)
    g1_scalars = scalars.a + scalars.b + scalars.c + scalars.h + scalars.ic
    g1_points = generator_multiples(curve.g1, g1_scalars, bits)
    n_vars, n_private, n = r1cs.n_wires, len(scalars.c), len(scalars.h)
    ends = np.cumsum([n_vars, n_vars, n_private, n])
    a, b1, c, h, ic = (g1_points[s:e] for s, e in zip([0, *ends], [*ends, len(g1_points)]))
    b2 = generator_multiples(curve.g2, scalars.b, bits)
    points = {"a": encode_g1_mont(curve, a), "b1": encode_g1_mont(curve, b1), "b2": encode_g2_mont(curve, b2),
              "c": encode_g1_mont(curve, c), "h": encode_g1_mont(curve, h)}
    layout = record_layout(r1cs)
    values = stored_values_cpu(r1cs, layout)
    return assemble_zkey(r1cs, secrets, layout, values, points, encode_g1_mont(curve, ic), path)
