"""The one error tree: every exception zkpipe defines sits under ZkpipeError, and the caller's
fault is decided from the tree, never from builtin base classes."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import pipeline
from pipeline.errors import BadInput, InternalError, Unavailable, ZkpipeError, fault_code, is_callers_fault

OPTIONAL = {"pipeline.backends.cuda"}  # imported only where cuda-python exists (it does in CI)


def _project_modules():
    for info in pkgutil.walk_packages(pipeline.__path__, "pipeline."):
        if info.name.endswith("__main__"):
            continue
        try:
            yield importlib.import_module(info.name)
        except ImportError:
            if not any(info.name.startswith(o) for o in OPTIONAL):
                raise


def test_every_public_exception_of_the_project_is_in_the_tree():
    outside = []
    for module in _project_modules():
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__
                    and not name.startswith("_") and not issubclass(obj, ZkpipeError)):
                outside.append(f"{module.__name__}.{name}")
    assert outside == []


@pytest.mark.parametrize("name, branch", [
    ("pipeline.formats.errors.FormatError", BadInput),
    ("pipeline.groth16.prover.WitnessMismatch", BadInput),
    ("pipeline.engine.stages.WitnessUnsatisfied", BadInput),
    ("pipeline.engine.keystore.UnknownKey", BadInput),
    ("pipeline.config.ConfigError", BadInput),
    ("pipeline.witness.calculator.WitnessError", BadInput),
    ("pipeline.engine.engine.EngineNotRunning", Unavailable),
    ("pipeline.engine.cpu_workers.G2WorkerDied", InternalError),
    ("pipeline.backends.cuda.errors.CudaError", InternalError),
])
def test_each_error_sits_on_its_branch(name, branch):
    module, cls = name.rsplit(".", 1)
    assert issubclass(getattr(importlib.import_module(module), cls), branch)


def test_builtin_errors_are_not_the_callers_fault():
    # A KeyError from a bug must be reported as ours, not as bad input.
    for exc in (KeyError("x"), ValueError("x"), TypeError("x"), OSError("x"), RuntimeError("x")):
        assert not is_callers_fault(exc)
        assert fault_code(exc) == "internal_error"
    assert fault_code(BadInput("x")) == "bad_input" and is_callers_fault(BadInput("x"))
    assert fault_code(Unavailable("x")) == "unavailable"
