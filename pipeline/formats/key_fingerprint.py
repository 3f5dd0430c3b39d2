"""A proving key's fingerprint: sha256 of its groth16 header and IC sections (curve, sizes and
every verification-key point), so two keys with one fingerprint give proofs that verify against
the same verification key.

Standard library only (no numpy, a few small reads): a client that hands a job to a running
server (``zkpipe prove --server``) computes it in well under a millisecond, whatever the
key's size, and the server lists it for each key it serves.
"""
from __future__ import annotations

import os
import struct

from .errors import FormatError

# The interpreter's own sha256, not hashlib's: importing hashlib loads OpenSSL's libcrypto (~2-3 ms
# of a `prove --server` process) for a hash of a few kB. The same digest; hashlib where it lacks one.
try:
    from _sha2 import sha256  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:
        from hashlib import sha256

FINGERPRINTED_SECTIONS = (2, 3)  # groth16 header (sizes, alpha, beta, gamma, delta), IC
_FILE_HEADER = struct.Struct("<4sII")
_SECTION_HEADER = struct.Struct("<IQ")


def zkey_fingerprint(path: str | os.PathLike) -> str:
    path = os.fspath(path)
    found: dict[int, bytes] = {}
    with open(path, "rb") as fh:
        head = fh.read(_FILE_HEADER.size)
        if len(head) < _FILE_HEADER.size or head[:4] != b"zkey":
            raise FormatError(path, "not a zkey file (no 'zkey' magic)")
        _, _, n_sections = _FILE_HEADER.unpack(head)
        for _ in range(n_sections):
            raw = fh.read(_SECTION_HEADER.size)
            if len(raw) < _SECTION_HEADER.size:
                break
            section_id, size = _SECTION_HEADER.unpack(raw)
            if section_id in FINGERPRINTED_SECTIONS and section_id not in found:
                found[section_id] = fh.read(size)
                if len(found) == len(FINGERPRINTED_SECTIONS):
                    break
            else:
                fh.seek(size, os.SEEK_CUR)
    missing = [s for s in FINGERPRINTED_SECTIONS if s not in found]
    if missing:
        raise FormatError(path, f"zkey sections {missing} (groth16 header, IC) are missing or cut short")
    h = sha256()
    for section_id in FINGERPRINTED_SECTIONS:
        h.update(struct.pack("<IQ", section_id, len(found[section_id])))
        h.update(found[section_id])
    return h.hexdigest()
