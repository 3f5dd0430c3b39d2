"""``zkpipe serve`` and ``zkpipe submit`` on the command line: what is wrong is one line naming it and
exit code 2, never a traceback; submit shows its progress and writes the proofs."""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys

import orjson
import pytest

from pipeline.cli import EXIT_OK, main
from pipeline.server.cli_commands import EXIT_BAD_INPUT, _serve, _submit
from tests.backends.test_choice import gpu_answers
from tests.conftest import FIXTURES, REPO
from tests.server.serve_process import free_port, write_config
from tests.server.server_helpers import TOKEN, make_config


@pytest.mark.parametrize("bad_store", ["corrupt", "folder"])
async def test_a_store_that_cannot_be_used_stops_the_start_with_one_line_and_exit_2(tmp_path, capsys, bad_store):
    config = make_config(tmp_path)
    path = tmp_path / "state" / "jobs.sqlite3"
    path.parent.mkdir(parents=True)
    if bad_store == "folder":
        path.mkdir()
    else:
        path.write_bytes(b"\x00garbage\xff" * 512)
    assert await _serve(config) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("zkpipe serve: ") and str(path) in err, err
    assert "Traceback" not in err


async def test_a_port_in_use_stops_the_start_with_one_line_and_exit_2(tmp_path, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert await _serve(make_config(tmp_path, host="127.0.0.1", port=port)) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err == f"zkpipe serve: cannot listen on 127.0.0.1:{port}: address already in use\n"
    assert not (tmp_path / "state").exists()  # it failed before anything started


def run_serve(tmp_path, *flags: str, env: dict | None = None) -> subprocess.CompletedProcess:
    config = write_config(tmp_path, free_port())
    return subprocess.run([sys.executable, "-m", "pipeline", "serve", "--config", str(config), *flags],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_serve_with_an_unknown_backend_in_the_environment_is_refused_when_the_config_is_read(tmp_path):
    out = run_serve(tmp_path, env={"ZKPIPE_ENGINE_BACKEND": "gpu"})
    assert out.returncode == EXIT_BAD_INPUT and out.stderr.count("\n") == 1
    assert "environment (ZKPIPE_ENGINE_BACKEND)" in out.stderr and "backend must be one of" in out.stderr
    assert "'gpu'" in out.stderr


def test_serve_with_the_cuda_backend_and_no_gpu_exits_2_in_one_line(tmp_path):
    if gpu_answers():
        pytest.skip("a GPU answers here: the cuda backend starts")
    out = run_serve(tmp_path, env={"ZKPIPE_ENGINE_BACKEND": "cuda"})
    assert out.returncode == EXIT_BAD_INPUT
    assert out.stderr.startswith("zkpipe serve: the CUDA backend cannot start: ")
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1


def test_submit_with_no_server_says_where_it_looked_and_how_to_start_one(capsys):
    url = f"http://127.0.0.1:{free_port()}"
    wtns = FIXTURES / "bn128" / "multiplier" / "witness.wtns"
    assert main(["submit", "--url", url, "--key", "k", str(wtns)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err == (f"zkpipe submit: no zkpipe server answers at {url} (Connection refused); start one with "
                   f"`zkpipe serve` or point --url (or ZKPIPE_URL) at it\n")


def test_submit_refuses_a_mix_of_inputs_and_witnesses(capsys):
    folder = FIXTURES / "bn128" / "multiplier"
    code = main(["submit", "--url", "http://127.0.0.1:1", "--key", "k", str(folder / "witness.wtns"),
                 str(folder / "input.json")])
    assert code == EXIT_BAD_INPUT
    assert "a job is either circuit inputs (.json) or witnesses (.wtns), not both" in capsys.readouterr().err


def submit_args(url: str, out, *files, **more) -> argparse.Namespace:
    values = dict(url=url, key="mult_bn128", token=TOKEN, priority="normal", request_id=None, wait=60.0,
                  out=str(out), files=[str(f) for f in files])
    return argparse.Namespace(**{**values, **more})


async def test_submit_shows_progress_lines_when_not_a_terminal_and_writes_the_proofs(client, tmp_path, capsys):
    wtns = FIXTURES / "bn128" / "multiplier" / "witness.wtns"
    url = str(client.make_url("")).rstrip("/")
    assert await _submit(submit_args(url, tmp_path / "out", wtns, wtns)) == EXIT_OK
    err = capsys.readouterr().err.splitlines()
    job_id = err[0].split()[1].rstrip(":")
    assert f"job {job_id}: done, 2/2 partitions done" in err
    assert err[-1] == f"job {job_id}: done, 2 proof(s) in {tmp_path / 'out'}"
    assert orjson.loads((tmp_path / "out" / "public-001.json").read_bytes()) == ["33"]


async def test_submit_of_an_unknown_key_prints_the_servers_message(client, tmp_path):
    wtns = FIXTURES / "bn128" / "multiplier" / "witness.wtns"
    url = str(client.make_url("")).rstrip("/")
    from pipeline.server.cli_commands import SubmitError

    with pytest.raises(SubmitError, match=r"^HTTP 404: unknown key 'nope'"):
        await _submit(submit_args(url, tmp_path, wtns, key="nope"))
    with pytest.raises(SubmitError, match=r"^HTTP 401: .*\(give --token or ZKPIPE_AUTH_TOKEN\)$"):
        await _submit(submit_args(url, tmp_path, wtns, token="wrong"))
