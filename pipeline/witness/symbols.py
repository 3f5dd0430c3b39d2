"""circom's ``.sym`` file: the names of a circuit's signals (``circom --sym``).

Each line is ``label index,witness index,component index,name`` (``1,1,0,main.out``,
``4,-1,0,main.x[2]``). The signals of the main component are ``main.<name>`` with no further
dot; their names (array indices dropped) are the candidates for its input signals, which the
witness calculator then tells apart (it knows which names are inputs, not what they are called).
"""
from __future__ import annotations

import os
import re

MAIN_SIGNAL = re.compile(r"^main\.([A-Za-z_$][\w$]*)(?:\[\d+\])*$")


def main_signal_names(sym_path: str | os.PathLike) -> list[str]:
    """The main component's signal names, in file order, each once (unreadable file: [])."""
    names: dict[str, None] = {}
    try:
        with open(sym_path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.rstrip("\n").split(",", 3)
                match = MAIN_SIGNAL.match(parts[3]) if len(parts) == 4 else None
                if match:
                    names.setdefault(match.group(1))
    except OSError:
        return []
    return list(names)
