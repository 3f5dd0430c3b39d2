pragma circom 2.0.0;
include "circomlib/circuits/poseidon.circom";
// out = Poseidon([a, b]) with circomlib's constants (BN254 constants, also when compiled for bls12381).
// public input a ; private input b ; public output out
template PoseidonHash2() {
    signal input a;
    signal input b;
    signal output out;
    component h = Poseidon(2);
    h.inputs[0] <== a;
    h.inputs[1] <== b;
    out <== h.out;
}
component main {public [a]} = PoseidonHash2();
