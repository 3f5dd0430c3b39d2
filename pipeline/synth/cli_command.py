"""``zkpipe synth-circuit``: write a seed-shaped circuit.r1cs, a witness.wtns that satisfies it,
and synth.json (the shape asked for and the shape measured). ``add_synth_commands(subparsers)``
adds it to the CLI. Free disk space is checked before anything is generated.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import asdict, fields
from pathlib import Path

from ..errors import ExitCode, InternalError, Unavailable
from ..formats.binfile import FILE_HEADER, SECTION_HEADER

FLAGS = {  # CLI flag -> CircuitShape field
    "bits": "bit_fraction", "ones": "one_fraction", "select": "select_fraction", "pack": "pack_fraction",
    "pack_bits": "pack_bits", "mul_terms": "mul_terms", "mul_depth": "mul_depth",
    "round_constants": "round_constants", "window": "operand_window",
}
DISK_MARGIN_BYTES = 64 << 20


def add_synth_commands(subparsers) -> None:
    from .circuit import CircuitShape

    defaults = {f.name: f.default for f in fields(CircuitShape)}
    p = subparsers.add_parser("synth-circuit", help="write a PoRep-shaped circuit.r1cs and a witness.wtns that "
                                                    "satisfies it (see docs/synth_circuits.md)")
    p.add_argument("--log-constraints", type=int, required=True, metavar="K",
                   help="the Groth16 domain is 2^K: 2^K - public - 1 constraints (K in 10..28)")
    p.add_argument("--public", type=int, default=1, help="public inputs (default 1)")
    p.add_argument("--curve", default="bls12381", choices=["bn128", "bls12381"], help="the circuit's curve")
    p.add_argument("--seed", type=int, default=0, help="seed of the random circuit and witness (same seed, same files)")
    p.add_argument("--out", required=True, help="folder for circuit.r1cs, witness.wtns, synth.json")
    p.add_argument("--check", action="store_true", help="check that the witness satisfies every constraint")
    help_of = {"bits": "fraction of wires that are bits", "ones": "fraction of bits equal to 1",
               "select": "fraction of bits made by select gates", "pack": "fraction of full-width wires made "
               "by packing bits", "pack_bits": "bits per packing (default: r's bit length - 1)",
               "mul_terms": "wires in A and in B of a multiplication gate", "mul_depth": "layers of "
               "multiplication gates", "round_constants": "distinct full-width constants in multiplication "
               "gates", "window": "operands lie within this many places of their row"}
    for flag, name in FLAGS.items():
        kind = float if isinstance(defaults[name], float) else int
        p.add_argument("--" + flag.replace("_", "-"), dest=flag, type=kind, default=None,
                       help=f"{help_of[flag]} (default {defaults[name]})")
    p.set_defaults(func=cmd_synth_circuit)


def cmd_synth_circuit(args) -> int:
    from ..curves import curve_by_name
    from ..formats.r1cs_writer import r1cs_file_bytes, write_r1cs
    from ..formats.wtns import write_wtns
    from .check import first_unsatisfied
    from .circuit import (CircuitShape, circuit_stats, estimated_peak_bytes, generate_circuit, plan_rows,
                          planned_terms)

    curve = curve_by_name(args.curve)
    shape = CircuitShape(**{name: getattr(args, flag) for flag, name in FLAGS.items()
                            if getattr(args, flag) is not None})
    plan = plan_rows(args.log_constraints, args.public, curve, shape)
    out = Path(args.out)
    n8, n_wires = curve.fr.n_bytes, plan.n_constraints + 1
    need = {"circuit.r1cs": r1cs_file_bytes(n8, plan.n_constraints, sum(planned_terms(plan, shape)), n_wires),
            "witness.wtns": wtns_file_bytes(n8, n_wires)}
    check_free_space(out, need)
    check_free_memory(estimated_peak_bytes(plan, shape, curve.fr.limbs))

    t0 = time.perf_counter()
    r1cs, witness = generate_circuit(args.log_constraints, args.public, curve, shape, seed=args.seed)
    timings = {"generate_s": time.perf_counter() - t0}
    if args.check:
        t0 = time.perf_counter()
        bad = first_unsatisfied(r1cs, witness)
        timings["check_s"] = time.perf_counter() - t0
        if bad is not None:
            raise InternalError(f"generated witness breaks constraint {bad}: a bug in pipeline.synth")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    write_r1cs(out / "circuit.r1cs", r1cs)
    write_wtns(out / "witness.wtns", curve, witness.values)
    timings["write_s"] = time.perf_counter() - t0
    stats = circuit_stats(r1cs, witness)
    summary = {"log_constraints": args.log_constraints, "curve": curve.name, "seed": args.seed,
               "shape": asdict(shape), "measured": stats, "timings": timings}
    (out / "synth.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {out}/circuit.r1cs, witness.wtns, synth.json: {curve.name}, {stats['constraints']} constraints "
          f"(domain 2^{args.log_constraints}), {stats['public']} public, terms per row A {stats['terms_a']:.2f} "
          f"B {stats['terms_b']:.2f} C {stats['terms_c']:.2f}, bits {stats['bit_fraction']:.3f}; "
          + " ".join(f"{k}={v:.1f}" for k, v in timings.items()), file=sys.stderr)
    return ExitCode.OK


def wtns_file_bytes(n8: int, n_wires: int) -> int:
    return FILE_HEADER.size + 2 * SECTION_HEADER.size + (4 + n8 + 4) + n8 * n_wires


def check_free_space(out: Path, need: dict[str, int]) -> None:
    """Raise ``Unavailable`` unless the file system of ``out`` has room for every file in ``need``."""
    probe = out
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    total = sum(need.values()) + DISK_MARGIN_BYTES
    if total > free:
        parts = ", ".join(f"{name} {size / 2**30:.2f} GiB" for name, size in need.items())
        raise Unavailable(f"synth-circuit: {out} has {free / 2**30:.2f} GiB free, the files need {total / 2**30:.2f} "
                    f"GiB ({parts}); pick another --out or generate in memory (pipeline.synth.generate_circuit)")


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where there is no such file)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_free_memory(need: int) -> None:
    available = available_memory_bytes()
    if available is not None and need > available:
        raise Unavailable(f"synth-circuit: generating needs about {need / 2**30:.1f} GiB of memory, {available / 2**30:.1f} "
                    f"GiB is available; pick a smaller --log-constraints or a larger host")
