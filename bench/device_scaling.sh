#!/usr/bin/env bash
# One call on a host of several GPUs: engine throughput on 1 and N devices for random keys of
# 2^20 and 2^22 (bench/random_circuit.py), then the HTTP service against the library with its
# time split, at the default GIL switch interval and at 1 ms. Results go to $OUT.
#   bash bench/device_scaling.sh                  (on nvidia-h200-x2)
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 ZKPIPE_KERNEL_CACHE=/tmp/zkpipe-kernels
n=$(nvidia-smi -L | wc -l); counts=1; [ "$n" -gt 1 ] && counts="1,$n"
for log in ${SCALING_LOGS:-20 22}; do
  python3 bench/random_circuit.py bls12381 "$log" "/tmp/rand_2e$log"
  timeout 240 python3 bench/engine_throughput.py --backend cuda --curve bls12381 --circuit "/tmp/rand_2e$log" \
    --partitions 4 --jobs 3 --jobs-in-flight 3 --gpu-workers 2 --device-counts "$counts" \
    --out "$OUT/engine_cuda_bls12381_rand_2e${log}_devices.md" 2>&1 | grep -E "^dev=|Error|error"
done
for gil in "" 0.001; do
  timeout 150 python3 bench/server_throughput.py --backend cuda --curve bls12381 --key-circuit chain_2e10 \
    --requests 100 --latency-jobs 20 ${gil:+--gil-switch-interval $gil} 2>&1 | grep -A6 "Where the HTTP"
done
cp bench/results/server_cuda_*.md "$OUT/"
