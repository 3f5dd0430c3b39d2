#!/usr/bin/env bash
# One call on the GPU host: the GPU test suite, the demo on the CUDA backend, GPU proofs of circuits
# the tests never saw (copied into .extra/, verified back on the dev machine with snarkjs), then the
# benchmarks. Wheels the host lacks (orjson, py_ecc, wasmtime) travel in .whl/. Results go to $OUT.
#   STAGE_SIZES="20 22"  MSM_ARGS="16 26 24"  ENGINE_DEVICES="1,2"  SKIP="msm server"  bash bench/device_run.sh
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 ZKPIPE_KERNEL_CACHE=/tmp/zkpipe-kernels
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv | tee "$OUT/gpu.txt"
timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu 2>&1 | tee "$OUT/pytest.log" | tail -n 4
skip demo || timeout 120 python3 -m pipeline.cli demo --backend cuda 2>&1 | grep -E "VALID|INVALID"
if ! skip prove; then
  mkdir -p /tmp/proofs
  for d in .extra/*/; do
    n=$(basename "$d")
    timeout 120 python3 -m pipeline.cli prove "$d/circuit_final.zkey" "$d/witness.wtns" \
      --proof "/tmp/proofs/$n-proof.json" --public "/tmp/proofs/$n-public.json" --backend cuda
  done 2>&1 | tee "$OUT/prove.log"
  tar -C /tmp -cf "$OUT/proofs.tar" proofs
fi
skip stage || timeout 240 python3 bench/gpu_stage.py ${STAGE_SIZES:-24} 2>&1 | tail -n 6
skip msm || timeout 240 python3 bench/gpu_msm.py ${MSM_ARGS:-16 26 24} "$OUT/gpu_msm_2e26.md" 2>&1 | tail -n 3
skip engine || timeout 300 python3 bench/engine_throughput.py --backend cuda --curve bls12381 \
  --circuit .extra/chain_2e14_bls --partitions 4 --jobs 6 --jobs-in-flight 2,5,10 --gpu-workers 1,2 \
  --device-counts "${ENGINE_DEVICES:-1}" --out "$OUT/engine_cuda_bls12381_chain_2e14_devices.md" 2>&1 | grep -E "^dev="
skip server || timeout 150 python3 bench/server_throughput.py --backend cuda --curve bls12381 --key-circuit chain_2e10 \
  --requests 100 --latency-jobs 20 2>&1 | tail -n 12
sizes=${STAGE_SIZES:-24}
cp "bench/results/gpu_stage_${sizes// /_}.md" bench/results/server_cuda_*.md "$OUT/" 2>/dev/null
grep -E "passed|failed" "$OUT/pytest.log" | tail -n 2
