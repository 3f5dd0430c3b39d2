"""The proving engine: jobs of partitions through synthesize -> prep_msm -> gpu -> epilogue.

The names below load on first use (PEP 562), so that importing one light module of the package
(``pipeline.engine.config``, which ``zkpipe prove`` reads the CUDA settings through) does not
import the whole engine, asyncio included.
"""
from __future__ import annotations

from importlib import import_module

_EXPORTS = {
    "BudgetTooSmall": ".budgets", "ByteBudget": ".budgets", "EngineConfig": ".config",
    "Engine": ".engine", "EngineNotRunning": ".engine", "IdempotencyConflict": ".engine",
    "Job": ".jobs", "JobCancelled": ".jobs", "JobEvent": ".jobs", "JobFailed": ".jobs", "JobState": ".jobs",
    "PartitionProof": ".jobs", "Priority": ".jobs",
    "KeyInUse": ".keystore", "KeyLoadError": ".keystore", "UnknownKey": ".keystore",
    "Interval": ".metrics", "MissingCircuit": ".stages", "WitnessUnsatisfied": ".stages",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
