"""``zkpipe inspect``: what a zkey, wtns, r1cs or snarkjs JSON file holds, as a JSON-ready dict.

Binary files are told apart by their magic and described from their headers (point arrays are
not read); JSON files are decoded, and so fully checked, by the snarkjs_json readers. Every
problem is a ``FormatError``. Large numbers (primes) are decimal strings, so orjson can write them.
"""
from __future__ import annotations

import os
from typing import Any

from . import r1cs as r1cs_format
from . import wtns as wtns_format
from . import zkey as zkey_format
from .binfile import BinFile, read_layout
from .errors import FormatError
from .snarkjs_json import (load_json, proof_from_json, public_from_json, verification_key_from_json)


def _sections(bf: BinFile) -> list[dict[str, Any]]:
    return [{"id": sid, "name": bf.section_names.get(sid, "unknown"), "offset": off, "size": size}
            for sid, (off, size) in sorted(bf.sections.items(), key=lambda item: item[1][0])]


def _inspect_zkey(path: str) -> dict[str, Any]:
    bf = read_layout(path, "zkey", 1, zkey_format.SECTION_NAMES)
    protocol_id = bf.cursor(1).u32("protocol id")
    info: dict[str, Any] = {"kind": "zkey", "protocol": zkey_format.PROTOCOLS.get(protocol_id, f"unknown ({protocol_id})"),
                            "file_size": bf.file_size}
    if protocol_id == zkey_format.GROTH16:
        header = zkey_format.read_zkey_header(path)
        count = bf.cursor(4).u32("coefficient count") if 4 in bf.sections else None
        info.update(curve=header.curve.name, n_vars=header.n_vars, n_public=header.n_public,
                    n_private=header.n_private, domain_size=header.domain_size,
                    log_domain_size=header.domain_size.bit_length() - 1, n_coefficients=count)
    info["sections"] = _sections(bf)
    return info


def _inspect_wtns(path: str) -> dict[str, Any]:
    witness = wtns_format.read_wtns(path)
    bf = read_layout(path, "wtns", wtns_format.WTNS_VERSION, wtns_format.SECTION_NAMES)
    return {"kind": "wtns", "curve": witness.curve.name, "prime": str(witness.curve.fr.modulus),
            "n_witness": len(witness), "file_size": bf.file_size, "sections": _sections(bf)}


def _inspect_r1cs(path: str) -> dict[str, Any]:
    r1cs = r1cs_format.read_r1cs(path)
    bf = read_layout(path, "r1cs", 1, r1cs_format.SECTION_NAMES)
    n_terms = sum(int(lc.signals.shape[0]) for c in r1cs.constraints for lc in c)
    return {"kind": "r1cs", "curve": r1cs.curve.name, "prime": str(r1cs.curve.fr.modulus),
            "n_wires": r1cs.n_wires, "n_pub_out": r1cs.n_pub_out, "n_pub_in": r1cs.n_pub_in,
            "n_prv_in": r1cs.n_prv_in, "n_labels": r1cs.n_labels, "n_constraints": len(r1cs.constraints),
            "n_terms": n_terms, "file_size": bf.file_size, "sections": _sections(bf)}


def _inspect_json(path: str) -> dict[str, Any]:
    obj = load_json(path)
    size = os.path.getsize(path)
    if isinstance(obj, list):
        values = public_from_json(obj, None, path)
        return {"kind": "public", "n_public": len(values), "file_size": size}
    if isinstance(obj, dict) and "pi_a" in obj:
        proof_from_json(obj, None, path)
        return {"kind": "proof", "protocol": "groth16", "curve": obj["curve"], "file_size": size}
    if isinstance(obj, dict) and "vk_alpha_1" in obj:
        vk = verification_key_from_json(obj, path)
        return {"kind": "verification_key", "protocol": "groth16", "curve": vk.curve.name,
                "n_public": vk.n_public, "has_alphabeta_12": "vk_alphabeta_12" in obj, "file_size": size}
    raise FormatError(path, "JSON that is neither a snarkjs proof, verification key nor public signals list")


_BY_MAGIC = {b"zkey": _inspect_zkey, b"wtns": _inspect_wtns, b"r1cs": _inspect_r1cs}


def inspect_file(path: str | os.PathLike) -> dict[str, Any]:
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from exc
    magic = head[:4]
    if magic in _BY_MAGIC:
        return {"path": path, **_BY_MAGIC[magic](path)}
    if head.lstrip()[:1] in (b"{", b"["):
        return {"path": path, **_inspect_json(path)}
    raise FormatError(path, f"unknown file type: magic {magic!r} is none of zkey, wtns, r1cs, and it is not JSON")
