"""Where the kernel sources are, and the hash of what one build of a unit reads.

The CUDA C++ sources are package data, ``pipeline/cuda_src/`` (shipped in the wheel and the
sdist), found through the package: a checkout, an editable install and an installed wheel all
read them from the imported ``pipeline``. ``source_digest`` hashes everything a build unit is
made from except the compiler: the prebuilt kernels record it beside each binary, and the NVRTC
disk cache adds the architecture and NVRTC's version to it.
"""
from __future__ import annotations

import hashlib
import json
from importlib.resources import files
from pathlib import Path

CUDA_SRC = Path(str(files("pipeline") / "cuda_src"))
DEFAULT_OPTIONS = ("-std=c++17", "-DNDEBUG")
SOURCE_SUFFIXES = (".cu", ".cuh")


def tree_digest(root: Path = CUDA_SRC) -> str:
    """sha256 over every .cu/.cuh file under ``root``: relative names and contents, in name order."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in SOURCE_SUFFIXES:
            h.update(str(path.relative_to(root).as_posix()).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def source_digest(unit: str, headers: dict[str, str], options: tuple[str, ...], name_expressions: tuple[str, ...],
                  root: Path = CUDA_SRC) -> str:
    """sha256 of one unit's inputs: the source tree, the generated headers, the options, the kernels."""
    h = hashlib.sha256()
    for part in (unit, tree_digest(root), json.dumps(sorted(headers.items())), json.dumps(list(options)),
                 json.dumps(list(name_expressions))):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()
