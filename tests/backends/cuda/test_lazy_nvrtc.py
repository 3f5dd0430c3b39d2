"""NVRTC is a compiler: the CUDA backend imports its bindings only when it compiles (prebuilt
kernels need none), since the import costs a one-shot proof ~90 ms of its start."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_the_cuda_backend_imports_without_the_compiler_bindings():
    code = ("import sys, pipeline.backends.cuda.backend, pipeline.backends.cuda.kernels; "
            "print(sorted(m for m in sys.modules if 'nvrtc' in m and m.startswith('cuda')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_the_compiler_bindings_load_on_first_use():
    from pipeline.backends.cuda._bindings import nvrtc_module

    nvrtc = nvrtc_module()
    assert hasattr(nvrtc, "nvrtcCompileProgram") and nvrtc_module() is nvrtc


def test_the_early_context_of_a_one_shot_proof_steps_aside_without_a_driver():
    """No GPU driver (CI): the early start returns None, and the backend reports on its own; on a
    GPU host it holds device 0's context."""
    from pipeline.backends.cuda.device import device_count
    from pipeline.oneshot.local import _EarlyContext

    early = _EarlyContext.start()
    try:
        assert (early is None) == (device_count() == 0)
    finally:
        if early is not None:
            early.release()
