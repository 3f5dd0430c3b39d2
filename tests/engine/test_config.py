"""EngineConfig checks its values and refuses unknown settings."""
from __future__ import annotations

import sys

import pytest

from pipeline.engine import Engine, EngineConfig


@pytest.mark.parametrize("bad", [
    {"gpu_workers_per_device": 0}, {"queue_size": -1}, {"vram_budget_bytes": 0},
    {"g2_msm_placement": "fpga"}, {"devices": (0, 0)}, {"devices": ()}, {"g2_msm_executor": "fiber"},
    {"gil_switch_interval_s": -0.001}, {"gil_switch_interval_s": "fast"},
])
def test_bad_values_are_rejected_by_name(bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        EngineConfig(**bad)


def test_from_dict_round_trips_and_rejects_unknown_names():
    config = EngineConfig(devices=(0, 1), gpu_workers_per_device=3)
    assert EngineConfig.from_dict({**config.to_dict(), "devices": [0, 1]}) == config
    with pytest.raises(ValueError, match="unknown engine settings: gw"):
        EngineConfig.from_dict({"gw": 2})


@pytest.mark.parametrize("interval, during", [(None, 0.0005), (0, 0.005), (0.002, 0.002)])
async def test_the_gil_switch_interval_is_set_while_the_engine_runs_and_restored(interval, during):
    """The default 0.5 ms (a device thread's driver calls retake the GIL sooner); 0 leaves Python's."""
    assert sys.getswitchinterval() == 0.005
    config = EngineConfig(backend="cpu") if interval is None else EngineConfig(backend="cpu",
                                                                             gil_switch_interval_s=interval)
    async with Engine(config):
        assert sys.getswitchinterval() == pytest.approx(during)
    assert sys.getswitchinterval() == 0.005
