"""``zkpipe setup --dev CIRCUIT.r1cs --out KEY.zkey``: a development proving key for a circuit.

``add_setup_command(subparsers)`` adds it to the CLI. Bad files and a missing GPU raise
``BadInput`` / ``Unavailable``, which the CLI turns into one line and exit code 2. The key's
secrets are drawn here and forgotten (or derived from --seed), and the warning says what that means.
"""
from __future__ import annotations

import sys
import time

from ..errors import ExitCode, Unavailable

CPU_PATH_LOG_LIMIT = 14  # above 2^14 constraints the Python path takes many minutes: say so


def add_setup_command(subparsers) -> None:
    p = subparsers.add_parser(
        "setup", help="make a Groth16 proving key for a circuit: --dev only (self-drawn secrets, never production)")
    p.add_argument("circuit", help="the circuit's .r1cs (circom, or zkpipe synth-circuit)")
    p.add_argument("--dev", action="store_true",
                   help="development key: zkpipe draws tau, alpha, beta, gamma, delta itself (no ceremony)")
    p.add_argument("--out", required=True, help="the .zkey to write (snarkjs format)")
    p.add_argument("--vk", help="also write verification_key.json here")
    p.add_argument("--backend", default="auto", choices=["cpu", "cuda", "auto"],
                   help="cuda: the GPU kernels (any size); cpu: Python, small circuits; auto: cuda if a GPU answers")
    p.add_argument("--seed", type=int, help="derive the secrets from this seed (reproducible keys for tests and "
                                             "benchmarks: anyone with the seed can forge proofs)")
    p.set_defaults(func=cmd_setup)


def cmd_setup(args) -> int:
    from ..formats.snarkjs_json import write_verification_key
    from ..formats.zkey_writer import write_zkey
    from .circuit import check_for_setup, log_domain_size, read_circuit
    from .dev_secrets import DEV_WARNING, DevSecrets

    if not args.dev:
        print("zkpipe setup: error: only development keys are made here: pass --dev (its secrets pass through "
              "this machine, so such a key is never for production)", file=sys.stderr)
        return ExitCode.BAD_INPUT
    print(DEV_WARNING, file=sys.stderr)
    t0 = time.perf_counter()
    r1cs = read_circuit(args.circuit)
    check_for_setup(r1cs, args.circuit)
    secrets = DevSecrets.draw(r1cs.curve, r1cs.domain_size, seed=args.seed)
    t1 = time.perf_counter()
    zkey, where, timings = _make_key(r1cs, secrets, args.backend, args.out)
    t2 = time.perf_counter()
    write_zkey(args.out, zkey)
    if args.vk:
        write_verification_key(args.vk, zkey.verification_key())
    t3 = time.perf_counter()
    print(f"wrote development key {args.out}: {r1cs.curve.name}, {r1cs.n_constraints} constraints, "
          f"{r1cs.n_wires} signals, {r1cs.n_public} public, domain 2^{log_domain_size(r1cs)}, on {where}; "
          f"read {t1 - t0:.2f} s, setup {t2 - t1:.2f} s, write {t3 - t2:.2f} s", file=sys.stderr)
    if timings:
        print("phases (ms): " + " ".join(f"{k}={v:.1f}" for k, v in timings.items()), file=sys.stderr)
    print(DEV_WARNING, file=sys.stderr)
    return ExitCode.OK


def _make_key(r1cs, secrets, backend_name: str, out: str):
    """(zkey, where it was made, phase timings in ms) on the chosen backend."""
    from .circuit import log_domain_size
    from .cpu import dev_setup_cpu

    if backend_name != "cpu":
        from ..backends import create_backend

        try:
            backend = create_backend(backend_name)
        except RuntimeError as exc:  # --backend cuda where no GPU answers
            raise Unavailable(str(exc)) from exc
        if backend.name == "cuda":
            from .gpu import GpuDevSetup

            setup = GpuDevSetup(backend)
            try:
                dev_key = setup.run(r1cs, secrets, path=out)
                dev_key.free()
                return dev_key.zkey, f"GPU {backend.device.name}", dev_key.timings_ms
            finally:
                setup.close()
                backend.close()
    if log_domain_size(r1cs) > CPU_PATH_LOG_LIMIT:
        print(f"zkpipe setup: note: the CPU path at 2^{log_domain_size(r1cs)} takes long; --backend cuda is the "
              f"fast one", file=sys.stderr)
    return dev_setup_cpu(r1cs, secrets, path=out), "CPU", {}
