"""Plots of the committed benchmark results (matplotlib), regenerated from the tables in bench/results/.

    python3 -m bench.plots                 # every plot, into bench/results/
    python3 -m bench.plots --out DIR       # elsewhere

- kernels.py: MSM and NTT time against size, per curve and group, sppark beside ours where a
  table has it (``msm_time_vs_size.png``, ``ntt_time_vs_size.png``);
- engine.py: engine throughput against jobs in flight and GPU workers, one plot per engine table
  (``<table>.throughput.png``);
- timeline.py: stage timelines, one row per worker (``<table>.timeline.png``) from a run's
  ``.timeline.json`` (bench/engine_throughput.py writes it) or, for older runs, its ``.timeline.svg``.

Everything is read from the markdown tables (tables.py) and timeline files; nothing is measured here.
"""
