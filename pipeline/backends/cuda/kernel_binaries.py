"""Kernels compiled ahead of time and shipped with the package: find the one that fits a GPU.

``prebuilt/`` beside this file holds one cubin per (curve, unit, architecture) and a
``manifest.json`` that records, for each, the digest of the sources it was built from
(``kernel_sources.source_digest``), its own sha256 and its kernels' lowered names. The wheel
build writes them (``aot_build``); a checkout has none unless ``python -m
pipeline.backends.cuda.aot_build --inplace`` made them.

A binary is used only if its digest equals the digest of the sources installed beside it, so an
edited kernel never runs stale code. Nothing here loads NVRTC or the driver: reading a
prebuilt unit is a file read.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from .kernel_sources import CUDA_SRC, DEFAULT_OPTIONS, source_digest
from .nvrtc_build import BuiltUnit

PREBUILT_DIR = Path(__file__).resolve().parent / "prebuilt"
MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1


def binary_name(curve_name: str, unit: str, arch: str) -> str:
    return f"{curve_name}-{unit}-{arch}.cubin"


def arch_number(arch: str) -> tuple[int, int]:
    """"sm_90" -> (9, 0); "sm_120" -> (12, 0)."""
    digits = arch.removeprefix("sm_").removeprefix("compute_").rstrip("abf")
    return int(digits[:-1]), int(digits[-1])


def runs_on(binary_arch: str, device_arch: str) -> bool:
    """A cubin for X.y runs on a GPU of X.z with z >= y (CUDA's binary compatibility); never
    across major versions, which is what run-time NVRTC is for."""
    (bmaj, bmin), (dmaj, dmin) = arch_number(binary_arch), arch_number(device_arch)
    return bmaj == dmaj and bmin <= dmin


@functools.lru_cache(maxsize=8)
def _read_manifest(directory: Path, mtime_ns: int) -> dict:
    return json.loads((directory / MANIFEST_NAME).read_text())


def read_manifest(directory: Path = PREBUILT_DIR) -> dict | None:
    """The manifest of ``directory``, or None where there is none (a checkout, say)."""
    try:
        mtime_ns = (directory / MANIFEST_NAME).stat().st_mtime_ns
    except OSError:
        return None
    manifest = _read_manifest(directory, mtime_ns)
    return manifest if manifest.get("format") == MANIFEST_FORMAT else None


def pick_entry(manifest: dict, curve_name: str, unit: str, device_arch: str) -> dict | None:
    """The manifest entry to load on ``device_arch``: its own architecture if shipped, else the
    newest compatible one of the same major version."""
    fitting = [e for e in manifest["binaries"]
               if e["curve"] == curve_name and e["unit"] == unit and runs_on(e["arch"], device_arch)]
    return max(fitting, key=lambda e: arch_number(e["arch"]), default=None)


def find_prebuilt(curve_name: str, unit: str, headers: dict[str, str], name_expressions: tuple[str, ...],
                  device_arch: str, options: tuple[str, ...] = DEFAULT_OPTIONS, directory: Path = PREBUILT_DIR,
                  sources: Path = CUDA_SRC) -> BuiltUnit | None:
    """The shipped binary of one unit for ``device_arch``, or None: none shipped for that
    architecture, built from other sources or kernels, or its file damaged."""
    manifest = read_manifest(directory)
    if manifest is None:
        return None
    entry = pick_entry(manifest, curve_name, unit, device_arch)
    if entry is None or entry["source_sha256"] != source_digest(unit, headers, options, name_expressions, sources):
        return None
    try:
        cubin = (directory / entry["file"]).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(cubin).hexdigest() != entry["cubin_sha256"]:
        return None
    return BuiltUnit(unit, entry["arch"], cubin, dict(entry["lowered"]), 0.0, True, "", "prebuilt")
