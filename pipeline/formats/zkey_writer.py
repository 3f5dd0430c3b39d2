"""Write Groth16 zkeys (for tests and benchmarks, not for production keys).

``write_zkey`` writes a ``Groth16Zkey`` back in snarkjs's section order (1..10), so a key read
and written again is byte-identical given its original contributions section.
``write_random_zkey`` writes a well-formed key of any size whose vk points are real (random
multiples of the generators) and whose big arrays are random limbs below the modulus: right
shapes and sizes for load and GPU benchmarks, meaningless for proofs.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable

import numpy as np

from ..curves import Curve
from .binfile import FILE_HEADER, SECTION_HEADER
from .points_codec import encode_g1, encode_g2
from .types import POINT_SECTIONS, G1Affine, G2Affine, Groth16Zkey
from .zkey import GROTH16, coefficient_dtype

EMPTY_CONTRIBUTIONS = bytes(64) + struct.pack("<I", 0)  # csHash, no contributions


def _section(fh, section_id: int, chunks: Iterable[bytes | np.ndarray]) -> None:
    """Write one section: header with a placeholder size, the chunks, then the real size."""
    start = fh.tell()
    fh.write(SECTION_HEADER.pack(section_id, 0))
    size = 0
    for chunk in chunks:
        data = np.ascontiguousarray(chunk).reshape(-1).view(np.uint8).data if isinstance(chunk, np.ndarray) else chunk
        fh.write(data)
        size += len(data)
    end = fh.tell()
    fh.seek(start)
    fh.write(SECTION_HEADER.pack(section_id, size))
    fh.seek(end)


def _write(path, curve: Curve, n_vars: int, n_public: int, domain_size: int,
           vk: dict[str, G1Affine | G2Affine], ic: Iterable[G1Affine],
           coefficients: Callable[[], np.ndarray], arrays: list[Callable[[], np.ndarray]],
           contributions: bytes) -> None:
    fq, fr = curve.fq, curve.fr
    header = b"".join([
        struct.pack("<I", fq.n_bytes), fq.modulus.to_bytes(fq.n_bytes, "little"),
        struct.pack("<I", fr.n_bytes), fr.modulus.to_bytes(fr.n_bytes, "little"),
        struct.pack("<III", n_vars, n_public, domain_size),
        encode_g1(curve, vk["alpha1"]), encode_g1(curve, vk["beta1"]), encode_g2(curve, vk["beta2"]),
        encode_g2(curve, vk["gamma2"]), encode_g1(curve, vk["delta1"]), encode_g2(curve, vk["delta2"]),
    ])
    with open(path, "wb") as fh:
        fh.write(FILE_HEADER.pack(b"zkey", 1, 10))
        _section(fh, 1, [struct.pack("<I", GROTH16)])
        _section(fh, 2, [header])
        _section(fh, 3, [b"".join(encode_g1(curve, p) for p in ic)])
        records = coefficients()
        _section(fh, 4, [struct.pack("<I", records.shape[0]), records])
        del records
        for section_id, make in zip(range(5, 10), arrays):
            _section(fh, section_id, [make()])
        _section(fh, 10, [contributions])


def write_zkey(path: str | os.PathLike, zkey: Groth16Zkey, contributions: bytes | None = None) -> None:
    """Write ``zkey`` as snarkjs would (``contributions``: raw section 10, default an empty transcript)."""
    def coefficients() -> np.ndarray:
        records = np.empty(zkey.coeff_matrix.shape[0], dtype=coefficient_dtype(zkey.curve.fr.limbs))
        records["matrix"], records["constraint"], records["signal"] = (
            zkey.coeff_matrix, zkey.coeff_constraint, zkey.coeff_signal)
        records["value"] = zkey.coeff_values_stored
        return records

    vk = {name: getattr(zkey, name) for name in ("alpha1", "beta1", "beta2", "gamma2", "delta1", "delta2")}
    arrays = [zkey.host_points(name) for name in POINT_SECTIONS]
    _write(path, zkey.curve, zkey.n_vars, zkey.n_public, zkey.domain_size, vk, zkey.ic, coefficients,
           [lambda a=a: a for a in arrays], EMPTY_CONTRIBUTIONS if contributions is None else contributions)


def random_limbs(rng: np.random.Generator, shape: tuple[int, ...], modulus: int) -> np.ndarray:
    """Uniform random uint64 limbs whose value (last axis, little-endian) is below 2^(bits-1) < modulus."""
    limbs = shape[-1]
    arr = rng.integers(0, 2**64, size=shape, dtype=np.uint64)
    top_bits = modulus.bit_length() - 1 - 64 * (limbs - 1)
    arr[..., -1] &= np.uint64((1 << top_bits) - 1)
    return arr


def write_random_zkey(path: str | os.PathLike, curve: Curve, n_vars: int, domain_size: int, n_public: int = 1,
                      n_coefficients: int | None = None, seed: int = 0, snarkjs_order: bool = False) -> None:
    """A well-formed zkey of the given size (see the module docstring); one section in memory at a time.
    ``snarkjs_order``: coefficients listed constraint by constraint (A's and B's interleaved), as
    snarkjs writes them; else in random order."""
    if n_public + 1 > n_vars or domain_size & (domain_size - 1) or domain_size < n_public + 2:
        raise ValueError("need n_public + 1 <= n_vars and domain_size a power of two > n_public + 1")
    rng = np.random.default_rng(seed)
    r = curve.fr.modulus

    def g1_point():
        return curve.g1.to_affine(curve.g1.mul(curve.g1.from_affine(curve.g1.generator), int(rng.integers(1, 2**62))))

    def g2_point():
        return curve.g2.to_affine(curve.g2.mul(curve.g2.from_affine(curve.g2.generator), int(rng.integers(1, 2**62))))

    vk = {"alpha1": g1_point(), "beta1": g1_point(), "beta2": g2_point(), "gamma2": g2_point(),
          "delta1": g1_point(), "delta2": g2_point()}
    ic = [g1_point() for _ in range(n_public + 1)]
    n_constraints = domain_size - n_public - 1
    count = 2 * n_constraints if n_coefficients is None else n_coefficients

    def coefficients() -> np.ndarray:
        records = np.empty(count, dtype=coefficient_dtype(curve.fr.limbs))
        records["matrix"] = rng.integers(0, 2, size=count, dtype=np.uint32)
        records["constraint"] = rng.integers(0, n_constraints, size=count, dtype=np.uint32)
        records["signal"] = rng.integers(0, n_vars, size=count, dtype=np.uint32)
        records["value"] = random_limbs(rng, (count, curve.fr.limbs), r)
        return records[np.argsort(records["constraint"], kind="stable")] if snarkjs_order else records

    q, limbs = curve.fq.modulus, curve.fq.limbs
    arrays = [
        lambda: random_limbs(rng, (n_vars, 2, limbs), q),
        lambda: random_limbs(rng, (n_vars, 2, limbs), q),
        lambda: random_limbs(rng, (n_vars, 2, 2, limbs), q),
        lambda: random_limbs(rng, (n_vars - n_public - 1, 2, limbs), q),
        lambda: random_limbs(rng, (domain_size, 2, limbs), q),
    ]
    _write(path, curve, n_vars, n_public, domain_size, vk, ic, coefficients, arrays, EMPTY_CONTRIBUTIONS)
