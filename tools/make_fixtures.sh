#!/usr/bin/env bash
# make_fixtures.sh — build Groth16 test fixtures with circom2 + snarkjs (versions pinned in package.json).
#
#   tools/make_fixtures.sh OUTDIR CURVE ITEM...      build OUTDIR/CURVE/ITEM/ for each ITEM
#       CURVE  bn128 | bls12381
#       ITEM   multiplier | poseidon2 | bits | chain_2eP (P >= 5: 2^P - 16 constraints)
#   tools/make_fixtures.sh --verify VK PUBLIC PROOF  exit 0 iff snarkjs accepts AND len(PUBLIC) == VK.nPublic
#   tools/make_fixtures.sh --prove ZKEY WTNS PROOF PUBLIC   snarkjs groth16 prove
#
# Circuits and inputs: tools/circuits/<name>.circom and <name>.input.json (chain_2eP: chain.*).
# Env: PTAU_DIR   prepared phase-2 ptau files named <curve>_<power>.ptau (default /work/shared/ptau);
#                 the smallest available power >= the circuit's domain power is used
#      PTAU_POWER force this ptau power
# The zkey contribution is a fixed beacon, so r1cs/wasm/zkey/vk/wtns are reproducible;
# proof.json is not (snarkjs draws r, s at random).
# Per fixture: circuit.{circom,r1cs,wasm} [chain.circom] input.json witness.wtns circuit_final.zkey vk.json
#   proof.json public.json (snarkjs's proof) proof_bad.json public_bad.json (both rejected) meta.json
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CIRCUITS=$ROOT/tools/circuits
ZKEY_BEACON=0b3c5d7e9f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f3a5b7c9d1e3f5a7b9c
die() { echo "make_fixtures: $*" >&2; exit 1; }
[ $# -ge 1 ] || { sed -n '2,17p' "$0"; exit 2; }

if [ ! -x "$ROOT/node_modules/.bin/snarkjs" ] || [ ! -x "$ROOT/node_modules/.bin/circom2" ] \
   || [ ! -d "$ROOT/node_modules/circomlib/circuits" ]; then
  (cd "$ROOT" && npm ci --no-audit --no-fund >&2)
fi
SNARKJS=$ROOT/node_modules/.bin/snarkjs
CIRCOM=$ROOT/node_modules/.bin/circom2

case "$1" in
  --verify)
    [ $# -eq 4 ] || die "usage: --verify VK PUBLIC PROOF"
    node -e 'const f=require("fs"); const [vk,pub]=process.argv.slice(1).map(x=>JSON.parse(f.readFileSync(x)));
      if (!Array.isArray(pub) || pub.length !== vk.nPublic) {
        console.error(`public has ${pub && pub.length} entries, vk.nPublic=${vk.nPublic}`); process.exit(1); }' "$2" "$3"
    exec "$SNARKJS" groth16 verify "$2" "$3" "$4";;
  --prove)
    [ $# -eq 5 ] || die "usage: --prove ZKEY WTNS PROOF PUBLIC"
    exec "$SNARKJS" groth16 prove "$2" "$3" "$4" "$5";;
esac

[ $# -ge 3 ] || die "usage: OUTDIR CURVE ITEM..."
OUTDIR=$1 CURVE=$2; shift 2
case "$CURVE" in bn128|bls12381) ;; *) die "CURVE must be bn128 or bls12381";; esac
mkdir -p "$OUTDIR"; OUTDIR=$(cd "$OUTDIR" && pwd)
PTAU_DIR=${PTAU_DIR:-/work/shared/ptau}
export NODE_OPTIONS=${NODE_OPTIONS:---max-old-space-size=8192}
VERSIONS=$(cd "$ROOT" && node -e 'const v=p=>require(`./node_modules/${p}/package.json`).version;
  console.log(JSON.stringify({snarkjs:v("snarkjs"), circom2_npm:v("circom2"), circomlib:v("circomlib")}))')
CIRCOM_VER=$("$CIRCOM" --version | sed -n 's/^circom compiler //p')
# scratch dir below the repo root: circom2 (WASI) only finds includes below its cwd
mkdir -p "$ROOT/node_modules/.cache"; TMP=$(mktemp -d "$ROOT/node_modules/.cache/make_fixtures.XXXXXX"); trap 'rm -rf "$TMP"' EXIT
run() { "$@" >>"$TMP/log" 2>&1 || { tail -20 "$TMP/log" >&2; die "failed: $*"; }; }
now() { date +%s.%N; }

for item in "$@"; do
  D=$OUTDIR/$CURVE/$item; B=$TMP/$item
  rm -rf "$D"; mkdir -p "$D" "$B"; : >"$TMP/log"
  # 1. sources: circuit.circom (+ local template) and input.json
  case "$item" in
    multiplier|poseidon2|bits) cp "$CIRCUITS/$item.circom" "$D/circuit.circom"; cp "$CIRCUITS/$item.input.json" "$D/input.json";;
    chain_2e*)
      P=${item#chain_2e}; [[ $P =~ ^[0-9]+$ && $P -ge 5 ]] || die "bad item $item"
      N=$(( (1 << (P - 1)) - 8 ))
      cp "$CIRCUITS/chain.circom" "$CIRCUITS/chain.input.json" "$D/"; mv "$D/chain.input.json" "$D/input.json"
      printf 'pragma circom 2.0.0;\ninclude "chain.circom";\n// %d iterations -> 2^%d - 16 = %d constraints\ncomponent main {public [x0, k]} = Chain(%d);\n' \
        "$N" "$P" "$((2 * N))" "$N" >"$D/circuit.circom";;
    *) die "unknown item $item";;
  esac
  # 2. compile a copy in the scratch dir (circom2 is a WASI build: includes must lie below its cwd)
  cp "$D"/*.circom "$B/"
  (cd "$ROOT" && run "$CIRCOM" "${B#$ROOT/}/circuit.circom" --r1cs --wasm --sym --O1 --prime "$CURVE" -o "${B#$ROOT/}" -l node_modules)
  cp "$B/circuit.r1cs" "$B/circuit.sym" "$D/"; cp "$B/circuit_js/circuit.wasm" "$D/"
  INFO=$("$SNARKJS" r1cs info "$D/circuit.r1cs" | sed 's/\x1b\[[0-9;]*m//g')
  field() { echo "$INFO" | sed -n "s/.*# of $1: //p"; }
  NCONS=$(field Constraints) NVARS=$(field Wires) NPUB=$(( $(field 'Public Inputs') + $(field Outputs) ))
  POW=0; while [ $(( 1 << POW )) -lt $(( NCONS + NPUB + 1 )) ]; do POW=$((POW + 1)); done
  # 3. ptau: smallest available power >= POW (or PTAU_POWER)
  PP=${PTAU_POWER:-}
  if [ -z "$PP" ]; then
    for f in "$PTAU_DIR/${CURVE}"_*.ptau; do
      p=${f##*_}; p=${p%.ptau}; [ -f "$f" ] && [ "$p" -ge $POW ] && { [ -z "$PP" ] || [ "$p" -lt "$PP" ]; } && PP=$p
    done
  fi
  PTAU=$PTAU_DIR/${CURVE}_${PP}.ptau
  [ -n "$PP" ] && [ -f "$PTAU" ] && [ "$PP" -ge $POW ] || die "$item needs a ${CURVE} ptau of power >= $POW in $PTAU_DIR"
  # 4. setup with a deterministic beacon contribution, vk, witness
  run "$SNARKJS" groth16 setup "$D/circuit.r1cs" "$PTAU" "$B/c0.zkey"
  run "$SNARKJS" zkey beacon "$B/c0.zkey" "$D/circuit_final.zkey" "$ZKEY_BEACON" 10 -n="zkpipe fixture beacon"
  run "$SNARKJS" zkey export verificationkey "$D/circuit_final.zkey" "$D/vk.json"
  run "$SNARKJS" wtns calculate "$D/circuit.wasm" "$D/input.json" "$D/witness.wtns"
  run "$SNARKJS" wtns check "$D/circuit.r1cs" "$D/witness.wtns"
  # 5. snarkjs proof, verified; tampered copies must be rejected
  t0=$(now); run "$SNARKJS" groth16 prove "$D/circuit_final.zkey" "$D/witness.wtns" "$D/proof.json" "$D/public.json"; t1=$(now)
  run "$0" --verify "$D/vk.json" "$D/public.json" "$D/proof.json"
  node -e 'const f=require("fs"), d=process.argv[1], rd=n=>JSON.parse(f.readFileSync(`${d}/${n}`));
    const pub=rd("public.json"); pub[0]=(BigInt(pub[0])+1n).toString();
    f.writeFileSync(`${d}/public_bad.json`, JSON.stringify(pub, null, 1));
    const pr=rd("proof.json"); pr.pi_a=pr.pi_c;
    f.writeFileSync(`${d}/proof_bad.json`, JSON.stringify(pr, null, 1));' "$D"
  ! "$0" --verify "$D/vk.json" "$D/public_bad.json" "$D/proof.json" >/dev/null 2>&1 || die "$item: public_bad accepted"
  ! "$0" --verify "$D/vk.json" "$D/public.json" "$D/proof_bad.json" >/dev/null 2>&1 || die "$item: proof_bad accepted"
  # 6. known answers
  OUT0=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1]))[0])' "$D/public.json")
  case "$item" in
    multiplier) [ "$OUT0" = 33 ] || die "multiplier: out $OUT0 != 33";;
    poseidon2) [ "$CURVE" != bn128 ] || [ "$OUT0" = 7853200120776062878684798364095072458815029376092732009249414926327459813530 ] \
                 || die "poseidon2: out != Poseidon([1,2])";;
    bits) [ "$(tr -d ' \n' <"$D/public.json")" = '["1","0","17000000000000000000"]' ] || die "bits: public $(cat "$D/public.json")";;
  esac
  # 7. meta.json
  node -e 'const f=require("fs"); const [d,curve,circuit,nc,nv,pow,ptau,pp,cv,beacon,versions]=process.argv.slice(1);
    const vk=JSON.parse(f.readFileSync(`${d}/vk.json`));
    f.writeFileSync(`${d}/meta.json`, JSON.stringify({curve, circuit, constraints:+nc, nVars:+nv, nPublic:vk.nPublic,
      domain_power:+pow, ptau, ptau_power:+pp, zkey_beacon:beacon+"/10", tools:{...JSON.parse(versions), circom:cv}}, null, 1)+"\n");' \
    "$D" "$CURVE" "$item" "$NCONS" "$NVARS" "$POW" "$(basename "$PTAU")" "$PP" "$CIRCOM_VER" "$ZKEY_BEACON" "$VERSIONS"
  printf '[ok] %s %-12s constraints=%-6s nVars=%-6s nPublic=%s domain=2^%s ptau=2^%s prove=%.2fs\n' \
    "$CURVE" "$item" "$NCONS" "$NVARS" "$NPUB" "$POW" "$PP" "$(echo "$t1 - $t0" | bc)"
done
