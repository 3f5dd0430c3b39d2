"""The TOML config: defaults < file < ZKPIPE_* environment < command line; unknown names are errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.backends.cuda.options import CudaOptions
from pipeline.config import ENGINE_TABLES, ConfigError, ServerConfig, cuda_options_from_env, load_config

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "zkpipe.toml"
    path.write_text(text)
    return path


def test_defaults_without_a_file_or_environment():
    config = load_config(None, env={})
    assert config.server == ServerConfig()
    assert config.server.port == 9820 and config.server.host == "127.0.0.1" and config.server.auth_token == ""
    assert config.engine_config().backend == "auto"


def test_the_example_file_loads_and_names_every_setting():
    config = load_config(REPO / "zkpipe.example.toml", env={})
    text = (REPO / "zkpipe.example.toml").read_text()
    engine = config.engine_config()
    for name in ServerConfig.__dataclass_fields__:
        assert f"{name} =" in text, f"zkpipe.example.toml does not document [server] {name}"
    for name in engine.__dataclass_fields__:
        if name in ENGINE_TABLES:  # a table inside [engine]: its header, then each of its fields
            assert f"[engine.{name}]" in text, f"zkpipe.example.toml has no [engine.{name}] table"
            for field in getattr(engine, name).__dataclass_fields__:
                assert f"{field} =" in text, f"zkpipe.example.toml does not document [engine.{name}] {field}"
        else:
            assert f"{name} =" in text, f"zkpipe.example.toml does not document [engine] {name}"


def test_file_values_are_read(tmp_path):
    path = write(tmp_path, '[server]\nport = 9900\nmax_body_bytes = 1024\nresult_ttl_s = 60\n'
                           '[engine]\nbackend = "cpu"\ndevices = [0, 1]\ngpu_workers_per_device = 3\n')
    config = load_config(path, env={})
    assert (config.server.port, config.server.max_body_bytes, config.server.result_ttl_s) == (9900, 1024, 60.0)
    engine = config.engine_config()
    assert (engine.backend, engine.devices, engine.gpu_workers_per_device) == ("cpu", (0, 1), 3)


def test_environment_overrides_the_file_and_flags_override_both(tmp_path):
    path = write(tmp_path, '[server]\nport = 9900\nauth_token = "from-file"\n[engine]\nbackend = "cpu"\n')
    env = {"ZKPIPE_PORT": "9901", "ZKPIPE_AUTH_TOKEN": "12345", "ZKPIPE_ENGINE_BACKEND": "cuda",
           "ZKPIPE_ENGINE_DEVICES": "[2]", "ZKPIPE_FSYNC": "false", "ZKPIPE_UNRELATED": "x"}
    config = load_config(path, env=env)
    assert config.server.port == 9901 and config.server.auth_token == "12345" and config.server.fsync is False
    assert config.engine_config().backend == "cuda" and config.engine_config().devices == (2,)
    config = load_config(path, env=env, overrides={"port": 9902, "host": None})
    assert config.server.port == 9902 and config.server.host == "127.0.0.1"


@pytest.mark.parametrize("text,words", [
    ("[server]\nprot = 1\n", ("prot", "known")),
    ("[server]\nport = \"high\"\n", ("port", "integer")),
    ("[server]\nfsync = 1\n", ("fsync", "true or false")),
    ("[server]\nport = 70000\n", ("port", "65535")),
    ("[servr]\n", ("servr",)),
    ("[server\n", ("not valid TOML",)),
])
def test_bad_server_settings_name_the_file_and_setting(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path, env={})
    for word in (str(path), *words):
        assert word in str(err.value)


@pytest.mark.parametrize("text,word", [
    ("[engine]\ngpu_workers = 2\n", "gpu_workers"),
    ("[engine]\nqueue_size = 0\n", "queue_size"),
    ("[engine]\ng2_msm_placement = \"tpu\"\n", "g2_msm_placement"),
])
def test_bad_engine_settings_are_refused(tmp_path, text, word):
    config = load_config(write(tmp_path, text), env={})
    with pytest.raises(ConfigError, match=word):
        config.engine_config()


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.toml", env={})


def test_an_unknown_backend_in_the_file_is_refused_naming_the_file(tmp_path):
    path = write(tmp_path, '[engine]\nbackend = "gpu"\n')
    with pytest.raises(ConfigError, match=r"zkpipe.toml: \[engine\]: EngineConfig.backend must be one of .*'gpu'"):
        load_config(path, env={}).engine_config()


def test_engine_cuda_table_gives_cuda_options(tmp_path):
    path = write(tmp_path, '[engine]\nbackend = "cuda"\n[engine.cuda]\nstream_ordered_memory = false\n'
                           'sync_after_launch = true\nmsm_g1_min_blocks = 3\nkernel_cache_dir = "/srv/kernels"\n')
    engine = load_config(path, env={}).engine_config()
    assert engine.cuda == CudaOptions(stream_ordered_memory=False, sync_after_launch=True, msm_g1_min_blocks=3,
                                      kernel_cache_dir="/srv/kernels")
    assert load_config(None, env={}).engine_config().cuda == CudaOptions()  # no table: the defaults
    example = load_config(REPO / "zkpipe.example.toml", env={}).engine_config()
    assert example.cuda == CudaOptions()  # the example shows the defaults


def test_environment_overrides_engine_cuda_fields_one_by_one(tmp_path):
    path = write(tmp_path, '[engine.cuda]\nmsm_g1_min_blocks = 3\nsync_after_launch = false\n')
    env = {"ZKPIPE_ENGINE_CUDA_SYNC_AFTER_LAUNCH": "true", "ZKPIPE_ENGINE_CUDA_KERNEL_CACHE_DIR": "/tmp/k",
           "ZKPIPE_ENGINE_QUEUE_SIZE": "3"}
    engine = load_config(path, env=env).engine_config()
    assert engine.cuda == CudaOptions(sync_after_launch=True, msm_g1_min_blocks=3, kernel_cache_dir="/tmp/k")
    assert engine.queue_size == 3
    assert cuda_options_from_env(env) == CudaOptions(sync_after_launch=True, kernel_cache_dir="/tmp/k")
    assert cuda_options_from_env({}) == CudaOptions()


@pytest.mark.parametrize("text,env,words", [
    ("[engine.cuda]\nmempool = false\n", {}, ("mempool", "[engine.cuda]")),
    ("", {"ZKPIPE_ENGINE_CUDA_MEMPOOL": "0"}, ("mempool", "[engine.cuda]")),
    ("[engine.cuda]\nmsm_g1_min_blocks = 2\n", {}, ("msm_g1_min_blocks", "(1, 3, 4, 5)")),
    ("[engine.cuda]\nsync_after_launch = 1\n", {}, ("sync_after_launch", "true or false")),
])
def test_bad_engine_cuda_settings_are_refused_by_name(tmp_path, text, env, words):
    config = load_config(write(tmp_path, text), env=env)
    with pytest.raises(ConfigError) as err:
        config.engine_config()
    for word in words:
        assert word in str(err.value)
