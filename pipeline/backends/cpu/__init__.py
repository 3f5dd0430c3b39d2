from .backend import CpuBackend, CpuKey

__all__ = ["CpuBackend", "CpuKey"]
