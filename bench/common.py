"""What every benchmark shares: where results go, the table at the end, the arguments naming
sizes and curves, timers, and random device data.

Scripts run as modules from the repository root (``python3 -m bench.gpu_msm 16 24``), so
``pipeline`` is imported from the checkout without any path setup.

Points for timing are random field elements, not curve points: the kernels' cost does not
depend on where the coordinates come from (Montgomery arithmetic is data-independent, and the
special cases P = Q never occur), while making 2^24 real points would take hours in Python.
"""
from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import time
from pathlib import Path
from typing import Callable

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
FIXTURES = REPO / "tests" / "fixtures"
CURVE_NAMES = ("bn128", "bls12381")


def result_path(name: str) -> Path:
    """``bench/results/<name>`` (the folder made if missing)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    return RESULTS / name


def free_port() -> int:
    """A loopback TCP port nothing listens on now, for a child ``zkpipe serve``."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def wait_answering(url: str, proc: subprocess.Popen, timeout_s: float, log: Callable[[], str] = lambda: "",
                         any_status: bool = False) -> None:
    """Return once the ``zkpipe serve`` child ``proc`` answers GET ``url``/healthz: with 200, or with any status
    where ``any_status`` (a full disk's 503 is an answer too). Raise RuntimeError, with ``log()`` (the end of the
    child's log), when it exits first or ``timeout_s`` passes."""
    import aiohttp  # only the benches that start a server need it

    deadline = time.monotonic() + timeout_s
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"zkpipe serve exited with status {proc.returncode}: {log()}")
            try:
                async with session.get(f"{url}/healthz") as resp:
                    await resp.read()
                    if resp.status == 200 or any_status:
                        return
            except (aiohttp.ClientError, asyncio.TimeoutError):
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"zkpipe serve did not answer {url}/healthz in {timeout_s:.0f} s: {log()}")


def placement_label(key_status: dict, device: str = "0") -> str:
    """A key's placement on ``device`` from the engine's status (``status()["keys"]["keys"][key_id]``), with
    its fixed-base tables and their bucket sets where more than one, the tables refused for room and the order
    the sections were offered tables in: "resident, tables of b2+h+a+b1+c", "resident, tables of h (2 sets)
    (refused for room: ...; offered h b2 a b1 c)"."""
    layout = key_status["layout"].get(device, {})
    tables = layout.get("fixed_base_sections") or []
    sets = layout.get("fixed_base_sets") or [1] * len(tables)
    mode = key_status["placement"].get(device, "?")
    names = [t if n == 1 else f"{t} ({n} sets)" for t, n in zip(tables, sets)]
    refused = layout.get("fixed_base_refused") or []
    order = " ".join(layout.get("fixed_base_order") or [])
    note = f" (refused for room: {'; '.join(refused)}; offered {order})" if refused else ""  # refusals come with it
    return mode + (f", tables of {'+'.join(names)}" if names else "") + note


def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_result(path: Path | str | None, text: str, show: str | None = None) -> None:
    """The ending every benchmark shares: write ``text`` to ``path`` (none: nothing written) and
    print ``show`` (default: the text itself)."""
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(text if show is None else show, flush=True)


def arg_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser whose help is the script's docstring, kept as written. Every benchmark starts here,
    so this is also where its progress bars are turned on (drawn only on a terminal)."""
    from pipeline import progress

    progress.enable()
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def int_list(text: str) -> list[int]:
    """An argument type: ``"1,2,5"`` -> ``[1, 2, 5]``."""
    return [int(x) for x in text.split(",")]


def add_log_sizes(parser: argparse.ArgumentParser, default: list[int], help: str = "log2 sizes") -> None:
    """Positional ``LOG_SIZES...`` (ints; none given: ``default``)."""
    parser.add_argument("log_sizes", type=int, nargs="*", default=default, metavar="LOG_SIZE",
                        help=f"{help} (default: {' '.join(map(str, default))})")


def curve_name(text: str) -> str:
    """An argument type: a curve name or alias ``curve_by_name`` knows (argparse reports others)."""
    from pipeline.curves import curve_by_name

    curve_by_name(text)
    return text


def add_curves(parser: argparse.ArgumentParser, default: tuple[str, ...] = CURVE_NAMES) -> None:
    """``--curves NAME...``: names or aliases of the curves the project proves on."""
    parser.add_argument("--curves", nargs="+", type=curve_name, default=list(default))


def add_fixture_dirs(parser: argparse.ArgumentParser) -> None:
    """Positional ``FIXTURE_DIR...``: folders of a committed or generated fixture."""
    parser.add_argument("fixtures", nargs="*", metavar="FIXTURE_DIR")


def fixture_dirs(names: list[str], circuit: str, curves: tuple[str, ...] = CURVE_NAMES) -> list[Path]:
    """The folders given on the command line, or else the committed fixture ``circuit`` of each
    curve, in the order of ``curves`` (``circuit`` may be a glob such as ``chain_2e*``)."""
    if names:
        return [Path(n) for n in names]
    return [d for c in curves for d in sorted((FIXTURES / c).glob(circuit))]


class Stopwatch:
    """``with Stopwatch() as t: ...`` then ``t.ms`` / ``t.s``: wall clock of the block."""

    def __enter__(self) -> "Stopwatch":
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.s = time.perf_counter() - self._t0
        self.ms = self.s * 1e3


def median_ms(fn: Callable[[], object], repeat: int, warmup: int = 0) -> float:
    """Median wall-clock ms of ``fn()`` over ``repeat`` calls, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        with Stopwatch() as t:
            fn()
        samples.append(t.ms)
    return statistics.median(samples)


def best_of_s(repeat: int, fn: Callable[[], object]) -> float:
    """Fastest wall-clock seconds of ``fn()`` over ``repeat`` calls."""
    best = float("inf")
    for _ in range(repeat):
        with Stopwatch() as t:
            fn()
        best = min(best, t.s)
    return best


def time_ms(stream, fn: Callable[[], object], warmup: int = 1, repeat: int = 5,
            ahead: Callable[[], object] | None = None) -> float:
    """Median over ``repeat`` runs of ``fn()`` between CUDA events on ``stream`` (after warm-up). ``ahead``: work
    queued before the first event each run, so that the GPU is still busy with it while the host queues ``fn()``'s
    launches: the events then time ``fn()``'s work on the device alone."""
    from pipeline.backends.cuda.streams import Event  # CUDA only where a GPU benchmark runs

    for _ in range(warmup):
        fn()
    stream.synchronize()
    times = []
    for _ in range(repeat):
        with Event() as start, Event() as end:
            if ahead is not None:
                ahead()
            start.record(stream)
            fn()
            end.record(stream)
            end.synchronize()
            times.append(end.elapsed_ms(start))
    return statistics.median(times)


def warm(stream, fn: Callable[[], object], seconds: float = 0.1) -> None:
    """Run ``fn()`` over and over for ``seconds`` of wall time (synchronised every few calls): a row timed right
    after the GPU idled (a harness call, a new curve's setup) ran its first sub-millisecond transforms 2-10% behind
    the same ones timed later in the call (sessions 44-45), where a timing's one warm-up call is far too short for
    the clocks to come back up."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(8):
            fn()
        stream.synchronize()


def alternating_rounds(count: int, rounds: int, time_one: Callable[[int], float]) -> list[list[float]]:
    """Per round, ``time_one(i)`` of each of ``count`` settings (in index order), timed in an order that rotates
    from round to round (0, 1, ..., then 1, 2, ..., 0): an A/B in one process whose ratios do not carry which
    setting ran first."""
    per_round = []
    for r in range(rounds):
        times = [0.0] * count
        for i in ((j + r) % count for j in range(count)):
            times[i] = time_one(i)
        per_round.append(times)
    return per_round


def ratio_cell(per_round: list[list[float]], i: int) -> str:
    """Setting ``i``'s time ÷ setting 0's: the median over the rounds of each round's own ratio, with the rounds'
    smallest and largest ("0.950 (0.900-1.010)")."""
    ratios = [r[i] / r[0] for r in per_round]
    return f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"


def random_below(rng, n: int, limbs: int, bits: int) -> np.ndarray:
    """(n, limbs) uint64 uniformly random values < 2^(bits - 1) (so below the modulus)."""
    words = rng.integers(0, 2**64 - 1, size=(n, limbs), dtype=np.uint64, endpoint=True)  # one draw a word: 13x faster
    top_bits = bits - 1 - 64 * (limbs - 1)
    words[:, -1] &= np.uint64((1 << top_bits) - 1)
    return words


def uniform_below_modulus(rng, n: int, field) -> np.ndarray:
    """(n, limbs) uint64 values uniformly random below ``field.modulus``: what H's coefficients and a
    witness's other values look like. ``random_below``'s values stay under 2^(bits - 1); these reach the
    top bit, and half of them are past (r - 1) / 2, which the MSM folds to r - s with the point negated."""
    limbs, top_bits = field.limbs, field.modulus.bit_length() - 64 * (field.limbs - 1)
    modulus = np.array([(field.modulus >> (64 * i)) & (2**64 - 1) for i in range(limbs)], dtype=np.uint64)
    words = np.empty((n, limbs), dtype=np.uint64)
    todo = np.arange(n)
    while todo.size:  # rejection: each round keeps the draws below the modulus (~91% for BLS12-381's r)
        draw = rng.integers(0, 2**64 - 1, size=(todo.size, limbs), dtype=np.uint64, endpoint=True)
        draw[:, -1] &= np.uint64((1 << top_bits) - 1)
        below = np.zeros(todo.size, dtype=bool)
        decided = np.zeros(todo.size, dtype=bool)
        for i in reversed(range(limbs)):  # compare from the top word down
            lt, gt = draw[:, i] < modulus[i], draw[:, i] > modulus[i]
            below |= ~decided & lt
            decided |= lt | gt
        words[todo[below]] = draw[below]
        todo = todo[~below]
    return words


def bit_heavy(rng, words: np.ndarray, bits: float = 0.8) -> np.ndarray:
    """A share ``bits`` of the scalars in {0, 1} (half each), the rest unchanged."""
    out = words.copy()
    pick = rng.random(out.shape[0])
    out[pick < bits] = 0
    out[pick < bits / 2, 0] = 1
    return out
