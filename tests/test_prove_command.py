"""``zkpipe prove`` and ``zkpipe fullprove`` as snarkjs and rapidsnark users call them: positional
arguments in their order, ``auto`` by default, ``--timings``, ``--server``; every proof checked
by ``snarkjs groth16 verify``, and the imports of each path checked in a fresh process."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipeline.cli import EXIT_BAD_INPUT, EXIT_OK, main
from tests.conftest import REPO, fixture_dir, snarkjs_verify

# Nothing the one-shot prove paths use: the verifier's pairings, circom's wasm runtime, the service,
# the engine (only its settings module, engine.config, which holds the CUDA options' checks).
NOT_FOR_PROVE = ("py_ecc", "wasmtime", "aiohttp", "asyncio", "uvloop", "multidict", "yarl",
                 "pipeline.server.app", "pipeline.engine.engine", "pipeline.engine.pipeline",
                 "pipeline.engine.stages", "pipeline.groth16.verifier", "pipeline.witness",
                 "pipeline.setup", "pipeline.synth")
# And what a proof handed to a server needs even less: no numpy, no curves, no CUDA; no http.client
# (its email parser) nor ssl for an http URL, not even socket (its enums and selectors: _socket
# does), no logging, threading, shutil or hashlib (OpenSSL): each is milliseconds of a path whose
# own work is a few (oneshot/http_client.py).
NOT_FOR_SERVER_PROVE = (*NOT_FOR_PROVE, "numpy", "pipeline.curves", "pipeline.formats.zkey", "cuda", "orjson",
                        "http", "email", "ssl", "socket", "selectors", "logging", "threading", "shutil", "hashlib")

RUN_AND_LIST_MODULES = """
import json, sys
from pipeline.cli import main
code = main(sys.argv[1:])
print(json.dumps({"exit": code, "modules": sorted(sys.modules)}))
"""


def run_cli_fresh(*args: str, env: dict | None = None) -> tuple[int, list[str], str]:
    """``zkpipe ARGS`` in a new interpreter: (exit code, modules imported by the end, stderr)."""
    out = subprocess.run([sys.executable, "-c", RUN_AND_LIST_MODULES, *args], cwd=REPO, capture_output=True,
                         text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["exit"], result["modules"], out.stderr


def imported(modules: list[str], forbidden: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden)]


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_prove_takes_snarkjs_order_and_defaults_to_auto(tmp_path, capsys, curve_name):
    folder = fixture_dir(curve_name, "multiplier")
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    assert main(["prove", str(folder / "circuit_final.zkey"), str(folder / "witness.wtns"),
                 str(proof), str(public)]) == EXIT_OK
    err = capsys.readouterr().err
    assert " on cpu" in err or " on cuda" in err  # auto chose one; without a GPU the CPU
    assert json.loads(public.read_text()) == json.loads((folder / "public.json").read_text())
    assert snarkjs_verify(folder / "vk.json", public, proof)


def test_prove_flags_still_work_and_a_file_given_twice_is_refused(tmp_path, capsys):
    folder = fixture_dir("bn128", "multiplier")
    key, wtns = str(folder / "circuit_final.zkey"), str(folder / "witness.wtns")
    with pytest.raises(SystemExit) as stop:
        main(["prove", key, wtns, str(tmp_path / "a.json"), "--proof", str(tmp_path / "b.json")])
    assert stop.value.code == EXIT_BAD_INPUT and "give the file once" in capsys.readouterr().err
    assert main(["prove", key, wtns, "--proof", str(tmp_path / "p.json"), "--public", str(tmp_path / "q.json"),
                 "--backend", "cpu"]) == EXIT_OK
    assert snarkjs_verify(folder / "vk.json", tmp_path / "q.json", tmp_path / "p.json")


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_fullprove_takes_snarkjs_order_and_snarkjs_accepts_the_proof(tmp_path, curve_name):
    folder = fixture_dir(curve_name, "poseidon2")
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    assert main(["fullprove", str(folder / "input.json"), str(folder / "circuit.wasm"),
                 str(folder / "circuit_final.zkey"), str(proof), str(public), "--backend", "cpu"]) == EXIT_OK
    assert json.loads(public.read_text()) == json.loads((folder / "public.json").read_text())
    assert snarkjs_verify(folder / "vk.json", public, proof)


def test_fullprove_with_inputs_the_circuit_rejects_exits_2(tmp_path, capsys):
    folder = fixture_dir("bn128", "multiplier")
    bad = tmp_path / "input.json"
    bad.write_text(json.dumps({"a": 3}))  # b is missing
    assert main(["fullprove", str(bad), str(folder / "circuit.wasm"), str(folder / "circuit_final.zkey"),
                 str(tmp_path / "p.json"), str(tmp_path / "q.json"), "--backend", "cpu"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "input" in err and "Traceback" not in err


def test_prove_imports_only_what_it_needs_and_times_itself(tmp_path):
    folder = fixture_dir("bn128", "multiplier")
    code, modules, err = run_cli_fresh("prove", str(folder / "circuit_final.zkey"), str(folder / "witness.wtns"),
                                       str(tmp_path / "p.json"), str(tmp_path / "q.json"), "--backend", "cpu",
                                       "--timings")
    assert code == EXIT_OK
    assert imported(modules, NOT_FOR_PROVE) == []
    assert "numpy" in modules  # the check above saw a real run's imports
    steps = [line for line in err.splitlines() if line.startswith("  ")]
    for step in ("interpreter start", "read the key", "read the witness", "prove (H, MSMs, assemble)",
                 "write proof and public signals", "total, process start to exit"):
        assert any(step in line for line in steps), (step, err)
    assert snarkjs_verify(folder / "vk.json", tmp_path / "q.json", tmp_path / "p.json")


def test_every_subcommand_is_known_to_the_lazy_parser():
    """A command added elsewhere must be listed in cli.OTHER_COMMANDS (or be one of cli's own),
    or `zkpipe THAT-COMMAND` would not find its parser."""
    from pipeline import cli

    sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == set(cli.OWN_COMMANDS) | set(cli.OTHER_COMMANDS)
    for command in sub.choices:
        assert command in next(a for a in cli.build_parser(command)._actions if a.dest == "command").choices


def test_timeline_spans_start_at_the_process_start_and_are_ordered():
    from pipeline.oneshot.timeline import Timeline, process_age_s

    age = process_age_s()
    assert age is not None and age > 0  # this test process started before now
    timeline = Timeline()
    with timeline.step("a"):
        pass
    with timeline.step("b"):
        pass
    starts = {name: start for name, start, _, _ in timeline.spans}
    assert starts["interpreter start, first imports"] == pytest.approx(0.0, abs=1e-9)
    assert 0 < starts["a"] <= starts["b"] <= timeline.since_start_s()
    assert "total, process start to exit" in timeline.report("t")


# -- --server -------------------------------------------------------------------------------------
@pytest.fixture
async def serve(tmp_path):
    from tests.server.serve_process import ServeProcess

    server = ServeProcess(tmp_path)
    await server.start()
    yield server
    server.stop()


async def test_prove_on_a_running_server_writes_files_snarkjs_accepts_without_numpy(serve, tmp_path):
    from tests.server.server_helpers import TOKEN

    folder = fixture_dir("bn128", "multiplier")
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    code, modules, err = run_cli_fresh("prove", str(folder / "circuit_final.zkey"), str(folder / "witness.wtns"),
                                       str(proof), str(public), "--server", serve.url, "--timings",
                                       env={"ZKPIPE_AUTH_TOKEN": TOKEN})
    assert code == EXIT_OK, err
    assert "proved by the server" in err and "submit the job and wait for the proof (one request)" in err
    server_split = err.split("on the server (job ")[1]  # --timings: where the server's part of the wait went
    assert "spool commit (fsync)" in server_split and "gpu stage" in server_split and "whole job" in server_split
    assert imported(modules, NOT_FOR_SERVER_PROVE) == []
    assert json.loads(public.read_text()) == json.loads((folder / "public.json").read_text())
    assert snarkjs_verify(folder / "vk.json", public, proof)


async def test_prove_on_a_server_that_lacks_the_key_exits_2_naming_it(serve, tmp_path):
    from tests.server.server_helpers import TOKEN

    folder = fixture_dir("bn128", "chain_2e10")  # not in the server's keys folder
    code, _, err = run_cli_fresh("prove", str(folder / "circuit_final.zkey"), str(folder / "witness.wtns"),
                                 str(tmp_path / "p.json"), str(tmp_path / "q.json"), "--server", serve.url,
                                 env={"ZKPIPE_AUTH_TOKEN": TOKEN})
    assert code == EXIT_BAD_INPUT
    assert "does not serve the key" in err and "chain_2e10" in err and "Traceback" not in err
    assert not (tmp_path / "p.json").exists()


def test_prove_with_no_server_at_the_url_exits_2_saying_how_to_start_one(tmp_path, capsys):
    from tests.server.serve_process import free_port

    folder = fixture_dir("bn128", "multiplier")
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["prove", str(folder / "circuit_final.zkey"), str(folder / "witness.wtns"),
                 str(tmp_path / "p.json"), str(tmp_path / "q.json"), "--server", url]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"no zkpipe server answers at {url}" in err and "zkpipe serve" in err


def test_key_fingerprint_names_the_verification_key_and_needs_no_numpy(tmp_path):
    from pipeline.formats.errors import FormatError
    from pipeline.formats.key_fingerprint import zkey_fingerprint

    a = zkey_fingerprint(fixture_dir("bn128", "multiplier") / "circuit_final.zkey")
    b = zkey_fingerprint(fixture_dir("bn128", "poseidon2") / "circuit_final.zkey")
    c = zkey_fingerprint(fixture_dir("bls12381", "multiplier") / "circuit_final.zkey")
    assert len({a, b, c}) == 3 and len(a) == 64
    assert a == "26b49869180b1f01fe152e63c8b05c3491097727b23199bbf577a8708796ff81"  # as hashlib's sha256 made it
    copy = tmp_path / "copy.zkey"
    copy.write_bytes((fixture_dir("bn128", "multiplier") / "circuit_final.zkey").read_bytes())
    assert zkey_fingerprint(copy) == a
    with pytest.raises(FormatError, match="not a zkey"):
        zkey_fingerprint(fixture_dir("bn128", "multiplier") / "witness.wtns")
    probe = subprocess.run([sys.executable, "-c", "import sys; import pipeline.formats.key_fingerprint; "
                            "print('numpy' in sys.modules)"], cwd=REPO, capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "False"


def test_prove_prepares_the_key_once_then_opens_its_cache_unless_the_environment_says_no(tmp_path, capsys,
                                                                                         monkeypatch):
    folder = fixture_dir("bls12381", "multiplier")
    key = tmp_path / "circuit_final.zkey"
    key.write_bytes((folder / "circuit_final.zkey").read_bytes())
    for env, step in (("", "read the key (prepared and cached now)"), ("", "read the key (from its cache)"),
                      ("false", "read the key")):
        if env:
            monkeypatch.setenv("ZKPIPE_ENGINE_KEY_CACHE", env)
        proof, public = tmp_path / "proof.json", tmp_path / "public.json"
        assert main(["prove", str(key), str(folder / "witness.wtns"), str(proof), str(public), "--backend", "cpu",
                     "--timings"]) == EXIT_OK
        err = capsys.readouterr().err
        assert any(line.startswith("  ") and line.endswith(step) for line in err.splitlines()), (step, err)
        assert snarkjs_verify(folder / "vk.json", public, proof)
    assert (tmp_path / ".zkpipe-keycache").is_dir()


def test_a_prove_process_ends_at_once_with_its_files_whole_and_its_exit_code(tmp_path):
    """``python -m pipeline prove`` as its own process leaves without the interpreter's teardown
    once the files are written (cli.EXIT_AT_ONCE): they must be complete, the code right, the
    messages out; a bad input still exits 2 the usual way."""
    folder = fixture_dir("bn128", "multiplier")
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "pipeline", "prove", str(folder / "circuit_final.zkey"),
                          str(folder / "witness.wtns"), str(proof), str(public), "--backend", "cpu", "--timings"],
                         cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == EXIT_OK, out.stderr[-2000:]
    assert "proved bn128 key" in out.stderr and "total, process start to exit" in out.stderr
    assert snarkjs_verify(folder / "vk.json", public, proof)
    bad = subprocess.run([sys.executable, "-m", "pipeline", "prove", str(folder / "circuit_final.zkey"),
                          str(tmp_path / "missing.wtns"), str(proof), str(public), "--backend", "cpu"],
                         cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert bad.returncode == EXIT_BAD_INPUT and "missing.wtns" in bad.stderr


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_a_proof_from_a_server_is_written_in_the_same_bytes_as_a_local_one(tmp_path, curve_name):
    """``prove --server`` writes with the standard json module (no orjson import on that path):
    the same bytes as formats.snarkjs_json's writer for a real proof and its public signals."""
    from pipeline.formats.snarkjs_json import _dump, load_json
    from pipeline.oneshot.remote import write_json

    folder = fixture_dir(curve_name, "multiplier")
    for name in ("proof.json", "public.json"):
        obj = load_json(folder / name)
        _dump(tmp_path / f"local_{name}", obj)
        write_json(str(tmp_path / f"remote_{name}"), obj)
        assert (tmp_path / f"remote_{name}").read_bytes() == (tmp_path / f"local_{name}").read_bytes()


def test_the_one_shot_cuda_path_imports_no_asyncio():
    """What a one-shot ``zkpipe prove --backend cuda`` imports (the readers, the prover, the key cache,
    the CUDA backend) stays free of asyncio and ssl: ~90 ms of import on the GPU host, held beside
    numpy's on the device thread (bench/results/oneshot_prove_cuda.md); only awaiting an event needs it."""
    code = ("import sys\n"
            "from pipeline.formats.zkey import read_zkey_header\n"
            "from pipeline.formats.wtns import read_wtns\n"
            "from pipeline.groth16.prover import check_witness, prove\n"
            "from pipeline.keycache import prepare_key\n"
            "import pipeline.backends.cuda.backend, pipeline.oneshot.local\n"
            "print(sorted(m for m in ('asyncio', 'ssl') if m in sys.modules))")
    probe = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "[]"
