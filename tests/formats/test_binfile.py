"""The sections container: layout of real files, and every way a container can be broken."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.formats.binfile import SectionCursor, first_not_below, read_array, read_layout
from pipeline.formats.errors import FormatError

from tests.formats.conftest import CURVES, cut_points, fixture_file, join_binfile, split_binfile

KINDS = [("circuit_final.zkey", "zkey", 1, set(range(1, 11))),
         ("witness.wtns", "wtns", 2, {1, 2}),
         ("circuit.r1cs", "r1cs", 1, {1, 2, 3})]


@pytest.mark.parametrize("curve", list(CURVES))
@pytest.mark.parametrize("filename, magic, version, ids", KINDS, ids=[k[1] for k in KINDS])
def test_layout_of_snarkjs_files_lists_every_section_inside_the_file(curve, filename, magic, version, ids):
    path = fixture_file(curve, "bits", filename)
    bf = read_layout(path, magic, version)
    assert (bf.magic, bf.version, set(bf.sections)) == (magic, version, ids)
    ends = sorted(off + size for off, size in bf.sections.values())
    assert ends[-1] == bf.file_size == path.stat().st_size
    for off, size in bf.sections.values():
        assert 24 <= off and off + size <= bf.file_size


def _small_container() -> bytes:
    return join_binfile(b"wtns", 2, [(1, b"\x01" * 8), (2, b"\x02" * 16)])


def test_well_formed_container_is_read(write_tmp):
    bf = read_layout(write_tmp(_small_container()), "wtns", 2)
    assert bf.sections == {1: (24, 8), 2: (44, 16)}
    assert bf.read_bytes(2) == b"\x02" * 16


def test_wrong_magic_is_rejected_naming_both(write_tmp):
    path = write_tmp(_small_container())
    with pytest.raises(FormatError, match=r"expected magic b'zkey', found b'wtns'") as err:
        read_layout(path, "zkey", 1)
    assert err.value.path == str(path)


def test_wrong_version_is_rejected(write_tmp):
    data = join_binfile(b"wtns", 1, [(1, b"")])
    with pytest.raises(FormatError, match="expected 2, found 1"):
        read_layout(write_tmp(data), "wtns", 2)


@pytest.mark.parametrize("cut", range(len(_small_container())))
def test_every_truncation_is_rejected(write_tmp, cut):
    with pytest.raises(FormatError, match="truncated"):
        read_layout(write_tmp(_small_container()[:cut]), "wtns", 2)


def test_trailing_bytes_are_rejected(write_tmp):
    with pytest.raises(FormatError, match="3 unexpected bytes after the last of 2 sections"):
        read_layout(write_tmp(_small_container() + b"xyz"), "wtns", 2)


def test_repeated_section_id_is_rejected(write_tmp):
    data = join_binfile(b"wtns", 2, [(1, b"a"), (2, b"b"), (1, b"c")])
    with pytest.raises(FormatError, match="section 1 appears twice"):
        read_layout(write_tmp(data), "wtns", 2)


def test_section_larger_than_the_file_is_rejected_with_its_name(write_tmp):
    data = bytearray(_small_container())
    struct.pack_into("<Q", data, 12 + 4, 1 << 40)  # section 1 claims a terabyte
    with pytest.raises(FormatError, match=r"section 1 \(header\) at offset 24 claims 1099511627776 bytes"):
        read_layout(write_tmp(bytes(data)), "wtns", 2, {1: "header"})


def test_missing_file_is_a_format_error(tmp_path):
    with pytest.raises(FormatError, match="cannot read"):
        read_layout(tmp_path / "nope.zkey", "zkey", 1)


def test_require_names_a_missing_section(write_tmp):
    bf = read_layout(write_tmp(_small_container()), "wtns", 2, {3: "labels"})
    with pytest.raises(FormatError, match=r"section 3 \(labels\) is missing"):
        bf.require(3)


def test_read_array_is_aligned_and_refuses_to_overrun(write_tmp):
    data = join_binfile(b"wtns", 2, [(7, b"abc"), (1, np.arange(6, dtype="<u8").tobytes())])
    bf = read_layout(write_tmp(data), "wtns", 2)
    assert bf.sections[1][0] % 8 != 0  # unaligned in the file ...
    arr = read_array(bf, 1, 8, "<u8", (5,))
    assert arr.ctypes.data % 8 == 0 and arr.tolist() == [1, 2, 3, 4, 5]  # ... aligned in memory
    with pytest.raises(FormatError, match="expected at least 56 bytes, found 48"):
        read_array(bf, 1, 8, "<u8", (6,))


def test_cursor_reports_what_it_was_reading():
    cur = SectionCursor("f.zkey", "section 2 (groth16 header)", b"\x01\x00\x00\x00\x02")
    assert cur.u32("n8q") == 1
    with pytest.raises(FormatError, match=r"section 2 \(groth16 header\): too short: q needs 32 bytes at offset 4"):
        cur.bigint(32, "q")
    cur2 = SectionCursor("f", "s", b"\x00" * 5)
    cur2.u32("x")
    with pytest.raises(FormatError, match="expected 4 bytes"):
        cur2.expect_end("x")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**256 - 1), min_size=1, max_size=20), st.integers(1, 2**256 - 1))
def test_first_not_below_agrees_with_python_ints(values, modulus):
    arr = np.array([[(v >> (64 * i)) & (2**64 - 1) for i in range(4)] for v in values], dtype=np.uint64)
    expected = next((i for i, v in enumerate(values) if v >= modulus), None)
    assert first_not_below(arr, modulus) == expected


def test_split_and_join_helpers_round_trip():
    data = _small_container()
    assert join_binfile(*split_binfile(data)) == data


@pytest.mark.parametrize("curve", list(CURVES))
def test_truncated_fixture_zkey_is_rejected_at_many_cuts(curve, write_tmp):
    data = fixture_file(curve, "multiplier", "circuit_final.zkey").read_bytes()
    for cut in cut_points(data):
        with pytest.raises(FormatError):
            read_layout(write_tmp(data[:cut]), "zkey", 1)
