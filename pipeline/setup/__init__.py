"""Development Groth16 setup: a proving key for a circuit from secrets zkpipe draws itself.

Layering: above ``backends`` and ``formats`` (it uses the CUDA kernels' build and memory helpers,
and produces a ``formats.types.Groth16Zkey``), beside ``groth16``; only ``cli`` and the
benchmarks import it. See docs/dev_setup.md for what each point of the key holds.

    circuit = from_r1cs(read_r1cs("circuit.r1cs"))
    secrets = DevSecrets.draw(circuit.curve, circuit.domain_size)
    zkey = dev_setup_cpu(circuit, secrets)                    # small circuits
    key = GpuDevSetup(backend).run(circuit, secrets)          # pipeline.setup.gpu: any size
"""
from .circuit import CircuitMatrices, SparseMatrix, domain_size_for, from_r1cs
from .cpu import dev_setup_cpu
from .dev_secrets import DEV_WARNING, BadSecrets, DevSecrets

__all__ = ["BadSecrets", "CircuitMatrices", "DEV_WARNING", "DevSecrets", "SparseMatrix", "dev_setup_cpu",
           "domain_size_for", "from_r1cs"]
