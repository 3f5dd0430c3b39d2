"""bench.oneshot_prove's clean environment: a venv whose one .pth only lists folders, so the
columns marked "clean env" run none of the host's .pth start-up hooks."""
import subprocess

import pytest

from bench import oneshot_prove
from bench.common import REPO


def test_clean_env_runs_only_its_own_path_only_pth_and_runs_zkpipe(tmp_path):
    clean = oneshot_prove.make_clean_env(tmp_path, "cpu")
    assert clean["paths"][0] == str(REPO)
    assert oneshot_prove.pth_files_run(clean["python"], oneshot_prove.CLEAN_ENV) == [clean["pth"]]
    assert not any(line.startswith("import") for line in open(clean["pth"]))
    done = subprocess.run([clean["python"], "-m", "pipeline", "--version"], cwd=REPO, capture_output=True, text=True,
                          env=oneshot_prove.process_env(oneshot_prove.CLEAN_ENV))
    assert done.returncode == 0, done.stderr


def test_clean_env_rejects_a_venv_that_runs_another_pth_file(tmp_path, monkeypatch):
    """The claim is checked, not assumed: a hook the clean venv would run stops the bench."""
    real = oneshot_prove.pth_files_run
    monkeypatch.setattr(oneshot_prove, "pth_files_run", lambda python, env=None: [*real(python, env), "/host/hook.pth"])
    with pytest.raises(RuntimeError, match="/host/hook.pth"):
        oneshot_prove.make_clean_env(tmp_path, "cpu")
