"""Compute backends behind the ``Backend`` protocol (protocol.py), and the choice between them.

``create_backend(name)`` returns a backend carrying ``backend.choice`` (a ``BackendChoice``):
which backend was asked for, which one runs, and why (for ``auto`` that fell back to the CPU:
why CUDA could not start). The choice is also logged on ``zkpipe.backends``. A backend that
cannot run here is ``BackendUnavailable`` and an unknown name ``UnknownBackend``, each with a
one-line message.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from ..errors import BadInput, Unavailable
from .cuda.options import CudaOptions  # the CUDA backend's settings, held in EngineConfig.cuda

BACKEND_NAMES = ("cpu", "cuda", "auto")
CUDA_EXTRA_HINT = "pip install 'zkpipe[cuda]'"
log = logging.getLogger("zkpipe.backends")


class BackendUnavailable(Unavailable):
    """The backend asked for cannot run on this machine (no GPU, driver or CUDA packages); the message says why."""


class UnknownBackend(BadInput):
    """A backend name that is not one of BACKEND_NAMES."""


@dataclass(frozen=True)
class BackendChoice:
    requested: str  # cpu | cuda | auto
    chosen: str  # cpu | cuda
    reason: str  # why this one, and for a fallback why not the other

    def describe(self) -> str:
        return f"{self.chosen} ({self.reason})"

    def to_json(self) -> dict:
        return {"requested": self.requested, "chosen": self.chosen, "reason": self.reason}


def cuda_unavailable_reason(exc: BaseException) -> str:
    """Why the CUDA backend did not start, in one line a user can act on."""
    if isinstance(exc, ImportError):
        return f"the CUDA packages are not installed ({CUDA_EXTRA_HINT})"
    first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if type(exc).__name__ == "DynamicLibNotFoundError":  # cuda-python's loader found no libcuda
        return "no NVIDIA driver (libcuda not found)"
    if "CUDA_ERROR_NO_DEVICE" in first_line:
        return f"no GPU ({first_line})"
    return first_line


def _cuda(device: int, options: dict):
    from .cuda import CudaBackend

    backend = CudaBackend(device_ordinal=device, **options)
    return backend, f"device {device}: {backend.device.name}"


def create_backend(name: str = "auto", **options):
    """``cpu``, ``cuda``, or ``auto`` (CUDA where a GPU answers, else CPU); see the module doc."""
    if name not in BACKEND_NAMES:
        raise UnknownBackend(f"unknown backend {name!r} (expected one of: {', '.join(BACKEND_NAMES)})")
    device = options.pop("device", 0)
    if name == "cpu":
        from .cpu import CpuBackend

        backend, choice = CpuBackend(), BackendChoice("cpu", "cpu", "asked for")
    else:
        try:
            backend, where = _cuda(device, options)
            choice = BackendChoice(name, "cuda", where if name == "cuda" else f"auto: a GPU answered, {where}")
        except Exception as exc:  # no cuda-python, no driver, no GPU: each says so
            reason = cuda_unavailable_reason(exc)
            if name == "cuda":
                raise BackendUnavailable(f"the CUDA backend cannot start: {reason}") from exc
            from .cpu import CpuBackend

            backend, choice = CpuBackend(), BackendChoice("auto", "cpu", f"auto: CUDA unavailable: {reason}")
    backend.choice = choice
    (log.warning if choice.requested == "auto" and choice.chosen == "cpu" else log.info)(
        "backend %s", choice.describe())
    return backend


def backend_choice_json(backend) -> dict | None:
    """``backend.choice`` as JSON (None for a backend made without ``create_backend``, e.g. a test fake)."""
    choice = getattr(backend, "choice", None)
    return choice.to_json() if choice is not None else None


def describe_backend(backend) -> str:
    """``backend.choice.describe()``, or the bare name for a backend made without ``create_backend``."""
    choice = getattr(backend, "choice", None)
    return choice.describe() if choice is not None else getattr(backend, "name", type(backend).__name__)


_HOST_BACKEND = None


def host_backend():
    """The process's one CPU backend (the host placement of the G2 MSM, the reference steps)."""
    global _HOST_BACKEND
    if _HOST_BACKEND is None:
        from .cpu import CpuBackend

        _HOST_BACKEND = CpuBackend()
    return _HOST_BACKEND
