"""create_backend: which backend runs and why, said in one line; unknown or unusable ones refused."""
from __future__ import annotations

import logging

import pytest

from pipeline.backends import (BackendUnavailable, UnknownBackend, backend_choice_json, create_backend,
                               cuda_unavailable_reason, describe_backend)
from pipeline.errors import BadInput, Unavailable


def gpu_answers() -> bool:
    try:
        from pipeline.backends.cuda.device import device_count

        return device_count() > 0
    except ImportError:
        return False


def test_cpu_asked_for_is_cpu_and_says_so(caplog):
    with caplog.at_level(logging.INFO, logger="zkpipe.backends"):
        backend = create_backend("cpu")
    assert backend.name == "cpu"
    assert backend_choice_json(backend) == {"requested": "cpu", "chosen": "cpu", "reason": "asked for"}
    assert "backend cpu (asked for)" in caplog.text


def test_auto_reports_the_backend_it_chose_and_why(caplog):
    with caplog.at_level(logging.INFO, logger="zkpipe.backends"):
        backend = create_backend("auto")
    choice = backend.choice
    assert choice.requested == "auto" and choice.chosen == backend.name
    if gpu_answers():
        assert choice.chosen == "cuda" and choice.reason.startswith("auto: a GPU answered, device 0: ")
    else:  # the fallback is logged as a warning that names why CUDA did not start
        assert choice.chosen == "cpu" and choice.reason.startswith("auto: CUDA unavailable: ")
        assert any(r.levelno == logging.WARNING and "auto: CUDA unavailable" in r.getMessage() for r in caplog.records)
    assert describe_backend(backend) == f"{choice.chosen} ({choice.reason})"


def test_cuda_without_a_gpu_is_one_clear_error():
    if gpu_answers():
        pytest.skip("a GPU answers here: the cuda backend starts (tested in tests/gpu)")
    with pytest.raises(BackendUnavailable, match=r"^the CUDA backend cannot start: ") as info:
        create_backend("cuda")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["gpu", "CUDA", ""])
def test_unknown_backend_names_are_refused_naming_the_choices(name):
    with pytest.raises(UnknownBackend, match=r"unknown backend .*expected one of: cpu, cuda, auto"):
        create_backend(name)
    assert issubclass(UnknownBackend, BadInput) and issubclass(BackendUnavailable, Unavailable)  # exit 2 both


class DynamicLibNotFoundError(RuntimeError):
    """The name cuda-python's loader gives its error when libcuda is missing."""


@pytest.mark.parametrize("exc, reason", [
    (ImportError("No module named 'cuda'"), "the CUDA packages are not installed (pip install 'zkpipe[cuda]')"),
    (DynamicLibNotFoundError('"cuda" is an NVIDIA driver library ...\nmore'), "no NVIDIA driver (libcuda not found)"),
    (RuntimeError("cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"),
     "no GPU (cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected)"),
    (RuntimeError("cuDeviceGet: CUDA_ERROR_INVALID_DEVICE: invalid device ordinal\ndetail"),
     "cuDeviceGet: CUDA_ERROR_INVALID_DEVICE: invalid device ordinal"),
])
def test_why_cuda_did_not_start_is_one_actionable_line(exc, reason):
    assert cuda_unavailable_reason(exc) == reason


def test_a_backend_not_made_by_create_backend_is_described_by_its_name():
    class Fake:
        name = "fake"

    assert describe_backend(Fake()) == "fake" and backend_choice_json(Fake()) is None
