pragma circom 2.0.0;
// c = a * b ; private a, b ; public output c  (1 constraint)
template Multiplier() {
    signal input a;
    signal input b;
    signal output c;
    c <== a * b;
}
component main = Multiplier();
