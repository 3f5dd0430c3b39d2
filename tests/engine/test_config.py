"""EngineConfig checks its values and refuses unknown settings."""
from __future__ import annotations

import pytest

from pipeline.engine import EngineConfig


@pytest.mark.parametrize("bad", [
    {"gpu_workers_per_device": 0}, {"queue_size": -1}, {"vram_budget_bytes": 0},
    {"g2_msm_placement": "fpga"}, {"devices": (0, 0)}, {"devices": ()}, {"g2_msm_executor": "fiber"},
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
