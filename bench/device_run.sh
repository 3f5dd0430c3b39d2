#!/usr/bin/env bash
# One call on the GPU host: the GPU test suite, the demo on the CUDA backend, GPU proofs of circuits
# the tests never saw (copied into .extra/, verified back on the dev machine with snarkjs), the
# whole-stage and engine benchmarks. Wheels the host lacks (orjson, py_ecc) travel in .whl/.
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 ZKPIPE_KERNEL_CACHE=/tmp/zkpipe-kernels ZKPIPE_BENCH_TMP=/tmp
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv | tee "$OUT/gpu.txt"
timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu 2>&1 | tee "$OUT/pytest.log" | tail -n 4
timeout 120 python3 -m pipeline.cli demo --backend cuda 2>&1 | tee "$OUT/demo.log"
mkdir -p /tmp/proofs
for c in bn128 bls12381; do
  [ -f ".extra/$c/circuit_final.zkey" ] || continue
  timeout 120 python3 -m pipeline.cli prove ".extra/$c/circuit_final.zkey" ".extra/$c/witness.wtns" \
    --proof "/tmp/proofs/$c-proof.json" --public "/tmp/proofs/$c-public.json" --backend cuda
done 2>&1 | tee "$OUT/prove.log"
tar -C /tmp -cf "$OUT/proofs.tar" proofs
timeout ${STAGE_TIMEOUT:-200} python3 bench/gpu_stage.py ${STAGE_SIZES:-20 22} 2>&1 | tee "$OUT/stage.log" | tail -n 7
timeout 150 python3 bench/engine_throughput.py --backend cuda --curve bls12381 --circuit chain_2e10 --partitions 4 \
  --jobs 5 --jobs-in-flight 1,5 --gpu-workers 1,2 2>&1 | tee "$OUT/engine.log" | tail -n 12
cp bench/results/gpu_stage.md bench/results/engine_cuda* "$OUT/" 2>/dev/null
grep -E "passed|failed" "$OUT/pytest.log" | tail -n 2
