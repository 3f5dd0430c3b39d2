"""The ``zkpipe`` command: prove, verify, export-vk, inspect, demo, serve, submit.

Exit codes: 0 success (or a valid proof), 1 an invalid proof, 2 bad input or usage.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .errors import BadInput, ExitCode, InternalError, Unavailable

EXIT_OK, EXIT_INVALID, EXIT_BAD_INPUT = ExitCode.OK, ExitCode.INVALID, ExitCode.BAD_INPUT
EXAMPLES_DIR = Path(__file__).parent / "examples"


def _read_inputs(key_path: str, wtns_path: str | None = None):
    from .formats.wtns import read_wtns
    from .formats.zkey import read_zkey

    zkey = read_zkey(key_path)
    witness = read_wtns(wtns_path) if wtns_path else None
    return zkey, witness


def _prove_files(key_path: str, wtns_path: str, backend_name: str):
    from .backends import create_backend
    from .config import ConfigError, cuda_options_from_env
    from .groth16 import check_witness, prove

    t0 = time.perf_counter()
    zkey, witness = _read_inputs(key_path, wtns_path)
    check_witness(zkey, witness)
    load_ms = (time.perf_counter() - t0) * 1e3
    try:
        cuda_options = cuda_options_from_env()
    except ConfigError as exc:
        raise BadInput(str(exc)) from exc
    backend = create_backend(backend_name, options=cuda_options)
    t1 = time.perf_counter()
    key = backend.load_key(zkey)
    resident_ms = (time.perf_counter() - t1) * 1e3
    proof = prove(backend, key, zkey, witness)
    timings = {"read_ms": load_ms, "load_key_ms": resident_ms, **proof.timings_ms}
    return zkey, proof, backend, timings


def cmd_prove(args) -> int:
    from .formats.snarkjs_json import write_proof, write_public

    zkey, proof, backend, timings = _prove_files(args.key, args.witness, args.backend)
    write_proof(args.proof, proof)
    write_public(args.public, proof.public_signals)
    summary = " ".join(f"{k}={v:.1f}" for k, v in timings.items())
    print(f"proved {zkey.curve.name} key with {zkey.n_vars} signals on {backend.name}: {summary}", file=sys.stderr)
    return EXIT_OK


def cmd_verify(args) -> int:
    from .formats.snarkjs_json import read_proof, read_public, read_verification_key
    from .groth16.verifier import verify

    vk = read_verification_key(args.vk)
    public = read_public(args.public, vk.curve)
    pi_a, pi_b, pi_c = read_proof(args.proof, vk.curve)
    verdict = verify(vk, public, pi_a, pi_b, pi_c)
    if verdict:
        print("OK: proof is valid")
        return EXIT_OK
    print(f"INVALID: {verdict.reason}")
    return EXIT_INVALID


def cmd_export_vk(args) -> int:
    from .formats.snarkjs_json import write_verification_key
    from .formats.types import VerificationKey

    zkey, _ = _read_inputs(args.key)
    write_verification_key(args.out, VerificationKey.from_zkey(zkey))
    return EXIT_OK


def cmd_inspect(args) -> int:
    import orjson

    from .formats.inspect import inspect_file

    sys.stdout.write(orjson.dumps(inspect_file(args.file), option=orjson.OPT_INDENT_2).decode() + "\n")
    return EXIT_OK


def cmd_demo(args) -> int:
    """Prove and verify the bundled example circuit on each curve, printing the timings."""
    from .groth16.verifier import verify
    from .formats.types import VerificationKey

    curves = ["bn128", "bls12381"] if args.curve == "all" else [args.curve]
    status = EXIT_OK
    for curve in curves:
        folder = EXAMPLES_DIR / f"chain_{curve}"
        zkey, proof, backend, timings = _prove_files(str(folder / "circuit.zkey"), str(folder / "witness.wtns"),
                                                     args.backend)
        t0 = time.perf_counter()
        verdict = verify(VerificationKey.from_zkey(zkey), proof.public_signals, proof.pi_a, proof.pi_b, proof.pi_c)
        timings["verify_ms"] = (time.perf_counter() - t0) * 1e3
        print(f"{curve:9s} {zkey.n_vars} signals, domain 2^{zkey.log_domain_size}, backend {backend.name}: "
              f"proof {'VALID' if verdict else 'INVALID: ' + verdict.reason}")
        for name, ms in timings.items():
            print(f"    {name:14s} {ms:10.1f} ms")
        if not verdict:
            status = EXIT_INVALID
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zkpipe", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("prove", help="prove a witness with a snarkjs Groth16 zkey")
    p.add_argument("key")
    p.add_argument("witness")
    p.add_argument("--proof", default="proof.json")
    p.add_argument("--public", default="public.json")
    p.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"])
    p.set_defaults(func=cmd_prove)

    p = sub.add_parser("verify", help="verify a snarkjs proof (exit 0 valid, 1 invalid, 2 bad input)")
    p.add_argument("vk")
    p.add_argument("public")
    p.add_argument("proof")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("export-vk", help="write verification_key.json from a zkey")
    p.add_argument("key")
    p.add_argument("out")
    p.set_defaults(func=cmd_export_vk)

    p = sub.add_parser("inspect", help="describe a zkey, wtns, r1cs or snarkjs JSON file")
    p.add_argument("file")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("demo", help="prove and verify the bundled example circuit")
    p.add_argument("--curve", default="all", choices=["all", "bn128", "bls12381"])
    p.add_argument("--backend", default="auto", choices=["cpu", "cuda", "auto"])
    p.set_defaults(func=cmd_demo)

    from .server.cli_commands import add_server_commands

    add_server_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (BadInput, Unavailable) as exc:
        print(f"zkpipe: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except InternalError as exc:
        print(f"zkpipe: internal error: {exc}", file=sys.stderr)
        return ExitCode.INTERNAL
    except OSError as exc:
        print(f"zkpipe: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
