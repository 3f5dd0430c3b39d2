"""Kernel builds work from any host program: a script read from standard input (``python3 -``,
whose ``__main__`` a spawned worker could not re-import: BrokenProcessPool), ``python3 -c``,
and an interactive session. Each host builds two small units through ``build_units`` (two
misses, so the parallel path runs) into an empty cache. Compile only: no GPU needed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import nvrtc_or_skip

REPO = Path(__file__).resolve().parents[3]

# Two units small enough to compile in about a second; they read the generated curve header,
# so the in-memory header reaches NVRTC as it does for the real units.
PROBE = """typedef unsigned int uint32_t;
#include "curve_params.cuh"
template <int K> __global__ void probe(uint32_t* out) { out[threadIdx.x] = fr_params::N + K; }
"""


def host_lines(src: Path, cache: Path) -> list[str]:
    """The host program, one statement per line (an interactive session reads it line by line)."""
    return [
        "from pathlib import Path",
        "from pipeline.backends.cuda import kernels, nvrtc_build",
        "from pipeline.curves import BN254",
        f"nvrtc_build.CUDA_SRC = Path({str(src)!r})",
        "kernels.UNITS.update(probe_a=('probe<1>',), probe_b=('probe<2>',))",
        f"built = kernels.build_units(BN254, units=['probe_a', 'probe_b'], cache_dir=Path({str(cache)!r}))",
        "print('BUILT', sorted(u for (_, u), b in built.items() if not b.from_cache and b.cubin[:4] == b'\\x7fELF'))",
        "assert b' '[0] == 32, 'NVRTC wrote into the shared bytes object'",
    ]


@pytest.fixture
def probe_tree(tmp_path):
    nvrtc_or_skip()
    programs = tmp_path / "src" / "programs"
    programs.mkdir(parents=True)
    for unit in ("probe_a", "probe_b"):
        (programs / f"{unit}.cu").write_text(PROBE)
    return tmp_path / "src", tmp_path / "cache"


@pytest.mark.parametrize("host", ["stdin", "dash_c", "interactive"])
def test_a_host_program_of_any_kind_builds_kernels(probe_tree, host):
    src, cache = probe_tree
    lines = host_lines(src, cache)
    if host == "stdin":  # python3 - : __main__.__file__ is '<stdin>'
        argv, stdin = [sys.executable, "-"], "\n".join(lines) + "\n"
    elif host == "dash_c":
        argv, stdin = [sys.executable, "-c", "\n".join(lines)], ""
    else:  # the REPL, fed one statement per line
        argv, stdin = [sys.executable, "-q", "-i"], "\n".join(lines) + "\n"
    done = subprocess.run(argv, input=stdin, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "BUILT ['probe_a', 'probe_b']" in done.stdout, (done.stdout[-2000:], done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert sorted(p.name.split("-")[0] for p in cache.glob("*.cubin")) == ["probe_a", "probe_b"]
