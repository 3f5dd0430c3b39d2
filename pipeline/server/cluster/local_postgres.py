"""A throwaway PostgreSQL server in a temporary folder (tests, benchmarks, a one-host trial).

    with LocalPostgres.start() as pg:        # initdb + postgres on 127.0.0.1:<free port>
        url = pg.url("zkpipe")               # postgresql://zkpipe@127.0.0.1:PORT/zkpipe (created)

The binaries come from, in order: ``$ZKPIPE_PG_BIN`` (a folder with ``initdb`` and
``postgres``), the folders of ``initdb`` / ``pg_ctl`` on PATH, Debian's
``/usr/lib/postgresql/<version>/bin`` (the ``postgresql`` package), and the server that the
``pgserver`` wheel ships (``pgserver/pginstall/bin``: a host without the Debian package can
carry that one wheel). PostgreSQL refuses to run as root, so under root the server runs as
the ``postgres`` user when there is one, else ``nobody``. The data folder is fsync-free
(``fsync=off``): it lives only as long as the test or benchmark, and a lost host loses it anyway.
"""
from __future__ import annotations

import atexit
import contextlib
import glob
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...errors import InternalError, Unavailable

SUPERUSER = "zkpipe"


class PostgresNotFound(Unavailable):
    """No PostgreSQL server binaries on this host."""


def _has_server(folder: Path) -> bool:
    return (folder / "initdb").is_file() and (folder / "postgres").is_file()


def find_bin_dir() -> Path:
    """The first folder holding ``initdb`` and ``postgres`` (see the module docstring for the order)."""
    candidates: list[Path] = []
    if os.environ.get("ZKPIPE_PG_BIN"):
        candidates.append(Path(os.environ["ZKPIPE_PG_BIN"]))
    for tool in ("initdb", "pg_ctl"):
        found = shutil.which(tool)
        if found:
            candidates.append(Path(found).resolve().parent)
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    spec = importlib.util.find_spec("pgserver")  # finds the package without importing it
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / "pginstall" / "bin" for p in spec.submodule_search_locations]
    for folder in candidates:
        if _has_server(folder):
            return folder
    raise PostgresNotFound("no PostgreSQL server binaries (initdb, postgres): install Debian's 'postgresql' "
                           "package, or the 'pgserver' wheel, or point ZKPIPE_PG_BIN at a bin folder")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_as() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresNotFound("running as root and no 'postgres' or 'nobody' user to run PostgreSQL as")


@dataclass
class LocalPostgres:
    bin_dir: Path
    root: Path
    port: int
    process: subprocess.Popen

    @classmethod
    def start(cls, bin_dir: Path | None = None, timeout_s: float = 60.0, **settings: str) -> "LocalPostgres":
        """initdb in a fresh temporary folder, then the server on a free loopback port; wait until it answers."""
        bin_dir = bin_dir or find_bin_dir()
        user = _run_as()
        root = Path(tempfile.mkdtemp(prefix="zkpipe-pg-"))
        as_user = {}
        if user is not None:
            os.chown(root, user.pw_uid, user.pw_gid)
            as_user = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        try:
            subprocess.run([str(bin_dir / "initdb"), "-D", str(root / "data"), "-U", SUPERUSER, "--auth=trust",
                            "-E", "UTF8", "--no-sync", "--no-instructions"], check=True, capture_output=True,
                           text=True, timeout=timeout_s, **as_user)
        except subprocess.CalledProcessError as exc:
            shutil.rmtree(root, ignore_errors=True)
            raise InternalError(f"initdb failed: {exc.stderr.strip()[-2000:]}") from exc
        options = {"listen_addresses": "127.0.0.1", "unix_socket_directories": str(root), "fsync": "off",
                   "full_page_writes": "off", "max_connections": "200", "shared_buffers": "64MB",
                   "dynamic_shared_memory_type": "mmap", **settings}
        for _ in range(3):  # the free port may be taken between the probe and the bind: try another
            port = _free_port()
            args = [str(bin_dir / "postgres"), "-D", str(root / "data"), "-p", str(port)]
            for name, value in options.items():
                args += ["-c", f"{name}={value}"]
            log = open(root / "server.log", "ab")
            process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **as_user)
            log.close()
            server = cls(bin_dir, root, port, process)
            if server._wait_ready(timeout_s):
                atexit.register(server.stop)  # an interpreter that exits without __exit__ still stops it
                return server
            server.stop()
            if "could not bind" not in server.log_tail():
                break
        raise InternalError(f"PostgreSQL did not start: {server.log_tail()}")

    def _wait_ready(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if "ready to accept connections" in self.log_tail():
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return True
            time.sleep(0.05)
        return False

    def log_tail(self, chars: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return (self.root / "server.log").read_text(errors="replace")[-chars:]
        return ""

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database; returns its URL."""
        subprocess.run([str(self.bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER, name],
                       check=True, capture_output=True, timeout=60)
        return self.url(name)

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then delete the folder."""
        atexit.unregister(self.stop)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "LocalPostgres":
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
