"""``zkpipe serve`` start-up failures: one line naming the problem and exit code 2, never a traceback."""
from __future__ import annotations

import socket

import pytest

from pipeline.server.cli_commands import EXIT_BAD_INPUT, _serve
from tests.server.server_helpers import make_config


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
