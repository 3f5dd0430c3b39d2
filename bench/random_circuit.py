"""A key folder for the throughput benchmarks at sizes no committed fixture reaches:
circuit_final.zkey with random points and coefficients (write_random_zkey) and a random
witness.wtns of the matching length.

The proofs it gives do not verify (the witness satisfies nothing); what the benchmarks measure,
time per stage, does not depend on that: MSM and NTT cost is the same for any points and
scalars of the field.

    python3 -m bench.random_circuit CURVE LOG2_DOMAIN OUT_DIR     e.g. bls12381 20 /tmp/rand_2e20
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.common import CURVE_NAMES, arg_parser
from pipeline.curves import curve_by_name
from pipeline.formats.wtns import write_wtns
from pipeline.formats.zkey_writer import random_limbs, write_random_zkey


def write_random_circuit(out: Path, curve_name: str, log_domain: int, n_vars: int | None = None) -> int:
    """circuit_final.zkey and witness.wtns in ``out``; ``n_vars`` defaults to a circuit that fills
    its domain, as the large Filecoin circuits do. Returns n_vars."""
    curve = curve_by_name(curve_name)
    out.mkdir(parents=True, exist_ok=True)
    domain = 1 << log_domain
    n_vars = n_vars or domain - 2
    write_random_zkey(out / "circuit_final.zkey", curve, n_vars=n_vars, domain_size=domain, seed=log_domain)
    witness = random_limbs(np.random.default_rng(log_domain + 1), (n_vars, curve.fr.limbs), curve.fr.modulus)
    witness[0] = 0
    witness[0, 0] = 1  # signal 0 is the constant one in every circom witness
    write_wtns(out / "witness.wtns", curve, witness)
    return n_vars


def main(curve_name: str, log_domain: int, out_dir: str) -> None:
    n_vars = write_random_circuit(Path(out_dir), curve_name, log_domain)
    print(f"wrote {out_dir}/circuit_final.zkey and witness.wtns: {curve_name}, domain 2^{log_domain}, {n_vars} signals")


if __name__ == "__main__":
    parser = arg_parser(__doc__)
    parser.add_argument("curve", choices=CURVE_NAMES)
    parser.add_argument("log_domain", type=int, metavar="LOG2_DOMAIN")
    parser.add_argument("out_dir", metavar="OUT_DIR")
    a = parser.parse_args()
    main(a.curve, a.log_domain, a.out_dir)
