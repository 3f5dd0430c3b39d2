"""Compute backends behind the ``Backend`` protocol (protocol.py)."""
from __future__ import annotations

from .cuda.options import CudaOptions  # the CUDA backend's settings, held in EngineConfig.cuda


def create_backend(name: str = "auto", **options):
    """``cpu``, ``cuda``, or ``auto`` (CUDA where a GPU answers, else CPU)."""
    if name == "cpu":
        from .cpu import CpuBackend

        return CpuBackend()
    if name in ("cuda", "auto"):
        try:
            from .cuda import CudaBackend

            return CudaBackend(device_ordinal=options.pop("device", 0), **options)
        except Exception as exc:  # no driver, no GPU, or no cuda-python
            if name == "cuda":
                raise RuntimeError(f"CUDA backend unavailable: {exc}") from exc
            from .cpu import CpuBackend

            return CpuBackend()
    raise ValueError(f"unknown backend {name!r} (expected cpu, cuda or auto)")


_HOST_BACKEND = None


def host_backend():
    """The process's one CPU backend (the host placement of the G2 MSM, the reference steps)."""
    global _HOST_BACKEND
    if _HOST_BACKEND is None:
        from .cpu import CpuBackend

        _HOST_BACKEND = CpuBackend()
    return _HOST_BACKEND
