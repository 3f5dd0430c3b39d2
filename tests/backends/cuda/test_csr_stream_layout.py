"""The CSR's copies and kernel arguments (csr_stream.enqueue_spmv_chunks, and launch_resident_spmv for a
CSR kept on the device), without a GPU:
the host-to-device copies land in a stand-in device memory and a stand-in spmv reads each row's
entries through the very pointers the launch passes (shifted bases, wrapped modulo 2^64, columns
aligned after 2-byte indices), for a key's values and for its coefficient table. Every row must
see exactly its own (column, value) entries; the kernels' arithmetic itself is the GPU tests'."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from pipeline.backends.cuda import csr_stream
from pipeline.backends.cuda.csr_stream import COL_BYTES, plan_csr_chunks
from pipeline.backends.cuda.kernels import SIGNATURES
from pipeline.backends.cuda.memory import ADDRESS_MASK
from pipeline.formats.zkey import read_zkey
from pipeline.formats.coeff_table import coefficient_table
from pipeline.keycache.csr import csr_matrices
from tests.conftest import fixture_dir

BASE = 1 << 40  # device addresses of the stand-in memory start here


class FakeDevice:
    """Device memory as bytes, host arrays registered by address, and the spmv a launch asks for."""

    def __init__(self, nbytes: int) -> None:
        self.mem = np.zeros(nbytes, dtype=np.uint8)
        self.top = BASE
        self.rows_seen: dict[str, dict[int, list[tuple[int, bytes]]]] = {"a": {}, "b": {}}

    def alloc(self, nbytes: int) -> int:
        ptr = self.top
        self.top += -(-nbytes // 256) * 256
        return ptr

    def put(self, array: np.ndarray) -> "Buf":
        ptr = self.alloc(array.nbytes)
        self.mem[ptr - BASE:ptr - BASE + array.nbytes] = np.frombuffer(array.tobytes(), dtype=np.uint8)
        return Buf(ptr)

    def read(self, address: int, nbytes: int) -> bytes:
        at = (address & ADDRESS_MASK) - BASE
        assert 0 <= at and at + nbytes <= self.top - BASE, "read outside the device buffers"
        return self.mem[at:at + nbytes].tobytes()

    def u32(self, address: int) -> int:
        return int.from_bytes(self.read(address, 4), "little")

    def memcpy_htod(self, dst: int, src: int, nbytes: int, stream) -> tuple:
        self.mem[dst - BASE:dst - BASE + nbytes] = np.frombuffer(ctypes.string_at(src, nbytes), dtype=np.uint8)
        return (0,)

    def launch(self, name: str, grid, block, args: tuple, stream) -> None:
        assert len(args) == len(SIGNATURES[name.split("<")[0]]), name  # what the kernel's parameters are
        if name == "spmv_ab<fr_t>":
            (_, _, a_ptr, a_cols, a_vals, b_ptr, b_cols, b_vals, _, rows), table = args, None
        else:
            assert name == "spmv_ab_table<fr_t>"
            _, _, a_ptr, a_cols, a_vals, b_ptr, b_cols, b_vals, table, _, rows = args
        for tag, row_ptr, cols, vals in (("a", a_ptr, a_cols, a_vals), ("b", b_ptr, b_cols, b_vals)):
            for row in range(rows):
                start, end = self.u32(row_ptr + 4 * row), self.u32(row_ptr + 4 * (row + 1))
                entries = []
                for e in range(start, end):
                    col = self.u32(cols + COL_BYTES * e)
                    if table is None:
                        value = self.read(vals + 32 * e, 32)
                    else:
                        value = self.read(table + 32 * int.from_bytes(self.read(vals + 2 * e, 2), "little"), 32)
                    entries.append((col, value))
                first_row = (row_ptr - self.row_ptr_base[tag]) // 4
                self.rows_seen[tag][first_row + row] = entries


class Buf:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class Registered:
    """A host array as a page-locked registration looks to csr_stream: its address."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = np.ascontiguousarray(array)
        self.ptr = self.array.ctypes.data


class FakeKernels:
    def __init__(self, device: FakeDevice) -> None:
        self.launch = device.launch


def assert_every_row_saw_its_entries(device: FakeDevice, matrices, n_rows: int) -> None:
    for tag, m in zip("ab", matrices):
        seen = device.rows_seen[tag]
        assert sorted(seen) == list(range(n_rows))
        for row in range(n_rows):
            lo, hi = int(m.row_ptr[row]), int(m.row_ptr[row + 1])
            assert seen[row] == [(int(m.cols[e]), m.vals[e].tobytes()) for e in range(lo, hi)], (tag, row)


@pytest.mark.parametrize("table_on", [False, True], ids=["values", "coefficient-table"])
@pytest.mark.parametrize("chunk_bytes", [1 << 10, 5000, 1 << 30])
def test_every_row_reads_exactly_its_own_entries_through_the_chunk_pointers(monkeypatch, table_on, chunk_bytes):
    zkey = read_zkey(fixture_dir("bn128", "chain_2e10") / "circuit_final.zkey")
    matrices = csr_matrices(zkey)
    table = coefficient_table([m.vals for m in matrices]) if table_on else None
    device = FakeDevice(1 << 24)
    monkeypatch.setattr(csr_stream.driver, "cuMemcpyHtoDAsync", device.memcpy_htod)
    value_bytes = 2 if table_on else 32
    chunks = plan_csr_chunks(matrices[0].row_ptr, matrices[1].row_ptr, chunk_bytes, value_bytes)
    host = {f"{t}_cols": Registered(m.cols) for t, m in zip("ab", matrices)}
    d_csr = {f"{t}_row_ptr": device.put(m.row_ptr) for t, m in zip("ab", matrices)}
    device.row_ptr_base = {t: d_csr[f"{t}_row_ptr"].ptr for t in "ab"}
    if table_on:
        host.update({f"{t}_index": Registered(i) for t, i in zip("ab", table.indices)})
        d_csr["vals_table"] = device.put(table.table)
    else:
        host.update({f"{t}_vals_rr": Registered(m.vals) for t, m in zip("ab", matrices)})
    d_buf = device.alloc(max(c.nbytes(value_bytes) for c in chunks))
    n = zkey.domain_size
    csr_stream.enqueue_spmv_chunks(FakeKernels(device), type("S", (), {"handle": 0})(), chunks, host, d_csr, d_buf,
                                   d_w=0, d_a=0, d_b=0, elem=32)
    assert (len(chunks) > 1) == (chunk_bytes < 1 << 20)  # several chunks, or the whole CSR in one
    assert_every_row_saw_its_entries(device, matrices, n)


@pytest.mark.parametrize("table_on", [False, True], ids=["values", "coefficient-table"])
def test_a_resident_csr_launch_passes_every_rows_own_entries(table_on):
    """The launch a resident key's H makes (CudaBackend._enqueue_h): the same reading through the
    arguments it passes, the CSR as upload_csr names it on the device."""
    from pipeline.backends.cuda.device_key import csr_value_arrays

    zkey = read_zkey(fixture_dir("bls12381", "chain_2e10") / "circuit_final.zkey")
    matrices = csr_matrices(zkey)
    table = coefficient_table([m.vals for m in matrices]) if table_on else None
    device = FakeDevice(1 << 24)
    d_csr = {f"{t}_{part}": device.put(getattr(m, part)) for t, m in zip("ab", matrices) for part in ("row_ptr", "cols")}
    d_csr.update({name: device.put(values) for name, values in csr_value_arrays(matrices, table).items()})
    if table_on:
        d_csr["vals_table"] = device.put(table.table)
    device.row_ptr_base = {t: d_csr[f"{t}_row_ptr"].ptr for t in "ab"}
    csr_stream.launch_resident_spmv(FakeKernels(device), None, d_csr, (0, 0), 0, zkey.domain_size, 32)
    assert_every_row_saw_its_entries(device, matrices, zkey.domain_size)
