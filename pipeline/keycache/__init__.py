"""Prepared proving keys: what a key needs that no witness changes, built at disk speed and cached
beside the key (docs/key_cache.md).

- ``csr``: A and B by row through a parallel counting sort (``csr_matrices``), used by every
  backend path that uploads a key;
- ``prepare``: ``prepare_key(path, settings)`` opens a key from its cache folder when that is
  valid, else prepares and caches it (``folder``: the files; ``checksum``: the digests).

Layer 2.5: imports formats and curves; backends, engine and the commands import it.
"""
from .csr import csr_matrices
from .prepare import KeyCacheSettings, PreparedKey, prepare_key

__all__ = ["KeyCacheSettings", "PreparedKey", "csr_matrices", "prepare_key"]
