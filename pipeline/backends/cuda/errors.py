"""One error type for every CUDA driver and NVRTC failure, and the one check all calls go through.

cuda-python returns ``(status, *values)`` tuples; ``check`` raises ``CudaError`` (the call, the
kernel when there is one, the error name and string) on a bad status, and unwraps the values.
"""
from __future__ import annotations

from typing import Any

from ._bindings import driver, nvrtc_module
from ...errors import InternalError, Unavailable


class CudaError(InternalError):
    def __init__(self, call: str, error: str, kernel: str | None = None, detail: str | None = None) -> None:
        where = f" (kernel {kernel})" if kernel else ""
        more = f"\n{detail}" if detail else ""
        super().__init__(f"{call}{where}: {error}{more}")
        self.call = call
        self.kernel = kernel
        self.error = error


class DeviceBudgetError(Unavailable, MemoryError):
    """A device allocation would run past the allocator's byte budget (raised before CUDA fails)."""


class CompileError(CudaError):
    """NVRTC rejected a kernel source; the message carries NVRTC's log."""


def _error_text(status: Any) -> str:
    if isinstance(status, driver.CUresult):
        name = driver.cuGetErrorName(status)
        text = driver.cuGetErrorString(status)
        name_s = name[1].decode() if name[0] == driver.CUresult.CUDA_SUCCESS else str(status)
        text_s = text[1].decode() if text[0] == driver.CUresult.CUDA_SUCCESS else ""
        return f"{name_s}: {text_s}" if text_s else name_s
    if type(status).__name__ == "nvrtcResult":  # only a compile (which imported NVRTC) returns one
        nvrtc = nvrtc_module()
        msg = nvrtc.nvrtcGetErrorString(status)
        return msg[1].decode() if msg[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS else str(status)
    return str(status)


def check(result: tuple, call: str, kernel: str | None = None) -> Any:
    """Raise ``CudaError`` unless ``result[0]`` is success; return the remaining value(s)."""
    status = result[0]
    if int(status) != 0:
        raise CudaError(call, _error_text(status), kernel)
    if len(result) == 1:
        return None
    if len(result) == 2:
        return result[1]
    return result[1:]
