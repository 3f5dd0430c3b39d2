"""One proof per process, the way scripts call snarkjs and rapidsnark: snarkjs against zkpipe.

    python3 -m bench.oneshot_prove --backend cpu --sizes bn128:10 --runs 3               # this machine
    python3 -m bench.oneshot_prove --backend cuda --sizes bn128:15:30000,bn128:20,bls12381:20 \\
        --snarkjs ".nodeenv/node .nodeenv/node_modules/snarkjs/build/cli.cjs"              # the GPU host
    (node and snarkjs there: shared/anchors/snarkjs/README.md)

For each size (``CURVE:LOG2_DOMAIN[:SIGNALS]``; a random key and witness, bench/random_circuit.py:
the work per proof is the same as a real circuit's with full-width witness values), each a median
of ``--runs`` new processes, all on the same files:

- snarkjs   ``snarkjs groth16 prove KEY WTNS PROOF PUBLIC``
- cold      ``zkpipe prove KEY WTNS PROOF PUBLIC`` in a new process with an empty kernel cache
            (ZKPIPE_ENGINE_CUDA_KERNEL_CACHE_DIR: a new folder each run): the kernels are the prebuilt ones when
            the package has them (a wheel, or a checkout after ``aot_build --inplace``, which
            this script runs first for --backend cuda), else NVRTC compiles them
- warm      the same, the kernel cache kept from the runs before
- server    ``zkpipe prove ... --server URL`` against a ``zkpipe serve`` started here with the
            key preloaded (one proof first, untimed); its ``--timings`` include the server's
            own split of the job (upload, durable commit, engine stages)
- warm and server again from a clean environment (columns marked "clean env"): the same command
  run by the python of a venv made here (``venv --without-pip`` from this interpreter's base),
  whose one ``.pth`` file only lists folders (the checkout, PYTHONPATH's and this interpreter's
  site folders), so none of the host's ``.pth`` start-up hooks run: what a clean install (a
  pipx-style venv, the project's container) pays. The server stays in the host environment.

What a new process costs before zkpipe runs is measured beside it (``python3 -c pass``, with
``-I`` and ``-S``, and the slowest imports of ``python3 -X importtime -c pass``), with the
environment that decides it: the ``.pth`` files that ``site`` runs at every start (an editable
install's finder is one) and whether bytecode is cached. When PYTHONDONTWRITEBYTECODE is set,
the package's bytecode is compiled first (untimed, as installing a wheel does): else every
process would compile zkpipe's modules again.

Before timing, a real circuit (tests/fixtures/<curve>/chain_2e10) goes through the same
one-shot command and its proof is checked (snarkjs groth16 verify where snarkjs is, else
zkpipe verify). Writes bench/results/oneshot_prove_<backend>.md, with the ``--timings``
breakdown of one cold and one warm run per size.
"""
from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.common import REPO, RESULTS, free_port, wait_answering
from bench.random_circuit import write_random_circuit

ZKPIPE = [sys.executable, "-m", "pipeline"]


def process_env(env: dict | None) -> dict:
    """This process's environment with ``env`` added; a value of None removes that variable."""
    return {name: value for name, value in {**os.environ, **(env or {})}.items() if value is not None}


def run_timed(cmd: list[str], env: dict | None = None, timeout: float = 3600) -> tuple[float, str]:
    """Wall seconds of one command (a new process) and its stderr; raises on a non-zero exit."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=REPO, env=process_env(env), capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(f"{shlex.join(cmd)} exited {out.returncode}:\n{out.stdout[-2000:]}{out.stderr[-4000:]}")
    return wall, out.stderr


def snarkjs_command(option: str | None) -> list[str] | None:
    if option:
        return shlex.split(option)
    local = REPO / "node_modules" / ".bin" / "snarkjs"
    return [str(local)] if local.exists() else None


def zkpipe_prove(key: Path, wtns: Path, out: Path, backend: str, *extra: str,
                 python: str = sys.executable) -> list[str]:
    """``python -m pipeline prove ...``: pipeline/__main__.py calls what the ``zkpipe`` script calls."""
    return [python, "-m", "pipeline", "prove", str(key), str(wtns), str(out / "proof.json"),
            str(out / "public.json"), "--backend", backend, *extra]


def check_real_circuit(curve: str, backend: str, snarkjs: list[str] | None, work: Path) -> str:
    folder = REPO / "tests" / "fixtures" / curve / "chain_2e10"
    out = work / f"check_{curve}"
    out.mkdir()
    run_timed(zkpipe_prove(folder / "circuit_final.zkey", folder / "witness.wtns", out, backend))
    verify = ([*snarkjs, "groth16", "verify"] if snarkjs else [*ZKPIPE, "verify"])
    run_timed([*verify, str(folder / "vk.json"), str(out / "public.json"), str(out / "proof.json")])
    return f"{curve} chain_2e10 proved by `zkpipe prove --backend {backend}`, accepted by " \
           f"{'snarkjs groth16 verify' if snarkjs else 'zkpipe verify'}"


class Server:
    """``zkpipe serve`` on a free loopback port over one key folder, the key preloaded."""

    def __init__(self, keys: Path, backend: str, work: Path) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "ZKPIPE_ENGINE_BACKEND": backend, "ZKPIPE_AUTH_TOKEN": ""}
        self.log = open(work / "serve.log", "wb")
        self.proc = subprocess.Popen([*ZKPIPE, "serve", "--keys-dir", str(keys), "--state-dir", str(work / "state"),
                                      "--port", str(port)], cwd=REPO, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        asyncio.run(wait_answering(self.url, self.proc, 300.0, lambda: (work / "serve.log").read_text()[-3000:]))

    def preload(self, key_id: str) -> None:
        req = urllib.request.Request(f"{self.url}/v1/keys/{key_id}/preload", method="POST", data=b"")
        urllib.request.urlopen(req, timeout=1800).read()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def median_of(runs: int, cmd_for_run) -> tuple[float, str]:
    """Median wall seconds over ``runs`` calls of ``cmd_for_run(i) -> (cmd, env)``; the first run's stderr."""
    walls, first_err = [], ""
    for i in range(runs):
        cmd, env = cmd_for_run(i)
        wall, err = run_timed(cmd, env)
        walls.append(wall)
        first_err = first_err or err
    return statistics.median(walls), first_err


def timings_block(stderr: str) -> str:
    lines = stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if "where the time went" in line), None)
    return "\n".join(lines[start:]) if start is not None else stderr[-2000:]


def slowest_imports(stderr: str, count: int = 25) -> str:
    """The ``count`` imports of a ``python -X importtime`` run with the most cumulative time (ms)."""
    rows = []
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, self_us, cumulative_us, name = (part.strip() for part in line.replace("import time:", "|").split("|"))
            rows.append((int(cumulative_us), int(self_us), name))
    rows.sort(reverse=True)
    return "\n".join(f"{c / 1e3:9.1f} {s / 1e3:9.1f}  {n}" for c, s, n in rows[:count])


FLOORS = {  # name -> interpreter flags and the code a new process runs
    "python3 -c pass": ([], "pass"),
    "python3 -I -c pass (isolated: no environment, no user site)": (["-I"], "pass"),
    "python3 -S -c pass (no site: no .pth files run)": (["-S"], "pass"),
    "import numpy": ([], "import numpy"),
}
CUDA_FLOOR = {"cuInit + primary context (cuda-python)": ([], "from cuda.bindings import driver as d; d.cuInit(0); "
                                                             "d.cuDevicePrimaryCtxRetain(d.cuDeviceGet(0)[1])")}


def process_floors(runs: int, cuda: bool, clean_python: str) -> dict[str, float]:
    """Median wall seconds of new processes that do only the named start-up step: the floor under
    any one-shot command (the CUDA one only with --backend cuda), and the clean venv's start."""
    floors = {**FLOORS, **(CUDA_FLOOR if cuda else {})}
    medians = {name: median_of(runs, lambda i, flags=flags, code=code: ([sys.executable, *flags, "-c", code], None))[0]
               for name, (flags, code) in floors.items()}
    medians["python -c pass in the clean env"] = median_of(runs, lambda i: ([clean_python, "-c", "pass"],
                                                                            CLEAN_ENV))[0]
    return medians


def site_pth_files() -> list[str]:
    """Every ``.pth`` file of the site folders with its import lines: ``site`` runs those lines at
    each interpreter start (an editable install's finder is one: ``__editable__*.pth``)."""
    import site

    folders = [*site.getsitepackages(), site.getusersitepackages()]
    rows = []
    for folder in dict.fromkeys(folders):
        for pth in sorted(Path(folder).glob("*.pth")) if Path(folder).is_dir() else []:
            imports = [line.strip() for line in pth.read_text(errors="replace").splitlines()
                       if line.startswith(("import ", "import\t"))]
            rows.append(f"{pth}: {'; '.join(imports)[:200] if imports else 'paths only'}")
    return rows


def prepare_bytecode() -> str:
    """How this run's processes get zkpipe's bytecode (compiled here first when the environment
    forbids writing it: PYTHONDONTWRITEBYTECODE)."""
    if not sys.flags.dont_write_bytecode:
        return "written by the interpreter on first import (PYTHONDONTWRITEBYTECODE unset)"
    run_timed([sys.executable, "-m", "compileall", "-q", str(REPO / "pipeline")])
    return ("PYTHONDONTWRITEBYTECODE is set: compiled by the bench first (`compileall pipeline`, untimed), "
            "as a wheel install does")


def interpreter_imports() -> str:
    """The slowest imports of a new interpreter that runs nothing (``python3 -X importtime -c pass``)."""
    _, err = run_timed([sys.executable, "-X", "importtime", "-c", "pass"])
    return slowest_imports(err, 15)


CLEAN_ENV = {"PYTHONPATH": None}  # its folders are in the clean venv's .pth, as installed packages would be
CLEAN_PTH = "zkpipe_clean_env.pth"


def python_prints(python: str, code: str, env: dict | None = None) -> str:
    """What ``python -c code`` prints (untimed); raises on a non-zero exit."""
    return subprocess.run([python, "-c", code], cwd=REPO, env=process_env(env), capture_output=True, text=True,
                          check=True).stdout.strip()


def pth_files_run(python: str, env: dict | None = None) -> list[str]:
    """The ``.pth`` files ``site`` processes when ``python`` starts (its ``-v`` trace names each one)."""
    _, err = run_timed([python, "-v", "-c", "pass"], env)
    prefix = "Processing .pth file: "
    return list(dict.fromkeys(ast.literal_eval(line[len(prefix):]) for line in err.splitlines()
                              if line.startswith(prefix)))


def make_clean_env(work: Path, backend: str) -> dict:
    """A venv like a clean install's, made once per bench run (untimed): ``venv --without-pip`` from
    this interpreter's base (``venv`` takes sys._base_executable when this python is itself a
    venv), whose site-packages holds one path-only .pth listing the checkout (as a static editable
    install does), PYTHONPATH's folders (device.sh installs wheels there) and this interpreter's
    site folders (numpy, cuda-python). ``site`` runs the .pth files of the folders it scans, not
    of folders a path line adds, so the host's start-up hooks stay out: checked from ``-v``."""
    import site

    folder = work / "clean-venv"
    run_timed([sys.executable, "-m", "venv", "--without-pip", str(folder)])
    python = str(folder / "bin" / "python")
    site_dir = Path(python_prints(python, "import site; print(site.getsitepackages()[0])", CLEAN_ENV))
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)), *site.getsitepackages()]
    (site_dir / CLEAN_PTH).write_text("".join(f"{path}\n" for path in dict.fromkeys(paths)))
    base = python_prints(python, "import sys; print(sys._base_executable); print(sys.version)", CLEAN_ENV)
    if base.split("\n", 1)[1] != sys.version:
        raise RuntimeError(f"the clean venv runs another Python: {base} (this one: {sys.version})")
    ran, host_ran = pth_files_run(python, CLEAN_ENV), pth_files_run(sys.executable)
    if ran != [str(site_dir / CLEAN_PTH)]:
        raise RuntimeError(f"the clean venv ran other .pth files than its own: {ran}")
    imports = "import pipeline, numpy" + ("; from cuda.bindings import driver" if backend == "cuda" else "")
    python_prints(python, imports, CLEAN_ENV)  # raises when a package is not found from the listed folders
    modules = "import sys; print(*sys.modules)"
    host_only = sorted(set(python_prints(sys.executable, modules).split())
                       - set(python_prints(python, modules, CLEAN_ENV).split()))
    return {"python": python, "folder": str(folder), "base": base.split("\n", 1)[0],
            "host_base": sys._base_executable, "pth": str(site_dir / CLEAN_PTH), "paths": list(dict.fromkeys(paths)),
            "host_pth_run": host_ran, "host_only_modules": host_only}


def bench_size(spec: str, args, snarkjs, work: Path, clean: dict) -> dict:
    parts = spec.split(":")
    curve, log_domain = parts[0], int(parts[1])
    size_dir = work / spec.replace(":", "_")
    n_vars = write_random_circuit(size_dir / "keys_src", curve, log_domain, int(parts[2]) if len(parts) > 2 else None)
    keys = size_dir / "keys"
    keys.mkdir()
    key_id = f"rand_{curve}_2e{log_domain}"
    (keys / f"{key_id}.zkey").symlink_to(size_dir / "keys_src" / "circuit_final.zkey")
    key, wtns = keys / f"{key_id}.zkey", size_dir / "keys_src" / "witness.wtns"
    out = size_dir / "out"
    out.mkdir()
    row = {"curve": curve, "domain": f"2^{log_domain}", "signals": n_vars}

    if snarkjs:
        row["snarkjs_s"], _ = median_of(args.runs, lambda i: (
            [*snarkjs, "groth16", "prove", str(key), str(wtns), str(out / "sj_proof.json"), str(out / "sj_public.json")],
            {"NODE_OPTIONS": os.environ.get("NODE_OPTIONS", "--max-old-space-size=16384")}))
    row["cold_s"], cold_err = median_of(args.runs, lambda i: (
        zkpipe_prove(key, wtns, out, args.backend, "--timings"),
        {"ZKPIPE_ENGINE_CUDA_KERNEL_CACHE_DIR": tempfile.mkdtemp(prefix="kcache-", dir=size_dir)}))
    row["kernels"] = next((line.split("(kernels: ")[1].split(")")[0] for line in cold_err.splitlines()
                           if "(kernels: " in line), "-")
    warm_cache = {"ZKPIPE_ENGINE_CUDA_KERNEL_CACHE_DIR": str(size_dir / "kcache-warm")}
    run_timed(zkpipe_prove(key, wtns, out, args.backend), warm_cache)  # fills the cache when nothing is prebuilt
    row["warm_s"], warm_err = median_of(args.runs, lambda i: (
        zkpipe_prove(key, wtns, out, args.backend, "--timings"), warm_cache))
    row["warm_clean_s"], _ = median_of(args.runs, lambda i: (
        zkpipe_prove(key, wtns, out, args.backend, "--timings", python=clean["python"]), {**warm_cache, **CLEAN_ENV}))
    _, imports_err = run_timed([sys.executable, "-X", "importtime", *zkpipe_prove(key, wtns, out, args.backend)[1:]],
                               warm_cache)
    row["imports"] = slowest_imports(imports_err)
    server = Server(keys, args.backend, size_dir)
    try:
        server.preload(key_id)
        run_timed(zkpipe_prove(key, wtns, out, args.backend, "--server", server.url))  # untimed first proof
        row["server_s"], server_err = median_of(args.runs, lambda i: (
            zkpipe_prove(key, wtns, out, args.backend, "--server", server.url, "--timings"), None))
        row["server_clean_s"], server_clean_err = median_of(args.runs, lambda i: (
            zkpipe_prove(key, wtns, out, args.backend, "--server", server.url, "--timings", python=clean["python"]),
            CLEAN_ENV))
        _, server_imports = run_timed([sys.executable, "-X", "importtime",
                                       *zkpipe_prove(key, wtns, out, args.backend, "--server", server.url)[1:]])
        row["server_imports"] = slowest_imports(server_imports)
    finally:
        server.stop()
    row["timings"] = {"cold": timings_block(cold_err), "warm": timings_block(warm_err),
                      "server": timings_block(server_err), "server (clean env)": timings_block(server_clean_err)}
    return row


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def write_report(rows: list[dict], args, checks: list[str], snarkjs, floors: dict[str, float], start: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"oneshot_prove_{args.backend}{args.suffix}.md"
    lines = [f"# One-shot proving: one proof per new process, zkpipe ({args.backend}) beside snarkjs",
             "",
             f"`python3 -m bench.oneshot_prove {' '.join(shlex.quote(a) for a in sys.argv[1:])}` on "
             f"{platform.node()} ({os.cpu_count()} cores, Python {platform.python_version()}), "
             f"{time.strftime('%Y-%m-%d %H:%M')}; medians of {args.runs} runs, seconds of wall time per command "
             "(process start to exit). Random keys and full-width witnesses (bench/random_circuit.py). "
             f"snarkjs: {shlex.join(snarkjs) if snarkjs else 'not run (no snarkjs here)'}.",
             "",
             "| curve | domain | signals | snarkjs s | cold s | warm s | server s | warm s (clean env) | "
             "server s (clean env) | snarkjs / warm | snarkjs / server | snarkjs / warm (clean env) | "
             "snarkjs / server (clean env) | cold kernels |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        sj = r.get("snarkjs_s")
        lines.append(f"| {r['curve']} | {r['domain']} | {r['signals']} | {f'{sj:.3f}' if sj else '-'} | "
                     f"{r['cold_s']:.3f} | {r['warm_s']:.3f} | {r['server_s']:.3f} | {r['warm_clean_s']:.3f} | "
                     f"{r['server_clean_s']:.3f} | {ratio(sj, r['warm_s'])} | {ratio(sj, r['server_s'])} | "
                     f"{ratio(sj, r['warm_clean_s'])} | {ratio(sj, r['server_clean_s'])} | {r['kernels']} |")
    clean = start["clean"]
    host_only = clean["host_only_modules"]
    lines += ["", "Clean env columns: the same command run by `<venv>/bin/python -m pipeline` "
              "(pipeline/__main__.py calls pipeline.cli.main, the `zkpipe` console script's entry point) with "
              f"PYTHONPATH unset, `<venv>` = `{clean['folder']}`: made by this bench (untimed) with "
              f"`python3 -m venv --without-pip` on `{clean['base']}` (this interpreter's base: `{clean['host_base']}`, "
              "same Python version), its site-packages holding one `.pth` file of path lines only, "
              f"`{clean['pth']}`: " + ", ".join(f"`{path}`" for path in clean["paths"]) + " (the checkout, as a static "
              "editable install; PYTHONPATH's folders; this interpreter's site folders). A path line only extends "
              "sys.path: `site` runs the `.pth` files of the folders it scans (the venv's own site-packages), not "
              "of folders a path line adds. Checked at start (`python -v`): the clean venv processed its own file "
              f"only; this interpreter processed {len(clean['host_pth_run'])}: "
              + (", ".join(f"`{pth}`" for pth in clean["host_pth_run"]) or "none") + ". Modules a start of this "
              f"interpreter imports that a start of the clean venv does not ({len(host_only)}): "
              + (", ".join(host_only[:40]) + (", ..." if len(host_only) > 40 else "") or "none") + ". "
              "The server is the same `zkpipe serve` (host environment); only the client process changes. "
              "The columns without \"clean env\" are what a process started on this host with `python3` pays, "
              "its `.pth` hooks included; the clean-env ones are what the same command pays from a clean install "
              "(a pipx-style venv, the project's container) on the same host.",
              "", "Checks before timing: " + "; ".join(checks) + ".", "",
              "New processes that only start (medians, same host and call): "
              + "; ".join(f"{name} {secs:.3f} s" for name, secs in floors.items()) + ".", "",
              f"Bytecode: {start['bytecode']}.", "",
              "`.pth` files that `site` runs at every start: "
              + ("; ".join(f"`{row}`" for row in start["pth"]) or "none") + ".", "",
              "### Slowest imports of a new interpreter that runs nothing (`python3 -X importtime -c pass`)", "",
              "```", " cumul. ms   self ms  module", start["imports"], "```", ""]
    for r in rows:
        for kind, text in r["timings"].items():
            lines += [f"### {r['curve']} {r['domain']}: one {kind} run, `--timings`", "", "```", text, "```", ""]
        lines += [f"### {r['curve']} {r['domain']}: slowest imports of one warm run (`python -X importtime`)", "",
                  "```", " cumul. ms   self ms  module", r["imports"], "```", "",
                  f"### {r['curve']} {r['domain']}: slowest imports of one server run (`python -X importtime`)", "",
                  "```", " cumul. ms   self ms  module", r["server_imports"], "```", ""]
    path.write_text("\n".join(lines))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="cuda", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--sizes", default="bn128:15:30000,bn128:20,bls12381:20",
                        help="CURVE:LOG2_DOMAIN[:SIGNALS], comma separated (default %(default)s)")
    parser.add_argument("--runs", type=int, default=5, help="processes per measurement (default %(default)s)")
    parser.add_argument("--snarkjs", help="the snarkjs command (default node_modules/.bin/snarkjs when present)")
    parser.add_argument("--aot-arch", default="sm_90", help="prebuilt kernels to build first for --backend cuda "
                        "when the checkout has none (default %(default)s)")
    parser.add_argument("--work", help="scratch folder (default a new temporary one)")
    parser.add_argument("--suffix", default="", help="appended to the results file name")
    args = parser.parse_args(argv)
    snarkjs = snarkjs_command(args.snarkjs)
    work = Path(args.work or tempfile.mkdtemp(prefix="oneshot-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.backend == "cuda":
        from pipeline.backends.cuda.kernel_binaries import read_manifest

        if read_manifest() is None:
            print(f"building prebuilt kernels for {args.aot_arch} (untimed)", file=sys.stderr, flush=True)
            run_timed([sys.executable, "-m", "pipeline.backends.cuda.aot_build", "--inplace", "--arch", args.aot_arch])
    start = {"bytecode": prepare_bytecode(), "pth": site_pth_files(), "imports": interpreter_imports(),
             "clean": make_clean_env(work, args.backend)}
    sizes = args.sizes.split(",")
    checks = [check_real_circuit(curve, args.backend, snarkjs, work)
              for curve in dict.fromkeys(spec.split(":")[0] for spec in sizes)]
    rows = []
    for spec in sizes:
        print(f"{spec}: timing", file=sys.stderr, flush=True)
        rows.append(bench_size(spec, args, snarkjs, work, start["clean"]))
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "timings"}), file=sys.stderr, flush=True)
    floors = process_floors(args.runs, cuda=args.backend == "cuda", clean_python=start["clean"]["python"])
    path = write_report(rows, args, checks, snarkjs, floors, start)
    print(path.read_text().split("\n### ")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
