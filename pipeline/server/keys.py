"""The keys folder: every ``NAME.zkey`` is key id ``NAME`` (``NAME.r1cs``, ``NAME.wasm``, ``NAME.sym`` beside it).

Key ids are plain names (letters, digits, ``_``, ``-``, ``.``; no leading dot); a request's key
id is looked up in the folder's listing, never joined to a path, so nothing reaches outside it.
Only each zkey's header is read here (curve, sizes), for listing keys and checking uploads.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput
from ..formats.key_fingerprint import zkey_fingerprint
from ..formats.snarkjs_json import verification_key_to_json
from ..formats.zkey import read_zkey_header, read_zkey_verification_key
from .messages import public_message

KEY_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
EXAMPLE_FILES = {"circuit.zkey": ".zkey", "circuit.r1cs": ".r1cs", "circuit.wasm": ".wasm", "circuit.sym": ".sym"}


@dataclass(frozen=True)
class KeyInfo:
    key_id: str
    zkey_path: str
    r1cs_path: str | None
    wasm_path: str | None
    curve: str
    n_vars: int
    n_public: int
    domain_size: int
    zkey_bytes: int
    mtime_ns: int
    fingerprint: str = ""  # formats.key_fingerprint: how `zkpipe prove --server` finds its key here
    sym_path: str | None = None  # circom's signal names: lets the server name missing circuit inputs

    def to_json(self) -> dict:
        return {"key_id": self.key_id, "curve": self.curve, "n_vars": self.n_vars, "n_public": self.n_public,
                "domain_size": self.domain_size, "zkey_bytes": self.zkey_bytes, "fingerprint": self.fingerprint,
                "has_r1cs": self.r1cs_path is not None, "has_wasm": self.wasm_path is not None}


def verification_key_json(key: KeyInfo) -> dict:
    """Blocking: the key's snarkjs verification_key.json (computed once per zkey file version)."""
    return _verification_key_json(key.zkey_path, key.mtime_ns)


@functools.lru_cache(maxsize=64)
def _verification_key_json(zkey_path: str, mtime_ns: int) -> dict:
    return verification_key_to_json(read_zkey_verification_key(zkey_path))  # alphabeta: one pairing


def valid_key_id(key_id: str) -> bool:
    return bool(KEY_ID_RE.match(key_id)) and ".." not in key_id


class KeyFolder:
    """The keys in one folder, re-scanned on demand (a new NAME.zkey appears without a restart)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._keys: dict[str, KeyInfo] = {}
        self.errors: dict[str, str] = {}  # key id -> why its zkey is not usable

    def scan(self) -> dict[str, KeyInfo]:
        """Blocking (reads zkey headers): call it from a worker thread."""
        found: dict[str, KeyInfo] = {}
        errors: dict[str, str] = {}
        for entry in sorted(self.root.glob("*.zkey")):
            key_id = entry.stem
            if not valid_key_id(key_id):
                errors[key_id] = "not a valid key id (letters, digits, '_', '-', '.')"
                continue
            try:
                stat = entry.stat()
                known = self._keys.get(key_id)
                if known is not None and known.mtime_ns == stat.st_mtime_ns and known.zkey_bytes == stat.st_size:
                    found[key_id] = known
                    continue
                header = read_zkey_header(entry)
                fingerprint = zkey_fingerprint(entry)
            except (OSError, BadInput) as exc:
                errors[key_id] = public_message(str(exc))
                continue
            sibling = {ext: entry.with_suffix(ext) for ext in (".r1cs", ".wasm", ".sym")}
            found[key_id] = KeyInfo(
                key_id=key_id, zkey_path=str(entry),
                r1cs_path=str(sibling[".r1cs"]) if sibling[".r1cs"].is_file() else None,
                wasm_path=str(sibling[".wasm"]) if sibling[".wasm"].is_file() else None,
                curve=header.curve.name, n_vars=header.n_vars, n_public=header.n_public,
                domain_size=header.domain_size, zkey_bytes=stat.st_size, mtime_ns=stat.st_mtime_ns,
                fingerprint=fingerprint, sym_path=str(sibling[".sym"]) if sibling[".sym"].is_file() else None)
        self._keys, self.errors = found, errors
        return found

    def get(self, key_id: str) -> KeyInfo | None:
        return self._keys.get(key_id) if valid_key_id(key_id) else None

    def by_fingerprint(self, fingerprint: str) -> KeyInfo | None:
        """The key with this fingerprint (of several, the first id in sorted order: they prove alike)."""
        return next((key for key in self._keys.values() if key.fingerprint == fingerprint), None)

    def all(self) -> list[KeyInfo]:
        return list(self._keys.values())


def build_example_keys(target: Path) -> Path:
    """The embedded default keys folder: the bundled examples linked as chain_bn128.*, chain_bls12381.*."""
    target.mkdir(parents=True, exist_ok=True)
    for folder in sorted(EXAMPLES_DIR.iterdir()):
        if not folder.is_dir():
            continue
        for name, ext in EXAMPLE_FILES.items():
            src = folder / name
            dst = target / f"{folder.name}{ext}"
            if not src.is_file():
                continue
            if dst.is_symlink() and os.readlink(dst) == str(src):
                continue
            if dst.exists() or dst.is_symlink():
                dst.unlink()
            try:
                dst.symlink_to(src)
            except OSError:  # a filesystem without symlinks
                import shutil

                shutil.copyfile(src, dst)
    return target
