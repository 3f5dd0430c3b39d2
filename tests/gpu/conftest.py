"""GPU test fixtures: skipped as a whole where no CUDA driver or GPU is present.

Every test here carries ``@pytest.mark.gpu`` (registered in pyproject.toml); run them with
``pytest -m gpu tests/gpu`` on the GPU host. Kernels are built once per curve per session.
"""
from __future__ import annotations

import pytest

from pipeline.curves import BLS12_381, BN254


@pytest.fixture(scope="session")
def cuda_backend():
    from pipeline.backends.cuda.device import device_count

    if device_count() == 0:
        pytest.skip("no CUDA driver or GPU on this machine")
    from pipeline.backends.cuda.backend import CudaBackend
    from pipeline.config import cuda_options_from_env

    backend = CudaBackend(options=cuda_options_from_env())  # e.g. ZKPIPE_ENGINE_CUDA_SYNC_AFTER_LAUNCH=true
    compile_s = backend.prebuild([BN254, BLS12_381])
    print("\nkernel first-use compile seconds:", {k: round(v, 1) for k, v in compile_s.items()})
    yield backend
    backend.close()


@pytest.fixture(scope="session", params=[BN254, BLS12_381], ids=lambda c: c.name)
def gpu_curve(request):
    return request.param


@pytest.fixture(scope="session")
def runtime(cuda_backend, gpu_curve):
    return cuda_backend.runtime(gpu_curve)
