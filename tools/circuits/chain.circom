pragma circom 2.0.0;
// N iterations of x[i+1] = x[i]^2 + k*x[i] + c  (2 constraints per iteration).
// Template only: make_fixtures.sh writes the main component for chain_2eP
// with N = 2^(P-1) - 8, i.e. 2^P - 16 constraints.
// public inputs x0, k ; private input c ; public output out = x[N]
template Chain(N) {
    signal input x0;
    signal input k;
    signal input c;
    signal output out;
    signal x[N+1];
    signal sq[N];
    x[0] <== x0;
    for (var i = 0; i < N; i++) {
        sq[i] <== x[i] * x[i];
        x[i+1] <== sq[i] + x[i] * k + c;
    }
    out <== x[N];
}
