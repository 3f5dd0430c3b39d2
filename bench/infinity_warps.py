"""What a key's points at infinity cost level 0 of the bucket sums, warp by warp, on the seed-shaped generator.

Level 0 (pippenger.cuh, ``accumulate_items``) gives each item (a thread; a pair of lanes for G2) ``chunk``
consecutive entries of a list, and a warp's items are consecutive chunks. An entry whose point is infinity adds
nothing, but what the warp pays for it depends on the loop:

- before (main): one entry a lane a turn, the addition inside the turn. A turn costs an addition where any lane
  of the warp has a finite point, so a warp pays its chunk in additions unless whole turns are infinity.
- skip (commit a48acda): each lane passes over infinity entries before its addition, so a turn is one addition a
  lane and a warp pays its busiest lane's finite count.
- strided: the skip with a warp's entries dealt to its lanes in turn (entry base + turn x lanes + lane) instead
  of in chunks, which evens runs of infinity across the lanes. Only for a list of one bucket (the ones' sums):
  in a bucketed list a lane's pieces must stay contiguous. Not built; counted to see what it would add.
- grouped: main's loop (no skip) over the ones' sum of a key whose private wires were put in order of the class
  of their points (finite in A, in B) once, at load, with the witness permuted to match: a run of infinity
  entries then fills whole warps, whose turns cost no addition. Not built; counted to see what it would add.

Columns are additions a warp over its chunk (1.0: every entry costs one), means over the list's whole warps.
The lists: each section's ones' sum (the 0/1 split's ones in ascending wire order, as the device compacts them)
and one window of its tail MSM (the other values in bucket order, as the digit sort leaves them), with the
chunk the engine plans at the target size (``level0_chunk``); the pattern of infinity points comes from the
generator at a smaller size (its wires' pattern repeats: 2^20 and 2^22 agree within 0.003). "random" deals the same
finite share at random places (bench.kernel_ab --infinity's rows). Nothing here runs on a GPU: it predicts the
skip's share of a seed stage's ones' sums and tails, to be set beside what the GPU measures.

    python3 -m bench.infinity_warps --log 26 --pattern-log 22
"""
from __future__ import annotations

import numpy as np

from bench.common import arg_parser, markdown_table, write_result
from bench.stage_floor import SECTIONS, section_masks

WARP = 32
SECTION_NAMES = {"a": "A", "b": "B", "c": "C (L)"}


def warp_turns(finite: np.ndarray, chunk: int, items: int) -> tuple[float, float, float]:
    """(before, skip, strided): mean additions a warp over ``chunk`` for the list whose entries' points are finite
    where ``finite`` is true, each of a warp's ``items`` items taking ``chunk`` consecutive entries (strided: the
    warp's entries dealt in turn). The list's last partial warp is left out."""
    whole = len(finite) // (chunk * items) * chunk * items
    if whole == 0:
        raise ValueError(f"a list of {len(finite)} entries fills no warp of {items} x {chunk} entries")
    lanes = finite[:whole].reshape(-1, items, chunk)  # warp, item, turn
    before = lanes.any(axis=1).sum(axis=1).mean()
    skip = lanes.sum(axis=2).max(axis=1).mean()
    dealt = finite[:whole].reshape(-1, chunk, items)  # warp, turn, item: entry = base + turn x items + item
    strided = dealt.sum(axis=1).max(axis=1).mean()
    return before / chunk, skip / chunk, strided / chunk


def grouped_order(finite: dict[str, np.ndarray], first_private: int) -> np.ndarray:
    """The wires with the private ones (from ``first_private``) in order of their A and B points' class (both
    finite, A only, B only, neither), by wire within a class: the public prefix stays where C's MSM expects it."""
    private = np.arange(first_private, len(finite["a"]))
    key = 2 * ~finite["a"][private] + ~finite["b"][private]
    return np.concatenate([np.arange(first_private), private[np.argsort(key, kind="stable")]])


def tail_order(others: np.ndarray, c: int, rng: np.random.Generator) -> np.ndarray:
    """The other values' wires in one window's bucket order: a random signed digit a wire (a random scalar's
    window), zero digits out, stable by wire within a bucket (the digit sort's order)."""
    wires = np.flatnonzero(others)
    digits = rng.integers(-(1 << (c - 1)), (1 << (c - 1)) + 1, size=len(wires))
    keep = digits != 0
    return wires[keep][np.argsort(np.abs(digits[keep]), kind="stable")]


def rows_for(log_n: int, pattern_log: int, bit_share: float, one_share: float, seed: int = 0) -> list[list]:
    from pipeline.backends.cuda.launch import G2_FIELD
    from pipeline.backends.cuda.msm import level0_chunk, plan_msm

    from bench.seed_scale import N_PUBLIC

    ones, others, finite = section_masks(pattern_log, bit_share, one_share)
    grouped = grouped_order(finite, N_PUBLIC + 1)
    rng = np.random.default_rng(seed)
    scale = 1 << (log_n - pattern_log)
    n_ones, n_others = int(ones.sum()) * scale, int(others.sum()) * scale  # at the target size
    tail_plan = plan_msm(n_others, 255)
    lists = {"ones": (np.flatnonzero(ones), n_ones),
             "tail": (tail_order(others, tail_plan.c, rng), n_others * tail_plan.n_windows)}  # the bound the engine plans by
    groups = (("G1", WARP), ("G2", WARP // (2 if G2_FIELD == "fq2_pair_t" else 1)))
    rows = []
    for s in SECTIONS:
        for what, (order, entries) in lists.items():
            fin = finite[s][order]
            for group, items in groups:
                if group == "G2" and s != "b":
                    continue  # only B has a G2 section
                chunk = level0_chunk(entries, g2=group == "G2")
                before, skip, strided = warp_turns(fin, chunk, items)
                _, random_skip, _ = warp_turns(rng.permutation(fin), chunk, items)
                by_class = "-"
                if what == "ones":
                    by_class = f"{warp_turns(finite[s][grouped[ones[grouped]]], chunk, items)[0]:.3f}"
                rows.append([f"{SECTION_NAMES[s]} {what}", group, f"{fin.mean():.3f}", chunk, items,
                             f"{before:.3f}", f"**{skip:.3f}**", f"{strided:.3f}" if what == "ones" else "-",
                             by_class, f"{random_skip:.3f}"])
    return rows


def main() -> None:
    p = arg_parser(__doc__)
    p.add_argument("--log", type=int, default=26, help="log2 of the partition whose chunks are planned")
    p.add_argument("--pattern-log", type=int, default=22, help="log2 of the generated circuit the pattern is read from")
    p.add_argument("--bit-share", type=float, default=0.95, help="witness values in {0, 1}")
    p.add_argument("--one-share", type=float, default=0.5, help="of those, the ones")
    p.add_argument("--out", default="bench/results/infinity_warps.md")
    args = p.parse_args()
    if args.pattern_log > args.log:
        p.error("--pattern-log must not exceed --log")
    rows = rows_for(args.log, args.pattern_log, args.bit_share, args.one_share)
    text = "\n".join([
        f"# Level 0's additions a warp with a key's infinity points (BLS12-381, 2^{args.log} partition)", "",
        f"Chunks as planned at 2^{args.log}; the infinity pattern from the seed-shaped generator at "
        f"2^{args.pattern_log}, witness {args.bit_share:.0%} in {{0, 1}}, {args.one_share:.0%} of those ones. "
        "Additions a warp over its chunk (1.0: every entry costs one); the columns: the docstring of "
        "bench/infinity_warps.py.", "",
        markdown_table(["list", "group", "finite share", "chunk", "items a warp", "before", "skip", "strided",
                        "grouped", "skip, random places"], rows), ""])
    write_result(args.out, text)


if __name__ == "__main__":
    main()
