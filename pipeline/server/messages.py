"""Error messages for clients: a file is named by its name, never by where the server keeps it.

Messages from below (a format error, a circuit's witness calculator, the engine) name files by
their full path; ``public_message`` keeps the last component of every absolute path, so a client
reads ``chain_bn128.wasm: ...`` or ``part-00000.wtns: ...`` and learns nothing of the server's folders.
"""
from __future__ import annotations

import re

# An absolute path of two or more components, not inside a URL or a longer word.
ABSOLUTE_PATH = re.compile(r"(?<![\w:/.~-])/(?:[^\s/'\"]+/)+([^\s/'\":,;()]+)")


def public_message(text: str | None) -> str | None:
    return ABSOLUTE_PATH.sub(lambda m: m.group(1), text) if text else text
