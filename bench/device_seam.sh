#!/usr/bin/env bash
# One call on the GPU host for the backend seam (issue 9): the GPU tests, then the engine before
# (the commit before the seam, unpacked from .anchors/before.tar) and after, same call, random
# BLS12-381 keys of 2^14 and 2^20, one and (where present) two GPUs; the GPU stage alone; sppark.
#   carry: .whl .anchors        results in $OUT
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 ZKPIPE_KERNEL_CACHE=/tmp/zkpipe-kernels
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
n=$(nvidia-smi -L | wc -l); counts=1; [ "$n" -gt 1 ] && counts="1,$n"
mkdir -p /tmp/before && tar -C /tmp/before -xf .anchors/before.tar
for log in 14 20; do python3 bench/random_circuit.py bls12381 $log /tmp/rand$log >/dev/null; done
timeout 420 python3 -m pytest -m gpu -q -p no:cacheprovider -x tests/gpu 2>&1 | tee "$OUT/pytest.log" | tail -n 4
for version in after before; do
  dir=$PWD; [ $version = before ] && dir=/tmp/before
  (cd "$dir" && timeout 200 python3 bench/engine_throughput.py --backend cuda --curve bls12381 --circuit /tmp/rand14 \
     --partitions 4 --jobs 10 --jobs-in-flight 5 --gpu-workers 1,2 --device-counts "$counts" \
     --out "$OUT/engine_${version}_2e14.md" 2>&1 | grep -E "^dev=|Error" | sed "s/^/$version 2^14 /")
  (cd "$dir" && timeout 200 python3 bench/engine_throughput.py --backend cuda --curve bls12381 --circuit /tmp/rand20 \
     --partitions 4 --jobs 4 --jobs-in-flight 3 --gpu-workers 2 --device-counts "$counts" \
     --out "$OUT/engine_${version}_2e20.md" 2>&1 | grep -E "^dev=|Error" | sed "s/^/$version 2^20 /")
done
timeout 240 python3 bench/gpu_stage.py 14 20 24 2>&1 | tail -n 8 | tee "$OUT/gpu_stage_after.txt"
(cd /tmp/before && timeout 240 python3 bench/gpu_stage.py 14 20 24 2>&1 | tail -n 8) | tee "$OUT/gpu_stage_before.txt"
.anchors/bench_bls12381 20 24 24 24 2>&1 | tee "$OUT/sppark_bls.txt" | tail -n 12
grep -E "passed|failed" "$OUT/pytest.log" | tail -n 2
