// Verify many Groth16 proofs with snarkjs in one node process (one curve build, not one per proof).
//   node tools/snarkjs_verify_many.mjs ITEMS.json
// ITEMS.json: [{"vk": "path/to/vk.json", "public": [...], "proof": {...}}, ...]
// Prints one line per item ("ok" / "REJECTED" / "BAD public length"); exit 0 iff every item is accepted
// and has vk.nPublic public signals (the rule of tools/make_fixtures.sh --verify).
import * as snarkjs from "snarkjs";
import fs from "fs";

const items = JSON.parse(fs.readFileSync(process.argv[2]));
const vks = new Map();
const quiet = { info() {}, debug() {}, warn() {}, error() {} };
let bad = 0;
for (const item of items) {
  if (!vks.has(item.vk)) vks.set(item.vk, JSON.parse(fs.readFileSync(item.vk)));
  const vk = vks.get(item.vk);
  let verdict = "ok";
  if (!Array.isArray(item.public) || item.public.length !== vk.nPublic) verdict = "BAD public length";
  else if (!(await snarkjs.groth16.verify(vk, item.public, item.proof, quiet))) verdict = "REJECTED";
  if (verdict !== "ok") bad++;
  console.log(verdict);
}
process.exit(bad === 0 && items.length > 0 ? 0 : 1);
