"""Run-time compilation of the kernel sources (``pipeline/cuda_src``) through NVRTC, cached on disk.

Used where no prebuilt binary fits (``kernel_binaries``: an unknown GPU, or a checkout without
them) and by the ahead-of-time build itself (``aot_build``).
A build unit is one ``cuda_src/programs/*.cu`` file plus the generated per-curve header
(``constants.curve_header``), compiled for one GPU architecture to a cubin. Kernels are
templates; the unit's name expressions ("ntt_pass<fr_t, false>") instantiate them and give
back their lowered (mangled) names. The cache key covers every file under cuda_src/, the
generated header, the options, the kernels, the architecture and NVRTC's version, so any change
rebuilds.
Compile errors raise ``CompileError`` with NVRTC's log.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ._bindings import nvrtc_module
from .errors import CompileError, check
from .kernel_sources import CUDA_SRC, DEFAULT_OPTIONS, tree_digest


@dataclass(frozen=True)
class BuiltUnit:
    unit: str
    arch: str
    cubin: bytes
    lowered: dict[str, str]  # name expression -> mangled kernel name
    compile_s: float  # 0.0 when it came from the cache
    from_cache: bool  # True for the disk cache and for prebuilt binaries: nothing was compiled
    log: str
    origin: str = "nvrtc"  # "nvrtc" (compiled now), "cache" (NVRTC disk cache) or "prebuilt" (shipped)


def default_cache_dir() -> Path:
    """Where kernels are cached when no folder is given (``CudaOptions.kernel_cache_dir`` unset)."""
    return Path.home() / ".cache" / "zkpipe" / "kernels"


def nvrtc_version() -> tuple[int, int]:
    major, minor = check(nvrtc_module().nvrtcVersion(), "nvrtcVersion")
    return int(major), int(minor)


def cache_key(unit: str, headers: dict[str, str], options: tuple[str, ...], arch: str,
              name_expressions: tuple[str, ...], root: Path | None = None) -> str:
    """The unit's inputs (as ``kernel_sources.source_digest`` hashes them, the source tree ``root``'s
    included) plus the architecture and NVRTC's version."""
    h = hashlib.sha256()
    for part in (unit, tree_digest(root or CUDA_SRC), json.dumps(sorted(headers.items())), json.dumps(options), arch,
                 json.dumps(nvrtc_version()), json.dumps(name_expressions)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _program_log(prog) -> str:
    nvrtc = nvrtc_module()
    size = check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
    # NVRTC writes into the buffer: a bytearray, never bytes (b" " * 1 is the interpreter's shared b" ",
    # and an empty log, size 1, turned every b" " of the process into b"\0").
    buf = bytearray(size)
    check(nvrtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
    return bytes(buf).rstrip(b"\0 ").decode(errors="replace")


def _cache_paths(cache: Path, unit: str, headers: dict[str, str], name_expressions: tuple[str, ...], arch: str,
                 options: tuple[str, ...], root: Path | None = None) -> tuple[Path, Path]:
    key = cache_key(unit, headers, options, arch, name_expressions, root)
    return cache / f"{unit}-{arch}-{key}.cubin", cache / f"{unit}-{arch}-{key}.json"


def load_cached_unit(unit: str, headers: dict[str, str], name_expressions: tuple[str, ...], arch: str = "sm_90",
                     options: tuple[str, ...] = DEFAULT_OPTIONS, cache_dir: Path | None = None,
                     root: Path | None = None) -> BuiltUnit | None:
    """The unit from the disk cache, or None when it has not been compiled with these inputs."""
    paths = _cache_paths(cache_dir or default_cache_dir(), unit, headers, name_expressions, arch, options, root)
    return _read_cached(unit, arch, *paths)


def _read_cached(unit: str, arch: str, cubin_path: Path, meta_path: Path) -> BuiltUnit | None:
    if not (cubin_path.exists() and meta_path.exists()):
        return None
    meta = json.loads(meta_path.read_text())
    return BuiltUnit(unit, arch, cubin_path.read_bytes(), meta["lowered"], 0.0, True, meta.get("log", ""), "cache")


def compile_unit(unit: str, headers: dict[str, str], name_expressions: tuple[str, ...], arch: str = "sm_90",
                 options: tuple[str, ...] = DEFAULT_OPTIONS, cache_dir: Path | None = None,
                 root: Path | None = None) -> BuiltUnit:
    """Compile ``<root>/programs/<unit>.cu`` (or load it from the cache). ``root``: the package's
    ``cuda_src`` unless another source tree is given (bench/kernel_ab.py: an earlier commit's kernels)."""
    root = Path(root) if root is not None else CUDA_SRC
    cache = cache_dir or default_cache_dir()
    cubin_path, meta_path = _cache_paths(cache, unit, headers, name_expressions, arch, options, root)
    cached = _read_cached(unit, arch, cubin_path, meta_path)
    if cached is not None:
        return cached

    nvrtc = nvrtc_module()
    source_path = root / "programs" / f"{unit}.cu"
    t0 = time.perf_counter()
    names = list(headers)
    prog = check(nvrtc.nvrtcCreateProgram(source_path.read_bytes(), f"{unit}.cu".encode(), len(names),
                                          [headers[n].encode() for n in names], [n.encode() for n in names]),
                 "nvrtcCreateProgram", unit)
    try:
        for expr in name_expressions:
            check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), "nvrtcAddNameExpression", expr)
        opts = [f"--gpu-architecture={arch}", f"--include-path={root}", *options]
        status = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])[0]
        log = _program_log(prog)
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError("nvrtcCompileProgram", str(status), unit, log)
        size = check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize", unit)
        cubin_buf = bytearray(size)  # written by NVRTC (see _program_log)
        check(nvrtc.nvrtcGetCUBIN(prog, cubin_buf), "nvrtcGetCUBIN", unit)
        cubin = bytes(cubin_buf)
        lowered = {}
        for expr in name_expressions:
            name = check(nvrtc.nvrtcGetLoweredName(prog, expr.encode()), "nvrtcGetLoweredName", expr)
            lowered[expr] = name.decode() if isinstance(name, bytes) else str(name)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    compile_s = time.perf_counter() - t0
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = cubin_path.with_suffix(f".tmp{os.getpid()}-{threading.get_ident()}")  # builds run on threads
        tmp.write_bytes(cubin)
        tmp.replace(cubin_path)
        meta_path.write_text(json.dumps({"lowered": lowered, "log": log, "compile_s": compile_s}))
    except OSError:
        pass  # a read-only cache only costs the next process a rebuild
    return BuiltUnit(unit, arch, cubin, lowered, compile_s, False, log)
