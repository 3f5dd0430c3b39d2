"""Hand a development key whose points are on the device to the CUDA backend, without uploading them.

``CudaBackend.load_key`` uploads the five point arrays and the A/B coefficients (CSR by row).
For a key that ``GpuDevSetup`` just made, the points already sit on that device in the form the
backend keeps (affine, Montgomery), so only the CSR is uploaded here. Until the backend's
``load_key`` accepts resident point buffers itself, this builds its ``CudaKey`` the way
``load_key`` does (same CSR upload, same twiddles), minus the point upload.
"""
from __future__ import annotations

from ..backends.cuda.backend import CudaBackend
from ..backends.cuda.device_key import CudaKey, upload_csr
from ..keycache import csr_matrices
from .gpu import DevKey


def adopt_dev_key(backend: CudaBackend, dev_key: DevKey) -> CudaKey:
    """The backend's resident key over ``dev_key``'s device points, which it now owns
    (``backend.unload_key`` frees them; ``dev_key.d_points`` is emptied)."""
    zkey = dev_key.zkey
    if dev_key.backend is not backend:
        raise ValueError("the development key's points belong to another backend (another device or allocator)")
    if not dev_key.d_points:
        raise ValueError("the development key's device points were freed or adopted already")
    rt = backend.runtime(zkey.curve)
    d_csr = upload_csr(backend.upload_key_array, csr_matrices(zkey), backend.coefficient_table(zkey),
                       backend.spmv_long_rows)
    try:
        rt.ntt.ensure_tables(zkey.log_domain_size)
    except BaseException:
        for buf in d_csr.values():
            buf.free()
        raise
    d_points, dev_key.d_points = dev_key.d_points, {}
    return CudaKey(zkey, rt, d_points, d_csr)
