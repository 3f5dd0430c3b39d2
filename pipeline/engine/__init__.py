"""The proving engine: jobs of partitions through synthesize -> prep_msm -> gpu -> epilogue."""
from .budgets import BudgetTooSmall, ByteBudget
from .config import EngineConfig
from .engine import Engine, EngineNotRunning, IdempotencyConflict
from .jobs import Job, JobCancelled, JobEvent, JobFailed, JobState, PartitionProof, Priority
from .keystore import KeyInUse, KeyLoadError, UnknownKey
from .metrics import Interval
from .stages import MissingCircuit, WitnessUnsatisfied

__all__ = ["BudgetTooSmall", "ByteBudget", "Engine", "EngineConfig", "EngineNotRunning", "IdempotencyConflict",
           "Interval", "Job", "JobCancelled", "JobEvent", "JobFailed", "JobState", "KeyInUse", "KeyLoadError",
           "MissingCircuit", "PartitionProof", "Priority", "UnknownKey", "WitnessUnsatisfied"]
