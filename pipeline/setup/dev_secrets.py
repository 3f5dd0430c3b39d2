"""The five secrets of a development Groth16 key: tau, alpha, beta, gamma, delta.

Whoever knows them can forge proofs for the key's circuit. A development key is made by one
party that draws them and could keep them (no ceremony), so it is for development and
benchmarks only: ``DEV_WARNING`` says so wherever one is made.

Conditions: alpha, beta, gamma, delta nonzero; tau outside the 2n-point domain (tau^(2n) != 1),
because the key's Lagrange values divide by tau - w^k for every 2n-th root of unity w^k (the
n-point domain's roots are among them).
"""
from __future__ import annotations

import random
import secrets as system_random
from dataclasses import dataclass

from ..curves import Curve
from ..errors import BadInput

DEV_WARNING = (
    "WARNING: development key. zkpipe drew its secrets (tau, alpha, beta, gamma, delta) itself, with no "
    "ceremony: anyone who learns them can forge proofs. Use it for development and benchmarks only, "
    "NEVER in production.")


class BadSecrets(BadInput):
    """Secrets that would not make a key (a zero, or tau on the evaluation domain)."""


@dataclass(frozen=True)
class DevSecrets:
    tau: int
    alpha: int
    beta: int
    gamma: int
    delta: int

    def __repr__(self) -> str:  # keep them out of logs and tracebacks
        return "DevSecrets(<hidden>)"

    @classmethod
    def draw(cls, curve: Curve, domain_size: int, seed: int | None = None) -> "DevSecrets":
        """Uniform secrets from the system's CSPRNG, or from ``seed`` (reproducible keys for tests
        and benchmarks: such a key's secrets are as public as the seed)."""
        r = curve.fr.modulus
        source = random.Random(seed) if seed is not None else None
        while True:
            values = [(source.randrange(r) if source else system_random.randbelow(r)) for _ in range(5)]
            candidate = cls(*values)
            try:
                candidate.check(curve, domain_size)
            except BadSecrets:
                continue  # probability ~ 2n / r: never in practice, but a drawn key must be valid
            return candidate

    def check(self, curve: Curve, domain_size: int) -> None:
        r = curve.fr.modulus
        for name in ("tau", "alpha", "beta", "gamma", "delta"):
            value = getattr(self, name)
            if not 0 < value < r:
                raise BadSecrets(f"{name} must lie in [1, r) of {curve.name}")
        if pow(self.tau, 2 * domain_size, r) == 1:
            raise BadSecrets(f"tau is a {2 * domain_size}-th root of unity: the Lagrange basis at tau is undefined")
