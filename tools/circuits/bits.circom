pragma circom 2.0.0;
include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/comparators.circom";
// Bit-heavy circuit: almost every witness value is 0 or 1.
// Range-checks x[0..2] (private) and bound (public) to 64 bits with Num2Bits(64),
// then compares them with LessThan(64) (each one a Num2Bits(65) inside).
// public outputs: sorted = (x0 < x1 < x2), below = (x2 < bound)
template Bits() {
    signal input x[3];
    signal input bound;
    signal output sorted;
    signal output below;

    component rc[4];
    for (var i = 0; i < 4; i++) rc[i] = Num2Bits(64);
    for (var i = 0; i < 3; i++) rc[i].in <== x[i];
    rc[3].in <== bound;

    component lt[3];
    for (var i = 0; i < 3; i++) lt[i] = LessThan(64);
    lt[0].in[0] <== x[0];  lt[0].in[1] <== x[1];
    lt[1].in[0] <== x[1];  lt[1].in[1] <== x[2];
    lt[2].in[0] <== x[2];  lt[2].in[1] <== bound;
    sorted <== lt[0].out * lt[1].out;
    below <== lt[2].out;
}
component main {public [bound]} = Bits();
