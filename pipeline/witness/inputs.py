"""Circuit inputs as circom's witness calculator takes them: names hashed, values flattened.

``inputs.json`` maps a signal name to a number, a decimal/hex string, or nested arrays of
them (a multi-dimensional input signal, flattened row-major). Values are reduced into
[0, p) exactly as circom_runtime's ``normalize`` does (negative numbers wrap).
"""
from __future__ import annotations

FNV64_OFFSET = 0xCBF29CE484222325
FNV64_PRIME = 0x100000001B3
MASK64 = (1 << 64) - 1


def fnv1a_64(name: str) -> int:
    """FNV-1a 64 over the name's UTF-16 code units (circom's ``fnvHash`` uses ``charCodeAt``)."""
    units = name.encode("utf-16-le")
    h = FNV64_OFFSET
    for i in range(0, len(units), 2):
        h ^= units[i] | (units[i + 1] << 8)
        h = (h * FNV64_PRIME) & MASK64
    return h


def split_hash(h: int) -> tuple[int, int]:
    """(most significant 32 bits, least significant 32 bits), as the wasm exports take them."""
    return h >> 32, h & 0xFFFFFFFF


def flatten(value) -> list:
    if isinstance(value, (list, tuple)):
        out: list = []
        for item in value:
            out.extend(flatten(item))
        return out
    return [value]


def to_field(value, prime: int, signal: str) -> int:
    """One input value -> int in [0, prime). Accepts int, bool, decimal or 0x-hex strings."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value % prime
    if isinstance(value, str):
        text = value.strip()
        try:
            number = int(text, 16) if text.lower().startswith(("0x", "-0x")) else int(text, 10)
        except ValueError:
            raise ValueError(f"input signal {signal!r}: {value!r} is not an integer") from None
        return number % prime
    if isinstance(value, float) and value.is_integer():
        return int(value) % prime
    raise ValueError(f"input signal {signal!r}: {value!r} ({type(value).__name__}) is not an integer")
