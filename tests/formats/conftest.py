"""Shared helpers for the format tests: where the snarkjs fixtures are, snarkjs's own JSON
exports of them (cached), and a tool to rebuild a binfile with some sections changed.

Fixtures live in tests/fixtures/<curve>/<name>/ (tools/make_fixtures.sh). A test that needs a
missing fixture is skipped with a message saying which file; CI has them all.
"""
from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest

from pipeline.curves import BLS12_381, BN254
from pipeline.formats.binfile import FILE_HEADER, SECTION_HEADER

FIXTURES = Path(__file__).parents[1] / "fixtures"
REPO = Path(__file__).parents[2]
SNARKJS = REPO / "node_modules" / ".bin" / "snarkjs"
CURVES = {"bn128": BN254, "bls12381": BLS12_381}
NAMES = ("multiplier", "bits", "poseidon2", "chain_2e8")
CASES = [(curve, name) for curve in CURVES for name in NAMES]
CASE_IDS = [f"{curve}-{name}" for curve, name in CASES]
SMALL_CASES = [(curve, "multiplier") for curve in CURVES]


def fixture_file(curve: str, name: str, filename: str) -> Path:
    path = FIXTURES / curve / name / filename
    if not path.exists():
        pytest.skip(f"fixture {path.relative_to(REPO)} is missing (build it with tools/make_fixtures.sh)")
    return path


def all_fixture_files(filename: str) -> list[Path]:
    return sorted(FIXTURES.glob(f"*/*/{filename}"))


def snarkjs_export(request, kind: str, source: Path) -> dict | list:
    """snarkjs's JSON export of ``source`` (kind: zkey, r1cs, wtns): the fixture's own <kind>.json
    if present, else made with node_modules/.bin/snarkjs and cached in pytest's cache dir."""
    given = source.parent / f"{kind}.json"
    if given.exists():
        return json.loads(given.read_text())
    if not SNARKJS.exists():
        pytest.skip(f"{given.relative_to(REPO)} is missing and snarkjs is not installed (npm ci) to export it")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    folder = Path(cache.mkdir("snarkjs_exports")) if cache else Path(tempfile.gettempdir()) / "zkpipe-snarkjs-exports"
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{kind}-{digest}.json"
    if not out.exists():
        tmp = out.with_suffix(".tmp")
        subprocess.run([str(SNARKJS), kind, "export", "json", str(source), str(tmp)], check=True,
                       capture_output=True, timeout=300)
        tmp.rename(out)
    return json.loads(out.read_text())


def split_binfile(data: bytes) -> tuple[bytes, int, list[tuple[int, bytes]]]:
    """(magic, version, [(section id, data), ...]) of a well-formed container."""
    magic, version, n = FILE_HEADER.unpack_from(data, 0)
    pos, sections = FILE_HEADER.size, []
    for _ in range(n):
        sid, size = SECTION_HEADER.unpack_from(data, pos)
        sections.append((sid, data[pos + 12 : pos + 12 + size]))
        pos += 12 + size
    return magic, version, sections


def join_binfile(magic: bytes, version: int, sections: list[tuple[int, bytes]]) -> bytes:
    parts = [FILE_HEADER.pack(magic, version, len(sections))]
    for sid, body in sections:
        parts.append(SECTION_HEADER.pack(sid, len(body)) + body)
    return b"".join(parts)


def patch_sections(data: bytes, changes: dict[int, bytes]) -> bytes:
    """The container with the data of the sections in ``changes`` replaced (sizes follow)."""
    magic, version, sections = split_binfile(data)
    return join_binfile(magic, version, [(sid, changes.get(sid, body)) for sid, body in sections])


def section(data: bytes, section_id: int) -> bytes:
    return dict(split_binfile(data)[2])[section_id]


def u32(value: int) -> bytes:
    return struct.pack("<I", value)


def cut_points(data: bytes, count: int = 60) -> list[int]:
    """Where to truncate ``data`` (a binfile): around every section boundary, the first and
    last 16 bytes, and ``count`` evenly spread offsets (every offset for tiny files)."""
    length = len(data)
    if length <= 256:
        return list(range(length))
    points = set(range(16)) | set(range(length - 16, length)) | set(range(0, length, max(1, length // count)))
    _, _, n = FILE_HEADER.unpack_from(data, 0)
    pos = FILE_HEADER.size
    for _ in range(n):
        _, size = SECTION_HEADER.unpack_from(data, pos)
        points |= {pos, pos + 1, pos + 4, pos + 11, pos + 12, pos + 13, pos + 12 + size - 1}
        pos += 12 + size
    return sorted(p for p in points if 0 <= p < length)


@pytest.fixture
def write_tmp(tmp_path):
    """write_tmp(bytes, name) -> path of a file holding those bytes."""
    def write(data: bytes, name: str = "file.bin") -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path
    return write
