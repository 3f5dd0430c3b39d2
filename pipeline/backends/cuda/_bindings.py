"""cuda-python's driver and NVRTC modules, under either package layout.

cuda-python >= 12.6 ships them as ``cuda.bindings.driver`` / ``cuda.bindings.nvrtc``; older
releases as ``cuda.cuda`` / ``cuda.nvrtc``. ``IMPORT_ERROR`` says why the driver's did not load.
NVRTC is imported on first use (``nvrtc_module``): only a compile needs it, and importing it
costs ~90 ms of a one-shot proof's start (cuda.pathfinder looks for the library; measured on
the H200 host, bench/results/oneshot_prove_cuda.md), while prebuilt kernels need no compiler.
"""
from __future__ import annotations

driver = None
IMPORT_ERROR: str | None = None
try:
    from cuda.bindings import driver  # type: ignore[no-redef]
except ImportError as exc_new:  # pragma: no cover - depends on the installed layout
    try:
        from cuda import cuda as driver  # type: ignore[no-redef]
    except ImportError as exc_old:
        IMPORT_ERROR = f"cuda-python is not installed ({exc_new}; {exc_old})"


def nvrtc_module():
    """cuda-python's NVRTC bindings (imported once, on the first call)."""
    if IMPORT_ERROR:
        raise ImportError(IMPORT_ERROR)
    try:
        from cuda.bindings import nvrtc
    except ImportError:  # pragma: no cover - the older layout
        from cuda import nvrtc  # type: ignore[no-redef]
    return nvrtc
