"""Build hook: the wheel ships the CUDA kernels compiled ahead of time.

After the usual build_py has laid out the package in build/lib, the kernels are compiled from
that copy (the sources exactly as shipped, found through the package) into
pipeline/backends/cuda/prebuilt/ by pipeline/backends/cuda/aot_build.py, with the NVRTC of the
build environment. ZKPIPE_KERNEL_ARCHS picks the GPU generations (default: aot_build's
SUPPORTED_ARCHS; "none" ships none). Editable installs build nothing: a checkout compiles on
first use (NVRTC, cached on disk) or runs aot_build --inplace.
"""
import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

PREBUILT = os.path.join("pipeline", "backends", "cuda", "prebuilt")


class BuildPyWithKernels(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("ZKPIPE_KERNEL_ARCHS", "").lower() == "none":
            return
        build_lib = os.path.abspath(self.build_lib)
        env = dict(os.environ, PYTHONPATH=build_lib + os.pathsep + os.environ.get("PYTHONPATH", ""))
        probe = "from pipeline.backends.cuda.nvrtc_build import nvrtc_version; nvrtc_version()"
        if subprocess.run([sys.executable, "-c", probe], env=env, cwd=build_lib, capture_output=True).returncode:
            print("warning: NVRTC cannot be loaded in the build environment: this wheel ships no prebuilt kernels "
                  "(they compile on first use)", file=sys.stderr)
            return
        archs, cache = os.environ.get("ZKPIPE_KERNEL_ARCHS", ""), os.environ.get("ZKPIPE_KERNEL_CACHE", "")
        subprocess.run([sys.executable, "-m", "pipeline.backends.cuda.aot_build", "--out", os.path.join(build_lib, PREBUILT),
                        *(["--arch", archs] if archs.strip() else []), *(["--cache", cache] if cache else [])],
                       env=env, cwd=build_lib, check=True)


setup(cmdclass={"build_py": BuildPyWithKernels})
