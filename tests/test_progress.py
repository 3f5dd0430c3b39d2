"""Progress bars: drawn only when a command turned them on and stderr is a terminal; silent counters otherwise."""
from __future__ import annotations

import pytest

from pipeline import progress


@pytest.fixture(autouse=True)
def bars_off_afterwards():
    yield
    progress.enable(False)


def test_bars_stay_off_when_stderr_is_not_a_terminal(capsys):
    assert progress.enable() is False  # pytest captures stderr: not a terminal
    with progress.bar("quiet", total=2) as bar:
        bar.update()
        bar.update()
    assert bar.n == 2 and capsys.readouterr().err == ""


def test_enabled_bars_draw_on_stderr(capsys):
    assert progress.enable(True) is True
    with progress.bar("preparing the key (cpu)", total=6, unit="part") as bar:
        for _ in range(6):
            bar.update()
    err = capsys.readouterr().err
    assert "preparing the key (cpu)" in err and "/6 " in err  # (tqdm redraws at most every 0.1 s)


def test_proving_shows_its_steps(capsys):
    from pipeline.backends.cpu import CpuBackend
    from pipeline.formats.wtns import read_wtns
    from pipeline.formats.zkey import read_zkey
    from pipeline.groth16 import prove
    from tests.conftest import fixture_dir

    folder = fixture_dir("bn128", "multiplier")
    progress.enable(True)
    backend = CpuBackend()
    zkey = read_zkey(folder / "circuit_final.zkey")
    prove(backend, backend.load_key(zkey), zkey, read_wtns(folder / "witness.wtns"))
    err = capsys.readouterr().err
    assert "proving on cpu" in err and "/3 " in err  # (tqdm redraws at most every 0.1 s)


def test_a_kernel_build_shows_the_units_compiled(monkeypatch, capsys):
    from pipeline.backends.cuda import kernels

    monkeypatch.setattr(kernels, "load_cached_unit", lambda *args, **kwargs: None)  # nothing cached
    monkeypatch.setattr(kernels, "_compile_one", lambda job: f"cubin of {job[0]}")  # NVRTC's part, elsewhere
    progress.enable(True)
    jobs = {("bn128", unit): (unit, (), {}, "sm_90") for unit in ("arith", "ntt", "msm_g1")}
    built = kernels.compile_jobs(jobs, parallel=False)
    assert built[("bn128", "ntt")] == "cubin of ntt"
    err = capsys.readouterr().err
    assert "compiling CUDA kernels for bn128 (first use; cached after)" in err and "/3 " in err
