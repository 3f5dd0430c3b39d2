#!/usr/bin/env bash
# The one script for a call on the GPU host: each argument names a section, run in that order.
#   bash bench/device.sh [SECTION...]           default: tests demo prove stage msm engine server
#   e.g.  bash bench/device.sh tests ntt msm    |    SERVER_GILS="default 0.001" bash bench/device.sh scaling server
# Sections (knobs in capitals, defaults in brackets):
#   tests    pytest -m gpu [TEST_K: a -k expression, spaces kept] [PYTEST_ARGS: split on spaces] [TEST_PATHS=tests/gpu]
#            [TEST_TIMEOUT=420 s: the whole suite, 524 tests with the kernels prebuilt, took 244 s in session 17];
#            its exit status is the script's                                          -> $OUT/pytest.log
#   demo     `zkpipe demo` on the CUDA backend (prints VALID / INVALID)
#   prove    GPU proofs of the circuits in .extra/*/ (ones the tests never saw)       -> $OUT/proofs.tar
#            (verify them back on the dev machine: tools/verify_device_proofs.sh DIR [.extra])
#   ntt      bench.gpu_ntt [NTT_ARGS=16 27]                                           -> bench/results/gpu_ntt.md
#   msm      bench.gpu_msm [MSM_ARGS=16 24 22] [MSM_OUT=bench/results/gpu_msm.md] (e.g. MSM_ARGS="16 16 16 --no-variants
#            --window-sweep 16,18,20,22": the G1 window sweep below 2^24; --level0 20,22,24: flat against chunked
#            level 0 of the bucket sums) [MSM_TIMEOUT=240] s
#   overlap  bench.gpu_msm_overlap: a partition's five MSMs on one stream and on two [OVERLAP_SIZES=22 24]
#                                                                                     -> bench/results/gpu_msm_overlap_<sizes>.md
#   stage    bench.gpu_stage [STAGE_SIZES=24] [STAGE_TIMEOUT=240] s (2^26 both curves: ~300; the table is written
#            after each curve) [STAGE_ARGS: e.g. "--shared-sort" (rows with one sort for A, B1, B2 beside), "--curves
#            bn128 --window-model 2.2,6.5" (rows with the MSM windows of another cost model beside), "--prefetched" (rows
#            with the witness on the device before the clock, as the engine's later partitions run), "--fixed-base
#            --fixed-base-sets 2" (the tables that fit, then every table at two bucket sets: GPUs smaller than the tables),
#            "--bit-shares 0.8,0.85,0.9,0.95" (each share plain and split: where the split starts to pay)]                                                      -> bench/results/gpu_stage_<sizes>.md
#   memory   bench.gpu_memory_modes [MEMORY_SIZES=10 14 18 22]                        -> bench/results/gpu_memory_modes.md
#   blocks   bench.gpu_blocks [BLOCKS_LOG=22]                                         -> bench/results/gpu_blocks_2e<log>.md
#   build    bench.kernel_build: NVRTC on threads vs spawned processes, all units      -> bench/results/kernel_build.md
#   engine   bench.engine_throughput on .extra/chain_2e14_bls, [ENGINE_DEVICES=1] device counts
#   scaling  bench.engine_throughput on random keys of 2^[SCALING_LOGS=20 22], on 1 and on all devices
#   server   bench.server_throughput, once per GIL switch interval in [SERVER_GILS=default]
#   cluster  bench.cluster_throughput: 1 worker vs one per GPU (separate `zkpipe serve --store` processes, one
#            PostgreSQL), random BLS12-381 key of 2^[CLUSTER_LOG=20], [CLUSTER_JOBS=60] jobs, witnesses through
#            a shared spool folder, then through the database rows    -> bench/results/cluster_cuda_*.md
#            PostgreSQL: the pgserver wheel's binaries, carried in .whl/ with asyncpg's wheel
#   devsetup bench.dev_setup: GPU development keys of synth circuits, phases, then one proof's GPU stage on
#            each (circuit vs random witness) [DEVSETUP_SIZES=20 22 24] [DEVSETUP_CURVES=bls12381 bn128]
#            -> bench/results/dev_setup_<sizes>_<curves>.md (2^26: its own call; 2^27: nvidia-h200-x2's host memory)
#   seed     bench.seed_scale: development keys of seed-shaped circuits of 2^[SEED_SIZES=24 26] ([SEED_CURVE=bls12381]),
#            [SEED_JOBS=2] jobs of 10 partitions ([SEED_WITNESS=circuit] witness) through the engine on
#            [SEED_DEVICES=1] device(s), sppark's stage beside it (.anchors/bench_<curve>: carry .anchors)
#            [SEED_ARGS: e.g. "--thread-a-row", "--no-witness-prefetch"]
#            (.anchors/kcache_setup.tar.xz, where carried: the dev box's NVRTC cache of the setup units)
#            -> bench/results/seed_scale_cuda_<curve>_<sizes>_<witness>.md + .timeline.json/.png per size
#            (2^27: its own call on nvidia-h200-x2, for the 256 GiB host: SEED_SIZES=27 SEED_JOBS=1)
#   keyprep  bench.key_prepare --upload (issue 11 item 2): the old parse + argsort CSR vs the key cache's first and
#            next start, each into CudaBackend.load_key, random BLS12-381 keys of 2^[KEYPREP_SIZES=24] written to
#            [KEYPREP_DIR=/tmp]; [KEYPREP_ARGS] e.g. "--cold" (page cache dropped per timing), "--order snarkjs".
#            2^26 (~45 GB key + ~6 GB cache, ~45 GB of RAM for the old path): its own call, on nvidia-h200-x2
#            (disk)                                                                   -> bench/results/key_prepare_*.md
#   streamed bench.streamed_keys: a 2^[STREAMED_LOG=26] BLS12-381 development key resident, then streamed under
#            [STREAMED_BUDGETS=0 16 8] GiB with batches of [STREAMED_BATCHES=1 2 5 10], [STREAMED_PARTITIONS=10]
#            partitions per row, tails [STREAMED_TAILS: unset, CudaOptions.stream_tails; e.g. "chunks prologue"] [STREAMED_ARGS: e.g.
#            "--gpu-workers 2 --resident-jobs 2 --row-jobs 16:10=10" (session 22: every budget and batch, the 16 GiB batch-10
#            row 100 partitions, ~440 s), "--phases --gil-intervals
#            python default", "--bit-fractions 0.8 0.9 0.95 --split-min-bits 0.5 1.01" (a key per 0/1 share, each streamed
#            row split and not: where a streamed pass's split starts to pay), or "--gpu-workers 1 --save-proofs bench/results/streamed_keys_proofs.json" (every proof,
#            checked on the dev box: python3 -m bench.streamed_keys --verify-saved FILE)]; pinned copy rate of the same call
#                                                                                     -> bench/results/streamed_keys_*.md
#   profile  bench.streamed_profile: where a streamed pass spends its time, 2^[PROFILE_LOG=24] BLS12-381 key under
#            [PROFILE_BUDGET=5] GiB, batches [PROFILE_BATCHES=1 4], the host split page-locked and not [PROFILE_ARGS: e.g.
#            "--tails prologue --split-locks on --cprofile"]; resident
#            partition of the same call
#                                                                                     -> bench/results/streamed_profile_*.md
#   nodeenv  node + snarkjs unpacked from .snarkjs/ into .nodeenv/ (kept on a warm host). .snarkjs (51 MB) and the tree
#            (~15 MB) fill a call's 64 MiB: carry .snarkjs alone for this section, the wheels in the next call
#   oneshot  bench.oneshot_prove (issue 17): snarkjs, cold, warm and via-server `zkpipe prove` per new process, sizes
#            [ONESHOT_SIZES=bn128:15:30000,bls12381:15:30000,bn128:20,bls12381:20] x [ONESHOT_RUNS=2]; node + snarkjs unpacked from .snarkjs/
#            (carry it: shared/anchors/snarkjs/*.xz)                                  -> bench/results/oneshot_prove_cuda*.md
#   latency  bench.ntt_latency in [LATENCY_PROCESSES=3] processes one after another: a lone natural NTT's device time
#            and host queueing, plain and from a CUDA graph [LATENCY_ARGS: e.g. "--sizes 20 21 --curves bn128"]
#            [LATENCY_TIMEOUT=120] s a process                        -> bench/results/ntt_latency[LATENCY_TAG]_p<i>.md
#   kernels  bench.kernels_vs_sppark (issue 16): our G1/G2 MSM, Fr NTT and H against sppark's from the same call,
#            both curves (the harness first: carry .anchors); [KERNELS_ARGS: e.g. "--curves bn128 --g1 20 22"],
#            [KERNELS_TIMEOUT=300] s                                              -> bench/results/kernels_vs_sppark.md + .png
#   depntt   the NTT with the dependent launches' wait built in (launch.NTT_DEPENDENT_BUILT set on this copy of the tree,
#            put back after): kernels_vs_sppark [DEPNTT_ARGS="--g1 --g2 --ntt 19 22"], then tests/gpu/test_ntt.py -k
#            dependent. Its kernels: .anchors/kcache_dep.tar.xz where carried (the NVRTC cache of a dev-box build of
#            every unit with the header so set), else NVRTC here   -> bench/results/kernels_vs_sppark_dependent.md
#   fixedbase bench.gpu_msm_fixed_base (issue 16, fixed bases): plain MSM, MSM over a fixed-base table and sppark, same
#            call, G1 and G2 at [FIXED_ARGS: e.g. "--curves bls12381 --g1 24"] (carry .anchors)
#                                                                                     -> bench/results/gpu_msm_fixed_base.md
#   g2points bench.sppark_g2_points: the shared sppark harness (.anchors/shared/bench_<curve>) against the one
#            bench.sppark_harness builds (.anchors/bench_<curve>), G2 rows at and below each run's largest
#            G2 size [G2POINTS_ARGS: e.g. "--tops 22 24"] [G2POINTS_TIMEOUT=400] s -> bench/results/sppark_g2_points.md
#   ab       bench.kernel_ab: a kernel change against the kernels before it, same process: the MSM kernels of
#            .anchors/cuda_src_before.tar (`git archive <commit> pipeline/cuda_src > .anchors/cuda_src_before.tar`,
#            ~150 KB; carry .anchors) compiled by NVRTC on the host (~1-2 min a unit) beside this tree's prebuilt ones,
#            timed in alternating rounds [AB_ARGS: e.g. "--curves bls12381 --g1 24 26 --g2 22", "--g1 --ntt 20 21",
#            "--g1 24 26 --g2 24 --infinity 0 0.5" (rows with half the points at infinity, as a seed key's B sections)]
#            [AB_TIMEOUT=300] s; .anchors/kcache_before.tar.xz, where carried: the earlier tree's NVRTC cache (dev box)
#   nttab    bench.ntt_switch_ab: one NttRunner setting's values in alternating rounds, same process [NTTAB_ARGS=
#            "--attribute natural_kernel --values groups pairs"; e.g. add "--sizes 20 21 --curves bls12381"]
#            [NTTAB_TIMEOUT=200] s                                                   -> bench/results/ntt_switch_ab.md
#                                                                                     -> bench/results/kernel_ab.md
#   pipes    bench.pipe_rates: IMAD.WIDE, DFMA and both a clock, and our Fq / Fr Montgomery products with DFMAs
#            beside them (is the FP64 pipe free room for a hybrid product?), the XYZZ mixed addition alone in
#            registers [PIPES_ARGS: e.g. "--curves bls12381 --sections additions"] (compiles its probe units with
#            NVRTC, ~10 s a curve, the additions' ~1 min: .anchors/kcache_probe.tar.xz, the dev box's NVRTC cache
#            of them, where carried)                                               -> bench/results/pipe_rates.md
#   seam     before/after of the backend seam (issue 9): engine at 2^14 and 2^20 (1 and all devices)
#            and the GPU stage at 2^14/20/24, in this tree and in the tree of .anchors/before.tar;
#            sppark's MSM bench if .anchors/bench_bls12381 is there. Carry .anchors.
# Kernels: build them here first (`python -m pipeline.backends.cuda.aot_build --inplace --arch sm_90`, ~6 min on
# the 2-core dev box) and carry pipeline/backends/cuda/prebuilt (16 MB): the call loads them and compiles
# nothing, where its first test otherwise spends 77-108 s of device time in NVRTC (session 15).
# Wheels the host lacks (orjson, py_ecc, wasmtime, xxhash, ...) travel in .whl/ or .whl-lite/ (and
# .whl-pg/ for the cluster section: asyncpg, pgserver). Every file a section writes
# under bench/results/ is copied to $OUT at the end, with gpu.txt and the logs.
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if compgen -G ".whl*/*.whl" > /dev/null; then  # .whl, .whl-lite, .whl-pg: whichever the call carried
  # one file per wheel name: a warm host keeps the folders of earlier calls, which may hold the same wheel
  mapfile -t wheels < <(ls .whl*/*.whl | awk -F/ '!seen[$NF]++')
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${wheels[@]}"
  export PYTHONPATH=/tmp/site SITE=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1
[ -w "${HOME:-/nonexistent}" ] || export HOME=/tmp  # compiled kernels are cached under ~/.cache/zkpipe/kernels
started=$(mktemp); rc=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv | tee "$OUT/gpu.txt"

# A dev-box NVRTC cache (tar.xz) into this host's, where the call carried it: its units load without a compile.
unpack_kernel_cache() {
  mkdir -p "$HOME/.cache/zkpipe/kernels"
  if [ -f "$1" ]; then tar -xJf "$1" -C "$HOME/.cache/zkpipe/kernels"; fi
}
tests() {
  timeout "${TEST_TIMEOUT:-420}" python3 -m pytest -m gpu -q --maxfail=20 -p no:cacheprovider --durations=15 \
    ${TEST_K:+-k "$TEST_K"} ${PYTEST_ARGS:-} ${TEST_PATHS:-tests/gpu} 2>&1 | tee "$OUT/pytest.log" | tail -n 80
  rc=$?
}
demo() { timeout 120 python3 -m pipeline.cli demo --backend cuda 2>&1 | grep -E "VALID|INVALID"; }
prove() {
  mkdir -p /tmp/proofs
  for d in .extra/*/; do
    n=$(basename "$d")
    timeout 120 python3 -m pipeline.cli prove "$d/circuit_final.zkey" "$d/witness.wtns" \
      --proof "/tmp/proofs/$n-proof.json" --public "/tmp/proofs/$n-public.json" --backend cuda
  done 2>&1 | tee "$OUT/prove.log"
  tar -C /tmp -cf "$OUT/proofs.tar" proofs
}
ntt() { timeout 240 python3 -m bench.gpu_ntt ${NTT_ARGS:-16 27} bench/results/gpu_ntt.md 2>&1 | tee "$OUT/ntt.log" | tail -n 3; }
msm() {
  timeout "${MSM_TIMEOUT:-240}" python3 -m bench.gpu_msm ${MSM_ARGS:-16 24 22} "${MSM_OUT:-bench/results/gpu_msm.md}" 2>&1 \
    | tee "$OUT/msm.log" | tail -n 3
}
overlap() { timeout 300 python3 -m bench.gpu_msm_overlap ${OVERLAP_SIZES:-22 24} 2>&1 | tail -n 24; }
stage() { timeout "${STAGE_TIMEOUT:-240}" python3 -m bench.gpu_stage ${STAGE_SIZES:-24} ${STAGE_ARGS:-} 2>&1 | tee "$OUT/stage.log" | tail -n 24; }
memory() { timeout 300 python3 -m bench.gpu_memory_modes ${MEMORY_SIZES:-10 14 18 22} 2>&1 | tail -n 12; }
blocks() { timeout 300 python3 -m bench.gpu_blocks ${BLOCKS_LOG:-22} 2>&1 | tail -n 20; }
build() { timeout 300 python3 -m bench.kernel_build 2>&1 | tail -n 6; }
engine() {
  timeout 300 python3 -m bench.engine_throughput --backend cuda --curve bls12381 --circuit .extra/chain_2e14_bls \
    --partitions 4 --jobs 6 --jobs-in-flight 2,5,10 --gpu-workers 1,2 --device-counts "${ENGINE_DEVICES:-1}" \
    --out bench/results/engine_cuda_bls12381_chain_2e14_devices.md 2>&1 | grep -E "^dev="
}
scaling() {
  local n counts=1 log
  n=$(nvidia-smi -L | wc -l); [ "$n" -gt 1 ] && counts="1,$n"
  for log in ${SCALING_LOGS:-20 22}; do
    python3 -m bench.random_circuit bls12381 "$log" "/tmp/rand_2e$log"
    timeout 240 python3 -m bench.engine_throughput --backend cuda --curve bls12381 --circuit "/tmp/rand_2e$log" \
      --partitions 4 --jobs 3 --jobs-in-flight 3 --gpu-workers 2 --device-counts "$counts" \
      --out "bench/results/engine_cuda_bls12381_rand_2e${log}_devices.md" 2>&1 | grep -E "^dev=|Error|error"
  done
}
server() {
  local gil
  for gil in ${SERVER_GILS:-default}; do
    [ "$gil" = default ] && gil=""
    timeout 150 python3 -m bench.server_throughput --backend cuda --curve bls12381 --key-circuit chain_2e10 \
      --requests 100 --latency-jobs 20 ${gil:+--gil-switch-interval $gil} 2>&1 | tail -n 12
  done
}
cluster() {
  local n log=${CLUSTER_LOG:-20} travel
  n=$(nvidia-smi -L | wc -l)
  export ZKPIPE_PG_BIN=${ZKPIPE_PG_BIN:-/tmp/site/pgserver/pginstall/bin}
  chmod -R a+rX /tmp/site/pgserver 2> /dev/null  # PostgreSQL runs as a non-root user under root
  [ -f "/tmp/rand_2e$log/witness.wtns" ] || python3 -m bench.random_circuit bls12381 "$log" "/tmp/rand_2e$log"
  for travel in spool rows; do
    timeout 280 python3 -m bench.cluster_throughput --backend cuda --curve bls12381 --circuit "/tmp/rand_2e$log" \
      --workers "1,$n" --devices-per-worker --jobs "${CLUSTER_JOBS:-60}" --claims 0 \
      $([ $travel = spool ] && echo --shared-spool) --out "bench/results/cluster_cuda_bls12381_rand_2e${log}_$travel.md" \
      2>&1 | tee "$OUT/cluster_$travel.log" | grep -E "end to end|Error|error|wrote"
  done
}
keyprep() {
  timeout "${KEYPREP_TIMEOUT:-570}" python3 -m bench.key_prepare ${KEYPREP_SIZES:-24} --upload ${KEYPREP_ARGS:-} \
    --dir "${KEYPREP_DIR:-/tmp}" 2>&1 | tee "$OUT/keyprep.log" | tail -n 12
}
devsetup() {
  timeout "${DEVSETUP_TIMEOUT:-560}" python3 -m bench.dev_setup --sizes ${DEVSETUP_SIZES:-20 22 24} \
    --curves ${DEVSETUP_CURVES:-bls12381 bn128} 2>&1 | tee "$OUT/dev_setup.log" | tail -n 25
}
seed() {
  # the development setup's units (setup_fr/g1/g2) built by NVRTC on the dev box, where carried
  unpack_kernel_cache .anchors/kcache_setup.tar.xz
  timeout "${SEED_TIMEOUT:-570}" python3 -m bench.seed_scale --sizes ${SEED_SIZES:-24 26} --curve "${SEED_CURVE:-bls12381}" \
    --witness "${SEED_WITNESS:-circuit}" --jobs "${SEED_JOBS:-2}" --devices "${SEED_DEVICES:-1}" ${SEED_ARGS:-} 2>&1 \
    | tee "$OUT/seed_scale.log" | grep -vE "^\| [0-9]+ \|" | tail -n 40
}
streamed() {
  timeout "${STREAMED_TIMEOUT:-560}" python3 -m bench.streamed_keys --log "${STREAMED_LOG:-26}" --curve bls12381 \
    --budgets-gib ${STREAMED_BUDGETS:-0 16 8} --batches ${STREAMED_BATCHES:-1 2 5 10} \
    --partitions "${STREAMED_PARTITIONS:-10}" ${STREAMED_TAILS:+--tails $STREAMED_TAILS} ${STREAMED_ARGS:-} 2>&1 \
    | tee "$OUT/streamed.log" | tail -n 16
}
profile() {
  timeout "${PROFILE_TIMEOUT:-300}" python3 -m bench.streamed_profile --log "${PROFILE_LOG:-24}" \
    --budget-gib "${PROFILE_BUDGET:-5}" --batches ${PROFILE_BATCHES:-1 4} ${PROFILE_ARGS:-} 2>&1 | tee "$OUT/profile.log" | tail -n 14
}
nodeenv() {
  if [ ! -x .nodeenv/node ] && [ -f .snarkjs/node.xz ]; then
    mkdir -p .nodeenv
    python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('.snarkjs/node.xz'), open('.nodeenv/node','wb'))"
    chmod +x .nodeenv/node
    python3 -c "import tarfile; tarfile.open('.snarkjs/snarkjs-node_modules.tar.xz').extractall('.nodeenv')"
  fi
  if [ -x .nodeenv/node ]; then .nodeenv/node --version; fi
}
oneshot() {
  nodeenv
  local sj=()
  [ -x .nodeenv/node ] && sj=(--snarkjs ".nodeenv/node .nodeenv/node_modules/snarkjs/build/cli.cjs")
  timeout "${ONESHOT_TIMEOUT:-400}" python3 -m bench.oneshot_prove --backend cuda --sizes "${ONESHOT_SIZES:-bn128:15:30000,bls12381:15:30000,bn128:20,bls12381:20}" \
    --runs "${ONESHOT_RUNS:-2}" "${sj[@]}" --suffix "${ONESHOT_SUFFIX:-}" 2>&1 | tee "$OUT/oneshot.log" | tail -n 8
}
fixedbase() {
  timeout "${FIXED_TIMEOUT:-300}" python3 -m bench.gpu_msm_fixed_base ${FIXED_ARGS:-} 2>&1 | tee "$OUT/fixed_base.log" \
    | tail -n 30
}
g2points() {
  timeout "${G2POINTS_TIMEOUT:-400}" python3 -m bench.sppark_g2_points --binaries .anchors/shared .anchors ${G2POINTS_ARGS:-} \
    2>&1 | tee "$OUT/g2points.log" | tail -n 40
}
latency() {
  for i in $(seq "${LATENCY_PROCESSES:-3}"); do
    timeout "${LATENCY_TIMEOUT:-120}" python3 -m bench.ntt_latency ${LATENCY_ARGS:-} \
      --out "bench/results/ntt_latency${LATENCY_TAG:-}_p$i.md" 2>&1 | tee -a "$OUT/latency.log" | grep -E "^\| (bls|bn)"
  done
}
kernels() {
  timeout "${KERNELS_TIMEOUT:-300}" python3 -m bench.kernels_vs_sppark ${KERNELS_ARGS:-} 2>&1 | tee "$OUT/kernels.log" \
    | tail -n 30
}

# bench module $3.. in tree $2 with a time limit of $1 s: as a module here, by path in trees from
# before bench/ was a package
bench_in() {
  local limit=$1 dir=$2 mod=$3; shift 3
  if [ -f "$dir/bench/common.py" ]; then (cd "$dir" && timeout "$limit" python3 -m "bench.$mod" "$@")
  else (cd "$dir" && PYTHONPATH=${SITE:+$SITE:}$dir timeout "$limit" python3 "bench/$mod.py" "$@"); fi
}
ab() {
  mkdir -p /tmp/ab_before && tar -C /tmp/ab_before -xf .anchors/cuda_src_before.tar
  # the earlier tree's units built by NVRTC on the dev box (~10 s there a unit, 1-2 min here), where carried
  unpack_kernel_cache .anchors/kcache_before.tar.xz
  timeout "${AB_TIMEOUT:-300}" python3 -m bench.kernel_ab /tmp/ab_before/pipeline/cuda_src ${AB_ARGS:-} \
    --out bench/results/kernel_ab.md 2>&1 | tee "$OUT/kernel_ab.log" | tail -n 20
}
nttab() {
  timeout "${NTTAB_TIMEOUT:-200}" python3 -m bench.ntt_switch_ab ${NTTAB_ARGS:---attribute natural_kernel --values groups pairs} \
    --out bench/results/ntt_switch_ab.md 2>&1 | tee "$OUT/ntt_switch_ab.log" | tail -n 20
}
pipes() {
  # the probe's units built by NVRTC on the dev box (add_probe: ~1 min there), where carried
  unpack_kernel_cache .anchors/kcache_probe.tar.xz
  timeout "${PIPES_TIMEOUT:-180}" python3 -m bench.pipe_rates ${PIPES_ARGS:-} 2>&1 | tee "$OUT/pipe_rates.log" | tail -n 40
}
depntt() {
  local launch=pipeline/backends/cuda/launch.py
  sed -i 's/^NTT_DEPENDENT_BUILT = False$/NTT_DEPENDENT_BUILT = True/' $launch
  grep -q "^NTT_DEPENDENT_BUILT = True$" $launch || { echo "depntt: launch.py has no NTT_DEPENDENT_BUILT = False line"; rc=2; return; }
  unpack_kernel_cache .anchors/kcache_dep.tar.xz
  timeout "${DEPNTT_TIMEOUT:-240}" python3 -m bench.kernels_vs_sppark ${DEPNTT_ARGS:---g1 --g2 --ntt 19 22} \
    --out bench/results/kernels_vs_sppark_dependent.md 2>&1 | tee "$OUT/depntt.log" | tail -n 30
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -k dependent tests/gpu/test_ntt.py 2>&1 \
    | tee "$OUT/depntt_tests.log" | tail -n 4
  sed -i 's/^NTT_DEPENDENT_BUILT = True$/NTT_DEPENDENT_BUILT = False/' $launch
}
seam() {
  local n counts=1 version dir log
  n=$(nvidia-smi -L | wc -l); [ "$n" -gt 1 ] && counts="1,$n"
  mkdir -p /tmp/before && tar -C /tmp/before -xf .anchors/before.tar
  for log in 14 20; do python3 -m bench.random_circuit bls12381 $log /tmp/rand$log >/dev/null; done
  for version in after before; do
    dir=$PWD; [ $version = before ] && dir=/tmp/before
    bench_in 200 "$dir" engine_throughput --backend cuda --curve bls12381 --circuit /tmp/rand14 \
      --partitions 4 --jobs 10 --jobs-in-flight 5 --gpu-workers 1,2 --device-counts "$counts" \
      --out "$OUT/engine_${version}_2e14.md" 2>&1 | grep -E "^dev=|Error" | sed "s/^/$version 2^14 /"
    bench_in 200 "$dir" engine_throughput --backend cuda --curve bls12381 --circuit /tmp/rand20 \
      --partitions 4 --jobs 4 --jobs-in-flight 3 --gpu-workers 2 --device-counts "$counts" \
      --out "$OUT/engine_${version}_2e20.md" 2>&1 | grep -E "^dev=|Error" | sed "s/^/$version 2^20 /"
    bench_in 240 "$dir" gpu_stage 14 20 24 2>&1 | tail -n 8 | tee "$OUT/gpu_stage_$version.txt"
  done
  [ -x .anchors/bench_bls12381 ] && .anchors/bench_bls12381 20 24 24 24 2>&1 | tee "$OUT/sppark_bls.txt" | tail -n 12
}

for section in ${@:-tests demo prove stage msm engine server}; do
  case $section in
    tests|demo|prove|ntt|msm|overlap|stage|memory|blocks|build|engine|scaling|server|cluster|seam|ab|nttab|latency|devsetup|seed|streamed|keyprep|profile|nodeenv|oneshot|kernels|depntt|fixedbase|g2points|pipes)
      echo "== $section"; $section ;;
    *) echo "bench/device.sh: unknown section '$section'" >&2; rc=2 ;;
  esac
done
# One archive per run of this script (a call brings back at most 8 files); a second run in the same
# call writes results-2.tar, not over the first one's.
archive=$OUT/results.tar n=1
while [ -e "$archive" ]; do n=$((n + 1)); archive=$OUT/results-$n.tar; done
find bench/results -type f -newer "$started" -print0 | tar -cf "$archive" --null -T -
[ -f "$OUT/pytest.log" ] && grep -E "passed|failed|error" "$OUT/pytest.log" | tail -n 3
exit $rc
