"""cuda-python's driver and NVRTC modules, under either package layout.

cuda-python >= 12.6 ships them as ``cuda.bindings.driver`` / ``cuda.bindings.nvrtc``; older
releases as ``cuda.cuda`` / ``cuda.nvrtc``. ``IMPORT_ERROR`` says why neither loaded.
"""
from __future__ import annotations

driver = nvrtc = None
IMPORT_ERROR: str | None = None
try:
    from cuda.bindings import driver, nvrtc  # type: ignore[no-redef]
except ImportError as exc_new:  # pragma: no cover - depends on the installed layout
    try:
        from cuda import cuda as driver, nvrtc  # type: ignore[no-redef]
    except ImportError as exc_old:
        IMPORT_ERROR = f"cuda-python is not installed ({exc_new}; {exc_old})"
