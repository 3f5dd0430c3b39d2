#!/usr/bin/env bash
# verify_device_proofs.sh — check with snarkjs the proofs `bench/device.sh prove` brought back.
#
#   tools/verify_device_proofs.sh PROOFS_DIR [CIRCUITS_DIR=.extra]
#
# PROOFS_DIR holds <name>-proof.json and <name>-public.json (proofs.tar unpacked); CIRCUITS_DIR/<name>/vk.json
# is each circuit's verification key. Each proof must be accepted, and rejected once its first public
# signal is changed (a check that the verifier reads the proof at all). Prints a markdown table; exit 1
# if any row is not as it must be.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { sed -n '2,10p' "$0"; exit 2; }
PROOFS=$1 CIRCUITS=${2:-$ROOT/.extra}
verify() { "$ROOT/tools/make_fixtures.sh" --verify "$@" >/dev/null 2>&1; }

echo "| circuit | snarkjs groth16 verify | first public signal + 1 |"
echo "|---|---|---|"
bad=0 n=0
for proof in "$PROOFS"/*-proof.json; do
  [ -e "$proof" ] || break
  name=$(basename "$proof" -proof.json) public=$PROOFS/$name-public.json vk=$CIRCUITS/$name/vk.json
  tampered=$(mktemp --suffix=.json)
  node -e 'const f=require("fs"); const p=JSON.parse(f.readFileSync(process.argv[1]));
    p[0]=(BigInt(p[0])+1n).toString(); f.writeFileSync(process.argv[2], JSON.stringify(p));' "$public" "$tampered"
  if verify "$vk" "$public" "$proof"; then ok=accepted; else ok=REJECTED; bad=1; fi
  if verify "$vk" "$tampered" "$proof"; then changed=ACCEPTED; bad=1; else changed=rejected; fi
  rm -f "$tampered"
  echo "| $name | $ok | $changed |"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "verify_device_proofs: no *-proof.json in $PROOFS" >&2; exit 1; }
exit $bad
