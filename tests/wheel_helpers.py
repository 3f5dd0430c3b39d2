"""Build the project as a user's pip would (sdist, then a wheel from the unpacked sdist) and
install a wheel into a fresh venv, without network: the build runs without isolation in this
interpreter (setuptools, wheel, numpy and NVRTC are test dependencies), and the venv sees this
interpreter's site-packages through a .pth line, after its own (so the wheel's ``pipeline``
wins, and an editable install of the checkout is never imported there).
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

from tests.conftest import REPO

BUILD_TIMEOUT_S = 1800  # an AOT build that misses the NVRTC cache compiles every unit


def _backend(call: str, cwd: Path, env: dict | None = None) -> str:
    code = f"import setuptools.build_meta as b; print(b.{call})"
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env={**os.environ, **(env or {})},
                         capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if out.returncode:
        raise AssertionError(f"{call} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out.stdout.strip().splitlines()[-1]


def build_sdist_tree(out: Path) -> Path:
    """The sdist of the checkout, unpacked: the folder a wheel is then built from."""
    name = _backend(f"build_sdist({str(out)!r})", REPO)
    with tarfile.open(out / name) as tar:
        tar.extractall(out, filter="data")
    return out / name.removesuffix(".tar.gz")


def build_wheel(source: Path, out: Path, kernel_archs: str, kernel_cache: Path) -> Path:
    """A wheel from ``source``; ``kernel_archs`` goes to the AOT build (``"none"``: no kernels)."""
    out.mkdir(parents=True, exist_ok=True)
    env = {"ZKPIPE_KERNEL_ARCHS": kernel_archs, "ZKPIPE_KERNEL_CACHE": str(kernel_cache)}
    return out / _backend(f"build_wheel({str(out)!r})", source, env)


def venv_with_wheel(venv: Path, wheel: Path) -> Path:
    """A new venv holding ``wheel`` (no dependencies installed: they come from this interpreter's
    site-packages, appended to its path); returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, timeout=300)
    return python


def _nvrtc_library_dir() -> str | None:
    """Where this interpreter's NVRTC is: cuda-pathfinder looks for pip's NVRTC only in the venv's
    own site-packages, so the test venv is pointed at it through the loader's search path."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        return os.path.dirname(load_nvidia_dynamic_lib("nvrtc").abs_path)
    except Exception:  # no NVRTC here: the code run needs none
        return None


def run_in(python: Path, code: str, cwd: Path, env: dict | None = None, timeout: int = BUILD_TIMEOUT_S) -> str:
    """Run ``code`` isolated (-I: no checkout on the path) in the venv of ``python``; its stdout."""
    env = {**os.environ, **(env or {})}
    lib_dir = _nvrtc_library_dir()
    if lib_dir:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [lib_dir, env.get("LD_LIBRARY_PATH")]))
    out = subprocess.run([str(python), "-I", "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=timeout)
    if out.returncode:
        raise AssertionError(f"failed in the venv:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out.stdout
