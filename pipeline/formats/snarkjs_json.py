"""snarkjs JSON: proof.json, public.json, verification_key.json (Groth16).

Numbers are decimal strings; points are affine with a third coordinate:

    G1   [x, y, "1"]                          infinity ["0", "1", "0"]
    G2   [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]   infinity [["0","0"], ["1","0"], ["0","0"]]

Readers are strict: exact shapes, digit-only strings, values below the modulus, affine points
(z = 1) or the canonical infinity, points on the curve and in the prime-order subgroup. Every
problem is a ``FormatError`` naming the file and the field. ``*_from_json`` / ``*_to_json``
work on parsed objects (for the HTTP server); ``read_*`` / ``write_*`` on files.
"""
from __future__ import annotations

import os
import re
from typing import Any

import orjson

from ..curves import Curve, curve_by_name
from .errors import FormatError
from .types import G1Affine, G2Affine, ProofPoints, VerificationKey

MAX_DIGITS = 200  # far above any field element; bounds the cost of int() on hostile input
_DIGITS = re.compile(r"[0-9]+")
G1_INFINITY = ["0", "1", "0"]
G2_INFINITY = [["0", "0"], ["1", "0"], ["0", "0"]]


# -- encoding -----------------------------------------------------------------------------
def g1_to_json(point: G1Affine) -> list[str]:
    if point is None:
        return list(G1_INFINITY)
    return [str(point[0]), str(point[1]), "1"]


def g2_to_json(point: G2Affine) -> list[list[str]]:
    if point is None:
        return [list(c) for c in G2_INFINITY]
    (x0, x1), (y0, y1) = point
    return [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]]


def proof_to_json(curve: Curve, pi_a: G1Affine, pi_b: G2Affine, pi_c: G1Affine) -> dict[str, Any]:
    return {"pi_a": g1_to_json(pi_a), "pi_b": g2_to_json(pi_b), "pi_c": g1_to_json(pi_c),
            "protocol": "groth16", "curve": curve.name}


def public_to_json(values) -> list[str]:
    return [str(int(v)) for v in values]


def verification_key_to_json(vk: VerificationKey, with_alphabeta: bool = True) -> dict[str, Any]:
    """The fields and order of ``snarkjs zkey export verificationkey``."""
    out: dict[str, Any] = {
        "protocol": "groth16",
        "curve": vk.curve.name,
        "nPublic": vk.n_public,
        "vk_alpha_1": g1_to_json(vk.alpha1),
        "vk_beta_2": g2_to_json(vk.beta2),
        "vk_gamma_2": g2_to_json(vk.gamma2),
        "vk_delta_2": g2_to_json(vk.delta2),
    }
    if with_alphabeta:
        from .alphabeta import alphabeta_12

        out["vk_alphabeta_12"] = [[[str(c) for c in fq2] for fq2 in fq6] for fq6 in alphabeta_12(vk.curve, vk.alpha1, vk.beta2)]
    out["IC"] = [g1_to_json(p) for p in vk.ic]
    return out


def _dump(path: str | os.PathLike, obj: Any) -> None:
    with open(path, "wb") as fh:
        fh.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2) + b"\n")


def write_proof(path: str | os.PathLike, proof) -> None:
    """``proof``: anything with ``curve_name`` (or ``curve``), ``pi_a``, ``pi_b``, ``pi_c``."""
    curve = proof.curve if hasattr(proof, "curve") else curve_by_name(proof.curve_name)
    _dump(path, proof_to_json(curve, proof.pi_a, proof.pi_b, proof.pi_c))


def write_public(path: str | os.PathLike, values) -> None:
    _dump(path, public_to_json(values))


def write_verification_key(path: str | os.PathLike, vk: VerificationKey, with_alphabeta: bool = True) -> None:
    _dump(path, verification_key_to_json(vk, with_alphabeta))


# -- decoding -----------------------------------------------------------------------------
class _Where:
    """The file and field being decoded, for error messages."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, field: str, message: str) -> FormatError:
        return FormatError(self.source, f"{field}: {message}")

    def decimal(self, value: Any, field: str, modulus: int | None, modulus_name: str = "q") -> int:
        if not isinstance(value, str):
            raise self.fail(field, f"expected a decimal string, found {type(value).__name__} {_short(value)}")
        if len(value) > MAX_DIGITS or not _DIGITS.fullmatch(value):
            raise self.fail(field, f"expected a decimal string, found {_short(value)}")
        number = int(value)
        if modulus is not None and number >= modulus:
            raise self.fail(field, f"value {_short(value)} is not below {modulus_name}")
        return number

    def array(self, value: Any, length: int, field: str) -> list:
        if not isinstance(value, list) or len(value) != length:
            found = f"a list of {len(value)}" if isinstance(value, list) else type(value).__name__
            raise self.fail(field, f"expected a list of {length}, found {found}")
        return value

    def g1(self, curve: Curve, value: Any, field: str, subgroup: bool) -> G1Affine:
        q = curve.fq.modulus
        x, y, z = (self.decimal(v, f"{field}[{i}]", q) for i, v in enumerate(self.array(value, 3, field)))
        if z == 0:
            if (x, y) != (0, 1):
                raise self.fail(field, 'a point with z = 0 must be the infinity ["0", "1", "0"]')
            return None
        if z != 1:
            raise self.fail(field, f"expected an affine point (z = \"1\"), found z = {z}")
        return self._check(curve.g1, (x, y), field, subgroup)

    def g2(self, curve: Curve, value: Any, field: str, subgroup: bool) -> G2Affine:
        q = curve.fq.modulus
        coords = []
        for i, pair in enumerate(self.array(value, 3, field)):
            sub = f"{field}[{i}]"
            coords.append(tuple(self.decimal(v, f"{sub}[{j}]", q) for j, v in enumerate(self.array(pair, 2, sub))))
        x, y, z = coords
        if z == (0, 0):
            if (x, y) != ((0, 0), (1, 0)):
                raise self.fail(field, 'a point with z = 0 must be the infinity [["0","0"], ["1","0"], ["0","0"]]')
            return None
        if z != (1, 0):
            raise self.fail(field, f'expected an affine point (z = ["1", "0"]), found z = {list(z)}')
        return self._check(curve.g2, (x, y), field, subgroup)

    def _check(self, group, point, field: str, subgroup: bool):
        if not group.is_on_curve(point):
            raise self.fail(field, f"not on the {group.name} curve")
        if subgroup and not group.is_in_subgroup(point):
            raise self.fail(field, f"not in the prime-order subgroup of {group.name}")
        return point

    def curve(self, obj: dict, expected: Curve | None) -> Curve:
        name = obj.get("curve")
        if name is None:
            if expected is None:
                raise self.fail("curve", "missing, and no curve was given")
            return expected
        if not isinstance(name, str):
            raise self.fail("curve", f"expected a string, found {_short(name)}")
        try:
            curve = curve_by_name(name)
        except ValueError as exc:
            raise self.fail("curve", str(exc)) from None
        if expected is not None and curve is not expected:
            raise self.fail("curve", f"is {curve.name}, expected {expected.name}")
        return curve

    def protocol(self, obj: dict) -> None:
        if obj.get("protocol") != "groth16":
            raise self.fail("protocol", f"expected \"groth16\", found {_short(obj.get('protocol'))}")

    def obj(self, value: Any, what: str) -> dict:
        if not isinstance(value, dict):
            raise FormatError(self.source, f"expected a JSON object ({what}), found {type(value).__name__}")
        return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load_json(path: str | os.PathLike) -> Any:
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from exc
    return parse_json(data, path)


def parse_json(data: bytes | str, source: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FormatError(source, f"not valid JSON: {exc}") from None


def proof_from_json(obj: Any, curve: Curve | None = None, source: str = "<proof>") -> ProofPoints:
    """Decode a proof object; points must be on the curve and in the prime-order subgroups."""
    where = _Where(source)
    obj = where.obj(obj, "a proof")
    where.protocol(obj)
    curve = where.curve(obj, curve)
    for key in ("pi_a", "pi_b", "pi_c"):
        if key not in obj:
            raise where.fail(key, "missing")
    return ProofPoints(where.g1(curve, obj["pi_a"], "pi_a", True), where.g2(curve, obj["pi_b"], "pi_b", True),
                       where.g1(curve, obj["pi_c"], "pi_c", True))


def public_from_json(obj: Any, curve: Curve | None = None, source: str = "<public>") -> list[int]:
    """Decode public signals; with a curve, each must be below its scalar modulus r."""
    where = _Where(source)
    if not isinstance(obj, list):
        raise FormatError(source, f"expected a JSON list of decimal strings, found {type(obj).__name__}")
    r = curve.fr.modulus if curve is not None else None
    return [where.decimal(v, f"[{i}]", r, "r (the scalar field modulus)") for i, v in enumerate(obj)]


def verification_key_from_json(obj: Any, source: str = "<verification key>",
                               check_alphabeta: bool = False) -> VerificationKey:
    """Decode a Groth16 verification key; vk_alphabeta_12 (if present) is shape-checked, and
    recomputed and compared when ``check_alphabeta`` (a pairing: about a second)."""
    where = _Where(source)
    obj = where.obj(obj, "a verification key")
    where.protocol(obj)
    curve = where.curve(obj, None)
    for key in ("nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "IC"):
        if key not in obj:
            raise where.fail(key, "missing")
    n_public = obj["nPublic"]
    if not isinstance(n_public, int) or isinstance(n_public, bool) or not 0 <= n_public < 1 << 32:
        raise where.fail("nPublic", f"expected a non-negative integer, found {_short(n_public)}")
    ic_list = where.array(obj["IC"], n_public + 1, "IC")
    vk = VerificationKey(
        curve=curve, n_public=n_public,
        alpha1=where.g1(curve, obj["vk_alpha_1"], "vk_alpha_1", True),
        beta2=where.g2(curve, obj["vk_beta_2"], "vk_beta_2", True),
        gamma2=where.g2(curve, obj["vk_gamma_2"], "vk_gamma_2", True),
        delta2=where.g2(curve, obj["vk_delta_2"], "vk_delta_2", True),
        ic=tuple(where.g1(curve, p, f"IC[{i}]", True) for i, p in enumerate(ic_list)),
    )
    if "vk_alphabeta_12" in obj:
        q = curve.fq.modulus
        ab = where.array(obj["vk_alphabeta_12"], 2, "vk_alphabeta_12")
        found = [[tuple(where.decimal(c, f"vk_alphabeta_12[{i}][{j}][{k}]", q)
                        for k, c in enumerate(where.array(fq2, 2, f"vk_alphabeta_12[{i}][{j}]")))
                  for j, fq2 in enumerate(where.array(fq6, 3, f"vk_alphabeta_12[{i}]"))]
                 for i, fq6 in enumerate(ab)]
        if check_alphabeta:
            from .alphabeta import alphabeta_12

            if found != alphabeta_12(curve, vk.alpha1, vk.beta2):
                raise where.fail("vk_alphabeta_12", "is not e(vk_alpha_1, vk_beta_2)")
    return vk


def read_proof(path: str | os.PathLike, curve: Curve | None = None) -> ProofPoints:
    return proof_from_json(load_json(path), curve, os.fspath(path))


def read_public(path: str | os.PathLike, curve: Curve | None = None) -> list[int]:
    return public_from_json(load_json(path), curve, os.fspath(path))


def read_verification_key(path: str | os.PathLike, check_alphabeta: bool = False) -> VerificationKey:
    return verification_key_from_json(load_json(path), os.fspath(path), check_alphabeta)
