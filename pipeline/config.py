"""The one configuration file: ``zkpipe.toml`` (``[server]``, ``[engine]`` and ``[engine.cuda]`` tables).

Precedence, lowest first: built-in defaults < the TOML file < environment variables < command
line flags. Environment variables:

    ZKPIPE_<SERVER FIELD>          e.g. ZKPIPE_PORT=9821, ZKPIPE_AUTH_TOKEN=..., ZKPIPE_STATE_DIR=/data
    ZKPIPE_ENGINE_<ENGINE FIELD>   e.g. ZKPIPE_ENGINE_BACKEND=cpu, ZKPIPE_ENGINE_DEVICES=[0,1]
    ZKPIPE_ENGINE_<TABLE>_<FIELD>  a field of a table inside [engine], e.g.
                                   ZKPIPE_ENGINE_CUDA_SYNC_AFTER_LAUNCH=true sets [engine.cuda] sync_after_launch

An environment value is read as a TOML value when it parses as one (``9821``, ``true``,
``[0, 1]``, ``"text"``) and as a plain string otherwise. Engine settings are checked against the
fields of ``pipeline.engine.EngineConfig``; an unknown name is an error naming the file and
the field, never silently ignored. ``zkpipe.example.toml`` documents every setting.
"""
from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from .errors import BadInput

ENV_PREFIX = "ZKPIPE_"
ENGINE_ENV_PREFIX = "ZKPIPE_ENGINE_"
ENGINE_TABLES = ("cuda",)  # tables inside [engine] (EngineConfig fields that are option dataclasses)
MIB = 1 << 20


class ConfigError(BadInput):
    """A setting that cannot be used; the message names where it came from."""


def default_state_dir() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "zkpipe")


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 9820
    # Every NAME.zkey here is key id NAME (NAME.r1cs, NAME.wasm beside it when present).
    # Empty: the bundled example keys (chain_bn128, chain_bls12381), linked into state_dir/keys.
    keys_dir: str = ""
    # Job store (SQLite) and spool (uploaded witnesses and inputs) live here.
    state_dir: str = field(default_factory=default_state_dir)
    # Bearer token; empty means no auth. Every route but /healthz needs it when set.
    auth_token: str = ""
    max_body_bytes: int = 256 * MIB
    # A JSON body (circuit inputs) larger than this is refused with 413 before it is parsed.
    max_json_body_bytes: int = 8 * MIB
    max_partitions_per_job: int = 256
    # Uploads (POST /v1/jobs bodies) read at once; one more waits up to body_read_timeout_s, then 503.
    max_concurrent_uploads: int = 8
    # Open connections at once; one more is answered 503 and closed. The open file limit is raised to fit.
    max_connections: int = 1024
    # A connection must send a whole request head this long after connecting or after its last
    # response, else it is closed (this also closes idle keep-alive connections).
    header_timeout_s: float = 30.0
    # A request body that sends nothing for body_read_timeout_s, or is not complete after
    # body_timeout_s, is answered 408 and its connection closed.
    body_read_timeout_s: float = 60.0
    body_timeout_s: float = 900.0
    # The longest request line and header line accepted (aiohttp's parser; longer: 400).
    max_line_size: int = 8190
    max_field_size: int = 8190
    # Finished jobs (results included) are kept this long, then deleted.
    result_ttl_s: float = 24 * 3600.0
    janitor_interval_s: float = 60.0
    # The longest long-poll (?wait=) a client may ask for.
    max_wait_s: float = 60.0
    max_jobs_listed: int = 1000
    # fsync spool files, the spool folder and SQLite commits before answering 202.
    fsync: bool = True
    log_level: str = "info"
    # "text" or "json" (one JSON object per line, job events and access lines with their fields).
    log_format: str = "text"
    # One line per HTTP request on the zkpipe.access logger.
    access_log: bool = True
    # -- many hosts, one queue (docs/cluster.md) ---------------------------------------------------
    # Empty: the job store is SQLite in state_dir (one host). postgresql://user@host:port/db: the
    # shared store of a cluster; every `zkpipe serve` pointed at it is a worker.
    store_url: str = ""
    lease_s: float = 30.0                # a claimed partition returns to the queue this long after its worker's last heartbeat
    heartbeat_interval_s: float = 5.0    # at most lease_s / 2
    claim_poll_interval_s: float = 2.0   # an idle worker looks for work this often when no NOTIFY came
    affinity_max_age_s: float = 60.0     # a partition queued longer is claimed before those of resident keys
    max_partition_attempts: int = 5      # claims of one partition whose worker died, before its job fails
    max_db_partition_bytes: int = 4 * MIB  # a partition's witness (or inputs) up to this size travels in the database
    shared_spool_dir: str = ""           # a folder every worker mounts, for larger witnesses (empty: those get 413)
    drain_timeout_s: float = 60.0        # SIGTERM: finish held partitions this long, then release the rest
    worker_max_partitions: int = 0       # partitions held at once; 0: the engine's max_partitions_in_flight


@dataclass
class Config:
    server: ServerConfig = field(default_factory=ServerConfig)
    # [engine] table, kept as given and checked against EngineConfig by engine_config().
    engine: dict[str, Any] = field(default_factory=dict)
    source: str = "<defaults>"
    engine_env: tuple[str, ...] = ()  # the ZKPIPE_ENGINE_* variables that set [engine] values

    def engine_config(self):
        """The engine's own ``EngineConfig`` built from the [engine] table."""
        from .engine.config import EngineConfig

        try:
            return EngineConfig.from_dict(self.engine)
        except (TypeError, ValueError) as exc:
            where = self.source if not self.engine_env else f"{self.source} + environment ({', '.join(self.engine_env)})"
            raise ConfigError(f"{where}: [engine]: {exc}") from exc


def cuda_options_from_env(env: Mapping[str, str] | None = None):
    """``[engine.cuda]`` as the environment sets it (``ZKPIPE_ENGINE_CUDA_*``), for entry points
    that build a backend without a config file (``zkpipe prove``, ``zkpipe demo``)."""
    from .engine.config import EngineConfig

    table = load_config(None, env).engine.get("cuda", {})
    try:
        return EngineConfig.from_dict({"cuda": table}).cuda
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"environment (ZKPIPE_ENGINE_CUDA_*): {exc}") from exc


def key_cache_settings_from_env(env: Mapping[str, str] | None = None):
    """The key cache as the environment sets it (``ZKPIPE_ENGINE_KEY_CACHE``, ``..._KEY_CACHE_DIR``),
    for ``zkpipe prove`` / ``fullprove``, which read no config file."""
    from .engine.config import EngineConfig
    from .keycache import KeyCacheSettings

    table = {k: v for k, v in load_config(None, env).engine.items() if k in ("key_cache", "key_cache_dir")}
    try:
        config = EngineConfig.from_dict(table)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"environment (ZKPIPE_ENGINE_KEY_CACHE*): {exc}") from exc
    return KeyCacheSettings(config.key_cache, config.key_cache_dir)


def _env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _coerce(where: str, name: str, value: Any, default: Any) -> Any:
    """Check a server setting's type against its default's (ints are accepted for floats)."""
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {name} must be true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: {name} must be an integer, got {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: {name} must be a number, got {value!r}")
        return float(value)
    if not isinstance(value, str):
        return str(value)
    return value


def _apply_server(server: ServerConfig, table: Mapping[str, Any], where: str) -> None:
    defaults = ServerConfig()
    for name, value in table.items():
        if not hasattr(defaults, name):
            known = ", ".join(f.name for f in dataclasses.fields(ServerConfig))
            raise ConfigError(f"{where}: [server] has no setting {name!r}; known: {known}")
        setattr(server, name, _coerce(where, name, value, getattr(defaults, name)))


def load_config(path: str | os.PathLike | None = None, env: Mapping[str, str] | None = None,
                overrides: Mapping[str, Any] | None = None) -> Config:
    """Defaults < ``path`` (TOML) < ``env`` (ZKPIPE_*) < ``overrides`` (server fields, e.g. CLI flags)."""
    env = os.environ if env is None else env
    config = Config()
    if path is not None:
        source = os.fspath(path)
        try:
            with open(source, "rb") as fh:
                data = tomllib.load(fh)
        except OSError as exc:
            raise ConfigError(f"{source}: cannot read the config file: {exc.strerror or exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
        config.source = source
        extra = sorted(set(data) - {"server", "engine"})
        if extra:
            raise ConfigError(f"{source}: unknown table(s) {', '.join(extra)} (expected [server] and [engine])")
        _apply_server(config.server, data.get("server", {}), source)
        config.engine = dict(data.get("engine", {}))

    server_env: dict[str, Any] = {}
    engine_env: dict[str, Any] = {}
    for key, raw in env.items():
        if key.startswith(ENGINE_ENV_PREFIX):
            name = key[len(ENGINE_ENV_PREFIX):].lower()
            table = next((t for t in ENGINE_TABLES if name.startswith(t + "_")), None)
            if table is None:
                engine_env[name] = _env_value(raw)
            else:
                engine_env.setdefault(table, {})[name[len(table) + 1:]] = _env_value(raw)
        elif key.startswith(ENV_PREFIX):
            name = key[len(ENV_PREFIX):].lower()
            if hasattr(config.server, name):
                default = getattr(ServerConfig(), name)
                server_env[name] = raw if isinstance(default, str) else _env_value(raw)
    _apply_server(config.server, server_env, "environment (ZKPIPE_*)")
    for name, value in engine_env.items():  # a table's fields override the file's one by one
        base = config.engine.get(name)
        config.engine[name] = {**base, **value} if isinstance(base, dict) and isinstance(value, dict) else value
    config.engine_env = tuple(ENGINE_ENV_PREFIX + name.upper() for name in sorted(engine_env))
    _apply_server(config.server, {k: v for k, v in (overrides or {}).items() if v is not None}, "command line")
    if config.server.log_format not in ("text", "json"):
        raise ConfigError(f"{config.source}: log_format must be \"text\" or \"json\", got {config.server.log_format!r}")
    if config.server.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise ConfigError(f"{config.source}: log_level must be debug, info, warning or error, "
                          f"got {config.server.log_level!r}")
    if not 0 <= config.server.port <= 65535:
        raise ConfigError(f"{config.source}: port must be in 1..65535 (0 = any free port), got {config.server.port}")
    config.server.state_dir = str(Path(config.server.state_dir).expanduser())
    if config.server.keys_dir:
        config.server.keys_dir = str(Path(config.server.keys_dir).expanduser())
    if config.server.shared_spool_dir:
        config.server.shared_spool_dir = str(Path(config.server.shared_spool_dir).expanduser())
    return config
