"""snarkjs Groth16 proving keys (.zkey): ``read_zkey``.

Layout (binfile magic "zkey", version 1; every number little-endian):

    1 header          u32 protocol (1 groth16, 2 plonk, 10 fflonk)
    2 groth16 header  u32 n8q, q, u32 n8r, r, u32 nVars, u32 nPublic, u32 domainSize,
                      alpha1, beta1 (G1), beta2, gamma2 (G2), delta1 (G1), delta2 (G2)
    3 IC              nPublic + 1 G1
    4 coefficients    u32 m, then m x (u32 matrix, u32 constraint, u32 signal, n8r bytes value*R^2)
    5 A               nVars G1
    6 B1              nVars G1
    7 B2              nVars G2
    8 C               nVars - nPublic - 1 G1 (private signals only)
    9 H               domainSize G1
   10 contributions   (MPC transcript: not read)

Points are affine, coordinates in Montgomery form, all-zero for infinity. The vk points are
decoded and checked here; the big arrays are read straight into aligned numpy arrays in
stored form, unchecked unless ``check_points=True`` (which costs Python work per point).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..curves import Curve, curve_by_base_prime, curve_by_scalar_prime
from .binfile import (ROWS_PER_TASK, BinFile, SectionCursor, check_power_of_two, first_not_below, over_chunks,
                      read_array, read_layout)
from .errors import FormatError
from .points_codec import decode_g1, decode_g2
from .types import POINT_SECTIONS, Groth16Zkey, VerificationKey, point_row_shape

SECTION_NAMES = {1: "header", 2: "groth16 header", 3: "IC", 4: "coefficients", 5: "A points",
                 6: "B1 points", 7: "B2 points", 8: "C points", 9: "H points", 10: "contributions"}
PROTOCOLS = {1: "groth16", 2: "plonk", 10: "fflonk"}
GROTH16 = 1
COEF_HEADER_BYTES = 12  # matrix, constraint, signal


def coefficient_dtype(fr_limbs: int) -> np.dtype:
    """One packed record of section 4 (44 bytes on both curves)."""
    return np.dtype([("matrix", "<u4"), ("constraint", "<u4"), ("signal", "<u4"),
                     ("value", "<u8", (fr_limbs,))])


@dataclass(frozen=True)
class ZkeyHeader:
    """Sections 1 and 2, with the vk points still in stored bytes."""

    binfile: BinFile
    curve: Curve
    n_vars: int
    n_public: int
    domain_size: int
    vk_bytes: dict[str, bytes]  # alpha1, beta1, beta2, gamma2, delta1, delta2

    @property
    def n_private(self) -> int:
        return self.n_vars - self.n_public - 1


def curve_from_primes(path: str, label: str, q: int | None, r: int | None) -> Curve:
    """The curve whose base and/or scalar prime are given; an error naming unknown primes."""
    by_q = curve_by_base_prime(q) if q is not None else None
    by_r = curve_by_scalar_prime(r) if r is not None else None
    if (q is not None and by_q is None) or (r is not None and by_r is None):
        shown = ", ".join(f"{n} = {v}" for n, v in (("q", q), ("r", r)) if v is not None)
        raise FormatError(path, f"{label}: unknown curve ({shown}); known curves: bn128 (BN254), bls12381")
    if by_q is not None and by_r is not None and by_q is not by_r:
        raise FormatError(path, f"{label}: q is {by_q.name}'s base prime but r is {by_r.name}'s scalar prime")
    return by_q or by_r


def read_scalar_field_header(cur, path: str, what: str) -> tuple[int, int, Curve]:
    """The (n8, prime) pair that opens a .wtns or .r1cs header: 32-byte values of a known scalar field."""
    n8 = cur.u32("n8")
    if n8 != 32:
        raise cur.fail(f"n8 (bytes per {what}) must be 32, found {n8}")
    prime = cur.bigint(n8, "prime")
    return n8, prime, curve_from_primes(path, cur.label, None, prime)


def read_zkey_header(path: str | os.PathLike) -> ZkeyHeader:
    """Check the container and sections 1-2; no point array is read."""
    bf = read_layout(path, "zkey", 1, SECTION_NAMES)
    path = bf.path
    cur = bf.cursor(1)
    protocol = cur.u32("protocol id")
    cur.expect_end("the protocol id")
    if protocol != GROTH16:
        name = PROTOCOLS.get(protocol)
        if name:
            raise FormatError(path, f"{bf.label(1)}: is a {name} zkey, expected groth16")
        raise FormatError(path, f"{bf.label(1)}: unknown protocol id {protocol}, expected 1 (groth16)")

    cur = bf.cursor(2)
    n8q = cur.u32("n8q")
    if n8q not in (32, 48):
        raise cur.fail(f"n8q (bytes per base field element) must be 32 or 48, found {n8q}")
    q = cur.bigint(n8q, "q")
    n8r = cur.u32("n8r")
    if n8r != 32:
        raise cur.fail(f"n8r (bytes per scalar) must be 32, found {n8r}")
    r = cur.bigint(n8r, "r")
    curve = curve_from_primes(path, cur.label, q, r)
    if n8q != curve.fq.n_bytes:
        raise cur.fail(f"n8q is {n8q} but {curve.name}'s base field takes {curve.fq.n_bytes} bytes")
    n_vars = cur.u32("nVars")
    n_public = cur.u32("nPublic")
    domain_size = cur.u32("domainSize")
    if n_public + 1 > n_vars:
        raise cur.fail(f"nPublic ({n_public}) + 1 exceeds nVars ({n_vars})")
    check_power_of_two(path, cur.label, domain_size, "domainSize")
    if domain_size.bit_length() - 1 > curve.fr.two_adicity:
        raise cur.fail(f"domainSize 2^{domain_size.bit_length() - 1} exceeds {curve.name}'s 2-adicity "
                       f"{curve.fr.two_adicity}")
    g1, g2 = 2 * n8q, 4 * n8q
    vk_bytes = {}
    for name, size in (("alpha1", g1), ("beta1", g1), ("beta2", g2), ("gamma2", g2), ("delta1", g1), ("delta2", g2)):
        vk_bytes[name] = cur.raw(size, name)
    cur.expect_end("the groth16 header")
    return ZkeyHeader(bf, curve, n_vars, n_public, domain_size, vk_bytes)


def read_vk_points(header: ZkeyHeader) -> tuple[dict, tuple]:
    """The decoded and checked vk points of sections 2 and 3: ({alpha1 ... delta2}, IC)."""
    bf, curve = header.binfile, header.curve
    path, g1_bytes = bf.path, 2 * curve.fq.n_bytes
    vk = {}
    for name, raw in header.vk_bytes.items():
        what = f"{bf.label(2)}: {name}"
        if len(raw) == g1_bytes:
            vk[name] = decode_g1(curve, raw, path, what)
        else:
            vk[name] = decode_g2(curve, raw, path, what)
            if not curve.g2.is_in_subgroup(vk[name]):
                raise FormatError(path, f"{what}: not in the prime-order subgroup of {curve.g2.name}")
    bf.expect_size(3, (header.n_public + 1) * g1_bytes, f"nPublic + 1 = {header.n_public + 1} G1 points")
    ic_raw = bf.read_bytes(3)
    ic = tuple(decode_g1(curve, ic_raw[i * g1_bytes : (i + 1) * g1_bytes], path, f"{bf.label(3)}: IC[{i}]")
               for i in range(header.n_public + 1))
    return vk, ic


def read_zkey_verification_key(path: str | os.PathLike) -> VerificationKey:
    """The verification key of a zkey from sections 1-3 only (fast whatever the key's size)."""
    header = read_zkey_header(path)
    vk, ic = read_vk_points(header)
    return VerificationKey(header.curve, header.n_public, vk["alpha1"], vk["beta2"], vk["gamma2"], vk["delta2"], ic)


def read_zkey(path: str | os.PathLike, check_points: bool = False, map_points: bool = False) -> Groth16Zkey:
    """Read and check a Groth16 zkey. Raises ``FormatError`` naming the file and section on any problem.

    Always checked: the container, every section's exact size, header values, coefficient
    indices and values, and that the vk points (alpha1 ... delta2, IC) lie on the curve (and,
    for the G2 ones, in the subgroup). ``check_points`` also checks every point of the
    A/B1/B2/C/H arrays (coordinates below q and on the curve: slow, Python per point).
    ``map_points``: the point arrays are read-only maps of the file (``np.memmap``), read
    when touched, instead of being read now.
    """
    header = read_zkey_header(path)
    vk, ic = read_vk_points(header)
    coefficients = read_coefficients(header)
    points = read_points(header, map_points, check_points)
    return zkey_from_parts(header, vk, ic, coefficients, points)


def zkey_from_parts(header: ZkeyHeader, vk: dict, ic: tuple, coefficients: tuple, points: dict,
                    csr=None, coeff_table=None, coeff_table_prepared: bool = False) -> Groth16Zkey:
    """The ``Groth16Zkey`` of a header, its vk points, its coefficients (matrix, constraint,
    signal, values) and its point arrays ({"a": ..., "h": ...}); ``csr`` when prepared, and with
    ``coeff_table_prepared`` the table of its values (``coeff_table``; None: more than 2^16)."""
    if coeff_table_prepared and csr is None:
        raise ValueError("a prepared coefficient table indexes the prepared CSR: give both")
    matrix, constraint, signal, values = coefficients
    return Groth16Zkey(
        path=header.binfile.path, curve=header.curve, n_vars=header.n_vars, n_public=header.n_public,
        domain_size=header.domain_size, alpha1=vk["alpha1"], beta1=vk["beta1"], beta2=vk["beta2"],
        gamma2=vk["gamma2"], delta1=vk["delta1"], delta2=vk["delta2"], ic=ic,
        coeff_matrix=matrix, coeff_constraint=constraint, coeff_signal=signal, coeff_values_stored=values,
        sections=dict(header.binfile.sections), csr=csr, coeff_table=coeff_table,
        coeff_table_prepared=coeff_table_prepared, **{f"points_{n}": points[n] for n in POINT_SECTIONS})


def point_layout(header: ZkeyHeader) -> dict[str, tuple[int, tuple[int, ...]]]:
    """Each point array's section id and array shape."""
    rows = {"a": header.n_vars, "b1": header.n_vars, "b2": header.n_vars, "c": header.n_private,
            "h": header.domain_size}
    return {name: (5 + i, (rows[name], *point_row_shape(header.curve, name)))
            for i, name in enumerate(POINT_SECTIONS)}


def read_points(header: ZkeyHeader, map_points: bool = False, check_points: bool = False) -> dict[str, np.ndarray]:
    """Sections 5-9 after checking their sizes: read into aligned arrays, or mapped read-only."""
    bf = header.binfile
    arrays = {}
    for name, (section_id, shape) in point_layout(header).items():
        group = "G2" if len(shape) == 4 else "G1"
        offset, size = bf.expect_size(section_id, 8 * int(np.prod(shape)), f"{shape[0]} {group} points")
        if not map_points:
            arrays[name] = read_array(bf, section_id, 0, "<u8", shape)
        elif size == 0:
            arrays[name] = np.empty(shape, dtype="<u8")  # an empty map is an error to mmap
        else:
            arrays[name] = np.memmap(bf.path, dtype="<u8", mode="r", offset=offset, shape=shape)
        if check_points:
            check_point_array(header.curve, arrays[name], bf.path, bf.label(section_id))
    return arrays


def read_coefficients(header: ZkeyHeader, raw: np.ndarray | None = None):
    """Section 4 as (matrix, constraint, signal, values), checked; ``raw``: the section's bytes
    when the caller has read them already."""
    return _read_coefficients(header.binfile, header.curve, header.n_vars, header.domain_size, raw)


def _read_coefficients(bf: BinFile, curve: Curve, n_vars: int, domain_size: int, raw: np.ndarray | None = None):
    """Section 4 as four arrays, through one structured view (no Python work per record)."""
    path, label = bf.path, bf.label(4)
    _, size = bf.require(4)
    if size < 4:
        raise FormatError(path, f"{label}: too short: expected at least 4 bytes (the count), found {size}")
    head = raw[:4] if raw is not None else read_array(bf, 4, 0, np.uint8, (4,))
    count = SectionCursor(path, label, head.tobytes()).u32("count")
    dtype = coefficient_dtype(curve.fr.limbs)
    bf.expect_size(4, 4 + count * dtype.itemsize, f"{count} coefficients of {dtype.itemsize} bytes")
    raw = raw[4:] if raw is not None else read_array(bf, 4, 4, np.uint8, (count * dtype.itemsize,))
    records = raw.view(dtype)
    matrix = np.empty(count, dtype=np.uint32)
    constraint = np.empty(count, dtype=np.uint32)
    signal = np.empty(count, dtype=np.uint32)
    values = np.empty((count, curve.fr.limbs), dtype=np.uint64)
    limits = ((matrix, "matrix", 2, "0 (A) or 1 (B)"), (constraint, "constraint", domain_size,
              f"below domainSize {domain_size}"), (signal, "signal", n_vars, f"below nVars {n_vars}"))

    def unpack(a: int, b: int) -> str | None:
        """Copy records a..b out of the packed layout and check their indices; a message or None."""
        block = records[a:b]
        for column, name, limit, what in limits:
            column[a:b] = block[name]
            bad = np.flatnonzero(column[a:b] >= limit)
            if bad.size:
                i = a + int(bad[0])
                return f"coefficient {i}: {name} must be {what}, found {int(column[i])}"
        values[a:b] = block["value"]
        return None

    problem = next((m for m in over_chunks(count, ROWS_PER_TASK, unpack) if m is not None), None)
    if problem:
        raise FormatError(path, f"{label}: {problem}")
    bad_value = first_not_below(values, curve.fr.modulus)
    if bad_value is not None:
        raise FormatError(path, f"{label}: coefficient {bad_value}: value is not below r")
    return matrix, constraint, signal, values


def check_point_array(curve: Curve, points: np.ndarray, path: str, label: str) -> None:
    """Every stored point below q and on the curve (all-zero = infinity). Python per point: slow."""
    fq = curve.fq
    bad = first_not_below(points.reshape(-1, fq.limbs), fq.modulus)
    if bad is not None:
        per_point = points[0].size // fq.limbs
        raise FormatError(path, f"{label}: point {bad // per_point}: a coordinate is not below q")
    is_g2 = points.ndim == 4
    group = curve.g2 if is_g2 else curve.g1
    coords = [fq.from_mont(v) for v in fq.ints_from_limbs(points)]
    step = 4 if is_g2 else 2
    for i in range(points.shape[0]):
        c = coords[i * step : (i + 1) * step]
        if not any(c):
            continue
        pt = ((c[0], c[1]), (c[2], c[3])) if is_g2 else (c[0], c[1])
        if not group.is_on_curve(pt):
            raise FormatError(path, f"{label}: point {i} is not on the {group.name} curve")
