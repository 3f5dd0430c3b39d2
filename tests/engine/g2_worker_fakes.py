"""G2 MSM stand-ins that run inside the engine's spawned worker processes (so: importable, picklable)."""
from __future__ import annotations

import os
import time
from pathlib import Path

from pipeline.engine.cpu_workers import g2_msm_from_path


def hang_on_first_call(marker: str, zkey_path: str, staged):
    """The first call anywhere writes ``marker`` (its pid) and hangs, to be killed; later calls are real."""
    path = Path(marker)
    if not path.exists():
        path.write_text(str(os.getpid()))
        time.sleep(120)
    return g2_msm_from_path(zkey_path, staged)


def die(zkey_path: str, staged):
    """The worker process exits in the middle of the MSM, as if the OOM killer took it."""
    os._exit(1)
