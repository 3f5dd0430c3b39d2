"""The CUDA backend: kernels in cuda_src/, built through NVRTC and driven with cuda-python.

Importing this package needs only numpy; cuda-python is imported lazily by the modules that
talk to the driver, so CI without it can still import and skip.
"""
from .constants import curve_header

__all__ = ["curve_header"]


def __getattr__(name: str):
    # Lazy, so that importing the constants generator (CI's compile test) never loads the driver.
    if name == "CudaBackend":
        from .backend import CudaBackend

        return CudaBackend
    raise AttributeError(name)
