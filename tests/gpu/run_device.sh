#!/usr/bin/env bash
# One device call: build (through the tests' session fixture), test, benchmark. Logs to $OUT.
# Usage on the device machine: bash tests/gpu/run_device.sh [quick]
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 ZKPIPE_KERNEL_CACHE=/tmp/zkpipe-kernels
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv | tee "$OUT/gpu.txt"
timeout ${TEST_TIMEOUT:-300} python3 -m pytest -m gpu -q --maxfail=20 -p no:cacheprovider --durations=15 ${PYTEST_ARGS:-} tests/gpu 2>&1 | tee "$OUT/pytest.log" | tail -n 80
rc_tests=$?
if [ "${1:-}" != "quick" ]; then
  timeout ${BENCH_TIMEOUT:-240} python3 bench/gpu_ntt.py ${NTT_ARGS:-16 27} bench/results/gpu_ntt.md 2>&1 | tee "$OUT/ntt.log" | tail -n 3
  timeout ${BENCH_TIMEOUT:-240} python3 bench/gpu_msm.py ${MSM_ARGS:-16 24 22} bench/results/gpu_msm.md 2>&1 | tee "$OUT/msm.log" | tail -n 3
  cp bench/results/gpu_*.md "$OUT/" 2>/dev/null
  cat bench/results/gpu_ntt.md bench/results/gpu_msm.md 2>/dev/null
fi
grep -E "passed|failed|error" "$OUT/pytest.log" | tail -n 3
exit $rc_tests
