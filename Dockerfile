# zkpipe: the Groth16 proving service (`zkpipe serve`) on an NVIDIA GPU (or the CPU backend without one).
#
#   docker build -t zkpipe .                   # or, with no Docker engine: tools/container_build.sh (buildah)
#   docker run --gpus all -p 9820:9820 -v zkpipe-state:/var/lib/zkpipe \
#       -v "$PWD/keys:/keys:ro" -e ZKPIPE_KEYS_DIR=/keys -e ZKPIPE_AUTH_TOKEN=s3cret zkpipe
#
# Without ZKPIPE_KEYS_DIR it serves the bundled example keys (chain_bn128, chain_bls12381).
# Settings: environment variables ZKPIPE_* / ZKPIPE_ENGINE_*, or mount a TOML file and pass
# `--config /etc/zkpipe.toml` (arguments after the image name go to `zkpipe serve`).
#
# The install step is .ci/install, the script CI's .ci/run calls, so CI exercises it on every run;
# no Docker engine is needed there. tests/test_container.py builds this file with buildah and runs
# the demo and `zkpipe serve` + one job inside the image (pytest -m container, by hand).
#
# Base: any Debian or Ubuntu with Python >= 3.11. No CUDA toolkit image is needed: cuda-python and
# NVRTC come from pip (the [cuda] extra), and the driver (libcuda) is the host's, mounted by the
# NVIDIA container toolkit (`--gpus all`), which the two NVIDIA_* variables below ask for.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates tini \
 && rm -rf /var/lib/apt/lists/*

# Non-root user owning the state folder; the source is read-only to it.
RUN groupadd --system zkpipe \
 && useradd --system --gid zkpipe --home-dir /var/lib/zkpipe --shell /usr/sbin/nologin zkpipe \
 && mkdir -p /var/lib/zkpipe /keys \
 && chown zkpipe:zkpipe /var/lib/zkpipe

WORKDIR /opt/zkpipe/src
# Dependency metadata first, so a source change does not reinstall every wheel.
COPY pyproject.toml README.md LICENSE ./
COPY pipeline ./pipeline
# The install recipe CI runs on every submission (.ci/run calls the same script with test,cuda).
COPY .ci/install ./.ci/install
# Behind a TLS-intercepting proxy, pip needs its CA bundle: mount it for the build and name it here
# (tools/container_build.sh does both); unset, pip uses its own bundle. Nothing of it stays in the image.
ARG PIP_CERT
RUN bash .ci/install /opt/zkpipe/venv cuda

ENV PATH=/opt/zkpipe/venv/bin:$PATH \
    ZKPIPE_HOST=0.0.0.0 \
    ZKPIPE_PORT=9820 \
    ZKPIPE_STATE_DIR=/var/lib/zkpipe \
    XDG_CACHE_HOME=/var/lib/zkpipe/cache

USER zkpipe
# Job store + spool (and the NVRTC kernel cache); keys are mounted read-only at /keys.
VOLUME ["/var/lib/zkpipe"]
EXPOSE 9820

HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD python3 -c "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"ZKPIPE_PORT\", \"9820\")}/healthz', timeout=4)" || exit 1

# tini forwards SIGTERM so `zkpipe serve` stops cleanly (unfinished jobs run again at the next start).
ENTRYPOINT ["/usr/bin/tini", "--", "zkpipe", "serve"]
