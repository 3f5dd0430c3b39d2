"""The sparse products' long rows apart (spmv_long.py, CudaOptions.spmv_long_rows) without a GPU: which
rows are listed, the device bytes the key counts for the lists, and what the launches are given (the
short kernel the threshold, a warp a listed row of each matrix, the table's two pointers in its form).
The kernels themselves are checked on the GPU (tests/gpu/test_backend.py)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pipeline.backends.cuda.csr_stream import launch_resident_spmv
from pipeline.backends.cuda.kernels import SIGNATURES, UNITS
from pipeline.backends.cuda.launch import SPMV_LONG_BLOCK, SPMV_LONG_ROW
from pipeline.backends.cuda.options import CudaOptions
from pipeline.backends.cuda.spmv_long import long_rows, long_rows_bytes_bound


class RecordingKernels:
    def __init__(self) -> None:
        self.launches: list[tuple] = []

    def launch(self, expr, grid, block, args, stream, shared_bytes=0):
        assert expr in UNITS["ntt"] and len(args) == len(SIGNATURES[expr.split("<", 1)[0]]), expr
        self.launches.append((expr, grid, block, args))


def buf(ptr: int, nbytes: int = 8):
    return SimpleNamespace(ptr=ptr, nbytes=nbytes)


@pytest.mark.parametrize("seed", range(5))
def test_the_listed_rows_are_those_longer_than_the_threshold_and_fit_the_bound(seed):
    rng = np.random.default_rng(seed)
    lengths = [rng.choice([0, 1, 2, 3, SPMV_LONG_ROW, SPMV_LONG_ROW + 1, 32, 254], size=1000) for _ in "ab"]
    row_ptrs = [np.concatenate([[0], np.cumsum(x)]).astype(np.uint32) for x in lengths]
    lists = [long_rows(r) for r in row_ptrs]
    for x, listed in zip(lengths, lists):
        assert listed.dtype == np.uint32 and list(listed) == [i for i, n in enumerate(x) if n > SPMV_LONG_ROW]
    entries = int(sum(x.sum() for x in lengths))
    assert sum(4 * max(len(x), 1) for x in lists) <= long_rows_bytes_bound(entries) + 2  # empty lists: 1-byte buffers


def test_no_row_is_long_in_an_empty_or_short_matrix():
    assert len(long_rows(np.zeros(1, np.uint32))) == 0
    assert len(long_rows(np.arange(0, 3 * 50 + 1, 3, dtype=np.uint32))) == 0
    assert long_rows_bytes_bound(0) >= 2


@pytest.mark.parametrize("with_table", [False, True])
def test_the_short_kernel_skips_the_long_rows_and_each_listed_row_gets_a_warp(with_table):
    kernels = RecordingKernels()
    d_csr = {"a_row_ptr": buf(100), "a_cols": buf(101), "b_row_ptr": buf(200), "b_cols": buf(201),
             "a_long": buf(150, 4 * 7), "b_long": buf(250, 1)}  # B lists none (a 1-byte buffer)
    if with_table:
        d_csr.update(a_index=buf(102), b_index=buf(202), vals_table=buf(300))
    else:
        d_csr.update(a_vals_rr=buf(102), b_vals_rr=buf(202))
    launch_resident_spmv(kernels, SimpleNamespace(handle=0), d_csr, (1, 2), 9, 1000, 32)
    (short, _, _, sargs), *longs = kernels.launches
    assert short == ("spmv_ab_table_short<fr_t>" if with_table else "spmv_ab_short<fr_t>")
    assert sargs[-2:] == (1000, SPMV_LONG_ROW) and sargs[:2] == (1, 2)
    assert len(longs) == 1  # B's list is empty
    expr, grid, block, args = longs[0]
    assert expr == "spmv_long_rows<fr_t>" and block == SPMV_LONG_BLOCK and grid * block >= 32 * 7
    vals, index = (300, 102) if with_table else (102, 0)
    assert args == (1, 150, 7, 100, 101, vals, index, 9)


def test_without_lists_the_thread_a_row_kernel_runs_alone_and_the_option_is_on_by_default():
    kernels = RecordingKernels()
    d_csr = {"a_row_ptr": buf(100), "a_cols": buf(101), "a_vals_rr": buf(102), "b_row_ptr": buf(200),
             "b_cols": buf(201), "b_vals_rr": buf(202)}
    launch_resident_spmv(kernels, SimpleNamespace(handle=0), d_csr, (1, 2), 9, 1000, 32)
    assert [e for e, *_ in kernels.launches] == ["spmv_ab<fr_t>"]
    assert CudaOptions().spmv_long_rows is True  # measured on a seed-shaped key (options.py)
    with pytest.raises(ValueError, match="spmv_long_rows"):
        CudaOptions(spmv_long_rows=1)
