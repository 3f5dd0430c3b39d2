"""The ``zkpipe`` command: prove, fullprove, verify, export-vk, inspect, demo, serve, submit, ...

Exit codes (``pipeline.errors.ExitCode``): 0 success (or a valid proof), 1 an invalid proof (or a
job that failed on the server ``prove --server`` or ``submit`` used), 2 bad input or usage (a
backend that cannot run included), 3 an internal error.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

# numpy's OpenBLAS starts a thread per core when numpy is imported; no command here does float linear
# algebra, and on the 16-core GPU host `import numpy` took 267 ms of a 0.70 s warm `zkpipe prove`
# (bench/NOTES.md, session 11). One thread unless the caller chose otherwise (the library is untouched).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# No logging or pathlib up here (~6 ms of imports): `prove --server` needs neither; the commands
# that do import them where they use them.
from .oneshot.timeline import Timeline  # first: its clock marks where zkpipe's own code starts
from .errors import BadInput, ExitCode, InternalError, Unavailable, ZkpipeError

EXIT_OK, EXIT_INVALID, EXIT_BAD_INPUT = ExitCode.OK, ExitCode.INVALID, ExitCode.BAD_INPUT
EXAMPLES_DIR = os.path.join(os.path.dirname(__file__), "examples")


def _read_inputs(key_path: str, wtns_path: str | None = None):
    from .formats.wtns import read_wtns
    from .formats.zkey import read_zkey

    zkey = read_zkey(key_path)
    witness = read_wtns(wtns_path) if wtns_path else None
    return zkey, witness


def _quiet_backend_log() -> None:
    """The prove commands print the backend chosen and why themselves: not the log line too."""
    import logging

    logging.getLogger("zkpipe.backends").setLevel(logging.ERROR)


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
    _quiet_backend_log()
    backend = create_backend(backend_name, options=cuda_options)
    t1 = time.perf_counter()
    key = backend.load_key(zkey)
    resident_ms = (time.perf_counter() - t1) * 1e3
    proof = prove(backend, key, zkey, witness)
    timings = {"read_ms": load_ms, "load_key_ms": resident_ms, **proof.timings_ms}
    return zkey, proof, backend, timings


# -- prove, fullprove (pipeline/oneshot) ----------------------------------------------------------
def _output_paths(args, parser_error) -> tuple[str, str]:
    """PROOF and PUBLIC given in snarkjs's positional order, or as --proof/--public (not both)."""
    out = []
    for positional, flag, default in ((args.proof_out, args.proof, "proof.json"),
                                      (args.public_out, args.public, "public.json")):
        if positional and flag and positional != flag:
            parser_error(f"{positional!r} and --{default.split('.')[0]} {flag!r}: give the file once")
        out.append(positional or flag or default)
    return out[0], out[1]


def _finish_local(args, result, timeline: Timeline, proof_path: str, public_path: str) -> int:
    from .formats.snarkjs_json import write_proof, write_public

    with timeline.step("write proof and public signals"):
        write_proof(proof_path, result.proof)
        write_public(public_path, result.proof.public_signals)
    kernels = ", ".join(f"{u} {o}" for u, o in result.kernel_origins.items())
    summary = " ".join(f"{k}={v:.1f}" for k, v in result.proof.timings_ms.items())
    print(f"proved {result.zkey.curve.name} key with {result.zkey.n_vars} signals on {result.backend_name}"
          f"{f' (kernels: {kernels})' if kernels else ''}: {summary}", file=sys.stderr)
    if args.timings:
        print(timeline.report(f"zkpipe {args.command}"), file=sys.stderr)
    return EXIT_OK


def cmd_prove(args) -> int:
    timeline = Timeline()
    proof_path, public_path = _output_paths(args, args.parser_error)
    if args.server:
        return _prove_on_server(args, timeline, proof_path, public_path)
    with timeline.step("import the prove path"):
        from .oneshot.local import DeviceSetup, prove_local, wtns_file
    _quiet_backend_log()
    device = DeviceSetup(args.backend, timeline)  # first: the driver and context take the longest
    result = prove_local(args.key, wtns_file(args.witness), device, timeline)
    return _finish_local(args, result, timeline, proof_path, public_path)


def _prove_on_server(args, timeline: Timeline, proof_path: str, public_path: str) -> int:
    with timeline.step("import the HTTP client"):
        from .oneshot.remote import prove_remote, server_report, write_json

    proof, public, job = prove_remote(args.server, args.key, args.witness, args.token, timeline)
    with timeline.step("write proof and public signals"):
        write_json(proof_path, proof)
        write_json(public_path, public)
    print(f"proved by the server at {args.server} (job {job['job_id']})", file=sys.stderr)
    if args.timings:
        print(timeline.report(f"zkpipe {args.command} --server"), file=sys.stderr)
        print(server_report(job), file=sys.stderr)
    return EXIT_OK


def cmd_fullprove(args) -> int:
    timeline = Timeline()
    proof_path, public_path = _output_paths(args, args.parser_error)
    with timeline.step("import the prove path"):
        from .oneshot.local import DeviceSetup, circuit_inputs, prove_local
    _quiet_backend_log()
    device = DeviceSetup(args.backend, timeline)
    result = prove_local(args.key, circuit_inputs(args.input, args.wasm), device, timeline)
    return _finish_local(args, result, timeline, proof_path, public_path)


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
    from .formats.zkey import read_zkey_verification_key

    write_verification_key(args.out, read_zkey_verification_key(args.key))  # sections 1-3 only
    return EXIT_OK


def cmd_inspect(args) -> int:
    import orjson

    from .formats.inspect import inspect_file

    sys.stdout.write(orjson.dumps(inspect_file(args.file), option=orjson.OPT_INDENT_2).decode() + "\n")
    return EXIT_OK


def cmd_demo(args) -> int:
    """Prove and verify the bundled example circuit on each curve, printing the timings."""
    from .backends import describe_backend
    from .formats.types import VerificationKey
    from .groth16.verifier import verify

    curves = ["bn128", "bls12381"] if args.curve == "all" else [args.curve]
    status = EXIT_OK
    for curve in curves:
        folder = os.path.join(EXAMPLES_DIR, f"chain_{curve}")
        zkey, proof, backend, timings = _prove_files(os.path.join(folder, "circuit.zkey"),
                                                     os.path.join(folder, "witness.wtns"), args.backend)
        t0 = time.perf_counter()
        verdict = verify(VerificationKey.from_zkey(zkey), proof.public_signals, proof.pi_a, proof.pi_b, proof.pi_c)
        timings["verify_ms"] = (time.perf_counter() - t0) * 1e3
        print(f"{curve:9s} {zkey.n_vars} signals, domain 2^{zkey.log_domain_size}, backend {describe_backend(backend)}: "
              f"proof {'VALID' if verdict else 'INVALID: ' + verdict.reason}")
        for name, ms in timings.items():
            print(f"    {name:14s} {ms:10.1f} ms")
        if not verdict:
            status = EXIT_INVALID
    return status


BACKEND_HELP = "cpu, cuda, or auto (cuda where a GPU answers, else cpu; the choice and why are printed)"


def _add_prove_parsers(sub) -> None:
    backends = ["cpu", "cuda", "auto"]
    p = sub.add_parser("prove", help="prove a witness with a snarkjs Groth16 zkey (snarkjs/rapidsnark order)",
                       description="zkpipe prove KEY WTNS [PROOF PUBLIC]: the argument order of "
                                   "`snarkjs groth16 prove` and rapidsnark's prover.")
    p.add_argument("key", metavar="KEY", help="proving key (.zkey)")
    p.add_argument("witness", metavar="WTNS", help="witness (.wtns)")
    p.add_argument("--server", metavar="URL", default=os.environ.get("ZKPIPE_SERVER") or None,
                   help="send the job to a running `zkpipe serve` at URL (it must serve KEY, found by its "
                   "fingerprint) and write the same files (default $ZKPIPE_SERVER; unset: prove here)")
    p.add_argument("--token", default=os.environ.get("ZKPIPE_AUTH_TOKEN", ""),
                   help="bearer token for --server (default $ZKPIPE_AUTH_TOKEN)")
    p.set_defaults(func=cmd_prove)
    q = sub.add_parser("fullprove", help="circuit inputs -> witness (circom wasm) -> proof (snarkjs order)",
                       description="zkpipe fullprove INPUT.json CIRCUIT.wasm KEY.zkey [PROOF PUBLIC]: the "
                                   "argument order of `snarkjs groth16 fullprove`.")
    q.add_argument("input", metavar="INPUT", help="circuit inputs (.json)")
    q.add_argument("wasm", metavar="WASM", help="the circuit's witness calculator (circom's .wasm)")
    q.add_argument("key", metavar="KEY", help="proving key (.zkey)")
    q.set_defaults(func=cmd_fullprove)
    for parser in (p, q):
        parser.add_argument("proof_out", nargs="?", metavar="PROOF", help="proof to write (default proof.json)")
        parser.add_argument("public_out", nargs="?", metavar="PUBLIC",
                            help="public signals to write (default public.json)")
        parser.add_argument("--proof", help="the same as PROOF")
        parser.add_argument("--public", help="the same as PUBLIC")
        parser.add_argument("--backend", default="auto", choices=backends, help=BACKEND_HELP)
        parser.add_argument("--timings", action="store_true",
                            help="print where the time went, from process start to exit")
        parser.set_defaults(parser_error=parser.error)


# Subcommands whose parsers live with their code: command -> (module, function adding its parser).
# Only the module of the command being run is imported, so `zkpipe prove` pays for no other
# command's imports (setup and synth-circuit bring numpy and the curves in to build theirs); help
# and usage errors import them all.
OTHER_COMMANDS = {
    "serve": ("pipeline.server.cli_commands", "add_server_commands"),
    "submit": ("pipeline.server.cli_commands", "add_server_commands"),
    "setup": ("pipeline.setup.command", "add_setup_command"),
    "synth-circuit": ("pipeline.synth.cli_command", "add_synth_commands"),
}
OWN_COMMANDS = ("prove", "fullprove", "verify", "export-vk", "inspect", "demo")


def _command_of(argv: list[str]) -> str | None:
    """The subcommand ``argv`` runs (its first word), None for none (``zkpipe --help``)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with every subcommand; with ``command`` (one of ours or of ``OTHER_COMMANDS``),
    only the other modules that command needs are imported."""
    from .server.cli_parser import new_parser

    parser, sub = new_parser()

    _add_prove_parsers(sub)

    p = sub.add_parser("verify", help="verify a snarkjs proof (exit 0 valid, 1 invalid, 2 bad input)")
    p.add_argument("vk", help="verification_key.json (snarkjs zkey export verificationkey, or export-vk)")
    p.add_argument("public", help="public.json: the public signals")
    p.add_argument("proof", help="proof.json")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("export-vk", help="write verification_key.json from a zkey")
    p.add_argument("key", help="the proving key (.zkey)")
    p.add_argument("out", help="where to write verification_key.json")
    p.set_defaults(func=cmd_export_vk)

    p = sub.add_parser("inspect", help="describe a zkey, wtns, r1cs or snarkjs JSON file")
    p.add_argument("file", help="a .zkey, .wtns, .r1cs, or snarkjs JSON (proof, public, verification key)")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("demo", help="prove and verify the bundled example circuit")
    p.add_argument("--curve", default="all", choices=["all", "bn128", "bls12381"], help="which example circuit")
    p.add_argument("--backend", default="auto", choices=["cpu", "cuda", "auto"], help=BACKEND_HELP)
    p.set_defaults(func=cmd_demo)

    if command in OWN_COMMANDS:
        registrars = []
    elif command in OTHER_COMMANDS:
        registrars = [OTHER_COMMANDS[command]]
    else:
        registrars = list(dict.fromkeys(OTHER_COMMANDS.values()))
    for module, function in registrars:
        getattr(importlib.import_module(module), function)(sub)
    return parser


# One-shot commands whose process ends with the command: once their files are written and closed,
# the process leaves without the interpreter's and the CUDA driver's teardown, ~190 ms of a one-shot
# proof's wall time on the H200 host (wall time minus the --timings total, same runs).
EXIT_AT_ONCE = ("prove", "fullprove")


def _exit_at_once(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    logging = sys.modules.get("logging")  # only a process that imported it has log handlers to flush
    if logging is not None:
        logging.shutdown()
    os._exit(int(code))


def main(argv: list[str] | None = None) -> int:
    """The command line; called with ``argv`` (tests, embedding) it returns the exit code. As the
    process's own entry point (``argv`` None) a one-shot proof ends the process when it is done."""
    from . import progress

    own_process = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command_of(argv)).parse_args(argv)
    if args.command != "serve":  # the service logs; commands draw bars where a terminal watches
        progress.enable()
    try:
        code = args.func(args)
        if own_process and args.command in EXIT_AT_ONCE:
            _exit_at_once(code)
        return code
    except (BadInput, Unavailable) as exc:
        print(f"zkpipe: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except InternalError as exc:
        print(f"zkpipe: internal error: {exc}", file=sys.stderr)
        return ExitCode.INTERNAL
    except ZkpipeError as exc:  # what remains of the tree: a job that failed on the server (prove --server)
        print(f"zkpipe: error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except OSError as exc:
        print(f"zkpipe: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
