"""Prepared proving keys: what a key needs that no witness changes, built at disk speed and cached
beside the key (docs/key_cache.md).

- ``csr``: A and B by row through a parallel counting sort (``csr_matrices``), used by every
  backend path that uploads a key;
- ``prepare``: ``prepare_key(path, settings)`` opens a key from its cache folder when that is
  valid, else prepares and caches it (``folder``: the files; ``checksum``: the digests). The
  cache holds A and B by row (their CSR) and the table of their distinct values with each value's
  16-bit index in it (``Groth16Zkey.coeff_table``, what the CUDA backend's ``csr_value_table``
  uploads), so that a later start maps both instead of sorting and scanning the coefficients;
  ``prepare_in_memory`` computes the same for a key that has no file (a development key).

Layer 2.5: imports formats and curves; backends, engine and the commands import it.
"""
from .csr import csr_matrices
from .prepare import KeyCacheSettings, PreparedKey, prepare_in_memory, prepare_key

__all__ = ["KeyCacheSettings", "PreparedKey", "csr_matrices", "prepare_in_memory", "prepare_key"]
