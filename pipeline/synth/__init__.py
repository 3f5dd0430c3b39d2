"""Seed-shaped synthetic circuits (see ``circuit`` for the API)."""
from .circuit import CircuitShape, circuit_stats, generate_circuit, plan_rows

__all__ = ["CircuitShape", "circuit_stats", "generate_circuit", "plan_rows"]
