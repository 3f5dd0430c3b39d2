"""CudaOptions reach the CUDA backend through its constructor, and nothing under
pipeline/backends/ reads the environment any more. Runs without a GPU: the device, stream,
allocator and kernel loader are replaced by recorders."""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.backends.cuda import backend as backend_module
from pipeline.backends.cuda import nvrtc_build
from pipeline.backends.cuda.msm import MsmRunner
from pipeline.backends.cuda.options import G1_MIN_BLOCKS_BUILT, CudaOptions
from pipeline.curves import BLS12_381, BN254

BACKENDS = Path(__file__).resolve().parents[3] / "pipeline" / "backends"


def test_no_module_under_backends_reads_the_environment():
    pattern = re.compile(r"\bos\.environ\b|\bgetenv\b|\benviron\[|\bputenv\b")
    readers = [f"{p.relative_to(BACKENDS)}:{n}" for p in BACKENDS.rglob("*.py")
               for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert readers == []


def test_defaults_are_the_behaviour_without_settings():
    """What the backend did with none of the old ZKPIPE_CUDA_* / ZKPIPE_MSM_* / ZKPIPE_KERNEL_CACHE set."""
    options = CudaOptions()
    assert options.stream_ordered_memory is True and options.sync_after_launch is False
    assert options.msm_g1_min_blocks is None and options.kernel_cache_dir is None
    assert options.msm_split_min_bits == 0.9 and options.stream_split_min_bits == 0.5
    assert options.stream_chunk_bytes == 1 << 30
    assert options.stream_tails == "prologue" and options.stream_queue_depth == 2
    assert options.msm_batched_window_combination is True
    assert options.msm_fixed_base_sets == (1, 2) and CudaOptions(msm_fixed_base_sets=[2, 1]).msm_fixed_base_sets == (2, 1)
    assert nvrtc_build.default_cache_dir() == Path.home() / ".cache" / "zkpipe" / "kernels"
    fake = SimpleNamespace(curve=BLS12_381)
    assert MsmRunner(fake, None, None).g1_min_blocks == 3  # launch.G1_MIN_BLOCKS
    assert MsmRunner(SimpleNamespace(curve=BN254), None, None).g1_min_blocks == 5
    assert MsmRunner(fake, None, None, 4).g1_min_blocks == 4


@pytest.mark.parametrize("bad", [
    {"msm_g1_min_blocks": 2}, {"msm_g1_min_blocks": True}, {"sync_after_launch": 1},
    {"stream_ordered_memory": "yes"}, {"kernel_cache_dir": ""}, {"msm_split_min_bits": -0.1},
    {"msm_split_min_bits": "half"}, {"stream_split_min_bits": -1}, {"stream_split_min_bits": True},
    {"stream_chunk_bytes": 1000}, {"stream_chunk_bytes": 2.5},
    {"stream_chunk_max_bytes": -1}, {"stream_chunk_max_bytes": True},
    {"stream_tails": "host"}, {"msm_batched_window_combination": 1}, {"stream_queue_depth": 0},
    {"stream_queue_depth": 2.0}, {"stream_queue_depth": True},
    {"msm_fixed_base_order": "h"}, {"msm_fixed_base_order": ("h", "h")}, {"msm_fixed_base_order": ("h", "z")},
    {"msm_fixed_base_order": 3}, {"msm_fixed_base_sets": ()}, {"msm_fixed_base_sets": (2, 2)},
    {"msm_fixed_base_sets": (0,)}, {"msm_fixed_base_sets": (5,)}, {"msm_fixed_base_sets": (True,)},
    {"msm_fixed_base_sets": 2}, {"vram_free_share": 0}, {"vram_free_share": 1.01}, {"vram_free_share": True}, {"vram_free_share": "most"},
])
def test_bad_values_are_refused_by_name(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        CudaOptions(**bad)


def test_the_engine_config_reads_the_table_and_refuses_unknown_names():
    from pipeline.engine.config import EngineConfig

    assert EngineConfig.from_dict({"cuda": {"sync_after_launch": True}}).cuda == CudaOptions(sync_after_launch=True)
    with pytest.raises(ValueError, match=r"unknown \[engine.cuda\] settings: mempool"):
        EngineConfig.from_dict({"cuda": {"mempool": False}})
    with pytest.raises(ValueError, match="EngineConfig.cuda must be CudaOptions"):
        EngineConfig.from_dict({"cuda": 3})


class _Recorder:
    """Stands in for the driver-facing pieces CudaBackend builds, recording their arguments."""

    def __init__(self, monkeypatch):
        self.allocator_stream = "unset"
        self.kernels: list[tuple] = []
        device = SimpleNamespace(free_bytes=lambda: 1 << 30, activate=lambda: None, arch="sm_90")
        monkeypatch.setattr(backend_module, "CudaDevice", lambda ordinal: device)
        monkeypatch.setattr(backend_module, "Stream", lambda dev: "the stream")
        monkeypatch.setattr(backend_module, "DeviceAllocator", self._allocator)
        monkeypatch.setattr(backend_module, "CurveKernels", self._kernels)
        monkeypatch.setattr(backend_module, "NttRunner", lambda *args: None)

    def _allocator(self, device, budget, stream):
        self.allocator_stream, self.budget = stream, budget
        return SimpleNamespace()

    def _kernels(self, device, curve, cache_dir, sync_after_launch):
        self.kernels.append((cache_dir, sync_after_launch))
        return SimpleNamespace(curve=curve)


def test_the_backend_uses_the_options_it_is_given(monkeypatch):
    rec = _Recorder(monkeypatch)
    backend = backend_module.CudaBackend()
    assert rec.allocator_stream == "the stream"  # stream-ordered by default
    backend.runtime(BLS12_381)
    assert rec.kernels == [(None, False)] and backend.runtime(BLS12_381).msm.g1_min_blocks == 3

    rec = _Recorder(monkeypatch)
    options = CudaOptions(stream_ordered_memory=False, sync_after_launch=True, msm_g1_min_blocks=5,
                          kernel_cache_dir="~/kernels-here", msm_split_min_bits=0.9)
    backend = backend_module.CudaBackend(options=options)
    assert rec.allocator_stream is None and backend.msm_split_min_bits == 0.9
    msm = backend.runtime(BLS12_381).msm
    assert rec.kernels == [(Path.home() / "kernels-here", True)] and msm.g1_min_blocks == 5


def test_a_table_order_from_a_toml_list_is_a_tuple():
    from pipeline.engine.config import EngineConfig

    assert CudaOptions(msm_fixed_base_order=["h", "b2"]).msm_fixed_base_order == ("h", "b2")
    config = EngineConfig.from_dict({"cuda": {"msm_fixed_base_order": ["h"], "vram_free_share": 0.95}})
    assert config.cuda == CudaOptions(msm_fixed_base_order=("h",), vram_free_share=0.95)


def test_the_vram_budget_is_the_share_of_free_memory_unless_given(monkeypatch):
    rec = _Recorder(monkeypatch)  # the device has 1 GiB free
    backend_module.CudaBackend()
    assert rec.budget == int((1 << 30) * 0.9)
    backend_module.CudaBackend(options=CudaOptions(vram_free_share=0.95))
    assert rec.budget == int((1 << 30) * 0.95)
    backend_module.CudaBackend(vram_budget_bytes=12345, options=CudaOptions(vram_free_share=0.5))
    assert rec.budget == 12345


def test_every_allowed_min_blocks_variant_is_instantiated():
    from pipeline.backends.cuda.kernels import UNITS

    for blocks in G1_MIN_BLOCKS_BUILT:
        assert f"msm_accumulate_flat<fq_t, {blocks}>" in UNITS["msm_g1"]


def test_the_engine_factory_passes_the_config_options(monkeypatch):
    import pipeline.backends
    from pipeline.engine.config import EngineConfig
    from pipeline.engine.devices import make_devices

    made = []

    def create_backend(name, **options):
        made.append((name, options.get("device", 0), options.get("options")))
        return SimpleNamespace(name=name, memory_budget_bytes=lambda: None)

    monkeypatch.setattr(pipeline.backends, "create_backend", create_backend)
    options = CudaOptions(sync_after_launch=True)
    devices = make_devices(EngineConfig(backend="cuda", devices=(0, 1), cuda=options), None)
    try:
        assert made == [("cuda", 0, options), ("cuda", 1, options)]
    finally:
        for device in devices:
            device.executor.shutdown()


def test_a_streamed_pass_host_split_bound_follows_its_threshold():
    """partition_host_bytes counts the host split's other values up to 1 - stream_split_min_bits of the witness:
    half at the default 0.5, all of them where the pass would split any witness, none where it never splits."""
    from pipeline.backends.cuda.backend import CudaBackend
    from pipeline.curves import BLS12_381
    zkey = SimpleNamespace(curve=BLS12_381, domain_size=1 << 10, n_vars=1000)
    backend = CudaBackend.__new__(CudaBackend)  # no device: the bound is arithmetic on the key's sizes
    h, ones = (1 << 10) * 32, 1000 * 4
    for threshold, others in ((0.5, 500 * 32), (0.0, 1000 * 32), (0.9, 100 * 32), (2.0, 0)):
        backend.stream_split_min_bits = threshold
        assert backend.partition_host_bytes(zkey) == h + ones + others, threshold
