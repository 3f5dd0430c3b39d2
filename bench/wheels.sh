#!/usr/bin/env bash
# The cp312 wheels a device call carries (the GPU host has numpy, aiohttp, uvloop, pytest, cupy and
# cuda-bindings; no network), each set in a folder .gitignore lists and bench/device.sh installs:
#   .whl-min   prove / serve in a one-shot call (bench.oneshot_prove): orjson, prometheus_client, tqdm, xxhash
#   .whl-lite  + the verifier (py_ecc on toolz; no cytoolz or pydantic, which eth-utils does not need to
#              import) and pytest-asyncio: the GPU suite and every bench that verifies its proofs
#   .whl-pg    + asyncpg and pgserver for `device.sh cluster` (only pgserver's PostgreSQL binaries are used:
#              its Python dependencies are not needed)
# The tree, .snarkjs (51 MB) and what a call carries must stay under 64 MiB: .whl-min or .whl-lite
# beside .snarkjs, never .whl-pg.
#   bash bench/wheels.sh [min lite pg]        (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
get() {  # folder, requirements...
  local dir=$1; shift
  mkdir -p "$dir"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    -d "$dir" "$@"
}
MIN=(orjson prometheus_client tqdm xxhash)
LITE=("${MIN[@]}" py_ecc eth_hash eth_typing eth_utils toolz typing_extensions pytest-asyncio pytest pluggy
      iniconfig packaging)
for set in ${@:-min lite pg}; do
  case $set in
    min) get .whl-min "${MIN[@]}" ;;
    lite) get .whl-lite "${LITE[@]}" ;;
    pg) get .whl-pg "${LITE[@]}" asyncpg pgserver ;;
    *) echo "bench/wheels.sh: unknown set '$set' (min, lite, pg)" >&2; exit 2 ;;
  esac
  du -sh ".whl-$set"
done
