from ..backends.protocol import Backend, MsmResults
from .prover import Blinding, Proof, WitnessMismatch, assemble, check_witness, prove

__all__ = ["Backend", "Blinding", "MsmResults", "Proof", "WitnessMismatch", "assemble", "check_witness", "prove"]
