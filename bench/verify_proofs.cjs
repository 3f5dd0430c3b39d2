// Verify many Groth16 proofs in one node process (bench/soak_server.py): stdin is JSON [{vk, public, proof}],
// stdout one true/false per line. argv[2]: the snarkjs package folder.
const snarkjs = require(process.argv[2]);
(async () => {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const items = JSON.parse(Buffer.concat(chunks).toString());
  for (const it of items) {
    const ok = await snarkjs.groth16.verify(it.vk, it.public, it.proof, { info() {}, debug() {}, warn() {}, error() {} });
    process.stdout.write((ok ? "true" : "false") + "\n");
  }
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(2); });
