"""``python3 -m bench.plots [--out DIR]``: every plot of bench/results/, from its tables (see __init__)."""
from bench.plots import main

main()
