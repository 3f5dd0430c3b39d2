"""Development Groth16 setup: a proving key for a circuit from secrets zkpipe draws itself.

Layering: above ``backends`` and ``formats`` (it uses the CUDA kernels' build and memory helpers,
and produces a ``formats.types.Groth16Zkey``), beside ``groth16``; only ``cli`` and the
benchmarks import it. See docs/dev_setup.md for what each point of the key holds.

    r1cs = read_circuit("circuit.r1cs")       # or pipeline.synth.generate_circuit(...): a CompactR1cs
    secrets = DevSecrets.draw(r1cs.curve, r1cs.domain_size)
    zkey = dev_setup_cpu(r1cs, secrets)                       # small circuits
    key = GpuDevSetup(backend).run(r1cs, secrets)             # pipeline.setup.gpu: any size
"""
from .circuit import read_circuit
from .cpu import dev_setup_cpu
from .dev_secrets import DEV_WARNING, BadSecrets, DevSecrets

__all__ = ["BadSecrets", "DEV_WARNING", "DevSecrets", "dev_setup_cpu", "read_circuit"]
