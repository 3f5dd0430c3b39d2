"""Property: every reader, fed a randomly damaged fixture (byte flips, truncations, insertions,
deletions, overwritten counts), either returns or raises FormatError. Never anything else."""
from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.formats.errors import FormatError
from pipeline.formats.inspect import inspect_file
from pipeline.formats.r1cs import read_r1cs
from pipeline.formats.snarkjs_json import read_proof, read_public, read_verification_key
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey

from tests.formats.conftest import FIXTURES

READERS = {
    "circuit_final.zkey": [read_zkey, functools.partial(read_zkey, check_points=True), inspect_file],
    "witness.wtns": [read_wtns, inspect_file],
    "circuit.r1cs": [read_r1cs, inspect_file],
    "proof.json": [read_proof, inspect_file],
    "vk.json": [read_verification_key, inspect_file],
    "public.json": [read_public, inspect_file],
}
SOURCES = [(curve, filename) for curve in ("bn128", "bls12381") for filename in READERS]


def _load(curve: str, filename: str) -> bytes:
    path = FIXTURES / curve / "multiplier" / filename
    if not path.exists():
        pytest.skip(f"fixture {path} is missing (build it with tools/make_fixtures.sh)")
    return path.read_bytes()


@st.composite
def mutations(draw, length: int):
    """A list of (kind, position, payload) edits."""
    edits = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "u32"]))
        pos = draw(st.integers(0, max(0, length - 1)))
        if kind == "flip":
            edits.append((kind, pos, draw(st.integers(1, 255))))
        elif kind == "insert":
            edits.append((kind, pos, draw(st.binary(min_size=1, max_size=16))))
        elif kind == "delete":
            edits.append((kind, pos, draw(st.integers(1, 16))))
        elif kind == "u32":
            edits.append((kind, pos, draw(st.sampled_from([0, 1, 2, 3, 0xFFFFFFFF, 0x80000000, 1 << 20]))))
        else:
            edits.append((kind, pos, None))
    return edits


def apply(data: bytes, edits) -> bytes:
    buf = bytearray(data)
    for kind, pos, payload in edits:
        pos = min(pos, len(buf))
        if kind == "flip" and pos < len(buf):
            buf[pos] ^= payload
        elif kind == "truncate":
            del buf[pos:]
        elif kind == "insert":
            buf[pos:pos] = payload
        elif kind == "delete":
            del buf[pos : pos + payload]
        elif kind == "u32":
            buf[pos : pos + 4] = payload.to_bytes(4, "little")
    return bytes(buf)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("mutations")


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_files_return_or_raise_format_error_only(workdir, data):
    curve, filename = data.draw(st.sampled_from(SOURCES), label="source")
    original = _load(curve, filename)
    reader = data.draw(st.sampled_from(READERS[filename]), label="reader")
    damaged = apply(original, data.draw(mutations(len(original)), label="edits"))
    path = workdir / filename
    path.write_bytes(damaged)
    try:
        reader(path)
    except FormatError as exc:
        assert exc.path == str(path) and exc.reason
