"""Seed-shaped circuits: 2^k-domain R1CS shaped like a Filecoin PoRep partition, with a witness.

Public API (stable; ``pipeline.synth`` re-exports it):

    from pipeline.synth import CircuitShape, generate_circuit, circuit_stats

    r1cs, witness = generate_circuit(log_constraints=20, n_public=8, curve="bls12381",
                                     seed=0, bit_fraction=0.95)     # any CircuitShape field
    r1cs      pipeline.formats.compact_r1cs.CompactR1cs: per matrix A, B, C a CSR
              (starts int64, signals uint32, coeffs uint8 codes into r1cs.coeff_table, plain
              form); r1cs.term_values(matrix, lo, hi) expands codes to (m, limbs) uint64.
              r1cs.n_constraints = 2^k - n_public - 1, so snarkjs's domain is exactly 2^k
              (r1cs.domain_size); n_wires = n_constraints + 1.
    witness   pipeline.formats.types.Witness: values (n_wires, limbs) uint64, plain form;
              wire 0 is 1, wires 1..n_public the public inputs (nPubOut = 0).
    circuit_stats(r1cs, witness) -> dict of the measured shape (terms per row, bit fraction...).

Writing snarkjs files: ``pipeline.formats.r1cs_writer.write_r1cs(path, r1cs)`` and
``pipeline.formats.wtns.write_wtns(path, curve, witness.values)``; ``zkpipe synth-circuit``.
Vectorized satisfaction check: ``pipeline.synth.check.first_unsatisfied(r1cs, witness)``.
The rows are described in ``gates``; docs/synth_circuits.md gives the shape and its defaults.
Deterministic: the same arguments give the same circuit and witness, byte for byte.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from ..curves import Curve, curve_by_name
from ..errors import BadInput
from ..formats.compact_r1cs import CompactR1cs, CsrMatrix
from ..formats.types import Witness
from . import gates
from .gates import BOOL, MUL, PACK, SELECT

MIN_LOG_CONSTRAINTS, MAX_LOG_CONSTRAINTS = 10, 28


@dataclass(frozen=True)
class CircuitShape:
    """The fractions and sizes that shape a circuit (defaults: a PoRep-like partition)."""

    bit_fraction: float = 0.95  # wires whose value is a bit (BOOL and SELECT rows)
    one_fraction: float = 0.5  # free bits equal to 1 (SELECT keeps the same fraction)
    select_fraction: float = 0.5  # bits made by SELECT gates; the rest are free BOOL bits
    pack_fraction: float = 0.05  # full-width values made by PACK; the rest by MUL gates
    pack_bits: int | None = None  # bits per PACK (None: r's bit length - 1, full width)
    mul_terms: int = 12  # wires in A and in B of a MUL gate (a width-12 linear layer)
    round_constants: int = 16  # distinct full-width constants MUL gates add (0: no constant term)
    mul_depth: int = 4  # layers of MUL gates, each reading values of the layers below
    operand_window: int = 4096  # operands lie within this many places of the row's own

    def pack_bits_for(self, curve: Curve) -> int:
        return curve.fr.modulus.bit_length() - 1 if self.pack_bits is None else self.pack_bits

    def describe(self) -> str:
        """One line for benchmark tables."""
        return ", ".join(f"{k}={v}" for k, v in asdict(self).items())


@dataclass(frozen=True)
class RowPlan:
    n_constraints: int
    n_public: int
    n_bool: int
    n_select: int
    n_pack: int
    n_mul: int
    pack_bits: int


def plan_rows(log_constraints: int, n_public: int, curve: Curve, shape: CircuitShape) -> RowPlan:
    """How many rows of each kind; every bad parameter raises ``BadInput`` naming it."""
    if not isinstance(log_constraints, int) or not MIN_LOG_CONSTRAINTS <= log_constraints <= MAX_LOG_CONSTRAINTS:
        raise BadInput(f"log_constraints must be an integer in [{MIN_LOG_CONSTRAINTS}, {MAX_LOG_CONSTRAINTS}], "
                         f"got {log_constraints!r}")
    if log_constraints > curve.fr.two_adicity:
        raise BadInput(f"log_constraints {log_constraints} exceeds {curve.name}'s 2-adicity {curve.fr.two_adicity}")
    for name in ("bit_fraction", "one_fraction", "select_fraction", "pack_fraction"):
        value = getattr(shape, name)
        if not 0.0 <= value <= 1.0:
            raise BadInput(f"{name} must lie in [0, 1], got {value}")
    max_pack = curve.fr.modulus.bit_length() - 1
    pack_bits = shape.pack_bits_for(curve)
    if not 1 <= pack_bits <= max_pack:
        raise BadInput(f"pack_bits must lie in [1, {max_pack}] on {curve.name} (below r), got {pack_bits}")
    if not 1 <= shape.mul_terms <= 255:
        raise BadInput(f"mul_terms must lie in [1, 255], got {shape.mul_terms}")
    if not 0 <= shape.round_constants <= 4096:
        raise BadInput(f"round_constants must lie in [0, 4096], got {shape.round_constants}")
    if not 1 <= shape.mul_depth <= 64:
        raise BadInput(f"mul_depth must lie in [1, 64], got {shape.mul_depth}")
    if shape.operand_window < 0:
        raise BadInput(f"operand_window must be >= 0, got {shape.operand_window}")
    max_public = (1 << log_constraints) // 4
    if not isinstance(n_public, int) or not 0 <= n_public <= max_public:
        raise BadInput(f"n_public must lie in [0, {max_public}] for 2^{log_constraints} constraints, got {n_public}")
    n = (1 << log_constraints) - n_public - 1
    n_bits = round(shape.bit_fraction * n)
    n_full = n - n_bits
    if n_full < max(n_public, 1):
        raise BadInput(f"bit_fraction {shape.bit_fraction} leaves {n_full} full-width wires; the "
                         f"{max(n_public, 1)} public input(s) and packings need more")
    if n_bits < pack_bits:
        raise BadInput(f"bit_fraction {shape.bit_fraction} leaves {n_bits} bits, fewer than one packing of "
                         f"pack_bits = {pack_bits}")
    n_select = round(shape.select_fraction * n_bits)
    if n_bits - n_select < 3:
        raise BadInput(f"select_fraction {shape.select_fraction} leaves {n_bits - n_select} free bits; "
                         f"a select gate reads 3")
    n_pack = min(n_full, max(n_public, 1, round(shape.pack_fraction * n_full)))
    return RowPlan(n, n_public, n_bits - n_select, n_select, n_pack, n_full - n_pack, pack_bits)


def planned_terms(plan: RowPlan, shape: CircuitShape) -> tuple[int, int, int]:
    """Terms of A, B, C the plan makes at most (MUL rows take fewer where operands are few)."""
    mul = shape.mul_terms + (1 if shape.round_constants else 0)
    return (plan.n_bool + 2 * plan.n_select + plan.pack_bits * plan.n_pack + mul * plan.n_mul,
            2 * plan.n_bool + plan.n_select + plan.n_pack + mul * plan.n_mul,
            2 * plan.n_select + plan.n_pack + plan.n_mul)


def estimated_peak_bytes(plan: RowPlan, shape: CircuitShape, limbs: int = 4) -> int:
    """Host memory ``generate_circuit`` needs, about: what it returns (6 bytes a term, 8 a row
    start, 8 * limbs a wire) twice over for the temporaries (measured 1.4-1.6x at 2^18-2^22)."""
    held = 6 * sum(planned_terms(plan, shape)) + 24 * plan.n_constraints + 8 * limbs * (plan.n_constraints + 1)
    return 2 * held


def generate_circuit(log_constraints: int, n_public: int, curve: Curve | str, shape: CircuitShape | None = None,
                     seed: int = 0, **shape_fields) -> tuple[CompactR1cs, Witness]:
    """A circuit of domain 2^log_constraints and a witness that satisfies it (see module doc)."""
    if isinstance(curve, str):
        try:
            curve = curve_by_name(curve)
        except ValueError as exc:
            raise BadInput(str(exc)) from exc
    shape = replace(shape or CircuitShape(), **shape_fields)
    plan = plan_rows(log_constraints, n_public, curve, shape)
    rng = np.random.default_rng(seed)
    kinds = _row_kinds(plan, rng)
    layers = MulLayers.draw(kinds, shape, rng)
    matrices = _empty_matrices(kinds, plan, layers)
    fr = curve.fr
    constants = [sum(limb << (63 * i) for i, limb in enumerate(row)) % fr.modulus
                 for row in rng.integers(0, 2**63, size=(shape.round_constants, 5)).tolist()]
    table = gates.coefficient_table(fr.modulus, plan.pack_bits, constants)
    constant_codes = np.arange(gates.first_constant_code(plan.pack_bits), table.shape[0], dtype=gates.CODE_DTYPE)
    witness = np.zeros((plan.n_constraints + 1, fr.limbs), dtype=np.uint64)
    witness[0, 0] = 1
    fill = gates.RowFiller(matrices, witness, rng, shape.operand_window, fr.modulus, table)

    # In dependency order: free bits, selects of free bits, packings of bits, mul layers.
    bool_rows = np.flatnonzero(kinds == BOOL)
    draws = rng.integers(0, 2**32, size=bool_rows.shape[0], dtype=np.uint32)
    witness[bool_rows + 1, 0] = draws < np.uint64(round(shape.one_fraction * 2**32))
    del draws
    fill.bool_rows(bool_rows)
    fill.select_rows(np.flatnonzero(kinds == SELECT), (bool_rows + 1).astype(np.uint32))
    del bool_rows
    fill.pack_rows(np.flatnonzero(kinds == PACK), np.flatnonzero(kinds <= SELECT).astype(np.uint32) + 1,
                   plan.pack_bits)
    for d in range(1, shape.mul_depth + 1):
        fill.mul_rows(layers.rows[layers.depth == d], layers.operands(d), int(layers.width[d]), constant_codes)

    csr = [CsrMatrix(m.starts, m.signals, m.coeffs) for m in matrices]
    r1cs = CompactR1cs(curve=curve, n_wires=plan.n_constraints + 1, n_pub_out=0, n_pub_in=n_public, n_prv_in=0,
                       a=csr[0], b=csr[1], c=csr[2], coeff_table=table)
    label = f"<synth 2^{log_constraints} {curve.name} public={n_public} seed={seed}>"
    return r1cs, Witness(path=label, curve=curve, values=witness)


@dataclass(frozen=True)
class MulLayers:
    """MUL rows, the layer (1..mul_depth) of each, and the operands a layer may read."""

    rows: np.ndarray  # MUL row indices
    depth: np.ndarray  # (len(rows),) uint8
    full_wires: np.ndarray  # every full-width wire (PACK and MUL), sorted
    full_depth: np.ndarray  # layer of each wire of full_wires (PACK: 0)
    width: np.ndarray  # per layer: wires in A and in B (mul_terms, or fewer where fewer lie below)
    constant_term: int  # 1 if A and B also hold a round constant

    @classmethod
    def draw(cls, kinds: np.ndarray, shape: CircuitShape, rng: np.random.Generator) -> "MulLayers":
        rows = np.flatnonzero(kinds == MUL)
        depth = rng.integers(1, shape.mul_depth + 1, size=rows.shape[0], dtype=np.uint8)
        full_rows = np.flatnonzero(kinds >= PACK)
        full_depth = np.zeros(full_rows.shape[0], dtype=np.uint8)
        full_depth[np.searchsorted(full_rows, rows)] = depth
        below = np.cumsum(np.bincount(full_depth, minlength=shape.mul_depth + 1))  # wires of layer <= d
        width = np.array([0] + [min(shape.mul_terms, int(below[d - 1])) for d in range(1, shape.mul_depth + 1)],
                         dtype=np.uint16)
        return cls(rows, depth, (full_rows + 1).astype(np.uint32), full_depth, width,
                   1 if shape.round_constants else 0)

    def operands(self, layer: int) -> np.ndarray:
        return self.full_wires[self.full_depth < layer]


def _empty_matrices(kinds: np.ndarray, plan: RowPlan, layers: MulLayers) -> tuple[gates.Matrix, ...]:
    """A, B, C with every row's length set (from its kind) and its terms still to fill."""
    lengths = {BOOL: (1, 2, 0), SELECT: (2, 1, 2), PACK: (plan.pack_bits, 1, 1), MUL: (0, 0, 1)}
    matrices = []
    for which in range(3):
        per_kind = np.array([lengths[k][which] for k in (BOOL, SELECT, PACK, MUL)], dtype=np.uint16)
        row_lengths = per_kind[kinds]
        if which < 2:
            row_lengths[layers.rows] = layers.width[layers.depth] + layers.constant_term
        matrices.append(gates.Matrix.with_lengths(row_lengths))
    return tuple(matrices)


def _row_kinds(plan: RowPlan, rng: np.random.Generator) -> np.ndarray:
    """Kind of each row: the public inputs' PACK rows first, the rest shuffled."""
    counts = [plan.n_bool, plan.n_select, plan.n_pack - plan.n_public, plan.n_mul]
    rest = np.repeat(np.array([BOOL, SELECT, PACK, MUL], dtype=np.uint8), counts)
    rng.shuffle(rest)
    return np.concatenate([np.full(plan.n_public, PACK, dtype=np.uint8), rest])


def circuit_stats(r1cs: CompactR1cs, witness: Witness) -> dict:
    """The shape as measured: terms per row of A, B, C; fractions of bits and of ones."""
    values = witness.values
    is_bit = (values[:, 0] <= 1) & ~values[:, 1:].any(axis=1)
    n_bits = int(np.count_nonzero(is_bit))
    n = r1cs.n_constraints
    return {"constraints": n, "domain": r1cs.domain_size, "wires": r1cs.n_wires, "public": r1cs.n_public,
            "terms_a": r1cs.a.n_terms / n, "terms_b": r1cs.b.n_terms / n, "terms_c": r1cs.c.n_terms / n,
            "bit_fraction": n_bits / values.shape[0],
            "one_fraction_of_bits": float(np.count_nonzero(is_bit & (values[:, 0] == 1))) / max(n_bits, 1),
            "r1cs_host_bytes": r1cs.host_bytes(), "witness_bytes": values.nbytes}
