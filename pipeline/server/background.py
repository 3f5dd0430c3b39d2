"""The one way the service watches its long-running background task (the job service's loop)."""
from __future__ import annotations

import asyncio
import logging
from typing import Callable

log = logging.getLogger("zkpipe.server")


def crash_reporter(what: str) -> Callable[[asyncio.Task], None]:
    """A done-callback that logs ``what`` stopped, with the traceback, unless it was cancelled."""
    def report(task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.critical("%s stopped: %r", what, task.exception(), exc_info=task.exception())
    return report
