"""Progress bars for long work on the command line (tqdm), drawn only where someone watches.

Library code reports progress through ``bar(...)``; nothing is drawn unless a command called
``enable()`` and stderr is a terminal, so the service, the tests and piped output stay clean.

    with bar("compiling kernels", total=8, unit="unit") as b:
        for unit in units:
            build(unit)
            b.update()
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

_enabled = False


def enable(on: bool | None = None) -> bool:
    """Draw bars from now on (``None``: only when stderr is a terminal); returns whether they are on."""
    global _enabled
    _enabled = sys.stderr.isatty() if on is None else bool(on)
    return _enabled


def enabled() -> bool:
    return _enabled


class _Silent:
    """The bar when bars are off: counts, draws nothing."""

    def __init__(self, total: float | None) -> None:
        self.total = total
        self.n = 0

    def update(self, n: float = 1) -> None:
        self.n += n

    def set_postfix_str(self, text: str) -> None:
        pass

    def write(self, text: str) -> None:
        """A line of output above the bar (tqdm's ``write``); plain print when bars are off."""
        print(text, flush=True)

    def set_description_str(self, text: str) -> None:
        pass


@contextlib.contextmanager
def bar(description: str, total: float | None = None, unit: str = "it", leave: bool = False) -> Iterator:
    """A tqdm bar on stderr when enabled, else a silent counter with the same ``update`` method."""
    if not _enabled:
        yield _Silent(total)
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=description, unit=unit, leave=leave, file=sys.stderr, dynamic_ncols=True) as b:
        yield b


def iterate(items, description: str, unit: str = "it"):
    """``items`` one by one, with a bar over them when bars are on (their count known up front)."""
    items = list(items)
    with bar(description, total=len(items), unit=unit) as b:
        for item in items:
            yield item
            b.update()
