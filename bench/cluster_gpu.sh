#!/usr/bin/env bash
# One call on nvidia-h200-x2: two cluster workers (separate `zkpipe serve --store` processes, one GPU
# each) on one PostgreSQL against one worker, on a random 2^20 BLS12-381 key; s/proof and the ratio.
# The host has no PostgreSQL and no network: .whl/ must carry, besides the usual wheels,
#   asyncpg-*-cp312-cp312-manylinux*_x86_64.whl     (the driver)
#   pgserver-*-cp312-cp312-manylinux*_x86_64.whl    (only its PostgreSQL 16 binaries are used)
# Witnesses (32 MiB each) travel through a shared spool folder on this host, then through the database
# rows, so both ways are measured. Results go to $OUT.
#   bash bench/cluster_gpu.sh            JOBS=60 LOG=20 bash bench/cluster_gpu.sh
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 ZKPIPE_KERNEL_CACHE=/tmp/zkpipe-kernels
export ZKPIPE_PG_BIN=/tmp/site/pgserver/pginstall/bin
chmod -R a+rX /tmp/site/pgserver && chmod a+x "$ZKPIPE_PG_BIN"/*   # PostgreSQL runs as a non-root user
nvidia-smi --query-gpu=name,clocks.sm,memory.used --format=csv | tee "$OUT/gpu.txt"
log=${LOG:-20}
python3 bench/random_circuit.py bls12381 "$log" "/tmp/rand_2e$log"
timeout 280 python3 bench/cluster_throughput.py --backend cuda --curve bls12381 --circuit "/tmp/rand_2e$log" \
  --workers 1,2 --devices-per-worker --jobs "${JOBS:-60}" --claims 0 --shared-spool \
  --out "$OUT/cluster_cuda_bls12381_rand_2e${log}_spool.md" 2>&1 | grep -E "end to end|Error|error|wrote"
timeout 280 python3 bench/cluster_throughput.py --backend cuda --curve bls12381 --circuit "/tmp/rand_2e$log" \
  --workers 1,2 --devices-per-worker --jobs "${JOBS:-60}" --claims 0 \
  --out "$OUT/cluster_cuda_bls12381_rand_2e${log}_rows.md" 2>&1 | grep -E "end to end|Error|error|wrote"
