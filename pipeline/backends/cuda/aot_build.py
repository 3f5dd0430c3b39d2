"""Ahead-of-time kernel build: every unit of every curve, for each supported GPU generation,
written as cubins plus a manifest that ``kernel_binaries`` loads at run time without a compiler.

The wheel build runs it (``setup.py``'s build_py, on the package as it will be shipped), so an
installed wheel proves on its first run with no NVRTC compile. In a checkout,
``python -m pipeline.backends.cuda.aot_build --inplace`` does the same for development.

    python -m pipeline.backends.cuda.aot_build (--out DIR | --inplace) [--arch sm_80,sm_90] [--cache DIR]

Architectures: ``SUPPORTED_ARCHS`` unless ``--arch`` or ``ZKPIPE_KERNEL_ARCHS`` (comma list;
``none`` builds nothing) says otherwise. Compiles go through the NVRTC disk cache
(``ZKPIPE_KERNEL_CACHE`` or ``--cache``), so a second wheel build is quick.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

from ...curves import CURVES
from .kernel_binaries import MANIFEST_FORMAT, MANIFEST_NAME, PREBUILT_DIR, binary_name
from .kernel_sources import DEFAULT_OPTIONS, source_digest

# One cubin per major generation covers every GPU of it (a cubin for X.0 runs on X.y):
#   sm_80   Ampere and Ada: A100, A10/A30/A40, RTX 30xx, L4, L40S, RTX 40xx (8.0-8.9)
#   sm_90   Hopper: H100, H200 (the project's measured target)
#   sm_100  Blackwell data-centre: B200, GB200, B300 (10.x)
#   sm_120  Blackwell workstation: RTX 50xx, RTX PRO 6000 (12.x)
# Turing (sm_75, T4) and anything newer still work through run-time NVRTC; CUDA 13 compiles
# nothing older than sm_75.
SUPPORTED_ARCHS = ("sm_80", "sm_90", "sm_100", "sm_120")
ARCHS_ENV = "ZKPIPE_KERNEL_ARCHS"


def archs_from(text: str | None) -> tuple[str, ...]:
    """``"sm_80,sm_90"`` -> the tuple; None or empty -> ``SUPPORTED_ARCHS``; "none" -> none. The
    wheel build (setup.py) passes ``$ZKPIPE_KERNEL_ARCHS`` as ``--arch``: no module under
    pipeline/backends reads the environment (CudaOptions carries run-time settings)."""
    if text is None or not text.strip():
        return SUPPORTED_ARCHS
    if text.strip().lower() == "none":
        return ()
    return tuple(a.strip() for a in text.split(",") if a.strip())


def build_prebuilt(out_dir: Path, archs: tuple[str, ...], curves=CURVES, cache_dir: Path | None = None,
                   parallel: bool = True) -> dict:
    """Compile (or take from the NVRTC cache) every unit of ``curves`` for each of ``archs`` and
    write ``out_dir`` afresh: the cubins and the manifest. Returns the manifest."""
    from .kernels import UNITS, compile_jobs, unit_headers
    from .nvrtc_build import nvrtc_version

    jobs = {(c.name, u, a): (u, UNITS[u], unit_headers(c), a) for a in archs for c in curves for u in UNITS}
    t0 = time.perf_counter()
    built = compile_jobs(jobs, cache_dir, parallel)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    entries = []
    for (curve_name, unit, arch), b in built.items():
        name = binary_name(curve_name, unit, arch)
        (out_dir / name).write_bytes(b.cubin)
        headers = jobs[(curve_name, unit, arch)][2]
        entries.append({"curve": curve_name, "unit": unit, "arch": arch, "file": name,
                        "source_sha256": source_digest(unit, headers, DEFAULT_OPTIONS, UNITS[unit]),
                        "cubin_sha256": hashlib.sha256(b.cubin).hexdigest(), "lowered": b.lowered,
                        "compile_s": round(b.compile_s, 2)})
    manifest = {"format": MANIFEST_FORMAT, "nvrtc_version": list(nvrtc_version()), "options": list(DEFAULT_OPTIONS),
                "archs": list(archs), "build_s": round(time.perf_counter() - t0, 2), "binaries": entries}
    (out_dir / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.backends.cuda.aot_build", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="folder to write (replaced)")
    where.add_argument("--inplace", action="store_true", help=f"write {PREBUILT_DIR} (a checkout's own)")
    parser.add_argument("--arch", help=f"comma list (default {','.join(SUPPORTED_ARCHS)}; setup.py passes ${ARCHS_ENV})")
    parser.add_argument("--cache", type=Path, help="NVRTC disk cache (default $ZKPIPE_KERNEL_CACHE or ~/.cache)")
    parser.add_argument("--serial", action="store_true", help="compile in this process, one unit at a time")
    args = parser.parse_args(argv)
    archs = archs_from(args.arch)
    out = PREBUILT_DIR if args.inplace else args.out
    if not archs:
        print(f"aot_build: no architectures asked for ({ARCHS_ENV}=none): nothing built", file=sys.stderr)
        return 0
    manifest = build_prebuilt(out, archs, cache_dir=args.cache, parallel=not args.serial)
    compiled = sum(1 for e in manifest["binaries"] if e["compile_s"] > 0)
    print(f"aot_build: {len(manifest['binaries'])} kernel binaries for {', '.join(archs)} in {out} "
          f"({compiled} compiled, the rest from the NVRTC cache; {manifest['build_s']} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
