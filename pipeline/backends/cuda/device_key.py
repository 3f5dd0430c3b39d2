"""A proving key as the CUDA backend holds it (``CudaKey``), loaded and freed.

``load_device_key`` puts the sections a ``KeyPlacement`` keeps resident on the device (points
affine in Montgomery form as the zkey stores them; A and B as CSR by row, from the key cache when
it prepared them) and page-locks the streamed ones in place on the host (``HostRegistration``:
no second copy of tens of GB); a streamed CSR keeps only its row pointers on the device and is
read in row chunks (csr_stream.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import progress
from ...formats.types import CsrMatrix, Groth16Zkey
from ...formats.coeff_table import CoefficientTable
from ...keycache.csr import csr_matrices
from ..placement import SECTIONS, KeyPlacement
from .csr_stream import CsrChunk, plan_csr_chunks, value_layout
from .fixed_base import build_tables
from .kernels import CurveKernels
from .memory import DeviceBuffer, HostRegistration
from .msm import FixedBaseTable, MsmRunner
from .ntt import NttRunner
from .spmv_long import long_rows


@dataclass
class CurveRuntime:
    kernels: CurveKernels
    ntt: NttRunner
    msm: MsmRunner


@dataclass(eq=False)
class CudaKey:
    zkey: Groth16Zkey
    runtime: CurveRuntime
    d_points: dict[str, DeviceBuffer]  # resident sections (a, b1, b2, c, h): affine, Montgomery
    d_csr: dict[str, DeviceBuffer]  # {a,b}_{row_ptr,cols,vals_rr}, or {a,b}_index and vals_table
    placement: KeyPlacement = field(default_factory=KeyPlacement)
    host_points: dict[str, HostRegistration] = field(default_factory=dict)  # streamed sections, page-locked
    host_csr: dict[str, HostRegistration] = field(default_factory=dict)  # {a,b}_{cols,vals_rr or index}, streamed
    csr_chunks: list[CsrChunk] | None = None  # row chunks of a streamed CSR
    csr_chunk_max: int = 0  # bytes of the largest one
    scratch_by_batch: dict[int, int] = field(default_factory=dict)  # CudaBackend.scratch_bytes, computed once
    # resident sections kept as fixed-base tables (placement.fixed_base; not in d_points: window 0 is the points)
    tables: dict[str, FixedBaseTable] = field(default_factory=dict)

    @property
    def resident_bytes(self) -> int:
        """Device bytes the key holds: points, tables and the CSR."""
        return sum(b.nbytes for b in (*self.d_points.values(), *self.d_csr.values())) + \
            sum(t.d_table.nbytes for t in self.tables.values())



def csr_value_arrays(matrices: tuple[CsrMatrix, CsrMatrix], table: CoefficientTable | None) -> dict[str, np.ndarray]:
    """The value arrays of A and B as the device reads them, named as ``csr_stream.value_layout``
    says: the values, or with a coefficient table its indices (the table itself is ``vals_table``)."""
    suffix, _ = value_layout(table is not None, 0)
    arrays = [m.vals for m in matrices] if table is None else table.indices
    return {f"{tag}_{suffix}": array for tag, array in zip("ab", arrays)}


def upload_csr(upload, matrices: tuple[CsrMatrix, CsrMatrix], table: CoefficientTable | None = None,
               with_long_rows: bool = False) -> dict[str, DeviceBuffer]:
    """A and B by row (``keycache.csr_matrices``: prepared by the key cache, else built by a
    parallel counting sort) on the device ({a,b}_{row_ptr,cols}, and the values as
    ``csr_value_arrays`` names them, with ``vals_table``) through ``upload(array, what)``;
    ``with_long_rows``: each matrix's long rows too ({a,b}_long, ``spmv_long.long_rows``)."""
    d_csr = {}
    try:
        for tag, matrix in zip("ab", matrices):
            d_csr[f"{tag}_row_ptr"] = upload(matrix.row_ptr, f"key csr {tag} row_ptr")
            d_csr[f"{tag}_cols"] = upload(matrix.cols, f"key csr {tag} cols")
            if with_long_rows:
                d_csr[f"{tag}_long"] = upload(long_rows(matrix.row_ptr), f"key csr {tag} long rows")
        for name, values in csr_value_arrays(matrices, table).items():
            d_csr[name] = upload(values, f"key csr {name}")
        if table is not None:
            d_csr["vals_table"] = upload(table.table, "key csr coefficient table")
    except BaseException:
        for buf in d_csr.values():
            buf.free()
        raise
    return d_csr


def load_device_key(rt: CurveRuntime, zkey: Groth16Zkey, placement: KeyPlacement, upload, device,
                    table: CoefficientTable | None = None, with_long_rows: bool = False) -> CudaKey:
    """``zkey`` as ``placement`` says; ``upload(array, what)`` makes a device buffer of a key array;
    ``table``: the key's coefficients as indices into a table of their values (spmv reads those);
    ``with_long_rows``: a resident CSR's long rows listed (``upload_csr``). The sections of
    ``placement.fixed_base`` end as fixed-base tables in place of their points (fixed_base.py).
    Frees what it took if anything fails."""
    up = upload
    d_points, d_csr, host_points, host_csr = {}, {}, {}, {}
    csr_chunks, csr_chunk_max, tables = None, 0, {}
    try:
        with progress.bar("preparing the key (cuda)", total=8 + len(placement.fixed_base), unit="part") as bar:
            for name in SECTIONS:
                points = zkey.host_points(name)
                if name in placement.resident:
                    d_points[name] = up(points, f"key points {name}")
                else:  # page-locked in place: the pass's copies run at full speed, beside the kernels
                    host_points[name] = HostRegistration(device, np.ascontiguousarray(points))
                bar.update()
            matrices = csr_matrices(zkey)  # prepared by the key cache, else built now
            if placement.csr_chunk_bytes:  # cols and values page-locked in place; H streams them in row chunks
                for tag, matrix in zip("ab", matrices):
                    d_csr[f"{tag}_row_ptr"] = up(matrix.row_ptr, f"key csr {tag} row_ptr")
                    host_csr[f"{tag}_cols"] = HostRegistration(device, np.ascontiguousarray(matrix.cols))
                for name, values in csr_value_arrays(matrices, table).items():
                    host_csr[name] = HostRegistration(device, np.ascontiguousarray(values))
                if table is not None:
                    d_csr["vals_table"] = up(table.table, "key csr coefficient table")
                _, value_bytes = value_layout(table is not None, 8 * zkey.curve.fr.limbs)
                csr_chunks = plan_csr_chunks(matrices[0].row_ptr, matrices[1].row_ptr, placement.csr_chunk_bytes,
                                             value_bytes)
                csr_chunk_max = max(c.nbytes(value_bytes) for c in csr_chunks)
            else:
                d_csr = upload_csr(up, matrices, table, with_long_rows)
            bar.update(2)
            rt.ntt.ensure_tables(zkey.log_domain_size, compact=bool(placement.streamed))  # as placed
            bar.update()
            tables = build_tables(rt.msm, zkey, d_points, placement.tables, bar.update)
    except BaseException:
        for buf in (*d_points.values(), *d_csr.values(), *tables.values()):
            buf.free()
        for reg in (*host_points.values(), *host_csr.values()):
            reg.close()
        raise
    return CudaKey(zkey, rt, d_points, d_csr, placement, host_points, host_csr, csr_chunks, csr_chunk_max,
                   tables=tables)


def unload_device_key(key: CudaKey, stream) -> None:
    """Free the key's device buffers (stream-ordered) and unlock its host arrays once no copy of a
    pass can still read them."""
    for buf in (*key.d_points.values(), *key.d_csr.values(), *key.tables.values()):
        buf.free()
    key.tables = {}
    if key.host_points or key.host_csr:
        stream.synchronize()
        for reg in (*key.host_points.values(), *key.host_csr.values()):
            reg.close()
